"""`agentledger run PATH` against a deployed API: the repository's working tree as a tarball.

In a git checkout the files are those git would commit from the working tree: tracked files as
they are now, plus untracked files `.gitignore` does not exclude (`git ls-files --cached
--others --exclude-standard`); deleted files are left out. Elsewhere every regular file is taken
except `.git/`. Symbolic links are never followed or packed. The archive is deterministic
(sorted, no timestamps or owners), so the same tree has the same sha256 and the same upload key.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import subprocess
import tarfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

MAX_FILES = 200_000


class PackagingError(Exception):
    """The tree cannot be packaged; the message says why."""


@dataclass(frozen=True)
class Package:
    data: bytes
    sha256: str
    files: int


def tracked_files(root: Path) -> list[str]:
    listing = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=False)
    if listing.returncode != 0:
        return [path.relative_to(root).as_posix() for path in sorted(root.rglob("*"))
                if ".git" not in path.relative_to(root).parts and path.is_file() and not path.is_symlink()]
    names = sorted({name for name in listing.stdout.decode("utf-8", "surrogateescape").split("\0") if name})
    return [name for name in names if (root / name).is_file() and not (root / name).is_symlink()]


def git_source_of(root: Path) -> str | None:
    """`git+<origin>@<branch>` for a checkout whose origin is reached over https or on this disk:
    the Git source that follows the branch the tree was taken from. None for any other tree."""
    def git(*args: str) -> str | None:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None

    origin, branch = git("remote", "get-url", "origin"), git("symbolic-ref", "--quiet", "--short", "HEAD")
    if origin is None or branch is None:
        return None
    if origin.startswith("/"):
        origin = f"file://{origin}"
    return f"git+{origin}@{branch}" if origin.startswith(("https://", "file://")) else None


def package_repository(root: Path, max_bytes: int) -> Package:
    files = tracked_files(root)
    if not files:
        raise PackagingError(f"{root} has no files to send")
    if len(files) > MAX_FILES:
        raise PackagingError(f"{root} has {len(files)} files; at most {MAX_FILES} are sent")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name in files:
            data = (root / name).read_bytes()
            info = tarfile.TarInfo(f"{root.name}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            archive.addfile(info, io.BytesIO(data))
    data = gzip.compress(raw.getvalue(), mtime=0)
    if len(data) > max_bytes:
        raise PackagingError(f"{root} packs to {len(data)} bytes; the API takes at most {max_bytes}")
    return Package(data, hashlib.sha256(data).hexdigest(), len(files))
