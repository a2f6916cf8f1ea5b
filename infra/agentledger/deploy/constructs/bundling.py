"""Builds the Lambda dependencies layer with pip on this machine: no Docker needed.

pip downloads wheels for the Lambda platform (arm64, the runtime's CPython version) and refuses
source distributions, so what lands in the layer is what Lambda runs, whatever the host is.
The installed tree is cached per pin set and runtime, so a repeat synth copies instead of
resolving and downloading again.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from agentledger.deploy import DEPENDENCIES_FILE, PROJECT_ROOT, cache_dir

LAYER_PLATFORM = "manylinux2014_aarch64"
LAYER_CACHE_DIR = cache_dir() / "layers"

# The Lambda runtime ships its own matched set of the AWS SDK. A botocore pulled in transitively
# (aws-xray-sdk requires it) would shadow the runtime's and break that match, so these are
# neither pinned into the layer nor kept when a dependency drags them in.
RUNTIME_PROVIDED_PACKAGES = ("boto3", "botocore", "s3transfer")

_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def layer_requirements(pyproject: Path = DEPENDENCIES_FILE) -> list[str]:
    """The project's run-time pins, read from pyproject.toml, minus what the runtime provides."""
    dependencies = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    return [
        requirement
        for requirement in dependencies
        if _distribution_name(requirement) not in RUNTIME_PROVIDED_PACKAGES
    ]


def _distribution_name(requirement: str) -> str:
    match = _REQUIREMENT_NAME.match(requirement)
    if match is None:
        raise ValueError(f"cannot read a distribution name from requirement {requirement!r}")
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def _python_version(runtime: lambda_.Runtime) -> str:
    """'python3.14' -> '3.14'."""
    return runtime.name.removeprefix("python")


@jsii.implements(ILocalBundling)
class PipLayerBundling:
    """Installs the requirements into `<output>/python`, the directory Lambda adds to sys.path."""

    def __init__(self, requirements: list[str], runtime: lambda_.Runtime) -> None:
        self._requirements = requirements
        self._python_version = _python_version(runtime)
        self.fingerprint = hashlib.sha256(
            json.dumps(
                {
                    "requirements": requirements,
                    "python": self._python_version,
                    "platform": LAYER_PLATFORM,
                    "pruned": RUNTIME_PROVIDED_PACKAGES,
                },
                sort_keys=True,
            ).encode()
        ).hexdigest()

    def try_bundle(self, output_dir: str, *, image: DockerImage, **docker_options: Any) -> bool:
        """As ILocalBundling declares it: jsii passes the bundling options as keywords (the Docker
        image and the options of a Docker bundling, which this one needs none of)."""
        cached_tree = LAYER_CACHE_DIR / self.fingerprint
        if not cached_tree.is_dir():
            self._install_into_cache(cached_tree)
        shutil.copytree(cached_tree, output_dir, dirs_exist_ok=True)
        return True

    def _install_into_cache(self, cached_tree: Path) -> None:
        print(
            f"agentledger: pip-installing the dependencies layer for Python {self._python_version} "
            f"({LAYER_PLATFORM}) into {cached_tree}",
            file=sys.stderr,
        )
        LAYER_CACHE_DIR.mkdir(parents=True, exist_ok=True)
        # Build beside the cache entry and rename at the end: an interrupted pip or a parallel
        # synth never leaves a half-installed tree that a later synth would copy.
        staging = Path(tempfile.mkdtemp(prefix=f"{self.fingerprint}.", dir=LAYER_CACHE_DIR))
        site_packages = staging / "python"
        try:
            subprocess.run(
                [
                    sys.executable, "-m", "pip", "install",
                    "--quiet", "--disable-pip-version-check", "--no-compile",
                    "--platform", LAYER_PLATFORM,
                    "--only-binary=:all:",
                    "--implementation", "cp",
                    "--python-version", self._python_version,
                    "--target", str(site_packages),
                    *self._requirements,
                ],
                check=True,
            )
            _remove_runtime_provided_packages(site_packages)
            staging.rename(cached_tree)
        except OSError:
            if not cached_tree.is_dir():  # a parallel synth that finished first is as good
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _remove_runtime_provided_packages(site_packages: Path) -> None:
    for package in RUNTIME_PROVIDED_PACKAGES:
        shutil.rmtree(site_packages / package, ignore_errors=True)
        for metadata in site_packages.glob(f"{package}-*.dist-info"):
            shutil.rmtree(metadata)


def dependencies_layer_code(runtime: lambda_.Runtime) -> lambda_.AssetCode:
    """The layer's code asset, hashed by what goes into it rather than by any source files."""
    bundler = PipLayerBundling(layer_requirements(), runtime)
    return lambda_.Code.from_asset(
        str(PROJECT_ROOT),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=bundler.fingerprint,
        bundling=BundlingOptions(
            # Required by the API but never pulled: local bundling always succeeds or raises.
            image=DockerImage.from_registry("unused"),
            local=bundler,
        ),
    )
