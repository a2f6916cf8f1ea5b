"""The dependency cache entry a build may use or fill, named by the stage from what the install
depends on: an install that runs anything of the repository's (its project, a requirements file,
an `env` of its own) gets an entry no other repository ever gets; one that only fetches packages
from the index by name is shared by every repository that asks for the same."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentledger.models import Run
from agentledger.testrun.config import TestRunConfig, installs_nothing_of_the_repository, load_config
from agentledger.workflow.builds import cache_key

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.unit

ALICE = "arn:aws:iam::123456789012:user/alice"


def _run(repository: str, requested_by: str = ALICE) -> Run:
    return Run(run_id="run-1", request="tests", repository=repository, environment="dev", requested_by=requested_by)


def _config(tmp_path: Path, **files: str) -> TestRunConfig:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return load_config(tmp_path)


def test_an_install_of_named_packages_alone_is_shared_by_every_repository(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert config.install == ["python -I -m pip install pytest"] and installs_nothing_of_the_repository(config)
    assert cache_key(_run("/srv/one"), config, {}) == cache_key(_run("/srv/two", "bob"), config, {})


@pytest.mark.parametrize("files", [
    {"requirements.txt": "six\n"},  # a file of the repository's names what is installed
    {"pyproject.toml": '[project]\nname = "calc"\nversion = "1"\n'},  # the project itself is built
    {"agentledger.toml": 'test = "pytest"\n[env]\nPIP_FIND_LINKS = "wheelhouse"\n'},  # an env of its own
    {"agentledger.toml": 'test = "pytest"\ninstall = ["pip install pytest"]\n'},  # its own command
    {"agentledger.toml": 'test = "pytest"\ninstall = ["python -I -m pip install pytest; touch x"]\n'},
    {"agentledger.toml": 'test = "pytest"\ninstall = ["python -I -m pip install --index-url http://x pytest"]\n'},
])
def test_an_install_that_runs_anything_of_the_repositorys_is_that_repositorys_alone(
        tmp_path: Path, files: dict[str, str]) -> None:
    config = _config(tmp_path, **files)
    assert not installs_nothing_of_the_repository(config)
    key = cache_key(_run("/srv/one"), config, dict.fromkeys(files, "sha256:x"))
    assert key != cache_key(_run("/srv/two"), config, dict.fromkeys(files, "sha256:x"))
    assert key != cache_key(_run("/srv/one", "arn:aws:iam::123456789012:user/bob"), config,
                            dict.fromkeys(files, "sha256:x"))


def test_an_entry_follows_what_the_install_depends_on(tmp_path: Path) -> None:
    config = _config(tmp_path, **{"requirements.txt": "six\n"})
    run = _run("/srv/one")
    first = cache_key(run, config, {"requirements.txt": "sha256:a", "calc.py": "sha256:x"})
    assert cache_key(run, config, {"requirements.txt": "sha256:a", "calc.py": "sha256:y"}) == first
    assert cache_key(run, config, {"requirements.txt": "sha256:b", "calc.py": "sha256:x"}) != first
    assert cache_key(run, config.model_copy(update={"image": "other"}), {"requirements.txt": "sha256:a"}) != first


def test_a_build_without_a_virtualenv_caches_nothing(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "x", "scripts": {"test": "node --test"}}')
    assert cache_key(_run("/srv/one"), load_config(tmp_path), {}) is None
