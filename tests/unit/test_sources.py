"""Which repository locations the functions read: uploaded tarballs in the stack's bucket, and
local directories under the allowed roots (local runtime only). The rule is named on refusal."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from agentledger.errors import RepositoryNotAllowedError
from agentledger.sources import SourceResolver, upload_key

pytestmark = pytest.mark.unit
BUCKET = "stack-artifacts"
DIGEST = "ab" * 32


def resolver(tmp_path: Path, *roots: Path) -> SourceResolver:
    # check_allowed reads only the bucket's name; nothing here reaches S3.
    return SourceResolver(SimpleNamespace(bucket=BUCKET), tmp_path / "work", roots)  # type: ignore[arg-type]


def test_an_uploaded_tarball_in_the_stacks_bucket_is_allowed(tmp_path: Path) -> None:
    resolver(tmp_path).check_allowed(f"s3://{BUCKET}/{upload_key(DIGEST)}")


@pytest.mark.parametrize("url", [
    f"s3://other-bucket/{upload_key(DIGEST)}",
    f"s3://{BUCKET}/runs/run-1/plan/plan.json",
    f"s3://{BUCKET}/repositories/../runs/x.tar.gz",
    f"s3://{BUCKET}/repositories/not-a-digest.tar.gz",
])
def test_any_other_object_is_refused_before_it_is_looked_up(tmp_path: Path, url: str) -> None:
    with pytest.raises(RepositoryNotAllowedError, match=f"s3://{BUCKET}/repositories/<sha256>.tar.gz only"):
        resolver(tmp_path).check_allowed(url)


def test_without_local_roots_no_local_path_is_read(tmp_path: Path) -> None:
    with pytest.raises(RepositoryNotAllowedError, match="does not read local paths"):
        resolver(tmp_path).snapshot(str(tmp_path))


@pytest.mark.parametrize("path", ["/", "/etc", "/etc/../etc", "relative/dir"])
def test_paths_outside_the_allowed_roots_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(RepositoryNotAllowedError, match="outside the roots|absolute path"):
        resolver(tmp_path, tmp_path / "projects").check_allowed(path)


def test_a_link_inside_a_root_that_leads_outside_is_refused(tmp_path: Path) -> None:
    (tmp_path / "projects").mkdir()
    (tmp_path / "projects" / "sneaky").symlink_to("/etc")
    with pytest.raises(RepositoryNotAllowedError, match="outside the roots"):
        resolver(tmp_path, tmp_path / "projects").check_allowed(str(tmp_path / "projects" / "sneaky"))


def test_a_directory_under_a_root_is_read(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "calc"
    project.mkdir(parents=True)
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    snapshot = resolver(tmp_path, tmp_path / "projects").snapshot(str(project))
    assert list(snapshot.files) == ["calc.py"]
