"""What is there: the documented objects of a repository (modules, classes, methods, functions),
their doctest examples, and whether the existing tests import or call them."""

from __future__ import annotations

import ast
import doctest
from collections import deque
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from agentledger.agent import java
from agentledger.caches import ContentCache
from agentledger.fingerprints import sha256_bytes

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentledger.source import SourceSnapshot

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
DocumentedNode = ast.Module | ast.ClassDef | FunctionNode
MODULE_OBJECT = ""  # the qualified name of a module's own docstring
SOURCE_ROOTS = ("src",)
CALLED_ATTRIBUTE = "."  # marks, among the used names, a member some test calls or reads (a property)
# Files analysed before, by content: a warm function or `serve` inspecting a repository again
# (a resume after a source change, the next run) parses only the files that changed.
ANALYSES_KEPT = 20_000


class ObjectInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str  # qualified name within its module: "f", "Class", "Class.method"; "" for the module
    kind: str  # module | class | function | method
    line: int
    examples: int  # doctest examples in its docstring
    tested: bool  # an existing test imports or calls it


class ModuleInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    objects: list[ObjectInfo]


class Inventory(BaseModel):
    model_config = ConfigDict(frozen=True)

    revision: str
    files: dict[str, str]  # path -> sha256 of the bytes actually parsed
    modules: list[ModuleInfo]
    untested: list[str]  # "path::name" of public objects no test imports or calls
    unparseable: dict[str, str]  # path -> parse error

    @property
    def documented(self) -> int:
        """Objects with doctest examples."""
        return sum(1 for module in self.modules for obj in module.objects if obj.examples)


def is_test_file(path: str) -> bool:
    *directories, name = path.split("/")  # snapshot paths are POSIX and relative
    return (
        name == "conftest.py"
        or (name.startswith("test_") and name.endswith(".py"))
        or name.endswith("_test.py")
        or "tests" in directories
    )


# Python files that are the project's tooling, fixtures or someone else's code, not its library: no
# writer targets them (running setup.py or a __main__ module runs a command, not code a test should
# pin; a frozen copy under tools/ or a vendored package is pinned by its own project).
TOOLING_FILES = frozenset({"setup.py", "versioneer.py", "noxfile.py", "fabfile.py", "__main__.py", "conf.py"})
TOOLING_DIRECTORIES = frozenset({"docs", "doc", "examples", "benchmarks", "scripts", "tools", "tool", "fixtures",
                                 "testdata", "test_data", "vendor", "vendored", "_vendor", "third_party"})


def is_project_tooling(path: str) -> bool:
    *directories, name = path.split("/")
    return name in TOOLING_FILES or bool(TOOLING_DIRECTORIES.intersection(directories))


def importable_name(path: str) -> str | None:
    """How a test names the module at `path`: a Python module's import name, a Java class's
    qualified name."""
    return module_import_path(path) or java.class_name(path)


def module_import_path(path: str) -> str | None:
    """`pkg/mod.py` -> `pkg.mod`, `pkg/__init__.py` -> `pkg`, `src/pkg/mod.py` -> `pkg.mod`; None if
    Python cannot import it by name."""
    pure = PurePosixPath(path)
    if pure.suffix != ".py":
        return None
    parts = list(pure.with_suffix("").parts)
    if len(parts) > 1 and parts[0] in SOURCE_ROOTS:
        parts.pop(0)
    if parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


def parse_module(source: bytes, path: str) -> ast.Module:
    """Parse Python source; raises SyntaxError or ValueError (e.g. bad encoding, null bytes)."""
    return ast.parse(source, filename=path)


def documented_objects(tree: ast.Module) -> Iterator[tuple[str, str, DocumentedNode]]:
    """(qualified name, kind, node) of the module, its public classes and functions and the public
    methods of those classes; a later definition of a name replaces an earlier one, as at run time."""
    yield MODULE_OBJECT, "module", tree
    for node in _public_definitions(tree.body):
        if isinstance(node, ast.ClassDef):
            yield node.name, "class", node
            for method in _public_definitions(node.body):
                if not isinstance(method, ast.ClassDef):
                    yield f"{node.name}.{method.name}", "method", method
        else:
            yield node.name, "function", node


def _public_definitions(body: list[ast.stmt]) -> list[ast.ClassDef | FunctionNode]:
    by_name = {node.name: node for node in body
               if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
               and not node.name.startswith("_")}
    return sorted(by_name.values(), key=lambda node: node.lineno)


def docstring_examples(node: DocumentedNode) -> list[doctest.Example]:
    return doctest.DocTestParser().get_examples(ast.get_docstring(node, clean=True) or "")


@dataclass(frozen=True)
class FileAnalysis:
    """What one file's content says: its documented objects (name, kind, line, examples), or,
    for a test file, the names it uses; or why it does not parse."""

    objects: tuple[tuple[str, str, int, int], ...] = ()
    used: frozenset[str] = frozenset()
    error: str | None = None


ANALYSES: ContentCache[tuple[str, bool], FileAnalysis] = ContentCache(ANALYSES_KEPT)


def analyse_file(source: bytes, path: str) -> FileAnalysis:
    try:
        tree = parse_module(source, path)
    except (SyntaxError, ValueError) as error:
        return FileAnalysis(error=f"{type(error).__name__}: {error}")
    if is_test_file(path):
        return FileAnalysis(used=frozenset(used_names(tree)))
    return FileAnalysis(objects=tuple((name, kind, getattr(node, "lineno", 1), len(docstring_examples(node)))
                                      for name, kind, node in documented_objects(tree)))


def inspect_repository(snapshot: SourceSnapshot) -> Inventory:
    files: dict[str, str] = {}
    analyses: dict[str, FileAnalysis] = {}
    for path in (path for path in snapshot.files if path.endswith(".py")):
        key = (snapshot.files[path], is_test_file(path))
        analysis = ANALYSES.get(key)
        if analysis is None:
            source = (snapshot.root / path).read_bytes()
            key = (sha256_bytes(source), key[1])  # the bytes parsed, should the file have changed since
            analysis = analyse_file(source, path)
            ANALYSES.put(key, analysis)
        files[path], analyses[path] = key[0], analysis
    unparseable = {path: analysis.error for path, analysis in analyses.items() if analysis.error is not None}

    used: set[str] = set()
    for path, analysis in analyses.items():
        if is_test_file(path):
            used |= analysis.used

    modules = []
    for path, analysis in sorted(analyses.items()):
        if is_test_file(path) or is_project_tooling(path) or analysis.error is not None:
            continue
        module_name = module_import_path(path)
        modules.append(ModuleInfo(path=path, objects=[
            # A module's own examples run only under a doctest run, never under its tests.
            ObjectInfo(name=name, kind=kind, line=line, examples=examples,
                       tested=kind != "module" and module_name is not None and is_used(module_name, name, used))
            for name, kind, line, examples in analysis.objects
        ]))
    modules += java_modules(snapshot, files)
    untested = [f"{module.path}::{obj.name}" for module in modules for obj in module.objects
                if obj.kind != "module" and not obj.tested]
    return Inventory(revision=snapshot.revision, files=files, modules=modules, untested=untested,
                     unparseable=unparseable)


def java_modules(snapshot: SourceSnapshot, files: dict[str, str]) -> list[ModuleInfo]:
    """A Maven project's public classes and methods, tested when a test source names them (read by
    name, never compiled: see agent/java.py). Adds the files read to `files`."""
    tests = []
    for path in sorted(path for path in snapshot.files if java.is_test_source(path)):
        tests.append((snapshot.root / path).read_text(encoding="utf-8", errors="replace"))
        files[path] = snapshot.files[path]
    test_text = "\n".join(tests)
    modules = []
    for path in sorted(path for path in snapshot.files if java.is_main_source(path)):
        source = (snapshot.root / path).read_text(encoding="utf-8", errors="replace")
        files[path] = snapshot.files[path]
        modules.append(ModuleInfo(path=path, objects=[
            ObjectInfo(name=name, kind=kind, line=line, examples=0, tested=java.is_named_in(name, test_text))
            for name, kind, line in java.public_methods(source)]))
    return modules


def used_names(tree: ast.Module) -> set[str]:
    """The dotted names a test module imports or calls, resolved through its imports: `from
    pkg.mod import f` gives `pkg.mod.f`; `import pkg.mod as m` then `m.f(...)` gives `pkg.mod.f`."""
    aliases: dict[str, str] = {}
    used: set[str] = set()
    referenced: list[ast.expr] = []  # resolved once every import is known, wherever it stands
    for node in _nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign)):
            _bind(node, aliases, used)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                used.add(f"{CALLED_ATTRIBUTE}{node.func.attr}")  # `anything.method(...)`
            referenced.append(node.func)
        elif isinstance(node, ast.Attribute):
            used.add(f"{CALLED_ATTRIBUTE}{node.attr}")  # `Version("2.1.0").major`: a property read
            referenced.append(node)
    for expr in referenced:
        dotted = _dotted(expr)
        if dotted:
            head, _, rest = dotted.partition(".")
            if head in aliases:
                used.add(f"{aliases[head]}.{rest}" if rest else aliases[head])
    return used


def _bind(node: ast.Import | ast.ImportFrom | ast.Assign, aliases: dict[str, str], used: set[str]) -> None:
    """The names an import binds, or an assignment of `importlib.import_module("pkg.mod")` (as
    generated tests of a dotted module import it), to the dotted names they stand for."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            top = alias.name.partition(".")[0]
            # `import pkg.mod` binds `pkg`; `import pkg.mod as m` binds `m` to `pkg.mod`.
            aliases[alias.asname or top] = alias.name if alias.asname else top
    elif isinstance(node, ast.ImportFrom):
        if node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    used.add(f"{node.module}.{alias.name}")
    elif imported := _imported_by_name(node.value):
        aliases.update((target.id, imported) for target in node.targets if isinstance(target, ast.Name))


def _imported_by_name(value: ast.expr) -> str | None:
    if (isinstance(value, ast.Call) and _dotted(value.func) == "importlib.import_module" and len(value.args) == 1
            and isinstance(value.args[0], ast.Constant) and isinstance(value.args[0].value, str)):
        return value.args[0].value
    return None


def _nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """ast.walk's nodes in ast.walk's order, at a third of its cost (no per-field generators):
    the order decides which of two imports binding one name wins, so it is kept."""
    pending: deque[ast.AST] = deque([tree])
    while pending:
        node = pending.popleft()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                pending.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                pending.append(value)


def is_used(module_name: str, qualname: str, used: set[str]) -> bool:
    """Whether `module_name.qualname` is among `used`, directly or re-exported by an enclosing
    package (`from pkg import f` for `pkg.mod.f`). A method counts when its class is used and a
    test calls a method of that name."""
    parts = module_name.split(".")
    packages = [".".join(parts[:length]) for length in range(1, len(parts) + 1)]

    def named(name: str) -> bool:
        return any(f"{package}.{name}" in used for package in packages)

    owner, _, method = qualname.partition(".")
    if method:
        return named(qualname) or (named(owner) and f"{CALLED_ATTRIBUTE}{method}" in used)
    return named(qualname)


def _dotted(node: ast.expr) -> str | None:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(names)])
