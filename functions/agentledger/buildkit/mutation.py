"""Mutation analysis, the fourth filter: mutmut's mutants of each targeted module, the suite's
verdict on them before any test is written, and the candidates' after.

mutmut makes the mutants (agentledger_mutants.py, in the interpreter of agentledger's tools) and
puts each module's behind its trampolines; the project's pytest runs them (agentledger_mutation.py,
a plugin that forks a child per mutant after collection). This module holds what the kit decides
from their output:
- before writing, the suite's verdict per mutant: a module whose every mutant the suite already
  kills gets no test written for it;
- the mutation filter: a candidate is kept only if it kills a mutant that the suite leaves alive;
- the report: per module, the mutants, the score before and after, what the kept tests kill and
  what still survives, line by line."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

KILLED = frozenset({"killed", "timeout"})  # a mutant that hangs a test is caught too, as mutmut counts it
ALIVE = frozenset({"survived", "no_tests"})  # what the suite leaves alive: kills nobody has made yet
STATUSES = KILLED | ALIVE | {"not_checked"}
MAX_MUTANTS = 2_000  # of one module; more are not believed
MAX_LISTED = 50  # survivors and kills listed per module in the report
MAX_CODE = 200


@dataclass
class Mutant:
    module: str
    name: str  # mutmut's: x_function__mutmut_3
    function: str  # the mangled function it is a mutant of
    line: int
    source: str  # the line as written
    original: str
    mutated: str
    status: str = "not_checked"  # the suite's verdict
    killed_by: str | None = None  # the kept test that kills it, where the suite does not

    @property
    def id(self) -> str:
        """What MUTANT_UNDER_TEST names to switch it on."""
        return f"{self.module}.{self.name}"

    def described(self) -> dict[str, Any]:
        return {"name": self.name, "line": self.line, "source": self.source, "original": self.original,
                "mutated": self.mutated, **({"killed_by": self.killed_by} if self.killed_by else {})}


@dataclass
class ModuleMutants:
    module: str
    path: str  # as the request names it
    file: str  # resolved, as coverage.py and the trace name it
    mutants: list[Mutant] = field(default_factory=list)
    reason: str = ""  # why it has no verdict, when it has none

    def alive(self) -> list[Mutant]:
        return [mutant for mutant in self.mutants if mutant.status in ALIVE and mutant.killed_by is None]

    def killed_before(self) -> int:
        return sum(1 for mutant in self.mutants if mutant.status in KILLED)

    def killed_by_kept(self) -> list[Mutant]:
        return [mutant for mutant in self.mutants if mutant.killed_by is not None]

    def checked(self) -> int:
        return sum(1 for mutant in self.mutants if mutant.status != "not_checked")

    def all_killed(self) -> bool:
        return bool(self.mutants) and not self.alive() and self.checked() == len(self.mutants)

    def report(self) -> dict[str, Any]:
        checked = self.checked()
        before, after = self.killed_before(), self.killed_before() + len(self.killed_by_kept())
        return {
            "module": self.module, "mutants": len(self.mutants), "checked": checked,
            "killed_before": before, "killed_after": after,
            "no_tests": sum(1 for mutant in self.mutants if mutant.status == "no_tests"),
            "killed_by_kept": [mutant.described() for mutant in self.killed_by_kept()[:MAX_LISTED]],
            "survivors": [mutant.described() for mutant in self.alive()[:MAX_LISTED]],
            "survivors_total": len(self.alive()),
            "reason": self.reason,
        }


def read_mutants(answer: dict[str, Any], module: str) -> list[Mutant]:
    """What agentledger_mutants.py wrote for one module, bounded: it ran in a process the
    repository's code shares."""
    mutants = []
    for entry in answer["mutants"][:MAX_MUTANTS]:
        mutants.append(Mutant(module=module, name=str(entry["name"])[:MAX_CODE],
                              function=str(entry["function"])[:MAX_CODE], line=int(entry["line"]),
                              source=str(entry["source"])[:MAX_CODE], original=str(entry["original"])[:MAX_CODE],
                              mutated=str(entry["mutated"])[:MAX_CODE]))
    return mutants


def suite_plan_groups(modules: list[ModuleMutants], budget_s: int) -> list[dict[str, Any]]:
    """The plugin's groups for the suite's verdict: every mutant, up to its first kill."""
    return [{"module": module.module, "budget_s": budget_s,
             "mutants": [{"id": mutant.id, "function": mutant.function} for mutant in module.mutants]}
            for module in modules if module.mutants]


def apply_suite_verdict(modules: list[ModuleMutants], results: dict[str, Any]) -> None:
    """Each mutant's status by the suite: a result's `suite` verdict where the candidates ran after
    the suite in the same session, else its status."""
    for module in modules:
        for mutant in module.mutants:
            result = results.get(mutant.id, {})
            status = result.get("suite", result.get("status", "not_checked"))
            mutant.status = status if status in STATUSES else "not_checked"


def candidate_plan_groups(modules: list[ModuleMutants], budget_s: int,
                          tests_on_line: Callable[[str, int], list[str]], suite_first: bool = False
                          ) -> list[dict[str, Any]]:
    """The plugin's groups for the mutation filter: each mutant the suite leaves alive, against the
    candidate tests that run its line (`tests_on_line(file, line)`), every one of them. With
    `suite_first` (the suite's verdict is yet to be taken), every mutant: the suite's tests first,
    up to the first that kills it, and the candidates' only if none does."""
    groups = []
    for module in modules:
        mutants = [{"id": mutant.id, "function": mutant.function, "tests": tests, "every_killer": True,
                    "suite_first": suite_first}
                   for mutant in (module.mutants if suite_first else module.alive())
                   if (tests := tests_on_line(module.file, mutant.line)) or suite_first]
        if mutants:
            groups.append({"module": module.module, "budget_s": budget_s, "mutants": mutants})
    return groups


def attribute_kills(modules: list[ModuleMutants], results: dict[str, Any], candidate_keys: list[str],
                    owner: Callable[[str], str | None]) -> dict[str, list[str]]:
    """Each candidate's kills of mutants the suite leaves alive (candidate key -> mutant names), as
    ACH keeps a test: for a kill of its own, whoever else makes it too. Each mutant is marked with
    the first candidate, in order, that kills it: the one the report credits. `owner(nodeid)` is the
    key of the candidate a test case belongs to."""
    killers: dict[str, set[str]] = {}  # mutant id -> candidate keys whose cases kill it
    for mutant_id, result in results.items():
        if result.get("status") in KILLED:
            killers[mutant_id] = {key for nodeid in result.get("killed_by", []) if (key := owner(str(nodeid)))}
    kills: dict[str, list[str]] = {}
    alive = [mutant for module in modules for mutant in module.alive()]
    for key in candidate_keys:
        for mutant in alive:
            if key in killers.get(mutant.id, ()):
                mutant.killed_by = mutant.killed_by or key
                kills.setdefault(key, []).append(mutant.name)
    return kills
