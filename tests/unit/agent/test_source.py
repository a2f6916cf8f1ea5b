from __future__ import annotations

import hashlib
import io
import tarfile

import pytest

from agentledger.agent import ArchiveError, changed_files, extract_tarball, snapshot_directory
from agentledger.fingerprints import digest
from agentledger.source import directory_revision

from .samples import make_git_repo, make_sample_repo, write

pytestmark = pytest.mark.unit


def test_snapshot_hashes_every_python_source_by_its_bytes(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    snapshot = snapshot_directory(repo)
    assert snapshot.root == repo.resolve()
    assert sorted(snapshot.files) == [
        "README.md", "pkg/__init__.py", "pkg/broken.py", "pkg/calc.py", "tests/test_calc.py"]
    for path, sha in snapshot.files.items():
        assert sha == hashlib.sha256((repo / path).read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "ignored",
    [".venv/lib/site.py", "venv/x.py", ".git/hooks/h.py", "pkg/__pycache__/calc.py",
     "node_modules/a/b.py", "build/lib/pkg/calc.py", ".tox/t.py"],
)
def test_snapshot_skips_tooling_and_build_directories(tmp_path, ignored):
    repo = make_sample_repo(tmp_path / "repo")
    write(repo, ignored, "x = 1\n")
    assert ignored not in snapshot_directory(repo).files


def test_revision_outside_git_is_a_digest_of_the_file_hashes(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    before = snapshot_directory(repo)
    assert before.revision == "tree:" + digest(before.files)
    write(repo, "pkg/calc.py", "def add(a, b):\n    return a - b\n")
    assert snapshot_directory(repo).revision != before.revision


def test_revision_in_git_is_the_commit_and_marks_edits_to_tracked_files(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    commit = make_git_repo(repo)
    assert snapshot_directory(repo).revision == commit

    write(repo, "notes/new_module.py", "x = 1\n")  # untracked files do not dirty the commit
    assert snapshot_directory(repo).revision == commit

    write(repo, "pkg/calc.py", "def add(a, b):\n    return a - b\n")
    assert snapshot_directory(repo).revision == commit + "+dirty"


def test_a_clean_work_tree_at_a_commit_hashed_before_is_not_hashed_again(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    commit = make_git_repo(repo)
    first = snapshot_directory(repo)
    assert snapshot_directory(repo) is first  # the cheap signal: same commit, nothing changed

    write(repo, "pkg/calc.py", "def add(a, b):\n    return a - b\n")
    edited = snapshot_directory(repo)
    assert edited.revision == commit + "+dirty"
    assert edited.files["pkg/calc.py"] != first.files["pkg/calc.py"]


def test_an_untracked_file_is_part_of_the_tree_and_is_always_hashed(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    make_git_repo(repo)
    first = snapshot_directory(repo)
    write(repo, "notes/new_module.py", "x = 1\n")
    with_new = snapshot_directory(repo)
    assert "notes/new_module.py" in with_new.files
    write(repo, "notes/new_module.py", "x = 2\n")
    assert snapshot_directory(repo).files["notes/new_module.py"] != with_new.files["notes/new_module.py"]
    assert with_new.tree_digest != first.tree_digest


def test_files_git_ignores_are_not_part_of_a_work_tree(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    write(repo, ".gitignore", ".env\nlocal-data/\n")
    make_git_repo(repo)
    write(repo, ".env", "TOKEN=secret\n")
    write(repo, "local-data/big.csv", "1,2\n")
    files = snapshot_directory(repo).files
    assert ".env" not in files and "local-data/big.csv" not in files
    assert ".gitignore" in files and "pkg/calc.py" in files


def test_a_directory_nested_in_a_git_work_tree_does_not_borrow_its_commit(tmp_path):
    outer = make_sample_repo(tmp_path / "outer")
    make_git_repo(outer)
    inner = make_sample_repo(outer / "scratch" / "repo")
    assert snapshot_directory(inner).revision.startswith("tree:sha256:")


def test_changed_files_reports_what_made_a_plan_stale():
    old = {"a.py": "1", "b.py": "2", "gone.py": "3"}
    new = {"a.py": "1", "b.py": "changed", "c.py": "4", "new.py": "5"}
    assert changed_files(old, new) == {
        "modified": ["b.py"],
        "added": ["c.py", "new.py"],
        "removed": ["gone.py"],
    }
    assert changed_files(old, old) == {"modified": [], "added": [], "removed": []}


def _tarball(*members: tarfile.TarInfo | tuple[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                archive.addfile(member)
            else:
                name, content = member
                info = tarfile.TarInfo(name)
                info.size = len(content)
                archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _symlink(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info


def test_extract_returns_the_single_top_level_directory(tmp_path):
    data = _tarball(("repo/pkg/calc.py", b"x = 1\n"), ("repo/README.md", b"hi\n"))
    root = extract_tarball(data, tmp_path / "out")
    assert root == tmp_path / "out" / "repo"
    assert (root / "pkg" / "calc.py").read_bytes() == b"x = 1\n"


def test_extract_returns_the_destination_when_files_sit_at_the_top(tmp_path):
    data = _tarball(("calc.py", b"x = 1\n"), ("pkg/mod.py", b"y = 2\n"))
    root = extract_tarball(data, tmp_path / "out")
    assert root == tmp_path / "out"
    assert sorted(snapshot_directory(root).files) == ["calc.py", "pkg/mod.py"]


@pytest.mark.parametrize(
    "member",
    [
        ("/tmp/evil.py", b"x"),
        ("../evil.py", b"x"),
        ("repo/../../evil.py", b"x"),
        _symlink("repo/link", "/etc/passwd"),
        _symlink("repo/link", "../../evil.py"),
    ],
    ids=["absolute", "parent", "nested-parent", "absolute-link", "escaping-link"],
)
def test_extract_refuses_members_that_escape(tmp_path, member):
    destination = tmp_path / "a" / "b"
    with pytest.raises(ArchiveError):
        extract_tarball(_tarball(("repo/ok.py", b"x"), member), destination)
    assert not (tmp_path / "evil.py").exists()
    assert not (tmp_path / "a" / "evil.py").exists()


def test_extract_refuses_data_that_is_not_a_tarball(tmp_path):
    with pytest.raises(ArchiveError):
        extract_tarball(b"not a tarball", tmp_path)


def test_the_revision_of_a_work_tree_is_known_without_hashing_it(tmp_path):
    repo = make_sample_repo(tmp_path / "repo")
    assert directory_revision(repo) == snapshot_directory(repo).revision  # outside git: the tree's digest
    commit = make_git_repo(repo)
    assert directory_revision(repo) == commit
    write(repo, "pkg/calc.py", "changed = True\n")
    assert directory_revision(repo) == snapshot_directory(repo).revision == commit + "+dirty"
