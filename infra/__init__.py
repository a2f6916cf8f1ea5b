"""agentledger infrastructure: the CDK app (app.py, stack.py, constructs/) and the local runtime (local/)."""

from pathlib import Path

# Assets and the state-machine definition are found from here, never from the working directory,
# so `cdk synth`, `python -m infra.app` and pytest all see the same files wherever they start.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
