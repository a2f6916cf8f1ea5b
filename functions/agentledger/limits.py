"""Bounds the API and its clients agree on, with no heavy import: the CLI reads them too."""
from __future__ import annotations

MAX_UPLOAD_BYTES = 100 << 20  # a repository tarball uploaded through POST /uploads
# How the local API refuses a directory outside the roots `serve` reads; the CLI then uploads the
# tree instead, as it does for a deployed API.
OUTSIDE_ROOTS = "is outside the directories this server reads"
