"""The dependencies layer: pins from pyproject.toml, built by pip for arm64, cached by content."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
from aws_cdk import DockerImage
from aws_cdk import aws_lambda as lambda_

from agentledger.deploy import PROJECT_ROOT
from agentledger.deploy.constructs import bundling
from agentledger.deploy.constructs.bundling import PipLayerBundling, layer_requirements

pytestmark = [pytest.mark.infra, pytest.mark.xdist_group("cdk-synth")]
UNUSED_IMAGE = DockerImage.from_registry("unused")  # what the CDK passes a local bundling, never pulled


def test_requirements_are_the_project_pins_without_the_aws_sdk() -> None:
    pins = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    requirements = layer_requirements()
    assert requirements == [pin for pin in pins if not pin.startswith("boto3")]
    assert requirements and not any(pin.startswith(("boto3", "botocore")) for pin in requirements)


def test_fingerprint_follows_the_pins_and_the_runtime() -> None:
    pins = ["pydantic==2.14.4"]
    fingerprint = PipLayerBundling(pins, lambda_.Runtime.PYTHON_3_14).fingerprint
    assert fingerprint == PipLayerBundling(list(pins), lambda_.Runtime.PYTHON_3_14).fingerprint
    assert fingerprint != PipLayerBundling(["pydantic==2.14.3"], lambda_.Runtime.PYTHON_3_14).fingerprint
    assert fingerprint != PipLayerBundling(pins, lambda_.Runtime.PYTHON_3_13).fingerprint


def _fake_pip(calls: list[list[str]]):
    """Stands in for pip: records the command and installs one module plus the SDK it must prune."""

    def run(command: list[str], check: bool) -> None:
        calls.append(command)
        target = Path(command[command.index("--target") + 1])
        for package in ("pydantic", "botocore", "s3transfer"):
            (target / package).mkdir(parents=True)
            (target / package / "__init__.py").write_text("")
        (target / "botocore-1.0.0.dist-info").mkdir()

    return run


def test_pip_runs_once_for_the_lambda_platform_then_the_cache_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(bundling, "LAYER_CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(subprocess, "run", _fake_pip(calls))
    bundler = PipLayerBundling(["pydantic==2.14.4"], lambda_.Runtime.PYTHON_3_14)

    first, second = tmp_path / "first", tmp_path / "second"
    assert bundler.try_bundle(str(first), image=UNUSED_IMAGE) is True
    assert bundler.try_bundle(str(second), image=UNUSED_IMAGE) is True

    (command,) = calls
    assert command[command.index("--platform") + 1] == "manylinux2014_aarch64"
    assert command[command.index("--python-version") + 1] == "3.14"
    assert command[command.index("--implementation") + 1] == "cp"
    assert "--only-binary=:all:" in command
    assert command[-1] == "pydantic==2.14.4"
    assert capsys.readouterr().err.count("pip-installing") == 1
    for output in (first, second):
        assert sorted(path.name for path in (output / "python").iterdir()) == ["pydantic"]


def test_a_failed_pip_leaves_no_cache_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_pip(command: list[str], check: bool) -> None:
        raise subprocess.CalledProcessError(1, command)

    monkeypatch.setattr(bundling, "LAYER_CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(subprocess, "run", failing_pip)
    with pytest.raises(subprocess.CalledProcessError):
        PipLayerBundling(["pydantic==2.14.4"], lambda_.Runtime.PYTHON_3_14).try_bundle(str(tmp_path / "out"),
                                                                                         image=UNUSED_IMAGE)
    assert list((tmp_path / "cache").iterdir()) == []
