"""Writing candidate tests and keeping those worth a reviewer's time, inside the build.

Run by the kit's `test` command when the input carries a generation request, on the repository
under test, after its dependencies are installed, with the kit acting as the code's uid
(CodeUser.acting) for every file it touches:

1. candidates: Pynguin writes them module by module (search-based, seeded, bounded by a time
   budget per module and per run), or they came with the request (the doctest and bedrock
   writers write them outside the build). Pynguin's exception-revealing tests (`xfail`) are not
   candidates: they are run once more to record the exception, and reported as findings.
2. TestGen-LLM's filters, each candidate test on its own:
   - build: pytest collects it;
   - pass_alone: it passes five consecutive runs of the candidate files alone (one session that
     collects each file five times over);
   - pass_with_suite: it passes five runs with the rest of the suite, shuffled unless the
     project says its order matters;
   - coverage: it covers a line or a branch the suite without the candidates does not (nor a
     candidate kept before it), as coverage.py measures it, or a line where a mutant the suite
     leaves alive sits (the only tests that can pass the next filter);
   - mutation: it kills a mutant of a targeted module that the suite leaves alive, as mutmut's
     mutants say (buildkit/mutation.py). Before anything is
     written, the suite's verdict on every mutant is taken: a module whose every mutant it already
     kills gets no test.
3. the kept tests are written into their test files, and the suite with them is measured again:
   coverage of the targeted modules before and after; the mutation score before and after.

The request comes from the orchestrator (trusted); everything the repository's code produces
(Pynguin's output, test results, coverage data) is bounded here, and judged again outside."""
from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .layout import BUILD_SITE_DIR, GENERATION_REQUEST_FILE, TOOLS_DIR, TOOLS_MARKER
from .mutation import (
    ModuleMutants,
    apply_suite_verdict,
    attribute_kills,
    candidate_plan_groups,
    read_mutants,
    suite_plan_groups,
)
from .processes import CodeUser, DriverError, Outcome, describe, run_logged, say
from .workspace import Workspace, cache_root, import_path, inside_venv, read_untrusted, working_copy_roots

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from collections.abc import Set as AbstractSet

PYNGUIN_REQUIREMENT = "pynguin==0.48.0"
COVERAGE_REQUIREMENT = "coverage==7.18.0"
MUTMUT_REQUIREMENT = "mutmut==3.8.1"
MUTATION_PLAN_VARIABLE = "AGENTLEDGER_MUTATION_PLAN"  # agentledger_mutation.PLAN_VARIABLE (a test checks they agree)
MUTATION_PLUGIN = "agentledger_mutation"
MUTANTS_SCRIPT = "agentledger_mutants.py"

APPEND_PATH_VARIABLE = "AGENTLEDGER_APPEND_PATH"
ORDER_SEED_VARIABLE = "AGENTLEDGER_ORDER_SEED"
COLLECTED_VARIABLE = "AGENTLEDGER_COLLECTED"
PYTEST_PLUGIN = "agentledger_pytest"
RUNS = 5  # a candidate passes this many runs in a row, alone and with the suite, unless the request says
UNITTEST_STYLE = "unittest"
TEST_CASE_BASES = frozenset({"unittest.TestCase", "TestCase"})
COMPARISON_ASSERTIONS: dict[type[ast.cmpop], str] = {
    ast.Eq: "assertEqual", ast.NotEq: "assertNotEqual", ast.Is: "assertIs", ast.IsNot: "assertIsNot",
    ast.In: "assertIn", ast.NotIn: "assertNotIn", ast.Lt: "assertLess", ast.LtE: "assertLessEqual",
    ast.Gt: "assertGreater", ast.GtE: "assertGreaterEqual",
}
# Imports each module named after the output path, writing {module: error} for those that fail.
IMPORT_CHECK = """import importlib, json, sys
failed = {}
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except BaseException as error:
        failed[name] = f"{type(error).__name__}: {error}"[:300]
with open(sys.argv[1], "w") as output:
    json.dump(failed, output)
"""
MAX_STYLE_FILES = 200  # of the project's test modules read to tell its style
SKIPPED_FOLDERS = frozenset({"node_modules", "site-packages", "venv", "build", "dist", "__pycache__"})
FILTERS = ("build", "pass_alone", "pass_with_suite", "coverage", "mutation")
# A generation build's steps, in order, as its timings and its progress name them.
STEPS = ("mutation_before", "write", *FILTERS, "after", "findings")
MAX_CANDIDATE_SOURCE = 20_000  # characters of one candidate's source that are reported
MAX_CANDIDATE_FILE_BYTES = 1 << 20
MAX_CANDIDATES = 400
MAX_FINDINGS = 100
MAX_MESSAGE = 2_000
# `SomeError: what went wrong`, as a traceback's last line says it (inside rich's boxes, too).
ERROR_LINE = re.compile(r"\b([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)):\s*(\S.*)")
OUTPUT_READ_FOR_AN_ERROR = 64_000
MAX_REPORT_BYTES = 64 << 20  # a JUnit or coverage report read back; larger is not believed
PYNGUIN_MARGIN_S = 60  # Pynguin's own start, minimization and writing, past its search budget
PYNGUIN_MAX_MUTANTS = 300
# Pynguin's searches of one module, by the coverage they aim at (search_module says why two).
PYNGUIN_SEARCHES: tuple[tuple[str, ...], ...] = (("BRANCH",), ("BRANCH", "CHECKED"))
# Pynguin's rounds: a second, seeded otherwise, searches the modules where mutants the kept tests do
# not kill are left (CoverUp's loop). One search's tests catch a different share of bugs from the
# next's: on a module of pricing rules, from five to nine of ten made by hand.
PYNGUIN_ROUNDS = 2
ROUND_SEED_STEP = 1_000


class GenerationError(DriverError):
    """The generation itself cannot go on (as opposed to a candidate being dropped)."""


# --- the request ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    module: str  # importable name: "pkg.mod"
    path: str  # "pkg/mod.py" or "src/pkg/mod.py"
    test_path: str  # where its tests go, relative to the repository
    names: list[str]  # the untested objects it was chosen for


@dataclass(frozen=True)
class Request:
    writer: str  # pynguin | doctest | bedrock (or a custom agent's name)
    seed: int
    module_seconds: int
    run_seconds: int
    iterations: int
    random_order: bool
    targets: list[Target]
    candidate_files: list[str]  # files the request put into the repository (not Pynguin's)
    language: str = "python"  # python: pytest modules; java: JUnit classes of a Maven project
    runs: int = RUNS
    mutation_module_seconds: int = 60  # mutation analysis of one module, in each of its two passes
    mutation_run_seconds: int = 300  # and of the whole run


def load_request(path: Path) -> Request:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        targets = [Target(**target) for target in document.pop("targets")]
        return Request(targets=targets, **document)
    except (OSError, ValueError, TypeError, KeyError) as error:
        raise GenerationError(f"cannot read {GENERATION_REQUEST_FILE}: {error}") from error


# --- candidates ----------------------------------------------------------------------------------

@dataclass
class Candidate:
    test_path: str
    name: str  # the top-level test function or class
    source: str
    module: str | None = None  # the module it was written for, when known
    dropped_by: str | None = None  # the first filter it failed, None while it survives
    detail: str = ""
    runs: dict[str, int] = field(default_factory=dict)  # filter -> runs passed
    gain: dict[str, int] = field(default_factory=dict)  # lines / branches it adds over the suite
    kills: list[str] = field(default_factory=list)  # mutants it kills that nothing kept before it does

    @property
    def key(self) -> str:
        return f"{self.test_path}::{self.name}"

    def drop(self, by: str, detail: str) -> None:
        if self.dropped_by is None:
            self.dropped_by, self.detail = by, detail[:MAX_MESSAGE]


@dataclass
class Finding:
    module: str
    test: str
    source: str
    exception: str = ""
    message: str = ""


@dataclass
class WriterFailure:
    """A module the writer wrote no tests for, and how its last try ended: `crashed` (with the last
    error line it printed), `timed_out`, `wrote_nothing`, `unreadable` (what it wrote is not a
    module) or `not_searched` (the run's budget was spent before it)."""

    module: str
    what: str
    message: str
    tries: int = 1


@dataclass
class TestFile:
    """A candidate test file split into what every test needs (imports, helpers) and its tests."""

    __test__ = False
    path: str
    header: str
    tests: list[tuple[str, str]]  # (name, source), in file order


def split_test_file(path: str, text: str) -> TestFile:
    """The top-level `test_*` functions and `Test*` classes are the candidates; every other
    statement is kept, in order, as the header all of them share."""
    tree = ast.parse(text, filename=path)
    lines = text.splitlines(keepends=True)
    header: list[str] = []
    tests: list[tuple[str, str]] = []
    for node in tree.body:
        start = min([node.lineno] + [decorator.lineno for decorator in getattr(node, "decorator_list", [])])
        segment = "".join(lines[start - 1:node.end_lineno])
        if is_test_node(node):
            tests.append((node.name, segment))  # type: ignore[attr-defined]
        else:
            header.append(segment)
    return TestFile(path, "".join(header), tests)


def is_test_node(node: ast.stmt) -> bool:
    return ((isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"))
            or (isinstance(node, ast.ClassDef) and node.name.startswith("Test")))


def join_test_file(header: str, tests: list[str]) -> str:
    """The test module of these tests, without an import none of them (nor the rest of the header)
    uses: a test dropped by a filter takes its imports with it."""
    header = without_unused_imports(header, tests)
    return header.rstrip("\n") + "\n" + "".join(f"\n\n{source.rstrip()}\n" for source in tests)


def without_unused_imports(header: str, tests: list[str]) -> str:
    """`header` without each import statement whose every name no code of the file mentions (as a
    name, an attribute's base or a parameter, such as a fixture's). `from __future__` and `*`
    imports stay; a header or test that does not parse is left as it is."""
    try:
        tree = ast.parse(header)
        mentioned = [ast.parse(source) for source in tests]
    except (SyntaxError, ValueError):
        return header
    lines = header.splitlines(keepends=True)
    dropped: set[int] = set()
    for node in tree.body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or (
                isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            continue
        bound = {alias.asname or alias.name.split(".")[0] for alias in node.names}
        others = [other for other in tree.body if other is not node] + mentioned
        if "*" not in bound and not bound & _names_used(others):
            dropped.update(range(node.lineno - 1, (node.end_lineno or node.lineno)))
    return "".join(line for number, line in enumerate(lines) if number not in dropped)


def _names_used(nodes: Sequence[ast.AST]) -> set[str]:
    used: set[str] = set()
    for root in nodes:
        if isinstance(root, (ast.Import, ast.ImportFrom)):
            continue
        for node in ast.walk(root):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.arg):
                used.add(node.arg)
    return used


def pynguin_candidates(text: str, target: Target, used: dict[str, int],
                       style: str = "pytest") -> tuple[TestFile, list[Finding]]:
    """Pynguin's module, with its tests named after what they call (unique among `used`), and its
    xfail tests (an input that raises where nothing said it should) taken out as findings; in a
    project whose tests are unittest.TestCase classes (`style` "unittest"), each test is one."""
    tree = ast.parse(text)
    alias = module_alias(tree, target.module)
    kept: list[ast.stmt] = []
    findings: list[Finding] = []
    for node in tree.body:
        if alias is not None and _is_alias_of(node, alias):
            kept += module_import(target.module, alias)
            continue
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            node.name = unique_name(test_name_for(node, alias), used)
            if any(is_xfail(decorator) for decorator in node.decorator_list):
                node.decorator_list = [d for d in node.decorator_list if not is_xfail(d)]
                findings.append(Finding(module=target.module, test=node.name, source=ast.unparse(node)))
                continue
        kept.append(node)
    if style == UNITTEST_STYLE:
        kept = [ast.Import(names=[ast.alias(name="unittest")]), *(
            as_test_case(node) if isinstance(node, ast.FunctionDef) and is_test_node(node) else node
            for node in kept)]
    header = "\n".join(ast.unparse(node) for node in kept if not is_test_node(node))
    tests = [(node.name, ast.unparse(node)) for node in kept if is_test_node(node)]  # type: ignore[attr-defined]
    note = (f'"""Tests agentledger generated with Pynguin for {target.module}, kept because each catches '
            'a change to the code that the suite misses."""\n')
    return TestFile(target.test_path, note + header + "\n", tests), findings


def project_test_style(repository: Path, besides: AbstractSet[str] = frozenset()) -> str:
    """"unittest" where the project's tests are unittest.TestCase classes and none of them imports
    pytest; otherwise "pytest". Read from at most MAX_STYLE_FILES of its test modules, not those
    at the paths `besides` (the candidates a request brought)."""
    found_case = False
    modules = (path for path in test_modules(repository) if path.relative_to(repository).as_posix() not in besides)
    for number, path in enumerate(modules):
        if number >= MAX_STYLE_FILES:
            break
        data = read_untrusted(path, repository, MAX_CANDIDATE_FILE_BYTES)
        try:
            tree = ast.parse(data or b"")
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(alias.name.partition(".")[0] == "pytest" for alias in node.names):
                return "pytest"
            if isinstance(node, ast.ImportFrom) and (node.module or "").partition(".")[0] == "pytest":
                return "pytest"
            if isinstance(node, ast.ClassDef) and any(ast.unparse(base) in TEST_CASE_BASES for base in node.bases):
                found_case = True
    return UNITTEST_STYLE if found_case else "pytest"


def test_modules(repository: Path) -> Iterator[Path]:
    """The project's test modules as pytest finds them by default (`test_*.py`, `*_test.py`), and
    a top-level `test.py` or `tests.py`; not inside hidden folders or installed packages."""
    for directory, folders, files in os.walk(repository):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in SKIPPED_FOLDERS)
        for name in sorted(files):
            top_level = Path(directory) == repository and name in ("test.py", "tests.py")
            if top_level or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))):
                yield Path(directory) / name


def as_test_case(test: ast.FunctionDef) -> ast.ClassDef:
    """`def test_order_total(): assert x == 1` as a maintainer using unittest writes it:
    `class TestOrderTotal(unittest.TestCase)` whose `test_order_total(self)` says `self.assertEqual(x, 1)`."""
    name = "Test" + "".join(word.capitalize() for word in test.name[len("test"):].split("_") if word)
    case: ast.ClassDef = ast.parse(f"class {name}(unittest.TestCase):\n    def {test.name}(self):\n"
                                   "        pass\n").body[0]  # type: ignore[assignment]
    method: ast.FunctionDef = case.body[0]  # type: ignore[assignment]
    method.body = [_UnittestAssertions().visit(statement) for statement in test.body]
    method.decorator_list = test.decorator_list
    return ast.fix_missing_locations(case)


class _UnittestAssertions(ast.NodeTransformer):
    """pytest's bare asserts, `pytest.approx` and `pytest.raises` as TestCase's assertion methods."""

    def visit_Assert(self, node: ast.Assert) -> ast.stmt:
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, op, right = test.left, test.ops[0], test.comparators[0]
            if isinstance(op, ast.Eq) and _is_approx(right):
                approx: ast.Call = right  # type: ignore[assignment]
                # pytest.approx(b, abs=A, rel=R) allows max(A, R * |b|): the same bound, as a delta.
                bounds = {keyword.arg: keyword.value for keyword in approx.keywords}
                delta = ast.parse(f"max({ast.unparse(bounds.get('abs', ast.Constant(1e-12)))}, "
                                  f"{ast.unparse(bounds.get('rel', ast.Constant(1e-6)))} * abs("
                                  f"{ast.unparse(approx.args[0])}))", mode="eval").body
                return _self_call("assertAlmostEqual", [left, approx.args[0]], [ast.keyword(arg="delta", value=delta)])
            if isinstance(right, ast.Constant) and right.value is None and isinstance(op, (ast.Is, ast.IsNot)):
                return _self_call("assertIsNone" if isinstance(op, ast.Is) else "assertIsNotNone", [left])
            method = COMPARISON_ASSERTIONS.get(type(op))
            if method is not None:
                return _self_call(method, [left, right])
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return _self_call("assertFalse", [test.operand])
        return _self_call("assertTrue", [test])

    def visit_With(self, node: ast.With) -> ast.With:
        self.generic_visit(node)
        for item in node.items:
            context = item.context_expr
            if isinstance(context, ast.Call) and ast.unparse(context.func) == "pytest.raises":
                context.func = ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr="assertRaises",
                                             ctx=ast.Load())
        return node


def _is_approx(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func) == "pytest.approx" and len(node.args) == 1


def _self_call(method: str, args: list[ast.expr], keywords: list[ast.keyword] | None = None) -> ast.Expr:
    function = ast.Attribute(value=ast.Name(id="self", ctx=ast.Load()), attr=method, ctx=ast.Load())
    return ast.Expr(value=ast.Call(func=function, args=args, keywords=keywords or []))


def module_import(module: str, alias: str) -> list[ast.stmt]:
    """Pynguin's `mod_ = sys.modules["pkg.mod"]` as a person writes it, which an inventory sees as
    an import. `import pkg.mod as mod_` binds the package's attribute `mod`, which is a function
    when the package re-exports one of that name (python-slugify's `from .slugify import *`):
    a dotted module is imported by its name."""
    if "." not in module:
        return [ast.Import(names=[ast.alias(name=module, asname=alias)])]
    imported = ast.Call(func=ast.Attribute(value=ast.Name(id="importlib", ctx=ast.Load()), attr="import_module",
                                           ctx=ast.Load()), args=[ast.Constant(value=module)], keywords=[])
    return [ast.Import(names=[ast.alias(name="importlib")]),
            ast.Assign(targets=[ast.Name(id=alias, ctx=ast.Store())], value=imported, lineno=0)]


def module_alias(tree: ast.Module, module: str) -> str | None:
    """The name Pynguin binds the module under test to: `mod_ = sys.modules["pkg.mod"]`."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Subscript) and ast.unparse(node.value) == f"sys.modules['{module}']"):
            return node.targets[0].id
    return None


def _is_alias_of(node: ast.stmt, alias: str) -> bool:
    return (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == alias and isinstance(node.value, ast.Subscript))


def test_name_for(node: ast.FunctionDef, alias: str | None) -> str:
    """`test_rect_area` for a test that builds a Rect and calls its area: the module's callables
    it calls, then the methods, the first two of them."""
    functions: list[str] = []
    methods: list[str] = []
    body = [n for statement in node.body for n in ast.walk(statement)]  # not the decorators
    for call in (n for n in body if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
        owner = call.func.value  # type: ignore[attr-defined]
        name = call.func.attr  # type: ignore[attr-defined]
        bucket = functions if isinstance(owner, ast.Name) and owner.id == alias else methods
        if isinstance(owner, ast.Name) and owner.id == "pytest":
            continue
        if name not in bucket:
            bucket.append(name)
    words = [snake(word) for word in (functions + methods)[:2]] or ["generated"]
    return "test_" + "_".join(words)


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower().strip("_") or "call"


def unique_name(name: str, used: dict[str, int]) -> str:
    used[name] = used.get(name, 0) + 1
    return name if used[name] == 1 else f"{name}_{used[name]}"


def is_xfail(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target) == "pytest.mark.xfail"


# --- running pytest ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tools:
    root: Path

    @property
    def pynguin(self) -> Path:
        return self.root / "pynguin" / "bin" / "pynguin"

    @property
    def coverage(self) -> Path:
        return self.root / "coverage"

    @property
    def mutmut(self) -> Path:
        """The interpreter that makes mutants (mutmut with libcst)."""
        return self.root / "mutmut" / "bin" / "python"

    @property
    def mutmut_runtime(self) -> Path:
        """mutmut alone, without its dependencies: what a trampolined module imports."""
        return self.root / "mutmut-runtime"


class Runner:
    """pytest on the repository with the project's interpreter: the working copy first on the
    path, then the project's packages, then coverage.py."""

    def __init__(self, workspace: Workspace, venv: Path | None, tools: Tools, seed: int) -> None:
        self.workspace = workspace
        self.work = workspace.work
        self.seed = seed
        environment = workspace.environment
        if venv is not None:
            environment = inside_venv(environment, venv)
        site_dir = str(workspace.root / BUILD_SITE_DIR)
        self.environment = {
            **environment,
            "PYTHONPATH": os.pathsep.join(filter(None, [import_path(workspace), site_dir])),
            APPEND_PATH_VARIABLE: str(tools.coverage),
        }
        self.reports = 0

    def pytest(self, arguments: list[str], label: str, coverage: Path | None = None,
               order_seed: str | None = None, variables: dict[str, str] | None = None) -> tuple[Outcome, Path]:
        """One pytest run; its JUnit report's path (the file may be missing if pytest died)."""
        self.reports += 1
        report = self.work / f"junit-{self.reports}.xml"
        argv = ["python", "-m"]
        if coverage is not None:
            argv += ["coverage", "run", f"--rcfile={coverage.with_suffix('.rc')}", "-m"]
        argv += ["pytest", "-p", "no:cacheprovider", "-p", PYTEST_PLUGIN, "-q", f"--junitxml={report}", *arguments]
        environment = {**self.environment, **(variables or {})}
        if order_seed is not None:
            environment[ORDER_SEED_VARIABLE] = order_seed
        say(f"{label}: pytest {' '.join(arguments)}".rstrip())
        return self.workspace.run_argv(argv, f"({label}) {' '.join(argv)}", environment), report

    def python(self, arguments: list[str], label: str, variables: dict[str, str] | None = None) -> Outcome:
        """The project's interpreter on these arguments, with the path pytest's runs get."""
        argv = ["python", *arguments]
        say(f"{label}: python {arguments[0]}")
        return self.workspace.run_argv(argv, f"({label}) python {arguments[0]} ...",
                                       {**self.environment, **(variables or {})})

    def collect(self, paths: list[str]) -> tuple[Outcome, list[str]]:
        """The node ids pytest collects from these test files."""
        listing = self.work / "collected.txt"
        listing.unlink(missing_ok=True)
        environment = {**self.environment, COLLECTED_VARIABLE: str(listing)}
        argv = ["python", "-m", "pytest", "-p", "no:cacheprovider", "-p", PYTEST_PLUGIN, "-q", "--collect-only", *paths]
        say(f"build: pytest --collect-only {' '.join(paths)}")
        outcome = self.workspace.run_argv(argv, f"(build) {' '.join(argv)}", environment)
        if not listing.is_file() or listing.stat().st_size > MAX_REPORT_BYTES:
            return outcome, []
        return outcome, listing.read_text(encoding="utf-8").splitlines()

    def coverage_config(self, name: str, source_omit: list[str], contexts: bool) -> Path:
        data = self.work / f"{name}.coverage"
        rc = data.with_suffix(".rc")
        omit = ",\n    ".join(source_omit)
        # Each import root (a src/ too): coverage.py finds a never-imported module only by walking
        # packages down from a source directory, and src/ is not a package.
        sources = "\n    ".join(str(root) for root in working_copy_roots(self.workspace))
        rc.write_text("[run]\nbranch = True\nrelative_files = False\n"
                      f"data_file = {data}\nsource =\n    {sources}\n"
                      f"omit =\n    {omit}\n" + ("dynamic_context = test_function\n" if contexts else ""),
                      encoding="utf-8")
        return data

    def coverage_probe(self, runs: list[Path]) -> list[dict[str, Any]] | None:
        """What coverage.py measured in each of these runs (their data files), read in one process."""
        out = self.work / f"coverage-{len(runs)}-{runs[0].stem}.json"
        argv = ["python", "-m", "agentledger_coverage", str(out),
                *[str(part) for data in runs for part in (data, data.with_suffix(".rc"))]]
        outcome = self.workspace.run_argv(argv, " ".join(argv), self.environment)
        if not outcome.succeeded or not out.is_file() or out.stat().st_size > MAX_REPORT_BYTES:
            return None
        return json.loads(out.read_text(encoding="utf-8"))


Outcomes = dict[tuple[str, str], list[str]]


def last_error(output: str) -> str:
    """The last `SomeError: message` line a command printed, '' if it printed none."""
    found = ""
    for line in output.splitlines():
        if match := ERROR_LINE.search(line.strip(" │╭╮╰╯─")):
            found = f"{match[1]}: {match[2].strip(' │')}"
    return found[:MAX_MESSAGE]


def junit_outcomes(report: Path) -> Outcomes:
    """(classname, test name without parameters) -> passed | failed | skipped of each of its cases,
    in the order they ran (a parametrized test has one case per parameter, a test collected five
    times five of each)."""
    if not report.is_file() or report.stat().st_size > MAX_REPORT_BYTES:
        return {}
    try:
        root = ET.parse(report).getroot()
    except ET.ParseError:
        return {}
    outcomes: Outcomes = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", "").split("[", 1)[0])
        tags = {child.tag for child in case}
        outcome = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
        outcomes.setdefault(key, []).append(outcome)
    return outcomes


def junit_messages(report: Path) -> dict[str, tuple[str, str]]:
    """test name -> (exception type, message) of each failed case."""
    messages: dict[str, tuple[str, str]] = {}
    if not report.is_file() or report.stat().st_size > MAX_REPORT_BYTES:
        return messages
    try:
        root = ET.parse(report).getroot()
    except ET.ParseError:
        return messages
    for case in root.iter("testcase"):
        for child in case:
            if child.tag in ("failure", "error"):
                message = child.get("message", "")
                exception, _, text = message.partition(": ")
                messages[case.get("name", "")] = (exception[:200], text[:MAX_MESSAGE])
    return messages


def classname_of(test_path: str) -> str:
    """How pytest's JUnit report names a test module's tests: the path, dotted, without .py."""
    return test_path[:-3].replace("/", ".") if test_path.endswith(".py") else test_path


def collected_as(candidate: Candidate, node_id: str) -> bool:
    return node_id == candidate.key or node_id.startswith((f"{candidate.key}[", f"{candidate.key}::"))


def cases_of(candidate: Candidate, outcomes: Outcomes) -> list[str]:
    """The outcomes of a candidate's cases, in the order they ran: a function's own, or every test
    method's of a class."""
    module = classname_of(candidate.test_path)
    if (module, candidate.name) in outcomes:
        return outcomes[(module, candidate.name)]
    prefix = f"{module}.{candidate.name}"
    return [outcome for (classname, _), found in outcomes.items()
            if classname == prefix or classname.startswith(f"{prefix}.") for outcome in found]


def outcome_of(candidate: Candidate, outcomes: Outcomes) -> str | None:
    """The worst outcome of its cases: it passes only when every case does; None if none ran."""
    found = cases_of(candidate, outcomes)
    if not found:
        return None
    return "failed" if "failed" in found else "skipped" if "skipped" in found else "passed"


# --- the filters ---------------------------------------------------------------------------------

def repeated_runs(candidates: list[Candidate], filter_name: str, run: Callable[[int], Outcomes],
                  runs: int = RUNS) -> None:
    """Drop, with `filter_name`, every surviving candidate that does not pass each of `runs` runs."""
    for number in range(1, runs + 1):
        alive = [c for c in candidates if c.dropped_by is None]
        if not alive:
            return
        outcomes = run(number)
        for candidate in alive:
            outcome = outcome_of(candidate, outcomes)
            if outcome == "passed":
                candidate.runs[filter_name] = candidate.runs.get(filter_name, 0) + 1
            else:
                what = "was not run" if outcome is None else outcome
                candidate.drop(filter_name, f"{what} in run {number} of {runs}")


def repeated_in_one_session(candidates: list[Candidate], filter_name: str, outcomes: Outcomes,
                            runs: int = RUNS) -> None:
    """Drop, with `filter_name`, every surviving candidate that does not pass each of the `runs`
    times one session ran it (its file collected `runs` times over, in order)."""
    for candidate in (c for c in candidates if c.dropped_by is None):
        cases = cases_of(candidate, outcomes)
        if not cases or len(cases) % runs:
            candidate.drop(filter_name, f"ran {len(cases)} case(s), not the same cases {runs} times")
            continue
        size = len(cases) // runs
        for number in range(1, runs + 1):
            chunk = cases[(number - 1) * size:number * size]
            worst = "failed" if "failed" in chunk else "skipped" if "skipped" in chunk else "passed"
            if worst != "passed":
                candidate.drop(filter_name, f"{worst} in run {number} of {runs}")
                break
            candidate.runs[filter_name] = number


def context_owner(context: str, candidates: list[Candidate]) -> Candidate | None:
    """The candidate a coverage context (`module.test` or `module.Class.test`) belongs to."""
    parts = context.split(".")
    for candidate in candidates:
        stem = Path(candidate.test_path).stem
        for index, part in enumerate(parts[:-1]):
            if part == stem and parts[index + 1] == candidate.name:
                return candidate
    return None


def lines_by_candidate(candidates: list[Candidate], alone: dict[str, Any],
                       measured: Callable[[str], bool]) -> dict[str, tuple[set[Any], set[Any]]]:
    """Candidate key -> the (file, line)s and (file, arc)s of the project's code its cases ran."""
    ran: dict[str, tuple[set[Any], set[Any]]] = {}
    for context, files in alone["contexts"].items():
        owner = context_owner(context, candidates)
        if owner is None:
            continue
        lines, branches = ran.setdefault(owner.key, (set(), set()))
        for path, entry in files.items():
            if measured(path):
                lines.update((path, line) for line in entry["lines"])
                branches.update((path, tuple(arc)) for arc in entry["branches"])
    return ran


def keep_coverage_gains(candidates: list[Candidate], baseline: dict[str, Any],
                        ran: dict[str, tuple[set[Any], set[Any]]], measured: Callable[[str], bool],
                        alive_mutant_lines: AbstractSet[tuple[str, int]] = frozenset()) -> None:
    """In order, keep a surviving candidate only if it runs a line or a branch of the project's
    code that neither the suite without the candidates nor a candidate kept before it runs, or a
    line holding a mutant the suite leaves alive (which only the mutation filter can judge)."""
    covered_lines = {(path, line) for path, entry in baseline["files"].items() if measured(path)
                     for line in entry["executed"]}
    covered_branches = {(path, tuple(arc)) for path, entry in baseline["files"].items() if measured(path)
                        for arc in entry["executed_branches"]}
    for candidate in candidates:
        if candidate.dropped_by is not None:
            continue
        lines, branches = ran.get(candidate.key, (set(), set()))
        new_lines, new_branches = lines - covered_lines, branches - covered_branches
        if not new_lines and not new_branches and not lines & alive_mutant_lines:
            candidate.drop("coverage", "covers no line or branch the suite (or a test kept before it) does not, "
                                       "and no line where a mutant it leaves alive sits")
            continue
        candidate.gain = {"lines": len(new_lines), "branches": len(new_branches)}
        covered_lines |= new_lines
        covered_branches |= new_branches


def module_coverage(report: dict[str, Any] | None, path: Path) -> dict[str, int] | None:
    entry = (report or {}).get("files", {}).get(str(path))
    if entry is None:
        return None
    return {"lines": len(entry["statements"]), "lines_covered": len(entry["executed"]),
            "branches": len(entry["branches"]), "branches_covered": len(entry["executed_branches"])}


def is_test_path(path: str) -> bool:
    *directories, name = path.split("/")
    return (name == "conftest.py" or (name.startswith("test_") and name.endswith(".py"))
            or name.endswith("_test.py") or "tests" in directories or "test" in directories)


TEST_OMIT = ["*/tests/*", "*/test/*", "*/test_*.py", "*/*_test.py", "*/conftest.py"]


# --- one generation ------------------------------------------------------------------------------

class SessionBudget:
    """Seconds counted over the sessions that spend them, not the time between them: a run whose
    Pynguin searches took most of its length still meets its candidates with the mutants."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.spent = 0.0

    def left(self) -> int:
        return int(self.seconds - self.spent)

    @contextlib.contextmanager
    def spending(self) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.spent += time.monotonic() - started


class Generation:
    filters: tuple[str, ...] = FILTERS

    def __init__(self, workspace: Workspace, venv: Path | None, tools: Tools, request: Request,
                 progress: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.workspace = workspace
        self.request = request
        self.progress = progress  # told of each step as it starts (upload.ProgressPoster in a build)
        self.tools = tools
        self.runner = Runner(workspace, venv, tools, request.seed)
        self.candidates: list[Candidate] = []
        self.findings: list[Finding] = []
        self.files: dict[str, TestFile] = {}
        self.headers: dict[str, str] = {}  # module -> the header of the test file written for it
        self.notes: list[str] = []
        self.writer_failures: dict[str, WriterFailure] = {}  # by module, while it has no test
        self.timings: dict[str, float] = {}
        self.alone_coverage: Path | None = None  # the candidates alone, measured by test
        self.collected: list[str] = []  # the candidates' test cases, as pytest names them
        self.ran: dict[str, tuple[set[Any], set[Any]]] = {}  # candidate key -> the lines and arcs it runs
        self.mutants: list[ModuleMutants] = []
        self.skipped: dict[str, str] = {}  # module -> why no test is written for it
        self.suite_judged = False  # whether the mutants carry the suite's verdict yet
        self.names_used: dict[str, dict[str, int]] = {}  # module -> its tests' names, over every round
        self.style = project_test_style(workspace.repository, frozenset(request.candidate_files))
        self.writing_deadline = time.monotonic() + request.run_seconds  # Pynguin's, from its first search
        self.started = time.monotonic()
        self.mutation_budget = SessionBudget(request.mutation_run_seconds)

    @property
    def repository(self) -> Path:
        return self.workspace.repository

    def run(self) -> dict[str, Any]:
        self.timed("mutation_before", self.mutation_before)
        self.timed("write", self.write_candidates)
        baseline = self.filter_all()
        for round_number in range(2, PYNGUIN_ROUNDS + 1):
            targets = self.targets_left()
            if not targets:
                break
            written = len(self.candidates)
            self.timed("write", partial(self.run_pynguin, targets, round_number))
            if len(self.candidates) > written:
                self.start_again()
                baseline = self.filter_all()
        generated = len(self.candidates)
        kept = [c for c in self.candidates if c.dropped_by is None]
        after = self.timed("after", lambda: self.write_kept(kept)) if kept else baseline
        self.timed("findings", self.record_findings)
        return self.result(generated, baseline, after)

    def filter_all(self) -> dict[str, Any] | None:
        """The filters, in order, over every candidate not yet dropped; the suite's coverage."""
        self.candidates = self.candidates[:MAX_CANDIDATES]
        if not self.candidates:
            return None
        self.timed("build", self.filter_build)
        self.timed("pass_alone", self.filter_alone)
        self.timed("pass_with_suite", self.filter_with_suite)
        baseline = self.timed("coverage", self.filter_coverage)
        self.timed("mutation", self.filter_mutation)
        return baseline

    def targets_left(self) -> list[Target]:
        """The targets a further round of Pynguin's is for: searched before (not skipped, not
        failed), with mutants that no test kills, while the run's writing budget lasts."""
        if self.request.writer != "pynguin" or time.monotonic() >= self.writing_deadline:
            return []
        alive = {module.module for module in self.mutants if module.alive()}
        return [target for target in self.request.targets if target.module in alive
                and target.module in self.headers and target.module not in self.skipped]

    def start_again(self) -> None:
        """The filters judge again from the start, the kept tests first (so they keep their gains
        and kills) and the new candidates after them."""
        self.collected, self.ran = [], {}
        for candidate in self.candidates:
            if candidate.dropped_by is None:
                candidate.runs, candidate.gain, candidate.kills = {}, {}, []
        for module in self.mutants:
            for mutant in module.mutants:
                mutant.killed_by = None

    def timed(self, name: str, step: Callable[[], Any]) -> Any:
        self.report_progress(name)
        started = time.monotonic()
        try:
            return step()
        finally:
            self.timings[name] = round(self.timings.get(name, 0.0) + time.monotonic() - started, 3)

    def report_progress(self, step: str, module: str | None = None, round_number: int = 1) -> None:
        """Where the build is, for a person watching the run: the step, the module being written,
        the counts so far."""
        if self.progress is None:
            return
        dropped = sum(1 for candidate in self.candidates if candidate.dropped_by is not None)
        self.progress({"step": step, "writer": self.request.writer, "module": module, "round": round_number,
                       "modules": len(self.request.targets), "written": len(self.candidates), "dropped": dropped,
                       "elapsed_s": int(time.monotonic() - self.started)})

    # -- writing --------------------------------------------------------------------------------
    def write_candidates(self) -> None:
        if self.request.writer == "pynguin":
            self.run_pynguin(self.request.targets, 1)
        for path in self.request.candidate_files:
            file = self.repository / path
            try:
                self.add_file(split_test_file(path, self.read_text(file, self.repository)))
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError) as error:
                self.notes.append(f"{path}: not a Python test module ({type(error).__name__}: {error})"[:MAX_MESSAGE])
                file.unlink(missing_ok=True)

    def add_file(self, test_file: TestFile, module: str | None = None) -> None:
        """A test file's tests become candidates; a file that holds some already (an earlier
        round's) takes the new ones after them, under one header."""
        earlier = self.files.get(test_file.path)
        if earlier is not None:
            lines = earlier.header.splitlines()
            header = "\n".join([*lines, *(line for line in test_file.header.splitlines() if line not in lines)])
            test_file = TestFile(test_file.path, header, earlier.tests + test_file.tests)
        self.files[test_file.path] = test_file
        known = {candidate.key for candidate in self.candidates}
        self.candidates += [Candidate(test_file.path, name, source[:MAX_CANDIDATE_SOURCE], module)
                            for name, source in test_file.tests if f"{test_file.path}::{name}" not in known]

    def run_pynguin(self, targets: list[Target], round_number: int) -> None:
        if not self.tools.pynguin.is_file():
            raise GenerationError(f"Pynguin is not installed in {self.tools.root}: did `prepare` run?")
        if round_number == 1:
            self.writing_deadline = time.monotonic() + self.request.run_seconds
        deadline = self.writing_deadline
        for target in targets:
            if target.module in self.skipped:
                say(f"pynguin: {target.module} skipped: {self.skipped[target.module]}")
                continue
            left = int(deadline - time.monotonic())
            if left < 1:
                why = f"not searched, the run's {self.request.run_seconds} s budget is spent"
                self.notes.append(f"{target.module}: {why}")
                self.writer_failed(target.module, "not_searched", why)
                continue
            if round_number > 1:
                say(f"pynguin: round {round_number} for {target.module}: mutants no kept test kills are left")
            self.report_progress("write", target.module, round_number)
            self.search_module(target, min(self.request.module_seconds, left),
                               self.request.seed + ROUND_SEED_STEP * (round_number - 1))

    def search_module(self, target: Target, budget_s: int, seed: int) -> None:
        """Pynguin's first search aims at branch coverage alone, which is quick and finds the inputs
        that raise; its tests often cover a line by raising there. Only if none of them passes, a
        second search also aims at checked coverage (lines an assertion depends on), which asks
        for tests that assert what the code returns, in the rest of the module's budget.

        A search ends at its iteration bound or at full coverage; its time is a guard (two thirds
        of the module's budget for the first, the rest for the second), so that a busy machine
        gets the tests a quiet one does, only later."""
        started = time.monotonic()
        used = self.names_used.setdefault(target.module, {})
        header: str | None = None
        tests: list[tuple[str, str]] = []
        for number, metrics in enumerate(PYNGUIN_SEARCHES):
            left = budget_s - int(time.monotonic() - started)
            if left < 1 or (tests and number > 0):
                break
            share = left if number == len(PYNGUIN_SEARCHES) - 1 else max(1, left * 2 // 3)
            text = self.pynguin(target, share, seed + number, metrics)
            if text is None:
                continue
            try:
                test_file, findings = pynguin_candidates(text, target, used, self.style)
            except (SyntaxError, ValueError) as error:
                self.notes.append(f"{target.module}: Pynguin wrote no parseable module ({error})"[:MAX_MESSAGE])
                self.writer_failed(target.module, "unreadable", f"Pynguin wrote no parseable module ({error})")
                continue
            header = header or test_file.header
            tests += test_file.tests
            self.findings += findings[:MAX_FINDINGS - len(self.findings)]
        if header is None:
            return
        self.writer_failures.pop(target.module, None)
        self.add_file(TestFile(target.test_path, header, tests), target.module)
        written = self.files[target.test_path]
        (self.repository / target.test_path).parent.mkdir(parents=True, exist_ok=True)
        (self.repository / target.test_path).write_text(
            join_test_file(written.header, [source for _, source in written.tests]), encoding="utf-8")
        self.headers[target.module] = written.header

    def pynguin(self, target: Target, budget_s: int, seed: int, metrics: tuple[str, ...]) -> str | None:
        output = self.runner.work / "pynguin" / f"{target.module}-{seed}"
        shutil.rmtree(output, ignore_errors=True)
        output.mkdir(parents=True)
        project = self.repository / "src" if target.path.startswith("src/") else self.repository
        argv = [str(self.tools.pynguin), "--project-path", str(project), "--module-name", target.module,
                "--output-path", str(output), "--seed", str(seed), "--coverage-metrics", *metrics,
                "--maximum-search-time", str(budget_s), "--maximum-iterations", str(self.request.iterations),
                # Assertions by mutation analysis are unbounded by default: on a large module they
                # outran the margin and the whole search was lost. Bounded in mutants (a seeded
                # sample), and in time within the margin only as a guard: the assertions a test gets
                # decide which bugs it catches, and a busy machine must not make them fewer.
                "--maximum-mutation-time", str(PYNGUIN_MARGIN_S // 2),
                "--maximum-mutants", str(PYNGUIN_MAX_MUTANTS),
                "--report-dir", str(output / "report")]
        # Pynguin imports the module with its own interpreter: the project's packages come after its own.
        site_packages = [str(p) for p in self.venv_site_packages()]
        # Pynguin's seed alone leaves the order of its sets to the hash seed: with both, a seed
        # writes the same tests on every machine.
        environment = {**self.workspace.environment, "PYNGUIN_DANGER_AWARE": "1", "PYTHONHASHSEED": str(seed),
                       "PYTHONPATH": str(self.workspace.root / BUILD_SITE_DIR),
                       APPEND_PATH_VARIABLE: os.pathsep.join(site_packages)}
        say(f"pynguin: {target.module} (seed {seed}, {' and '.join(metrics).lower()} coverage, {budget_s} s, "
                   f"{self.request.iterations} iterations)")
        printed_from = self.workspace.log_size()
        outcome = self.workspace.run_argv(argv, " ".join(argv), environment, cwd=self.repository,
                                          timeout_s=budget_s + PYNGUIN_MARGIN_S)
        written = sorted(output.glob("test_*.py"))
        if not outcome.succeeded or not written:
            why = describe(outcome, budget_s + PYNGUIN_MARGIN_S)
            self.notes.append(f"{target.module}: Pynguin (seed {seed}) wrote no tests ({why})")
            ending = "timed_out" if outcome.timed_out else "wrote_nothing" if outcome.succeeded else "crashed"
            error = last_error(self.workspace.output_since(printed_from, OUTPUT_READ_FOR_AN_ERROR))
            self.writer_failed(target.module, ending, f"{error} ({why})" if error else why)
            return None
        try:
            return self.read_text(written[0], output)
        except (ValueError, OSError) as error:
            self.notes.append(f"{target.module}: Pynguin's output could not be read ({error})"[:MAX_MESSAGE])
            self.writer_failed(target.module, "unreadable", f"Pynguin's output could not be read ({error})")
            return None

    def writer_failed(self, module: str, what: str, message: str) -> None:
        earlier = self.writer_failures.get(module)
        self.writer_failures[module] = WriterFailure(module, what, message[:MAX_MESSAGE],
                                                     earlier.tries + 1 if earlier else 1)

    @staticmethod
    def read_text(path: Path, within: Path) -> str:
        """A file the code's processes could have replaced (with a link, a pipe, a huge file): read
        only if it is still a regular file of bounded size inside `within`."""
        data = read_untrusted(path, within, MAX_CANDIDATE_FILE_BYTES)
        if data is None:
            raise ValueError(f"{path.name} is not a regular file of at most {MAX_CANDIDATE_FILE_BYTES} bytes")
        return data.decode("utf-8")

    def venv_site_packages(self) -> list[Path]:
        venv = self.runner.environment.get("VIRTUAL_ENV")
        return sorted(Path(venv).glob("lib/python*/site-packages")) if venv else []

    # -- the filters ----------------------------------------------------------------------------
    def filter_build(self) -> None:
        """All candidate files collected at once; only if that fails, each on its own, so one file
        that does not import does not sink the others."""
        outcome, collected = self.runner.collect(sorted(self.files))
        groups = [(sorted(self.files), outcome, collected)] if outcome.succeeded else [
            ([path], *self.runner.collect([path])) for path in sorted(self.files)]
        for paths, outcome, collected in groups:
            self.collected += collected if outcome.succeeded else []
            for candidate in (c for c in self.candidates if c.test_path in paths):
                if not outcome.succeeded:
                    candidate.drop("build", f"pytest could not collect {candidate.test_path} "
                                            f"({describe(outcome, 0)})")
                elif not any(collected_as(candidate, node) for node in collected):
                    candidate.drop("build", "pytest collected no test of it")
                else:
                    candidate.runs["build"] = 1

    def filter_alone(self) -> None:
        """The candidate files alone, each collected `runs` times over in one session (under
        coverage, by test, for the coverage filter): that many consecutive runs of every candidate."""
        coverage = self.runner.coverage_config("alone", TEST_OMIT, contexts=True)
        runs = self.request.runs
        _, report = self.runner.pytest(["--keep-duplicates", *self.deselected(), *sorted(self.files) * runs],
                                       f"pass alone ({runs} runs of each)", coverage=coverage)
        repeated_in_one_session(self.candidates, "pass_alone", junit_outcomes(report), runs)
        self.alone_coverage = coverage

    def filter_with_suite(self) -> None:
        def run(number: int) -> Outcomes:
            seed = f"{self.request.seed}-{number}" if self.request.random_order else None
            _, report = self.runner.pytest(self.deselected(), f"pass with the suite {number}/{self.request.runs}",
                                           order_seed=seed)
            return junit_outcomes(report)

        repeated_runs(self.candidates, "pass_with_suite", run, self.request.runs)

    def filter_coverage(self) -> dict[str, Any] | None:
        baseline_data = self.runner.coverage_config("baseline", TEST_OMIT, contexts=False)
        ignored = [f"--ignore={path}" for path in sorted(self.files)]
        self.runner.pytest(ignored, "coverage without the candidates", coverage=baseline_data)
        assert self.alone_coverage is not None  # filter_alone measured the candidates
        measured_runs = self.runner.coverage_probe([baseline_data, self.alone_coverage])
        baseline, alone = measured_runs if measured_runs and len(measured_runs) == 2 else (None, None)
        if baseline is None or alone is None:
            for candidate in self.candidates:
                candidate.drop("coverage", "coverage could not be measured; see the output")
            return baseline
        root = str(self.repository.resolve())

        def measured(path: str) -> bool:
            relative = os.path.relpath(path, root)
            return not relative.startswith("..") and not is_test_path(relative.replace(os.sep, "/"))

        self.ran = lines_by_candidate(self.candidates, alone, measured)
        keep_coverage_gains(self.candidates, baseline, self.ran, measured, self.alive_mutant_lines())
        return baseline

    # -- mutation -------------------------------------------------------------------------------
    def mutation_before(self) -> None:
        """mutmut's mutants of every targeted module. For Pynguin, which is yet to search, the
        suite's verdict on each too: a module whose every mutant the suite kills is skipped, with
        that reason. Candidates that came with the request are written already: the suite's verdict
        is taken with theirs, in one session (filter_mutation)."""
        if not self.tools.mutmut.is_file():
            raise GenerationError(f"mutmut is not installed in {self.tools.root}: did `prepare` run?")
        self.mutants = self.make_mutants(self.request.targets)
        if self.request.writer != "pynguin":
            return
        groups = suite_plan_groups(self.mutants, self.request.mutation_module_seconds)
        if not groups:
            return
        results = self.mutation_session(groups, [], [], "mutants against the suite")
        if results is None:
            for module in self.mutants:
                module.reason = module.reason or "the suite's run against the mutants failed; see the output"
            return
        apply_suite_verdict(self.mutants, results)
        self.suite_judged = True
        for module in self.mutants:
            if module.all_killed():
                self.skipped[module.module] = f"the suite already kills every mutant of it ({len(module.mutants)})"
                module.reason = self.skipped[module.module]
                self.notes.append(f"{module.module}: no test written: {module.reason}")

    def make_mutants(self, targets: list[Target]) -> list[ModuleMutants]:
        """Each target's mutants, made by one process of mutmut's for all of them."""
        work = self.runner.work / "mutation"
        modules = []
        for target in targets:
            (work / target.module).mkdir(parents=True, exist_ok=True)
            modules.append(ModuleMutants(target.module, target.path, str((self.repository / target.path).resolve())))
        if not modules:
            return modules
        request, output = work / "request.json", work / "mutants.json"
        request.write_text(json.dumps({"modules": [
            {"path": module.file, "trampolined": str(work / module.module / "trampolined.py")} for module in modules]}),
            encoding="utf-8")
        script = self.workspace.root / BUILD_SITE_DIR / MUTANTS_SCRIPT
        argv = [str(self.tools.mutmut), "-I", str(script), str(request), str(output)]
        say(f"mutmut: mutants of {', '.join(module.module for module in modules)}")
        printed_from = self.workspace.log_size()
        outcome = self.workspace.run_argv(argv, " ".join(argv), self.workspace.environment, cwd=work,
                                          timeout_s=max(30, self.request.mutation_run_seconds))
        try:
            if not outcome.succeeded:
                raise ValueError(last_error(self.workspace.output_since(printed_from, OUTPUT_READ_FOR_AN_ERROR))
                                 or describe(outcome, self.request.mutation_run_seconds))
            # A report, not a test file: every module's mutants in one (boltons' passed 1 MiB).
            report = read_untrusted(output, work, MAX_REPORT_BYTES)
            if report is None:
                raise ValueError(f"{output.name} is not a regular file of at most {MAX_REPORT_BYTES} bytes")
            answers = json.loads(report)["modules"]
            for module, answer in zip(modules, answers, strict=True):
                if "error" in answer:
                    module.reason = f"mutmut made no mutants of it ({str(answer['error'])[:MAX_MESSAGE]})"
                else:
                    module.mutants = read_mutants(answer, module.module)
                    module.reason = "" if module.mutants else "mutmut makes no mutant of it (it mutates functions)"
        except (ValueError, OSError, KeyError, TypeError) as error:
            for module in modules:
                module.mutants, module.reason = [], f"mutmut made no mutants of it ({error})"[:MAX_MESSAGE]
        failing = self.unimportable([module for module in modules if module.mutants])
        for module in modules:
            if module.module in failing:
                module.mutants = []
                module.reason = f"mutmut's trampolines of it do not import ({failing[module.module]})"[:MAX_MESSAGE]
        for module in modules:
            why = f" ({module.reason})" if module.reason else ""
            say(f"mutmut: {module.module}: {len(module.mutants)} mutants{why}")
            if module.reason:
                self.notes.append(f"{module.module}: {module.reason}")
        return modules

    def unimportable(self, modules: list[ModuleMutants]) -> dict[str, str]:
        """The modules whose trampolined copy does not import, each with its error: mutmut's
        trampolines break some class bodies (sortedcontainers' calls its name-mangled `__make_cmp`
        while its class is made), and every test of such a module would fail to collect."""
        if not modules:
            return {}
        work = self.runner.work / "mutation"
        output = work / "imports.json"
        output.unlink(missing_ok=True)
        originals = {module.file: Path(module.file).read_bytes() for module in modules}
        try:
            for module in modules:
                shutil.copyfile(work / module.module / "trampolined.py", module.file)
            self.runner.python(["-c", IMPORT_CHECK, str(output), *(module.module for module in modules)],
                               "mutants' imports", {APPEND_PATH_VARIABLE: str(self.tools.mutmut_runtime)})
        finally:
            for file, data in originals.items():
                Path(file).write_bytes(data)
        report = read_untrusted(output, work, MAX_REPORT_BYTES)
        try:
            failed = json.loads(report) if report is not None else {}
        except ValueError:
            return {}
        return {str(name): str(error) for name, error in failed.items()} if isinstance(failed, dict) else {}

    def alive_mutant_lines(self) -> set[tuple[str, int]]:
        """Where a mutant the suite leaves alive sits; before the suite's verdict, where any sits."""
        return {(module.file, mutant.line) for module in self.mutants
                for mutant in (module.alive() if self.suite_judged else module.mutants)}

    def filter_mutation(self) -> None:
        """Each candidate that covered a line of a mutant the suite leaves alive runs against that
        mutant (after the suite, where its verdict is yet to be taken); a candidate is kept only if
        it kills one."""
        unjudged = {module.module: module.reason for module in self.mutants
                    if not module.mutants and module.reason and module.module not in self.skipped}
        for name, reason in unjudged.items():
            note = f"{name}: mutation cannot judge its tests ({reason}); those that add coverage are kept"
            if note not in self.notes:
                self.notes.append(note)
        alive = [c for c in self.candidates if c.dropped_by is None and c.module not in unjudged]
        if not alive:
            return
        cases = {candidate.key: [node for node in self.collected if collected_as(candidate, node)]
                 for candidate in alive}
        by_line: dict[tuple[str, int], list[str]] = {}
        for candidate in alive:
            for path, line in self.ran.get(candidate.key, (set(), set()))[0]:
                by_line.setdefault((path, line), []).extend(cases[candidate.key])
        groups = candidate_plan_groups(self.mutants, self.request.mutation_module_seconds,
                                       lambda file, line: by_line.get((file, line), []),
                                       suite_first=not self.suite_judged)
        candidate_cases = [node for found in cases.values() for node in found]
        if self.suite_judged:  # the candidates' files alone
            arguments, label = [*self.deselected(), *sorted(self.files)], "mutants against the candidates"
        else:
            arguments, label = self.deselected(), "mutants against the suite, then the candidates"
        results = self.mutation_session(groups, arguments, candidate_cases, label) if groups else {}
        if results is None:
            for candidate in alive:
                candidate.drop("mutation", "the candidates' run against the mutants failed; see the output")
            return
        if not self.suite_judged:
            apply_suite_verdict(self.mutants, results)
            self.suite_judged = True
        owners = {node: key for key, found in cases.items() for node in found}
        kills = attribute_kills(self.mutants, results, [c.key for c in alive], owners.get)
        for candidate in alive:
            candidate.kills = kills.get(candidate.key, [])
            if not candidate.kills:
                candidate.drop("mutation", "kills no mutant that the suite leaves alive")

    def mutation_session(self, groups: list[dict[str, Any]], arguments: list[str], candidate_cases: list[str],
                         label: str) -> dict[str, Any] | None:
        """One pytest session of agentledger_mutation over these mutants, with the targeted modules
        behind mutmut's trampolines for its length: each mutant's result, None if it ended without one."""
        left = self.mutation_budget.left()
        if left < 1:
            self.notes.append(f"{label}: not run, the run's {self.request.mutation_run_seconds} s of mutation is spent")
            return {}
        work = self.runner.work / "mutation"
        plan, output = work / "plan.json", work / "results.json"
        output.unlink(missing_ok=True)
        modules = [module for module in self.mutants if module.mutants]
        plan.write_text(json.dumps({"files": [module.file for module in modules], "groups": groups,
                                    "candidates": candidate_cases,
                                    "output": str(output), "run_budget_s": left,
                                    "baseline_timeout_s": max(60, self.workspace.config.timeout_s // 2)}),
                        encoding="utf-8")
        originals = {module.file: Path(module.file).read_bytes() for module in modules}
        try:
            for module in modules:
                shutil.copyfile(work / module.module / "trampolined.py", module.file)
            appended = [str(self.tools.coverage), str(self.tools.mutmut_runtime)]
            variables = {MUTATION_PLAN_VARIABLE: str(plan), APPEND_PATH_VARIABLE: os.pathsep.join(appended)}
            with self.mutation_budget.spending():
                self.runner.pytest(["-p", MUTATION_PLUGIN, *arguments], label, variables=variables)
        finally:
            for file, data in originals.items():
                Path(file).write_bytes(data)
        report = read_untrusted(output, self.runner.work, MAX_REPORT_BYTES)
        try:
            return dict(json.loads(report)["mutants"]) if report is not None else None
        except (ValueError, KeyError, TypeError):
            return None

    def deselected(self) -> list[str]:
        return [f"--deselect={c.key}" for c in self.candidates if c.dropped_by is not None]

    def write_kept(self, kept: list[Candidate]) -> dict[str, Any] | None:
        """The kept tests written into their files, and the suite with them measured again."""
        for path, test_file in self.files.items():
            names = {c.name for c in kept if c.test_path == path}
            target = self.repository / path
            if names:
                target.write_text(join_test_file(test_file.header, [source for name, source in test_file.tests
                                                                    if name in names]), encoding="utf-8")
            else:
                target.unlink(missing_ok=True)
        data = self.runner.coverage_config("after", TEST_OMIT, contexts=False)
        self.runner.pytest([], "coverage with the kept tests", coverage=data)
        measured_runs = self.runner.coverage_probe([data])
        return measured_runs[0] if measured_runs else None

    def record_findings(self) -> None:
        """Each finding runs once on its own, to say which exception its input raises."""
        if not self.findings:
            return
        findings_dir = self.runner.work / "findings"
        findings_dir.mkdir(parents=True, exist_ok=True)
        by_module: dict[str, list[Finding]] = {}
        for finding in self.findings:
            by_module.setdefault(finding.module, []).append(finding)
        files = []
        number = {id(finding): index for index, finding in enumerate(self.findings)}
        for module, findings in by_module.items():
            file = findings_dir / f"test_findings_{module.replace('.', '_')}.py"
            # Each under a name of its own: two modules' findings may share a test name.
            sources = [f.source.replace(f"def {f.test}(", f"def test_finding_{number[id(f)]}(", 1) for f in findings]
            file.write_text(join_test_file(self.headers[module], sources), encoding="utf-8")
            files.append(str(file))
        _, report = self.runner.pytest([f"--rootdir={self.repository}", *files], "findings")
        messages = junit_messages(report)
        for finding in self.findings:
            finding.exception, finding.message = messages.get(f"test_finding_{number[id(finding)]}",
                                                              ("", "it did not raise when run again"))

    # -- the result -----------------------------------------------------------------------------
    def result(self, generated: int, before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
        funnel = {"generated": generated}
        survivors = generated
        for name in self.filters:
            survivors -= sum(1 for c in self.candidates if c.dropped_by == name)
            funnel[name] = survivors
        coverage = {}
        for target in self.request.targets:
            path = (self.repository / target.path).resolve()
            coverage[target.path] = {"before": module_coverage(before, path), "after": module_coverage(after, path)}
        files: dict[str, str] = {}
        for name in sorted(self.files):
            data = read_untrusted(self.repository / name, self.repository, MAX_CANDIDATE_FILE_BYTES)
            if data is not None:
                files[name] = data.decode("utf-8", errors="replace")
        return {
            "writer": self.request.writer,
            "funnel": funnel,
            "candidates": [asdict(c) for c in self.candidates],
            "findings": [asdict(f) for f in self.findings],
            "coverage": coverage,
            "mutation": {module.path: module.report() for module in self.mutants},
            "files": files,
            "notes": self.notes,
            "writer_failures": [asdict(failure) for failure in self.writer_failures.values()],
            "timings": self.timings,
        }


# --- the tools -----------------------------------------------------------------------------------

def tools_root() -> Path:
    """Where agentledger's own tools are cached: named by their pins, the interpreter and the place
    (a virtualenv works only where it was made), never by anything of the repository's."""
    pins = json.dumps([PYNGUIN_REQUIREMENT, COVERAGE_REQUIREMENT, MUTMUT_REQUIREMENT, list(sys.version_info[:2]),
                       str(cache_root())])
    return cache_root() / TOOLS_DIR / hashlib.sha256(pins.encode()).hexdigest()[:24]


def install_tools(workspace: Workspace) -> int:
    """Pynguin in a virtualenv of its own (it pins its own pytest), mutmut in another (it makes the
    mutants), and coverage.py and mutmut alone (what a trampolined module imports) in directories
    the project's interpreter appends to its path. By the kit itself, before any command of the
    repository's has run, isolated from the repository (`-I`, run from the kit's own directory) and
    from wheels only, so no package's own code runs here: what it installs is shared by every
    repository's builds."""
    if load_request(workspace.root / GENERATION_REQUEST_FILE).language == "java":
        say("no tools to install: Surefire and JaCoCo come with the project's own build")
        return 0
    root = tools_root()
    if (root / TOOLS_MARKER).exists():
        say(f"tools cached ({root.name})")
        return 0
    say(f"installing agentledger's tools: {PYNGUIN_REQUIREMENT}, {COVERAGE_REQUIREMENT}, {MUTMUT_REQUIREMENT}")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    pip = ["-I", "-m", "pip", "install", "--quiet", "--no-input", "--disable-pip-version-check", "--only-binary=:all:"]
    steps = [
        [sys.executable, "-I", "-m", "venv", str(root / "pynguin")],
        [str(root / "pynguin" / "bin" / "python"), *pip, PYNGUIN_REQUIREMENT],
        [sys.executable, *pip, "--target", str(root / "coverage"), COVERAGE_REQUIREMENT],
        [sys.executable, "-I", "-m", "venv", str(root / "mutmut")],
        [str(root / "mutmut" / "bin" / "python"), *pip, MUTMUT_REQUIREMENT],
        [sys.executable, *pip, "--no-deps", "--target", str(root / "mutmut-runtime"), MUTMUT_REQUIREMENT],
    ]
    environment = {"PATH": workspace.environment.get("PATH", ""), "HOME": str(workspace.state),
                   "PIP_CACHE_DIR": str(workspace.state / "pip")}
    for argv in steps:
        outcome = run_logged(argv, " ".join(argv), environment, workspace.state, workspace.log,
                             workspace.config.timeout_s, CodeUser(None, None))
        if not outcome.succeeded:
            say(f"installing the tools failed ({describe(outcome, workspace.config.timeout_s)})")
            return 1
    (root / TOOLS_MARKER).touch()
    return 0
