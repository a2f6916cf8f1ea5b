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
    """`tests/test_elffile_generated.py` for `packaging/_elffile.py`: named after the module, beside
    the project's own tests of it (a `test_elffile.py` or `elffile_test.py` within `directory`) or
    else in `directory`. A name no file of the project has, and unique among test modules, as pytest's
    default import mode needs of modules outside packages: where the short name is taken, the
    module's dotted path names it (`test_packaging_elffile_generated.py`), then a number."""
    parts = PurePosixPath(module_path).with_suffix("").parts
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    words = [part.strip("_") or part for part in parts]
    own = sorted(PurePosixPath(path).parent.as_posix() for path in taken
                 if PurePosixPath(path).name in (f"test_{words[-1]}.py", f"{words[-1]}_test.py"))
    # Beside them only within the tests folder, where pytest is told to look (or looks by default).
    beside = [folder for folder in own if folder == directory or folder.startswith(f"{directory}/")]
    if beside:
        directory = beside[0]
    names = {PurePosixPath(path).name for path in taken}
    stems = [f"test_{words[-1]}{GENERATED_SUFFIX}", f"test_{'_'.join(words)}{GENERATED_SUFFIX}"]
    candidate = next((stem for stem in stems if f"{stem}.py" not in names), None)
    number = 1
    while candidate is None:
        number += 1
        numbered = f"{stems[-1]}_{number}"
        candidate = numbered if f"{numbered}.py" not in names else None
    return f"{candidate}.py" if directory in ("", ".") else f"{directory}/{candidate}.py"
