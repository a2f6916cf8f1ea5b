"""Where a run's repository comes from: a tarball uploaded through the API's upload grant
(s3://<artifact bucket>/repositories/<sha256>.tar.gz), or, for the local runtime only, a
directory under a root that `serve` allows. Nothing else is read, so the API cannot be asked
about other buckets' objects or this machine's files."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from ..caches import ContentCache
from ..errors import RepositoryNotAllowedError, RepositoryUnavailableError
from ..fingerprints import sha256_bytes
from ..git_source import GitSource, archive_of, head_of, is_git_source
from ..limits import OUTSIDE_ROOTS
from ..source import (
    CLEAN_SNAPSHOTS_KEPT,
    DEFAULT_ARCHIVE_LIMITS,
    UPLOAD_KEY,
    UPLOAD_PREFIX,
    ArchiveError,
    ArchiveLimits,
    SourceSnapshot,
    directory_revision,
    extract_tarball,
    snapshot_directory,
)
from ..workspaces import extracted_source, mark_used

if TYPE_CHECKING:
    from collections.abc import Callable

    from .s3_artifacts import ArtifactStore


class SourceResolver:
    def __init__(self, artifacts: ArtifactStore, workspace_root: Path, local_roots: tuple[Path, ...] = (),
                 archive_limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS) -> None:
        """`local_roots`: the directories under which local repositories may lie; empty on AWS,
        where only uploaded tarballs are read."""
        self._artifacts = artifacts
        self._archive_limits = archive_limits
        self._workspace_root = workspace_root
        self._local_roots = tuple(root.resolve() for root in local_roots)

    def snapshot(self, repository: str) -> SourceSnapshot:
        self.check_allowed(repository)
        if repository.startswith("s3://"):
            return self._snapshot_tarball(repository)
        if is_git_source(repository):
            return self._snapshot_commit(GitSource.parse(repository))
        root = Path(repository).resolve()
        if not root.is_dir():
            raise RepositoryUnavailableError(f"repository path {repository} is not a directory on this machine")
        return snapshot_directory(root)

    def revision(self, repository: str) -> str:
        """The revision a snapshot would pin, as cheaply as it can be known: a tarball's is the
        sha256 its key names (the object need only exist), a git work tree's its commit. What a
        request waits for stays small however large the repository."""
        self.check_allowed(repository)
        if repository.startswith("s3://"):
            if not self._artifacts.has_repository(repository):
                raise RepositoryUnavailableError(f"no tarball at {repository}; upload it first (POST /uploads)")
            return "sha256:" + repository.rsplit("/", 1)[1].removesuffix(".tar.gz")
        if is_git_source(repository):
            return GIT_REVISION_PREFIX + head_of(GitSource.parse(repository))
        root = Path(repository).resolve()
        if not root.is_dir():
            raise RepositoryUnavailableError(f"repository path {repository} is not a directory on this machine")
        return directory_revision(root)

    def check_allowed(self, repository: str) -> None:
        if repository.startswith("s3://"):
            bucket, _, key = repository.removeprefix("s3://").partition("/")
            if bucket != self._artifacts.bucket or not UPLOAD_KEY.match(key):
                raise RepositoryNotAllowedError(
                    f"repositories are read from s3://{self._artifacts.bucket}/{UPLOAD_PREFIX}<owner>/<sha256>.tar.gz "
                    "only, "
                    "as uploaded through POST /uploads (`agentledger run PATH` does it)")
            return
        if is_git_source(repository):
            self._check_git_allowed(GitSource.parse(repository))
            return
        if not self._local_roots:
            raise RepositoryNotAllowedError(
                "this deployment does not read local paths; upload the repository (`agentledger run PATH` does it) "
                f"and pass s3://{self._artifacts.bucket}/{UPLOAD_PREFIX}<owner>/<sha256>.tar.gz")
        if not Path(repository).is_absolute():
            raise RepositoryNotAllowedError(f"local repository {repository!r} must be an absolute path")
        resolved = Path(repository).resolve()  # symlinks followed: a link cannot lead outside
        if not any(resolved.is_relative_to(root) for root in self._local_roots):
            # Which directories those are is not the caller's to learn: they are this machine's.
            raise RepositoryNotAllowedError(
                f"local repository {repository} {OUTSIDE_ROOTS}; `agentledger run` uploads it "
                "instead, or start `agentledger serve --allow-root DIR` to read it in place")

    def _check_git_allowed(self, source: GitSource) -> None:
        """A file:// remote under a root `serve` allows, as a local directory would be; no remote
        over https yet."""
        path = source.local_path
        if path is None:
            raise RepositoryNotAllowedError(
                f"Git sources over https ({source.host}) are not read by this release; "
                "use a file:// remote under a root `serve` allows, or upload the tree (`agentledger run PATH`)")
        if not self._local_roots or not path.is_absolute() or not any(
                path.resolve().is_relative_to(root) for root in self._local_roots):
            raise RepositoryNotAllowedError(f"Git remote {source.url} {OUTSIDE_ROOTS}; start `agentledger serve "
                                            "--allow-root DIR` with a root that holds it")

    def _snapshot_commit(self, source: GitSource) -> SourceSnapshot:
        """The files of the commit the ref names now, extracted once per commit: its id is the
        cheap freshness signal, as a tarball's digest is."""
        commit = head_of(source)
        return self._extracted_snapshot(
            f"git-{commit}", GIT_REVISION_PREFIX + commit, f"commit {commit} of {source.url}",
            lambda: archive_of(source, commit, self._workspace_root / GIT_MIRRORS_DIR))

    def _snapshot_tarball(self, url: str) -> SourceSnapshot:
        """The key names the tarball's sha256, so a tarball snapshotted before (and still
        extracted) is not fetched or hashed again: its digest is the cheap freshness signal."""
        named = url.rsplit("/", 1)[1].removesuffix(".tar.gz")

        def fetched() -> bytes:
            data = self._artifacts.fetch_repository(url)
            if sha256_bytes(data) != named:
                raise RepositoryNotAllowedError(f"the tarball at {url} does not have the sha256 its key names")
            return data

        return self._extracted_snapshot(named, f"sha256:{named}", f"the tarball at {url}", fetched)

    def _extracted_snapshot(self, named: str, revision: str, label: str, fetch: Callable[[], bytes]) -> SourceSnapshot:
        """An immutable tree named `named`, fetched and extracted once and kept while it is used."""
        cached = TARBALLS.get((str(self._workspace_root), named))
        if cached is not None and cached.root.is_dir():
            mark_used(extracted_source(self._workspace_root, named))
            return cached
        data = fetch()
        try:
            root = _extracted(data, extracted_source(self._workspace_root, named), self._archive_limits)
        except ArchiveError as refused:
            raise RepositoryNotAllowedError(f"{label} is refused: {refused}") from None
        snapshot = snapshot_directory(root).model_copy(update={"revision": revision})
        TARBALLS.put((str(self._workspace_root), named), snapshot)
        return snapshot

GIT_REVISION_PREFIX = "git:"
GIT_MIRRORS_DIR = "git-mirrors"  # under the workspace root: a bare mirror per remote
TARBALLS: ContentCache[tuple[str, str], SourceSnapshot] = ContentCache(CLEAN_SNAPSHOTS_KEPT)


def _extracted(data: bytes, target: Path, limits: ArchiveLimits) -> Path:
    """Extracted beside `target` and renamed into place, so a crash mid-extraction never leaves a
    partial tree that a later attempt would take for the repository."""
    mark_used(target)
    if not target.exists():
        partial = target.with_name(f"{target.name}.partial-{uuid.uuid4().hex[:8]}")
        try:
            extract_tarball(data, partial, limits)
            partial.rename(target)
        except OSError:
            if not target.exists():  # not merely another worker that extracted it first
                raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    entries = list(target.iterdir())
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else target
