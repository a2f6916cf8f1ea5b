"""The execute stage's build: the plan's writer produces candidate tests and the build keeps those
that build, pass five runs alone and five with the suite, reach code the suite misses and kill a
mutant the suite leaves alive (buildkit/generation.py runs all of it, in the sandbox: writing
tests means running the repository's code).

What comes back is the build's word, so it is bounded and checked here before any of it is kept:
only the test files the plan named, each one Python that parses, within sizes a ledger and a
review can hold. A build that did not succeed is not believed at all. And a kept test that carries
a character a reader does not see (agentledger.hidden_text) is dropped here, whichever writer
wrote it, and shown to the reviewer as a finding."""
from __future__ import annotations

import ast
import io
import json
import tarfile
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from .. import metric_names
from ..agent import Plan, PlanItem, java
from ..agent.inventory import importable_name
from ..agent.planner import run_seed
from ..buildkit import layout
from ..buildkit.generation import join_test_file, split_test_file
from ..errors import GenerationFailedError, HiddenTextError
from ..fingerprints import digest
from ..generation import GenerationLimits, GenerationSettings
from ..hidden_text import described, hidden_characters, printable
from ..models import ArtifactRef, Run, Stage, TestRun
from ..states import BuildStatus
from ..testrun.layout import build_timeout_minutes
from .builds import (
    BuildInputs,
    Builds,
    cache_key,
    control_files,
    failed_build,
    kit_digest,
    missing_output,
    repository_files,
)
from .verification import read_output_archive

if TYPE_CHECKING:
    from pathlib import Path

    from ..ports import ArtifactPort, BuildPort, LedgerPort, MetricSink
    from ..testrun.config import TestRunConfig

# The build's filters, then this stage's own: a test the repository would hold must read as it runs.
Filter = Literal["build", "pass_alone", "pass_with_suite", "coverage", "mutation", "no_hidden_text"]
FILTERS: tuple[Filter, ...] = ("build", "pass_alone", "pass_with_suite", "coverage", "mutation", "no_hidden_text")
MAX_TEST_FILE_CHARS = 200_000
MAX_TEST_FILES_CHARS = 2_000_000
GENERATION_RESULT_LIMIT_BYTES = 8 << 20
MAX_FINDINGS = 100
MAX_FINDING_SOURCE = 20_000


class CandidateResult(BaseModel):
    """One candidate test and what became of it: kept, or dropped by the first filter it failed."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    test_path: str = Field(max_length=500)
    name: str = Field(max_length=300)
    source: str = Field(max_length=20_000)
    module: str | None = Field(default=None, max_length=300)
    dropped_by: Filter | None = None
    detail: str = Field(default="", max_length=2_000)
    runs: dict[str, int] = Field(default_factory=dict, max_length=len(FILTERS))
    gain: dict[str, int] = Field(default_factory=dict, max_length=2)  # lines, branches it adds
    kills: list[Annotated[str, Field(max_length=300)]] = Field(default_factory=list, max_length=2_000)

    @property
    def kept(self) -> bool:
        return self.dropped_by is None


# What a call raises when an argument is of a type the code does not take ('set' object has no
# attribute 'lower'; can only concatenate str (not "complex")).
WRONG_TYPE_EXCEPTIONS = frozenset({"TypeError", "AttributeError"})


class Finding(BaseModel):
    """For the reviewer to judge: an input that makes the code raise where nothing said it should
    (`raises`, in the module under test), or a test kept by the build and dropped here for a
    character a reader does not see (`hidden_text`, in its test file; `message` says which, where)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    kind: Literal["raises", "hidden_text"] = "raises"
    module: str = Field(max_length=500)
    test: str = Field(max_length=300)
    source: str = Field(max_length=MAX_FINDING_SOURCE)
    exception: str = Field(default="", max_length=200)
    message: str = Field(default="", max_length=2_000)

    def wrong_type(self) -> bool:
        """Raised, most likely, because the call passed an argument of a type the code does not take."""
        return self.kind == "raises" and self.exception.rsplit(".", 1)[-1] in WRONG_TYPE_EXCEPTIONS


WriterEnding = Literal["crashed", "timed_out", "wrote_nothing", "unreadable", "not_searched"]
WRITER_ENDINGS: dict[str, str] = {
    "crashed": "crashed", "timed_out": "timed out", "wrote_nothing": "wrote nothing",
    "unreadable": "wrote what could not be read", "not_searched": "was not run",
}


class WriterFailure(BaseModel):
    """A targeted module the writer wrote no test for, and how its last try ended, with the last
    error it printed (the build's text: shown with any hidden character escaped)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    module: str = Field(max_length=300)
    what: WriterEnding
    message: Annotated[str, AfterValidator(printable)] = Field(default="", max_length=2_000)
    tries: int = Field(default=1, ge=1, le=100)


class ModuleCoverage(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    lines: int = Field(ge=0)
    lines_covered: int = Field(ge=0)
    branches: int = Field(ge=0)
    branches_covered: int = Field(ge=0)

    @property
    def line_percent(self) -> float:
        return 100.0 * self.lines_covered / self.lines if self.lines else 100.0

    @property
    def branch_percent(self) -> float:
        return 100.0 * self.branches_covered / self.branches if self.branches else 100.0


class CoverageChange(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    before: ModuleCoverage | None = None
    after: ModuleCoverage | None = None


class MutantLine(BaseModel):
    """One mutant, as a reviewer reads it: its line, what mutmut changed there, and (for one the kept
    tests kill) which test kills it. The build's text, shown with any hidden character escaped."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str = Field(max_length=300)
    line: int = Field(ge=0)
    source: Annotated[str, AfterValidator(printable)] = Field(default="", max_length=300)
    original: Annotated[str, AfterValidator(printable)] = Field(default="", max_length=300)
    mutated: Annotated[str, AfterValidator(printable)] = Field(default="", max_length=300)
    killed_by: str | None = Field(default=None, max_length=1_000)


class ModuleMutation(BaseModel):
    """A targeted module's mutants: how many the suite killed before, how many with the kept tests
    after, which the kept tests kill and which survive (the first fifty of each)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    module: str = Field(max_length=300)
    mutants: int = Field(ge=0)
    checked: int = Field(ge=0)
    killed_before: int = Field(ge=0)
    killed_after: int = Field(ge=0)
    no_tests: int = Field(default=0, ge=0)
    killed_by_kept: list[MutantLine] = Field(default_factory=list, max_length=50)
    survivors: list[MutantLine] = Field(default_factory=list, max_length=50)
    survivors_total: int = Field(default=0, ge=0)
    reason: Annotated[str, AfterValidator(printable)] = Field(default="", max_length=2_000)

    @property
    def score_before(self) -> float:
        return 100.0 * self.killed_before / self.checked if self.checked else 0.0

    @property
    def score_after(self) -> float:
        return 100.0 * self.killed_after / self.checked if self.checked else 0.0


class GenerationReport(BaseModel):
    """generation.json: what the execute stage's build wrote and kept, and why."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    writer: str = Field(max_length=100)
    funnel: dict[str, int] = Field(max_length=len(FILTERS) + 1)
    candidates: list[CandidateResult] = Field(max_length=400)
    findings: list[Finding] = Field(default_factory=list, max_length=MAX_FINDINGS)
    coverage: dict[str, CoverageChange] = Field(default_factory=dict, max_length=1_000)
    mutation: dict[str, ModuleMutation] = Field(default_factory=dict, max_length=1_000)
    notes: list[str] = Field(default_factory=list, max_length=200)
    writer_failures: list[WriterFailure] = Field(default_factory=list, max_length=400)
    timings: dict[str, float] = Field(default_factory=dict, max_length=20)

    @property
    def kept(self) -> list[CandidateResult]:
        return [candidate for candidate in self.candidates if candidate.kept]

    def ranked_findings(self) -> list[Finding]:
        """The findings a reviewer should read first, first: what raised on an argument of the wrong
        type (a test writer's random `text=set()`) says little about the code, so it comes last."""
        return sorted(self.findings, key=lambda finding: finding.wrong_type())

    def mutants_killed(self) -> int:
        """Mutants of the targeted modules that the kept tests kill and the suite did not."""
        return sum(module.killed_after - module.killed_before for module in self.mutation.values())

    def mutation_score_gained(self) -> float:
        """Points of mutation score the kept tests add over all targeted modules together."""
        checked = sum(module.checked for module in self.mutation.values())
        return round(100.0 * self.mutants_killed() / checked, 2) if checked else 0.0

    def coverage_gained(self) -> float:
        """Points of line coverage the kept tests add over all targeted modules together."""
        before = [change.before for change in self.coverage.values() if change.before and change.after]
        after = [change.after for change in self.coverage.values() if change.before and change.after]
        lines = sum(module.lines for module in after)
        if not lines:
            return 0.0
        return round(100.0 * (sum(m.lines_covered for m in after) - sum(m.lines_covered for m in before)) / lines, 2)


FILTER_NAMES = {"build": "built", "pass_alone": "passed 5× alone", "pass_with_suite": "passed 5× with the suite",
                "coverage": "reached what the suite misses", "mutation": "killed a mutant",
                "no_hidden_text": "free of hidden characters"}
FINDINGS_SHOWN = 10


def funnel_line(report: GenerationReport) -> str:
    """`2 kept of 7 generated (built 7, passed 5× alone 6, passed 5× with the suite 6, added coverage 2,
    free of hidden characters 2)`; a report recorded before a filter was there does not name it."""
    steps = ", ".join(f"{FILTER_NAMES[name]} {report.funnel[name]}" for name in FILTERS if name in report.funnel)
    # Kept without a kill: their module's mutants could not be run (the build's notes say why).
    unjudged = sum(1 for candidate in report.kept if "mutation" in report.funnel and not candidate.kills)
    if unjudged:
        killed = f"{FILTER_NAMES['mutation']} {report.funnel['mutation']}"
        steps = steps.replace(killed, f"{FILTER_NAMES['mutation']} {report.funnel['mutation'] - unjudged}, "
                                      f"kept where mutation cannot judge {unjudged}")
    return f"{len(report.kept)} kept of {report.funnel.get('generated', 0)} generated by {report.writer} ({steps})"


def coverage_line(path: str, change: CoverageChange) -> str:
    def shown(module: ModuleCoverage | None) -> str:
        if module is None:
            return "not measured"
        branches = f", branches {module.branch_percent:.0f}%" if module.branches else ""
        return f"lines {module.line_percent:.0f}%{branches}"

    return f"{path}: {shown(change.before)} → {shown(change.after)}"


def mutation_line(path: str, module: ModuleMutation) -> str:
    """`shapes/core.py: mutation score 40% → 85% (8 → 17 of 20 mutants killed; 3 survive)`."""
    if not module.checked:
        return f"{path}: no mutation score: {module.reason or 'no mutant was checked'}"
    unchecked = f", {module.mutants - module.checked} not checked in time" if module.checked < module.mutants else ""
    survive = module.checked - module.killed_after
    return (f"{path}: mutation score {module.score_before:.0f}% → {module.score_after:.0f}% "
            f"({module.killed_before} → {module.killed_after} of {module.checked} mutants killed; "
            f"{survive} survive{unchecked})")


def mutant_line(path: str, mutant: MutantLine) -> str:
    """`shapes/core.py:12 `< 0` → `<= 0` in `if n < 0:`` (`; killed by test_sign`)."""
    where = f" in `{mutant.source}`" if mutant.source and mutant.source != mutant.original else ""
    killed = f"; killed by {mutant.killed_by.rsplit('::', 1)[-1]}" if mutant.killed_by else ""
    return f"{path}:{mutant.line} `{mutant.original}` → `{mutant.mutated}`{where}{killed}"


def killed_lines(report: GenerationReport) -> list[str]:
    return [mutant_line(path, mutant) for path, module in sorted(report.mutation.items())
            for mutant in module.killed_by_kept]


def survivor_lines(report: GenerationReport) -> list[str]:
    return [mutant_line(path, mutant) for path, module in sorted(report.mutation.items())
            for mutant in module.survivors]


def writer_failure_line(report: GenerationReport, failure: WriterFailure) -> str:
    """`parse: Pynguin crashed (2 tries): RuntimeError: Failed to compute stacksize (exited 1 in 3 s)`."""
    tries = f" ({failure.tries} tries)" if failure.tries > 1 else ""
    said = f": {failure.message}" if failure.message else ""
    return f"{failure.module}: {report.writer} {WRITER_ENDINGS[failure.what]}{tries}{said}"


def finding_line(finding: Finding) -> str:
    if finding.kind == "hidden_text":
        # Why first: a terminal's view cuts a finding's line at its width.
        return f"`{finding.test}` dropped: it {finding.message} ({finding.module})"
    call = " ".join(finding.source.splitlines()[-1].split())
    likely = " (an argument of the wrong type, likely)" if finding.wrong_type() else ""
    return f"{finding.module}: `{call}` raises {finding.exception or '?'}: {finding.message}{likely}"


def value_markdown(report: GenerationReport) -> list[str]:
    """What a pull request leads with: the targeted modules' mutation score, the mutants the kept
    tests kill and those that survive; then the funnel, coverage, and the findings."""
    lines = []
    if report.mutation:
        killed, survivors = killed_lines(report), survivor_lines(report)
        lines += ["**Mutation score of the targeted modules (before → after)**",
                  *[f"- {mutation_line(path, module)}" for path, module in sorted(report.mutation.items())], ""]
        if killed:
            lines += [f"**Mutants the kept tests kill** ({report.mutants_killed()})",
                      *[f"- {line}" for line in killed[:FINDINGS_SHOWN]], ""]
        if survivors:
            total = sum(module.survivors_total for module in report.mutation.values())
            lines += [f"**Mutants that survive** ({total}: a change there goes unnoticed by every test)",
                      *[f"- {line}" for line in survivors[:FINDINGS_SHOWN]], ""]
    lines += [f"**Tests:** {funnel_line(report)}", "", "**Coverage of the targeted modules (before → after)**",
              *[f"- {coverage_line(path, change)}" for path, change in sorted(report.coverage.items())]]
    if report.writer_failures:
        lines += ["", f"**Modules the writer wrote no test for** ({len(report.writer_failures)})",
                  *[f"- {writer_failure_line(report, failure)}" for failure in report.writer_failures[:FINDINGS_SHOWN]]]
    if report.findings:
        lines += ["", f"**Findings** ({len(report.findings)}, for the reviewer to judge)",
                  *[f"- {finding_line(finding)}" for finding in report.ranked_findings()[:FINDINGS_SHOWN]]]
    return lines


class BuildResult(GenerationReport):
    """What the build uploads: the report and the test files holding the kept tests."""

    files: dict[str, str] = Field(default_factory=dict, max_length=200)


@dataclass
class WritingProgress:
    """Where the execute stage's build stands; once it has ended, what to commit."""

    run: Run
    poll_after_s: int = 0
    finished: bool = False
    test_run: TestRun | None = None
    files: dict[str, str] | None = None  # the kept tests' files
    report: GenerationReport | None = None
    artifacts: list[ArtifactRef] | None = None
    failure: Exception | None = None


def targets_of(plan: Plan) -> list[dict[str, Any]]:
    """The plan's items, a target per module, as the build's request names them."""
    by_module: dict[str, list[PlanItem]] = defaultdict(list)
    for item in plan.items:
        by_module[item.module_path].append(item)
    return [{"module": importable_name(path), "path": path, "test_path": items[0].test_path,
             "names": [item.qualname for item in items if item.qualname]}
            for path, items in sorted(by_module.items())]


def language_of(plan: Plan) -> str:
    """What the build's filters run: pytest, or Maven for a plan of JUnit classes."""
    return "java" if any(java.is_test_source(item.test_path) for item in plan.items) else "python"


def settings_of(plan: Plan, run: Run, config: TestRunConfig, limits: GenerationLimits) -> GenerationSettings:
    """The plan's generation settings; a plan recorded before it had them gets the deployment's."""
    if plan.generation is not None:
        return plan.generation
    return GenerationSettings(seed=run_seed(run.run_id), module_seconds=limits.module_seconds,
                              run_seconds=limits.run_seconds, iterations=limits.iterations,
                              random_order=config.random_order, runs=limits.runs)


def generation_input(plan: Plan, settings: GenerationSettings, config: TestRunConfig, root: Path,
                     source_files: dict[str, str], written: dict[str, str]) -> dict[str, bytes]:
    """The generation build's input: the repository with the writer's candidates, agentledger's
    driver and configuration, and the request its filters read."""
    request = {**settings.model_dump(mode="json"), "writer": plan.writer, "targets": targets_of(plan),
               "candidate_files": sorted(written), "language": language_of(plan)}
    return {**repository_files(root, source_files, written), **control_files(config),
            layout.GENERATION_REQUEST_FILE: json.dumps(request, indent=1).encode()}


class TestWriting:
    __test__ = False

    def __init__(self, ledger: LedgerPort, artifacts: ArtifactPort, builds: BuildPort | None,
                 metrics: MetricSink, limits: GenerationLimits) -> None:
        self.artifacts = artifacts
        self.builds = Builds(ledger, artifacts, builds)
        self.metrics = metrics
        self.limits = limits

    def advance(self, run: Run, execution: str, plan: Plan, config: TestRunConfig, root: Path,
                source_files: dict[str, str], candidates: Any, test_runs: dict[str, TestRun],
                rerun_reported: bool) -> WritingProgress:
        """One step of the build that writes and filters `candidates()` (path -> text, called only
        when the build starts)."""
        settings = settings_of(plan, run, config, self.limits)
        planned = sorted({item.test_path for item in plan.items})

        def files() -> dict[str, bytes]:
            return generation_input(plan, settings, config, root, source_files, candidates())

        inputs = BuildInputs(
            stage=Stage.EXECUTE, label="generation", input_name="generation-input.tar.gz",
            digest=digest({"source": source_files, "plan": plan.digest(), "settings": settings.model_dump(mode="json"),
                           "config": config.model_dump(mode="json"), "driver": kit_digest()}),
            config=config, files=files,
            # The writers' budget and mutation analysis's, which counts its own sessions' time.
            timeout_minutes=build_timeout_minutes(
                config.timeout_s, settings.run_seconds + settings.mutation_run_seconds, settings.runs),
            cache_key=cache_key(run, config, source_files))
        progress = self.builds.advance(run, execution, inputs, test_runs, rerun_reported)
        if not progress.finished:
            return WritingProgress(progress.run, poll_after_s=progress.poll_after_s, test_run=progress.test_run)
        return self._read(progress.run, progress.test_run, progress.archive, planned)

    def _read(self, run: Run, test_run: TestRun, archive: bytes | None, planned: list[str]) -> WritingProgress:
        run_id = run.run_id
        contents = read_output_archive(archive) if archive is not None else None
        output = contents.output if contents else missing_output(test_run)
        refs = [test_run.input,
                self.artifacts.put_text(run_id, Stage.EXECUTE, "generation-output.txt", output)]
        try:
            result = without_hidden_text(believed_result(test_run, archive, contents, planned))
        except GenerationFailedError as failure:
            test_run = test_run.model_copy(update={"report": {"outcome": "failed", "reason": str(failure)}})
            return WritingProgress(run, finished=True, test_run=test_run, artifacts=refs, failure=failure)
        report = GenerationReport.model_validate(result.model_dump(exclude={"files"}))
        kept = sorted({candidate.test_path for candidate in report.kept})
        files = {path: result.files[path] for path in kept}
        refs.append(self.artifacts.put_json(run_id, Stage.EXECUTE, "generation.json", report.model_dump(mode="json")))
        test_run = test_run.model_copy(update={"report": {"outcome": "passed", "funnel": report.funnel,
                                                          "kept": len(report.kept)}})
        self._count(report)
        return WritingProgress(run, finished=True, test_run=test_run, files=files, report=report, artifacts=refs)

    def _count(self, report: GenerationReport) -> None:
        self.metrics.count(metric_names.CANDIDATES_GENERATED, report.funnel.get("generated", 0))
        for name, metric in metric_names.CANDIDATES_PAST_FILTER.items():
            self.metrics.count(metric, report.funnel.get(name, 0))
        self.metrics.count(metric_names.CANDIDATES_KEPT, len(report.kept))
        self.metrics.count(metric_names.COVERAGE_GAINED, report.coverage_gained())
        self.metrics.count(metric_names.MUTANTS_KILLED, report.mutants_killed())
        self.metrics.count(metric_names.MUTATION_SCORE_GAINED, report.mutation_score_gained())
        self.metrics.count(metric_names.WRITER_FAILURES, len(report.writer_failures))


def believed_result(test_run: TestRun, archive: bytes | None, contents: Any, planned: list[str]) -> BuildResult:
    """What the generation build uploaded, if it is to be believed; GenerationFailedError says why not."""
    if test_run.status != BuildStatus.SUCCEEDED:
        kit_failure = contents.failure if contents is not None else None
        raise GenerationFailedError(f"{failed_build('the generation build', test_run, kit_failure)}; "
                                    "see generation-output.txt")
    if contents is None or contents.result is None:
        why = "uploaded no results" if contents is None else contents.problem or "its results could not be read"
        raise GenerationFailedError(f"the generation build {why}; see generation-output.txt")
    install = contents.result.install
    if install.timed_out or install.exit_code != 0:
        raise GenerationFailedError(f"installing the repository's dependencies exited {install.exit_code}"
                                    f"{' (timed out)' if install.timed_out else ''}; see generation-output.txt")
    raw = _member(archive or b"", layout.GENERATION_RESULT_FILE)
    if raw is None:
        raise GenerationFailedError(f"the generation build wrote no {layout.GENERATION_RESULT_FILE}; "
                                    "see generation-output.txt")
    try:
        result = BuildResult.model_validate_json(raw)
    except ValidationError as error:
        raise GenerationFailedError(f"{layout.GENERATION_RESULT_FILE} is not valid: {error.errors()[:3]}") from None
    _check_files(result, planned)
    return result


def _check_files(result: BuildResult, planned: list[str]) -> None:
    """The kept tests' files: only where the plan put tests, each Python that parses (parsed, never
    run) unless it is a JUnit class, and each kept candidate in one of them."""
    unplanned = sorted(set(result.files) - set(planned))
    if unplanned:
        raise GenerationFailedError(f"the build returned files the plan did not name: {', '.join(unplanned[:5])}")
    if sum(len(text) for text in result.files.values()) > MAX_TEST_FILES_CHARS or any(
            len(text) > MAX_TEST_FILE_CHARS for text in result.files.values()):
        raise GenerationFailedError("the kept tests' files are larger than a review can hold")
    for path, text in result.files.items():
        if java.is_test_source(path):
            continue  # a JUnit class: compiled in the build, only ever shown here
        try:
            ast.parse(text, filename=path)
        except (SyntaxError, ValueError) as error:
            raise GenerationFailedError(f"the build returned {path}, which is not Python: {error}") from None
    missing = sorted({candidate.test_path for candidate in result.kept} - set(result.files))
    if missing:
        raise GenerationFailedError(f"kept tests without their file: {', '.join(missing[:5])}")


def without_hidden_text(result: BuildResult) -> BuildResult:
    """The build's result without the kept tests that carry a character a reader does not see (a
    bidi override makes code read other than it runs: Trojan Source), each dropped with why and
    shown to the reviewer as a finding, ahead of the build's own."""
    files = dict(result.files)
    why: dict[tuple[str, str], str] = {}  # (test file, test name) -> what it carries, where
    for path, text in result.files.items():
        if not hidden_characters(text):
            continue
        names = {candidate.name for candidate in result.kept if candidate.test_path == path}
        rest, dropped = _without_hidden_tests(path, text, names)
        why.update({(path, name): reason for name, reason in dropped.items()})
        if rest is None:
            del files[path]
        else:
            files[path] = rest
    candidates, findings = [], []
    for candidate in result.candidates:
        reason = why.get((candidate.test_path, candidate.name)) if candidate.kept else None
        if reason is None:
            candidates.append(candidate)
            continue
        candidates.append(candidate.model_copy(update={"dropped_by": "no_hidden_text", "detail": reason}))
        findings.append(Finding(kind="hidden_text", module=candidate.test_path, test=candidate.name,
                                source=printable(candidate.source)[:MAX_FINDING_SOURCE], message=reason))
    funnel = {name: count for name, count in result.funnel.items() if name == "generated" or name in FILTERS}
    funnel["no_hidden_text"] = sum(1 for candidate in candidates if candidate.kept)
    return result.model_copy(update={"files": files, "candidates": candidates, "funnel": funnel,
                                     "findings": [*findings, *result.findings][:MAX_FINDINGS]})


def refuse_hidden_text(files: dict[str, str]) -> None:
    """Test files kept as they were written (another ecosystem's, which no filter runs on) are not
    kept at all if one carries a hidden character: no filter here can drop one test of such a file,
    and a reviewer would read other than what runs."""
    for path, text in sorted(files.items()):
        if found := hidden_characters(text):
            raise HiddenTextError(f"{path} {_carries(found, 'of the file')}")


def _without_hidden_tests(path: str, text: str, names: set[str]) -> tuple[str | None, dict[str, str]]:
    """The test file without its tests that carry a hidden character (None if none of `names`, its
    kept tests, is left), and why each dropped test went. A JUnit class is one test, its whole
    file; in a pytest module, a hidden character anywhere but in a test (an import, a helper, a
    comment between tests) takes the whole file."""
    found = hidden_characters(text)
    if java.is_test_source(path):
        return None, dict.fromkeys(names, _carries(found, "of the test"))
    test_file = split_test_file(path, text)
    carrying = {name: in_test for name, source in test_file.tests if (in_test := hidden_characters(source))}
    every_one_in_a_test = sum(len(in_test) for in_test in carrying.values()) == len(found)
    if every_one_in_a_test and set(carrying) <= names:
        left = [source for name, source in test_file.tests if name not in carrying]
        rest = join_test_file(test_file.header, left)
        if _parses(rest, path):
            reasons = {name: _carries(in_test, "of the test") for name, in_test in carrying.items()}
            return (rest if names - set(carrying) else None), reasons
    return None, dict.fromkeys(names, _carries(found, "of its file, not within one test alone"))


def _parses(text: str, path: str) -> bool:
    """The tests of a file are split by str.splitlines, which breaks lines Python does not (at a line
    separator in a string, say): what is left of such a file may not be Python."""
    try:
        ast.parse(text, filename=path)
    except (SyntaxError, ValueError):
        return False
    return True


def _carries(found: list[tuple[int, str]], where: str) -> str:
    line, first = found[0]
    others = len({character for _, character in found} - {first})
    more = f", and {others} other hidden character(s)" if others else ""
    return f"carries {described(first)} at line {line} {where}{more}"


def _member(archive: bytes, name: str) -> bytes | None:
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            for member in tar:
                if member.isfile() and member.name.removeprefix("./") == name:
                    if member.size > GENERATION_RESULT_LIMIT_BYTES:
                        return None
                    extracted = tar.extractfile(member)
                    return extracted.read() if extracted else None
    except (tarfile.TarError, EOFError, OSError):
        return None
    return None
