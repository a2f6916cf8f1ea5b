"""Which repository locations the functions read: uploaded tarballs in the stack's bucket, and
local directories under the allowed roots (local runtime only). The rule is named on refusal."""
from __future__ import annotations

import hashlib
import io
import re
import shutil
import tarfile
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest

from agentledger.adapters.repositories import SourceResolver
from agentledger.errors import RepositoryNotAllowedError, RepositoryUnavailableError
from agentledger.source import ArchiveLimits, upload_key

if TYPE_CHECKING:
    from pathlib import Path

BUCKET = "stack-artifacts"
DIGEST = "ab" * 32
OWNER = "0123456789abcdef01234567"


def resolver(tmp_path: Path, *roots: Path) -> SourceResolver:
    # check_allowed reads only the bucket's name; nothing here reaches S3.
    return SourceResolver(SimpleNamespace(bucket=BUCKET), tmp_path / "work", roots)  # type: ignore[arg-type]


def test_an_uploaded_tarball_in_the_stacks_bucket_is_allowed(tmp_path: Path) -> None:
    resolver(tmp_path).check_allowed(f"s3://{BUCKET}/{upload_key(DIGEST, OWNER)}")


@pytest.mark.parametrize("url", [
    f"s3://other-bucket/{upload_key(DIGEST, OWNER)}",
    f"s3://{BUCKET}/runs/run-1/plan/plan.json",
    f"s3://{BUCKET}/repositories/../runs/x.tar.gz",
    f"s3://{BUCKET}/repositories/not-a-digest.tar.gz",
])
def test_any_other_object_is_refused_before_it_is_looked_up(tmp_path: Path, url: str) -> None:
    with pytest.raises(RepositoryNotAllowedError, match=f"s3://{BUCKET}/repositories/<owner>/<sha256>.tar.gz only"):
        resolver(tmp_path).check_allowed(url)


def test_without_local_roots_no_local_path_is_read(tmp_path: Path) -> None:
    with pytest.raises(RepositoryNotAllowedError, match="does not read local paths"):
        resolver(tmp_path).snapshot(str(tmp_path))


@pytest.mark.parametrize("path", ["/", "/etc", "/etc/../etc", "relative/dir"])
def test_paths_outside_the_allowed_roots_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(RepositoryNotAllowedError, match="outside the directories|absolute path"):
        resolver(tmp_path, tmp_path / "projects").check_allowed(path)


def test_a_link_inside_a_root_that_leads_outside_is_refused(tmp_path: Path) -> None:
    (tmp_path / "projects").mkdir()
    (tmp_path / "projects" / "sneaky").symlink_to("/etc")
    with pytest.raises(RepositoryNotAllowedError, match="outside the directories"):
        resolver(tmp_path, tmp_path / "projects").check_allowed(str(tmp_path / "projects" / "sneaky"))


def test_a_directory_under_a_root_is_read(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "calc"
    project.mkdir(parents=True)
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    snapshot = resolver(tmp_path, tmp_path / "projects").snapshot(str(project))
    assert list(snapshot.files) == ["calc.py"]


def _tarball_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(f"repo/{name}")
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


class CountingBucket:
    """The artifact store's tarball reads, counted: what the cheap freshness signal saves."""

    bucket = BUCKET

    def __init__(self, data: bytes) -> None:
        self.data, self.fetches = data, 0

    def fetch_repository(self, url: str) -> bytes:
        self.fetches += 1
        return self.data


def _uploaded(tmp_path: Path, files: dict[str, bytes]) -> tuple[SourceResolver, CountingBucket, str]:
    data = _tarball_of(files)
    bucket = CountingBucket(data)
    url = f"s3://{BUCKET}/{upload_key(hashlib.sha256(data).hexdigest(), OWNER)}"
    return SourceResolver(bucket, tmp_path / "work"), bucket, url  # type: ignore[arg-type]


def test_a_tarball_snapshotted_before_is_neither_fetched_nor_hashed_again(tmp_path: Path) -> None:
    sources, bucket, url = _uploaded(tmp_path, {"calc.py": b"def add(a, b):\n    return a + b\n"})
    first = sources.snapshot(url)
    again = sources.snapshot(url)
    assert bucket.fetches == 1
    assert again == first
    assert first.revision == f"sha256:{hashlib.sha256(bucket.data).hexdigest()}"
    assert list(first.files) == ["calc.py"]


def test_a_tarball_whose_extracted_tree_was_removed_is_fetched_again(tmp_path: Path) -> None:
    sources, bucket, url = _uploaded(tmp_path, {"calc.py": b"x = 1\n"})
    first = sources.snapshot(url)
    shutil.rmtree(tmp_path / "work" / "sources")
    again = sources.snapshot(url)
    assert bucket.fetches == 2
    assert again.files == first.files and (again.root / "calc.py").read_bytes() == b"x = 1\n"


def test_an_extraction_that_died_midway_is_not_taken_for_the_repository(tmp_path: Path) -> None:
    data = _tarball_of({"calc.py": b"x = 1\n", "util.py": b"y = 2\n"})
    digest = hashlib.sha256(data).hexdigest()
    # What a process killed while extracting leaves: a partial tree beside the target.
    partial = tmp_path / "work" / "sources" / f"{digest[:24]}.partial-0badf00d" / "repo"
    partial.mkdir(parents=True)
    (partial / "calc.py").write_bytes(b"x = 1\n")
    snapshot = SourceResolver(CountingBucket(data), tmp_path / "work").snapshot(  # type: ignore[arg-type]
        f"s3://{BUCKET}/{upload_key(digest, OWNER)}")
    assert sorted(snapshot.files) == ["calc.py", "util.py"]


class UploadedBucket(CountingBucket):
    def __init__(self, data: bytes, uploaded: set[str]) -> None:
        super().__init__(data)
        self.uploaded = uploaded

    def has_repository(self, url: str) -> bool:
        return url in self.uploaded


def test_a_tarballs_revision_is_the_digest_its_key_names_without_fetching_it(tmp_path: Path) -> None:
    data = _tarball_of({"calc.py": b"x = 1\n"})
    url = f"s3://{BUCKET}/{upload_key(hashlib.sha256(data).hexdigest(), OWNER)}"
    bucket = UploadedBucket(data, {url})
    sources = SourceResolver(bucket, tmp_path / "work")  # type: ignore[arg-type]
    assert sources.revision(url) == f"sha256:{hashlib.sha256(data).hexdigest()}" == sources.snapshot(url).revision
    assert bucket.fetches == 1  # by the snapshot; the revision only asked whether it exists


def test_the_revision_of_a_tarball_never_uploaded_names_the_upload(tmp_path: Path) -> None:
    sources = SourceResolver(UploadedBucket(b"", set()), tmp_path / "work")  # type: ignore[arg-type]
    with pytest.raises(RepositoryUnavailableError, match="upload it first"):
        sources.revision(f"s3://{BUCKET}/{upload_key(DIGEST, OWNER)}")


def _bomb(size: int) -> bytes:
    """One file of zeros: a few hundred bytes compressed for every megabyte it expands to."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("repo/zeros.bin")
        info.size = size
        archive.addfile(info, io.BytesIO(bytes(size)))
    return buffer.getvalue()


@pytest.mark.parametrize(("data", "limits", "refusal"), [
    (_bomb(64 << 20), ArchiveLimits(), "expands more than 100 times"),
    (_bomb(8 << 20), ArchiveLimits(max_bytes=4 << 20, max_ratio=1 << 20),
     "expands past 4194304 bytes (archiveMaxBytes)"),
    (_tarball_of({f"m{n}.py": b"" for n in range(30)}), ArchiveLimits(max_members=20),
     "more than 20 members (archiveMaxMembers)"),
])
def test_a_tarball_past_a_bound_is_refused_naming_it_and_nothing_is_written(
        tmp_path: Path, data: bytes, limits: ArchiveLimits, refusal: str) -> None:
    url = f"s3://{BUCKET}/{upload_key(hashlib.sha256(data).hexdigest(), OWNER)}"
    sources = SourceResolver(CountingBucket(data), tmp_path / "work", (), limits)  # type: ignore[arg-type]
    with pytest.raises(RepositoryNotAllowedError, match=re.escape(refusal)):
        sources.snapshot(url)
    written = [path for path in (tmp_path / "work").rglob("*") if path.is_file()]
    assert written == []


def test_a_source_tree_within_the_default_bounds_extracts(tmp_path: Path) -> None:
    sources, _, url = _uploaded(tmp_path, {f"pkg/m{n}.py": f"def f{n}(x):\n    return x + {n}\n".encode()
                                           for n in range(50)})
    assert len(sources.snapshot(url).files) == 50
