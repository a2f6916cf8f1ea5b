"""The CDK app: `cdk synth` (through cdk.json) or `python -m infra.app`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks

from infra import PROJECT_ROOT
from infra.stack import AgentLedgerStack

STACK_ID = "AgentLedgerStack"
DEFAULT_ENVIRONMENT_NAME = "dev"
CDK_JSON = json.loads((PROJECT_ROOT / "cdk.json").read_text())


def build_app(
    context: dict[str, Any] | None = None, outdir: Path | None = None
) -> tuple[App, AgentLedgerStack]:
    """The app with its one stack and the AwsSolutions checks that run when it is synthesized.

    cdk.json is read here as well as by the CDK CLI, so a plain `python -m infra.app` and the
    tests synthesize what the CLI deploys: the same feature flags, into the same cdk.out.
    Context and output given to the CLI (`-c environment=prod`, `--output`) still win.
    """
    app = App(
        context={**CDK_JSON.get("context", {}), **(context or {})},
        outdir=str(outdir or os.environ.get("CDK_OUTDIR") or PROJECT_ROOT / CDK_JSON["output"]),
    )
    environment_name = app.node.try_get_context("environment") or DEFAULT_ENVIRONMENT_NAME
    stack = AgentLedgerStack(app, STACK_ID, environment_name=environment_name)
    # cdk-nag 3 is a policy-validation plugin: any unacknowledged finding fails the synth and
    # prints the report.
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app, stack


def main() -> None:
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()
