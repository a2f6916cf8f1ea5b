"""What was looked at: a content-hashed snapshot of every file of a repository (the test build
gets exactly these files, so the snapshot covers the toolchain's files as well as the code)."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict

from agentledger.fingerprints import digest, sha256_file

# Directories that hold tooling, dependencies or build output rather than the project's own code.
SKIPPED_DIR_NAMES = frozenset(
    {"__pycache__", ".venv", "venv", "node_modules", "build", "dist", "site-packages", "cdk.out"}
)
GIT_TIMEOUT_S = 30


class ArchiveError(ValueError):
    """A repository archive that cannot be read, or that would write outside its destination."""


class SourceSnapshot(BaseModel):
    model_config = ConfigDict(frozen=True)

    root: Path
    revision: str
    files: dict[str, str]


def is_skipped_dir(name: str) -> bool:
    return name.startswith(".") or name in SKIPPED_DIR_NAMES or name.endswith(".egg-info")


def is_safe_relative_path(path: str) -> bool:
    """True for a relative path that stays inside the directory it is joined to."""
    pure = PurePosixPath(path)
    return bool(path) and not pure.is_absolute() and ".." not in pure.parts and "\\" not in path


def snapshot_directory(root: str | os.PathLike[str]) -> SourceSnapshot:
    root = Path(root).resolve()
    files = {relative: sha256_file(root / relative) for relative in _source_files(root)}
    revision = _git_revision(root) or "tree:" + digest(files)
    return SourceSnapshot(root=root, revision=revision, files=files)


def changed_files(old: dict[str, str], new: dict[str, str]) -> dict[str, list[str]]:
    return {
        "modified": sorted(path for path in old.keys() & new.keys() if old[path] != new[path]),
        "added": sorted(new.keys() - old.keys()),
        "removed": sorted(old.keys() - new.keys()),
    }


def extract_tarball(data: bytes, into: str | os.PathLike[str]) -> Path:
    """Extract a .tar.gz repository archive and return the repository root inside `into`."""
    into = Path(into)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            members = archive.getmembers()
            # The "data" filter would quietly strip a leading "/"; an archive that asks for one is refused.
            unsafe = [member.name for member in members if not is_safe_relative_path(member.name)]
            if unsafe:
                raise ArchiveError(f"archive members escape the destination: {unsafe}")
            archive.extractall(into, filter="data")
    except tarfile.FilterError as error:
        raise ArchiveError(f"unsafe archive member: {error}") from error
    except (tarfile.ReadError, EOFError) as error:
        raise ArchiveError(f"not a .tar.gz archive: {error}") from error
    member_parts = (PurePosixPath(member.name).parts for member in members)
    top_levels = {parts[0] for parts in member_parts if parts}
    if len(top_levels) == 1 and (into / next(iter(top_levels))).is_dir():
        return into / top_levels.pop()
    return into


def _source_files(root: Path) -> list[str]:
    """Regular files only: a symlink could point the build (or a reader) outside the repository."""
    sources = []
    for directory, dir_names, file_names in os.walk(root):
        dir_names[:] = [name for name in dir_names if not is_skipped_dir(name)]
        base = Path(directory)
        sources.extend((base / name).relative_to(root).as_posix() for name in file_names
                       if (base / name).is_file() and not (base / name).is_symlink() and not name.endswith(".pyc"))
    return sorted(sources)


def _git(root: Path, *args: str) -> str | None:
    try:
        result = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=GIT_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def _git_revision(root: Path) -> str | None:
    # Only a repository rooted exactly here: a directory nested in some other work tree
    # (say, a scratch dir inside a checkout) would otherwise borrow that tree's commit.
    top_level = _git(root, "rev-parse", "--show-toplevel")
    if top_level is None or Path(top_level).resolve() != root:
        return None
    commit = _git(root, "rev-parse", "HEAD")
    if commit is None:
        return None
    changes = _git(root, "status", "--porcelain", "--untracked-files=no")
    if changes is None:
        return None
    return commit + "+dirty" if changes else commit
