"""What to do: which tests to write, from which evidence."""

from __future__ import annotations

import configparser
import doctest
import tomllib
from pathlib import PurePosixPath
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, model_validator

from agentledger.agent.inventory import (
    MODULE_OBJECT,
    Inventory,
    docstring_examples,
    documented_objects,
    module_import_path,
    parse_module,
)
from agentledger.fingerprints import digest, sha256_bytes
from agentledger.source import SourceSnapshot, is_safe_relative_path
from agentledger.testrun.config import ConfigError, read_bounded

GENERATED_TESTS_DIR = "agentledger_tests"
NO_EXAMPLES = "no docstring examples to turn into tests"
ALL_SKIPPED = "every docstring example is marked +SKIP"
# Where pytest reads `doctest_optionflags`, in the order it looks for its configuration.
PYTEST_CONFIGS: tuple[tuple[str, str], ...] = (
    ("pytest.ini", "pytest"), ("pyproject.toml", "tool.pytest.ini_options"), ("tox.ini", "pytest"),
    ("setup.cfg", "tool:pytest"),
)


class Example(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    expected: str


class PlanItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    target: str  # "path::qualified.name"; "path::" for the module's own docstring
    test_path: str
    rationale: str
    examples: list[Example]

    @property
    def module_path(self) -> str:
        return self.target.partition("::")[0]

    @property
    def qualname(self) -> str:
        return self.target.partition("::")[2]

    @property
    def test_name(self) -> str:
        return f"test_{self.qualname.replace('.', '_')}" if self.qualname else "test_module_docstring"


class SkippedTarget(BaseModel):
    model_config = ConfigDict(frozen=True)

    target: str
    reason: str


class ModelCall(BaseModel):
    """One call of a model-backed planner: what was asked, what came back, and what it cost."""

    model_config = ConfigDict(frozen=True)

    model_id: str
    request: dict[str, Any]
    response: dict[str, Any]
    stop_reason: str
    input_tokens: int
    output_tokens: int
    latency_ms: int
    estimated_cost_usd: float = 0.0


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)

    planner: str
    revision: str
    items: list[PlanItem]
    skipped: list[SkippedTarget]
    files_read: dict[str, str]  # path -> sha256 of the bytes the planner read
    option_flags: list[str] = []  # doctest option flags the project configures, by name
    # A model-backed planner's calls: stored as artifacts of their own and named in the plan's
    # evidence, not part of what a reviewer approves (the digest).
    model_calls: list[ModelCall] = []

    @model_validator(mode="after")
    def _items_fit_in_test_files(self) -> Plan:
        # Plans may come from any planner; the executor imports each target by its module path,
        # names tests after qualified names and writes test_path under the workspace, so all three
        # must be importable, unambiguous and contained.
        seen: set[tuple[str, str]] = set()
        for item in self.items:
            qualname_ok = (item.qualname == MODULE_OBJECT
                           or all(part.isidentifier() for part in item.qualname.split(".")))
            if module_import_path(item.module_path) is None or "::" not in item.target or not qualname_ok:
                raise ValueError(f"target {item.target!r} is not 'importable/module.py::qualified.name'")
            if not is_safe_relative_path(item.test_path) or not item.test_path.endswith(".py"):
                raise ValueError(f"test path {item.test_path!r} is not a relative .py path")
            key = (item.test_path, item.test_name)
            if key in seen:
                raise ValueError(f"two targets would be tested by {item.test_name} in {item.test_path}")
            seen.add(key)
        unknown = sorted(set(self.option_flags) - set(doctest.OPTIONFLAGS_BY_NAME))
        if unknown:
            raise ValueError(f"unknown doctest option flags: {', '.join(unknown)}")
        return self

    def digest(self) -> str:
        return digest(self.approved_content())

    def approved_content(self) -> dict[str, Any]:
        """The plan as plan.json holds it and a reviewer approves it."""
        return self.model_dump(mode="json", exclude={"model_calls"})


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


def generated_test_path(module_path: str) -> str:
    flat = PurePosixPath(module_path).with_suffix("").as_posix().replace("/", "_")
    return f"{GENERATED_TESTS_DIR}/test_{flat}.py"


class DocstringExamplePlanner:
    """Turns the doctest examples of documented objects no test imports or calls into tests that
    run them with the standard library's doctest."""

    name = "docstring-examples"

    def plan(self, inventory: Inventory, snapshot: SourceSnapshot, brief: PlanBrief) -> Plan:
        """Deterministic: the brief's request and comment do not change what it plans."""
        items: list[PlanItem] = []
        skipped: list[SkippedTarget] = []
        files_read: dict[str, str] = {}
        planned_modules: dict[str, str] = {}  # test path -> the module it tests
        for module in inventory.modules:
            untested = [obj for obj in module.objects if not obj.tested]
            skipped += [SkippedTarget(target=f"{module.path}::{obj.name}", reason=NO_EXAMPLES)
                        for obj in untested if not obj.examples and obj.kind != "module"]
            with_examples = [obj for obj in untested if obj.examples]
            if not with_examples:
                continue
            test_path = generated_test_path(module.path)
            reason = _unusable_module_reason(module.path, planned_modules.get(test_path))
            if reason is not None:
                skipped += [SkippedTarget(target=f"{module.path}::{obj.name}", reason=reason) for obj in with_examples]
                continue
            source = (snapshot.root / module.path).read_bytes()
            files_read[module.path] = sha256_bytes(source)
            examples = _examples_by_object(source, module.path)
            for obj in with_examples:
                target = f"{module.path}::{obj.name}"
                found = examples.get(obj.name)
                if not found:
                    # The file changed between inspection and planning.
                    skipped.append(SkippedTarget(target=target, reason="examples not found on re-reading"))
                    continue
                runnable = [example for example, options in found if not options.get(doctest.SKIP)]
                if not runnable:
                    skipped.append(SkippedTarget(target=target, reason=ALL_SKIPPED))
                    continue
                planned_modules[test_path] = module.path
                items.append(PlanItem(
                    target=target, test_path=test_path,
                    rationale=(f"{obj.kind} {obj.name or module.path} (line {obj.line}) has no test that imports "
                               f"or calls it; its {len(runnable)} docstring example(s) state its behaviour"),
                    examples=runnable,
                ))
        flags, config_read = project_option_flags(snapshot)
        if items:
            files_read.update(config_read)
        return Plan(
            planner=self.name,
            revision=snapshot.revision,
            items=sorted(items, key=lambda item: item.target),
            skipped=sorted(skipped, key=lambda skip: skip.target),
            files_read=files_read,
            option_flags=flags if items else [],
        )


def project_option_flags(snapshot: SourceSnapshot) -> tuple[list[str], dict[str, str]]:
    """The doctest option flags of pytest's `doctest_optionflags` in the first configuration file
    pytest would read, and that file's digest. Flags of pytest's own (NUMBER, ALLOW_UNICODE,
    ALLOW_BYTES) have no meaning to the standard library's runner and are left out."""
    for name, section in PYTEST_CONFIGS:
        if name not in snapshot.files:
            continue
        try:
            data = read_bounded(snapshot.root / name)  # the repository's file: bounded, never a link
        except ConfigError:
            continue  # the test run refuses it with the reason; the plan just takes no flags from it
        value = None if data is None else _config_value(name, section, data)
        if value is None or data is None:
            continue
        words = value.split() if isinstance(value, str) else [str(word) for word in value]
        return sorted({word for word in words if word in doctest.OPTIONFLAGS_BY_NAME}), {name: sha256_bytes(data)}
    return [], {}


def _config_value(name: str, section: str, data: bytes) -> str | list[str] | None:
    """`doctest_optionflags` of that section, or None when the file has no such section (pytest
    then looks further) or cannot be read."""
    if name.endswith(".toml"):
        try:
            table = tomllib.loads(data.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            return None
        found: Any = table
        for key in section.split("."):
            found = found.get(key) if isinstance(found, dict) else None
        if not isinstance(found, dict):
            return None
        value = found.get("doctest_optionflags", "")
        return value if isinstance(value, (str, list)) else ""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(data.decode("utf-8"))
    except (configparser.Error, UnicodeDecodeError):
        return None
    if not parser.has_section(section):
        return None
    return parser.get(section, "doctest_optionflags", fallback="")


def _unusable_module_reason(module_path: str, module_with_same_test_path: str | None) -> str | None:
    if module_import_path(module_path) is None:
        return "module path is not importable by name"
    if module_with_same_test_path is not None:
        return f"its test module name is already used for {module_with_same_test_path}"
    return None


def _examples_by_object(source: bytes, path: str) -> dict[str, list[tuple[Example, dict[int, bool]]]]:
    try:
        tree = parse_module(source, path)
    except (SyntaxError, ValueError):
        return {}
    return {
        name: [(Example(source=example.source.rstrip("\n"), expected=example.want.rstrip("\n")), example.options)
               for example in docstring_examples(node)]
        for name, _, node in documented_objects(tree)
    }
