"""Mutants of modules, made by mutmut: run by the build with the interpreter of agentledger's
mutmut tools, `python -I agentledger_mutants.py REQUEST OUTPUT`, once for all the targeted modules
(its start, libcst's import, is most of its time on a small module).

REQUEST (JSON): {"modules": [{"path": the module's file, "trampolined": where to write the module
with every mutant behind mutmut's trampolines}]}. OUTPUT (JSON): {"modules": [{"mutants": [{"name",
"function", "line", "source", "original", "mutated"}]} or {"error": why it has none}]}, in the
request's order, where `name` is what MUTANT_UNDER_TEST selects (without the module), `function`
the mangled name of the function it is a mutant of, and `line` (with its `source`), `original` and
`mutated` say what the mutant changed in the module as written."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from mutmut.mutation.file_mutation import combine_mutations_to_source, create_mutations
from mutmut.mutation.trampoline_templates import mangle_function_name

MAX_CHANGE = 200  # characters of a mutant's original or mutated code that are reported


def functions_and_classes(module: cst.Module) -> dict[cst.CSTNode, str | None]:
    """Each function mutmut puts behind a trampoline -> the class it is a method of (None: top level)."""
    owners: dict[cst.CSTNode, str | None] = {}
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            owners[statement] = None
        elif isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            owners.update((method, statement.name.value) for method in statement.body.body
                          if isinstance(method, cst.FunctionDef))
    return owners


def shortened(code: str) -> str:
    flat = " ".join(code.split())
    return flat if len(flat) <= MAX_CHANGE else flat[:MAX_CHANGE - 1] + "…"


def mutants_of(path: Path) -> tuple[str, list[dict[str, Any]]]:
    """The trampolined module and its mutants, named as mutmut names them (`x_f__mutmut_3`: the
    third mutant of f, in the order mutmut made them)."""
    code = path.read_text("utf-8")
    lines = code.splitlines()
    # mutmut reads its configuration from the working directory's setup.cfg once: a directory of
    # its own names the source `.`, so that mutmut never guesses, nor reads the repository's.
    with tempfile.TemporaryDirectory() as configured:
        Path(configured, "setup.cfg").write_text("[mutmut]\nsource_paths = .\n", encoding="utf-8")
        was = os.getcwd()
        os.chdir(configured)
        try:
            module, mutations, ignored_classes, ignored_functions = create_mutations(str(path), code)
        finally:
            os.chdir(was)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    owners = functions_and_classes(module)
    counts: dict[str, int] = {}
    mutants = []
    for mutation in mutations:
        function = mutation.contained_by_top_level_function
        if function is None or function not in owners:
            continue  # mutmut mutates only functions and methods
        assert isinstance(function, cst.FunctionDef)
        mangled = mangle_function_name(name=function.name.value, class_name=owners[function])
        counts[mangled] = counts.get(mangled, 0) + 1
        line = positions[mutation.original_node].start.line
        mutants.append({"name": f"{mangled}__mutmut_{counts[mangled]}", "function": mangled,
                        "line": line, "source": shortened(lines[line - 1]),
                        "original": shortened(module.code_for_node(mutation.original_node)),
                        "mutated": shortened(module.code_for_node(mutation.mutated_node))})
    trampolined = combine_mutations_to_source(module, mutations, ignored_classes, ignored_functions)
    if sorted(trampolined.mutant_names) != sorted(str(m["name"]) for m in mutants):
        raise ValueError("mutmut named its mutants otherwise than expected: is it the pinned version?")
    return trampolined.code, mutants


def main(request_path: str, output_path: str) -> int:
    request = json.loads(Path(request_path).read_text("utf-8"))
    answers: list[dict[str, Any]] = []
    for module in request["modules"]:
        try:
            code, mutants = mutants_of(Path(module["path"]))
            Path(module["trampolined"]).write_text(code, "utf-8")
            answers.append({"mutants": mutants})
        except (OSError, UnicodeDecodeError, ValueError, cst.ParserSyntaxError) as error:
            answers.append({"error": f"{type(error).__name__}: {error}"[:MAX_CHANGE * 5]})
    Path(output_path).write_text(json.dumps({"modules": answers}), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
