"""A run's source as a Git ref, in pip's VCS form: `git+<url>@<ref>`. The ref's head is looked up
on every freshness check (one `git ls-remote`), and the files of a commit come from a shallow fetch
into a bare mirror of the remote, archived with `git archive`: never a work tree of the remote's
making, and never a hook, a filter or a transport other than the URL's own (file or https).

A remote that does not answer is a transient failure (RepositoryUnavailableError), never a pass."""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .errors import RepositoryNotAllowedError, RepositoryUnavailableError

GIT_PREFIX = "git+"
GIT_SOURCE = re.compile(r"^git\+(?P<url>(?:file|https)://[^@\s]{1,900})@(?P<ref>[A-Za-z0-9][A-Za-z0-9._/-]{0,199})$")
COMMIT = re.compile(r"^[0-9a-f]{40}$")
GIT_TIMEOUT_S = 120
GIT_ARCHIVE_MAX_BYTES = 512 << 20  # the compressed archive of one commit; ArchiveLimits bounds what it holds
# Every transport but the two a source may name is refused, whatever the remote's configuration asks
# (`ext::` would run a command); no hook, no credential prompt, no system configuration.
GIT_OPTIONS = ("-c", "protocol.allow=never", "-c", "protocol.file.allow=always", "-c", "protocol.https.allow=always",
               "-c", "core.hooksPath=/dev/null", "-c", "credential.helper=", "-c", "core.fsmonitor=false")
# git gets an environment of its own, never the process's: a function's credentials stay out of
# what a remote's answers could reach.
GIT_ENVIRONMENT = {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                   "GIT_ASKPASS": "/bin/false", "LC_ALL": "C", "HOME": tempfile.gettempdir()}


@dataclass(frozen=True)
class GitSource:
    url: str
    ref: str

    @classmethod
    def parse(cls, repository: str) -> GitSource:
        matched = GIT_SOURCE.match(repository)
        if matched is None or ".." in matched["ref"].split("/") or matched["ref"].endswith((".lock", "/", ".")):
            raise RepositoryNotAllowedError(
                f"{repository!r} is not a Git source: write git+<url>@<ref>, with a file:// or https:// URL and a "
                "branch, tag or commit (git+https://github.com/OWNER/REPO@main)")
        return cls(matched["url"], matched["ref"])

    @property
    def local_path(self) -> Path | None:
        """The repository's directory, for a file:// URL."""
        parts = urlsplit(self.url)
        return Path(unquote(parts.path)) if parts.scheme == "file" else None

    @property
    def host(self) -> str:
        return (urlsplit(self.url).hostname or "").lower()


def is_git_source(repository: str) -> bool:
    return repository.startswith(GIT_PREFIX)


def head_of(source: GitSource) -> str:
    """The commit the ref names now: a branch's head, a tag's commit, or the commit itself."""
    if COMMIT.match(source.ref):
        return source.ref
    listed = _git(None, "ls-remote", "--", source.url, f"refs/heads/{source.ref}", f"refs/tags/{source.ref}",
                  f"refs/tags/{source.ref}^{{}}").decode()
    refs: dict[str, str] = {}
    for line in listed.splitlines():
        commit, _, name = line.partition("\t")
        refs[name] = commit
    for name in (f"refs/heads/{source.ref}", f"refs/tags/{source.ref}^{{}}", f"refs/tags/{source.ref}"):
        if COMMIT.match(refs.get(name, "")):
            return refs[name]
    raise RepositoryUnavailableError(f"{source.url} has no branch or tag {source.ref!r}")


def archive_of(source: GitSource, commit: str, mirrors: Path) -> bytes:
    """The .tar.gz of `commit`'s files, fetched (shallow) into this remote's bare mirror."""
    mirror = mirrors / f"{hashlib.sha256(source.url.encode()).hexdigest()[:24]}.git"
    mirrors.mkdir(parents=True, exist_ok=True)
    with (mirrors / f"{mirror.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one fetch into a mirror at a time
        if not (mirror / "HEAD").is_file():
            _git(None, "init", "--bare", "--quiet", str(mirror))
        if not _has_commit(mirror, commit):
            _git(mirror, "fetch", "--quiet", "--depth", "1", "--no-tags", "--", source.url, commit)
    if not _has_commit(mirror, commit):
        raise RepositoryUnavailableError(f"{source.url} did not send commit {commit}")
    data = _git(mirror, "archive", "--format=tar.gz", commit)
    if len(data) > GIT_ARCHIVE_MAX_BYTES:
        raise RepositoryNotAllowedError(f"commit {commit} of {source.url} archives to more than "
                                        f"{GIT_ARCHIVE_MAX_BYTES} bytes")
    return data


def _has_commit(mirror: Path, commit: str) -> bool:
    try:
        return _git(mirror, "cat-file", "-t", commit).strip() == b"commit"
    except RepositoryUnavailableError:
        return False


def _git(repository: Path | None, *args: str) -> bytes:
    where = ("--git-dir", str(repository)) if repository is not None else ()
    try:
        done = subprocess.run(["git", *GIT_OPTIONS, *where, *args], capture_output=True, timeout=GIT_TIMEOUT_S,
                              check=False, env={"PATH": os.environ.get("PATH", os.defpath), **GIT_ENVIRONMENT},
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RepositoryUnavailableError(f"git {args[0]} did not answer within {GIT_TIMEOUT_S} s") from None
    except OSError as error:
        raise RepositoryUnavailableError(f"git could not run: {error}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RepositoryUnavailableError(f"git {args[0]} failed: {said[-1] if said else f'exit {done.returncode}'}")
    return done.stdout
