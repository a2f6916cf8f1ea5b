"""Synthesize the CDK app once per source version: the cloud assembly is cached under a hash of
everything that goes into it, so the local runtime and the tests reuse one synth."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agentledger.deploy import (
    HOST_ONLY_SUBPACKAGES,
    LAMBDA_PACKAGE,
    PACKAGE_DIR,
    PROJECT_ROOT,
    SAMPLE_REPOSITORY,
    cache_dir,
    lambda_code_root,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

CACHE_ROOT = cache_dir() / "synth"
STACK_TEMPLATE = "AgentLedgerStack.template.json"
# Not inputs of the synth: the demo's sample repository, and what only a host runs (in an installed
# package it lies inside the Lambda package; the asset leaves it out).
NOT_SYNTHESIZED = (SAMPLE_REPOSITORY, *(lambda_code_root() / LAMBDA_PACKAGE / name for name in HOST_ONLY_SUBPACKAGES))
# An assembly no runtime has used for this long is removed: another `serve` on this machine (with
# other sources or another context) may be deploying from any used more recently.
UNUSED_ASSEMBLY_SECONDS = 24 * 3600


def synth_inputs() -> Iterator[tuple[str, Path]]:
    """Every file that goes into the cloud assembly, named by its place in its package: the CDK app
    with the project files it reads (cdk.json, the state machine, the pins), and the Lambda packages.
    The same files in a checkout and in an installed package name the same inputs."""
    packages = [("deploy", PACKAGE_DIR), (LAMBDA_PACKAGE, lambda_code_root() / LAMBDA_PACKAGE)]
    for name, root in packages:
        # Project files are links in a checkout: followed, so their targets count.
        for directory, subdirectories, files in os.walk(root, followlinks=True):
            here = Path(directory)
            subdirectories[:] = sorted(
                name for name in subdirectories if name != "__pycache__" and here / name not in NOT_SYNTHESIZED
            )
            for file in sorted(f for f in files if not f.endswith(".pyc")):
                yield str(Path(name) / (here / file).relative_to(root)), here / file


def source_hash(context: dict[str, str] | None = None) -> str:
    digest = hashlib.sha256(json.dumps(context or {}, sort_keys=True).encode())
    for name, file in synth_inputs():
        digest.update(name.encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def synthesize(progress: bool = True, context: dict[str, str] | None = None) -> Path:
    """The path of a cloud assembly for the current sources and context (`-c key=value`, as
    `cdk deploy` takes it), synthesizing it if needed."""
    target = CACHE_ROOT / source_hash(context)
    if (target / STACK_TEMPLATE).exists():
        return _used(target)
    CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    with (CACHE_ROOT / ".lock").open("w") as lock:
        # Parallel test workers wait for one synth instead of running several.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / STACK_TEMPLATE).exists():
            return _used(target)
        if progress:
            print("agentledger: synthesizing the CDK app (first run for these sources, ~30 s)...", file=sys.stderr,
                  flush=True)
        staging = target.with_name(target.name + f".tmp{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        # As the CDK CLI hands `-c` to the app: cdk.json's values are the defaults, these win.
        env = {**os.environ, "CDK_OUTDIR": str(staging), "CDK_CONTEXT_JSON": json.dumps(context or {})}
        result = subprocess.run([sys.executable, "-m", "agentledger.deploy.app"], cwd=PROJECT_ROOT, env=env,
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"cdk synth failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
        staging.rename(target)
        _remove_unused(keep={source_hash(), target.name})  # the default assembly stays for the tests and the demo
    return target


def _used(assembly: Path) -> Path:
    os.utime(assembly)
    return assembly


def _remove_unused(keep: set[str]) -> None:
    """Assemblies (and staging directories a killed synth left) that nothing has used for a day."""
    unused_since = time.time() - UNUSED_ASSEMBLY_SECONDS
    for stale in CACHE_ROOT.iterdir():
        if stale.is_dir() and stale.name not in keep and stale.stat().st_mtime < unused_since:
            shutil.rmtree(stale, ignore_errors=True)
