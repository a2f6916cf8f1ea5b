"""Where `serve` writes the local principals' profiles, and how they are named. Kept free of
heavy imports: the CLI reads it to sign requests to a local API."""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

PROFILE_PREFIX = "agentledger-"
LOCAL_REGION = "us-east-1"
SERVE_HOST = "127.0.0.1"  # the only address `serve` listens on


def local_credentials_dir() -> Path:
    """The directory holding every local instance's profiles, one subdirectory per `serve`."""
    configured = os.environ.get("AGENTLEDGER_LOCAL_CREDENTIALS_DIR")
    return Path(configured) if configured else Path.home() / ".agentledger" / "local"


def instance_profiles_dir(api_url: str, base: Path | None = None) -> Path:
    """Where the `serve` answering at `api_url` writes its principals' profiles, so a second
    `serve` on another port never replaces the keys the first one's callers sign with. Every
    loopback name reaches the one `serve` on that port, so the port alone names the instance."""
    return (base or local_credentials_dir()) / f"{SERVE_HOST}-{api_port(api_url)}"


def api_port(api_url: str) -> int:
    parts = urlsplit(api_url)
    return parts.port or (443 if parts.scheme == "https" else 80)
