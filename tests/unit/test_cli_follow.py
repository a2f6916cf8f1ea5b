"""A person who starts a run sees it through: `run` follows it stage by stage until it settles
unless told `--no-wait`, and `show --follow` picks a run up again from where it stands."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agentledger.cli import follow
from agentledger.cli import main as cli
from agentledger.cli.exit_codes import ExitCode

FIXTURES = Path(__file__).parent / "fixtures"
SETTLED = json.loads((FIXTURES / "run_awaiting_review.json").read_text())
RUN_ID = SETTLED["run"]["run_id"]


def _verifying() -> dict[str, Any]:
    """The same run a moment earlier: verify running, nothing awaiting review yet."""
    document = copy.deepcopy(SETTLED)
    document["run"]["status"] = "running"
    document["stages"]["verify"]["status"] = "running"
    del document["stages"]["await_review"]
    return document


class _Api:
    """The API as the CLI sees it: a run created, then the run's document, twice running, then settled."""

    def __init__(self) -> None:
        self.answers = [_verifying(), _verifying(), SETTLED]
        self.gets = 0

    def post(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
        return {"run_id": RUN_ID, "execution": f"{RUN_ID}-start", "status": "running", "revision": None}

    def get(self, path: str) -> dict[str, Any]:
        self.gets += 1
        return self.answers[min(self.gets, len(self.answers)) - 1]


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> _Api:
    fake = _Api()
    monkeypatch.setattr(cli, "_client", lambda args: fake)
    monkeypatch.setattr("agentledger.cli.follow.POLL_INTERVAL_S", 0)
    return fake


def test_run_follows_the_run_until_it_settles_unless_told_not_to(
    api: _Api, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["run", str(tmp_path), "--api", "http://127.0.0.1:9"]) == ExitCode.OK

    followed = capsys.readouterr().out
    assert f"following {RUN_ID}" in followed and "verify" in followed and "awaiting review" in followed
    assert api.gets == 3

    api.gets = 0
    assert cli.main(["run", str(tmp_path), "--no-wait", "--api", "http://127.0.0.1:9"]) == ExitCode.OK
    assert api.gets == 0 and "following" not in capsys.readouterr().out


def test_show_follow_picks_a_run_up_again_and_show_alone_does_not_wait(
    api: _Api, capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["show", RUN_ID, "--follow"]) == ExitCode.OK
    assert api.gets == 3 and f"following {RUN_ID}" in capsys.readouterr().out

    api.gets = 0
    assert cli.main(["show", RUN_ID]) == ExitCode.OK
    assert api.gets == 1 and "following" not in capsys.readouterr().out


def test_a_follower_looks_less_often_while_nothing_changes_and_soon_after_a_change() -> None:
    intervals = [follow.POLL_INTERVAL_S]
    for _ in range(8):
        intervals.append(follow.next_poll_interval(intervals[-1], changed=False))
    assert intervals == sorted(intervals) and intervals[0] < intervals[2] < intervals[-1] == follow.POLL_INTERVAL_MAX_S
    assert follow.next_poll_interval(follow.POLL_INTERVAL_MAX_S, changed=True) == follow.POLL_INTERVAL_S
