from __future__ import annotations

import pytest

from agentledger.agent import inspect_repository, snapshot_directory

from .samples import make_sample_repo, write

pytestmark = pytest.mark.unit


@pytest.fixture
def inventory(tmp_path):
    return inspect_repository(snapshot_directory(make_sample_repo(tmp_path / "repo")))


def test_lists_the_module_its_public_functions_classes_and_methods_with_their_examples(inventory):
    calc = {module.path: module for module in inventory.modules}["pkg/calc.py"]
    assert [(o.name, o.kind, o.line, o.examples) for o in calc.objects] == [
        ("", "module", 1, 0),
        ("add", "function", 6, 3),
        ("divide", "function", 18, 1),
        ("subtract", "function", 28, 1),
        ("multiply", "function", 36, 0),
        ("Accumulator", "class", 48, 0),
        ("Accumulator.total", "method", 49, 1),
    ]
    assert [module.path for module in inventory.modules] == ["pkg/__init__.py", "pkg/calc.py"]
    assert inventory.documented == 4


def test_untested_lists_what_no_existing_test_imports_or_calls(inventory):
    assert inventory.untested == ["pkg/calc.py::add", "pkg/calc.py::divide", "pkg/calc.py::multiply",
                                  "pkg/calc.py::Accumulator", "pkg/calc.py::Accumulator.total"]


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


@pytest.mark.parametrize(("test_source", "tested"), [
    ("from pkg.calc import add\n", {"add"}),
    ("import pkg.calc as c\n\nc.add(1, 2)\n", {"add"}),
    ("import pkg.calc\n\npkg.calc.add(1, 2)\n", {"add"}),
    ("import importlib\n\nc = importlib.import_module('pkg.calc')\nc.add(1, 2)\n", {"add"}),  # as generated
    ("import importlib\n\nc = importlib.import_module('pkg.other')\nc.add(1, 2)\n", set()),
    ("from pkg import calc\n\ncalc.Box().size()\n", {"Box", "Box.size"}),
    ("from pkg import add\n", {"add"}),  # re-exported by the package
    ("from pkg.calc import Box\n", {"Box"}),  # the class is used, its method never called
    ("def add(a, b):\n    return a + b\n\nadd(1, 2)\n", set()),  # a local function of the same name
    ("from other import add\n", set()),
    ("x = 'add'\n", set()),
])
def test_tested_means_imported_or_called_through_the_tests_imports(tmp_path, test_source, tested):
    repo = tmp_path / "repo"
    write(repo, "pkg/__init__.py", "from pkg.calc import add\n")
    write(repo, "pkg/calc.py",
          "def add(a, b):\n    return a + b\n\n\nclass Box:\n    def size(self):\n        return 1\n")
    write(repo, "tests/test_calc.py", test_source)
    inventory = inspect_repository(snapshot_directory(repo))
    calc = {module.path: module for module in inventory.modules}["pkg/calc.py"]
    assert {obj.name for obj in calc.objects if obj.tested} == tested


def test_a_src_layout_module_is_imported_without_src(tmp_path):
    repo = tmp_path / "repo"
    write(repo, "src/pkg/__init__.py", "")
    write(repo, "src/pkg/calc.py", "def add(a, b):\n    return a + b\n")
    write(repo, "tests/test_calc.py", "from pkg.calc import add\n")
    assert inspect_repository(snapshot_directory(repo)).untested == []


def test_a_name_only_in_a_test_comment_does_not_count(tmp_path):
    repo = tmp_path / "repo"
    write(repo, "calc.py", "def add(a, b):\n    return a + b\n")
    write(repo, "tests/test_other.py", "# add: TODO\ndef test_nothing():\n    pass\n")
    assert inspect_repository(snapshot_directory(repo)).untested == ["calc.py::add"]


def test_inspecting_again_after_an_edit_describes_the_edited_content(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    before = inspect_repository(snapshot_directory(repo))
    write(repo, "pkg/extra.py",
          '"""Extra."""\n\n\ndef triple(x):\n    """\n    >>> triple(2)\n    6\n    """\n    return 3 * x\n')
    after = inspect_repository(snapshot_directory(repo))
    assert "pkg/extra.py::triple" in after.untested and "pkg/extra.py::triple" not in before.untested
    write(repo, "pkg/extra.py", '"""Extra, now without functions."""\n')
    assert "pkg/extra.py::triple" not in inspect_repository(snapshot_directory(repo)).untested


def test_the_same_content_as_a_test_and_as_a_module_is_analysed_for_each_role(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    user = "from pkg.calc import add\n\n\ndef use():\n    return add(1, 2)\n"
    write(repo, "pkg/user.py", user)  # a module that calls add: not a test
    assert "pkg/calc.py::add" in inspect_repository(snapshot_directory(repo)).untested
    write(repo, "tests/test_user.py", user)  # the same bytes as a test file: add is tested now
    assert "pkg/calc.py::add" not in inspect_repository(snapshot_directory(repo)).untested


def test_the_project_s_tooling_is_not_library_code_to_write_tests_for(tmp_path):
    repo = tmp_path / "repo"
    for path in ("setup.py", "versioneer.py", "noxfile.py", "pkg/__main__.py", "docs/conf.py",
                 "examples/demo.py", "benchmarks/bench.py", "scripts/release.py",
                 # python-slugify's frozen copy the suite imports, and vendored code at any depth
                 "tools/legacy_reference.py", "pkg/_vendor/six.py", "fixtures/data.py"):
        write(repo, path, "def run(argv):\n    return argv\n")
    write(repo, "pkg/__init__.py", "def add(a, b):\n    return a + b\n")
    inventory = inspect_repository(snapshot_directory(repo))
    assert [module.path for module in inventory.modules] == ["pkg/__init__.py"]
    assert inventory.untested == ["pkg/__init__.py::add"]


def test_a_property_a_test_reads_is_tested_like_a_method_it_calls(tmp_path):
    repo = tmp_path / "repo"
    write(repo, "pkg/version.py", "class Version:\n    def __init__(self, text):\n        self.text = text\n\n"
                                  "    @property\n    def major(self):\n        return int(self.text.split('.')[0])\n\n"
                                  "    @property\n    def minor(self):\n        return int(self.text.split('.')[1])\n")
    write(repo, "tests/test_version.py", "def test_major():\n    from pkg.version import Version\n\n"
                                         "    assert Version('2.1.0').major == 2\n")

    untested = inspect_repository(snapshot_directory(repo)).untested

    assert "pkg/version.py::Version.major" not in untested and "pkg/version.py::Version" not in untested
    assert "pkg/version.py::Version.minor" in untested
