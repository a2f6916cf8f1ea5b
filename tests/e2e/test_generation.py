"""Pynguin through `agentledger serve`, as a user runs it: a module of branchy business logic that
no test calls, followed step by step as its build reports them, gets generated tests that pass the
filters and each kill a mutant; the review leads with the mutation score; they go into the project's
tests folder, and the project, with them in, still installs: on a flat layout whose pyproject.toml has
only [project], and on a src layout whose tests are unittest's (and so are the kept ones). The kept
tests catch most of a set of bugs made by hand, checked outside the product's own figures."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest

from .conftest import REVIEWER, CliResult, run_cli

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

pytestmark = pytest.mark.e2e

PRICING = '''\
"""Order pricing: discounts by customer tier and quantity, shipping by weight and destination."""


def discount_rate(tier: str, quantity: int) -> float:
    if quantity <= 0:
        raise ValueError("quantity must be positive")
    rate = 0.0
    if tier == "gold":
        rate = 0.15
    elif tier == "silver":
        rate = 0.10
    if quantity >= 100:
        rate += 0.05
    elif quantity >= 10:
        rate += 0.02
    return min(rate, 0.25)


def shipping_cost(weight_kg: float, international: bool) -> float:
    if weight_kg < 0:
        raise ValueError("weight cannot be negative")
    if weight_kg == 0:
        return 0.0
    cost = 5.0 + 1.5 * weight_kg
    if international:
        cost = cost * 2 + 10
    if weight_kg > 30:
        cost += 25
    return round(cost, 2)


def order_total(unit_price: float, quantity: int, tier: str, weight_kg: float, international: bool) -> float:
    subtotal = unit_price * quantity
    discounted = subtotal * (1 - discount_rate(tier, quantity))
    return round(discounted + shipping_cost(weight_kg, international), 2)
'''
# Bugs a person could make in it, made by hand here (not by the product's mutation tool): the kept
# tests, run outside the product, must catch most of them.
HAND_MADE_MUTANTS = [
    ("rate = 0.15", "rate = 0.10"), ("elif tier == \"silver\"", "elif tier == \"gold\""),
    ("quantity >= 100", "quantity >= 10"), ("rate += 0.02", "rate += 0.2"), ("min(rate, 0.25)", "max(rate, 0.25)"),
    ("cost * 2 + 10", "cost * 2"), ("weight_kg > 30", "weight_kg > 3"), ("1.5 * weight_kg", "2.5 * weight_kg"),
    ("(1 - discount_rate", "(1 + discount_rate"), ("return 0.0\n", "return 5.0\n"),
]
# The repository asks for Pynguin (the session's `serve` writes docstring examples), lowers the
# search budget, as a small project would, and fixes the seed, so that each run writes the same tests
# (seeds 1 to 8 each caught 7 to 9 of the hand-made bugs; a run's own seed once caught 4).
PROJECT = '''\
[project]
name = "pricing"
version = "0.1.0"
requires-python = ">=3.9"

[tool.agentledger]
writer = "pynguin"
generation_module_seconds = 30
generation_seed = 3
'''


def _flat(root: Path) -> Path:
    """The layout a new top-level test package broke: setuptools then found two packages."""
    (root / "pricing").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PROJECT)
    (root / "pricing" / "__init__.py").write_text(PRICING)
    return root


def _src(root: Path) -> Path:
    (root / "src" / "pricing").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        PROJECT + '\n[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n')
    (root / "src" / "pricing" / "__init__.py").write_text(PRICING)
    # A project whose tests are unittest's: the kept tests must be TestCase classes too.
    (root / "tests").mkdir()
    (root / "tests" / "test_package.py").write_text(
        "import unittest\n\nimport pricing\n\n\nclass TestPackage(unittest.TestCase):\n"
        "    def test_it_says_what_it_prices(self):\n        self.assertIn('pricing', pricing.__doc__)\n")
    return root


@pytest.mark.parametrize(("layout", "make", "module_path"), [
    ("flat", _flat, "pricing/__init__.py"), ("src", _src, "src/pricing/__init__.py")])
def test_pynguin_writes_kept_tests_that_kill_mutants_where_the_project_keeps_them(
        cli: Callable[..., CliResult], api_url: str, tmp_path: Path, layout: str, make: Callable[[Path], Path],
        module_path: str) -> None:
    repository = make(tmp_path / layout)
    # As a person runs it: followed, with a line for each step the build reports while it writes.
    followed = run_cli("run", str(repository), "--request", "write tests for pricing", "--api", api_url)
    run_id = followed.stdout.split()[1]  # "following RUN (Ctrl-C stops following, not the run)"
    assert "execute: pynguin writing pricing · 0 written, 0 dropped so far" in followed.stdout, followed.stdout
    assert "execute: filter: kills a mutant the suite misses" in followed.stdout, followed.stdout
    waiting = cli("show", run_id).json()
    assert waiting["run"]["status"] == "awaiting_review", (waiting.get("handoff"), followed.stdout)
    assert waiting["progress"] is None  # the build has ended
    generation = waiting["summary"]["generation"]
    assert generation["writer"] == "pynguin"
    assert 1 <= generation["kept"] <= generation["generated"]
    assert generation["coverage_gained"] > 0
    [coverage] = [line for line in generation["coverage"] if line.startswith(f"{module_path}: ")]
    if layout == "flat":
        assert "lines 0%" in coverage.split("→")[0]  # no test touched it before
    [mutation] = generation["mutation"]
    assert mutation.startswith(f"{module_path}: mutation score 0% → ")  # no test killed a mutant before
    assert generation["mutants_killed"] > 0 and generation["mutation_score_gained"] > 0
    report = cli("artifact", waiting["run"]["run_id"], "generation.json").json()
    assert all(candidate["kills"] for candidate in report["candidates"] if candidate["dropped_by"] is None)
    assert [f["path"] for f in waiting["summary"]["files_changed"]] == ["tests/test_pricing_generated.py"]
    assert waiting["summary"]["tests"]["outcome"] == "passed"  # verify installed the project with them in

    # The reviewer reads the value first: the mutation score, what the kept tests kill and what
    # survives, kept of generated, then coverage, then findings, then the diff.
    review = cli("review", run_id).stdout
    assert (review.index("mutation score") < review.index(" kills ") < review.index(" kept of ")
            < review.index("covers ") < review.index("Diff"))
    decided = cli("review", run_id, "--approve", "--profile", REVIEWER).json()
    assert decided["decision"] == "approve"

    # The project's own tooling takes the change: its install, and its test runner on its tests folder.
    written = _applied(cli, run_id, repository)
    assert written == ["tests/test_pricing_generated.py"]
    assert not (repository / "tests" / "__init__.py").exists()  # a plain test module, no package
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(repository)],
                               capture_output=True, text=True, timeout=300, check=False)
    assert installed.returncode == 0, installed.stderr  # setuptools' discovery still finds one layout
    source = repository / "src" if layout == "src" else repository
    assert _kept_tests_pass(repository, source), "the kept tests fail on the code they were written for"
    if layout == "src":
        # In the project's own style, run by its own runner; what they catch does not hang on the
        # layout or the style: the flat one shows it.
        kept = (repository / "tests" / "test_pricing_generated.py").read_text()
        assert "(unittest.TestCase):" in kept and "self.assert" in kept and "pytest" not in kept, kept
        own_runner = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=repository,
                                    capture_output=True, text=True, timeout=300, check=False,
                                    env={**os.environ, "PYTHONPATH": str(source)})
        assert own_runner.returncode == 0, own_runner.stderr
        return
    module = repository / module_path
    caught = []
    for original, mutated in HAND_MADE_MUTANTS:
        assert PRICING.count(original) == 1, original
        module.write_text(PRICING.replace(original, mutated))
        caught.append(not _kept_tests_pass(repository, source))
    module.write_text(PRICING)
    assert sum(caught) > len(HAND_MADE_MUTANTS) / 2, \
        f"the kept tests caught {sum(caught)} of {len(HAND_MADE_MUTANTS)} hand-made bugs: " \
        f"{[mutant for mutant, found in zip(HAND_MADE_MUTANTS, caught, strict=True) if not found]} went unnoticed " \
        f"(funnel {report['funnel']}, notes {report['notes']}, timings {report['timings']}; the kept tests:\n" \
        f"{(repository / 'tests' / 'test_pricing_generated.py').read_text()})"


def _kept_tests_pass(repository: Path, source: Path) -> bool:
    """The project's test runner on its tests folder, as its maintainers run it."""
    suite = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests"],
                           cwd=repository, capture_output=True, text=True, timeout=300, check=False,
                           # No bytecode: a bug of the module's own size written in the second its last
                           # run wrote a .pyc would be read from that stale .pyc, and go unseen.
                           env={**os.environ, "PYTHONPATH": str(source), "PYTHONDONTWRITEBYTECODE": "1"})
    assert suite.returncode in (0, 1), suite.stdout + suite.stderr  # passed, or a test failed: nothing else
    return suite.returncode == 0


def _applied(cli: Callable[..., CliResult], run_id: str, repository: Path) -> list[str]:
    """Waits for the approved run to complete, then writes its change into the working tree."""
    deadline = time.monotonic() + 120
    while cli("show", run_id).json()["run"]["status"] != "complete":
        assert time.monotonic() < deadline, "the approved run did not complete"
        time.sleep(1)
    return cli("apply", run_id, str(repository)).json()["written"]
