"""The local CodeBuild on moto: the project's buildspec runs in a subprocess sandbox, fetches its
input and uploads its output through presigned links (the upload's from a SecureString parameter),
and leaves nothing behind."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.stub import Stubber
from moto import mock_aws

from agentledger.adapters.codebuild import CodeBuildBuilds, SecretParameters
from agentledger.adapters.s3_artifacts import ArtifactStore
from agentledger.agent import BedrockPlanner, BedrockSettings, PlanBrief, inspect_repository, snapshot_directory
from agentledger.agent.bedrock import PLAN_TOOL
from agentledger.agent.executor import render_test_files
from agentledger.buildkit.layout import OUTPUT_ARCHIVE_LIMIT_BYTES, OUTPUT_GRANT_VARIABLE, TEST_RUN_VARIABLE
from agentledger.generation import GenerationSettings
from agentledger.local import moto_seams
from agentledger.local.codebuild import UNSAFE_WARNING, LocalCodeBuild, SandboxLimits
from agentledger.local.s3_endpoint import LocalS3Endpoint
from agentledger.models import BuildRequest, Run, Stage, TestRun
from agentledger.states import BuildStatus
from agentledger.testrun.config import load_config
from agentledger.testrun.junit import summarize_junit
from agentledger.testrun.layout import BUILDSPEC, CACHE_PATH_ON_CODEBUILD
from agentledger.workflow.builds import cache_key, control_files, package, repository_files
from agentledger.workflow.verification import OutputContents, judge, read_output_archive
from agentledger.workflow.writing import ModuleCoverage, believed_result, generation_input
from tests.samples import MAVEN_CANDIDATES, write_maven_sample

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.integration

REGION = "us-east-1"
# moto's backends are process-wide and the local runtime shares them: names unique per test
BUCKET = f"agentledger-artifacts-sandbox-{uuid.uuid4().hex[:12]}"
# The key the links are signed with, as the functions' key locally: the only one the endpoint takes.
LINK_CREDENTIALS = Credentials("AKIASANDBOXLINKS0000", uuid.uuid4().hex)
# Ends a broken run of a test that waits for a build's suite to start: on two loaded cores a
# sandbox takes seconds to set up, not minutes.
SUITE_START_TIMEOUT_S = 180
REQUESTER_ARN = "arn:aws:iam::123456789012:user/agentledger-requester"


@dataclass
class Finished:
    status: BuildStatus
    contents: OutputContents | None
    log: str
    archive: bytes | None
    build_id: str


class Sandbox:
    def __init__(self, endpoint: LocalS3Endpoint, local: LocalCodeBuild, project: str) -> None:
        self.local = local
        self.work_root = local.work_root
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        links = boto3.client("s3", region_name=REGION, endpoint_url=endpoint.url,
                             aws_access_key_id=endpoint.credentials.access_key,
                             aws_secret_access_key=endpoint.credentials.secret_key,
                             config=Config(signature_version="s3v4"))
        self.artifacts = ArtifactStore(BUCKET, s3, links)
        codebuild = boto3.client("codebuild", region_name=REGION)
        codebuild.create_project(name=project, source={"type": "NO_SOURCE", "buildspec": json.dumps(BUILDSPEC)},
                                 artifacts={"type": "NO_ARTIFACTS"}, serviceRole="arn:aws:iam::123456789012:role/b",
                                 environment={"type": "LINUX_CONTAINER", "image": "aws/codebuild/standard:7.0",
                                              "computeType": "BUILD_GENERAL1_SMALL"})
        self.codebuild = codebuild
        self.project = project
        self.ssm = boto3.client("ssm", region_name=REGION)
        key = boto3.client("kms", region_name=REGION).create_key()["KeyMetadata"]["Arn"]
        self.builds = CodeBuildBuilds(project, codebuild, SecretParameters(self.ssm, f"/{project}/output-grants", key))
        self.count = 0
        self.grants: dict[str, dict[str, Any]] = {}  # build id -> the output grant it was started with

    def start(self, repo: Path, members: dict[str, bytes] | None = None, timeout_minutes: int = 5) -> str:
        """A build of the repository as verify sends it, or of `members` (a whole input) if given."""
        self.count += 1
        config = load_config(repo)
        files = snapshot_directory(repo).files
        archive = package(members or {**repository_files(repo, files, {}), **control_files(config)})
        # As the stages key the cache: by the repository and what its install depends on.
        run = Run(run_id=f"run-{self.count}", request="test", repository=str(repo), environment="test",
                  requested_by=REQUESTER_ARN)
        ref = self.artifacts.put(f"run-{self.count}", Stage.VERIFY, "test-input.tar.gz", archive, "application/gzip")
        output_key = f"runs/run-{self.count}/verify/builds/output.tar.gz"  # read back by run()
        grant = self.artifacts.upload_grant(output_key, OUTPUT_ARCHIVE_LIMIT_BYTES, 600)
        build_id = self.builds.start(BuildRequest(
            test_run=f"run-{self.count}/digest#1", input_url=self.artifacts.download_url(ref.key, 600),
            output_grant=grant, image=config.image, compute=config.compute, timeout_minutes=timeout_minutes,
            cache_key=cache_key(run, config, files)))
        self.grants[build_id] = grant
        return build_id

    def status(self, build_id: str) -> BuildStatus:
        look = self.builds.look(build_id)
        assert look is not None
        return look.status

    def run(self, repo: Path, timeout_s: float = 120, members: dict[str, bytes] | None = None) -> Finished:
        build_id = self.start(repo, members, timeout_minutes=max(5, int(timeout_s // 60) + 1))
        assert self.local.wait(build_id, timeout_s), "the build did not end"
        status = self.status(build_id)
        uploaded = self.artifacts.read(f"runs/run-{self.count}/verify/builds/output.tar.gz")
        [build] = self.local.builds_for(f"run-{self.count}")
        return Finished(status, read_output_archive(uploaded) if uploaded else None, build.log_tail, uploaded,
                        build_id)


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    with sandbox_on(tmp_path / "builds", tmp_path / "cache") as box:
        yield box


@contextmanager
def sandbox_on(builds: Path, cache: Path) -> Iterator[Sandbox]:
    with mock_aws():
        endpoint = LocalS3Endpoint(boto3.client("s3", region_name=REGION), LINK_CREDENTIALS, REGION).start()
        local = LocalCodeBuild(builds, cache, SandboxLimits(cpu_seconds=120))
        local.forward_port(urlsplit(endpoint.url).port or 0)
        project = f"agentledger-test-builds-{uuid.uuid4().hex[:12]}"
        undo = moto_seams.run_builds(local, lambda name: name == project)
        box = Sandbox(endpoint, local, project)
        try:
            yield box
        finally:
            undo()
            endpoint.stop()


def _repository(root: Path, test: str, *, timeout: int = 60, extra: str = "") -> Path:
    root.mkdir(parents=True)
    (root / "agentledger.toml").write_text(f"test = {json.dumps(test)}\ntimeout = {timeout}\n{extra}")
    return root


def test_the_code_under_test_sees_no_credentials_resource_names_or_grants(sandbox: Sandbox, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "host-secret-should-not-leak")
    monkeypatch.setenv("LEDGER_TABLE_NAME", "ledger-table-should-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_should_not_leak")
    repo = _repository(tmp_path / "repo", "python3 -c 'import os; print(sorted(os.environ.items()))'",
                       extra='[env]\nDECLARED = "by-the-repository"\n')
    finished = sandbox.run(repo)

    assert finished.status == BuildStatus.SUCCEEDED, finished.log
    assert finished.contents is not None and finished.contents.result is not None
    output = finished.contents.output
    assert "('DECLARED', 'by-the-repository')" in output and "('PATH'," in output
    for leak in ("AWS_", "should-not-leak", "should_not_leak", BUCKET, "AGENTLEDGER_INPUT_URL",
                 "AGENTLEDGER_OUTPUT_GRANT", "X-Amz", "Signature", "LEDGER_TABLE"):
        assert leak not in output, leak


def test_the_output_grant_is_not_in_the_metadata_the_build_service_returns(sandbox: Sandbox, tmp_path: Path) -> None:
    build_id = sandbox.start(_repository(tmp_path / "repo", "true"))
    [(_, grant)] = sandbox.grants.items()
    [build] = sandbox.codebuild.batch_get_builds(ids=[build_id])["builds"]
    [variable] = [v for v in build["environment"]["environmentVariables"] if v["name"] == OUTPUT_GRANT_VARIABLE]
    # What BatchGetBuilds shows is the name of a SecureString parameter, not the grant nor a link to it.
    assert variable["type"] == "PARAMETER_STORE"
    parameter = sandbox.ssm.get_parameter(Name=variable["value"])["Parameter"]
    assert parameter["Type"] == "SecureString"
    metadata = json.dumps(build, default=str)
    for secret in (grant["fields"]["policy"], grant["fields"]["x-amz-signature"], "x-amz-credential"):
        assert secret not in metadata

    assert sandbox.local.wait(build_id, 120), "the build did not end"
    assert sandbox.status(build_id) == BuildStatus.SUCCEEDED
    assert sandbox.artifacts.read(f"runs/run-{sandbox.count}/verify/builds/output.tar.gz")  # the build used it
    # The build has ended: the first look at its status deleted the grant.
    with pytest.raises(sandbox.ssm.exceptions.ParameterNotFound):
        sandbox.ssm.get_parameter(Name=variable["value"])


def test_a_build_naming_a_parameter_that_does_not_exist_fails_before_any_phase_runs(sandbox: Sandbox) -> None:
    build_id = sandbox.codebuild.start_build(projectName=sandbox.project, environmentVariablesOverride=[
        {"name": TEST_RUN_VARIABLE, "value": "run-missing/digest#1", "type": "PLAINTEXT"},
        {"name": OUTPUT_GRANT_VARIABLE, "value": "/nowhere/grant", "type": "PARAMETER_STORE"},
    ])["build"]["id"]
    assert sandbox.local.wait(build_id, 60), "the build did not end"
    assert sandbox.status(build_id) == BuildStatus.FAILED
    [build] = sandbox.local.builds_for("run-missing")
    assert "parameter does not exist: /nowhere/grant" in build.log_tail
    assert "Entering phase" not in build.log_tail


def test_no_process_the_tests_started_outlives_the_build(sandbox: Sandbox, tmp_path: Path) -> None:
    marker = f"{time.time_ns() % 100000}.5"
    repo = _repository(tmp_path / "repo", f"(sleep 300{marker[-2:]} &) ; sleep {marker} & echo started")
    finished = sandbox.run(repo)
    assert finished.status == BuildStatus.SUCCEEDED, finished.log
    survivors = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True, check=False).stdout
    assert survivors == ""
    assert list(sandbox.work_root.iterdir()) == []  # the build's directory is gone too


def test_a_build_stopped_mid_suite_leaves_nothing_running(sandbox: Sandbox, tmp_path: Path) -> None:
    marker = f"{time.time_ns() % 100000}.7"
    # The driver runs the suite in a session of its own; stopping the build must still reach it.
    build_id = sandbox.start(_repository(tmp_path / "repo", f"sleep 3{marker}"))
    deadline = time.monotonic() + SUITE_START_TIMEOUT_S
    while not _running(f"sleep 3{marker}") and not sandbox.local.wait(build_id, 0.1) and time.monotonic() < deadline:
        pass
    [build] = sandbox.local.builds_for(f"run-{sandbox.count}")
    assert _running(f"sleep 3{marker}"), f"the suite never started: {build.log_tail}"

    sandbox.codebuild.stop_build(id=build_id)

    assert sandbox.local.wait(build_id, 30)
    assert sandbox.status(build_id) == BuildStatus.STOPPED
    assert not _running(f"sleep 3{marker}")
    assert list(sandbox.work_root.iterdir()) == []


def _running(pattern: str) -> bool:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False).stdout != ""


def test_a_suite_past_its_timeout_is_killed_and_recorded_as_timed_out(sandbox: Sandbox, tmp_path: Path) -> None:
    repo = _repository(tmp_path / "repo", "echo begun; sleep 120", timeout=2)
    started = time.monotonic()
    finished = sandbox.run(repo)
    assert time.monotonic() - started < 60
    assert finished.contents is not None and finished.contents.result is not None
    suite = finished.contents.result.test
    assert suite is not None and suite.timed_out and suite.exit_code is None
    assert "begun" in finished.contents.output


def test_the_sandbox_limits_cpu_time(sandbox: Sandbox, tmp_path: Path) -> None:
    sandbox.local.limits = SandboxLimits(cpu_seconds=1)
    repo = _repository(tmp_path / "repo", "python3 -c 'while True: pass'")
    finished = sandbox.run(repo)
    assert finished.status == BuildStatus.SUCCEEDED, finished.log
    assert finished.contents is not None and finished.contents.result is not None
    suite = finished.contents.result.test
    # Killed by the kernel (SIGXCPU) after one second of CPU, long before the 60 s timeout.
    assert suite is not None and not suite.timed_out and suite.exit_code not in (0, None)


def test_a_started_build_can_be_found_by_its_test_run(sandbox: Sandbox, tmp_path: Path) -> None:
    finished = sandbox.run(_repository(tmp_path / "repo", "true"))
    assert finished.status == BuildStatus.SUCCEEDED
    assert sandbox.builds.find("run-1/digest#1") is not None
    assert sandbox.builds.find("run-9/other#1") is None


def _wheel(wheelhouse: Path, name: str, version: str, module_source: str) -> Path:
    """A pure-Python wheel written by hand, so the test needs no index and no build backend."""
    wheelhouse.mkdir(parents=True, exist_ok=True)
    dist_info = f"{name}-{version}.dist-info"
    path = wheelhouse / f"{name}-{version}-py3-none-any.whl"
    files = {f"{name}/__init__.py": module_source,
             f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{file},,\n" for file in files) + f"{dist_info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for file, text in {**files, f"{dist_info}/RECORD": record}.items():
            archive.writestr(file, text)
    return path


def test_a_python_repository_runs_on_its_own_dependencies_cached_by_their_digest(sandbox: Sandbox,
                                                                                 tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    # In the repository: the sandbox sees nothing of this machine's /tmp. pip reads the relative
    # path from the install's working directory, the repository.
    _wheel(repo / "wheelhouse", "onlyhere", "1.0", "ANSWER = 42\n")
    with pytest.raises(ImportError):
        __import__("onlyhere")  # agentledger's own environment does not have it
    (repo / "tests").mkdir(parents=True)
    (repo / "requirements.txt").write_text("onlyhere==1.0\n")
    (repo / "tests" / "test_dependency.py").write_text(
        "import sys, unittest\nimport onlyhere\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_answer(self):\n        self.assertEqual(onlyhere.ANSWER, 42)\n"
        "    def test_own_venv(self):\n        self.assertNotEqual(sys.prefix, sys.base_prefix)\n")
    (repo / "agentledger.toml").write_text(
        'test = "python -m unittest discover -s tests -v"\n'
        '[env]\nPIP_NO_INDEX = "1"\nPIP_FIND_LINKS = "wheelhouse"\n')

    first, second = sandbox.run(repo), sandbox.run(repo)

    for finished in (first, second):
        assert finished.contents is not None and finished.contents.result is not None, finished.log
        assert finished.contents.result.install.exit_code == 0, finished.contents.output
        suite = finished.contents.result.test
        assert suite is not None and suite.exit_code == 0, finished.contents.output
        assert "Ran 2 tests" in finished.contents.output
    assert first.contents is not None and second.contents is not None
    assert (first.contents.result.install.cache_hit, second.contents.result.install.cache_hit) == (False, True)
    assert "onlyhere" in first.contents.output and "Processing" in first.contents.output
    assert "Processing" not in second.contents.output  # the cached environment was not reinstalled


def test_a_node_repository_runs_node_test_and_reports_junit_counts(sandbox: Sandbox, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "package.json").write_text(json.dumps({"name": "adder", "version": "1.0.0",
                                                   "scripts": {"test": "node --test"}}))
    (repo / "package-lock.json").write_text(json.dumps({
        "name": "adder", "version": "1.0.0", "lockfileVersion": 3, "requires": True,
        "packages": {"": {"name": "adder", "version": "1.0.0"}}}))
    (repo / "adder.test.js").write_text(
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "test('adds', () => assert.equal(1 + 1, 2));\n"
        "test('subtracts', () => assert.equal(2 - 1, 5));\n")

    finished = sandbox.run(repo)

    assert finished.contents is not None and finished.contents.result is not None, finished.log
    assert finished.contents.result.install.exit_code == 0, finished.contents.output
    suite = finished.contents.result.test
    assert suite is not None and suite.exit_code not in (0, None)
    counts = summarize_junit(finished.contents.junit)
    assert (counts.tests, counts.passed, counts.failed) == (2, 1, 1)
    assert [name for name in counts.failing if "subtracts" in name], counts.failing


def test_a_maven_repository_runs_offline_and_verify_reports_surefire_counts_and_jacoco_coverage(
        sandbox: Sandbox, tmp_path: Path) -> None:
    repo = write_maven_sample(tmp_path / "repo")
    finished = sandbox.run(repo, timeout_s=600)

    assert finished.status == BuildStatus.SUCCEEDED, finished.log
    assert finished.contents is not None and finished.contents.result is not None, finished.log
    # What verify reads of it: judged as the verify stage judges a build's upload.
    test_run = TestRun.model_construct(digest="sha256:inputs", status=finished.status, build_id="build-1")
    report, counts = judge(test_run, load_config(repo), finished.contents)
    assert report.passed, (report.reason, finished.contents.output[-3000:])
    assert counts is not None and (counts.tests, counts.passed) == (2, 2)  # Surefire's XML
    assert counts.by_package == {".: ShapesTest": {"passed": 2}}  # the reactor's root module, its one class
    coverage = report.coverage
    assert coverage is not None, finished.contents.output[-3000:]
    # Shapes.java: the two tests reach 4 of its 8 lines and 3 of its 8 branches.
    assert (coverage.lines_covered, coverage.lines, coverage.branches_covered, coverage.branches) == (4, 8, 3, 8)
    assert coverage.line() == "lines 50% (4 of 8), branches 38% (3 of 8), from 1 JaCoCo report"


def test_a_build_without_the_sandbox_says_so_in_its_log(sandbox: Sandbox, tmp_path: Path,
                                                        capfd: pytest.CaptureFixture[str]) -> None:
    sandbox.local.unsafe = True
    finished = sandbox.run(_repository(tmp_path / "repo", "true"))
    assert finished.status == BuildStatus.SUCCEEDED, finished.log
    assert finished.log.startswith(UNSAFE_WARNING)
    assert UNSAFE_WARNING in capfd.readouterr().err  # and on serve's output


def test_a_build_whose_runner_fails_is_failed_not_succeeded(sandbox: Sandbox, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def fork_refused(*args: Any, **kwargs: Any) -> None:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr("agentledger.local.codebuild.SandboxedProcess", fork_refused)
    monkeypatch.setattr("agentledger.local.codebuild._Unsandboxed.start", fork_refused)
    finished = sandbox.run(_repository(tmp_path / "repo", "true"))
    assert finished.status == BuildStatus.FAILED
    # Said in the log and in the build's record, as CodeBuild says why a build could not start.
    assert "the build's sandbox could not start the install phase: [Errno 11] Resource temporarily unavailable" \
        in finished.log
    [record] = sandbox.codebuild.batch_get_builds(ids=[finished.build_id])["builds"]
    [install] = [phase for phase in record["phases"] if phase["phaseType"] == "INSTALL"]
    assert install["phaseStatus"] == "FAILED" and install["contexts"][0]["statusCode"] == "CLIENT_ERROR"


def test_the_bedrock_writers_junit_classes_are_kept_only_if_they_build_pass_every_run_and_add_coverage(
        sandbox: Sandbox, tmp_path: Path) -> None:
    """Six classes a model might write for the Maven sample, one per way a candidate ends: the plan
    the Bedrock writer makes of them, built and filtered in the sandbox as the execute stage does."""
    repo = write_maven_sample(tmp_path / "repo")
    client = boto3.client("bedrock-runtime", region_name=REGION, aws_access_key_id="offline",
                          aws_secret_access_key="offline")
    answer = {"modules": [{"path": "src/main/java/demo/Shapes.java", "rationale": f"{path.stem}: see its comment",
                           "code": path.read_text()} for path in sorted(MAVEN_CANDIDATES.glob("*.java"))]}
    snapshot = snapshot_directory(repo)
    with Stubber(client) as stub:
        stub.add_response("converse", {"output": {"message": {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "t-1", "name": PLAN_TOOL, "input": answer}}]}}, "stopReason": "tool_use",
            "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}})
        plan = BedrockPlanner(client, BedrockSettings(model_id="model", max_tokens=4096, temperature=0.0,
                                                      max_reasks=0, prices={})).plan(
            inspect_repository(snapshot), snapshot, PlanBrief(request="write tests"))
    # Two runs in a row, not five: what is shown is each way a candidate ends (the flaky one fails its
    # first run with the suite), not the count.
    settings = GenerationSettings(seed=7, module_seconds=60, run_seconds=600, iterations=100, random_order=True,
                                  runs=2)
    members = generation_input(plan, settings, load_config(repo), repo, snapshot.files, render_test_files(plan))

    finished = sandbox.run(repo, timeout_s=1200, members=members)
    test_run = TestRun.model_construct(digest="sha256:inputs", status=finished.status, build_id="build-1")
    result = believed_result(test_run, finished.archive, finished.contents, [item.test_path for item in plan.items])

    assert result.funnel == {"generated": 6, "build": 5, "pass_alone": 4, "pass_with_suite": 3, "coverage": 2}, \
        finished.contents.output[-3000:] if finished.contents else finished.log
    dropped = {c.name: (c.dropped_by, c.detail) for c in result.candidates if not c.kept}
    assert dropped["ShapesBrokenTest"][0] == "build" and "cannot find symbol" in dropped["ShapesBrokenTest"][1]
    assert dropped["ShapesWrongTest"] == ("pass_alone", "failed in run 1 of 2")
    assert dropped["ShapesFlakyTest"] == ("pass_with_suite", "failed in run 1 of 2")
    assert dropped["ShapesRectangleTest"][0] == "coverage"
    assert sorted(result.files) == ["src/test/java/demo/ShapesNegativeSideTest.java",
                                    "src/test/java/demo/ShapesSignTest.java"]
    kept = result.files["src/test/java/demo/ShapesSignTest.java"]
    assert kept == (MAVEN_CANDIDATES / "ShapesSignTest.java").read_text()
    # Shapes.java by JaCoCo: the suite alone reaches 4 of its 8 lines and 3 of its 8 branches.
    change = result.coverage["src/main/java/demo/Shapes.java"]
    assert change.before == ModuleCoverage(lines=8, lines_covered=4, branches=8, branches_covered=3)
    assert change.after == ModuleCoverage(lines=8, lines_covered=8, branches=8, branches_covered=7)


def test_two_runtimes_sharing_a_build_cache_install_into_it_one_at_a_time(tmp_path: Path) -> None:
    """Two `serve`s (or a test suite's two workers) share the dependency cache; an install clears
    what an unfinished one left, so it must wait for another runtime's install, not remove it."""
    first = LocalCodeBuild(tmp_path / "first", tmp_path / "cache")
    second = LocalCodeBuild(tmp_path / "second", tmp_path / "cache")
    entered = threading.Event()

    def install_in_second() -> None:
        with second._install_lock("tools"):
            entered.set()

    try:
        with first._install_lock("tools"):
            waiting = threading.Thread(target=install_in_second)
            waiting.start()
            assert not entered.wait(1.0), "the second runtime installed while the first was installing"
        assert entered.wait(30)
        waiting.join()
    finally:
        first.shutdown()
        second.shutdown()


def test_a_build_cache_under_a_directory_only_root_may_enter_works_and_is_reused(tmp_path: Path) -> None:
    """`mktemp -d` makes such a directory: the build sees the cache at the buildspec's path, wherever
    it lies on this machine (the build's own uid could not pass through it there)."""
    private = Path(tempfile.mkdtemp(prefix="agentledger-cache-", dir="/var/tmp"))  # outside the sandbox's own /tmp
    try:
        assert private.stat().st_mode & 0o777 == 0o700
        repo = _repository(tmp_path / "repo", "python -c 'import sys; print(sys.prefix)'")
        (repo / "requirements.txt").write_text("")
        with sandbox_on(tmp_path / "builds", private / "cache") as box:
            first, second = box.run(repo), box.run(repo)
        for finished in (first, second):
            assert finished.status == BuildStatus.SUCCEEDED, finished.log
            assert finished.contents is not None and finished.contents.result is not None, finished.log
            assert finished.contents.result.test is not None and finished.contents.result.test.exit_code == 0, \
                finished.contents.output
        assert [f.contents.result.install.cache_hit for f in (first, second) if f.contents and f.contents.result] \
            == [False, True]
        assert CACHE_PATH_ON_CODEBUILD in second.contents.output if second.contents else False
        assert str(private) not in (second.contents.output if second.contents else "")
    finally:
        shutil.rmtree(private)


def test_a_projects_version_file_written_by_its_build_backend_is_there_in_every_build(sandbox: Sandbox,
                                                                                     tmp_path: Path) -> None:
    """As humanize's is: hatch-vcs writes it at install time from the sdist's metadata (there is no
    git history in a build), and the tree does not hold it. The first build installs into the cache;
    the second finds its dependencies there and still installs the project from its tree."""
    repo = tmp_path / "stamped"
    (repo / "src" / "stamped").mkdir(parents=True)
    (repo / "src" / "stamped" / "__init__.py").write_text("from ._version import __version__\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_version.py").write_text(
        "import importlib.metadata\nimport stamped\n\n\ndef test_the_version_is_the_projects():\n"
        "    assert stamped.__version__ == importlib.metadata.version('stamped') == '4.2.0'\n")
    (repo / ".gitignore").write_text("src/stamped/_version.py\n")
    (repo / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: stamped\nVersion: 4.2.0\n")
    (repo / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling==1.27.0", "hatch-vcs==0.5.0"]\nbuild-backend = "hatchling.build"\n\n'
        '[project]\nname = "stamped"\ndynamic = ["version"]\n\n[tool.hatch.version]\nsource = "vcs"\n\n'
        '[tool.hatch.build.hooks.vcs]\nversion-file = "src/stamped/_version.py"\n\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["src/stamped"]\n')
    assert not (repo / "src" / "stamped" / "_version.py").exists()

    first, second = sandbox.run(repo, timeout_s=600), sandbox.run(repo, timeout_s=600)
    for finished in (first, second):
        assert finished.contents is not None and finished.contents.result is not None, finished.log
        suite = finished.contents.result.test
        assert suite is not None and suite.exit_code == 0, finished.contents.output[-4000:]
    assert [f.contents.result.install.cache_hit for f in (first, second) if f.contents and f.contents.result] \
        == [False, True]
    assert second.contents is not None and "install --no-input --disable-pip-version-check --no-deps --target" \
        in second.contents.output
