"""Scratch directories under the workspace root: one per run for the execute stage, and one per
uploaded tarball for its extracted tree. A stage removes its own when it ends; what a failed
attempt leaves (for the person the run is handed to) and extracted trees no run used lately
expire after the retention, so the disk comes back however runs end."""
from __future__ import annotations

import contextlib
import os
import shutil
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

SOURCES_DIR = "sources"


def execute_workspace(root: Path, run_id: str) -> Path:
    return root / run_id / "execute"


def extracted_source(root: Path, tarball_sha256: str) -> Path:
    return root / SOURCES_DIR / tarball_sha256[:24]


def mark_used(path: Path) -> None:
    """Restart the expiry of a directory that is still in use (an extracted tree read again)."""
    with contextlib.suppress(FileNotFoundError):
        os.utime(path)


def expire_workspaces(root: Path, retention_s: float, now: float | None = None) -> list[Path]:
    """Remove the run workspaces and extracted trees untouched for longer than `retention_s`;
    returns what was removed."""
    now = time.time() if now is None else now
    sources = root / SOURCES_DIR
    candidates = [*_directories(root, skip=SOURCES_DIR), *_directories(sources)]
    removed = []
    for path in candidates:
        try:
            idle = now - path.stat().st_mtime
        except FileNotFoundError:  # another worker removed it first
            continue
        if idle > retention_s:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _directories(parent: Path, skip: str | None = None) -> list[Path]:
    try:
        return [entry for entry in parent.iterdir() if entry.name != skip and entry.is_dir() and not entry.is_symlink()]
    except FileNotFoundError:
        return []
