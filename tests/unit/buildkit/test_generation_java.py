"""The Java filters' own logic, with Maven's runs scripted: which classes each run asks for, how a
class the compiler names is set aside, how Surefire's names find a candidate, and how JaCoCo's
XML becomes the lines and branches the coverage filter compares."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentledger.buildkit import generation
from agentledger.buildkit.generation_java import JavaGeneration, MavenRuns
from agentledger.buildkit.layout import GENERATION_REQUEST_FILE
from agentledger.buildkit.processes import CodeUser
from agentledger.buildkit.workspace import Config, Workspace

if TYPE_CHECKING:
    from pathlib import Path

JACOCO_XML = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd">
<report name="shapes"><package name="demo"><sourcefile name="Shapes.java">
<line nr="5" mi="0" ci="3" mb="1" cb="1"/><line nr="6" mi="2" ci="0" mb="0" cb="0"/>
<line nr="8" mi="0" ci="2" mb="0" cb="2"/>
</sourcefile></package><package name="other"><sourcefile name="Gone.java"><line nr="1" mi="0" ci="1" mb="0" cb="0"/>
</sourcefile></package></report>"""


def _workspace(root: Path, candidates: dict[str, str]) -> Workspace:
    repository = root / "repository"
    (repository / "src/main/java/demo").mkdir(parents=True)
    (repository / "src/main/java/demo/Shapes.java").write_text("package demo;\n")
    for path, text in candidates.items():
        (repository / path).parent.mkdir(parents=True, exist_ok=True)
        (repository / path).write_text(text)
    (root / "agentledger").mkdir()
    (root / GENERATION_REQUEST_FILE).write_text(json.dumps({
        "writer": "bedrock", "seed": 1, "module_seconds": 1, "run_seconds": 1, "iterations": 1, "random_order": True,
        "language": "java", "candidate_files": sorted(candidates),
        "targets": [{"module": "demo.Shapes", "path": "src/main/java/demo/Shapes.java",
                     "test_path": sorted(candidates)[0], "names": []}]}))
    config = Config(install=[], test="mvn -B test", timeout_s=60, junit=["target/surefire-reports/*.xml"],
                    jacoco=["target/site/jacoco/jacoco.xml"], env={}, virtualenv=False, install_project=False)
    return Workspace(root=root, config=config, environment={"MAVEN_OPTS": "-Dmaven.repo.local=/cache/m2"},
                     user=CodeUser(None, None))


class ScriptedMaven:
    """Answers each run as Maven would have: a compilation error naming a file, or Surefire's
    outcomes for the classes present and asked for."""

    def __init__(self, generation_: JavaGeneration, broken: set[str], failing: set[str]) -> None:
        self.generation = generation_
        self.broken, self.failing = broken, failing
        self.asked: list[list[str] | None] = []

    def run(self, label: str, classes: list[str] | None = None, random_order: bool = False
            ) -> tuple[str, generation.Outcomes, dict[str, Any]]:
        self.asked.append(classes)
        repository = self.generation.repository
        present = {path.stem for path in repository.glob("src/test/java/demo/*.java")}
        if present & self.broken:
            return "".join(f"[ERROR] {repository}/src/test/java/demo/{name}.java:[9,15] cannot find symbol\n"
                           for name in sorted(present & self.broken)), {}, {"files": {}}
        ran = [name for name in sorted(present) if classes is None or f"demo.{name}" in classes]
        return "", {(f"demo.{name}", "check"): ["failed" if name in self.failing else "passed"] for name in ran}, \
            {"files": {}}


def test_a_class_the_compiler_names_is_set_aside_and_the_others_still_build_and_run(tmp_path: Path) -> None:
    candidates = {f"src/test/java/demo/{name}.java": f"package demo;\nclass {name} {{}}\n"
                  for name in ("GoodTest", "BrokenTest", "WrongTest")}
    workspace = _workspace(tmp_path, candidates)
    java = JavaGeneration(workspace, None, generation.Tools(tmp_path / "tools"),
                          generation.load_request(tmp_path / generation.GENERATION_REQUEST_FILE))
    java.write_candidates()
    maven = ScriptedMaven(java, broken={"BrokenTest"}, failing={"WrongTest"})
    java.maven = maven

    java.filter_build()
    java.filter_alone()

    outcome = {c.name: (c.dropped_by, c.detail) for c in java.candidates}
    dropped_by, detail = outcome["BrokenTest"]
    assert dropped_by == "build" and "BrokenTest.java:[9,15] cannot find symbol" in detail
    assert outcome["WrongTest"] == ("pass_alone", "failed in run 1 of 5")
    assert outcome["GoodTest"] == (None, "")
    assert maven.asked[:2] == [["demo.BrokenTest", "demo.GoodTest", "demo.WrongTest"],
                               ["demo.GoodTest", "demo.WrongTest"]]  # compiled again without the broken class
    assert maven.asked[2:] == [["demo.GoodTest", "demo.WrongTest"]] + [["demo.GoodTest"]] * 4
    # A dropped class leaves the tree, so the runs with the suite never see it.
    assert sorted(p.name for p in (tmp_path / "repository/src/test/java/demo").iterdir()) == ["GoodTest.java"]


def test_jacoco_lines_become_statements_and_branches_of_the_projects_own_files(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, {"src/test/java/demo/GoodTest.java": "package demo;\n"})
    report = workspace.repository / "target/site/jacoco/jacoco.xml"
    report.parent.mkdir(parents=True)
    report.write_text(JACOCO_XML)
    coverage = MavenRuns(workspace).coverage()
    shapes = str((workspace.repository / "src/main/java/demo/Shapes.java").resolve())
    assert coverage == {"files": {shapes: {  # Gone.java is not among the project's sources: not counted
        "statements": [5, 6, 8], "executed": [5, 8],
        "branches": [[5, 0], [5, 1], [8, 0], [8, 1]], "executed_branches": [[5, 0], [8, 0], [8, 1]]}}}
