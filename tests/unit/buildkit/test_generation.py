"""The generation build's filters, on what pytest and coverage.py report (no process is run): a
candidate is kept only if it builds, passes every one of five runs alone and five with the suite,
and covers a line or branch nothing before it covers; Pynguin's xfail tests become findings."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentledger.buildkit.generation import (
    RUNS,
    Candidate,
    Target,
    collected_as,
    context_owner,
    join_test_file,
    junit_outcomes,
    keep_coverage_gains,
    last_error,
    lines_by_candidate,
    outcome_of,
    project_test_style,
    pynguin_candidates,
    repeated_in_one_session,
    repeated_runs,
    split_test_file,
)

# A module as Pynguin writes it, one exception-revealing test among them. Kept as data: its
# xfail marker belongs to Pynguin's output, not to this project's suite.
PYNGUIN_OUTPUT = (Path(__file__).parent / "pynguin_output.txt").read_text()
TARGET = Target(module="shapes.rect", path="shapes/rect.py", test_path="tests/test_shapes_rect_generated.py",
                names=["Rect", "classify"])


def test_pynguin_tests_are_named_after_what_they_call_and_its_xfail_tests_become_findings() -> None:
    test_file, findings = pynguin_candidates(PYNGUIN_OUTPUT, TARGET, {})
    assert [name for name, _ in test_file.tests] == ["test_rect_area", "test_classify_2", "test_classify_3"]
    assert "rect_ = importlib.import_module('shapes.rect')" in test_file.header
    assert "sys.modules" not in test_file.header
    [finding] = findings
    assert (finding.module, finding.test) == ("shapes.rect", "test_classify")
    assert "xfail" not in finding.source and "rect_.classify(n=None)" in finding.source


def test_a_written_module_imports_only_what_its_tests_use() -> None:
    test_file, _ = pynguin_candidates(PYNGUIN_OUTPUT, TARGET, {})

    written = join_test_file(test_file.header, [source for _, source in test_file.tests])

    imports = [line for line in written.splitlines() if line.startswith(("import", "from"))]
    assert imports == ["import importlib"]  # not pytest (no test uses it), not sys, not shapes
    raising = "def test_none():\n    with pytest.raises(TypeError):\n        rect_.classify(n=None)"
    assert "import pytest" in join_test_file(test_file.header, [raising])


def test_an_import_a_fixture_or_the_rest_of_the_header_names_is_kept() -> None:
    header = ("from __future__ import annotations\nimport os, json\nfrom calc import add\n"
              "from .fixtures import sample\nimport textwrap\nLIMIT = textwrap.dedent('x')\n")

    written = join_test_file(header, ["def test_add(sample):\n    assert add(1, sample) == 2"])

    assert written.startswith("from __future__ import annotations\nfrom calc import add\nfrom .fixtures import sample\n"
                              "import textwrap\n")
    assert "import os" not in written


@pytest.mark.parametrize("module", ["slugify", "slugify.slugify"])
def test_the_written_header_binds_the_module_under_test_even_where_its_package_shadows_it(
        tmp_path: Path, module: str) -> None:
    # python-slugify's layout: the package re-exports a function named like its module, so
    # `import slugify.slugify as slugify_` would bind the function.
    (tmp_path / "slugify").mkdir()
    (tmp_path / "slugify" / "__init__.py").write_text("from .slugify import *\n")
    (tmp_path / "slugify" / "slugify.py").write_text("__all__ = ['slugify']\n\ndef slugify(text):\n    return text\n")
    alias = module.rpartition(".")[2] + "_"
    output = PYNGUIN_OUTPUT.replace("shapes.rect", module).replace("rect_", alias)
    target = Target(module=module, path=module.replace(".", "/") + ".py", test_path="tests/test_g.py", names=[])
    test_file, _ = pynguin_candidates(output, target, {})

    probe = f"def test_probe():\n    print(isinstance({alias}, types.ModuleType), {alias}.__name__)"
    written = join_test_file(test_file.header + "import types\n", [probe]) + "test_probe()\n"
    shown = subprocess.run([sys.executable, "-c", written], cwd=tmp_path, capture_output=True, text=True,
                           check=True, env={})
    assert shown.stdout.split() == ["True", module]


def test_names_stay_unique_across_two_searches_of_one_module() -> None:
    used: dict[str, int] = {}
    first, _ = pynguin_candidates(PYNGUIN_OUTPUT, TARGET, used)
    second, _ = pynguin_candidates(PYNGUIN_OUTPUT, TARGET, used)
    names = [name for name, _ in first.tests + second.tests]
    assert len(names) == len(set(names)) and "test_rect_area_2" in names


def test_a_written_module_splits_into_its_shared_header_and_one_candidate_per_test() -> None:
    text = ("import pytest\n\nfrom calc import add\n\nCASES = [(1, 2, 3)]\n\n\n"
            "@pytest.mark.parametrize(('a', 'b', 'c'), CASES)\ndef test_add(a, b, c):\n    assert add(a, b) == c\n\n\n"
            "class TestAdd:\n    def test_zero(self):\n        assert add(0, 0) == 0\n\n\n"
            "def helper():\n    return 1\n")
    test_file = split_test_file("tests/test_calc_generated.py", text)
    assert [name for name, _ in test_file.tests] == ["test_add", "TestAdd"]
    assert test_file.tests[0][1].startswith("@pytest.mark.parametrize")  # decorators stay with their test
    assert "CASES = [(1, 2, 3)]" in test_file.header and "def helper" in test_file.header


def _candidate(name: str, path: str = "tests/test_calc_generated.py") -> Candidate:
    return Candidate(test_path=path, name=name, source=f"def {name}(): ...")


def test_a_candidate_is_collected_by_its_own_node_ids_only() -> None:
    add = _candidate("test_add")
    assert collected_as(add, "tests/test_calc_generated.py::test_add")
    assert collected_as(add, "tests/test_calc_generated.py::test_add[1-2-3]")
    assert not collected_as(add, "tests/test_calc_generated.py::test_add_more")
    assert collected_as(_candidate("TestAdd"), "tests/test_calc_generated.py::TestAdd::test_zero")


def test_one_failure_in_five_runs_drops_a_candidate_as_flaky_with_the_run_it_failed() -> None:
    steady, flaky, skipped = _candidate("test_steady"), _candidate("test_flaky"), _candidate("test_skipped")
    classname = "tests.test_calc_generated"

    def run(number: int) -> dict[tuple[str, str], list[str]]:
        return {(classname, "test_steady"): ["passed"],
                (classname, "test_flaky"): ["failed" if number == 3 else "passed"],
                (classname, "test_skipped"): ["skipped"]}

    repeated_runs([steady, flaky, skipped], "pass_alone", run)
    assert steady.dropped_by is None and steady.runs["pass_alone"] == RUNS
    assert (flaky.dropped_by, flaky.detail) == ("pass_alone", f"failed in run 3 of {RUNS}")
    assert flaky.runs["pass_alone"] == 2
    assert (skipped.dropped_by, skipped.detail) == ("pass_alone", f"skipped in run 1 of {RUNS}")


def test_five_runs_in_one_session_drop_a_candidate_at_the_run_one_of_its_cases_failed() -> None:
    """Each file collected five times over: a parametrized test's two cases come five times, in order."""
    classname = "tests.test_calc_generated"
    steady, flaky, short = _candidate("test_steady"), _candidate("test_flaky"), _candidate("test_short")
    outcomes = {(classname, "test_steady"): ["passed", "passed"] * RUNS,
                (classname, "test_flaky"): ["passed", "passed"] * 3 + ["passed", "failed"] + ["passed", "passed"],
                (classname, "test_short"): ["passed"] * (RUNS - 1)}
    repeated_in_one_session([steady, flaky, short], "pass_alone", outcomes)
    assert (steady.dropped_by, steady.runs["pass_alone"]) == (None, RUNS)
    assert (flaky.dropped_by, flaky.detail, flaky.runs["pass_alone"]) == ("pass_alone", f"failed in run 4 of {RUNS}", 3)
    assert short.dropped_by == "pass_alone" and "not the same cases" in short.detail


def test_a_candidate_the_suite_run_did_not_run_is_dropped() -> None:
    missing = _candidate("test_missing")
    repeated_runs([missing], "pass_with_suite", lambda number: {})
    assert (missing.dropped_by, missing.detail) == ("pass_with_suite", f"was not run in run 1 of {RUNS}")


def test_parametrized_and_class_cases_pass_only_when_every_case_does() -> None:
    classname = "tests.test_calc_generated"
    outcomes = {(classname, "test_add"): ["passed", "failed"], (f"{classname}.TestAdd", "test_zero"): ["passed"]}
    assert outcome_of(_candidate("test_add"), outcomes) == "failed"
    assert outcome_of(_candidate("TestAdd"), outcomes) == "passed"


def test_junit_reports_are_read_case_by_case_in_the_order_they_ran(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text('<testsuites><testsuite name="pytest">'
                      '<testcase classname="tests.t" name="test_p[1]"/>'
                      '<testcase classname="tests.t" name="test_p[2]">'
                      '<failure message="AssertionError: no"/></testcase>'
                      '<testcase classname="tests.t" name="test_s"><skipped/></testcase>'
                      '<testcase classname="tests.t" name="test_ok"/></testsuite></testsuites>')
    outcomes = junit_outcomes(report)
    assert outcomes == {("tests.t", "test_p"): ["passed", "failed"], ("tests.t", "test_s"): ["skipped"],
                        ("tests.t", "test_ok"): ["passed"]}
    assert outcome_of(Candidate("tests/t.py", "test_p", ""), outcomes) == "failed"
    assert junit_outcomes(tmp_path / "missing.xml") == {}
    (tmp_path / "broken.xml").write_text("<testsuites")
    assert junit_outcomes(tmp_path / "broken.xml") == {}


MODULE = "/build/repository/calc.py"


def _report(executed: list[int], branches: list[list[int]]) -> dict:
    return {"files": {MODULE: {"statements": [1, 2, 3, 4, 5, 6], "executed": executed,
                               "branches": [[2, 3], [2, 5]], "executed_branches": branches}}, "contexts": {}}


def test_coverage_keeps_in_order_what_adds_a_line_or_a_branch_the_suite_and_earlier_kept_tests_do_not() -> None:
    new_line, same_again, new_branch, nothing_new = (_candidate(name) for name in (
        "test_new_line", "test_same_again", "test_new_branch", "test_nothing_new"))
    baseline = _report(executed=[1, 2, 3], branches=[[2, 3]])
    alone = {"files": {}, "contexts": {
        "test_calc_generated.test_new_line": {MODULE: {"lines": [1, 2, 4], "branches": []}},
        "test_calc_generated.test_same_again": {MODULE: {"lines": [4], "branches": []}},
        "test_calc_generated.test_new_branch": {MODULE: {"lines": [2], "branches": [[2, 5]]}},
        "test_calc_generated.test_nothing_new": {MODULE: {"lines": [1, 2, 3], "branches": [[2, 3]]}},
    }}
    candidates = [new_line, same_again, new_branch, nothing_new]
    keep_coverage_gains(candidates, baseline, lines_by_candidate(candidates, alone, _everywhere), _everywhere)
    assert [c.dropped_by for c in candidates] == [None, "coverage", None, "coverage"]
    assert new_line.gain == {"lines": 1, "branches": 0} and new_branch.gain == {"lines": 0, "branches": 1}


def test_a_test_of_lines_the_suite_runs_passes_coverage_where_a_mutant_the_suite_leaves_alive_sits() -> None:
    """The suite runs line 3 but nothing checks what it does: a test that asserts it is the one
    worth keeping, so the mutation filter, not coverage, judges it."""
    asserts_line_3, runs_line_1 = _candidate("test_asserts_line_3"), _candidate("test_runs_line_1")
    alone = {"files": {}, "contexts": {
        "test_calc_generated.test_asserts_line_3": {MODULE: {"lines": [3], "branches": []}},
        "test_calc_generated.test_runs_line_1": {MODULE: {"lines": [1], "branches": []}},
    }}
    candidates = [asserts_line_3, runs_line_1]
    keep_coverage_gains(candidates, _report(executed=[1, 2, 3], branches=[]),
                        lines_by_candidate(candidates, alone, _everywhere), _everywhere,
                        alive_mutant_lines={(MODULE, 3)})
    assert [c.dropped_by for c in candidates] == [None, "coverage"]


def _everywhere(path: str) -> bool:
    return True


def test_code_outside_the_project_does_not_count_as_a_gain() -> None:
    candidate = _candidate("test_helper")
    outside = {"/usr/lib/x.py": {"lines": [1], "branches": []}}
    alone = {"files": {}, "contexts": {"test_calc_generated.test_helper": outside}}
    def measured(path: str) -> bool:
        return path == MODULE

    keep_coverage_gains([candidate], _report([], []), lines_by_candidate([candidate], alone, measured), measured)
    assert candidate.dropped_by == "coverage"


def test_a_coverage_context_belongs_to_the_candidate_of_its_file_and_name() -> None:
    other = _candidate("test_add", "tests/test_other_generated.py")
    candidates = [_candidate("test_add"), _candidate("TestAdd"), other]
    assert context_owner("test_calc_generated.test_add", candidates) is candidates[0]
    assert context_owner("tests.test_calc_generated.TestAdd.test_zero", candidates) is candidates[1]
    assert context_owner("test_other_generated.test_add", candidates) is candidates[2]
    assert context_owner("test_existing.test_add", candidates) is None


def test_the_deployment_may_ask_for_fewer_or_more_runs_in_a_row() -> None:
    ran: list[int] = []
    steady = _candidate("test_steady")

    def run(number: int) -> dict[tuple[str, str], list[str]]:
        ran.append(number)
        return {("tests.test_calc_generated", "test_steady"): ["passed"]}

    repeated_runs([steady], "pass_with_suite", run, runs=2)
    assert ran == [1, 2] and steady.runs["pass_with_suite"] == 2


def test_the_last_error_a_crashed_writer_printed_is_its_message_even_inside_rich_boxes() -> None:
    printed = (
        "pynguin: parse (seed 1, branch coverage, 30 s)\n"
        "                    │ ❱  158 │   │   raise RuntimeError(msg)  │\n"
        "                    RuntimeError: Failed to compute stacksize,  \n"
        "                    │    293 │   except (Exception, TestExecu │\n"
        "│ pynguin.instrumentation.InstrumentationError: the block 0 is not part of this bytecode │\n"
        "[agentledger: exited 1 in 3.09 s]\n"
    )

    assert last_error(printed) == ("pynguin.instrumentation.InstrumentationError: "
                                   "the block 0 is not part of this bytecode")
    assert last_error(printed.split("│    293")[0]) == "RuntimeError: Failed to compute stacksize,"
    assert last_error("collected 0 items\n[agentledger: exited 5 in 1 s]\n") == ""


PRICING = '''\
def shipping_cost(weight_kg, international):
    if weight_kg < 0:
        raise ValueError("weight cannot be negative")
    if weight_kg == 0:
        return None
    return round((5.0 + 1.5 * weight_kg) * (2 if international else 1), 2)
'''
PRICING_TESTS_BY_PYNGUIN = '''\
import pytest
import sys
import pricing

pricing_ = sys.modules["pricing"]


def test_0():
    var_0 = pricing_.shipping_cost(weight_kg=1023.37, international=True)
    assert var_0 == pytest.approx(3080.11, abs=0.01, rel=0.01)
    assert var_0 > 3000
    assert pricing_.shipping_cost(weight_kg=0, international=False) is None


def test_1():
    with pytest.raises(ValueError):
        pricing_.shipping_cost(weight_kg=-2.5, international=False)
    assert not pricing_.shipping_cost(weight_kg=0, international=True)
'''


def test_in_a_unittest_project_pynguins_tests_become_test_cases_that_still_catch_what_they_caught(
        tmp_path: Path) -> None:
    target = Target(module="pricing", path="pricing.py", test_path="tests/test_pricing_generated.py",
                    names=["shipping_cost"])
    test_file, _ = pynguin_candidates(PRICING_TESTS_BY_PYNGUIN, target, {}, "unittest")
    written = join_test_file(test_file.header, [source for _, source in test_file.tests])

    assert [name for name, _ in test_file.tests] == ["TestShippingCost", "TestShippingCost2"]
    assert "import pytest" not in written and "pytest." not in written and "import unittest" in written
    assert "class TestShippingCost(unittest.TestCase):\n\n    def test_shipping_cost(self):" in written
    assert "self.assertAlmostEqual(var_0, 3080.11, delta=max(0.01, 0.01 * abs(3080.11)))" in written
    assert "self.assertGreater(var_0, 3000)" in written and "self.assertIsNone(" in written
    assert "with self.assertRaises(ValueError):" in written and "self.assertFalse(" in written

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_pricing_generated.py").write_text(written)

    def unittest_passes(module: str) -> bool:
        (tmp_path / "pricing.py").write_text(module)
        run = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"],
                             cwd=tmp_path, capture_output=True, text=True, check=False,
                             env={"PYTHONDONTWRITEBYTECODE": "1"})  # a bug of the same size, in the same second
        return run.returncode == 0 and "Ran 2 tests" in run.stderr

    assert unittest_passes(PRICING)  # the project's own runner
    for bug in (("1.5 *", "2.5 *"), ("< 0", "< -10"), ("return None", "return 0.0"), ("2 if", "3 if")):
        assert not unittest_passes(PRICING.replace(*bug)), bug


@pytest.mark.parametrize(("files", "style"), [
    ({"tests/test_a.py": "import unittest\n\nclass TestA(unittest.TestCase):\n    pass\n"}, "unittest"),
    ({"test.py": "from unittest import TestCase\n\nclass T(TestCase):\n    pass\n"}, "unittest"),  # slugify's
    ({"tests/test_a.py": "import unittest\n\nclass TestA(unittest.TestCase):\n    pass\n",
      "tests/test_b.py": "import pytest\n"}, "pytest"),  # mixed: pytest runs both
    ({"tests/test_a.py": "def test_a():\n    assert True\n"}, "pytest"),
    ({}, "pytest"),
    ({".venv/lib/test_x.py": "import unittest\n\nclass T(unittest.TestCase):\n    pass\n"}, "pytest"),
    ({"tests/test_written.py": "import unittest\n\nclass T(unittest.TestCase):\n    pass\n"}, "pytest"),  # a candidate
])
def test_the_projects_test_style_is_read_from_its_own_test_modules(tmp_path: Path, files: dict[str, str],
                                                                    style: str) -> None:
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    assert project_test_style(tmp_path, frozenset({"tests/test_written.py"})) == style
