"""Bounds the API and its clients agree on, with no heavy import: the CLI reads them too."""
from __future__ import annotations

MAX_UPLOAD_BYTES = 100 << 20  # a repository tarball uploaded through POST /uploads
