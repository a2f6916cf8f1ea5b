"""A Git source, `git+<url>@<ref>`, on a repository on this disk: what is accepted, the commit a
branch, a tag or a commit names, the files of a commit, and the forms a caller could abuse."""
from __future__ import annotations

import io
import subprocess
import tarfile
from typing import TYPE_CHECKING, Any

import pytest

from agentledger import git_source
from agentledger.adapters.repositories import SourceResolver
from agentledger.errors import RepositoryNotAllowedError, RepositoryUnavailableError
from agentledger.git_source import GitSource, archive_of, head_of

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.unit
IDENTITY = ("-c", "user.name=A", "-c", "user.email=a@example.com")


def _git(where: Path, *args: str) -> str:
    return subprocess.run(["git", *IDENTITY, *args], cwd=where, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def remote(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A bare repository with two commits on main, a tag on the first and a branch at the second."""
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "--quiet", "--initial-branch", "main")
    (work / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    _git(work, "add", "--all")
    _git(work, "commit", "--quiet", "--message", "one")
    _git(work, "tag", "--annotate", "v1", "--message", "v1")
    first = _git(work, "rev-parse", "HEAD").strip()
    (work / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    _git(work, "commit", "--quiet", "--all", "--message", "two")
    second = _git(work, "rev-parse", "HEAD").strip()
    bare = tmp_path / "remote.git"
    _git(tmp_path, "clone", "--quiet", "--bare", str(work), str(bare))
    return bare, {"first": first, "second": second}


def test_a_branch_a_tag_and_a_commit_each_name_their_commit_and_its_files_come_whole(
        tmp_path: Path, remote: tuple[Path, dict[str, str]]) -> None:
    bare, commits = remote
    assert head_of(GitSource.parse(f"git+file://{bare}@main")) == commits["second"]
    assert head_of(GitSource.parse(f"git+file://{bare}@v1")) == commits["first"]  # the tag's commit, not the tag
    assert head_of(GitSource.parse(f"git+file://{bare}@{commits['first']}")) == commits["first"]
    data = archive_of(GitSource.parse(f"git+file://{bare}@v1"), commits["first"], tmp_path / "mirrors")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        assert archive.extractfile("calc.py").read() == b"def add(a, b):\n    return a + b\n"  # type: ignore[union-attr]
    with pytest.raises(RepositoryUnavailableError, match="no branch or tag 'gone'"):
        head_of(GitSource.parse(f"git+file://{bare}@gone"))
    with pytest.raises(RepositoryUnavailableError, match="ls-remote failed"):
        head_of(GitSource.parse(f"git+file://{tmp_path}/missing.git@main"))


def test_the_resolver_snapshots_the_head_reads_only_under_its_roots_and_refuses_other_transports(
        tmp_path: Path, remote: tuple[Path, dict[str, str]]) -> None:
    bare, commits = remote
    resolver = SourceResolver(artifacts=None, workspace_root=tmp_path / "workspaces",  # type: ignore[arg-type]
                              local_roots=(tmp_path,))
    source = f"git+file://{bare}@main"
    snapshot = resolver.snapshot(source)
    assert snapshot.revision == resolver.revision(source) == f"git:{commits['second']}"
    assert (snapshot.root / "calc.py").read_text() == "def add(a, b):\n    return b + a\n"
    elsewhere = SourceResolver(artifacts=None, workspace_root=tmp_path / "w2",  # type: ignore[arg-type]
                               local_roots=(tmp_path / "work",))
    for refused, says in ((elsewhere, source), (resolver, "git+https://github.com/OWNER/REPO@main")):
        with pytest.raises(RepositoryNotAllowedError):
            refused.snapshot(says)


@pytest.mark.parametrize("repository", [
    "git+ssh://host/repo.git@main",  # a transport a source may not name
    "git+ext::sh -c touch${IFS}/tmp/owned@main",  # git's command transport
    "git+file:///srv/repo.git@--upload-pack=touch",  # an option where a ref goes
    "git+file:///srv/repo.git@main/../other", "git+file:///srv/repo.git@main.lock", "git+file:///srv/repo.git",
    "git+https://host/repo@" + "a" * 300,
])
def test_a_source_that_is_not_a_url_and_a_ref_is_refused_before_git_runs(repository: str) -> None:
    with pytest.raises(RepositoryNotAllowedError, match="is not a Git source"):
        GitSource.parse(repository)


def test_git_never_gets_the_processs_credentials(monkeypatch: pytest.MonkeyPatch,
                                                 remote: tuple[Path, dict[str, str]]) -> None:
    bare, commits = remote
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "a-functions-secret")
    seen: list[dict[str, str]] = []
    real_run = subprocess.run

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["env"])
        return real_run(*args, **kwargs)

    monkeypatch.setattr(git_source.subprocess, "run", watched)
    assert head_of(GitSource.parse(f"git+file://{bare}@main")) == commits["second"]
    assert seen and all("AWS_SECRET_ACCESS_KEY" not in env and "a-functions-secret" not in env.values()
                        for env in seen)
