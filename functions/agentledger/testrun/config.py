"""Per-repository test-run configuration: what to install and which command runs the suite.

Defaults come from the files that mark an ecosystem (pom.xml, package.json, pyproject.toml...);
an explicit `agentledger.toml`, or `[tool.agentledger]` in pyproject.toml, overrides them key by
key. The repository is untrusted, so every value it gives is bounded here, before a build sees it.
"""
from __future__ import annotations

import configparser
import contextlib
import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from agentledger.buildkit.layout import JUNIT_DIR, RESULTS_VARIABLE

from .files import ConfigError, read_bounded
from .pytest_config import plugins_needed, pytest_section

if TYPE_CHECKING:
    from collections.abc import Callable


Ecosystem = Literal["python", "node", "maven", "custom"]
Compute = Literal[
    "BUILD_GENERAL1_SMALL", "BUILD_GENERAL1_MEDIUM", "BUILD_GENERAL1_LARGE",
    "BUILD_GENERAL1_XLARGE", "BUILD_GENERAL1_2XLARGE",
]
DEFAULT_IMAGE = "aws/codebuild/standard:7.0"
DEFAULT_COMPUTE: Compute = "BUILD_GENERAL1_SMALL"
DEFAULT_TIMEOUT_S = 900
MAX_TIMEOUT_S = 8 * 3600
# Writers a repository may choose for itself; bedrock is the deployment's to turn on.
RepositoryWriter = Literal["pynguin", "doctest"]
MAX_GENERATION_SECONDS = 4 * 3600
MAX_SEED = 2**31 - 1


class TestRunConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    __test__ = False  # a model, not a test class, whatever its name says to pytest

    ecosystem: Ecosystem
    source: str
    install: list[str]
    test: str = Field(min_length=1)
    timeout_s: int = Field(ge=1, le=MAX_TIMEOUT_S)
    junit: list[str]
    # JaCoCo XML reports to read line and branch coverage from (a Java suite's; [] reads none).
    jacoco: list[str] = []
    env: dict[str, str]
    virtualenv: bool
    # The project installed from its tree in every build, after the dependencies (cached or not):
    # what its build backend generates (a version file from the VCS) is there in every build.
    install_project: bool = False
    cache_key_files: list[str]
    image: str
    compute: Compute
    # Test generation (the execute stage's build): the repository may choose a writer and lower
    # the time budgets the deployment caps (None: the deployment's), and say its suite must run
    # in its own order when candidates are checked with it.
    writer: RepositoryWriter | None = None
    generation_module_seconds: int | None = None
    generation_run_seconds: int | None = None
    mutation_module_seconds: int | None = None  # mutation analysis, per targeted module and per run
    mutation_run_seconds: int | None = None
    # The test writer's seed (None: one drawn from the run id): the same seed writes the same tests.
    generation_seed: int | None = None
    random_order: bool = True
    # A plan that writes nothing is reviewed (its suite run and shown) instead of ending the run,
    # as the deployment's reviewEmptyPlans asks for every repository.
    review_empty_plans: bool = False


EXPLICIT_FILE = "agentledger.toml"
PYPROJECT_FILE = "pyproject.toml"
PYPROJECT_LABEL = f"{PYPROJECT_FILE} [tool.agentledger]"
DETECTED = "detected"

MAX_COMMANDS = 20
MAX_COMMAND_CHARS = 4096
MAX_JUNIT_GLOBS = 20
MAX_ENV_ENTRIES = 50
MAX_ENV_VALUE_CHARS = 4096
MAX_IMAGE_CHARS = 256
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")
IMAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@-]*")
# The sandbox sets these itself; letting the repository replace them would unmoor the build.
SANDBOX_ENV_NAMES = frozenset({"PATH", "HOME", "VIRTUAL_ENV", "PYTHONPATH"})
SANDBOX_ENV_PREFIXES = ("AWS_", "AGENTLEDGER_")

PYTHON_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt")
GRADLE_MARKERS = ("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts")
# What a Gradle team writes (docs/guides/repository.md explains each line): Gradle's own test task,
# its JUnit XML, and the jacoco plugin's report when the build applies it.
GRADLE_EXAMPLE = ('test = "./gradlew test --no-daemon", junit = ["build/test-results/test/*.xml", '
                  '"*/build/test-results/test/*.xml"], jacoco = ["build/reports/jacoco/test/jacocoTestReport.xml"]')
REQUIREMENTS_FILES = (
    "requirements.txt", "requirements-dev.txt", "requirements-test.txt", "test-requirements.txt",
    "dev-requirements.txt", "requirements/test.txt", "requirements/dev.txt",
)
TEST_EXTRAS = ("test", "tests", "testing", "dev")
PACKAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# A PEP 508 requirement without markers or URLs: a name, extras, version clauses.
REQUIREMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}(\[[A-Za-z0-9,._ -]{1,100}\])?[ <>=!~.,*0-9A-Za-z+-]{0,100}")
# pip isolated from the repository (`-I`): a top-level `pip/` of the project's never stands in for it.
PIP_INSTALL = "python -I -m pip install"
PYTEST_COMMAND = (
    f'python -m pytest -p no:cacheprovider --junitxml="${RESULTS_VARIABLE}/{JUNIT_DIR}/pytest.xml"'
)
NODE_TEST_RUNNER_COMMAND = (
    "npm test -- --test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit"
    f' --test-reporter-destination="${RESULTS_VARIABLE}/{JUNIT_DIR}/node.xml"'
)
NODE_JUNIT = ["junit.xml", "reports/*.xml", "test-results/*.xml"]
MAVEN_JUNIT = ["target/surefire-reports/TEST-*.xml", "*/target/surefire-reports/TEST-*.xml"]
# JaCoCo from Maven Central, attached without a change to the pom: its agent handed to Surefire
# before the tests, its report after them, in each module of a reactor. 0.8.15 reads class files of
# Java 17, 21 and 25. A pom that configures the plugin itself keeps its own: two agents in one JVM
# stop it before the first test.
JACOCO_PLUGIN = "org.jacoco:jacoco-maven-plugin:0.8.15"
MAVEN_TEST = "mvn -B test"
MAVEN_TEST_WITH_JACOCO = f"mvn -B {JACOCO_PLUGIN}:prepare-agent test {JACOCO_PLUGIN}:report"
MAX_POM_BYTES = 1 << 20
# Where the jacoco-maven-plugin's `report` goal writes, for the project and for its modules.
MAVEN_JACOCO = ["target/site/jacoco/jacoco.xml", "*/target/site/jacoco/jacoco.xml"]


@dataclass(frozen=True)
class _Explicit:
    label: str
    values: dict[str, Any] = field(default_factory=dict)  # TestRunConfig field -> validated value


def load_config(root: Path) -> TestRunConfig:
    pyproject = _read_toml(root / PYPROJECT_FILE)
    explicit = _explicit_configuration(root, pyproject)
    ecosystem = explicit.values.get("ecosystem") or _detect_ecosystem(root, explicit)
    defaults = _defaults(ecosystem, root, pyproject, explicit_test="test" in explicit.values)
    fields = {**defaults, **explicit.values, "ecosystem": ecosystem, "source": explicit.label}
    if not fields.get("test"):
        raise _key_error(explicit.label, "test", "the custom ecosystem needs a `test` command")
    return TestRunConfig(**fields)


def installs_nothing_of_the_repository(config: TestRunConfig) -> bool:
    """Whether the install puts only packages from the index into the venv, by name, with nothing of
    the repository's in play: no file of it (a requirements file, the project, a path, a wheel
    beside it), no option, no variable of its `env`. What such an install makes is the same for
    every repository that asks for it, and no code of the repository's ran while it was made."""
    return not config.env and all(_names_packages_alone(command) for command in config.install)


def _names_packages_alone(command: str) -> bool:
    prefix = f"{PIP_INSTALL} "
    if not command.startswith(prefix):
        return False
    try:
        requirements = shlex.split(command.removeprefix(prefix))
    except ValueError:
        return False
    return bool(requirements) and all(REQUIREMENT.fullmatch(requirement) for requirement in requirements)


def describe(config: TestRunConfig) -> str:
    install = [f"  {command}" for command in config.install] or ["  (nothing)"]
    return "\n".join([
        f"ecosystem: {config.ecosystem} ({config.source})",
        "install:", *install,
        f"test: {config.test}",
        f"timeout: {config.timeout_s} s each for install and test",
    ])


# --- explicit configuration -------------------------------------------------------------------

def _explicit_configuration(root: Path, pyproject: dict[str, Any] | None) -> _Explicit:
    table = _read_toml(root / EXPLICIT_FILE)
    if table is not None:
        return _validated(EXPLICIT_FILE, table)
    table = _pyproject_table(pyproject or {})
    if table is not None:
        return _validated(PYPROJECT_LABEL, table)
    return _Explicit(DETECTED)


def _pyproject_table(pyproject: dict[str, Any]) -> dict[str, Any] | None:
    tool = pyproject.get("tool")
    table = tool.get("agentledger") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{PYPROJECT_FILE}: `tool.agentledger` must be a table")
    return table


def _validated(label: str, table: dict[str, Any]) -> _Explicit:
    values = {}
    for key, value in ((FORMER_NAMES.get(name, name), value) for name, value in table.items()):
        if key not in _VALIDATORS:
            raise ConfigError(f"{label}: unknown key {_shown(key)}; "
                              f"accepted keys: {', '.join(sorted(_VALIDATORS))}")
        config_field, validate = _VALIDATORS[key]
        values[config_field] = validate(label, value)
    return _Explicit(label, values)


def _key_error(label: str, key: str, problem: str) -> ConfigError:
    return ConfigError(f"{label}, key `{key}`: {problem}")


def _shown(value: object) -> str:
    # Names and values come from the repository: keep a hostile one from flooding the message.
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _ecosystem(label: str, value: Any) -> str:
    return _one_of(label, "ecosystem", value, get_args(Ecosystem))


def _compute(label: str, value: Any) -> str:
    return _one_of(label, "compute", value, get_args(Compute))


def _one_of(label: str, key: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise _key_error(label, key, f"{_shown(value)} is not one of {', '.join(choices)}")
    return value


def _install(label: str, value: Any) -> list[str]:
    commands = _string_list(label, "install", value, MAX_COMMANDS)
    for command in commands:
        _bounded_command(label, "install", command)
    return commands


def _test(label: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _key_error(label, "test", "must be a string")
    return _bounded_command(label, "test", value)


def _bounded_command(label: str, key: str, command: str) -> str:
    if not command.strip():
        raise _key_error(label, key, "a command must not be empty")
    if len(command) > MAX_COMMAND_CHARS:
        raise _key_error(label, key, f"a command is longer than {MAX_COMMAND_CHARS} characters")
    return command


def _timeout(label: str, value: Any) -> int:
    # bool is an int to Python, but `timeout = true` is a mistake, not one second.
    if not isinstance(value, int) or isinstance(value, bool):
        raise _key_error(label, "timeout", "must be an integer number of seconds")
    if not 1 <= value <= MAX_TIMEOUT_S:
        raise _key_error(label, "timeout", f"{value} is outside 1..{MAX_TIMEOUT_S} seconds")
    return value


def _globs(key: str) -> Callable[[str, Any], list[str]]:
    """Globs of report files the driver collects from the repository after the suite."""
    def validate(label: str, value: Any) -> list[str]:
        patterns = _string_list(label, key, value, MAX_JUNIT_GLOBS)
        for pattern in patterns:
            path = PurePosixPath(pattern.replace("\\", "/"))
            if not pattern or path.is_absolute() or ".." in path.parts:
                raise _key_error(label, key, f"{_shown(pattern)} must be a path relative to "
                                             "the repository root, without `..`")
        return patterns
    return validate


def _string_list(label: str, key: str, value: Any, limit: int) -> list[str]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(item, str) for item in values):
        raise _key_error(label, key, "must be a string or a list of strings")
    if len(values) > limit:
        raise _key_error(label, key, f"at most {limit} entries are accepted, not {len(values)}")
    return values


def _env(label: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _key_error(label, "env", "must be a table of names to strings")
    if len(value) > MAX_ENV_ENTRIES:
        raise _key_error(label, "env", f"at most {MAX_ENV_ENTRIES} variables are accepted")
    for name, text in value.items():
        _env_entry(label, name, text)
    return value


def _env_entry(label: str, name: str, text: Any) -> None:
    if not ENV_NAME.fullmatch(name):
        raise _key_error(label, "env", f"{_shown(name)} is not a variable name ({ENV_NAME.pattern})")
    key = f"env.{name}"
    if name in SANDBOX_ENV_NAMES or name.startswith(SANDBOX_ENV_PREFIXES):
        raise _key_error(label, key, f"{name} is set by the sandbox and cannot be declared")
    if not isinstance(text, str):
        raise _key_error(label, key, "the value must be a string")
    if len(text) > MAX_ENV_VALUE_CHARS:
        raise _key_error(label, key, f"the value is longer than {MAX_ENV_VALUE_CHARS} characters")


def _writer(label: str, value: Any) -> str:
    return _one_of(label, "writer", value, get_args(RepositoryWriter))


def _seconds(key: str) -> Callable[[str, Any], int]:
    def validate(label: str, value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _key_error(label, key, "must be an integer number of seconds")
        if not 1 <= value <= MAX_GENERATION_SECONDS:
            raise _key_error(label, key, f"{value} is outside 1..{MAX_GENERATION_SECONDS} seconds")
        return value

    return validate


def _seed(label: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_SEED:
        raise _key_error(label, "generation_seed", f"must be an integer in 0..{MAX_SEED}")
    return value


def _boolean(key: str) -> Callable[[str, Any], bool]:
    def validate(label: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise _key_error(label, key, "must be true or false")
        return value

    return validate


def _image(label: str, value: Any) -> str:
    if not isinstance(value, str) or len(value) > MAX_IMAGE_CHARS or not IMAGE_NAME.fullmatch(value):
        raise _key_error(label, "image", f"must be an image name of at most {MAX_IMAGE_CHARS} "
                                         f"characters matching {IMAGE_NAME.pattern}")
    return value


# Explicit key -> (TestRunConfig field, validator).
_VALIDATORS: dict[str, tuple[str, Callable[[str, Any], Any]]] = {
    "ecosystem": ("ecosystem", _ecosystem),
    "install": ("install", _install),
    "test": ("test", _test),
    "timeout": ("timeout_s", _timeout),
    "junit": ("junit", _globs("junit")),
    "jacoco": ("jacoco", _globs("jacoco")),
    "env": ("env", _env),
    "image": ("image", _image),
    "compute": ("compute", _compute),
    "writer": ("writer", _writer),
    "generation_module_seconds": ("generation_module_seconds", _seconds("generation_module_seconds")),
    "generation_run_seconds": ("generation_run_seconds", _seconds("generation_run_seconds")),
    "mutation_module_seconds": ("mutation_module_seconds", _seconds("mutation_module_seconds")),
    "mutation_run_seconds": ("mutation_run_seconds", _seconds("mutation_run_seconds")),
    "generation_seed": ("generation_seed", _seed),
    "random_order": ("random_order", _boolean("random_order")),
    "install_project": ("install_project", _boolean("install_project")),
    "review_empty_plans": ("review_empty_plans", _boolean("review_empty_plans")),
}
# A key an earlier release read under another name, read as the one it is now: a repository's
# configuration written for that release keeps working.
FORMER_NAMES = {"generation_seconds": "generation_run_seconds"}


# --- detection and defaults -------------------------------------------------------------------

def _detect_ecosystem(root: Path, explicit: _Explicit) -> str:
    if (root / "pom.xml").is_file():
        return "maven"
    if gradle := _existing(root, GRADLE_MARKERS):
        if "test" in explicit.values:
            return "custom"
        raise ConfigError(
            f"a Gradle project ({gradle[0]}): agentledger runs Maven, Python and Node suites by itself; for Gradle, "
            f"say in {EXPLICIT_FILE} how the suite runs and where it reports: {GRADLE_EXAMPLE}")
    if (root / "package.json").is_file():
        return "node"
    if _existing(root, PYTHON_MARKERS) or _has_python_modules(root):
        return "python"
    if "test" in explicit.values:
        return "custom"
    raise ConfigError(
        f"no test configuration found: looked for pom.xml, package.json, {', '.join(PYTHON_MARKERS)}, "
        f"Python modules at the top two levels"
        f" and a `test` command in {EXPLICIT_FILE} or {PYPROJECT_LABEL}; "
        f"add {EXPLICIT_FILE} with a `test` command")


def _has_python_modules(root: Path) -> bool:
    """A directory of modules with no packaging is still a Python project: its suite runs on pytest."""
    return any(path.is_file() for pattern in ("*.py", "*/*.py") for path in root.glob(pattern))


def _defaults(ecosystem: str, root: Path, pyproject: dict[str, Any] | None,
              explicit_test: bool) -> dict[str, Any]:
    common = {"timeout_s": DEFAULT_TIMEOUT_S, "env": {}, "image": DEFAULT_IMAGE,
              "compute": DEFAULT_COMPUTE, "virtualenv": False, "install_project": False, "junit": [], "jacoco": [],
              "install": [],
              "cache_key_files": [], "writer": None, "generation_module_seconds": None,
              "generation_run_seconds": None, "mutation_module_seconds": None, "mutation_run_seconds": None,
              "generation_seed": None, "random_order": True}
    if ecosystem == "python":
        return {**common, **_python_defaults(root, pyproject or {}, explicit_test)}
    if ecosystem == "node":
        return {**common, **_node_defaults(root)}
    if ecosystem == "maven":
        test = MAVEN_TEST if _configures_jacoco(root) else MAVEN_TEST_WITH_JACOCO
        return {**common, "test": test, "junit": MAVEN_JUNIT, "jacoco": MAVEN_JACOCO, "cache_key_files": ["pom.xml"]}
    return common


def _configures_jacoco(root: Path) -> bool:
    """Whether the reactor's pom or a module's names the jacoco-maven-plugin."""
    for pom in [root / "pom.xml", *sorted(root.glob("*/pom.xml"))]:
        with contextlib.suppress(OSError), pom.open("rb") as file:
            if b"jacoco-maven-plugin" in file.read(MAX_POM_BYTES):
                return True
    return False


def _python_defaults(root: Path, pyproject: dict[str, Any], explicit_test: bool) -> dict[str, Any]:
    requirements = _existing(root, REQUIREMENTS_FILES)
    install = [f"{PIP_INSTALL} -r {path}" for path in requirements]
    buildable = (isinstance(pyproject.get("project"), dict) or isinstance(pyproject.get("build-system"), dict)
                 or bool(_existing(root, ("setup.py", "setup.cfg"))))
    if buildable:
        install.append(_project_install(_test_extras(root, pyproject)))
    grouped = _test_group_requirements(pyproject)
    if grouped:
        install.append(f"{PIP_INSTALL} " + " ".join(grouped))
    if not explicit_test:
        # pytest and the plugins its configuration's options need, which no extra may declare.
        settings, _, _ = pytest_section(root, lambda name: (root / name).is_file())
        install.append(" ".join([PIP_INSTALL, "pytest", *(f"'{plugin}'" for plugin in plugins_needed(settings))]))
    return {"virtualenv": True, "install_project": buildable, "install": install, "test": PYTEST_COMMAND,
            "cache_key_files": _existing(root, ("pyproject.toml", "setup.py", "setup.cfg")) + requirements}


def _project_install(extras: list[str]) -> str:
    return f"{PIP_INSTALL} '.[{','.join(extras)}]'" if extras else f"{PIP_INSTALL} ."


def _test_extras(root: Path, pyproject: dict[str, Any]) -> list[str]:
    project = pyproject.get("project")
    optional = project.get("optional-dependencies") if isinstance(project, dict) else None
    declared = set(optional) if isinstance(optional, dict) else set()
    declared |= _setup_cfg_extras(root)
    return [extra for extra in TEST_EXTRAS if extra in declared]


def _test_group_requirements(pyproject: dict[str, Any]) -> list[str]:
    """What the test and dev groups ask for: PEP 735 `[dependency-groups]` as written, and poetry's
    groups (and its older `dev-dependencies`) by name only, since their version ranges are poetry's
    syntax, not pip's. Entries that are not plain requirements are left out, never passed to a shell."""
    groups = pyproject.get("dependency-groups")
    requirements: list[str] = []
    if isinstance(groups, dict):
        for name in TEST_EXTRAS:
            requirements += [entry for entry in groups.get(name) or [] if isinstance(entry, str)
                             and REQUIREMENT.fullmatch(entry)]
    tables = [_table(pyproject, "tool", "poetry", "group", name, "dependencies") for name in TEST_EXTRAS]
    tables.append(_table(pyproject, "tool", "poetry", "dev-dependencies"))
    for table in tables:
        requirements += [name for name in table if PACKAGE_NAME.fullmatch(name) and name.lower() != "python"]
    return [f"'{requirement}'" for requirement in dict.fromkeys(requirements)]


def _table(document: dict[str, Any], *keys: str) -> dict[str, Any]:
    """The table at that path of a parsed TOML document; empty where any step is not a table."""
    value: Any = document
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def _setup_cfg_extras(root: Path) -> set[str]:
    data = read_bounded(root / "setup.cfg")
    if data is None:
        return set()
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(data.decode("utf-8"), source="setup.cfg")
    except (configparser.Error, UnicodeDecodeError) as error:
        raise ConfigError(f"setup.cfg is not a valid configuration file: {error}") from None
    if not parser.has_section("options.extras_require"):
        return set()
    return set(parser.options("options.extras_require"))


def _node_defaults(root: Path) -> dict[str, Any]:
    lock = (root / "package-lock.json").is_file()
    return {"install": ["npm ci" if lock else "npm install"], "test": _node_test(_package_json(root)),
            "junit": NODE_JUNIT, "cache_key_files": _existing(root, ("package.json", "package-lock.json"))}


def _node_test(package: dict[str, Any]) -> str:
    scripts = package.get("scripts")
    script = scripts.get("test") if isinstance(scripts, dict) else None
    # Node's own runner writes JUnit only when asked; other runners keep their own configuration.
    if isinstance(script, str) and "node --test" in script:
        return NODE_TEST_RUNNER_COMMAND
    return "npm test"


def _package_json(root: Path) -> dict[str, Any]:
    data = read_bounded(root / "package.json")
    if data is None:
        return {}
    try:
        package = json.loads(data)
    except ValueError as error:
        raise ConfigError(f"package.json is not valid JSON: {error}") from None
    if not isinstance(package, dict):
        raise ConfigError("package.json must hold a JSON object")
    return package


# --- files ------------------------------------------------------------------------------------

def _read_toml(path: Path) -> dict[str, Any] | None:
    data = read_bounded(path)
    if data is None:
        return None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path.name} is not valid TOML: {error}") from None


def _existing(root: Path, names: tuple[str, ...]) -> list[str]:
    return [name for name in names if (root / name).is_file()]
