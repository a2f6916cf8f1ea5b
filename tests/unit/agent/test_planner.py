from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentledger.agent import (
    DocstringExamplePlanner,
    Example,
    Plan,
    PlanItem,
    inspect_repository,
    snapshot_directory,
)
from agentledger.agent.inventory import module_import_path

from .samples import BRIEF, make_sample_repo, write

pytestmark = pytest.mark.unit


def _plan(repo):
    snapshot = snapshot_directory(repo)
    return DocstringExamplePlanner().plan(inspect_repository(snapshot), snapshot, BRIEF)


def test_plans_one_test_module_per_source_module_from_docstring_examples(tmp_path):
    plan = _plan(make_sample_repo(tmp_path / "repo"))
    assert plan.planner == "docstring-examples"
    assert [(item.target, item.test_path, item.test_name) for item in plan.items] == [
        ("pkg/calc.py::Accumulator.total", "tests/test_calc_generated.py", "test_Accumulator_total"),
        ("pkg/calc.py::add", "tests/test_calc_generated.py", "test_add"),
        ("pkg/calc.py::divide", "tests/test_calc_generated.py", "test_divide"),
    ]
    assert plan.items[1].examples == [
        Example(source="add(2, 3)", expected="5"),
        Example(source="total = add(1, 1)", expected=""),
        Example(source="total * SCALE", expected="20"),
    ]


def test_untested_functions_without_examples_are_skipped_with_a_reason(tmp_path):
    plan = _plan(make_sample_repo(tmp_path / "repo"))
    assert [(skip.target, skip.reason) for skip in plan.skipped] == [
        ("pkg/calc.py::Accumulator", "no docstring examples to turn into tests"),
        ("pkg/calc.py::multiply", "no docstring examples to turn into tests"),
    ]


def test_files_read_are_the_planned_modules_with_their_hashes(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    snapshot = snapshot_directory(repo)
    plan = DocstringExamplePlanner().plan(inspect_repository(snapshot), snapshot, BRIEF)
    assert plan.files_read == {"pkg/calc.py": snapshot.files["pkg/calc.py"]}
    assert plan.revision == snapshot.revision


def test_the_same_input_gives_the_same_plan_digest(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    first, second = _plan(repo), _plan(repo)
    assert first.digest() == second.digest()
    assert first.digest().startswith("sha256:")


def test_changing_a_source_file_changes_the_plan_digest(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    before = _plan(repo)
    source = (repo / "pkg/calc.py").read_text()
    write(repo, "pkg/calc.py", source.replace("return a / b", "return a // b"))
    after = _plan(repo)
    assert after.items == before.items  # the examples are unchanged...
    assert after.files_read != before.files_read  # ...but the evidence they came from is not
    assert after.digest() != before.digest()


def test_the_digest_covers_every_part_of_the_plan(tmp_path):
    plan = _plan(make_sample_repo(tmp_path / "repo"))
    item = plan.items[0]
    variants = [
        plan.model_copy(update={"revision": "other"}),
        plan.model_copy(update={"files_read": {}}),
        plan.model_copy(update={"skipped": []}),
        plan.model_copy(update={"items": [item.model_copy(update={"examples": item.examples[:1]})]}),
        plan.model_copy(update={"items": [item.model_copy(update={"rationale": "other"})]}),
    ]
    digests = {plan.digest(), *(variant.digest() for variant in variants)}
    assert len(digests) == len(variants) + 1


def test_modules_whose_test_files_would_collide_each_get_a_file_of_their_own(tmp_path):
    repo = tmp_path / "repo"
    example = 'def f():\n    """\n    >>> f()\n    1\n    """\n    return 1\n'
    write(repo, "other/calc.py", example)
    write(repo, "pkg/calc.py", example)
    write(repo, "pkg_calc.py", example)
    plan = _plan(repo)
    assert [(item.target, item.test_path) for item in plan.items] == [
        ("other/calc.py::f", "tests/test_calc_generated.py"),  # named after the module
        ("pkg/calc.py::f", "tests/test_pkg_calc_generated.py"),  # its dotted path, where that is taken
        ("pkg_calc.py::f", "tests/test_pkg_calc_generated_2.py")]


def test_generated_tests_go_where_the_project_keeps_its_tests(tmp_path):
    repo = tmp_path / "repo"
    write(repo, "shapes.py", 'def f():\n    """\n    >>> f()\n    1\n    """\n    return 1\n')
    assert {item.test_path for item in _plan(repo).items} == {"tests/test_shapes_generated.py"}
    write(repo, "test/test_shapes.py", "def test_nothing():\n    pass\n")
    assert {item.test_path for item in _plan(repo).items} == {"test/test_shapes_generated.py"}
    write(repo, "pytest.ini", "[pytest]\ntestpaths = checks other\n")
    plan = _plan(repo)
    assert {item.test_path for item in plan.items} == {"checks/test_shapes_generated.py"}
    assert "pytest.ini" in plan.files_read  # a change to where tests go makes the plan stale


def test_generated_tests_go_beside_the_projects_own_tests_of_the_module(tmp_path):
    repo = tmp_path / "repo"
    write(repo, "packaging/_elffile.py", 'def f():\n    """\n    >>> f()\n    1\n    """\n    return 1\n')
    write(repo, "tests/unit/test_elffile.py", "def test_nothing():\n    pass\n")
    assert {item.test_path for item in _plan(repo).items} == {"tests/unit/test_elffile_generated.py"}


def test_a_src_layout_module_is_named_without_src(tmp_path):
    repo = tmp_path / "repo"
    write(repo, "src/shapes/area.py", 'def f():\n    """\n    >>> f()\n    1\n    """\n    return 1\n')
    write(repo, "src/shapes/__init__.py", "")
    assert {item.test_path for item in _plan(repo).items} == {"tests/test_area_generated.py"}


def test_modules_that_cannot_be_imported_by_name_are_skipped(tmp_path):
    repo = tmp_path / "repo"
    write(repo, "my-scripts/run-me.py", 'def f():\n    """\n    >>> f()\n    1\n    """\n    return 1\n')
    plan = _plan(repo)
    assert plan.items == []
    assert plan.skipped[0].reason == "module path is not importable by name"


@pytest.mark.parametrize(
    ("path", "expected"),
    [("pkg/mod.py", "pkg.mod"), ("mod.py", "mod"), ("pkg/__init__.py", "pkg"),
     ("my-scripts/mod.py", None), ("__init__.py", None), ("notes.txt", None), ("src/pkg/mod.py", "pkg.mod"),
     ("src/mod.py", "mod"), ("src.py", "src")],
)
def test_module_import_path(path, expected):
    assert module_import_path(path) == expected


@pytest.mark.parametrize(
    ("target", "test_path"),
    [("pkg/mod.py::f", "../outside.py"), ("pkg/mod.py::f", "/abs/test_x.py"),
     ("pkg/mod.py::f", "tests/data.txt"), ("pkg/mod.py", "tests/test_x.py"),
     ("pkg/mod.py::Class..method", "tests/test_x.py"), ("pkg/mod.py::f-g", "tests/test_x.py")],
)
def test_a_plan_refuses_items_the_executor_could_not_write_safely(target, test_path):
    with pytest.raises(ValidationError):
        Plan(
            planner="custom", revision="r", skipped=[], files_read={},
            items=[PlanItem(target=target, test_path=test_path, rationale="", examples=[])],
        )


def test_a_plan_refuses_two_functions_of_one_name_in_one_test_file():
    items = [
        PlanItem(target=f"{module}::f", test_path="t/test_x.py", rationale="", examples=[])
        for module in ("a.py", "b.py")
    ]
    with pytest.raises(ValidationError, match="two targets would be tested by test_f in t/test_x.py"):
        Plan(planner="custom", revision="r", skipped=[], files_read={}, items=items)


def test_a_plan_takes_methods_and_the_module_docstring_as_targets():
    items = [PlanItem(target=target, test_path="t/test_x.py", rationale="", examples=[])
             for target in ("pkg/mod.py::", "pkg/mod.py::Class.method", "pkg/mod.py::Class")]
    plan = Plan(planner="custom", revision="r", skipped=[], files_read={}, items=items)
    assert [item.test_name for item in plan.items] == ["test_module_docstring", "test_Class_method", "test_Class"]


def test_the_module_docstring_is_a_target_of_its_own(tmp_path):
    repo = tmp_path / "repo"
    write(repo, "pkg/__init__.py", '"""The package.\n\n>>> 1 + 1\n2\n"""\n')
    plan = _plan(repo)
    assert [item.target for item in plan.items] == ["pkg/__init__.py::"]
    assert plan.items[0].rationale.startswith("module pkg/__init__.py (line 1)")


def test_an_object_whose_examples_are_all_skipped_is_not_planned(tmp_path):
    repo = tmp_path / "repo"
    write(repo, "slow.py",
          'def run_everything():\n    """\n    >>> run_everything()  # doctest: +SKIP\n    True\n    """\n')
    write(repo, "half.py", 'def f():\n    """\n    >>> f()  # doctest: +SKIP\n    1\n    >>> 2\n    2\n    """\n')
    plan = _plan(repo)
    assert [(skip.target, skip.reason) for skip in plan.skipped] == [
        ("slow.py::run_everything", "every docstring example is marked +SKIP")]
    assert [(item.target, [e.source for e in item.examples]) for item in plan.items] == [("half.py::f", ["2"])]


@pytest.mark.parametrize(("name", "content"), [
    ("pyproject.toml", '[tool.pytest.ini_options]\ndoctest_optionflags = "NORMALIZE_WHITESPACE ELLIPSIS NUMBER"\n'),
    ("pyproject.toml", '[tool.pytest.ini_options]\ndoctest_optionflags = ["NORMALIZE_WHITESPACE", "ELLIPSIS"]\n'),
    ("setup.cfg", "[tool:pytest]\ndoctest_optionflags = NORMALIZE_WHITESPACE ELLIPSIS\n"),
    ("tox.ini", "[pytest]\ndoctest_optionflags = NORMALIZE_WHITESPACE ELLIPSIS\n"),
    ("pytest.ini", "[pytest]\ndoctest_optionflags = NORMALIZE_WHITESPACE ELLIPSIS\n"),
])
def test_the_projects_doctest_option_flags_are_read_where_pytest_reads_them(tmp_path, name, content):
    repo = make_sample_repo(tmp_path / "repo")
    write(repo, name, content)
    plan = _plan(repo)
    assert plan.option_flags == ["ELLIPSIS", "NORMALIZE_WHITESPACE"]  # pytest's own NUMBER means nothing here
    assert name in plan.files_read  # editing the configuration invalidates the plan


def test_pytest_ini_wins_over_pyproject_and_a_pyproject_without_pytest_settings_is_passed_over(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    write(repo, "pyproject.toml", "[project]\nname = 'sample'\n")
    write(repo, "setup.cfg", "[tool:pytest]\ndoctest_optionflags = ELLIPSIS\n")
    assert _plan(repo).option_flags == ["ELLIPSIS"]
    write(repo, "pytest.ini", "[pytest]\ndoctest_optionflags = IGNORE_EXCEPTION_DETAIL\n")
    assert _plan(repo).option_flags == ["IGNORE_EXCEPTION_DETAIL"]


def test_a_configuration_file_that_is_a_link_gives_no_flags_and_is_not_read(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    (repo / "pytest.ini").symlink_to("/dev/zero")  # read in full, it would never end
    write(repo, "setup.cfg", "[tool:pytest]\ndoctest_optionflags = ELLIPSIS\n")
    plan = _plan(repo)
    assert plan.option_flags == ["ELLIPSIS"] and "pytest.ini" not in plan.files_read
