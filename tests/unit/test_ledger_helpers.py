"""The ledger's pure helpers: DynamoDB value conversion, item sort keys and list cursors."""
from __future__ import annotations

import base64
import json
import re
from decimal import Decimal

import pytest

from agentledger.adapters.dynamodb_ledger import _from_dynamo, _to_dynamo, decode_cursor, encode_cursor
from agentledger.models import (
    ArtifactRef,
    Decision,
    Effect,
    EffectStatus,
    Evidence,
    Review,
    RunState,
    Stage,
    StageStatus,
    Transition,
)
from agentledger.records import REVIEW_SK, new_decision, record_key
from tests.unit import builders as b


# -- values to and from DynamoDB ------------------------------------------------------------------
def test_floats_become_exact_decimals() -> None:
    converted = _to_dynamo({"duration_s": 0.1, "ratio": 2.5})
    # Decimal(str(x)), not Decimal(x): 0.1 is stored as 0.1, not 0.1000000000000000055511151231257827...
    assert converted == {"duration_s": Decimal("0.1"), "ratio": Decimal("2.5")}
    assert all(isinstance(v, Decimal) for v in converted.values())


def test_unset_fields_are_dropped_but_nulls_inside_documents_are_kept() -> None:
    item = {"a": None, "b": 1, "c": {"d": None, "e": [{"f": None, "g": 1.5}], "h": "x"}}
    assert _to_dynamo(item) == {"b": 1, "c": {"d": None, "e": [{"f": None, "g": Decimal("1.5")}], "h": "x"}}


@pytest.mark.parametrize("value", [3, True, False, "0.5", "", 0])
def test_other_scalars_are_stored_as_they_are(value: object) -> None:
    converted = _to_dynamo({"v": value})["v"]
    assert converted == value and type(converted) is type(value)


def test_integral_decimals_come_back_as_ints() -> None:
    restored = _from_dynamo({"version": Decimal("7"), "size": Decimal("3.0"), "big": Decimal("1E+3")})
    assert restored == {"version": 7, "size": 3, "big": 1000}
    assert all(type(v) is int for v in restored.values())


def test_fractional_decimals_come_back_as_floats_at_every_depth() -> None:
    restored = _from_dynamo({"a": [Decimal("0.25"), {"b": Decimal("1.5")}], "c": "text"})
    assert restored == {"a": [0.25, {"b": 1.5}], "c": "text"}
    assert type(restored["a"][0]) is float and type(restored["a"][1]["b"]) is float


def test_a_run_survives_the_round_trip() -> None:
    run = b.run(replans=2, resumes=1, executions=["run-x-start", "run-x-resume-1"])
    assert run.revision is not None and run.active_execution is None
    stored = _to_dynamo(run.model_dump(mode="json"))
    assert "active_execution" not in stored
    assert type(run).model_validate(_from_dynamo(stored)) == run


def test_an_effect_with_numbers_survives_the_round_trip() -> None:
    effect = Effect(key="k-1", kind="ticket", stage=Stage.COMPLETE, receiver="tracker",
                    status=EffectStatus.CONFIRMED, request={"title": "t", "weight": 0.75},
                    response={"id": 42, "latency_s": 1.25}, attempts=2)
    restored = Effect.model_validate(_from_dynamo(_to_dynamo(effect.model_dump(mode="json"))))
    assert restored == effect


# -- list cursors ---------------------------------------------------------------------------------
LAST_KEY = {"pk": "RUN#run-0123456789abcdef0123", "sk": "RUN", "entity": "run",
            "created_key": "2024-01-01T00:00:00.000+00:00#run-0123456789abcdef0123"}


def test_a_cursor_round_trips() -> None:
    assert decode_cursor(encode_cursor(LAST_KEY)) == LAST_KEY


def test_a_cursor_is_safe_in_a_url_query() -> None:
    assert re.fullmatch(r"[A-Za-z0-9_=-]+", encode_cursor(LAST_KEY))


def test_the_same_key_always_gives_the_same_cursor() -> None:
    reordered = dict(reversed(list(LAST_KEY.items())))
    assert encode_cursor(reordered) == encode_cursor(LAST_KEY)


def _b64(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode()


@pytest.mark.parametrize("cursor", [
    "",
    "not a cursor!!",
    "%%%",
    base64.urlsafe_b64encode(b"\xff\xfe not utf-8").decode(),
    base64.urlsafe_b64encode(b"not json").decode(),
    _b64(["pk", "sk"]),
    _b64("RUN#x"),
    _b64({"pk": "RUN#x", "version": 3}),
    _b64({"pk": {"S": "RUN#x"}}),
], ids=["empty", "text", "symbols", "not-utf8", "not-json", "list", "string", "number-value", "nested"])
def test_a_garbage_cursor_is_a_clear_value_error(cursor: str) -> None:
    with pytest.raises(ValueError, match="cursor is not one this API returned"):
        decode_cursor(cursor)


# -- sort keys ------------------------------------------------------------------------------------
def _artifact(name: str, sha: str, stage: Stage = Stage.EXECUTE) -> ArtifactRef:
    return ArtifactRef(name=name, stage=stage, key=f"runs/r/{stage}/{name}", sha256=sha, size=1,
                       media_type="application/json")


def _transition(version: int) -> Transition:
    return Transition(version=version, from_state=RunState.PLAN, to_state=RunState.EXECUTE, reason="r")


def test_each_record_kind_has_its_own_key() -> None:
    records = [
        b.stage_record(Stage.PLAN),
        Evidence(name="plan", stage=Stage.PLAN, fingerprint="sha256:p"),
        _artifact("plan.json", "a" * 64, Stage.PLAN),
        _transition(3),
        new_decision("assessment", "fine", {}),
        Review(task_token="t", plan_digest="sha256:p", revision="rev-1", execution="e"),
        Effect(key="k-1", kind="ticket", stage=Stage.COMPLETE, receiver="tracker",
               status=EffectStatus.INTENDED, request={}),
    ]
    keys = [record_key(record) for record in records]
    assert keys == ["STAGE#plan", "EVIDENCE#plan", f"ARTIFACT#plan#plan.json#{'a' * 16}",
                    "TRANSITION#00000003", f"DECISION#{records[4].decision_id}", REVIEW_SK, "EFFECT#k-1"]
    assert len(set(keys)) == len(keys)
    assert "RUN" not in keys  # never collides with the run item itself


def test_stage_keys_are_distinct_per_stage() -> None:
    keys = {record_key(b.stage_record(stage)) for stage in Stage}
    assert len(keys) == len(Stage)


def test_the_same_artifact_name_with_new_content_is_kept_alongside_the_old() -> None:
    old, new = _artifact("plan.json", "a" * 64), _artifact("plan.json", "b" * 64)
    assert record_key(old) != record_key(new)
    assert record_key(_artifact("plan.json", "a" * 64)) == record_key(old)  # same content: same item


def test_transition_keys_sort_by_version_numerically() -> None:
    versions = [1, 2, 9, 10, 11, 99, 100, 12345]
    keys = [record_key(_transition(v)) for v in reversed(versions)]
    assert sorted(keys) == [record_key(_transition(v)) for v in versions]
    assert record_key(_transition(10)) > record_key(_transition(9))


def test_decision_keys_are_unique_and_sort_by_time() -> None:
    decisions = [
        Decision(decision_id="2024-01-01T00:00:02.000+00:00#aaaa0000", kind="review", summary="s"),
        Decision(decision_id="2024-01-01T00:00:01.000+00:00#ffff0000", kind="review", summary="s"),
    ]
    assert sorted(record_key(d) for d in decisions) == [record_key(decisions[1]), record_key(decisions[0])]
    made = [new_decision("review", "s", {}) for _ in range(50)]
    assert len({record_key(d) for d in made}) == 50


def test_a_record_the_ledger_does_not_store_has_no_key() -> None:
    with pytest.raises(TypeError, match="Run"):
        record_key(b.run())


def test_stage_record_status_does_not_change_its_key() -> None:
    # Invalidating a stage overwrites it rather than adding a second record.
    record = b.stage_record(Stage.VERIFY)
    assert record_key(record) == record_key(record.model_copy(update={"status": StageStatus.INVALIDATED}))


def test_a_cursor_naming_attributes_the_index_does_not_have_is_refused() -> None:
    forged = encode_cursor({"pk": "RUN#x", "password": "x"})
    with pytest.raises(ValueError, match="cursor is not one this API returned"):
        decode_cursor(forged)
