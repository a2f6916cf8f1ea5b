"""Content fingerprints: the hashes that evidence and artifacts are compared by."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import os


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    with Path(path).open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def canonical_json(obj: Any) -> bytes:
    """One byte encoding per JSON value, so equal content always hashes equally.

    NaN and infinities are refused: they have no JSON spelling to agree on.
    """
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def digest(obj: Any) -> str:
    return "sha256:" + sha256_bytes(canonical_json(obj))
