"""The console's script repeats a few of the Python side's closed sets (it runs in a browser, with
no build step to generate them): each copy must agree with its source."""
from __future__ import annotations

import json
import re
from pathlib import Path

from agentledger.states import RunStatus

APP = Path(__file__).resolve().parents[2] / "infra" / "agentledger" / "local" / "console_static" / "app.js"


def _constant(name: str) -> str:
    found = re.search(rf"const {name} = (.*?);\n", APP.read_text(encoding="utf-8"), re.S)
    assert found, f"app.js defines no {name}"
    return found.group(1)


def test_the_consoles_run_statuses_are_run_status_values() -> None:
    statuses = json.loads(_constant("RUN_STATUSES").replace("'", '"'))
    assert sorted(statuses) == sorted(RunStatus)
    labelled = set(re.findall(r"^\s+(\w+): \[", _constant("RUN_STATUS"), re.M))
    assert labelled == set(RunStatus)
