"""Plausible Python repositories of an exact number of files, for measuring how a run scales.

A project `orchard` of sub-packages, each of modules with documented functions and a class; one
module in DOCTEST_EVERY carries doctest examples, and the project's own tests (flat `tests/`, as
pytest finds them) call about half of those, so the agent has a bounded number of untested
examples to turn into tests whatever the size. The rest of the tree is what real repositories
hold besides code: documentation, data and configuration files. The layout and every file's
content follow from the size alone, so each size is the same repository from run to run; it is
committed to git, as a checkout a person would hand the agent is."""
from __future__ import annotations

import json
import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

PROJECT = "orchard"
MODULES_PER_PACKAGE = 25
DOCTEST_EVERY = 50  # one module in this many has examples
MODULES_PER_TEST_FILE = 10
PYTHON_SHARE = 0.6  # of the files: modules (and their packages' __init__.py); the rest tests, docs, data
PYPROJECT = """[tool.pytest.ini_options]
addopts = "-p no:cacheprovider"

[tool.ruff]
line-length = 100
"""
README = f"# {PROJECT}\n\nHelpers for orchards: yields, rows and records.\n"
NOUNS = ("apple", "pear", "plum", "quince", "cherry", "medlar", "damson", "apricot")


def write_repository(root: Path, files: int) -> Path:
    """`files` files under `root` (besides git's own), committed."""
    contents = _contents(files)
    for relative, text in contents.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _commit(root)
    return root


def _contents(files: int) -> dict[str, str]:
    contents = {"pyproject.toml": PYPROJECT, "README.md": README}
    modules = max(1, int(files * PYTHON_SHARE * MODULES_PER_PACKAGE / (MODULES_PER_PACKAGE + 1)))
    documented: list[tuple[str, str, int]] = []  # (module, function, factor) with examples
    for index in range(modules):
        package, position = divmod(index, MODULES_PER_PACKAGE)
        module = f"{PROJECT}.block_{package:03d}.rows_{position:02d}"
        path = module.replace(".", "/") + ".py"
        contents[f"{PROJECT}/block_{package:03d}/__init__.py"] = f'"""Block {package} of the orchard."""\n'
        with_examples = index % DOCTEST_EVERY == 0
        contents[path] = _module(index, with_examples)
        if with_examples:
            documented.append((module, f"yield_{index}", index % 7 + 2))
    contents[f"{PROJECT}/__init__.py"] = f'"""{PROJECT}: helpers for orchards."""\n'
    tested = documented[1::2]  # every other documented module has a test that calls it
    for start in range(0, len(tested), MODULES_PER_TEST_FILE):
        contents[f"tests/test_blocks_{start // MODULES_PER_TEST_FILE:03d}.py"] = _test_file(
            tested[start:start + MODULES_PER_TEST_FILE])
    if len(contents) > files:
        raise ValueError(f"{files} files are too few for a project with packages and tests")
    index = 0
    while len(contents) < files:
        contents.update([_other_file(index)])
        index += 1
    return contents


def _module(index: int, with_examples: bool) -> str:
    noun = NOUNS[index % len(NOUNS)]
    factor = index % 7 + 2
    examples = f"\n\n    >>> yield_{index}(3)\n    {3 * factor}\n" if with_examples else "\n"
    return f'''"""Rows of {noun} trees: yields and records (row {index})."""
from __future__ import annotations

TREES_PER_ROW = {index % 40 + 10}


def yield_{index}(trees):
    """The crop of `trees` {noun} trees, in crates.{examples}    """
    return trees * {factor}


def spacing_{index}(width):
    """How many trees fit in a row `width` metres wide."""
    return max(0, int(width // 3))


class {noun.title()}Row{index}:
    """A row of {noun} trees."""

    def __init__(self, trees=TREES_PER_ROW):
        self.trees = trees

    def crop(self):
        """This row's crop, in crates."""
        return yield_{index}(self.trees)
'''


def _test_file(modules: list[tuple[str, str, int]]) -> str:
    imports = "\n".join(f"from {module} import {function}" for module, function, _ in modules)
    tests = "\n\n".join(f"def test_{function}():\n    assert {function}(1) == {factor}\n"
                        for _, function, factor in modules)
    return f"{imports}\n\n\n{tests}"


def _other_file(index: int) -> tuple[str, str]:
    """Documentation, data and configuration, in turn."""
    noun = NOUNS[index % len(NOUNS)]
    kind = index % 4
    if kind == 0:
        return f"docs/guide/{noun}-{index}.md", f"# {noun.title()} rows\n\nRow {index}: prune in winter.\n"
    if kind == 1:
        return f"data/yields/{noun}-{index}.json", json.dumps({"row": index, "tree": noun, "crates": index % 90})
    if kind == 2:
        return f"data/surveys/{noun}-{index}.csv", "row,trees,crates\n" + f"{index},{index % 40},{index % 90}\n"
    return f"config/rows/{noun}-{index}.yaml", f"row: {index}\ntree: {noun}\nirrigation: drip\n"


def _commit(root: Path) -> None:
    """A scratch repository of its own, so the generated tree is a clean checkout at one revision."""
    git = ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run([*git, "init", "--quiet"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "orchard"], check=True)
