"""What to do: which objects to write tests for, with which writer, into which test files.

Three writers: `pynguin` (the default for Python: search-based, run in the sandbox, seeded by the
run), `doctest` (the objects' own docstring examples, run with the standard library's doctest)
and `bedrock` (a model writes pytest code). Whatever a writer produces is only a candidate: the
execute stage's build keeps what builds, passes five times and adds coverage."""

from __future__ import annotations

import doctest
import hashlib
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentledger.agent import java
from agentledger.agent.conventions import generated_test_path, pytest_setting, test_directory
from agentledger.agent.inventory import (
    MODULE_OBJECT,
    Inventory,
    docstring_examples,
    documented_objects,
    importable_name,
    module_import_path,
    parse_module,
)
from agentledger.fingerprints import digest, sha256_bytes
from agentledger.generation import GenerationLimits, GenerationSettings
from agentledger.source import SourceSnapshot, is_safe_relative_path
from agentledger.testrun.config import ConfigError, TestRunConfig, load_config

NO_EXAMPLES = "no docstring examples to turn into tests"
ALL_SKIPPED = "every docstring example is marked +SKIP"
NOT_PYTHON = "Pynguin writes tests for Python projects"
Writer = Literal["pynguin", "doctest", "bedrock"]


class Example(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    expected: str


class PlanItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    target: str  # "path::qualified.name"; "path::" for the module itself
    test_path: str
    rationale: str
    examples: list[Example] = []  # the doctest writer's: run as they are written
    code: str | None = Field(default=None, max_length=200_000)  # the bedrock writer's: a pytest module

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
    # Plans recorded before writers existed were all docstring examples.
    writer: str = "doctest"
    generation: GenerationSettings | None = None
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
            if importable_name(item.module_path) is None or "::" not in item.target or not qualname_ok:
                raise ValueError(f"target {item.target!r} is not 'importable/module.py::qualified.name' "
                                 "or 'src/main/java/pkg/Class.java::'")
            in_java = java.class_name(item.module_path) is not None
            if not is_safe_relative_path(item.test_path) or not (
                    java.is_test_source(item.test_path) if in_java else item.test_path.endswith(".py")):
                raise ValueError(f"test path {item.test_path!r} is not a relative .py path (or, for a Java "
                                 f"class, a .java path under {java.TEST_SOURCES})")
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
    run_id: str = ""  # seeds the writers that search, so a run's plan is the same on every attempt


class Planner(Protocol):
    name: str

    def plan(self, inventory: Inventory, snapshot: SourceSnapshot, brief: PlanBrief) -> Plan: ...


def run_seed(run_id: str) -> int:
    return int(hashlib.sha256(run_id.encode()).hexdigest()[:8], 16) % (2**31)


def generation_settings(config: TestRunConfig, brief: PlanBrief, limits: GenerationLimits) -> GenerationSettings:
    """The repository's budgets, within the deployment's caps, and its seed if it fixes one."""
    return GenerationSettings(
        seed=run_seed(brief.run_id) if config.generation_seed is None else config.generation_seed,
        module_seconds=min(config.generation_module_seconds or limits.module_seconds, limits.module_seconds),
        run_seconds=min(config.generation_run_seconds or limits.run_seconds, limits.run_seconds),
        mutation_module_seconds=min(config.mutation_module_seconds or limits.mutation_module_seconds,
                                    limits.mutation_module_seconds),
        mutation_run_seconds=min(config.mutation_run_seconds or limits.mutation_run_seconds,
                                 limits.mutation_run_seconds),
        iterations=limits.iterations,
        random_order=config.random_order,
        runs=limits.runs,
    )


def repository_config(snapshot: SourceSnapshot) -> TestRunConfig | None:
    """The repository's test-run configuration; None when it has none the test run could use
    (the build refuses it then, with the reason)."""
    try:
        return load_config(snapshot.root)
    except ConfigError:
        return None


class TestPaths:
    """Each module's generated test module, in the project's tests folder."""

    __test__ = False

    def __init__(self, snapshot: SourceSnapshot) -> None:
        self.directory, self.read = test_directory(snapshot)
        self.taken = set(snapshot.files)
        self.by_module: dict[str, str] = {}

    def of(self, module_path: str) -> str:
        if module_path not in self.by_module:
            path = generated_test_path(module_path, self.directory, self.taken)
            self.taken.add(path)
            self.by_module[module_path] = path
        return self.by_module[module_path]


class PynguinPlanner:
    """Every public object no test imports or calls, module by module: Pynguin searches each module
    in the sandbox, and the filters keep what adds coverage."""

    name = "pynguin"

    def __init__(self, limits: GenerationLimits | None = None) -> None:
        self.limits = limits or GenerationLimits()

    def plan(self, inventory: Inventory, snapshot: SourceSnapshot, brief: PlanBrief) -> Plan:
        config = repository_config(snapshot)
        items: list[PlanItem] = []
        skipped: list[SkippedTarget] = []
        files_read: dict[str, str] = {}
        paths = TestPaths(snapshot)
        for module in inventory.modules:
            untested = [obj for obj in module.objects if not obj.tested and obj.kind != "module"]
            if not untested:
                continue
            reason = (NOT_PYTHON if config is None or config.ecosystem != "python"
                      else _unusable_module_reason(module.path, None))
            if reason is not None:
                skipped += [SkippedTarget(target=f"{module.path}::{obj.name}", reason=reason) for obj in untested]
                continue
            files_read[module.path] = inventory.files[module.path]
            test_path = paths.of(module.path)
            items += [PlanItem(target=f"{module.path}::{obj.name}", test_path=test_path,
                               rationale=f"{obj.kind} {obj.name} (line {obj.line}) has no test that imports or "
                                         "calls it; Pynguin searches for inputs that cover it")
                      for obj in untested]
        if items:
            files_read.update(paths.read)
        return Plan(planner=self.name, writer="pynguin", revision=snapshot.revision,
                    generation=generation_settings(config, brief, self.limits) if items and config else None,
                    items=sorted(items, key=lambda item: item.target),
                    skipped=sorted(skipped, key=lambda skip: skip.target), files_read=files_read)


class DocstringExamplePlanner:
    """Turns the doctest examples of documented objects no test imports or calls into tests that
    run them with the standard library's doctest."""

    name = "docstring-examples"

    def __init__(self, limits: GenerationLimits | None = None) -> None:
        self.limits = limits or GenerationLimits()

    def plan(self, inventory: Inventory, snapshot: SourceSnapshot, brief: PlanBrief) -> Plan:
        """Deterministic: the brief's request and comment do not change what it plans."""
        items: list[PlanItem] = []
        skipped: list[SkippedTarget] = []
        files_read: dict[str, str] = {}
        paths = TestPaths(snapshot)
        for module in inventory.modules:
            untested = [obj for obj in module.objects if not obj.tested]
            skipped += [SkippedTarget(target=f"{module.path}::{obj.name}", reason=NO_EXAMPLES)
                        for obj in untested if not obj.examples and obj.kind != "module"]
            with_examples = [obj for obj in untested if obj.examples]
            if not with_examples:
                continue
            reason = _unusable_module_reason(module.path, None)
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
                items.append(PlanItem(
                    target=target, test_path=paths.of(module.path),
                    rationale=(f"{obj.kind} {obj.name or module.path} (line {obj.line}) has no test that imports "
                               f"or calls it; its {len(runnable)} docstring example(s) state its behaviour"),
                    examples=runnable,
                ))
        flags, config_read = project_option_flags(snapshot)
        config = repository_config(snapshot)
        if items:
            files_read.update({**config_read, **paths.read})
        return Plan(
            planner=self.name,
            writer="doctest",
            generation=generation_settings(config, brief, self.limits) if items and config else None,
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
    value, read = pytest_setting(snapshot, "doctest_optionflags")
    if value is None:
        return [], read
    words = value.split() if isinstance(value, str) else [str(word) for word in value]
    return sorted({word for word in words if word in doctest.OPTIONFLAGS_BY_NAME}), read


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
