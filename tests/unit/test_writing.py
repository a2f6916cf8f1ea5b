"""The execute stage on the in-memory adapters: the writer's candidates go to one build per set of
inputs, what it keeps becomes the test change and its evidence, what it says is bounded and checked,
and the reviewer and the pull request see the funnel, the coverage and the findings first."""
from __future__ import annotations

import io
import json
import tarfile
import unicodedata
from typing import TYPE_CHECKING, Any

import pytest

from agentledger import metric_names
from agentledger.agent import DocstringExamplePlanner, Execution, Plan, PlanItem, ReferenceAgent
from agentledger.buildkit import layout
from agentledger.cli import render
from agentledger.errors import GenerationFailedError, HiddenTextError, NoTestsRanError
from agentledger.faults import SimulatedCrash
from agentledger.generation import GenerationLimits
from agentledger.models import RunOutcome, RunStatus, Stage, StageStatus
from agentledger.states import BuildStatus
from agentledger.testing.agent import InstantAgent
from agentledger.testing.builds import archive_of, generation_archive
from agentledger.testing.effects import InMemoryTracker
from agentledger.testing.world import UP_TO_REVIEW, World, build_world
from agentledger.workflow.writing import (
    BuildResult,
    CandidateResult,
    GenerationReport,
    finding_line,
    funnel_line,
    value_markdown,
    without_hidden_text,
)

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def world(tmp_path: Path) -> World:
    return build_world(tmp_path)


def _committed(world: World, run_id: str, name: str) -> Any:
    ledger = world.ledger.load(run_id)
    [ref] = [a for a in ledger.artifacts if a.name == name and a.key in ledger.stages["execute"].outputs]
    return world.artifacts.get_json(ref) if name.endswith(".json") else world.artifacts.get(ref)


def _planned(world: World) -> tuple[str, str]:
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN)
    return run_id, execution


def _input(world: World) -> dict[str, bytes]:
    [request] = world.builds.generations
    key = request.input_url.split("/", 3)[3]
    with tarfile.open(fileobj=io.BytesIO(world.artifacts.objects[key])) as archive:
        return {m.name: archive.extractfile(m).read() for m in archive if m.isfile()}  # type: ignore[union-attr]


def test_pynguin_runs_in_one_build_and_what_it_keeps_is_the_change(world: World) -> None:
    world.builds.polls_before_done = 1
    run_id, execution = _planned(world)
    outcomes = [world.workflow.run_stage(Stage.EXECUTE, run_id, execution) for _ in range(3)]

    assert [o["done"] for o in outcomes] == [False, False, True]
    assert len(world.builds.generations) == 1 and world.builds.verifies == []
    sent = _input(world)
    request = json.loads(sent[layout.GENERATION_REQUEST_FILE])
    assert (request["writer"], request["candidate_files"]) == ("pynguin", [])  # Pynguin writes in the build
    assert {t["module"] for t in request["targets"]} == {"textkit.slug", "textkit.stats"}
    assert request["module_seconds"] == 15  # the sample's pyproject lowers the deployment's 60
    assert request["runs"] == 5  # the deployment's generationRuns
    kit = {layout.KIT_ENTRY_FILE, f"{layout.KIT_DIR}/generation.py", f"{layout.BUILD_SITE_DIR}/agentledger_pytest.py"}
    assert kit <= set(sent)

    ledger = world.ledger.load(run_id)
    assert ledger.stages["execute"].status == StageStatus.COMPLETE and ledger.stages["execute"].attempt == 1
    files = _committed(world, run_id, "test-files.json")
    assert sorted(files) == ["tests/test_slug_generated.py", "tests/test_stats_generated.py"]
    report = _committed(world, run_id, "generation.json")
    assert report["funnel"]["generated"] == 2 and len(report["findings"]) == 1
    assert ledger.evidence["test_changes"].depends_on["artifact:generation.json"] == next(
        a.sha256 for a in ledger.artifacts if a.name == "generation.json")
    assert ledger.run.outcome == RunOutcome.CHANGES_PROPOSED
    counts = world.metrics.counts
    assert (counts[metric_names.CANDIDATES_GENERATED], counts[metric_names.CANDIDATES_KEPT],
            counts["CandidatesAddedCoverage"]) == (2, 2, 2)
    assert counts[metric_names.COVERAGE_GAINED] == pytest.approx(20.0)  # 4 of 10 lines -> 6 of 10, in each module
    # Each module: the suite killed 1 of 4 mutants, the kept tests one more.
    assert counts[metric_names.MUTANTS_KILLED] == 2
    assert counts[metric_names.MUTATION_SCORE_GAINED] == pytest.approx(25.0)
    generation = GenerationReport.model_validate(report)
    body = value_markdown(generation)
    assert body[0] == "**Mutation score of the targeted modules (before → after)**"
    assert body[1].endswith(": mutation score 25% → 50% (1 → 2 of 4 mutants killed; 2 survive)")
    assert body.index("**Mutants the kept tests kill** (2)") < body.index("**Mutants that survive** (4: a change "
                                                                          "there goes unnoticed by every test)")
    assert any(line.endswith("`w * h` → `w / h` in `return w * h`; killed by test_area") for line in body)
    assert next(i for i, line in enumerate(body) if line.startswith("**Tests:**")) > body.index(
        "**Mutants the kept tests kill** (2)")


def test_a_crash_after_the_results_were_read_starts_no_second_generation(world: World, crash_once: Any) -> None:
    run_id, execution = _planned(world)
    crash_once("after_artifacts")
    with pytest.raises(SimulatedCrash):
        world.run(run_id, execution, Stage.EXECUTE)
    world.run(run_id, execution, Stage.EXECUTE)
    assert len(world.builds.generations) == 1
    assert world.ledger.load(run_id).stages["execute"].status == StageStatus.COMPLETE


def test_nothing_kept_still_shows_the_findings_to_a_reviewer_and_opens_no_pull_request(tmp_path: Path) -> None:
    tracker = InMemoryTracker()
    world = build_world(tmp_path, receivers={"pull_requests": tracker})
    world.builds.generation = "keep_none"
    run_id, execution = world.to_review()
    assert world.ledger.get_run(run_id).outcome == RunOutcome.NO_TESTS_KEPT
    assert _committed(world, run_id, "test-files.json") == {}
    summary = world.service.view(run_id)["summary"]
    view = summary["generation"]
    assert view["kept"] == 0 and view["findings_total"] == 1 and "raises TypeError" in view["findings"][0]
    assert summary["plan"]["targets"] > 0 and summary["tests"]["written"] == 0  # what was kept, not targeted
    world.approve(run_id)
    world.effects.deliver(run_id, execution, "pull_request")
    assert tracker.records == []


def test_a_writer_that_crashed_on_every_module_is_shown_with_its_error_and_counted_not_as_tests_written(
    tmp_path: Path,
) -> None:
    world = build_world(tmp_path)
    world.builds.generation = "writer_crashed"

    run_id, _ = world.to_review()

    summary = world.service.view(run_id)["summary"]
    failures = summary["generation"]["writer_failures"]
    assert failures and all(line.endswith(": pynguin crashed (2 tries): RuntimeError: Failed to compute stacksize "
                                          "(exited 1 in 3.09 s)") for line in failures)
    assert summary["tests"]["written"] == 0
    assert world.metrics.counts[metric_names.WRITER_FAILURES] == len(failures)
    shown = "\n".join(render.summary(summary))
    assert "  no test  " in shown and "RuntimeError: Failed to compute stacksize" in shown
    assert "0 written" in shown


def test_a_project_with_no_tests_that_the_writer_added_none_to_reaches_review_with_nothing_kept(
    tmp_path: Path,
) -> None:
    world = build_world(tmp_path)
    world.builds.generation, world.builds.outcome = "keep_none", "nothing_collected"

    run_id, _ = world.to_review()

    ledger = world.ledger.load(run_id)
    assert (ledger.run.status, ledger.run.outcome) == (RunStatus.AWAITING_REVIEW, RunOutcome.NO_TESTS_KEPT)
    assert ledger.stages["verify"].status == StageStatus.COMPLETE
    assert not [d for d in ledger.decisions if d.kind == "handoff"]
    assert ledger.latest_test_run().report["outcome"] == "no_tests"


def test_tests_written_that_did_not_run_still_fail_verify(tmp_path: Path) -> None:
    world = build_world(tmp_path)
    world.builds.outcome = "nothing_collected"
    run_id, execution = world.create()

    with pytest.raises(NoTestsRanError):
        world.run(run_id, execution, *UP_TO_REVIEW)


def test_the_pull_request_leads_with_the_funnel_the_coverage_and_the_findings(tmp_path: Path) -> None:
    tracker = InMemoryTracker()
    world = build_world(tmp_path, receivers={"pull_requests": tracker})
    run_id, execution = world.ready_to_complete()
    world.effects.deliver(run_id, execution, "pull_request")
    [(_, payload)] = tracker.records
    body = payload["body"]
    assert body.index("**Tests:** 2 kept of 2 generated by pynguin") < body.index("**Plan digest:**")
    assert "- textkit/slug.py: lines 40%, branches 25% → lines 60%, branches 50%" in body
    assert "**Findings** (1, for the reviewer to judge)" in body and "`f(None)` raises TypeError: bad operand" in body


def _upload_instead(world: World, uploads: bytes, ends: BuildStatus = BuildStatus.SUCCEEDED) -> None:
    original = world.builds.start

    def start(request: Any) -> str:
        build_id = original(request)
        world.artifacts.objects[request.output_grant["fields"]["key"]] = uploads
        if ends != BuildStatus.SUCCEEDED:
            world.builds.generations.remove(request)  # answered as an ordinary build, which ends `ends`
            world.builds.ends = ends
        return build_id

    world.builds.start = start  # type: ignore[method-assign]


@pytest.mark.parametrize("ends", [BuildStatus.FAILED, BuildStatus.TIMED_OUT, BuildStatus.STOPPED])
def test_a_generation_build_that_did_not_succeed_is_not_believed_and_goes_to_a_person_with_a_reason(
        world: World, ends: BuildStatus) -> None:
    kept_everything = generation_archive(
        {"writer": "pynguin", "targets": [{"module": "textkit.slug", "path": "textkit/slug.py",
                                            "test_path": "tests/test_slug_generated.py"}]},
        {}, "keep_all")
    _upload_instead(world, kept_everything, ends)
    run_id, execution = _planned(world)
    with pytest.raises(GenerationFailedError, match=f"the generation build {ends.value.lower().replace('_', ' ')}"):
        world.run(run_id, execution, Stage.EXECUTE)
    ledger = world.ledger.load(run_id)
    assert ledger.stages["execute"].status == StageStatus.FAILED and "test_changes" not in ledger.evidence
    outcome = world.workflow.classify(run_id, execution, {"Error": "GenerationFailedError"}, "execute")
    assert outcome["action"] == "handoff"
    assert world.ledger.get_run(run_id).status == RunStatus.NEEDS_PERSON
    handoff = next(d for d in world.ledger.load(run_id).decisions if d.kind == "handoff")
    assert "unclassified" not in handoff.summary and "generation-output.txt" in handoff.summary


@pytest.mark.parametrize(("files", "complaint"), [
    ({"setup.py": "import os\n"}, "files the plan did not name: setup.py"),
    ({"tests/test_slug_generated.py": "def test_x(:\n"}, "which is not Python"),
    ({"tests/test_slug_generated.py": "x = 1\n" * 40_000}, "larger than a review can hold"),
])
def test_what_a_successful_build_claims_is_checked_before_anything_is_kept(
        world: World, files: dict[str, str], complaint: str) -> None:
    report = {"writer": "pynguin", "funnel": {"generated": 1}, "findings": [], "files": files,
              "candidates": [{"test_path": "tests/test_slug_generated.py", "name": "test_x",
                              "source": "def test_x(): pass"}]}
    result = {"install": {"commands": 1, "exit_code": 0, "duration_s": 0.1, "timed_out": False},
              "test": {"command": "generate", "exit_code": 0, "duration_s": 0.1, "timed_out": False}}
    _upload_instead(world, archive_of({layout.RESULT_FILE: json.dumps(result).encode(),
                                       layout.GENERATION_RESULT_FILE: json.dumps(report).encode()}))
    run_id, execution = _planned(world)
    with pytest.raises(GenerationFailedError, match=complaint):
        world.run(run_id, execution, Stage.EXECUTE)
    assert "test_changes" not in world.ledger.load(run_id).evidence


# -- tests that carry a character a reader does not see --------------------------------------------
SLUG_TESTS = "tests/test_slug_generated.py"
SLUG_ONLY = {"writer": "pynguin", "targets": [{"module": "textkit.slug", "path": "textkit/slug.py",
                                               "test_path": SLUG_TESTS}]}
HEADER = "import textkit.slug\n"
CLEAN_TEST = 'def test_slugify():\n    assert textkit.slug.slugify("A b") == "a-b"\n'
# Reads as comparing "ab" to itself; the override makes the line show something else than it runs.
HIDDEN_TEST = 'def test_slugify_reversed():\n    assert textkit.slug.slugify("\u202eab") == "\u202eab"\n'


def _raw_hidden(text: str) -> list[str]:
    return [c for c in text if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf")]


def _kept_by_the_build(world: World, text: str) -> tuple[str, str]:
    """A run whose execute build kept every test of `text`, the slug module's test file."""
    _upload_instead(world, generation_archive(SLUG_ONLY, {SLUG_TESTS: text}, "keep_all"))
    run_id, execution = _planned(world)
    world.run(run_id, execution, Stage.EXECUTE)
    return run_id, execution


def test_a_kept_test_that_carries_a_hidden_character_is_dropped_and_shown_as_a_finding(world: World) -> None:
    run_id, _ = _kept_by_the_build(world, f"{HEADER}\n\n{CLEAN_TEST}\n\n{HIDDEN_TEST}")

    assert _committed(world, run_id, "test-files.json") == {SLUG_TESTS: f"{HEADER}\n\n{CLEAN_TEST}"}
    assert _raw_hidden(_committed(world, run_id, "changes.diff").decode()) == []
    report = _committed(world, run_id, "generation.json")
    dropped = next(c for c in report["candidates"] if c["name"] == "test_slugify_reversed")
    why = "carries U+202E RIGHT-TO-LEFT OVERRIDE at line 2 of the test"
    assert (dropped["dropped_by"], dropped["detail"]) == ("no_hidden_text", why)
    summary = world.service.view(run_id)["summary"]
    view = summary["generation"]
    assert view["kept"] == 1 and view["funnel"].endswith(
        "reached what the suite misses 2, killed a mutant 2, free of hidden characters 1)")
    assert summary["tests"]["written"] == 1
    assert view["findings_total"] == 2  # the build's own finding comes after it
    assert view["findings"][0] == f"`test_slugify_reversed` dropped: it {why} ({SLUG_TESTS})"
    assert world.ledger.get_run(run_id).outcome == RunOutcome.CHANGES_PROPOSED


@pytest.mark.parametrize(("text", "tests", "why"), [
    (f'{HEADER}EXPECTED = "\u2066ab\u2069"\n\n\n{CLEAN_TEST}', ["test_slugify"],
     "carries U+2066 LEFT-TO-RIGHT ISOLATE at line 2 of its file, not within one test alone, "
     "and 1 other hidden character(s)"),
    (f"{HEADER}\n\n{CLEAN_TEST}\n# \u200bnothing to see\n\n\n{CLEAN_TEST.replace('slugify(', 'slugify_again(', 1)}",
     ["test_slugify", "test_slugify_again"],
     "carries U+200B ZERO WIDTH SPACE at line 7 of its file, not within one test alone"),
    # A line separator Python reads as part of a string, where the split into tests breaks the line.
    (f'{HEADER}SEPARATOR = "\u2028"\n\n\n{CLEAN_TEST}\n\n{HIDDEN_TEST}    assert SEPARATOR\n',
     ["test_slugify", "test_slugify_reversed"],
     "carries U+202E RIGHT-TO-LEFT OVERRIDE at line 10 of its file, not within one test alone"),
])
def test_a_hidden_character_outside_any_one_test_drops_the_whole_file(
        world: World, text: str, tests: list[str], why: str) -> None:
    run_id, _ = _kept_by_the_build(world, text)

    assert _committed(world, run_id, "test-files.json") == {}
    assert world.ledger.get_run(run_id).outcome == RunOutcome.NO_TESTS_KEPT
    view = world.service.view(run_id)["summary"]["generation"]
    assert view["kept"] == 0
    assert view["findings"][:-1] == [f"`{name}` dropped: it {why} ({SLUG_TESTS})" for name in tests]


def test_a_junit_class_that_carries_a_hidden_character_is_dropped_with_its_file() -> None:
    path = "src/test/java/shapes/CircleTest.java"
    source = "class CircleTest {\n  @Test void area() { assertEquals(\"\u202eab\", name()); }\n}\n"
    result = BuildResult(writer="bedrock", funnel={"generated": 1, "coverage": 1}, files={path: source},
                         candidates=[CandidateResult(test_path=path, name="CircleTest", source=source)])
    judged = without_hidden_text(result)
    assert judged.files == {} and judged.kept == []
    [finding] = judged.findings
    assert finding.message == "carries U+202E RIGHT-TO-LEFT OVERRIDE at line 2 of the test"
    assert _raw_hidden(finding.source) == []  # what the reviewer may open is escaped too


def test_the_doctest_writer_s_example_that_carries_a_hidden_character_never_reaches_the_repository(
        world: World) -> None:
    pyproject = world.repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'writer = "doctest"\n')
    slug = world.repo / "textkit" / "slug.py"
    slug.write_text(slug.read_text() + '''

def is_admin(role):
    """Only the administrator's role.

    >>> is_admin("user\u202e \u2066# admin\u2069 \u2066")
    False
    """
    return role == "admin"
''')
    run_id, _ = world.to_review()

    files = _committed(world, run_id, "test-files.json")
    assert "def test_slugify():" in files[SLUG_TESTS] and "is_admin" not in files[SLUG_TESTS]
    assert _raw_hidden("".join(files.values())) == []
    view = world.service.view(run_id)["summary"]["generation"]
    assert view["findings"][0].startswith("`test_is_admin` dropped: it carries U+202E RIGHT-TO-LEFT OVERRIDE at line 3")


class _CustomSuiteAgent(InstantAgent):
    """A custom agent for a project whose suite is its own command: no filter runs on what it
    writes, which is kept as written."""

    def plan(self, inventory: Any, snapshot: Any, brief: Any) -> Plan:
        return Plan(planner="custom", writer="custom", revision=snapshot.revision, skipped=[], files_read={},
                    items=[PlanItem(target="textkit/slug.py::slugify", test_path="tests/test_slug_custom.py",
                                    rationale="slugify has no test")])

    def execute(self, plan: Plan, snapshot: Any, workspace: Any) -> Execution:
        test = 'from textkit.slug import slugify\n\n\ndef test_slugify():\n    assert slugify("\u2066ab\u2069")\n'
        return Execution(files={"tests/test_slug_custom.py": test}, diff="")


def test_tests_kept_as_written_that_carry_a_hidden_character_go_to_a_person_and_none_is_kept(
        tmp_path: Path) -> None:
    world = build_world(tmp_path, agent=_CustomSuiteAgent())
    pyproject = world.repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'ecosystem = "custom"\ntest = "./run-suite"\n')
    run_id, execution = _planned(world)
    with pytest.raises(HiddenTextError, match="tests/test_slug_custom.py carries U[+]2066 LEFT-TO-RIGHT ISOLATE at "
                                              "line 5 of the file, and 1 other hidden character"):
        world.run(run_id, execution, Stage.EXECUTE)
    assert "test_changes" not in world.ledger.load(run_id).evidence
    outcome = world.workflow.classify(run_id, execution, {"Error": "HiddenTextError"}, "execute")
    assert outcome["action"] == "handoff"
    handoff = next(d for d in world.ledger.load(run_id).decisions if d.kind == "handoff")
    assert "a character a reader does not see" in handoff.summary


def test_a_generation_build_that_failed_says_why_in_the_handoff_as_the_build_service_and_the_kit_said_it(
        world: World) -> None:
    # The kit's own failure is in the results only it writes; the build service names the failed phase.
    _upload_instead(world, archive_of({layout.FAILURE_FILE: b"install failed: the cache entry is not writable\n"}),
                    BuildStatus.FAILED)
    world.builds.says = "PRE_BUILD phase: Error while executing the pre_build phase's commands. Reason: exit status 1"
    run_id, execution = _planned(world)
    with pytest.raises(GenerationFailedError) as failed:
        world.run(run_id, execution, Stage.EXECUTE)
    assert str(failed.value) == (
        "the generation build failed (PRE_BUILD phase: Error while executing the pre_build phase's commands. "
        "Reason: exit status 1; agentledger in the build: install failed: the cache entry is not writable); "
        "see generation-output.txt")
    # As Step Functions hands the stage's error to the classifier.
    world.workflow.classify(run_id, execution, {"Error": "GenerationFailedError",
                                                "Cause": json.dumps({"errorMessage": str(failed.value)})}, "execute")
    handoff = next(d for d in world.ledger.load(run_id).decisions if d.kind == "handoff")
    assert "the cache entry is not writable" in json.dumps(handoff.details)


def test_a_plug_in_agent_s_plan_is_held_to_the_deployment_s_generation_settings(tmp_path: Path) -> None:
    """A plug-in agent built with limits of its own asks for a longer search and fewer runs in a
    row; the deployment's caps and its count of runs are what the build is told."""
    lenient = GenerationLimits(module_seconds=600, run_seconds=6000, iterations=10**6, runs=1)
    world = build_world(tmp_path, agent=ReferenceAgent(planner=DocstringExamplePlanner(lenient)))
    run_id, execution = world.create()
    world.run(run_id, execution, Stage.INSPECT, Stage.PLAN)

    ledger = world.ledger.load(run_id)
    [ref] = [a for a in ledger.artifacts if a.name == "plan.json" and a.key in ledger.stages["plan"].outputs]
    generation = world.artifacts.get_json(ref)["generation"]
    deployment = world.settings.generation_limits
    # The sample repository asks for 15 s per module, within both.
    assert (generation["module_seconds"], generation["run_seconds"], generation["iterations"], generation["runs"]) == (
        15, deployment.run_seconds, deployment.iterations, deployment.runs)


def test_the_pull_request_names_the_modules_the_writer_wrote_nothing_for_with_hidden_characters_escaped() -> None:
    report = GenerationReport.model_validate({
        "writer": "pynguin", "funnel": {"generated": 0}, "candidates": [],
        "writer_failures": [{"module": "parse", "what": "crashed", "message": "ValueError: bad\u202ename"},
                            {"module": "parse.util", "what": "timed_out", "tries": 2}]})

    body = "\n".join(value_markdown(report))

    assert "**Modules the writer wrote no test for** (2)" in body
    assert "- parse: pynguin crashed: ValueError: bad\\u202ename" in body and "\u202e" not in body
    assert "- parse.util: pynguin timed out (2 tries)" in body
    # A report an earlier release recorded, before writers' failures were: read as none.
    assert GenerationReport.model_validate({"writer": "pynguin", "funnel": {}, "candidates": []}).writer_failures == []


def test_findings_from_an_argument_of_the_wrong_type_come_last_and_say_so() -> None:
    def raises(exception: str, call: str) -> dict[str, str]:
        return {"module": "slugify", "test": "t", "source": call, "exception": exception, "message": "boom"}

    report = GenerationReport.model_validate({"writer": "pynguin", "funnel": {}, "candidates": [], "findings": [
        raises("TypeError", "slugify(text=set())"), raises("builtins.AttributeError", "slugify(text=1j)"),
        raises("ValueError", "slugify(text='', max_length=-1)")]})

    lines = [finding_line(finding) for finding in report.ranked_findings()]

    assert lines[0] == "slugify: `slugify(text='', max_length=-1)` raises ValueError: boom"
    assert all(line.endswith("(an argument of the wrong type, likely)") for line in lines[1:])
    assert "\n".join(value_markdown(report)).index("ValueError") < "\n".join(value_markdown(report)).index("TypeError")


def test_the_funnel_says_which_kept_tests_mutation_could_not_judge() -> None:
    def candidate(name: str, kills: list[str]) -> dict[str, Any]:
        return {"test_path": "tests/test_s_generated.py", "name": name, "source": f"def {name}(): pass",
                "kills": kills}

    report = GenerationReport.model_validate({
        "writer": "pynguin",
        "funnel": {"generated": 3, "build": 3, "pass_alone": 3, "pass_with_suite": 3, "coverage": 3, "mutation": 3},
        "candidates": [candidate("test_a", ["x_f__mutmut_1"]), candidate("test_b", []), candidate("test_c", [])]})
    assert funnel_line(report) == (
        "3 kept of 3 generated by pynguin (built 3, passed 5× alone 3, passed 5× with the suite 3, reached what the "
        "suite misses 3, killed a mutant 1, kept where mutation cannot judge 2)")
