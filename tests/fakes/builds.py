"""A test-build service for unit tests: it reads nothing and runs nothing, and answers each build
with the results archive a real build would upload (result.json, output, JUnit XML), written
straight into the in-memory artifact store under the build's output key."""
from __future__ import annotations

import io
import json
import tarfile
from dataclasses import dataclass, field
from typing import Literal

from agentledger.models import BuildRequest
from agentledger.states import BuildStatus
from agentledger.testrun import layout
from tests.fakes.adapters import InMemoryArtifacts

Outcome = Literal["pass", "fail", "no_tests", "nothing_collected", "timeout", "install_timeout", "no_upload"]


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
    started: list[BuildRequest] = field(default_factory=list)
    searches: int = 0  # find() calls
    _polls_left: dict[str, int] = field(default_factory=dict)
    _test_runs: dict[str, str] = field(default_factory=dict)

    def start(self, request: BuildRequest) -> str:
        self.started.append(request)
        build_id = f"memory-build:{len(self.started)}"
        self._polls_left[build_id] = self.polls_before_done
        self._test_runs[request.test_run] = build_id
        if self.uploads is not None or self.outcome != "no_upload":
            uploaded = self.uploads if self.uploads is not None else results_archive(self.outcome)
            self.artifacts.objects[request.output_grant["fields"]["key"]] = uploaded
        return build_id

    def status(self, build_id: str) -> BuildStatus | None:
        if build_id not in self._polls_left:
            return None
        if self._polls_left[build_id] > 0:
            self._polls_left[build_id] -= 1
            return BuildStatus.IN_PROGRESS
        if self.ends is not None:
            return self.ends
        return BuildStatus.FAILED if self.outcome == "no_upload" else BuildStatus.SUCCEEDED

    def find(self, test_run: str) -> str | None:
        self.searches += 1  # on CodeBuild, a listing of the project's whole build history
        return self._test_runs.get(test_run)
