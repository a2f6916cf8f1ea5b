"""Mutation analysis, the fourth filter: mutmut's mutants of a module named and placed by line, the
project's pytest running them one forked child each (the plugin, on a project made here), and the
kit's decisions on what comes back: a module the suite already kills everywhere gets no test, and
a candidate is kept only for a kill no test before it makes."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import mutmut

from agentledger.buildkit import generation
from agentledger.buildkit.mutation import ModuleMutants, Mutant, attribute_kills, candidate_plan_groups

if TYPE_CHECKING:
    import pytest

# The kit's own scripts, as the build finds them: files in its site directory, not a package.
SITE = Path(generation.__file__).parent / "site"
_spec = importlib.util.spec_from_file_location("agentledger_mutants", SITE / "agentledger_mutants.py")
assert _spec is not None and _spec.loader is not None
agentledger_mutants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(agentledger_mutants)
CALC = '''\
def clamp(value, low, high):
    if value < low:
        return low
    if value > high:
        return high
    return value


def spin(n):
    while n != 0:
        n -= 1
    return n


class Account:
    def withdraw(self, balance, amount):
        if amount > balance:
            raise ValueError("insufficient funds")
        return balance - amount
'''
SUITE = '''\
from calc import clamp, Account, spin


def test_clamp_low():
    assert clamp(-5, 0, 10) == 0


def test_withdraw_runs():
    Account().withdraw(10, 3)


def test_spin():
    assert spin(3) == 0
'''


def test_the_kit_names_the_plugin_and_its_plan_variable_as_the_plugin_reads_them() -> None:
    """The plugin runs in the project's interpreter and cannot import the kit: its copy of the name
    must agree with the kit's."""
    spec = importlib.util.spec_from_file_location("plugin", SITE / f"{generation.MUTATION_PLUGIN}.py")
    assert spec is not None and spec.loader is not None
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    assert plugin.PLAN_VARIABLE == generation.MUTATION_PLAN_VARIABLE
    assert (SITE / generation.MUTANTS_SCRIPT).is_file()


def test_mutants_are_named_as_mutmut_switches_them_and_say_their_line_and_change(tmp_path: Path) -> None:
    module = tmp_path / "calc.py"
    module.write_text(CALC)
    code, mutants = agentledger_mutants.mutants_of(module)
    by_name = {mutant["name"]: mutant for mutant in mutants}
    assert by_name["x_clamp__mutmut_1"] == {"name": "x_clamp__mutmut_1", "function": "x_clamp", "line": 2,
                                            "source": "if value < low:", "original": "< low", "mutated": "<= low"}
    assert {m["function"] for m in mutants} == {"x_clamp", "x_spin", "xǁAccountǁwithdraw"}
    assert all(f"def {name}(" in code for name in by_name)  # each one behind the trampoline


CANDIDATE = '''\
from calc import Account


def test_withdrawing_the_whole_balance_leaves_nothing():
    assert Account().withdraw(10, 10) == 0
'''


def _run_plan(tmp_path: Path, groups: list[dict], candidates: tuple[str, ...] = ()) -> dict:
    """The project's pytest with the plugin, as the build runs it: the module trampolined in place."""
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    module = project / "calc.py"
    module.write_text(CALC)
    (project / "tests" / "test_calc.py").write_text(SUITE)
    (project / "tests" / "test_candidate.py").write_text(CANDIDATE)
    code, _ = agentledger_mutants.mutants_of(module)
    module.write_text(code)
    plan, output = tmp_path / "plan.json", tmp_path / "results.json"
    plan.write_text(json.dumps({"files": [str(module)], "groups": groups, "output": str(output),
                                "candidates": list(candidates),
                                "run_budget_s": 120, "baseline_timeout_s": 60}))
    environment = {**os.environ, "AGENTLEDGER_MUTATION_PLAN": str(plan),
                   "PYTHONPATH": os.pathsep.join([str(project), str(SITE), str(Path(mutmut.__file__).parents[1])])}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "agentledger_mutation",
            "tests/test_calc.py", *(["tests/test_candidate.py"] if candidates else [])]
    ran = subprocess.run(argv, cwd=project, env=environment, capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return json.loads(output.read_text())


def test_each_mutant_runs_against_the_tests_that_run_its_function_and_a_hang_is_a_kill(tmp_path: Path) -> None:
    mutants = [{"id": f"calc.{name}", "function": function} for name, function in [
        ("x_clamp__mutmut_1", "x_clamp"),  # `<= low`: clamp(-5, 0, 10) is 0 either way
        ("xǁAccountǁwithdraw__mutmut_1", "xǁAccountǁwithdraw"),  # `>= balance`: nothing asserts it
        ("x_spin__mutmut_1", "x_spin"),  # `n == 0`: spin(3) returns 3
        ("x_spin__mutmut_3", "x_spin"),  # `n = 1`: the loop never ends
    ]]
    results = _run_plan(tmp_path, [{"module": "calc", "budget_s": 60, "mutants": mutants}])
    baseline = results["baseline"]
    assert baseline["tests/test_calc.py::test_spin"]["functions"] == ["x_spin"]
    assert baseline["tests/test_calc.py::test_withdraw_runs"]["functions"] == ["xǁAccountǁwithdraw"]
    statuses = {name.split(".", 1)[1]: result["status"] for name, result in results["mutants"].items()}
    assert statuses == {"x_clamp__mutmut_1": "survived", "xǁAccountǁwithdraw__mutmut_1": "survived",
                        "x_spin__mutmut_1": "killed", "x_spin__mutmut_3": "timeout"}
    assert results["mutants"]["calc.x_spin__mutmut_3"]["killed_by"] == ["tests/test_calc.py::test_spin"]


def test_judged_by_the_suite_first_a_mutant_the_suite_kills_never_meets_the_candidates(tmp_path: Path) -> None:
    candidate = "tests/test_candidate.py::test_withdrawing_the_whole_balance_leaves_nothing"
    mutants = [{"id": f"calc.{name}", "function": function, "tests": [candidate], "every_killer": True,
                "suite_first": True} for name, function in [
        ("xǁAccountǁwithdraw__mutmut_1", "xǁAccountǁwithdraw"),  # `>= balance`: the suite asserts nothing of it
        ("x_spin__mutmut_1", "x_spin"),  # the suite's test_spin kills it
        ("x_clamp__mutmut_1", "x_clamp"),  # no candidate runs clamp: the suite's verdict alone
    ]]
    results = _run_plan(tmp_path, [{"module": "calc", "budget_s": 60, "mutants": mutants}], (candidate,))
    by_name = {name.split(".", 1)[1]: result for name, result in results["mutants"].items()}
    assert by_name["xǁAccountǁwithdraw__mutmut_1"] == {"status": "killed", "suite": "survived",
                                                       "killed_by": [candidate]}
    assert by_name["x_spin__mutmut_1"] == {"status": "killed", "suite": "killed", "killed_by": []}
    assert by_name["x_clamp__mutmut_1"] == {"status": "survived", "suite": "survived", "killed_by": []}


def test_a_module_whose_every_mutant_the_suite_kills_has_nothing_left_to_gain() -> None:
    module = ModuleMutants("calc", "calc.py", "/r/calc.py",
                           [_mutant("x_f__mutmut_1", 2, "killed"), _mutant("x_f__mutmut_2", 3, "timeout")])
    assert module.all_killed() and module.report()["killed_before"] == 2
    module.mutants.append(_mutant("x_f__mutmut_3", 4, "no_tests"))
    assert not module.all_killed()  # a mutant no test runs is alive
    unchecked = ModuleMutants("calc", "calc.py", "/r/calc.py", [_mutant("x_f__mutmut_1", 2, "not_checked")])
    assert not unchecked.all_killed()  # out of time is not a verdict


def test_candidates_run_only_against_live_mutants_on_lines_they_run_and_each_keeps_its_kills() -> None:
    module = ModuleMutants("calc", "calc.py", "/r/calc.py", [
        _mutant("x_f__mutmut_1", 2, "killed"), _mutant("x_f__mutmut_2", 3, "survived"),
        _mutant("x_f__mutmut_3", 4, "no_tests"), _mutant("x_f__mutmut_4", 9, "survived")])
    on_line = {("/r/calc.py", 3): ["t.py::test_a", "t.py::test_b"], ("/r/calc.py", 4): ["t.py::test_b"]}
    [group] = candidate_plan_groups([module], 30, lambda file, line: on_line.get((file, line), []))
    assert [(m["id"], m["tests"]) for m in group["mutants"]] == [
        ("calc.x_f__mutmut_2", ["t.py::test_a", "t.py::test_b"]), ("calc.x_f__mutmut_3", ["t.py::test_b"])]
    results = {"calc.x_f__mutmut_2": {"status": "killed", "killed_by": ["t.py::test_a", "t.py::test_b"]},
               "calc.x_f__mutmut_3": {"status": "killed", "killed_by": ["t.py::test_b"]}}
    kills = attribute_kills([module], results, ["t.py::test_a", "t.py::test_b"], lambda node: node)
    # test_b kills mutant 2 as well: a kill of its own (mutant 3) keeps it, and the report credits
    # mutant 2 to test_a, first in order.
    assert kills == {"t.py::test_a": ["x_f__mutmut_2"], "t.py::test_b": ["x_f__mutmut_2", "x_f__mutmut_3"]}
    assert [(m.name, m.killed_by) for m in module.killed_by_kept()] == [
        ("x_f__mutmut_2", "t.py::test_a"), ("x_f__mutmut_3", "t.py::test_b")]
    report = module.report()
    assert (report["killed_before"], report["killed_after"], report["survivors_total"]) == (1, 3, 1)
    assert [m["line"] for m in report["survivors"]] == [9]


def _mutant(name: str, line: int, status: str) -> Mutant:
    return Mutant("calc", name, name.split("__mutmut_")[0], line, f"line {line}", "a", "b", status)


def test_the_runs_mutation_budget_counts_only_the_time_its_sessions_take(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([1000.0, 1040.0, 5000.0, 5050.0])  # two sessions of 40 s and 50 s, an hour of writing between
    monkeypatch.setattr(generation.time, "monotonic", lambda: next(clock))
    budget = generation.SessionBudget(100)
    with budget.spending():
        pass
    assert budget.left() == 60
    with budget.spending():
        pass
    assert budget.left() == 10  # the hour between the sessions spent none of it


SORTED = '''\
class SortedThing:
    def __make_cmp(op):
        def compare(self, other):
            return op(self.value, other.value)
        return compare

    def __init__(self, value):
        self.value = value

    __eq__ = __make_cmp(lambda a, b: a == b)
'''


def test_a_module_whose_trampolines_do_not_import_is_named_with_the_error(tmp_path: Path) -> None:
    # sortedcontainers' shape: a name-mangled method called while the class is made, which
    # mutmut's trampoline cannot serve yet. Every test of it would fail to collect.
    for name, source in (("sortedthing", SORTED), ("calc", CALC)):
        module = tmp_path / f"{name}.py"
        module.write_text(source)
        module.write_text(agentledger_mutants.mutants_of(module)[0])
    output = tmp_path / "imports.json"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(mutmut.__file__).parents[1])])}
    subprocess.run([sys.executable, "-c", generation.IMPORT_CHECK, str(output), "sortedthing", "calc"], cwd=tmp_path,
                   env=environment, check=True, timeout=60)
    failed = json.loads(output.read_text())
    assert list(failed) == ["sortedthing"] and failed["sortedthing"].startswith("KeyError: '_mutmut_orig'")
