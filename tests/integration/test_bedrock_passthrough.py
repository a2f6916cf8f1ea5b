"""Locally, Bedrock calls pass through moto to the real service only when a profile is named to sign
them; everything else stays on moto, and `serve -c writer=bedrock` without one refuses to start."""
from __future__ import annotations

import re

import pytest

from agentledger.cli.main import main
from agentledger.local.runtime import BEDROCK_ENDPOINTS, moto_config

pytestmark = pytest.mark.integration
CONVERSE = "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-micro-v1:0/converse"


def test_a_named_profile_lets_bedrock_and_nothing_else_through() -> None:
    config = moto_config("bedrock-dev")
    assert config["core"]["passthrough"] == {"urls": [BEDROCK_ENDPOINTS], "services": []}
    assert config["core"]["mock_credentials"] is True  # every other service still sees moto's fake keys
    assert re.match(BEDROCK_ENDPOINTS, CONVERSE)
    assert not re.match(BEDROCK_ENDPOINTS, "https://dynamodb.us-east-1.amazonaws.com/")
    assert not re.match(BEDROCK_ENDPOINTS, "https://bedrock-runtime.us-east-1.amazonaws.com.evil.example/")


def test_without_a_profile_nothing_passes_through() -> None:
    assert "core" not in moto_config(None)


def test_serve_with_the_bedrock_planner_and_no_profile_refuses_to_start(monkeypatch, capsys) -> None:
    monkeypatch.delenv("AGENTLEDGER_BEDROCK_PROFILE", raising=False)
    assert main(["serve", "-c", "writer=bedrock"]) == 1
    assert "set AGENTLEDGER_BEDROCK_PROFILE" in capsys.readouterr().err
