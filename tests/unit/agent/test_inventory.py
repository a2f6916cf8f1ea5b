from __future__ import annotations

import pytest

from agentledger.agent import inspect_repository, snapshot_directory

from .samples import make_sample_repo, write

pytestmark = pytest.mark.unit


@pytest.fixture
def inventory(tmp_path):
    return inspect_repository(snapshot_directory(make_sample_repo(tmp_path / "repo")))


def test_lists_public_top_level_functions_of_source_modules(inventory):
    calc = {module.path: module for module in inventory.modules}["pkg/calc.py"]
    assert [(f.name, f.line, f.has_examples) for f in calc.functions] == [
        ("add", 6, True),
        ("divide", 18, True),
        ("subtract", 28, True),
        ("multiply", 36, False),
    ]
    assert [module.path for module in inventory.modules] == ["pkg/__init__.py", "pkg/calc.py"]


def test_untested_lists_functions_no_existing_test_mentions(inventory):
    assert inventory.untested == ["pkg/calc.py::add", "pkg/calc.py::divide", "pkg/calc.py::multiply"]


def test_a_file_that_does_not_parse_is_reported_not_fatal(inventory):
    assert list(inventory.unparseable) == ["pkg/broken.py"]
    assert "SyntaxError" in inventory.unparseable["pkg/broken.py"]
    assert "line 1" in inventory.unparseable["pkg/broken.py"]


def test_records_the_revision_and_hashes_of_what_it_parsed(tmp_path):
    snapshot = snapshot_directory(make_sample_repo(tmp_path / "repo"))
    inventory = inspect_repository(snapshot)
    assert inventory.revision == snapshot.revision
    assert inventory.files == {path: sha for path, sha in snapshot.files.items() if path.endswith(".py")}


@pytest.mark.parametrize(
    "test_file",
    ["test_calc.py", "pkg/calc_test.py", "tests/helpers.py", "conftest.py", "pkg/tests/deep/check.py"],
)
def test_any_test_file_convention_counts_as_testing_a_function(tmp_path, test_file):
    repo = tmp_path / "repo"
    write(repo, "calc.py", "def add(a, b):\n    return a + b\n")
    write(repo, test_file, "import calc\n\nassert calc.add(1, 1) == 2\n")
    inventory = inspect_repository(snapshot_directory(repo))
    assert inventory.untested == []
    assert [module.path for module in inventory.modules] == ["calc.py"]


def test_a_name_only_in_a_test_comment_does_not_count(tmp_path):
    repo = tmp_path / "repo"
    write(repo, "calc.py", "def add(a, b):\n    return a + b\n")
    write(repo, "tests/test_other.py", "# add: TODO\ndef test_nothing():\n    pass\n")
    assert inspect_repository(snapshot_directory(repo)).untested == ["calc.py::add"]
