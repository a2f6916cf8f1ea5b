"""A build service for unit tests: it runs nothing, and answers each build with the results archive
a real build would upload, written straight into the in-memory artifact store under the build's
output key: for the suite (verify), result.json, output and JUnit XML; for a build that writes
tests (execute), also generation.json, which keeps every candidate (or none) as the filters would."""
from __future__ import annotations

import ast
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentledger.buildkit import layout
from agentledger.ports import BuildLook
from agentledger.states import BuildStatus

if TYPE_CHECKING:
    from agentledger.models import BuildRequest
    from agentledger.testing.adapters import InMemoryArtifacts

Outcome = Literal["pass", "fail", "no_tests", "nothing_collected", "timeout", "install_timeout", "no_upload"]
Generation = Literal["keep_all", "keep_none", "writer_crashed"]


def results_archive(outcome: Outcome, tests: int = 2) -> bytes:
    executed = 0 if outcome in ("no_tests", "nothing_collected") else tests
    failed = 1 if outcome == "fail" else 0
    cases = "".join(
        f'<testcase classname="tests_generated.test_sample" name="test_{i}">'
        + ("<failure message='boom'/>" if i < failed else "") + "</testcase>"
        for i in range(executed))
    junit = f'<testsuites><testsuite name="pytest" tests="{executed}">{cases}</testsuite></testsuites>'
    exit_code = {"fail": 1, "nothing_collected": 5, "timeout": None}.get(outcome, 0)
    suite = {"command": "python -m pytest", "exit_code": exit_code, "duration_s": 0.5,
             "timed_out": outcome == "timeout"}
    install_timed_out = outcome == "install_timeout"
    result = {"install": {"commands": 1, "exit_code": None if install_timed_out else 0, "duration_s": 0.1,
                          "timed_out": install_timed_out, "cache_hit": not install_timed_out},
              "test": None if install_timed_out else suite, "junit_files": ["pytest.xml"]}
    return archive_of({layout.RESULT_FILE: json.dumps(result).encode(), layout.OUTPUT_FILE: f"{outcome}\n".encode(),
                       f"{layout.JUNIT_DIR}/pytest.xml": junit.encode()})


def generation_archive(request: dict[str, Any], written: dict[str, str], generation: Generation) -> bytes:
    """What a generation build uploads: the request's candidates (or, for Pynguin, one test per
    target) all kept, or all dropped by the coverage filter, with the coverage that shows it; or,
    `writer_crashed`, none, the writer having crashed twice on every target."""
    crashed = generation == "writer_crashed"
    files = {} if crashed else dict(written)
    for target in [] if crashed else request["targets"]:
        if request["writer"] == "pynguin" and target["test_path"] not in files:
            module = target["module"]
            test = f"def test_{module.replace('.', '_')}():\n    assert {module}\n"
            files[target["test_path"]] = f"import {module}\n\n\n{test}"
    kept = generation == "keep_all"
    candidates = []
    for path, text in sorted(files.items()):
        # A JUnit class is one candidate; a pytest module has one per test function.
        tests = [(Path(path).stem, text)] if path.endswith(".java") else [
            (node.name, ast.unparse(node)) for node in ast.parse(text).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test")]
        candidates += [{"test_path": path, "name": name, "source": source, "dropped_by": None if kept else "coverage",
                        "runs": {"build": 1, "pass_alone": 5, "pass_with_suite": 5},
                        "gain": {"lines": 2, "branches": 1} if kept else {},
                        "kills": ["x_area__mutmut_1"] if kept else []} for name, source in tests]
    count = len(candidates)
    kept_count = count if generation == "keep_all" else 0
    coverage = {target["path"]: {"before": {"lines": 10, "lines_covered": 4, "branches": 4, "branches_covered": 1},
                                 "after": {"lines": 10, "lines_covered": 4 + (2 if kept_count else 0), "branches": 4,
                                           "branches_covered": 1 + (1 if kept_count else 0)}}
                for target in request["targets"]}
    # Four mutants a module: the suite kills one, the kept tests one more (line 3), two survive.
    killed_by_kept = [{"name": "x_area__mutmut_1", "line": 3, "source": "return w * h", "original": "w * h",
                       "mutated": "w / h", "killed_by": f"{path}::test_area"}
                      for path in sorted(files)[:1]] if kept_count else []
    mutation = {target["path"]: {
        "module": target["module"], "mutants": 4, "checked": 4, "killed_before": 1,
        "killed_after": 1 + len(killed_by_kept), "killed_by_kept": killed_by_kept,
        "survivors": [{"name": "x_area__mutmut_2", "line": 2, "source": "if w < 0:", "original": "< 0",
                       "mutated": "<= 0"}], "survivors_total": 3 - len(killed_by_kept)}
        for target in request["targets"] if request.get("language", "python") == "python"}
    report = {"writer": request["writer"], "candidates": candidates, "coverage": coverage, "mutation": mutation,
              "funnel": {"generated": count, "build": count, "pass_alone": count, "pass_with_suite": count,
                         "coverage": kept_count, **({"mutation": kept_count} if mutation else {})},
              "findings": [{"module": request["targets"][0]["module"], "test": "test_raises", "source": "f(None)",
                            "exception": "TypeError", "message": "bad operand"}] if request["targets"] else [],
              "files": {path: text for path, text in files.items() if generation == "keep_all"},
              "writer_failures": [{"module": target["module"], "what": "crashed", "tries": 2,
                                   "message": "RuntimeError: Failed to compute stacksize (exited 1 in 3.09 s)"}
                                  for target in request["targets"]] if crashed else []}
    result = {"install": {"commands": 1, "exit_code": 0, "duration_s": 0.1, "timed_out": False, "cache_hit": True},
              "test": {"command": "generate", "exit_code": 0, "duration_s": 0.5, "timed_out": False},
              "junit_files": []}
    return archive_of({layout.RESULT_FILE: json.dumps(result).encode(), layout.OUTPUT_FILE: b"generated\n",
                       layout.GENERATION_RESULT_FILE: json.dumps(report).encode()})


def input_of(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return {member.name: tar.extractfile(member).read() for member in tar if member.isfile()}  # type: ignore[union-attr]


def archive_of(files: dict[str, bytes]) -> bytes:
    """A results archive holding these files, as the driver's upload packs them."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass
class InstantBuilds:
    artifacts: InMemoryArtifacts
    outcome: Outcome = "pass"
    polls_before_done: int = 0  # how often status() says IN_PROGRESS before the build has ended
    # A hostile build: what it uploads instead of the outcome's results, and how it ends instead.
    uploads: bytes | None = None
    ends: BuildStatus | None = None
    says: str | None = None  # why a build that failed did, as the build service says it
    generation: Generation = "keep_all"  # what a build that writes tests keeps
    refusals: int = 0  # starts refused first, as CodeBuild refuses them at its concurrent-build limit
    generations: list[BuildRequest] = field(default_factory=list)  # those builds (also in `started`)
    started: list[BuildRequest] = field(default_factory=list)
    searches: int = 0  # find() calls
    looks: int = 0  # looks at a build: status() calls, look() among them
    _polls_left: dict[str, int] = field(default_factory=dict)
    _test_runs: dict[str, str] = field(default_factory=dict)

    @property
    def verifies(self) -> list[BuildRequest]:
        """The builds that ran the suite (verify's), not those that wrote tests."""
        return [request for request in self.started if request not in self.generations]

    def start(self, request: BuildRequest) -> str | None:
        if self.refusals:
            self.refusals -= 1
            return None
        self.started.append(request)
        build_id = f"memory-build:{len(self.started)}"
        self._polls_left[build_id] = self.polls_before_done
        self._test_runs[request.test_run] = build_id
        inputs = input_of(self.artifacts.objects[request.input_url.split("/", 3)[3]])
        if layout.GENERATION_REQUEST_FILE in inputs:
            request_document = json.loads(inputs[layout.GENERATION_REQUEST_FILE])
            written = {path: inputs[f"{layout.REPOSITORY_DIR}/{path}"].decode()
                       for path in request_document["candidate_files"]}
            uploaded = generation_archive(request_document, written, self.generation)
            self.artifacts.objects[request.output_grant["fields"]["key"]] = uploaded
            self.generations.append(request)
            return build_id
        if self.uploads is not None or self.outcome != "no_upload":
            uploaded = self.uploads if self.uploads is not None else results_archive(self.outcome)
            self.artifacts.objects[request.output_grant["fields"]["key"]] = uploaded
        return build_id

    def status(self, build_id: str) -> BuildStatus | None:
        self.looks += 1
        if build_id not in self._polls_left:
            return None
        if self._polls_left[build_id] > 0:
            self._polls_left[build_id] -= 1
            return BuildStatus.IN_PROGRESS
        if any(self._test_runs.get(request.test_run) == build_id for request in self.generations):
            return BuildStatus.SUCCEEDED  # the verify outcomes below are the suite's
        if self.ends is not None:
            return self.ends
        return BuildStatus.FAILED if self.outcome == "no_upload" else BuildStatus.SUCCEEDED

    def look(self, build_id: str) -> BuildLook | None:
        status = self.status(build_id)
        if status is None:
            return None
        return BuildLook(status, None if status is BuildStatus.SUCCEEDED else self.says)

    def find(self, test_run: str) -> str | None:
        self.searches += 1  # on CodeBuild, a listing of the project's whole build history
        return self._test_runs.get(test_run)
