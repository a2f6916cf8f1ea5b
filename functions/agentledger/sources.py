"""Where a run's repository comes from: a local path or git checkout (local mode), or a
tarball in S3 (on AWS, where a Lambda cannot see the caller's disk)."""
from __future__ import annotations

from pathlib import Path

from .agent.source import SourceSnapshot, extract_tarball, snapshot_directory
from .artifacts import ArtifactStore
from .errors import LedgerError
from .fingerprints import sha256_bytes


class RepositoryUnavailableError(LedgerError):
    pass


class SourceResolver:
    def __init__(self, artifacts: ArtifactStore, workspace_root: Path) -> None:
        self._artifacts = artifacts
        self._workspace_root = workspace_root

    def snapshot(self, repository: str) -> SourceSnapshot:
        if repository.startswith("s3://"):
            return self._snapshot_tarball(repository)
        root = Path(repository)
        if not root.is_dir():
            raise RepositoryUnavailableError(f"repository path {repository} is not a directory on this machine")
        return snapshot_directory(root)

    def _snapshot_tarball(self, url: str) -> SourceSnapshot:
        data, version = self._artifacts.fetch_repository(url)
        target = self._workspace_root / "sources" / sha256_bytes(data)[:24]
        root = extract_tarball(data, target) if not target.exists() else _single_root(target)
        snapshot = snapshot_directory(root)
        return snapshot.model_copy(update={"revision": version})


def _single_root(directory: Path) -> Path:
    entries = list(directory.iterdir())
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else directory
