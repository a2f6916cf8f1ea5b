"""The CDK app (app.py, stack.py, constructs/): what deploys agentledger, on AWS or into the local runtime.

Everything the app, `serve` and `demo` read at run time is found from here, never from the
working directory, so `cdk synth`, `python -m agentledger.deploy.app`, pytest and an installed
`agentledger` all see the same files wherever they start."""

import importlib.util
import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# The checkout this package lies in (infra/agentledger/deploy); for an installed package, the
# directory above site-packages.
PROJECT_ROOT = PACKAGE_DIR.parents[2]
# The files beyond the Python packages: in a checkout, links to the files at the top of the
# repository; in the wheel, the files themselves (package data), in the same place.
PROJECT_FILES = PACKAGE_DIR / "project_files"
CDK_JSON_FILE = PROJECT_FILES / "cdk.json"
STATE_MACHINE_FILE = PROJECT_FILES / "statemachines" / "run.asl.json"
# pyproject.toml, whose [project] dependencies the Lambda layer installs; under another name, so
# that no tool takes this folder for a project of its own.
DEPENDENCIES_FILE = PROJECT_FILES / "dependencies.toml"
SAMPLE_REPOSITORY = PROJECT_FILES / "samples" / "textkit"  # the demo's; tests/samples/textkit
CONSOLE_STATIC_DIR = PACKAGE_DIR.parent / "local" / "console_static"  # the console's page, script and style sheet
# The Lambda code asset: this package, from wherever Python imports it (functions/ in a checkout),
# without what only runs on a host: the subpackages infra/agentledger/ adds to it. A function never
# imports them, and the asset stays the size of what Lambda runs.
LAMBDA_PACKAGE = "agentledger"
HOST_ONLY_SUBPACKAGES = ("cli", "deploy", "local", "testing")
# Context keys an earlier release read under another name. Given, they are refused with the name
# they have now: a deployment's setting is never dropped without a word.
FORMER_CONTEXT_KEYS = {"planner": "writer"}


def former_context_key_problem(key: str) -> str | None:
    """What to say of a context key that is now named otherwise; None for any other key."""
    current = FORMER_CONTEXT_KEYS.get(key)
    return f"context key {key!r} is now {current!r} (-c {current}=...)" if current else None


def lambda_code_root() -> Path:
    """The directory the Lambda packages are imported from: the asset holds them and nothing else."""
    spec = importlib.util.find_spec(LAMBDA_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"the {LAMBDA_PACKAGE} package is not importable", name=LAMBDA_PACKAGE)
    return Path(spec.origin).resolve().parent.parent


def cache_dir() -> Path:
    """Where the synthesized app and the built dependencies layer are kept: .cache/ in a checkout;
    for an installed package, $XDG_CACHE_HOME/agentledger (by default ~/.cache/agentledger)."""
    if (PROJECT_ROOT / "pyproject.toml").is_file():
        return PROJECT_ROOT / ".cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentledger"
