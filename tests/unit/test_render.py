"""The CLI's human views over real API documents (captured from the local API)."""
from __future__ import annotations

import json
import sys
import unicodedata
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from agentledger.cli import main as cli
from agentledger.cli import render
from agentledger.faults import CRASH_POINTS

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def section(text: str, title: str) -> str:
    """One titled block of the timeline (blocks are separated by blank lines)."""
    blocks = [block for block in text.split("\n\n") if block.startswith(title)]
    assert len(blocks) == 1, f"no single section {title!r}"
    return blocks[0]


def rows_by_name(table_section: str) -> dict[str, str]:
    """The rows of a section's table (title, header, rows) by their name column (after the glyph)."""
    return {line.split()[1]: line for line in table_section.splitlines()[2:]}


def line_with(text: str, *needles: str) -> str:
    matches = [line for line in text.splitlines() if all(needle in line for needle in needles)]
    assert len(matches) == 1, f"expected one line with {needles}, found {matches}"
    return matches[0]


def test_handoff_is_printed_first_with_what_a_person_needs() -> None:
    text = render.run_timeline(load("run_needs_person_stale.json"))

    lines = text.splitlines()
    assert lines[0].startswith("┌─ NEEDS A PERSON")
    box = lines[: next(i for i, line in enumerate(lines) if line.startswith("└"))]
    labels = [line.split("  ")[0].removeprefix("│ ") for line in box[1:] if not line.startswith("│  ")]
    assert labels == ["what", "attempted", "response", "partial effect", "recovery", "handed off"]
    unwrapped = " ".join(" ".join(box).replace("│", " ").split())
    assert "injected crash at execute:after_commit" in unwrapped
    assert "execute stage, attempt 1" in unwrapped
    assert "complete stages: execute, inspect, plan; uncommitted artifacts: none; external effects: none" in unwrapped
    assert "`agentledger resume`" in unwrapped
    assert text.index("NEEDS A PERSON") < text.index("\nrun ") < text.index("\nStages")


def test_no_handoff_box_when_the_run_does_not_need_a_person() -> None:
    text = render.run_timeline(load("run_complete.json"))

    assert "NEEDS A PERSON" not in text
    assert text.startswith("run ")


def test_evidence_shows_its_current_validity_not_what_was_recorded() -> None:
    evidence = rows_by_name(section(render.run_timeline(load("run_needs_person_stale.json")), "Evidence"))

    assert evidence["plan"].split()[:3] == ["✗", "plan", "stale"]
    assert evidence["plan"].endswith("depends on source_tree, which is stale")
    assert evidence["source_tree"].split()[2] == "stale"
    assert "modified: calc.py" in evidence["source_tree"]
    assert evidence["approval"].split()[2] == "missing"


def test_stages_are_listed_in_workflow_order_including_those_not_started() -> None:
    stages = section(render.run_timeline(load("run_awaiting_review.json")), "Stages").splitlines()[2:]

    assert [line.split()[1] for line in stages] == list(render.STAGE_ORDER)
    assert stages[4].split()[2] == "running"
    assert stages[5].split()[2:] == ["not", "started"]


def test_complete_run_shows_every_stage_complete_with_durations() -> None:
    text = render.run_timeline(load("run_complete.json"))
    stages = section(text, "Stages").splitlines()[2:]

    assert "complete" in line_with(text, "status", "state complete")
    assert [line.split()[:3] for line in stages] == [["✓", stage, "complete"] for stage in render.STAGE_ORDER]
    assert stages[3].endswith("0.09s")


def test_artifacts_show_size_hash_prefix_and_whether_the_ledger_committed_them() -> None:
    text = render.run_timeline(load("run_complete.json"))

    line = line_with(text, "inventory.json", "inspect")
    assert "467 B" in line
    assert "976069f94706" in line
    assert line.endswith("committed")


def test_effects_say_none_until_the_api_reports_some_and_render_generic_dicts() -> None:
    document = load("run_complete.json")
    assert render.run_timeline(document).split("Effects\n", 1)[1].startswith("  none")

    ticket = {"kind": "ticket", "status": "confirmed", "receiver_id": "T-42", "request": {"x": 1}}
    for effects in ([ticket], {"effect-key": ticket}):
        document["effects"] = effects
        line = render.run_timeline(document).split("Effects\n", 1)[1].splitlines()[0]
        assert line == "  kind ticket, status confirmed, receiver_id T-42"


def test_decisions_and_transitions_are_listed() -> None:
    text = render.run_timeline(load("run_complete.json"))

    assert "reviewer chose approve" in line_with(text, "review", "reviewer chose approve")
    assert "await_review → complete" in line_with(text, "v12 ")


def test_progress_line_per_stage_state() -> None:
    stages = load("run_complete.json")["stages"]
    running = {**stages["verify"], "status": "running", "finished_at": None}
    failed = {**stages["verify"], "status": "failed", "attempt": 3, "error": "Runtime.ExitError: crashed"}

    assert render.stage_progress_line(stages["inspect"]) == "  ✓ inspect            0.01s  attempt 1"
    assert render.stage_progress_line(running) == "  ▸ verify           running  attempt 1"
    assert render.stage_progress_line(failed).endswith("attempt 3  Runtime.ExitError: crashed")


def test_outcome_tells_what_to_do_next() -> None:
    awaiting = load("run_awaiting_review.json")
    needs_person = load("run_needs_person_stale.json")

    assert f"agentledger review {awaiting['run']['run_id']} --approve" in render.outcome(awaiting)
    assert "Runtime.ExitError persisted after the retries" in render.outcome(needs_person)
    assert "agentledger resume" in render.outcome(needs_person)


def test_resume_assessment_answers_the_three_questions() -> None:
    text = render.assessment(load("resume_stale.json"))

    lines = text.splitlines()
    assert lines[1] == "Complete: nothing"
    assert lines[2] == "Evidence:"
    assert line_with(text, "  plan: stale — ").endswith("depends on source_tree, which is stale")
    assert line_with(text, "Next:").startswith("Next: inspect — inspect is no longer valid")
    assert "Changed files: modified: calc.py" in lines


def test_runs_table_truncates_the_request() -> None:
    runs = load("runs_list.json")["runs"]
    runs[0]["request"] = "a very long request " * 10

    lines = render.runs_table(runs).splitlines()

    assert lines[0].split() == ["RUN", "STATUS", "STATE", "CREATED", "REPOSITORY", "REQUEST"]
    assert lines[1].startswith("run-6ab9f1eb8f7d3388f4f9  complete")
    assert lines[1].endswith("…")
    assert len(lines[1].split("/tmp/tmp2s4z2j31/sample", 1)[1].strip()) == render.REQUEST_COLUMN_WIDTH
    assert render.runs_table([]) == "no runs"


def test_crash_points_have_a_meaning_each() -> None:
    lines = render.crash_points(CRASH_POINTS).splitlines()[1:]

    assert len(lines) == sum(len(points) for points in CRASH_POINTS.values())
    assert all(len(line.split(None, 1)) == 2 for line in lines)
    assert "outputs written to S3, ledger not yet committed" in line_with("\n".join(lines), "verify:after_artifacts")


def test_metrics_summary_lists_counts_then_timings_with_dashes_for_what_was_never_measured() -> None:
    summary = {
        "namespace": "AgentLedger", "runs_started": 3, "runs_resumed": 1, "recovery_rate": None,
        "time_to_handoff_s": {"count": 2, "avg": 1.5, "max": 2.0}, "review_wait_s": None,
        "stage_duration_s": {"plan": {"count": 4, "avg": 0.25, "max": 0.5}},
        "throttled_by_aws_service": {"dynamodb": 2, "sfn": 1},
    }

    lines = render.metrics_summary(summary).splitlines()

    assert lines[0] == "metrics in namespace AgentLedger (from the EMF records the handlers emitted)"
    assert [line.split("  ")[1] for line in lines[1:]] == [
        "runs started", "runs resumed", "recovery rate", "throttled by AWS", "time to handoff s", "review wait s",
        "stage duration plan (s)"]
    assert line_with("\n".join(lines), "throttled by AWS").endswith("  dynamodb 2, sfn 1")
    assert line_with("\n".join(lines), "recovery rate").endswith("  -")
    assert line_with("\n".join(lines), "time to handoff s").endswith("avg 1.5  max 2.0  n=2")
    assert line_with("\n".join(lines), "review wait s").endswith("  -")
    assert line_with("\n".join(lines), "stage duration plan").endswith("avg 0.25  max 0.5  n=4")


def test_show_prints_the_test_counts_and_failing_tests_of_the_newest_build() -> None:
    document = load("run_complete.json")
    counts = {"tests": 12, "passed": 10, "failed": 1, "errors": 1, "skipped": 0,
              "failing": ["tests.test_slug.test_unicode", "tests.test_stats.test_empty"], "files": [], "unreadable": []}
    document["test_runs"] = {
        "old": {"digest": "a" * 64, "build_id": "p:1", "status": "SUCCEEDED", "created_at": "2026-12-01T10:00:00+00:00",
                "report": {"outcome": "passed", "reason": "the test command exited 0", "counts": None}},
        "new": {"digest": "b" * 64, "build_id": "p:2", "status": "SUCCEEDED", "created_at": "2026-12-02T10:00:00+00:00",
                "report": {"outcome": "failed", "reason": "the test command exited 1: 1 failed, 1 errored of 12",
                           "counts": counts}},
    }
    tests = section(render.run_timeline(document), "Tests").splitlines()
    assert tests[1].split()[:3] == ["failed", "build", "p:2"]
    assert "12 tests: 10 passed, 1 failed, 1 errored, 0 skipped" in tests[3]
    assert tests[4:6] == ["    ✗ tests.test_slug.test_unicode", "    ✗ tests.test_stats.test_empty"]
    assert "no JUnit XML, so no counts" in tests[8]


def test_the_summary_opens_the_timeline_with_what_was_asked_planned_written_and_shown() -> None:
    document = load("run_complete.json")
    document["summary"] = {
        "request": "write tests for calc",
        "plan": {"planner": "docstring-examples", "targets": 7, "skipped": 2,
                 "first": [{"target": f"calc.py::f{i}", "test_path": "tests/test_calc.py",
                            "rationale": "documented with a doctest example"} for i in range(5)]},
        "files_changed": [{"path": "tests/test_calc.py", "lines": 40}],
        "tests": {"written": 7, "outcome": "failed", "passed": 5, "failed": 1, "errors": 1, "skipped": 0},
    }
    text = render.run_timeline(document)

    assert text.startswith("Summary\n")
    brief = section(text, "Summary")
    assert line_with(brief, "  asked ").endswith("write tests for calc")
    assert "7 target(s) to test, 2 skipped (docstring-examples)" in brief
    assert line_with(brief, "calc.py::f4", "→ tests/test_calc.py")
    assert "… and 2 more" in brief
    assert line_with(brief, "  files ").endswith("1 written: tests/test_calc.py (+40)")
    assert line_with(brief, "  tests ").endswith("7 written; failed: 5 passed, 1 failed, 1 errored, 0 skipped")


def test_a_summary_before_planning_says_what_is_not_there_yet() -> None:
    lines = render.summary({"request": "r", "plan": None, "files_changed": [],
                            "tests": {"written": 0, "outcome": None, "passed": None, "failed": None,
                                      "errors": None, "skipped": None}})
    assert lines[2:] == [
        "  plan     not made yet", "  files    0 written: none yet", "  tests    0 written; not run yet"]


@pytest.mark.parametrize(("outcome", "files"), [
    ("empty_plan_reviewed", "  files    0 written: none, the plan writes no files"),
    ("no_tests_kept", "  files    0 written: none, no test was kept"),
])
def test_a_run_that_will_write_nothing_does_not_say_none_yet(outcome: str, files: str) -> None:
    lines = render.summary({"request": "r", "outcome": outcome, "plan": None, "files_changed": [],
                            "tests": {"written": 0, "outcome": "passed", "passed": 2, "failed": 0,
                                      "errors": 0, "skipped": 0}})
    assert files in lines


def test_a_suite_that_wrote_jacoco_reports_shows_its_coverage_under_the_tests() -> None:
    coverage = "lines 50% (4 of 8), branches 38% (3 of 8), from 1 JaCoCo report"
    lines = render.summary({"request": "r", "plan": None, "files_changed": [],
                            "tests": {"written": 0, "outcome": "passed", "passed": 2, "failed": 0,
                                      "errors": 0, "skipped": 0, "coverage": coverage}})
    assert lines[-2:] == ["  tests    0 written; passed: 2 passed, 0 failed, 0 errored, 0 skipped",
                          f"  coverage {coverage}"]


def test_the_diff_stat_counts_each_files_added_and_removed_lines() -> None:
    diff = ("--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1,2 +1,3 @@\n line\n-old\n+new\n+more\n"
            "--- /dev/null\n+++ b/tests/test_b.py\n@@ -0,0 +1,2 @@\n+one\n+two\n")
    assert render.diff_stat(diff) == [("tests/test_a.py", 2, 1), ("tests/test_b.py", 2, 0)]


def test_the_review_brief_shows_the_plan_the_change_the_tests_and_what_still_holds() -> None:
    document = load("run_awaiting_review.json")
    brief = render.review_brief(document, "--- /dev/null\n+++ b/tests/test_x.py\n+a\n+b\n")
    assert brief.startswith(f"Review of {document['run']['run_id']}: plan {document['review']['plan_digest']}")
    assert "tests/test_x.py  +2 -0" in brief and "1 file(s), +2 -0" in brief
    assert "\nEvidence\n" in brief and "valid" in section(brief, "Evidence")


def test_the_live_line_names_the_running_stage_and_its_time_so_far() -> None:
    from datetime import datetime  # noqa: PLC0415

    stages = {"inspect": {"stage": "inspect", "status": "complete", "started_at": "2026-12-03T10:00:00+00:00"},
              "verify": {"stage": "verify", "status": "running", "started_at": "2026-12-03T10:00:05+00:00"}}
    assert render.elapsed_line(stages, datetime(2026, 12, 3, 10, 0, 47, tzinfo=UTC)) == \
        "  … verify running for 42s"
    assert render.elapsed_line(stages, datetime(2026, 12, 3, 10, 3, 10, tzinfo=UTC)) == \
        "  … verify running for 3m05s"
    assert render.elapsed_line({"inspect": stages["inspect"]}, datetime.now(UTC)) is None


def test_a_complete_run_names_its_pull_request_or_says_it_had_nothing_to_do() -> None:
    complete = load("run_complete.json")
    opened = {**complete, "summary": {**(complete.get("summary") or {}), "pull_request": "https://github.example/o/r/pull/7"}}
    assert "pull request https://github.example/o/r/pull/7" in render.outcome(opened)
    assert f"agentledger apply {complete['run']['run_id']}" in render.outcome(opened)

    idle = {**complete, "run": {**complete["run"], "outcome": "nothing_to_do"}}
    assert "complete with nothing to do" in render.outcome(idle)
    assert "plan.json" in render.outcome(idle)
    lines = render.summary({"request": "r", "outcome": "nothing_to_do", "plan": None, "files_changed": [],
                            "tests": {"written": 0, "outcome": None, "passed": None, "failed": None,
                                      "errors": None, "skipped": None}})
    assert lines[2].startswith("  outcome  nothing to do")


def test_the_review_brief_says_when_the_planner_made_the_plan_sent_back_again() -> None:
    document = load("run_awaiting_review.json")
    document["review"]["unchanged_after"] = {"plan_digest": document["review"]["plan_digest"],
                                             "comment": "cover the unicode case", "decided_by": "arn:reviewer"}
    brief = render.review_brief(document, "")
    expected = "arn:reviewer asked for changes to this very plan: cover the unicode case"
    assert expected in section(brief, "Unchanged plan")
    assert "Unchanged plan" not in render.review_brief(load("run_awaiting_review.json"), "")


def test_a_resume_after_thousands_of_changes_names_the_first_and_counts_the_rest() -> None:
    resumed = load("resume_stale.json")
    first = [f"data/file_{n:05}.txt" for n in range(50)]
    resumed["assessment"] = {**resumed["assessment"], "changed_files": {"added": first},
                             "changed_file_counts": {"added": 20_000}}
    line = line_with(render.assessment(resumed), "Changed files:")
    assert line.startswith("Changed files: added: data/file_00000.txt, ")
    assert line.endswith("data/file_00049.txt and 19,950 more")


ESCAPES = "\x1b]0;owned\x07\x1b[2A\r\x9b2J"  # title, cursor up, carriage return, a C1 CSI
# Trojan Source: text shown right to left, a span isolated from its surroundings, a space and a
# byte order mark no reader sees.
REORDERING = "\u202eadmin\u2066 # check\u2069\u200b\ufeff"
HOSTILE = ESCAPES + REORDERING
HOSTILE_SHOWN = "\\x1b]0;owned\\x07\\x1b[2A\\x0d\\x9b2J\\u202eadmin\\u2066 # check\\u2069\\u200b\\ufeff"


def _raw_hidden(text: str) -> list[str]:
    """Control (but newline and tab) and format characters, as a terminal would receive them."""
    return [c for c in text if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf")]


class _HostileApi:
    """The API's answers with what a repository, its suite and a model control made hostile."""

    def __init__(self) -> None:
        document = load("run_awaiting_review.json")
        document["summary"] = {
            "request": f"write tests{HOSTILE}",
            "plan": {"planner": "bedrock:model", "targets": 1, "skipped": 0,
                     "first": [{"target": "calc.py::", "test_path": "tests/test_calc.py",
                                "rationale": f"no test calls it{HOSTILE}"}]},
            "files_changed": [], "tests": {"written": 1, "outcome": "failed"}}
        counts = {"tests": 1, "passed": 0, "failed": 1, "errors": 0, "skipped": 0,
                  "failing": [f"tests.test_calc.test_x{HOSTILE}"], "files": [], "unreadable": []}
        document["test_runs"] = {"t": {"digest": "b" * 64, "build_id": "p:2", "status": "SUCCEEDED", "stage": "verify",
                                       "created_at": "2026-12-02T10:00:00+00:00",
                                       "report": {"outcome": "failed", "reason": f"exited 1{HOSTILE}",
                                                  "counts": counts}}}
        document["artifacts"].append({**document["artifacts"][0], "name": "changes.diff", "committed": True})
        self.document = document

    def get(self, path: str) -> dict[str, Any]:
        return self.document


@pytest.mark.parametrize("command", ["show", "review", "diff"])
def test_no_control_or_format_character_from_the_api_reaches_the_terminal(monkeypatch, capsys, command) -> None:
    monkeypatch.setattr(cli, "_client", lambda args: _HostileApi())
    monkeypatch.setattr(cli, "fetch", lambda url: f"+def test_x():{HOSTILE}\n".encode())  # the generated source
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # diff escapes only what a terminal receives
    cli.main([command, "run-1"])  # review prints the brief, then finds no terminal to ask on
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert _raw_hidden(text) == []
    if command != "diff":
        assert f"write tests{HOSTILE_SHOWN}" in text
        assert f"tests.test_calc.test_x{HOSTILE_SHOWN}" in text
    if command == "review":
        assert "no test calls it\\x1b]0;" in text  # a rationale is cut to its first 60 characters
    if command != "show":
        assert f"+def test_x():{HOSTILE_SHOWN}" in text


def test_a_diff_sent_to_a_pipe_keeps_its_bytes_so_it_still_applies(monkeypatch, capsysbinary) -> None:
    source = f"+def test_x():{HOSTILE}\n".encode()
    monkeypatch.setattr(cli, "_client", lambda args: _HostileApi())
    monkeypatch.setattr(cli, "fetch", lambda url: source)
    cli.main(["diff", "run-1"])
    assert capsysbinary.readouterr().out == source


def test_the_paths_apply_wrote_are_printed_escaped(monkeypatch, capsys, tmp_path: Path) -> None:
    api = _HostileApi()
    api.document["run"]["status"] = "complete"
    api.document["review"]["decision"] = "approve"
    written = f"tests/test_x{REORDERING}.py"
    contents = {"plan.json": {"files_read": {}}, "test-files.json": {written: "def test_x():\n    pass\n"}}
    monkeypatch.setattr(cli, "_client", lambda args: api)
    monkeypatch.setattr(cli, "fetch", lambda url: json.dumps(contents[url.split("?")[0].rsplit("/")[-1]]).encode())
    assert cli.main(["apply", "run-1", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert (tmp_path / written).is_file()  # written as the run named it: only printing escapes it
    assert _raw_hidden(printed) == [] and "+ tests/test_x\\u202eadmin\\u2066 # check" in printed


def test_the_tests_section_shows_each_module_and_class_with_failures_first() -> None:
    document = load("run_awaiting_review.json")
    counts = {"tests": 6, "passed": 5, "failed": 1, "errors": 0, "skipped": 0, "failing": ["ReaderTest.reads"],
              "files": [], "unreadable": [],
              "by_package": {".: CalcTest": {"passed": 3}, "io: ReaderTest": {"failed": 1, "passed": 2}}}
    document["test_runs"] = {"t": {"digest": "b" * 64, "build_id": "p:2", "status": "SUCCEEDED", "stage": "verify",
                                   "created_at": "2026-12-02T10:00:00+00:00",
                                   "report": {"outcome": "failed", "reason": "exited 1", "counts": counts}}}

    shown = render.run_timeline(document)

    assert shown.index("io: ReaderTest") < shown.index(".: CalcTest")
    assert line_with(shown, "io: ReaderTest").endswith("1 failed, 2 passed")


def test_the_summary_says_whether_the_runs_source_can_go_stale() -> None:
    lines = render.summary({"request": "r", "plan": None, "files_changed": [], "source": "an uploaded snapshot",
                            "tests": {"written": 0, "outcome": None, "passed": None, "failed": None,
                                      "errors": None, "skipped": None}})
    assert lines[2] == "  source   an uploaded snapshot"


def test_following_a_run_prints_a_line_for_each_step_its_build_reports_and_the_live_line_shows_it(
        monkeypatch, capsys) -> None:
    from agentledger.cli import follow  # noqa: PLC0415

    settled = load("run_awaiting_review.json")
    running = json.loads(json.dumps(settled))
    running["run"]["status"] = "running"
    running["stages"]["execute"]["status"] = "running"

    def at(description: str | None) -> dict[str, Any]:
        return {**running, "progress": None if description is None else {"description": description}}

    documents = iter([at(None), at("pynguin writing pricing · 0 written, 0 dropped so far"),
                      at("pynguin writing pricing · 0 written, 0 dropped so far"),
                      at("filter: builds · 13 written, 0 dropped so far"), settled])
    client = type("Client", (), {"get": lambda self, path: next(documents)})()
    monkeypatch.setattr(follow.time, "sleep", lambda seconds: None)

    follow.follow_run(client, "run-1", timeout_s=60, show_progress=True)

    steps = [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip().startswith("execute:")]
    assert steps == ["execute: pynguin writing pricing · 0 written, 0 dropped so far",
                     "execute: filter: builds · 13 written, 0 dropped so far"]
    from datetime import datetime  # noqa: PLC0415
    execute = {"stage": "execute", "status": "running", "started_at": "2026-12-03T10:00:05+00:00"}
    live = render.elapsed_line({"execute": execute}, datetime(2026, 12, 3, 10, 0, 47, tzinfo=UTC),
                               {"description": "filter: builds · 13 written"})
    assert live == "  … execute running for 42s · filter: builds · 13 written"


def test_show_says_where_the_running_execute_build_is_under_its_stage() -> None:
    document = load("run_awaiting_review.json")
    document["progress"] = {"description": "filter: adds coverage · 13 written, 5 dropped so far"}
    stages = section(render.run_timeline(document), "Stages")
    assert stages.splitlines()[stages.splitlines().index(line_with(stages, " execute ")) + 1] == \
        "      now: filter: adds coverage · 13 written, 5 dropped so far"


def test_every_step_a_generation_build_reports_has_words_for_a_person() -> None:
    from agentledger.api_contract import BUILD_STEP_WORDS  # noqa: PLC0415
    from agentledger.buildkit.generation import STEPS  # noqa: PLC0415

    assert set(BUILD_STEP_WORDS) == set(STEPS)  # the kit names them; the API's copy must agree
