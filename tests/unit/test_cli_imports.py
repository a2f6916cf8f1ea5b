"""The CLI is a thin HTTP client: building its parser loads neither the AWS SDK, Powertools,
pydantic, moto nor the CDK, so `agentledger --help` starts at once."""
from __future__ import annotations

import subprocess
import sys

from agentledger.deploy import PROJECT_ROOT

HEAVY_PACKAGES = ("boto3", "botocore", "pydantic", "aws_lambda_powertools", "moto", "aws_cdk")
# A fresh interpreter: this one may have imported any of them for the tests before this one.
PROBE = f"""
import sys
from agentledger.cli.main import build_parser
build_parser()
print(" ".join(sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY_PACKAGES!r}))))
"""


def test_building_the_cli_parser_imports_no_heavy_package() -> None:
    probe = subprocess.run([sys.executable, "-c", PROBE], cwd=PROJECT_ROOT, capture_output=True, text=True,
                           check=True)

    assert probe.stdout.split() == []
