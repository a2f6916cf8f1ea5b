"""What to do: which tests to write, from which evidence."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Protocol

from pydantic import BaseModel, ConfigDict, model_validator

from agentledger.agent.inventory import (
    Inventory,
    docstring_examples,
    parse_module,
    public_functions,
)
from agentledger.agent.source import SourceSnapshot, is_safe_relative_path
from agentledger.fingerprints import digest, sha256_bytes

GENERATED_TESTS_DIR = "agentledger_tests"
NO_EXAMPLES = "no docstring examples to turn into tests"


class Example(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    expected: str


class PlanItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    target: str  # "path::function"
    test_path: str
    rationale: str
    examples: list[Example]

    @property
    def module_path(self) -> str:
        return self.target.partition("::")[0]

    @property
    def function(self) -> str:
        return self.target.partition("::")[2]


class SkippedTarget(BaseModel):
    model_config = ConfigDict(frozen=True)

    target: str
    reason: str


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)

    planner: str
    revision: str
    items: list[PlanItem]
    skipped: list[SkippedTarget]
    files_read: dict[str, str]  # path -> sha256 of the bytes the planner read

    @model_validator(mode="after")
    def _items_fit_in_test_files(self) -> Plan:
        # Plans may come from any planner; the executor imports each target by its module
        # path, names test methods after functions and writes test_path under the workspace,
        # so all three must be importable, unambiguous and contained.
        seen: set[tuple[str, str]] = set()
        for item in self.items:
            if module_import_path(item.module_path) is None or not item.function.isidentifier():
                raise ValueError(f"target {item.target!r} is not 'importable/module.py::function'")
            if not is_safe_relative_path(item.test_path) or not item.test_path.endswith(".py"):
                raise ValueError(f"test path {item.test_path!r} is not a relative .py path")
            key = (item.test_path, item.function)
            if key in seen:
                raise ValueError(f"two targets named {item.function!r} in {item.test_path}")
            seen.add(key)
        return self

    def digest(self) -> str:
        return digest(self.model_dump(mode="json"))


class PlanBrief(BaseModel):
    """What a person asked for: the run's request and, on a replan after a review, the reviewer's
    comment on the plan they sent back."""

    model_config = ConfigDict(frozen=True)

    request: str
    reviewer_comment: str | None = None
    rejected_plan_digest: str | None = None


class Planner(Protocol):
    name: str

    def plan(self, inventory: Inventory, snapshot: SourceSnapshot, brief: PlanBrief) -> Plan: ...


def module_import_path(path: str) -> str | None:
    """`pkg/mod.py` -> `pkg.mod`, `pkg/__init__.py` -> `pkg`; None if Python cannot import it by name."""
    pure = PurePosixPath(path)
    if pure.suffix != ".py":
        return None
    parts = list(pure.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


def generated_test_path(module_path: str) -> str:
    flat = PurePosixPath(module_path).with_suffix("").as_posix().replace("/", "_")
    return f"{GENERATED_TESTS_DIR}/test_{flat}.py"


class DocstringExamplePlanner:
    """Turns the doctest examples of untested public functions into unit tests."""

    name = "docstring-examples"

    def plan(self, inventory: Inventory, snapshot: SourceSnapshot, brief: PlanBrief) -> Plan:
        """Deterministic: the brief's request and comment do not change what it plans."""
        items: list[PlanItem] = []
        skipped: list[SkippedTarget] = []
        files_read: dict[str, str] = {}
        planned_modules: dict[str, str] = {}  # test path -> the module it tests
        for module in inventory.modules:
            untested = [function for function in module.functions if not function.tested]
            skipped += [
                SkippedTarget(target=f"{module.path}::{function.name}", reason=NO_EXAMPLES)
                for function in untested
                if not function.has_examples
            ]
            with_examples = [function for function in untested if function.has_examples]
            if not with_examples:
                continue
            test_path = generated_test_path(module.path)
            reason = _unusable_module_reason(module.path, planned_modules.get(test_path))
            if reason is not None:
                skipped += [
                    SkippedTarget(target=f"{module.path}::{function.name}", reason=reason)
                    for function in with_examples
                ]
                continue
            source = (snapshot.root / module.path).read_bytes()
            files_read[module.path] = sha256_bytes(source)
            examples = _examples_by_function(source, module.path)
            for function in with_examples:
                target = f"{module.path}::{function.name}"
                found = examples.get(function.name)
                if not found:
                    # The file changed between inspection and planning.
                    skipped.append(SkippedTarget(target=target, reason="examples not found on re-reading"))
                    continue
                planned_modules[test_path] = module.path
                items.append(
                    PlanItem(
                        target=target,
                        test_path=test_path,
                        rationale=(
                            f"{function.name} (line {function.line}) has no test; "
                            f"its {len(found)} docstring example(s) state its behaviour"
                        ),
                        examples=found,
                    )
                )
        return Plan(
            planner=self.name,
            revision=snapshot.revision,
            items=sorted(items, key=lambda item: item.target),
            skipped=sorted(skipped, key=lambda skip: skip.target),
            files_read=files_read,
        )


def _unusable_module_reason(module_path: str, module_with_same_test_path: str | None) -> str | None:
    if module_import_path(module_path) is None:
        return "module path is not importable by name"
    if module_with_same_test_path is not None:
        return f"its test module name is already used for {module_with_same_test_path}"
    return None


def _examples_by_function(source: bytes, path: str) -> dict[str, list[Example]]:
    try:
        tree = parse_module(source, path)
    except (SyntaxError, ValueError):
        return {}
    return {
        node.name: [
            Example(source=example.source.rstrip("\n"), expected=example.want.rstrip("\n"))
            for example in docstring_examples(node)
        ]
        for node in public_functions(tree)
    }
