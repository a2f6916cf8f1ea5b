"""The test-run configuration a repository's files give: detected defaults, explicit overrides,
and the refusals that keep an untrusted repository's values bounded."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from agentledger.agent.planner import generation_settings
from agentledger.generation import GenerationLimits
from agentledger.testrun.config import (
    DEFAULT_IMAGE,
    DEFAULT_TIMEOUT_S,
    MAX_TIMEOUT_S,
    ConfigError,
    TestRunConfig,
    describe,
    installs_nothing_of_the_repository,
    load_config,
)

if TYPE_CHECKING:
    from pathlib import Path

PYTEST = 'python -m pytest -p no:cacheprovider --junitxml="$AGENTLEDGER_RESULTS/junit/pytest.xml"'
NODE_RUNNER = ("npm test -- --test-reporter=spec --test-reporter-destination=stdout --test-reporter=junit"
               ' --test-reporter-destination="$AGENTLEDGER_RESULTS/junit/node.xml"')


def repository(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def explicit(root: Path, text: str) -> Path:
    return repository(root, {"agentledger.toml": text})


def refusal(root: Path) -> str:
    with pytest.raises(ConfigError) as raised:
        load_config(root)
    return str(raised.value)


# --- detected defaults ------------------------------------------------------------------------

def test_python_installs_requirements_then_the_project_with_its_test_extras(tmp_path: Path) -> None:
    repository(tmp_path, {
        "requirements.txt": "requests\n",
        "requirements/test.txt": "hypothesis\n",
        "pyproject.toml": '[project]\nname = "x"\n[project.optional-dependencies]\n'
                          'dev = ["ruff"]\ntest = ["pytest"]\ndocs = ["sphinx"]\n',
    })
    assert load_config(tmp_path) == TestRunConfig(
        ecosystem="python", source="detected",
        install=["python -I -m pip install -r requirements.txt",
                 "python -I -m pip install -r requirements/test.txt",
                 "python -I -m pip install '.[test,dev]'",
                 "python -I -m pip install pytest"],
        test=PYTEST, timeout_s=DEFAULT_TIMEOUT_S, junit=[], env={}, virtualenv=True, install_project=True,
        cache_key_files=["pyproject.toml", "requirements.txt", "requirements/test.txt"],
        image=DEFAULT_IMAGE, compute="BUILD_GENERAL1_SMALL",
    )


def test_python_reads_test_extras_from_setup_cfg(tmp_path: Path) -> None:
    repository(tmp_path, {"setup.cfg": "[metadata]\nname = x\n[options.extras_require]\n"
                                       "testing = pytest\nother = six\n"})
    config = load_config(tmp_path)
    assert config.install == ["python -I -m pip install '.[testing]'", "python -I -m pip install pytest"]
    assert config.cache_key_files == ["setup.cfg"]


def test_python_project_without_test_extras_is_installed_plainly(tmp_path: Path) -> None:
    repository(tmp_path, {"setup.py": "from setuptools import setup\nsetup()\n"})
    config = load_config(tmp_path)
    assert config.install == ["python -I -m pip install .", "python -I -m pip install pytest"]
    assert config.install_project is True  # in every build, from its tree


def test_the_plugins_pytests_options_need_are_installed_beside_pytest(tmp_path: Path) -> None:
    """parse's pyproject passes --cov in addopts and declares no test extra: without pytest-cov its
    suite stops before a test runs."""
    repository(tmp_path, {"pyproject.toml": '[project]\nname = "parse"\n[tool.pytest.ini_options]\n'
                                            'addopts = "--cov=parse --cov-report=term -n auto --timeout=30"\n'})

    config = load_config(tmp_path)

    assert config.install[-1] == "python -I -m pip install pytest 'pytest-cov' 'pytest-xdist' 'pytest-timeout'"
    assert installs_nothing_of_the_repository(load_config(repository(tmp_path / "bare", {
        "pytest.ini": "[pytest]\naddopts = -n4 --reruns 2\n", "calc.py": ""})))


def test_pytests_required_plugins_are_installed_and_what_is_not_a_requirement_is_left_out(tmp_path: Path) -> None:
    repository(tmp_path, {"calc.py": "", "setup.cfg": "[tool:pytest]\nrequired_plugins = pytest-mock>=3.0 "
                                                      "hypothesis $(curl evil) ../wheel.whl\n"})

    assert load_config(tmp_path).install == ["python -I -m pip install .",
                                             "python -I -m pip install pytest 'pytest-mock>=3.0' 'hypothesis'"]


def test_only_the_file_pytest_reads_first_names_the_plugins(tmp_path: Path) -> None:
    repository(tmp_path, {"calc.py": "", "pytest.ini": "[pytest]\naddopts = -q\n",
                          "tox.ini": "[pytest]\naddopts = --cov\n"})

    assert load_config(tmp_path).install == ["python -I -m pip install pytest"]


def test_python_requirements_alone_do_not_install_the_project(tmp_path: Path) -> None:
    repository(tmp_path, {"requirements.txt": "", "dev-requirements.txt": ""})
    config = load_config(tmp_path)
    assert config.install == ["python -I -m pip install -r requirements.txt",
                              "python -I -m pip install -r dev-requirements.txt",
                              "python -I -m pip install pytest"]
    assert config.cache_key_files == ["requirements.txt", "dev-requirements.txt"]
    assert config.install_project is False


def test_plain_python_modules_are_a_python_project_run_on_pytest(tmp_path: Path) -> None:
    repository(tmp_path, {"calc.py": "def add(a, b):\n    return a + b\n"})
    config = load_config(tmp_path)
    assert (config.ecosystem, config.install, config.test) == ("python", ["python -I -m pip install pytest"], PYTEST)
    assert config.cache_key_files == []


def test_python_modules_deeper_than_two_levels_are_not_detected(tmp_path: Path) -> None:
    repository(tmp_path, {"docs/examples/conf.py": "", "README.md": "hello"})
    assert refusal(tmp_path).startswith("no test configuration found")


def test_node_without_a_lock_file_runs_npm_install(tmp_path: Path) -> None:
    repository(tmp_path, {"package.json": json.dumps({"scripts": {"test": "jest"}})})
    config = load_config(tmp_path)
    assert (config.ecosystem, config.install, config.test) == ("node", ["npm install"], "npm test")
    assert config.junit == ["junit.xml", "reports/*.xml", "test-results/*.xml"]
    assert config.cache_key_files == ["package.json"]
    assert config.virtualenv is False


def test_node_with_a_lock_file_and_the_node_test_runner_asks_for_junit(tmp_path: Path) -> None:
    repository(tmp_path, {"package.json": json.dumps({"scripts": {"test": "node --test test/"}}),
                          "package-lock.json": "{}"})
    config = load_config(tmp_path)
    assert (config.install, config.test) == (["npm ci"], NODE_RUNNER)
    assert config.cache_key_files == ["package.json", "package-lock.json"]


def test_maven_wins_over_the_other_markers(tmp_path: Path) -> None:
    repository(tmp_path, {"pom.xml": "<project/>", "package.json": "{}", "requirements.txt": ""})
    config = load_config(tmp_path)
    jacoco = "org.jacoco:jacoco-maven-plugin:0.8.15"
    assert (config.ecosystem, config.install, config.test) == (
        "maven", [], f"mvn -B {jacoco}:prepare-agent test {jacoco}:report")  # JaCoCo without a change to the pom
    assert config.junit == ["target/surefire-reports/TEST-*.xml", "*/target/surefire-reports/TEST-*.xml"]
    assert config.jacoco == ["target/site/jacoco/jacoco.xml", "*/target/site/jacoco/jacoco.xml"]
    assert (config.cache_key_files, config.virtualenv) == (["pom.xml"], False)


@pytest.mark.parametrize("pom", ["pom.xml", "service/pom.xml"])
def test_a_pom_that_configures_jacoco_itself_keeps_its_own_agent(tmp_path: Path, pom: str) -> None:
    # Two JaCoCo agents in one JVM stop it before its first test.
    plugin = "<plugin><groupId>org.jacoco</groupId><artifactId>jacoco-maven-plugin</artifactId></plugin>"
    configured = f"<project><build><plugins>{plugin}</plugins></build></project>"
    repository(tmp_path, {"pom.xml": "<project/>", pom: configured})
    assert load_config(tmp_path).test == "mvn -B test"


def test_jacoco_reports_are_read_for_maven_alone_unless_a_repository_names_them(tmp_path: Path) -> None:
    python, custom = tmp_path / "python", tmp_path / "custom"
    repository(python, {"requirements.txt": ""})
    assert load_config(python).jacoco == []
    explicit(custom, 'test = "gradle test"\njacoco = "build/reports/jacoco/test/jacocoTestReport.xml"\n')
    assert load_config(custom).jacoco == ["build/reports/jacoco/test/jacocoTestReport.xml"]


def test_a_test_command_alone_makes_a_custom_build(tmp_path: Path) -> None:
    explicit(tmp_path, 'test = "make check"\n')
    config = load_config(tmp_path)
    assert (config.ecosystem, config.source, config.test) == ("custom", "agentledger.toml", "make check")
    assert (config.install, config.junit, config.cache_key_files, config.virtualenv) == ([], [], [], False)


# --- explicit configuration -------------------------------------------------------------------

def test_pyproject_table_overrides_the_detected_defaults_key_by_key(tmp_path: Path) -> None:
    repository(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n[tool.agentledger]\ntimeout = 120\n'
                                            'junit = "out/*.xml"\nenv = { DJANGO_SETTINGS = "t" }\n'
                                            'compute = "BUILD_GENERAL1_LARGE"\n'
                                            'image = "public.ecr.aws/x/y:1.2@sha256:ab"\n'})
    config = load_config(tmp_path)
    assert config.source == "pyproject.toml [tool.agentledger]"
    assert (config.timeout_s, config.junit, config.env) == (120, ["out/*.xml"], {"DJANGO_SETTINGS": "t"})
    assert (config.compute, config.image) == ("BUILD_GENERAL1_LARGE", "public.ecr.aws/x/y:1.2@sha256:ab")
    assert (config.test, config.install) == (PYTEST, ["python -I -m pip install .",
                                                      "python -I -m pip install pytest"])


def test_agentledger_toml_wins_and_the_pyproject_table_is_ignored(tmp_path: Path) -> None:
    repository(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n[tool.agentledger]\ntimeout = 5\n'
                                            'bogus = 1\n'})
    explicit(tmp_path, 'install = "make deps"\n')
    config = load_config(tmp_path)
    assert (config.source, config.install, config.timeout_s) == ("agentledger.toml", ["make deps"],
                                                                 DEFAULT_TIMEOUT_S)


def test_an_explicit_test_command_drops_the_pytest_install(tmp_path: Path) -> None:
    repository(tmp_path, {"requirements.txt": ""})
    explicit(tmp_path, 'test = "python -m unittest"\n')
    config = load_config(tmp_path)
    assert (config.ecosystem, config.test) == ("python", "python -m unittest")
    assert config.install == ["python -I -m pip install -r requirements.txt"]


def test_a_forced_ecosystem_replaces_detection(tmp_path: Path) -> None:
    repository(tmp_path, {"package.json": "{}"})
    explicit(tmp_path, 'ecosystem = "python"\n')
    config = load_config(tmp_path)
    assert (config.ecosystem, config.test, config.virtualenv) == ("python", PYTEST, True)


def test_describe_names_what_the_build_will_run(tmp_path: Path) -> None:
    explicit(tmp_path, 'install = ["make a", "make b"]\ntest = "make check"\ntimeout = 60\n')
    assert describe(load_config(tmp_path)) == (
        "ecosystem: custom (agentledger.toml)\ninstall:\n  make a\n  make b\n"
        "test: make check\ntimeout: 60 s each for install and test")


# --- refusals ---------------------------------------------------------------------------------

def test_nothing_to_run_names_what_was_looked_for(tmp_path: Path) -> None:
    repository(tmp_path, {"README.md": "hello"})
    assert refusal(tmp_path) == (
        "no test configuration found: looked for pom.xml, package.json, pyproject.toml, setup.py, "
        "setup.cfg, requirements.txt, Python modules at the top two levels and a `test` command in agentledger.toml or "
        "pyproject.toml [tool.agentledger]; add agentledger.toml with a `test` command")


def test_a_forced_custom_ecosystem_needs_a_test_command(tmp_path: Path) -> None:
    explicit(tmp_path, 'ecosystem = "custom"\n')
    assert refusal(tmp_path) == "agentledger.toml, key `test`: the custom ecosystem needs a `test` command"


def test_an_unknown_key_is_named_with_the_accepted_ones(tmp_path: Path) -> None:
    repository(tmp_path, {"pyproject.toml": "[tool.agentledger]\ntests = 'pytest'\n"})
    assert refusal(tmp_path) == (
        "pyproject.toml [tool.agentledger]: unknown key 'tests'; "
        "accepted keys: compute, ecosystem, env, generation_module_seconds, generation_run_seconds, generation_seed, "
        "image, install, "
        "install_project, "
        "jacoco, junit, mutation_module_seconds, mutation_run_seconds, random_order, review_empty_plans, test, "
        "timeout, writer")


def test_a_repository_may_lower_the_time_mutation_analysis_takes_and_the_deployment_caps_it(tmp_path: Path) -> None:
    explicit(tmp_path, 'test = "pytest"\nmutation_module_seconds = 15\nmutation_run_seconds = 900\n')
    config = load_config(tmp_path)
    brief = type("Brief", (), {"run_id": "run-1"})()
    caps = GenerationLimits(mutation_module_seconds=60, mutation_run_seconds=300)
    settings = generation_settings(config, brief, caps)
    assert (settings.mutation_module_seconds, settings.mutation_run_seconds) == (15, 300)
    explicit(tmp_path, 'test = "pytest"\nmutation_run_seconds = 0\n')
    assert "mutation_run_seconds" in refusal(tmp_path)


def test_a_repository_may_fix_the_writers_seed_so_that_a_run_is_repeated_exactly(tmp_path: Path) -> None:
    def seeds() -> set[int]:
        briefs = [type("Brief", (), {"run_id": run_id})() for run_id in ("run-1", "run-2")]
        return {generation_settings(load_config(tmp_path), brief, GenerationLimits()).seed for brief in briefs}

    explicit(tmp_path, 'test = "pytest"\ngeneration_seed = 7\n')
    assert seeds() == {7}
    explicit(tmp_path, 'test = "pytest"\n')
    assert len(seeds()) == 2  # by default each run draws its own
    for wrong in ("-1", "2147483648", "true", "'7'"):
        explicit(tmp_path, f'test = "pytest"\ngeneration_seed = {wrong}\n')
        assert refusal(tmp_path) == "agentledger.toml, key `generation_seed`: must be an integer in 0..2147483647"


def test_invalid_toml_names_the_file_and_the_parser_message(tmp_path: Path) -> None:
    explicit(tmp_path, "test = \n")
    message = refusal(tmp_path)
    assert message.startswith("agentledger.toml is not valid TOML: ")
    assert "line 1" in message


def test_invalid_pyproject_is_refused_even_beside_agentledger_toml(tmp_path: Path) -> None:
    repository(tmp_path, {"pyproject.toml": "[project\n"})
    explicit(tmp_path, 'test = "make"\n')
    assert refusal(tmp_path).startswith("pyproject.toml is not valid TOML: ")


def test_invalid_package_json_is_refused(tmp_path: Path) -> None:
    repository(tmp_path, {"package.json": "{ not json"})
    assert refusal(tmp_path).startswith("package.json is not valid JSON: ")


def test_a_pyproject_agentledger_entry_that_is_not_a_table_is_refused(tmp_path: Path) -> None:
    repository(tmp_path, {"pyproject.toml": 'tool = { agentledger = "yes" }\n'})
    assert refusal(tmp_path) == "pyproject.toml: `tool.agentledger` must be a table"


@pytest.mark.parametrize(("text", "message"), [
    ('ecosystem = "rust"', "key `ecosystem`: 'rust' is not one of python, node, maven, custom"),
    ('compute = "HUGE"', "key `compute`: 'HUGE' is not one of BUILD_GENERAL1_SMALL, "
                         "BUILD_GENERAL1_MEDIUM, BUILD_GENERAL1_LARGE, BUILD_GENERAL1_XLARGE, "
                         "BUILD_GENERAL1_2XLARGE"),
    ("install = 3", "key `install`: must be a string or a list of strings"),
    ('install = ["ok", 1]', "key `install`: must be a string or a list of strings"),
    (f"install = {json.dumps(['x'] * 21)}", "key `install`: at most 20 entries are accepted, not 21"),
    (f'install = "{"x" * 4097}"', "key `install`: a command is longer than 4096 characters"),
    ('install = ["  "]', "key `install`: a command must not be empty"),
    ("test = ['a']", "key `test`: must be a string"),
    ('test = ""', "key `test`: a command must not be empty"),
    (f'test = "{"x" * 4097}"', "key `test`: a command is longer than 4096 characters"),
    ('timeout = "60"', "key `timeout`: must be an integer number of seconds"),
    ("timeout = true", "key `timeout`: must be an integer number of seconds"),
    ("timeout = 0", f"key `timeout`: 0 is outside 1..{MAX_TIMEOUT_S} seconds"),
    (f"timeout = {MAX_TIMEOUT_S + 1}", f"key `timeout`: {MAX_TIMEOUT_S + 1} is outside 1..{MAX_TIMEOUT_S} seconds"),
    ('junit = "../out/*.xml"', "key `junit`: '../out/*.xml' must be a path relative to the repository "
                               "root, without `..`"),
    ('junit = ["a/../../b.xml"]', "key `junit`: 'a/../../b.xml' must be a path relative to the "
                                  "repository root, without `..`"),
    ('junit = "/tmp/*.xml"', "key `junit`: '/tmp/*.xml' must be a path relative to the repository "
                             "root, without `..`"),
    (f"junit = {json.dumps(['a.xml'] * 21)}", "key `junit`: at most 20 entries are accepted, not 21"),
    ('jacoco = "../jacoco.xml"', "key `jacoco`: '../jacoco.xml' must be a path relative to the repository "
                                 "root, without `..`"),
    ("jacoco = 1", "key `jacoco`: must be a string or a list of strings"),
    ('env = "A=1"', "key `env`: must be a table of names to strings"),
    ("env = { lower = 'x' }", "key `env`: 'lower' is not a variable name ([A-Z_][A-Z0-9_]{0,127})"),
    ("env = { AWS_REGION = 'x' }", "key `env.AWS_REGION`: AWS_REGION is set by the sandbox and "
                                   "cannot be declared"),
    ("env = { AGENTLEDGER_RESULTS = 'x' }", "key `env.AGENTLEDGER_RESULTS`: AGENTLEDGER_RESULTS is set "
                                            "by the sandbox and cannot be declared"),
    ("env = { PATH = '/evil' }", "key `env.PATH`: PATH is set by the sandbox and cannot be declared"),
    ("env = { PYTHONPATH = 'x' }", "key `env.PYTHONPATH`: PYTHONPATH is set by the sandbox and "
                                   "cannot be declared"),
    ("env = { DEBUG = 1 }", "key `env.DEBUG`: the value must be a string"),
    (f"env = {{ BIG = '{'x' * 4097}' }}", "key `env.BIG`: the value is longer than 4096 characters"),
    ("env = { " + ", ".join(f"V{i} = 'x'" for i in range(51)) + " }",
     "key `env`: at most 50 variables are accepted"),
    ('image = "bad image"', "key `image`: must be an image name of at most 256 characters matching "
                            "[A-Za-z0-9][A-Za-z0-9._/:@-]*"),
    (f'image = "{"a" * 257}"', "key `image`: must be an image name of at most 256 characters matching "
                               "[A-Za-z0-9][A-Za-z0-9._/:@-]*"),
])
def test_explicit_values_out_of_bounds_are_refused(tmp_path: Path, text: str, message: str) -> None:
    explicit(tmp_path, f'test = "make check"\n{text}\n' if not text.startswith("test") else f"{text}\n")
    assert refusal(tmp_path) == f"agentledger.toml, {message}"


def test_a_long_unknown_key_is_cut_short_in_the_message(tmp_path: Path) -> None:
    explicit(tmp_path, f'{"k" * 500} = 1\n')
    message = refusal(tmp_path)
    assert message.startswith("agentledger.toml: unknown key 'kkk")
    assert len(message) < 400


def test_a_configuration_file_that_is_a_link_is_refused_not_followed(tmp_path: Path) -> None:
    (tmp_path / "agentledger.toml").symlink_to("/dev/zero")
    assert "agentledger.toml is a symbolic link" in refusal(tmp_path)


def test_an_oversized_configuration_file_is_refused(tmp_path: Path) -> None:
    explicit(tmp_path, "# padding\n" * 200_000)
    assert "larger than" in refusal(tmp_path)


def test_a_poetry_project_is_installed_with_its_test_and_dev_groups_by_name(tmp_path: Path) -> None:
    repository(tmp_path, {"pyproject.toml": (
        '[build-system]\nrequires = ["poetry-core"]\nbuild-backend = "poetry.core.masonry.api"\n'
        '[tool.poetry]\nname = "x"\n[tool.poetry.dependencies]\npython = ">=3.8"\nrequests = "^2"\n'
        '[tool.poetry.group.dev.dependencies]\nhypothesis = "*"\npytest = "^7.0"\n"bad;name" = "*"\n'
        '[tool.poetry.dev-dependencies]\npytz = "*"\npython = "*"\n')})
    assert load_config(tmp_path).install == ["python -I -m pip install .",
                                              "python -I -m pip install 'hypothesis' 'pytest' 'pytz'",
                                              "python -I -m pip install pytest"]


def test_dependency_groups_are_installed_as_written_and_odd_entries_left_out(tmp_path: Path) -> None:
    repository(tmp_path, {"pyproject.toml": (
        '[project]\nname = "x"\n[dependency-groups]\n'
        'test = ["pytest>=8", "hypothesis[cli] ~= 6.0", {include-group = "dev"}, "evil; rm -rf /", "x @ https://e"]\n'
        'docs = ["sphinx"]\n')})
    assert load_config(tmp_path).install == ["python -I -m pip install .",
                                              "python -I -m pip install 'pytest>=8' 'hypothesis[cli] ~= 6.0'",
                                              "python -I -m pip install pytest"]


def test_malformed_poetry_tables_are_passed_over(tmp_path: Path) -> None:
    repository(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n[tool]\npoetry = 3\n'})
    assert load_config(tmp_path).install == ["python -I -m pip install .", "python -I -m pip install pytest"]


def test_a_repository_may_ask_for_its_project_to_be_installed_from_its_tree_or_not(tmp_path: Path) -> None:
    explicit(tmp_path, 'test = "pytest"\ninstall = ["pip install -r reqs.txt"]\ninstall_project = true\n')
    assert load_config(tmp_path).install_project is True
    explicit(tmp_path, 'test = "pytest"\ninstall_project = "yes"\n')
    assert refusal(tmp_path) == "agentledger.toml, key `install_project`: must be true or false"


def test_a_key_an_earlier_release_read_is_read_under_the_name_it_has_now(tmp_path: Path) -> None:
    repository(tmp_path, {"agentledger.toml": "generation_seconds = 120\n", "mod.py": "X = 1\n"})
    assert load_config(tmp_path).generation_run_seconds == 120


@pytest.mark.parametrize("marker", ["build.gradle", "build.gradle.kts", "settings.gradle.kts"])
def test_a_gradle_project_is_told_what_to_configure(tmp_path: Path, marker: str) -> None:
    repository(tmp_path, {marker: "plugins { java }\n", "buildSrc/helper.py": ""})

    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path)

    assert f"a Gradle project ({marker})" in str(refused.value)
    for line in ('test = "./gradlew test --no-daemon"', 'junit = ["build/test-results/test/*.xml"',
                 'jacoco = ["build/reports/jacoco/test/jacocoTestReport.xml"]'):
        assert line in str(refused.value)


def test_a_gradle_project_that_says_how_it_tests_runs_as_it_says(tmp_path: Path) -> None:
    repository(tmp_path, {"build.gradle.kts": "plugins { java }\n", "agentledger.toml":
                          'test = "./gradlew test --no-daemon"\njunit = ["build/test-results/test/*.xml"]\n'})

    config = load_config(tmp_path)

    assert (config.ecosystem, config.test, config.junit) == (
        "custom", "./gradlew test --no-daemon", ["build/test-results/test/*.xml"])
