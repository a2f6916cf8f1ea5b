"""The unit suite's own rules: a test is a unit test by its folder, and under the guard `make
test-unit` runs it with (tests/offline.py), moto cannot be imported and nothing reaches the network."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentledger.deploy import PROJECT_ROOT

TESTS_DIR = PROJECT_ROOT / "tests"
KINDS = ("unit", "integration", "infra", "reliability", "e2e")

# A fresh interpreter with the guard on, reaching for each thing it blocks.
PROBE = """
import json, socket
import tests.offline

tests.offline.install()
outcomes = {}

def attempt(name, action):
    try:
        action()
        outcomes[name] = "allowed"
    except BaseException as error:
        outcomes[name] = f"{type(error).__name__}: {error}"

def import_moto():
    import moto

def import_moto_module():
    from moto.dynamodb import models

def connect_loopback():
    with socket.socket() as sock:
        sock.connect(("127.0.0.1", 9))

def connect_ex_remote():
    with socket.socket() as sock:
        sock.connect_ex(("192.0.2.1", 443))

def call_aws():
    import boto3
    boto3.client("s3", region_name="us-east-1", aws_access_key_id="offline",
                 aws_secret_access_key="offline").list_buckets()

def connect_unix():
    left, right = socket.socketpair(socket.AF_UNIX)
    left.close(), right.close()

for name, action in [("import moto", import_moto), ("import moto.dynamodb", import_moto_module),
                     ("connect", connect_loopback), ("connect_ex", connect_ex_remote), ("boto3", call_aws),
                     ("unix socket", connect_unix)]:
    attempt(name, action)
print(json.dumps(outcomes))
"""


def _guarded_outcomes() -> dict[str, str]:
    probe = subprocess.run([sys.executable, "-c", PROBE], cwd=PROJECT_ROOT, capture_output=True, text=True,
                           check=True, timeout=60)
    outcomes: dict[str, str] = json.loads(probe.stdout)
    return outcomes


def test_the_guard_blocks_moto_and_the_network_but_not_unix_sockets() -> None:
    outcomes = _guarded_outcomes()

    assert outcomes["import moto"].startswith("ModuleNotFoundError: moto is blocked in the unit tests")
    assert outcomes["import moto.dynamodb"].startswith("ModuleNotFoundError: moto")
    assert outcomes["connect"].startswith("NetworkBlocked: the unit tests may not connect to ('127.0.0.1', 9)")
    assert outcomes["connect_ex"].startswith("NetworkBlocked: the unit tests may not connect to ('192.0.2.1', 443)")
    assert outcomes["boto3"].startswith("NetworkBlocked: the unit tests may not send GET https://s3.")
    assert outcomes["unix socket"] == "allowed"


def test_make_test_unit_runs_every_unit_test_under_the_guard() -> None:
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    target = makefile.split("\ntest-unit:", 1)[1].split("\n\n", 1)[0]
    options = target.split("-m pytest", 1)[1]

    assert "-p tests.offline" in options
    assert options.rstrip().endswith(" tests/unit")
    assert " -m " not in options and " -k " not in options  # the folder is the selection


def test_every_test_in_the_unit_folder_is_marked_unit() -> None:
    collected = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.offline", "-p", "no:cacheprovider",
                                "--collect-only", "-q", "-m", "not unit", "tests/unit"],
                               cwd=PROJECT_ROOT, capture_output=True, text=True, check=False, timeout=120)

    assert collected.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, collected.stdout[-2000:]
    assert " deselected" in collected.stdout


@pytest.mark.parametrize("kind", KINDS)
def test_no_test_outside_its_folder_claims_a_kind(kind: str) -> None:
    """The folder marks the kind: `-m unit` selects exactly tests/unit, and so on for each kind."""
    claims = [
        str(path.relative_to(TESTS_DIR))
        for path in TESTS_DIR.rglob("*.py")
        if path.relative_to(TESTS_DIR).parts[0] not in (kind, "samples") and f"mark.{kind}" in path.read_text()
    ]

    assert claims == []
