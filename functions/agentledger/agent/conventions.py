"""Where a project keeps its tests, so that what agentledger writes follows it: the directory
pytest is told to look in (`testpaths`), else the tests folder the project already has, else
`tests/`; plain test modules, never a package of agentledger's own, and never a change to how
the project is packaged (setuptools' discovery leaves test folders out of a flat layout)."""
from __future__ import annotations

from pathlib import PurePosixPath

from agentledger.fingerprints import sha256_bytes
from agentledger.source import SourceSnapshot, is_safe_relative_path
from agentledger.testrun.pytest_config import pytest_section

TEST_DIRECTORIES = ("tests", "test", "testing")
DEFAULT_TEST_DIRECTORY = "tests"
GENERATED_SUFFIX = "_generated"


def pytest_setting(snapshot: SourceSnapshot, key: str) -> tuple[str | list[str] | None, dict[str, str]]:
    """`key` of the first configuration file pytest would read, and that file's name -> its bytes'
    sha256 (so a plan can name what it read); (None, {}) when no file configures pytest."""
    values, name, data = pytest_section(snapshot.root, lambda candidate: candidate in snapshot.files)
    if values is None or name is None:
        return None, {}
    return values.get(key), {name: sha256_bytes(data)}


def test_directory(snapshot: SourceSnapshot) -> tuple[str, dict[str, str]]:
    """The directory generated test modules go into, and the configuration read to decide it."""
    testpaths, read = pytest_setting(snapshot, "testpaths")
    paths = testpaths.split() if isinstance(testpaths, str) else [str(p) for p in testpaths or []]
    directories = {PurePosixPath(path).parent.as_posix() for path in snapshot.files}
    for path in (configured.strip("/") for configured in paths):
        if is_safe_relative_path(path) and not path.endswith(".py") and "*" not in path:
            return path, read
    for name in TEST_DIRECTORIES:
        if any(directory == name or directory.startswith(f"{name}/") for directory in directories):
            return name, read
    return DEFAULT_TEST_DIRECTORY, read


def generated_test_path(module_path: str, directory: str, taken: set[str]) -> str:
    """`tests/test_pkg_mod_generated.py` for `pkg/mod.py`: a name no file of the project has, and
    unique among test modules, as pytest's default import mode needs of modules outside packages."""
    parts = PurePosixPath(module_path).with_suffix("").parts
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    stem = f"test_{'_'.join(parts)}{GENERATED_SUFFIX}"
    names = {PurePosixPath(path).name for path in taken}
    candidate, number = stem, 1
    while f"{candidate}.py" in names:
        number += 1
        candidate = f"{stem}_{number}"
    return f"{directory}/{candidate}.py"
