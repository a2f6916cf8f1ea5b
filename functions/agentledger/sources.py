"""Where a run's repository comes from: a tarball uploaded through the API's upload grant
(s3://<artifact bucket>/repositories/<sha256>.tar.gz), or, for the local runtime only, a
directory under a root that `serve` allows. Nothing else is read, so the API cannot be asked
about other buckets' objects or this machine's files."""
from __future__ import annotations

import re
from pathlib import Path

from .agent.source import SourceSnapshot, extract_tarball, snapshot_directory
from .artifacts import ArtifactStore
from .errors import LedgerError, RepositoryNotAllowedError
from .fingerprints import sha256_bytes


UPLOAD_PREFIX = "repositories/"
UPLOAD_KEY = re.compile(r"^repositories/[0-9a-f]{64}\.tar\.gz$")


class RepositoryUnavailableError(LedgerError):
    pass


def upload_key(sha256: str) -> str:
    return f"{UPLOAD_PREFIX}{sha256}.tar.gz"


class SourceResolver:
    def __init__(self, artifacts: ArtifactStore, workspace_root: Path, local_roots: tuple[Path, ...] = ()) -> None:
        """`local_roots`: the directories under which local repositories may lie; empty on AWS,
        where only uploaded tarballs are read."""
        self._artifacts = artifacts
        self._workspace_root = workspace_root
        self._local_roots = tuple(root.resolve() for root in local_roots)

    def snapshot(self, repository: str) -> SourceSnapshot:
        self.check_allowed(repository)
        if repository.startswith("s3://"):
            return self._snapshot_tarball(repository)
        root = Path(repository).resolve()
        if not root.is_dir():
            raise RepositoryUnavailableError(f"repository path {repository} is not a directory on this machine")
        return snapshot_directory(root)

    def check_allowed(self, repository: str) -> None:
        if repository.startswith("s3://"):
            bucket, _, key = repository.removeprefix("s3://").partition("/")
            if bucket != self._artifacts.bucket or not UPLOAD_KEY.match(key):
                raise RepositoryNotAllowedError(
                    f"repositories are read from s3://{self._artifacts.bucket}/{UPLOAD_PREFIX}<sha256>.tar.gz only, "
                    "as uploaded through POST /uploads (`agentledger run PATH` does it)")
            return
        if not self._local_roots:
            raise RepositoryNotAllowedError(
                "this deployment does not read local paths; upload the repository (`agentledger run PATH` does it) "
                f"and pass s3://{self._artifacts.bucket}/{UPLOAD_PREFIX}<sha256>.tar.gz")
        if not Path(repository).is_absolute():
            raise RepositoryNotAllowedError(f"local repository {repository!r} must be an absolute path")
        resolved = Path(repository).resolve()  # symlinks followed: a link cannot lead outside
        if not any(resolved.is_relative_to(root) for root in self._local_roots):
            allowed = ", ".join(str(root) for root in self._local_roots)
            raise RepositoryNotAllowedError(
                f"local repository {repository} is outside the roots this server allows ({allowed}); "
                "start `agentledger serve --allow-root DIR` to allow another")

    def _snapshot_tarball(self, url: str) -> SourceSnapshot:
        data, version = self._artifacts.fetch_repository(url)
        named = url.rsplit("/", 1)[1].removesuffix(".tar.gz")
        if sha256_bytes(data) != named:
            raise RepositoryNotAllowedError(f"the tarball at {url} does not have the sha256 its key names")
        target = self._workspace_root / "sources" / sha256_bytes(data)[:24]
        root = extract_tarball(data, target) if not target.exists() else _single_root(target)
        snapshot = snapshot_directory(root)
        return snapshot.model_copy(update={"revision": version})


def _single_root(directory: Path) -> Path:
    entries = list(directory.iterdir())
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else directory
