"""The driver runs inside the build on its own, so it repeats the layout's names; they must agree."""
from __future__ import annotations

import pytest

from agentledger.agent import java
from agentledger.testrun import driver, generation_java, layout

SHARED_NAMES = (
    "REPOSITORY_DIR", "CONFIG_FILE", "RESULTS_DIR", "RESULT_FILE", "OUTPUT_FILE", "JUNIT_DIR", "COVERAGE_DIR",
    "INPUT_URL_VARIABLE", "OUTPUT_GRANT_VARIABLE", "TEST_RUN_VARIABLE", "CACHE_VARIABLE",
    "RESULTS_VARIABLE", "OUTPUT_LIMIT_BYTES", "OUTPUT_ARCHIVE_LIMIT_BYTES",
)


@pytest.mark.parametrize("name", SHARED_NAMES)
def test_the_driver_repeats_the_layout_exactly(name: str) -> None:
    assert getattr(driver, name) == getattr(layout, name)


def test_the_driver_keeps_its_own_files_outside_what_is_uploaded() -> None:
    for own_file in (driver.RAW_OUTPUT_FILE, driver.OUTPUT_ARCHIVE):
        assert own_file.startswith(f"{layout.CONTROL_DIR}/")
        assert not own_file.startswith(f"{layout.RESULTS_DIR}/")


def test_the_buildspec_runs_the_driver_it_ships() -> None:
    phases = layout.BUILDSPEC["phases"]
    assert phases["pre_build"]["commands"] == [f"python3 {layout.DRIVER_FILE} install"]
    assert phases["build"]["commands"] == [f"python3 {layout.DRIVER_FILE} test"]
    # The upload reads the grant CodeBuild resolved from its parameter (adapters/codebuild.py).
    assert phases["post_build"]["commands"] == [f"python3 {layout.DRIVER_FILE} upload"]
    assert layout.BUILDSPEC["env"]["variables"][layout.CACHE_VARIABLE] == layout.CACHE_PATH_ON_CODEBUILD


def test_the_java_filters_read_maven_sources_where_the_orchestrator_does() -> None:
    """generation_java.py runs in the build on its own, so it repeats agent/java.py's layout."""
    assert f"{generation_java.MAIN_SOURCES}/" == java.MAIN_SOURCES
    assert generation_java.PACKAGE.pattern == java.PACKAGE.pattern
