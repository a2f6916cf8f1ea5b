"""A build's input tarball, as the buildspec's `tar -xzf` unpacks it for the project's own tools."""
from __future__ import annotations

import io
import tarfile
import zipfile
from typing import TYPE_CHECKING

import pytest

from agentledger.workflow.builds import package

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.unit


def test_equal_inputs_give_equal_members_and_their_files_can_be_zipped(tmp_path: Path) -> None:
    members = {"repository/pkg/__init__.py": b"VALUE = 1\n", "repository/pyproject.toml": b"[project]\n"}
    first, second = package(members), package(dict(reversed(members.items())))
    with tarfile.open(fileobj=io.BytesIO(first)) as archive, tarfile.open(fileobj=io.BytesIO(second)) as again:
        assert [m.get_info() for m in archive.getmembers()] == [m.get_info() for m in again.getmembers()]
        archive.extractall(tmp_path, filter="data")
    # What a wheel backend does with each file (flit_core failed on the epoch: ZIP starts in 1980).
    info = zipfile.ZipInfo.from_file(tmp_path / "repository" / "pkg" / "__init__.py", "pkg/__init__.py")
    assert info.date_time[0] >= 1980
