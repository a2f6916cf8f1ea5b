"""What `agentledger serve` prints of its own: a failure's message may quote what a repository or a
caller controls, and reaches the terminal `serve` runs in only with its control and format
characters escaped."""
from __future__ import annotations

import json
import time
import unicodedata
from typing import Any

import pytest

from agentledger.local import event_rules
from agentledger.local.event_rules import LocalEventRules
from agentledger.local.server import LocalApiServer

pytestmark = pytest.mark.integration

# A title set, lines overwritten, and text shown right to left around an isolated span.
HOSTILE = "\x1b]0;owned\x07\x1b[2A\r\u202eadmin\u2066 # check\u2069"
HOSTILE_SHOWN = "\\x1b]0;owned\\x07\\x1b[2A\\x0d\\u202eadmin\\u2066 # check\\u2069"


def _raw_hidden(text: str) -> list[str]:
    return [c for c in text if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf")]


def _printed(capsys: pytest.CaptureFixture[str], fragment: str) -> str:
    deadline = time.monotonic() + 10
    err = ""
    while fragment not in err and time.monotonic() < deadline:
        err += capsys.readouterr().err
        time.sleep(0.05)
    return err


class _Events:
    """EventBridge as moto holds it: one rule, for build state changes, targeting a function."""

    def list_rules(self) -> dict[str, Any]:
        return {"Rules": [{"Name": "build-ended", "EventPattern": json.dumps({"source": ["aws.codebuild"]})}]}

    def list_targets_by_rule(self, Rule: str) -> dict[str, Any]:  # noqa: N803 — boto3's name
        return {"Targets": [{"Arn": "arn:aws:lambda:us-east-1:123456789012:function:builds"}]}


def test_an_event_that_cannot_be_delivered_is_reported_with_its_error_escaped(monkeypatch, capsys) -> None:
    monkeypatch.setattr(event_rules, "RETRY_DELAY_S", 0)
    rules = LocalEventRules(_Events(), lambda function, event: f"the handler raised: {HOSTILE}")
    rules.put({"source": "aws.codebuild", "detail-type": "CodeBuild Build State Change"})
    err = _printed(capsys, "could not deliver")
    assert f"after 3 attempts: the handler raised: {HOSTILE_SHOWN}" in err
    assert _raw_hidden(err) == []


class _FailingKeeper:
    def run_review_keeper(self) -> None:
        raise RuntimeError(f"cannot read the review of run-1: {HOSTILE}")


def test_a_review_keeper_failure_is_reported_with_its_message_escaped(capsys) -> None:
    server = LocalApiServer(_FailingKeeper(), port=0, keeper_interval_s=0.01).start()  # type: ignore[arg-type]
    try:
        err = _printed(capsys, "review keeper failed")
    finally:
        server.stop()
    assert f"agentledger: review keeper failed: cannot read the review of run-1: {HOSTILE_SHOWN}" in err
    assert _raw_hidden(err) == []
