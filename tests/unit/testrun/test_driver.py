"""The driver inside the build: it runs the repository's commands with an environment of its
own, kills what they leave running, keeps a bounded output tail and the JUnit reports, and
records what happened in result.json."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from agentledger.testrun import driver

DRIVER = Path(driver.__file__)


def build_dir(tmp_path: Path, **config: object) -> Path:
    root = tmp_path / "build"
    (root / driver.REPOSITORY_DIR).mkdir(parents=True)
    (root / "agentledger").mkdir()
    document = {"install": [], "test": "true", "timeout_s": 30, "junit": [], "env": {},
                "virtualenv": False, "cache_key_files": [], **config}
    (root / driver.CONFIG_FILE).write_text(json.dumps(document))
    return root


def run_driver(root: Path, command: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """The driver's `command`; by default the two the buildspec runs in turn, install and test
    (the second only when the first succeeded)."""
    environment = {"PATH": os.environ["PATH"], "HOME": str(root), **env}
    finished = None
    for step in [command] if command else ["install", "test"]:
        finished = subprocess.run([sys.executable, str(DRIVER), step], cwd=root, env=environment,
                                  capture_output=True, text=True, timeout=60, check=False)
        if finished.returncode != 0:
            break
    assert finished is not None
    return finished


def result(root: Path) -> dict:
    return json.loads((root / driver.RESULTS_DIR / driver.RESULT_FILE).read_text())


def output(root: Path) -> str:
    return (root / driver.RESULTS_DIR / driver.OUTPUT_FILE).read_text()


def test_commands_see_only_the_host_basics_and_what_the_repository_declares(tmp_path: Path) -> None:
    root = build_dir(tmp_path, test="env", env={"GREETING": "hello"})
    finished = run_driver(root, AGENTLEDGER_OUTPUT_GRANT='{"url": "secret"}',
                          AWS_SECRET_ACCESS_KEY="not-for-tests", LEDGER_TABLE="runs")
    assert finished.returncode == 0, finished.stderr
    seen = output(root)
    assert "GREETING=hello" in seen
    for leaked in ("AWS_SECRET_ACCESS_KEY", "AGENTLEDGER_OUTPUT_GRANT", "LEDGER_TABLE", "secret"):
        assert leaked not in seen
    assert result(root)["test"]["exit_code"] == 0


def test_package_managers_download_into_the_build_cache_unless_the_repository_says_otherwise(
        tmp_path: Path) -> None:
    root = build_dir(tmp_path, test="env", env={"npm_config_cache": "/repo/chose/this"})
    finished = run_driver(root, AGENTLEDGER_CACHE=str(tmp_path / "cache"))
    assert finished.returncode == 0, finished.stderr
    seen = output(root)
    assert f"PIP_CACHE_DIR={tmp_path / 'cache' / 'pip'}" in seen
    assert f"MAVEN_OPTS=-Dmaven.repo.local={tmp_path / 'cache' / 'm2'}" in seen
    assert "npm_config_cache=/repo/chose/this" in seen


def test_a_failing_suite_is_recorded_not_raised(tmp_path: Path) -> None:
    root = build_dir(tmp_path, test="echo broken; exit 3")
    assert run_driver(root).returncode == 0
    recorded = result(root)
    assert recorded["test"] == {**recorded["test"], "command": "echo broken; exit 3",
                                "exit_code": 3, "timed_out": False}
    assert "broken" in output(root)


def test_a_failed_install_skips_the_tests(tmp_path: Path) -> None:
    root = build_dir(tmp_path, install=["true", "exit 7", "echo never"], test="echo ran-tests")
    run_driver(root)
    recorded = result(root)
    assert recorded["install"]["commands"] == 2
    assert recorded["install"]["exit_code"] == 7
    assert recorded["test"] is None
    assert "never" not in output(root) and "ran-tests" not in output(root)


def test_a_command_past_its_timeout_is_killed_with_what_it_started(tmp_path: Path) -> None:
    marker = tmp_path / "survivor"
    root = build_dir(tmp_path, timeout_s=1,
                     test=f"(sleep 3; touch {marker}) & sleep 300")
    started = time.monotonic()
    run_driver(root)
    assert time.monotonic() - started < 30
    assert result(root)["test"]["timed_out"] is True
    assert result(root)["test"]["exit_code"] is None
    time.sleep(4)
    assert not marker.exists(), "a background process of the suite outlived it"


def test_background_processes_die_when_the_suite_exits_normally(tmp_path: Path) -> None:
    marker = tmp_path / "survivor"
    root = build_dir(tmp_path, test=f"(sleep 2; touch {marker}) & exit 0")
    run_driver(root)
    time.sleep(3)
    assert not marker.exists()


def test_a_process_the_suite_detached_into_its_own_session_dies_with_the_suite(tmp_path: Path) -> None:
    marker = f"{time.time_ns() % 100000}.3"
    root = build_dir(tmp_path, test=f"setsid sh -c 'sleep 3{marker} &' ; echo detached")
    finished = run_driver(root)
    assert finished.returncode == 0, finished.stderr
    assert "detached" in output(root)
    survivors = subprocess.run(["pgrep", "-f", f"sleep 3{marker}"], capture_output=True, text=True).stdout
    assert survivors == ""


def test_the_output_tail_is_bounded(tmp_path: Path) -> None:
    root = build_dir(tmp_path, test="head -c 3000000 /dev/zero | tr '\\0' x; echo; echo THE-END")
    run_driver(root)
    tail = output(root)
    assert "output truncated" in tail
    assert tail.rstrip().endswith("]") and "THE-END" in tail
    assert len(tail.encode()) < driver.OUTPUT_LIMIT_BYTES + 200


def test_junit_reports_are_collected_but_never_links_or_files_outside(tmp_path: Path) -> None:
    outside = tmp_path / "secret.xml"
    outside.write_text("<testsuite/>")
    root = build_dir(tmp_path, junit=["reports/*.xml", "../*.xml"], test=(
        'mkdir -p reports && echo "<testsuite/>" > reports/a.xml'
        f' && ln -s {outside} reports/b.xml'
        ' && echo "<testsuite/>" > "$AGENTLEDGER_RESULTS/junit/own.xml"'
        f' && ln -s {outside} "$AGENTLEDGER_RESULTS/junit/link.xml"'))
    run_driver(root)
    assert result(root)["junit_files"] == ["own.xml", "reports__a.xml"]


def test_upload_refuses_without_a_grant(tmp_path: Path) -> None:
    root = build_dir(tmp_path)
    run_driver(root)
    finished = run_driver(root, "upload")
    assert finished.returncode == 1
    assert "AGENTLEDGER_OUTPUT_GRANT is not set" in finished.stderr


def test_an_invalid_configuration_is_named(tmp_path: Path) -> None:
    root = build_dir(tmp_path, timeout_s=True, install="not a list")
    finished = run_driver(root)
    assert finished.returncode == 1
    assert "install must be a list of strings" in finished.stderr
    assert "timeout_s must be a positive integer" in finished.stderr


def test_the_venv_cache_key_follows_the_dependency_files(tmp_path: Path) -> None:
    repository = tmp_path / "repository"
    repository.mkdir()
    (repository / "requirements.txt").write_text("glom==23.5.0\n")
    config = driver.Config(install=["pip install -r requirements.txt"], test="pytest", timeout_s=1,
                           junit=[], jacoco=[], env={}, virtualenv=True, cache_key_files=["requirements.txt"])
    first = driver.cache_key(config, repository)
    assert driver.cache_key(config, repository) == first
    (repository / "tests.py").write_text("# a new test does not invalidate the installed venv\n")
    assert driver.cache_key(config, repository) == first
    (repository / "requirements.txt").write_text("glom==24.11.0\n")
    assert driver.cache_key(config, repository) != first


def test_cache_key_names_the_venv_install_uses_and_nothing_without_a_virtualenv(tmp_path: Path) -> None:
    root = build_dir(tmp_path, virtualenv=True, cache_key_files=["requirements.txt"])
    (root / driver.REPOSITORY_DIR / "requirements.txt").write_text("glom==23.5.0\n")
    named = run_driver(root, "cache-key")
    assert named.returncode == 0, named.stderr
    config = driver.load_config(root / driver.CONFIG_FILE)
    assert named.stdout == driver.venv_name(config, root / driver.REPOSITORY_DIR) + "\n"

    plain = build_dir(tmp_path / "plain")
    assert run_driver(plain, "cache-key").stdout == ""


def test_the_tests_need_the_installs_record(tmp_path: Path) -> None:
    root = build_dir(tmp_path)
    finished = run_driver(root, "test")
    assert finished.returncode == 1
    assert "did `install` run?" in finished.stderr
