"""Builds agentledger's wheel as a user would get it, from a copy of the sources: the build never
writes into the checkout, and nothing it did not ship can be found beside it."""
from __future__ import annotations

import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

from agentledger.deploy import PROJECT_ROOT

if TYPE_CHECKING:
    from pathlib import Path

# What the wheel is built from: the package directories, the files pyproject.toml names, and the
# targets of infra/agentledger/deploy/project_files' links.
SOURCES = ("pyproject.toml", "README.md", "cdk.json", "infra", "functions", "statemachines", "tests/samples/textkit")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache", ".ruff_cache", ".pytest_cache", "*.egg-info")
BUILD_TIMEOUT_S = 300


def build_wheel(workdir: Path) -> Path:
    """The wheel's path, built under `workdir` by the pinned backend installed beside pytest (so
    without the network)."""
    sources = workdir / "sources"
    for name in SOURCES:
        source, target = PROJECT_ROOT / name, sources / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True, ignore=IGNORED)
        else:
            shutil.copy2(source, target)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                            "--wheel-dir", str(workdir / "dist"), str(sources)],
                           check=False, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    if built.returncode != 0:
        raise RuntimeError(f"pip wheel exited {built.returncode}:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}")
    (wheel,) = (workdir / "dist").glob("agentledger-*.whl")
    return wheel
