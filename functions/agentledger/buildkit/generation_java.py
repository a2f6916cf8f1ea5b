"""Candidate JUnit test classes for a Maven project, through TestGen-LLM's filters, inside the build.

The writer (the model) put the candidates into the repository; one candidate is one test class,
kept or dropped whole. Every run is the repository's own test command (its settings, its offline
mirror, its JaCoCo report step), told which classes to run the way Maven is told anything from
outside: Surefire's `test` property, here in MAVEN_OPTS. Between runs the reports and JaCoCo's
data file (which its agent appends to) are removed, so each run's reports are that run's alone.

- build: the candidates compile and Surefire runs a test of each (a class that does not compile
  fails the whole compilation: the classes the compiler's errors name are set aside and the rest
  compiled again; if its errors name none, each is tried alone);
- pass_alone: five runs of the candidate classes;
- pass_with_suite: five runs of the whole suite with them, in random order unless the project
  says its order matters;
- coverage: each run alone under JaCoCo covers a line, or more branches of a line, than the suite
  without the candidates (nor a candidate kept before it).

JaCoCo's XML counts a line's covered branches but does not say which: a branch here is (line,
its n-th covered branch), so a candidate gains a branch where it covers more of a line's branches
than were covered before."""
from __future__ import annotations

import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import generation
from .processes import say

if TYPE_CHECKING:
    from collections.abc import Callable

    from .workspace import Workspace

# Where JaCoCo's agent writes by default (the jacoco-maven-plugin's destFile), appending.
JACOCO_DATA = ("target/jacoco.exec", "*/target/jacoco.exec")
MAIN_SOURCES = "src/main/java"
PACKAGE = re.compile(r"^\s*package\s+([A-Za-z_][\w.]*)\s*;", re.MULTILINE)
SURVIVOR_CONTEXT = "run"
OUTPUT_READ_BYTES = 1 << 20  # of one run's output, searched for the compiler's errors
BUILD_ATTEMPTS = 3  # joint compilations, each without the classes the one before named in its errors

Coverage = dict[str, Any]  # coverage.py's JSON shape, which generation.py's filters read


class MavenRuns:
    """The repository's test command, selecting test classes through Surefire's `test` property."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.sources = main_sources(workspace.repository)

    def run(self, label: str, classes: list[str] | None = None, random_order: bool = False
            ) -> tuple[str, generation.Outcomes, Coverage]:
        """One run: of `classes` (fully qualified), or of the whole suite when None. What it
        printed (its tail), the outcomes Surefire reported and the coverage JaCoCo did."""
        self.clear()
        start = self.workspace.log_size()
        options = [self.workspace.environment.get("MAVEN_OPTS", "")]
        if classes is not None:
            options += [f"-Dtest={','.join(classes)}", "-Dsurefire.failIfNoSpecifiedTests=false",
                        "-DfailIfNoTests=false"]
        if random_order:
            options.append("-Dsurefire.runOrder=random")
        environment = {**self.workspace.environment, "MAVEN_OPTS": " ".join(filter(None, options))}
        say(f"{label}: {'the whole suite' if classes is None else ', '.join(classes)}")
        self.workspace.run(self.workspace.config.test, environment)
        return self.workspace.output_since(start, OUTPUT_READ_BYTES), self.outcomes(), self.coverage()

    def reports(self, patterns: list[str] | tuple[str, ...]) -> list[Path]:
        return [path for pattern in patterns for path in self.workspace.repository.glob(pattern)
                if path.is_file() and not path.is_symlink()]

    def clear(self) -> None:
        for path in self.reports([*self.workspace.config.junit, *self.workspace.config.jacoco, *JACOCO_DATA]):
            path.unlink()

    def outcomes(self) -> generation.Outcomes:
        merged: generation.Outcomes = {}
        for report in self.reports(self.workspace.config.junit):
            for key, found in generation.junit_outcomes(report).items():
                merged.setdefault(key, []).extend(found)
        return merged

    def coverage(self) -> Coverage:
        files: dict[str, dict[str, list[Any]]] = {}
        for report in self.reports(self.workspace.config.jacoco):
            if report.stat().st_size > generation.MAX_REPORT_BYTES:
                continue
            try:
                root = ET.parse(report).getroot()
            except ET.ParseError:
                continue
            for package in root.iter("package"):
                for sourcefile in package.iter("sourcefile"):
                    path = self.sources.get(f"{package.get('name', '')}/{sourcefile.get('name', '')}".lstrip("/"))
                    if path is not None:
                        merge_lines(files.setdefault(path, {"statements": [], "executed": [], "branches": [],
                                                            "executed_branches": []}), sourcefile)
        return {"files": files}


def main_sources(repository: Path) -> dict[str, str]:
    """'pkg/Name.java' -> the absolute path of the project's source file (of any module)."""
    found: dict[str, str] = {}
    for path in sorted(repository.rglob("*.java")):
        relative = path.relative_to(repository).as_posix()
        before, marker, after = relative.partition(f"{MAIN_SOURCES}/")
        if marker and (not before or before.endswith("/")) and "/target/" not in f"/{before}":
            found.setdefault(after, str(path.resolve()))
    return found


def merge_lines(entry: dict[str, list[Any]], sourcefile: ET.Element) -> None:
    for line in sourcefile.iter("line"):
        number = count(line.get("nr"))
        entry["statements"].append(number)
        if count(line.get("ci")):
            entry["executed"].append(number)
        branches, covered = count(line.get("mb")) + count(line.get("cb")), count(line.get("cb"))
        entry["branches"] += [[number, index] for index in range(branches)]
        entry["executed_branches"] += [[number, index] for index in range(covered)]


def count(value: str | None) -> int:
    return int(value) if value is not None and value.isascii() and value.isdigit() and len(value) < 9 else 0


class JavaGeneration(generation.Generation):
    """generation.Generation's run and result, with Maven's runs for pytest's, and no mutation
    analysis yet (PIT would make Java's mutants): coverage is the last filter."""

    filters = generation.FILTERS[:-1]

    def __init__(self, workspace: Workspace, venv: Path | None, tools: generation.Tools,
                 request: generation.Request, progress: Callable[[dict[str, Any]], None] | None = None) -> None:
        super().__init__(workspace, venv, tools, request, progress)
        self.maven = MavenRuns(workspace)
        self.aside = self.runner.work / "aside"  # candidate files out of the tree, for a run without them
        self.qualified: dict[str, str] = {}  # candidate key -> its class's fully qualified name

    def write_candidates(self) -> None:
        for path in self.request.candidate_files:
            file = self.repository / path
            try:
                source = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                self.notes.append(f"{path}: not readable ({error})"[:generation.MAX_MESSAGE])
                continue
            name = Path(path).stem
            package = PACKAGE.search(source)
            candidate = generation.Candidate(path, name, source[:generation.MAX_CANDIDATE_SOURCE], self.module_of(path))
            self.qualified[candidate.key] = f"{package.group(1)}.{name}" if package else name
            self.files[path] = generation.TestFile(path, "", [(name, source)])
            self.candidates.append(candidate)

    def mutation_before(self) -> None:
        return None

    def filter_mutation(self) -> None:
        return None

    def module_of(self, test_path: str) -> str | None:
        return next((target.module for target in self.request.targets if target.test_path == test_path), None)

    def classes(self, candidates: list[generation.Candidate]) -> list[str]:
        return [self.qualified[candidate.key] for candidate in candidates]

    def alive(self) -> list[generation.Candidate]:
        return [c for c in self.candidates if c.dropped_by is None]

    def as_pytest_names(self, outcomes: generation.Outcomes) -> generation.Outcomes:
        """Surefire names a case by its class's qualified name; generation.py's filters find a
        class candidate's cases under `<test path, dotted>.<class>`."""
        by_class = {self.qualified[c.key]: f"{generation.classname_of(c.test_path)}.{c.name}" for c in self.candidates}
        return {(by_class.get(classname, classname), name): found for (classname, name), found in outcomes.items()}

    def set_aside(self, candidates: list[generation.Candidate]) -> None:
        for candidate in candidates:
            source = self.repository / candidate.test_path
            if source.is_file():
                target = self.aside / candidate.test_path
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(source), str(target))

    def bring_back(self, candidates: list[generation.Candidate]) -> None:
        for candidate in candidates:
            kept = self.aside / candidate.test_path
            if kept.is_file():
                shutil.move(str(kept), str(self.repository / candidate.test_path))

    # -- the filters ----------------------------------------------------------------------------
    def filter_build(self) -> None:
        """One class that does not compile fails the compilation of all: the classes the
        compiler's errors name are set aside and the rest compiled again; if its errors name none
        of them, each is tried alone."""
        ran: generation.Outcomes = {}
        pending = list(self.candidates)
        for _ in range(BUILD_ATTEMPTS):
            printed, outcomes, _ = self.maven.run("build", self.classes(pending))
            ran.update(self.as_pytest_names(outcomes))
            missing = [c for c in pending if generation.outcome_of(c, ran) is None]
            named = [c for c in missing if c.test_path in printed]
            for candidate in named:
                errors = [line.strip() for line in printed.splitlines() if candidate.test_path in line]
                candidate.drop("build", "it does not compile: " + " | ".join(errors[:3]))
            self.set_aside(named)
            pending = [c for c in pending if c not in named]
            if not missing or not named:
                break
        for candidate in (c for c in pending if c.dropped_by is None and generation.outcome_of(c, ran) is None):
            others = [c for c in pending if c is not candidate]
            self.set_aside(others)
            _, alone, _ = self.maven.run(f"build {candidate.name} alone", self.classes([candidate]))
            self.bring_back(others)
            ran.update(self.as_pytest_names(alone))
        for candidate in (c for c in self.candidates if c.dropped_by is None):
            if generation.outcome_of(candidate, ran) is None:
                candidate.drop("build", "it did not compile, or Surefire ran no test of it; see the output")
            else:
                candidate.runs["build"] = 1
        self.set_aside([c for c in self.candidates if c.dropped_by is not None])

    def filter_alone(self) -> None:
        def run(number: int) -> generation.Outcomes:
            _, outcomes, _ = self.maven.run(f"pass alone {number}/{self.request.runs}", self.classes(self.alive()))
            return self.as_pytest_names(outcomes)

        generation.repeated_runs(self.candidates, "pass_alone", run, self.request.runs)
        self.set_aside([c for c in self.candidates if c.dropped_by is not None])

    def filter_with_suite(self) -> None:
        def run(number: int) -> generation.Outcomes:
            _, outcomes, _ = self.maven.run(f"pass with the suite {number}/{self.request.runs}",
                                            random_order=self.request.random_order)
            return self.as_pytest_names(outcomes)

        generation.repeated_runs(self.candidates, "pass_with_suite", run, self.request.runs)
        self.set_aside([c for c in self.candidates if c.dropped_by is not None])

    def filter_coverage(self) -> dict[str, Any] | None:
        survivors = self.alive()
        self.set_aside(survivors)
        _, _, baseline = self.maven.run("coverage without the candidates")
        self.bring_back(survivors)
        contexts = {}
        for candidate in survivors:
            _, _, alone = self.maven.run(f"coverage of {candidate.name}", self.classes([candidate]))
            contexts[f"{Path(candidate.test_path).stem}.{candidate.name}.{SURVIVOR_CONTEXT}"] = {
                path: {"lines": entry["executed"], "branches": entry["executed_branches"]}
                for path, entry in alone["files"].items()}
        root = str(self.repository.resolve())

        def measured(path: str) -> bool:
            return not os.path.relpath(path, root).startswith("..")

        ran = generation.lines_by_candidate(self.candidates, {"contexts": contexts}, measured)
        generation.keep_coverage_gains(self.candidates, baseline, ran, measured)
        self.set_aside([c for c in self.candidates if c.dropped_by is not None])
        return baseline

    def write_kept(self, kept: list[generation.Candidate]) -> dict[str, Any] | None:
        _, _, after = self.maven.run("coverage with the kept tests")
        return after

    def record_findings(self) -> None:
        """The model writes no exception-revealing tests to report: a failing one is dropped."""
