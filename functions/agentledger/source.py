"""What was looked at: a content-hashed snapshot of every file of a repository (the test build
gets exactly these files, so the snapshot covers the toolchain's files as well as the code).

In a git work tree the files are the ones git would commit: tracked, or untracked and not
ignored. Ignored files are local output or secrets (`.env`), which a test build must not get,
and leaving them out makes a cheap freshness signal sound: a clean work tree at a commit already
hashed has exactly the files of that snapshot, so it is not hashed again."""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import subprocess
import tarfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict

from agentledger.caches import ContentCache
from agentledger.fingerprints import digest, sha256_file

# Directories that hold tooling, dependencies or build output rather than the project's own code.
SKIPPED_DIR_NAMES = frozenset(
    {"__pycache__", ".venv", "venv", "node_modules", "build", "dist", "site-packages", "cdk.out"}
)
GIT_TIMEOUT_S = 30
# Snapshots of clean commits kept for the cheap freshness check: a few repositories' worth, as a
# warm function or `serve` sees the same few again and again.
CLEAN_SNAPSHOTS_KEPT = 8
# Uploaded repositories: s3://<artifact bucket>/repositories/<sha256>.tar.gz, named by their digest.
UPLOAD_PREFIX = "repositories/"
# repositories/<owner>/<sha256>.tar.gz: each principal uploads under a prefix of its own, so no
# one else can be granted its keys. Runs recorded before owners existed name repositories/<sha256>.tar.gz.
UPLOAD_KEY = re.compile(r"^repositories/(?:(?P<owner>[0-9a-f]{24})/)?[0-9a-f]{64}\.tar\.gz$")


def upload_owner(principal: str) -> str:
    """The upload prefix of a principal (as separation of duties names it: a role, not a session)."""
    return hashlib.sha256(principal.encode()).hexdigest()[:24]


def upload_key(sha256: str, owner: str) -> str:
    return f"{UPLOAD_PREFIX}{owner}/{sha256}.tar.gz"


def uploaded_by(key: str) -> str | None:
    """The owner prefix of an upload key; None for another key, or one from before owners."""
    matched = UPLOAD_KEY.match(key)
    return matched["owner"] if matched else None



class ArchiveError(ValueError):
    """A repository archive that cannot be read, or that would write outside its destination."""


@dataclass(frozen=True)
class ArchiveLimits:
    """What one repository tarball may expand to, checked from its headers before anything is
    written: the upload cap bounds the compressed bytes, not what they hold."""

    max_members: int = 20_000
    max_bytes: int = 1 << 30  # of file contents, in total
    max_ratio: int = 100  # contents per compressed byte; a source tree compresses about 5 to 20 times

    def check(self, archive: tarfile.TarFile, compressed: int) -> list[tarfile.TarInfo]:
        """The archive's members, read header by header (the contents are decompressed to be
        skipped, never written); an ArchiveError naming the bound as soon as one is passed."""
        members: list[tarfile.TarInfo] = []
        total = 0
        for member in archive:
            members.append(member)
            total += member.size
            if len(members) > self.max_members:
                raise ArchiveError(f"the archive holds more than {self.max_members} members (archiveMaxMembers)")
            if total > self.max_bytes:
                raise ArchiveError(f"the archive expands past {self.max_bytes} bytes (archiveMaxBytes)")
            if total > self.max_ratio * max(compressed, 1):
                raise ArchiveError(f"the archive expands more than {self.max_ratio} times its {compressed} bytes "
                                   "(archiveMaxRatio)")
        return members


DEFAULT_ARCHIVE_LIMITS = ArchiveLimits()


class SourceSnapshot(BaseModel):
    model_config = ConfigDict(frozen=True)

    root: Path
    revision: str
    files: dict[str, str]

    @cached_property
    def tree_digest(self) -> str:
        """One fingerprint of every file and its content: equal trees, equal digests."""
        return digest(self.files)


CLEAN_COMMITS: ContentCache[tuple[str, ...], SourceSnapshot] = ContentCache(CLEAN_SNAPSHOTS_KEPT)


def is_skipped_dir(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_DIR_NAMES or name.endswith(".egg-info")


def is_safe_relative_path(path: str) -> bool:
    """True for a relative path that stays inside the directory it is joined to."""
    pure = PurePosixPath(path)
    return bool(path) and not pure.is_absolute() and ".." not in pure.parts and "\\" not in path


def snapshot_directory(root: str | os.PathLike[str]) -> SourceSnapshot:
    """Every file hashed, unless `root` is a clean git work tree at a commit hashed before."""
    root = Path(root).resolve()
    work_tree = _git_work_tree(root)
    if work_tree is None:
        files = _hash_files(root, _walked_files(root))
        return SourceSnapshot(root=root, revision="tree:" + digest(files), files=files)
    commit, tracked_changes, untracked = work_tree
    clean_key = (str(root), commit)
    if not tracked_changes and not untracked:
        cached = CLEAN_COMMITS.get(clean_key)
        if cached is not None:
            return cached
    listed = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    paths = _walked_files(root) if listed is None else _kept_files(root, listed.split("\0"))
    snapshot = SourceSnapshot(root=root, revision=commit + "+dirty" if tracked_changes else commit,
                              files=_hash_files(root, paths))
    if not tracked_changes and not untracked:
        CLEAN_COMMITS.put(clean_key, snapshot)
    return snapshot


def directory_revision(root: str | os.PathLike[str]) -> str:
    """The revision `snapshot_directory` would pin, without hashing a git work tree."""
    work_tree = _git_work_tree(Path(root).resolve())
    if work_tree is None:
        return snapshot_directory(root).revision
    commit, tracked_changes, _ = work_tree
    return commit + "+dirty" if tracked_changes else commit


def _hash_files(root: Path, paths: list[str]) -> dict[str, str]:
    base = str(root)
    return {relative: sha256_file(os.path.join(base, relative)) for relative in paths}  # noqa: PTH118 — a plain string per file, as in _walked_files


def changed_files(old: dict[str, str], new: dict[str, str]) -> dict[str, list[str]]:
    return {
        "modified": sorted(path for path in old.keys() & new.keys() if old[path] != new[path]),
        "added": sorted(new.keys() - old.keys()),
        "removed": sorted(old.keys() - new.keys()),
    }


def named_changes(changes: dict[str, list[str]], limit: int = 10) -> str:
    """`modified: a.py, b.py; added: c.py and 41 more`: a bounded description however many
    files changed."""
    described = []
    for kind, paths in changes.items():
        more = f" and {len(paths) - limit:,} more" if len(paths) > limit else ""
        described.append(f"{kind}: {', '.join(paths[:limit])}{more}")
    return "; ".join(described)


def extract_tarball(data: bytes, into: str | os.PathLike[str], limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS) -> Path:
    """Extract a .tar.gz repository archive and return the repository root inside `into`."""
    into = Path(into)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            members = limits.check(archive, len(data))
            # The "data" filter would quietly strip a leading "/"; an archive that asks for one is refused.
            unsafe = [member.name for member in members if not is_safe_relative_path(member.name)]
            if unsafe:
                raise ArchiveError(f"archive members escape the destination: {unsafe}")
            archive.extractall(into, members=members, filter="data")
    except tarfile.FilterError as error:
        raise ArchiveError(f"unsafe archive member: {error}") from error
    except (tarfile.ReadError, EOFError) as error:
        raise ArchiveError(f"not a .tar.gz archive: {error}") from error
    member_parts = (PurePosixPath(member.name).parts for member in members)
    top_levels = {parts[0] for parts in member_parts if parts}
    if len(top_levels) == 1 and (into / next(iter(top_levels))).is_dir():
        return into / top_levels.pop()
    return into


# Regular files only: a symlink could point the build (or a reader) outside the repository.
# (os.scandir and plain strings: pathlib's per-path overhead was most of a 20,000-file walk.)
def _walked_files(root: Path) -> list[str]:
    sources = []
    pending = [("", str(root))]
    while pending:
        prefix, directory = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if not is_skipped_dir(entry.name):
                        pending.append((f"{prefix}{entry.name}/", entry.path))
                elif entry.is_file(follow_symlinks=False) and not entry.name.endswith(".pyc"):
                    sources.append(prefix + entry.name)
    return sorted(sources)


def _kept_files(root: Path, listed: list[str]) -> list[str]:
    """Of the files git lists, those a walk would keep too (the same skipped directories)."""
    kept = []
    base = str(root)
    for relative in listed:
        directories = relative.split("/")[:-1]
        if not relative or relative.endswith(".pyc") or any(is_skipped_dir(name) for name in directories):
            continue
        try:
            mode = os.lstat(os.path.join(base, relative)).st_mode  # noqa: PTH118 — a plain string per file, as in _walked_files
        except OSError:  # listed by git, deleted from the work tree
            continue
        if stat.S_ISREG(mode):
            kept.append(relative)
    return sorted(kept)


def _git(root: Path, *args: str) -> str | None:
    try:
        result = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, errors="surrogateescape",
            timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def _git_work_tree(root: Path) -> tuple[str, bool, bool] | None:
    """(HEAD commit, tracked files changed, untracked files present) of a work tree rooted
    exactly at `root`: a directory nested in some other work tree (say, a scratch dir inside a
    checkout) would otherwise borrow that tree's commit and its ignore rules."""
    top_level = _git(root, "rev-parse", "--show-toplevel")
    if top_level is None or Path(top_level).resolve() != root:
        return None
    commit = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=all")
    if commit is None or status is None:
        return None
    lines = status.splitlines()
    return commit, any(not line.startswith("??") for line in lines), any(line.startswith("??") for line in lines)
