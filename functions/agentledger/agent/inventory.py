"""What is there: the public functions of a repository and whether tests already cover them."""

from __future__ import annotations

import ast
import doctest
from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict

from agentledger.agent.source import SourceSnapshot
from agentledger.fingerprints import sha256_bytes

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


class FunctionInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    line: int
    has_examples: bool
    tested: bool


class ModuleInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    functions: list[FunctionInfo]


class Inventory(BaseModel):
    model_config = ConfigDict(frozen=True)

    revision: str
    files: dict[str, str]  # path -> sha256 of the bytes actually parsed
    modules: list[ModuleInfo]
    untested: list[str]  # "path::name"
    unparseable: dict[str, str]  # path -> parse error


def is_test_file(path: str) -> bool:
    pure = PurePosixPath(path)
    name = pure.name
    return (
        name == "conftest.py"
        or (name.startswith("test_") and name.endswith(".py"))
        or name.endswith("_test.py")
        or "tests" in pure.parts[:-1]
    )


def parse_module(source: bytes, path: str) -> ast.Module:
    """Parse Python source; raises SyntaxError or ValueError (e.g. bad encoding, null bytes)."""
    return ast.parse(source, filename=path)


def public_functions(tree: ast.Module) -> list[FunctionNode]:
    """Public top-level functions; a later definition of a name replaces an earlier one, as at run time."""
    by_name = {
        node.name: node
        for node in tree.body
        if isinstance(node, FunctionNode) and not node.name.startswith("_")
    }
    return sorted(by_name.values(), key=lambda node: node.lineno)


def docstring_examples(node: FunctionNode) -> list[doctest.Example]:
    return doctest.DocTestParser().get_examples(ast.get_docstring(node) or "")


def inspect_repository(snapshot: SourceSnapshot) -> Inventory:
    files: dict[str, str] = {}
    trees: dict[str, ast.Module] = {}
    unparseable: dict[str, str] = {}
    for path in (path for path in snapshot.files if path.endswith(".py")):
        source = (snapshot.root / path).read_bytes()
        files[path] = sha256_bytes(source)
        try:
            trees[path] = parse_module(source, path)
        except (SyntaxError, ValueError) as error:
            unparseable[path] = f"{type(error).__name__}: {error}"

    tested_names = set()
    for path, tree in trees.items():
        if is_test_file(path):
            tested_names |= _identifiers(tree)

    modules = [
        ModuleInfo(
            path=path,
            functions=[
                FunctionInfo(
                    name=node.name,
                    line=node.lineno,
                    has_examples=bool(docstring_examples(node)),
                    tested=node.name in tested_names,
                )
                for node in public_functions(tree)
            ],
        )
        for path, tree in sorted(trees.items())
        if not is_test_file(path)
    ]
    untested = [
        f"{module.path}::{function.name}"
        for module in modules
        for function in module.functions
        if not function.tested
    ]
    return Inventory(
        revision=snapshot.revision,
        files=files,
        modules=modules,
        untested=untested,
        unparseable=unparseable,
    )


def _identifiers(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add(node.name.rpartition(".")[2])
    return names
