"""Where `serve` writes the local principals' profiles, and how they are named. Kept free of
heavy imports: the CLI reads it to sign requests to a local API."""
from __future__ import annotations

import os
from pathlib import Path

PROFILE_PREFIX = "agentledger-"
LOCAL_REGION = "us-east-1"


def local_credentials_dir() -> Path:
    configured = os.environ.get("AGENTLEDGER_LOCAL_CREDENTIALS_DIR")
    return Path(configured) if configured else Path.home() / ".agentledger" / "local"
