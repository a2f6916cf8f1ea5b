"""Runs recorded by earlier releases (tests/fixtures/ledgers) carried on by this one, as after a
deploy that replaced the functions while they waited: the run awaiting review is approved and
completes, the one waiting for a person is resumed and completes, the complete one is shown. A
record a later release wrote is refused, not misread."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import pytest

from agentledger.errors import RecordSchemaError, ReviewRejectedError, RunConflictError
from agentledger.models import Handoff, RunStatus, Stage, StageStatus
from agentledger.records import (
    KIND_BY_PREFIX,
    RECORD_KINDS,
    RUN_SCHEMA_VERSION,
    RUN_SK,
    SCHEMA_VERSION,
    UNVERSIONED,
    UPGRADES,
)
from agentledger.service import ReviewRequest
from agentledger.testing.world import OPERATOR, REVIEWER, TOKEN, UP_TO_REVIEW, World, build_world
from tests.fixtures.ledgers import HERE, LedgerFixture, read_fixture, recorded

if TYPE_CHECKING:
    from pathlib import Path

CURRENT = {RUN_SK: RUN_SCHEMA_VERSION} | {kind.prefix: kind.schema_version for kind in RECORD_KINDS}
DELIVERIES = ("pull_request", "ticket", "completion_notification")


def _ids(fixtures: list[LedgerFixture]) -> list[str]:
    return [fixture.name for fixture in fixtures]


@pytest.fixture
def world(tmp_path: Path) -> World:
    return build_world(tmp_path)


def _prefix(item: dict[str, Any]) -> str:
    return item["sk"].split("#", 1)[0]


def _deliver_and_complete(world: World, run_id: str, execution: str) -> dict[str, Any]:
    for name in DELIVERIES:
        world.effects.deliver(run_id, execution, name)
    world.workflow.run_stage(Stage.COMPLETE, run_id, execution)
    return world.service.view(run_id)


@pytest.mark.parametrize("fixture", recorded("awaiting_review"), ids=_ids(recorded("awaiting_review")))
def test_a_run_recorded_awaiting_review_is_shown_approved_and_completed(world: World, fixture: LedgerFixture) -> None:
    run_id = fixture.load_into(world)
    shown = world.service.view(run_id)
    assert shown["run"]["status"] == "awaiting_review"
    assert shown["review"]["plan_digest"] == shown["run"]["plan_digest"] and "task_token" not in shown["review"]
    assert {e["status"] for e in shown["evidence_status"].values() if e["name"] in ("plan", "test_run")} == {"valid"}
    assert shown["summary"]["plan"]["targets"] > 0

    approved = world.service.review(run_id, ReviewRequest(decision="approve", plan_digest=shown["run"]["plan_digest"]),
                                    REVIEWER)
    assert approved["delivered"] is True
    assert world.executions.answered("success")[0][1] == TOKEN  # the task token the earlier release stored
    done = _deliver_and_complete(world, run_id, shown["run"]["active_execution"])
    assert done["run"]["status"] == "complete"
    assert {name: s["status"] for name, s in done["stages"].items()} == {s.value: "complete" for s in Stage}
    assert done["review"]["decision"] == "approve" and done["review"]["decided_by"] == REVIEWER
    assert {e["status"] for e in done["evidence_status"].values()} == {"valid"}


@pytest.mark.parametrize("fixture", recorded("needs_person"), ids=_ids(recorded("needs_person")))
def test_a_run_recorded_waiting_for_a_person_is_resumed_and_completed(world: World, fixture: LedgerFixture) -> None:
    run_id = fixture.load_into(world)
    shown = world.service.view(run_id)
    assert shown["run"]["status"] == "needs_person"
    handoff = Handoff.model_validate(shown["handoff"]["details"])
    assert handoff.attempted.stage == Stage.VERIFY
    assert set(handoff.partial_effect.complete_stages) == {Stage.INSPECT, Stage.PLAN, Stage.EXECUTE}

    resumed = world.service.resume(run_id, OPERATOR)  # the person fixed the cause: builds pass now
    assert resumed["execution"] == f"{run_id}-resume-1" and resumed["assessment"]["next"] == "verify"
    execution = resumed["execution"]
    world.workflow.assess(run_id, execution)
    world.run(run_id, execution, *UP_TO_REVIEW, Stage.AWAIT_REVIEW)
    assert world.agent.calls == {}  # inspect, plan and execute held: nothing the earlier release did is redone
    assert len(world.builds.verifies) == 1
    world.approve(run_id)
    done = _deliver_and_complete(world, run_id, execution)
    assert done["run"]["status"] == "complete" and done["run"]["resumes"] == 1
    assert [d["actor"] for d in done["decisions"] if d["kind"] == "resume"] == [OPERATOR]
    assert done["stages"]["verify"]["attempt"] == 2 and done["review"]["decided_by"] == REVIEWER


@pytest.mark.parametrize("fixture", recorded("complete"), ids=_ids(recorded("complete")))
def test_a_run_recorded_complete_is_shown_listed_and_left_alone(world: World, fixture: LedgerFixture) -> None:
    run_id = fixture.load_into(world)
    shown = world.service.view(run_id)
    assert shown["run"]["status"] == "complete"
    assert {name: s["status"] for name, s in shown["stages"].items()} == {s.value: "complete" for s in Stage}
    assert shown["review"]["decided_by"] == REVIEWER and shown["review"]["comment"] == "looks right"
    assert {e["status"] for e in shown["evidence_status"].values()} == {"valid"}
    assert [e["status"] for e in shown["effects"].values()] == ["confirmed"]
    assert shown["summary"]["tests"]["outcome"] == "passed"
    assert all(a["committed"] for a in shown["artifacts"] if a["stage"] == "complete")
    assert [r["run_id"] for r in world.service.list_runs(RunStatus.COMPLETE, 10, None)["runs"]] == [run_id]

    with pytest.raises(ReviewRejectedError, match="not waiting for review"):
        world.service.review(run_id, ReviewRequest(decision="approve", plan_digest=shown["run"]["plan_digest"]),
                             REVIEWER)
    with pytest.raises(RunConflictError, match="only a stopped run"):
        world.service.resume(run_id, OPERATOR)


def test_every_recorded_scenario_has_its_fixture_in_every_recorded_shape() -> None:
    folders = sorted(path for path in HERE.iterdir() if path.is_dir() and not path.name.startswith("__"))
    assert folders
    for folder in folders:
        assert sorted(path.stem for path in folder.glob("*.json")) == ["awaiting_review", "complete", "needs_person"]


def test_every_schema_version_of_every_kind_is_recorded_and_upgraded_from() -> None:
    """A kind whose shape changed keeps a fixture of each of its versions, and an upgrade from
    each version before the current one."""
    items = [item for path in sorted(HERE.glob("*/*.json")) for item in read_fixture(path).items]
    seen = {(_prefix(item), item.get(SCHEMA_VERSION, UNVERSIONED)) for item in items}
    for prefix, current in CURRENT.items():
        assert {(prefix, version) for version in range(UNVERSIONED, current + 1)} <= seen, f"record a {prefix} fixture"
        assert all((prefix, version) in UPGRADES for version in range(UNVERSIONED, current)), prefix


def test_every_item_written_now_carries_its_kind_s_current_schema_version(world: World) -> None:
    run_id, execution = world.to_review()
    world.approve(run_id)
    _deliver_and_complete(world, run_id, execution)
    items = world.ledger.items(run_id)
    assert {_prefix(item) for item in items} == set(CURRENT)
    assert all(item[SCHEMA_VERSION] == CURRENT[_prefix(item)] for item in items)


@pytest.mark.parametrize("prefix", [RUN_SK, "STAGE", "REVIEW"])
def test_a_record_a_later_release_wrote_is_refused_not_misread(world: World, prefix: str) -> None:
    fixture = recorded("awaiting_review")[-1]
    run_id = fixture.load_into(world)
    item = next(item for item in world.ledger.items(run_id) if _prefix(item) == prefix)
    world.ledger.put_items([{**item, SCHEMA_VERSION: CURRENT[prefix] + 1, "renamed_field": "unknown here"}])
    refused = f"{item['sk']} has schema version {CURRENT[prefix] + 1}.*a later release wrote it"
    with pytest.raises(RecordSchemaError, match=refused):
        world.service.view(run_id)
    with pytest.raises(RecordSchemaError):
        world.service.review(run_id, ReviewRequest(decision="approve", plan_digest="sha256:any"), REVIEWER)


def test_an_upgrade_brings_an_older_record_to_the_current_shape_before_it_is_read(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the next change to a record's shape will: a StageRecord of version 2, whose upgrade
    from version 1 is applied to the recorded items once, and to an item written now not at all."""
    fixture = recorded("needs_person")[0]  # the oldest shape, which every upgrade starts from
    stage = KIND_BY_PREFIX["STAGE"]
    monkeypatch.setitem(KIND_BY_PREFIX, "STAGE", dataclasses.replace(stage, schema_version=stage.schema_version + 1))
    monkeypatch.setitem(UPGRADES, ("STAGE", stage.schema_version),
                        lambda item: {**item, "error": f"upgraded: {item.get('error')}"})
    run_id = fixture.load_into(world)
    [written_now] = [item for item in world.ledger.items(run_id) if item["sk"] == "STAGE#inspect"]
    world.ledger.put_items([{**written_now, SCHEMA_VERSION: stage.schema_version + 1, "error": "as written"}])

    stages = world.ledger.load(run_id).stages
    assert stages["verify"].status == StageStatus.FAILED
    assert (stages["verify"].error or "").startswith("upgraded: ") and "exited 1" in (stages["verify"].error or "")
    assert stages["plan"].error == "upgraded: None"
    assert stages["inspect"].error == "as written"
