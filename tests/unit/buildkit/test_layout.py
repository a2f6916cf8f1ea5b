"""The kit is one package of the standard library only, which runs copied alone into a build, and
the buildspec runs it isolated from the repository it builds."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from agentledger.agent import java
from agentledger.buildkit import generation_java, layout
from agentledger.testrun.config import load_config
from agentledger.testrun.layout import BUILDSPEC, CACHE_PATH_ON_CODEBUILD, KIT_COMMAND
from agentledger.workflow.builds import KIT_FILES, control_files

# Imports every module of the kit, then names every module it loaded that is not the standard library's
# (what the interpreter loaded at its start, a site-packages' .pth, is not the kit's).
FOREIGN_MODULES = """
import json, pkgutil, sys
started = set(sys.modules)
import buildkit
for module in pkgutil.walk_packages(buildkit.__path__, "buildkit."):
    if module.name != "buildkit.__main__":  # runs a command
        __import__(module.name)
own = {"buildkit", "__main__"}
print(json.dumps(sorted({name.partition(".")[0] for name in set(sys.modules) - started}
                        - set(sys.stdlib_module_names) - own - set(sys.builtin_module_names))))
"""


def _copied_alone(tmp_path: Path) -> Path:
    for path, source in KIT_FILES.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, tmp_path / path)
    (tmp_path / layout.KIT_ENTRY_FILE).write_text(layout.KIT_ENTRY)
    return tmp_path / layout.CONTROL_DIR


def test_the_kit_copied_alone_imports_only_the_standard_library(tmp_path: Path) -> None:
    control = _copied_alone(tmp_path)
    imported = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(control)!r})\n"
                               + FOREIGN_MODULES], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert json.loads(imported.stdout) == []


def test_the_kit_copied_alone_runs_as_the_buildspec_runs_it(tmp_path: Path) -> None:
    control = _copied_alone(tmp_path)
    answered = subprocess.run([sys.executable, "-I", str(control), "no-such-command"], capture_output=True,
                              text=True, check=False, cwd=tmp_path)
    assert answered.returncode == 2
    assert answered.stderr.strip() == "usage: python3 -I agentledger prepare|install|test|upload"


def test_every_build_carries_the_whole_kit_its_entry_and_its_configuration(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    carried = control_files(load_config(tmp_path))
    kit = Path(layout.__file__).parent
    shipped = {f"{layout.KIT_DIR}/{path.relative_to(kit).as_posix()}" for path in kit.rglob("*.py")
               if "__pycache__" not in path.parts}
    assert set(carried) == shipped | {layout.KIT_ENTRY_FILE, layout.CONFIG_FILE}
    assert {f"{layout.KIT_DIR}/driver.py", f"{layout.BUILD_SITE_DIR}/sitecustomize.py"} <= shipped


def test_the_buildspec_runs_the_kit_it_ships_isolated_from_the_repository() -> None:
    phases = BUILDSPEC["phases"]
    assert f"python3 -I {layout.CONTROL_DIR}" == KIT_COMMAND
    assert phases["install"]["commands"][-1] == f"{KIT_COMMAND} prepare"
    assert phases["pre_build"]["commands"] == [f"{KIT_COMMAND} install"]
    assert phases["build"]["commands"] == [f"{KIT_COMMAND} test"]
    # The upload reads the grant CodeBuild resolved from its parameter (adapters/codebuild.py).
    assert phases["post_build"]["commands"] == [f"{KIT_COMMAND} upload"]
    assert BUILDSPEC["env"]["variables"][layout.CACHE_VARIABLE] == CACHE_PATH_ON_CODEBUILD


def test_codebuild_keeps_the_venvs_and_the_tools_and_no_repositorys_downloads() -> None:
    assert BUILDSPEC["cache"]["paths"] == [f"{CACHE_PATH_ON_CODEBUILD}/{layout.VENVS_DIR}/**/*",
                                           f"{CACHE_PATH_ON_CODEBUILD}/{layout.TOOLS_DIR}/**/*"]


def test_the_java_filters_read_maven_sources_where_the_orchestrator_does() -> None:
    """The kit runs in the build on its own, so generation_java.py repeats agent/java.py's layout."""
    assert f"{generation_java.MAIN_SOURCES}/" == java.MAIN_SOURCES
    assert generation_java.PACKAGE.pattern == java.PACKAGE.pattern
