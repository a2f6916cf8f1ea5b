"""The kit inside the build, run as the buildspec runs it (`python3 -I agentledger COMMAND` in the
build's directory, as root, as CodeBuild and the local sandbox run it): the repository's commands
get an environment of their own and a uid of their own, whatever they leave running is killed,
the output's tail and the JUnit reports are kept, and what happened is recorded in result.json,
in a directory only the kit writes."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agentledger.buildkit import layout
from agentledger.buildkit.install import entry_name
from agentledger.buildkit.workspace import FAILURE_RECORD, RAW_OUTPUT_FILE
from agentledger.workflow.builds import KIT_FILES

if TYPE_CHECKING:
    from collections.abc import Iterator

CODE_UID = 65534  # the kit's default: CodeBuild's container is the build's own


@pytest.fixture
def builds() -> Iterator[Path]:
    """Where build directories go: a directory other users may pass through, as a build's is (the
    test's own tmp_path is root's alone, and the repository's commands do not run as root)."""
    assert os.geteuid() == 0, "the kit runs as root in a build (CodeBuild's and the local sandbox's), and so here"
    directory = Path(tempfile.mkdtemp(prefix="agentledger-kit-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory)


def build_dir(builds: Path, name: str = "build", **config: object) -> Path:
    """A build's directory as the input tarball leaves it: the repository and agentledger's files."""
    root = builds / name
    (root / layout.REPOSITORY_DIR).mkdir(parents=True)
    for path, source in KIT_FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, root / path)
    (root / layout.KIT_ENTRY_FILE).write_text(layout.KIT_ENTRY)
    document = {"install": [], "test": "true", "timeout_s": 30, "junit": [], "env": {}, "virtualenv": False,
                **config}
    (root / layout.CONFIG_FILE).write_text(json.dumps(document))
    return root


def run_kit(root: Path, *commands: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The kit's commands in turn, as the buildspec runs them (by default prepare, install and test),
    up to the first that fails."""
    environment = {"PATH": os.environ["PATH"], "HOME": "/root", **env}
    finished = None
    for command in commands or ("prepare", "install", "test"):
        finished = subprocess.run([sys.executable, "-I", str(root / layout.CONTROL_DIR), command], cwd=root,
                                  env=environment, capture_output=True, text=True, timeout=120, check=False)
        if finished.returncode != 0:
            break
    assert finished is not None
    return finished


def result(root: Path) -> dict:
    return json.loads((root / layout.RESULTS_DIR / layout.RESULT_FILE).read_text())


def output(root: Path) -> str:
    return (root / layout.RESULTS_DIR / layout.OUTPUT_FILE).read_text()


def test_commands_see_only_the_host_basics_and_what_the_repository_declares(builds: Path) -> None:
    root = build_dir(builds, test="env", env={"GREETING": "hello"})
    finished = run_kit(root, AGENTLEDGER_OUTPUT_GRANT='{"url": "secret"}',
                       AWS_SECRET_ACCESS_KEY="not-for-tests", LEDGER_TABLE="runs")
    assert finished.returncode == 0, finished.stderr
    seen = output(root)
    assert "GREETING=hello" in seen
    for leaked in ("AWS_SECRET_ACCESS_KEY", "AGENTLEDGER_OUTPUT_GRANT", "LEDGER_TABLE", "secret"):
        assert leaked not in seen
    assert result(root)["test"]["exit_code"] == 0


def test_the_repository_runs_as_a_uid_of_its_own_that_cannot_touch_the_kit_or_its_records(builds: Path) -> None:
    attempts = {
        "kit": "echo x >> ../agentledger/buildkit/driver.py",
        "entry": "echo x > ../agentledger/__main__.py",
        "config": "echo x > ../agentledger/config.json",
        "replace": "mv ../agentledger ../moved",
        "results": "echo x > ../agentledger/results/result.json",
        "state": "cat ../agentledger/state/output.log",
        "signal": "kill -STOP $PPID",
    }
    script = "; ".join(f"({command}) 2>/dev/null && echo ESCAPED-{name} || echo blocked-{name}"
                       for name, command in attempts.items())
    root = build_dir(builds, test=f"id -u; {script}")
    before = {path: (root / path).read_bytes() for path in KIT_FILES}
    finished = run_kit(root)
    assert finished.returncode == 0, finished.stderr
    seen = output(root)
    assert f"{CODE_UID}\n" in seen
    assert [line for line in seen.splitlines() if line.startswith("ESCAPED")] == []
    assert all(f"blocked-{name}" in seen for name in attempts)
    assert {path: (root / path).read_bytes() for path in KIT_FILES} == before
    assert (root / layout.REPOSITORY_DIR).stat().st_uid == CODE_UID


def test_package_managers_download_into_the_builds_own_home_unless_the_repository_says_otherwise(
        builds: Path) -> None:
    root = build_dir(builds, test="env", env={"npm_config_cache": "/repo/chose/this"})
    finished = run_kit(root, AGENTLEDGER_CACHE=str(builds / "cache"))
    assert finished.returncode == 0, finished.stderr
    seen = output(root)
    home = root / layout.HOME_DIR
    assert f"HOME={home}" in seen and f"PIP_CACHE_DIR={home / '.cache' / 'pip'}" in seen
    assert f"MAVEN_OPTS=-Dmaven.repo.local={home / '.m2' / 'repository'}" in seen
    assert "npm_config_cache=/repo/chose/this" in seen
    assert str(builds / "cache") not in seen  # the shared cache holds no repository's downloads


def test_a_failing_suite_is_recorded_not_raised(builds: Path) -> None:
    root = build_dir(builds, test="echo broken; exit 3")
    assert run_kit(root).returncode == 0
    recorded = result(root)
    assert recorded["test"] == {**recorded["test"], "command": "echo broken; exit 3",
                                "exit_code": 3, "timed_out": False}
    assert "broken" in output(root)


def test_a_failed_install_skips_the_tests(builds: Path) -> None:
    root = build_dir(builds, install=["true", "exit 7", "echo never"], test="echo ran-tests")
    run_kit(root)
    recorded = result(root)
    assert recorded["install"]["commands"] == 2
    assert recorded["install"]["exit_code"] == 7
    assert recorded["test"] is None
    assert "never" not in output(root) and "ran-tests" not in output(root)


def test_a_command_past_its_timeout_is_killed_with_what_it_started(builds: Path) -> None:
    root = build_dir(builds, timeout_s=1, test="(sleep 3; touch survivor) & sleep 300")
    started = time.monotonic()
    run_kit(root)
    assert time.monotonic() - started < 60
    assert result(root)["test"]["timed_out"] is True
    assert result(root)["test"]["exit_code"] is None
    time.sleep(4)
    assert not (root / layout.REPOSITORY_DIR / "survivor").exists(), "a background process of the suite outlived it"


def test_background_processes_die_when_the_suite_exits_normally(builds: Path) -> None:
    root = build_dir(builds, test="touch started; (sleep 2; touch survivor) & exit 0")
    run_kit(root)
    time.sleep(3)
    assert (root / layout.REPOSITORY_DIR / "started").exists()
    assert not (root / layout.REPOSITORY_DIR / "survivor").exists()


def test_a_process_the_suite_detached_into_its_own_session_dies_with_the_suite(builds: Path) -> None:
    marker = f"{time.time_ns() % 100000}.3"
    root = build_dir(builds, test=f"setsid sh -c 'sleep 3{marker} &' ; echo detached")
    finished = run_kit(root)
    assert finished.returncode == 0, finished.stderr
    assert "detached" in output(root)
    survivors = subprocess.run(["pgrep", "-f", f"sleep 3{marker}"], capture_output=True, text=True,
                               check=False).stdout
    assert survivors == ""


def test_the_output_tail_is_bounded(builds: Path) -> None:
    root = build_dir(builds, test="head -c 3000000 /dev/zero | tr '\\0' x; echo; echo THE-END")
    run_kit(root)
    tail = output(root)
    assert "output truncated" in tail
    assert tail.rstrip().endswith("]") and "THE-END" in tail
    assert len(tail.encode()) < layout.OUTPUT_LIMIT_BYTES + 200


def test_junit_reports_are_collected_but_never_links_or_files_outside(builds: Path) -> None:
    outside = builds / "secret.xml"
    outside.write_text("<testsuite/>")
    root = build_dir(builds, junit=["reports/*.xml", "../*.xml"], test=(
        'mkdir -p reports && echo "<testsuite/>" > reports/a.xml'
        f' && ln -s {outside} reports/b.xml'
        ' && echo "<testsuite/>" > "$AGENTLEDGER_RESULTS/junit/own.xml"'
        f' && ln -s {outside} "$AGENTLEDGER_RESULTS/junit/link.xml"'
        ' && ln -s /proc/1/environ "$AGENTLEDGER_RESULTS/junit/environ.xml"'))
    run_kit(root)
    assert result(root)["junit_files"] == ["own.xml", "reports__a.xml"]
    assert sorted(path.name for path in (root / layout.RESULTS_DIR / layout.JUNIT_DIR).iterdir()) == \
        ["own.xml", "reports__a.xml"]


def test_a_top_level_pip_of_the_repository_replaces_neither_the_kits_pip_nor_the_installs(builds: Path) -> None:
    root = build_dir(builds, virtualenv=True, install=["python -I -m pip --version"], test="true")
    shadow = root / layout.REPOSITORY_DIR / "pip"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("")
    (shadow / "__main__.py").write_text("print('SHADOWED PIP RAN')\nraise SystemExit(0)\n")
    finished = run_kit(root)
    assert finished.returncode == 0, finished.stderr
    assert "SHADOWED PIP RAN" not in output(root)
    assert "pip " in output(root) and result(root)["install"]["exit_code"] == 0


def test_a_failure_of_the_kit_is_in_the_output_the_upload_carries(builds: Path) -> None:
    root = build_dir(builds, timeout_s=True, install="not a list")
    finished = run_kit(root)
    assert finished.returncode == 1
    assert "install must be a list of strings" in finished.stderr
    assert "timeout_s must be a positive integer" in finished.stderr
    uploaded = run_kit(root, "upload")
    assert uploaded.returncode == 1 and "AGENTLEDGER_OUTPUT_GRANT is not set" in uploaded.stderr
    results = root / layout.RESULTS_DIR
    assert "prepare failed: invalid agentledger/config.json" in (results / layout.OUTPUT_FILE).read_text()
    assert "prepare failed" in (results / layout.FAILURE_FILE).read_text()
    assert (root / layout.STATE_DIR).stat().st_mode & 0o777 == 0o700
    assert (root / layout.STATE_DIR / FAILURE_RECORD).exists()


def test_the_tests_need_the_installs_record(builds: Path) -> None:
    root = build_dir(builds)
    finished = run_kit(root, "prepare", "test")
    assert finished.returncode == 1
    assert "did `install` run?" in finished.stderr
    assert (root / layout.STATE_DIR).stat().st_mode & 0o777 == 0o700
    assert (root / layout.STATE_DIR / RAW_OUTPUT_FILE).exists()


def test_a_cache_entry_is_named_by_the_orchestrators_key_filled_once_and_then_roots(builds: Path) -> None:
    cache = builds / "cache"
    key = "a" * 64
    first = build_dir(builds, "first", virtualenv=True, install=["touch $VIRTUAL_ENV/installed-once"])
    assert run_kit(first, AGENTLEDGER_CACHE=str(cache), AGENTLEDGER_CACHE_KEY=key).returncode == 0
    assert result(first)["install"]["cache_hit"] is False
    entry = cache / layout.VENVS_DIR / entry_name(key, sys.version, cache)
    assert (entry / "installed-once").exists() and (entry / layout.INSTALLED_MARKER).exists()
    owners = {path.stat().st_uid for path in [entry, *entry.rglob("*")] if not path.is_symlink()}
    assert owners == {0}  # no later build's code can change it

    second = build_dir(builds, "second", virtualenv=True, install=["touch $VIRTUAL_ENV/installed-twice"],
                       test="touch $VIRTUAL_ENV/poisoned")
    assert run_kit(second, AGENTLEDGER_CACHE=str(cache), AGENTLEDGER_CACHE_KEY=key).returncode == 0
    assert result(second)["install"]["cache_hit"] is True
    assert not (entry / "installed-twice").exists() and not (entry / "poisoned").exists()
    assert result(second)["test"]["exit_code"] != 0


def test_a_build_without_a_key_caches_nothing(builds: Path) -> None:
    cache = builds / "cache"
    root = build_dir(builds, virtualenv=True, install=["true"])
    assert run_kit(root, AGENTLEDGER_CACHE=str(cache), AGENTLEDGER_CACHE_KEY="../../elsewhere").returncode == 0
    assert result(root)["install"]["cache_hit"] is None
    assert not (cache / layout.VENVS_DIR).exists()


# A build backend in the tree (PEP 517, no requirement to download) that writes a version file into
# the tree while it builds, as hatch-vcs and setuptools-scm do: the file is not in the source.
IN_TREE_BACKEND = '''
import base64, hashlib, pathlib, zipfile

def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = pathlib.Path("VERSION").read_text().strip()
    pathlib.Path("stamped/_version.py").write_text(f"version = {version!r}\\n")
    info = f"stamped-{version}.dist-info"
    files = {"stamped/__init__.py": pathlib.Path("stamped/__init__.py").read_bytes(),
             "stamped/_version.py": pathlib.Path("stamped/_version.py").read_bytes(),
             f"{info}/METADATA": f"Metadata-Version: 2.1\\nName: stamped\\nVersion: {version}\\n".encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
    name = f"stamped-{version}-py3-none-any.whl"
    record = f"stamped-{version}.dist-info/RECORD"
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / name, "w") as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
        wheel.writestr(record, "\\n".join([*(_record_line(p, d) for p, d in files.items()), f"{record},,"]) + "\\n")
    return name
'''


def _stamped_project(root: Path, version: str) -> None:
    repository = root / layout.REPOSITORY_DIR
    (repository / "stamped").mkdir()
    (repository / "stamped" / "__init__.py").write_text("")
    (repository / "VERSION").write_text(version)
    (repository / "backend.py").write_text(IN_TREE_BACKEND)
    (repository / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n')


def test_the_project_is_installed_from_its_tree_in_every_build_even_when_its_dependencies_are_cached(
        builds: Path) -> None:
    cache, key = builds / "cache", "b" * 64
    test = ("python -c 'import importlib.metadata as m, stamped._version as v; "
            "print(\"STAMPED\", v.version, m.version(\"stamped\"))'")
    for name, version, cached in (("writer", "1.0", False), ("verify", "1.1", True)):
        root = build_dir(builds, name, virtualenv=True, install_project=True, install=[], test=test)
        _stamped_project(root, version)
        finished = run_kit(root, AGENTLEDGER_CACHE=str(cache), AGENTLEDGER_CACHE_KEY=key)
        assert finished.returncode == 0, finished.stderr
        assert result(root)["install"]["cache_hit"] is cached, output(root)
        assert f"STAMPED {version} {version}" in output(root), output(root)


def test_a_venv_made_where_the_cache_lay_before_is_not_reused_where_it_lies_now(builds: Path) -> None:
    """A virtualenv runs only where it was made (its scripts name its interpreter by path): a cache
    moved, or seen at another path by an older release's builds, is installed again."""
    key = "d" * 64
    first = build_dir(builds, "first", virtualenv=True, install=["true"])
    assert run_kit(first, AGENTLEDGER_CACHE=str(builds / "before"), AGENTLEDGER_CACHE_KEY=key).returncode == 0
    shutil.copytree(builds / "before", builds / "now", symlinks=True)
    second = build_dir(builds, "second", virtualenv=True, install=["true"], test="python -c 'print(1)'")
    assert run_kit(second, AGENTLEDGER_CACHE=str(builds / "now"), AGENTLEDGER_CACHE_KEY=key).returncode == 0
    assert result(second)["install"]["cache_hit"] is False
    assert result(second)["test"]["exit_code"] == 0
