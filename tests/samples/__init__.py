"""Sample repositories handed to the agent by the tests, the demo and the benchmark: real files,
copied into a scratch directory for each use so a test can edit its copy."""
from __future__ import annotations

import shutil
from pathlib import Path

SAMPLES_DIR = Path(__file__).resolve().parent
TEXTKIT = SAMPLES_DIR / "textkit"
# A Maven project whose suite runs offline on Debian's packaged Maven repository, with JaCoCo.
SHAPES_MAVEN = SAMPLES_DIR / "shapes_maven"
# JUnit classes a model might write for it, one per way a candidate can end (each says which).
MAVEN_CANDIDATES = SAMPLES_DIR / "shapes_maven_candidates"
EDITED_FILE = "textkit/slug.py"


# What the durable layer's tests need of the sample's pyproject.toml: its agentledger table alone. Without
# a project to build, its install fetches pytest and nothing of the repository's, so every copy's builds
# share one cached venv and build nothing (workflow/builds.py: cache_key).
UNPACKAGED_PYPROJECT = "[tool.agentledger]\ngeneration_module_seconds = 15\n"


def write_sample_repository(root: Path, packaged: bool = True) -> Path:
    """The textkit sample; `packaged=False`: its modules and suite without the project's packaging."""
    shutil.copytree(TEXTKIT, root, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    if not packaged:
        (root / "pyproject.toml").write_text(UNPACKAGED_PYPROJECT)
    return root


def write_maven_sample(root: Path) -> Path:
    shutil.copytree(SHAPES_MAVEN, root, dirs_exist_ok=True)
    return root


def edit_sample_repository(root: Path) -> str:
    """A change a colleague might push while the run waits: the plan read this file."""
    path = root / EDITED_FILE
    path.write_text(path.read_text().replace("Lower-case words joined by dashes.", "Lower-case words, joined by dashes."))
    return EDITED_FILE
