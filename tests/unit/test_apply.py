"""`agentledger apply` writes an approved change into a working tree only if the tree is still the
one the plan read, never outside it and never over other content."""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import pytest

from agentledger.cli.apply import ApplyRefused, apply_change

if TYPE_CHECKING:
    from pathlib import Path

MODULE = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def _tree(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "calc.py").write_text(MODULE)
    return tree, {"calc.py": hashlib.sha256(MODULE.encode()).hexdigest()}


def test_the_change_is_written_and_applying_it_again_writes_nothing(tmp_path: Path) -> None:
    tree, read = _tree(tmp_path)
    applied = apply_change(tree, {"tests/test_calc.py": TEST}, read)
    assert applied.written == ["tests/test_calc.py"] and applied.already_there == []
    assert (tree / "tests" / "test_calc.py").read_text() == TEST
    again = apply_change(tree, {"tests/test_calc.py": TEST}, read)
    assert again.written == [] and again.already_there == ["tests/test_calc.py"]


def test_a_file_the_plan_read_that_changed_since_refuses_the_whole_change(tmp_path: Path) -> None:
    tree, read = _tree(tmp_path)
    (tree / "calc.py").write_text(MODULE + "\n# edited\n")
    with pytest.raises(ApplyRefused, match="files the plan read have changed since: calc.py"):
        apply_change(tree, {"tests/test_calc.py": TEST}, read)
    assert not (tree / "tests").exists()


def test_a_file_the_plan_read_that_is_gone_counts_as_changed(tmp_path: Path) -> None:
    tree, read = _tree(tmp_path)
    (tree / "calc.py").unlink()
    with pytest.raises(ApplyRefused, match="calc.py"):
        apply_change(tree, {"t.py": TEST}, read)


def test_other_content_in_the_way_is_never_overwritten(tmp_path: Path) -> None:
    tree, read = _tree(tmp_path)
    (tree / "tests").mkdir()
    (tree / "tests" / "test_calc.py").write_text("# mine\n")
    with pytest.raises(ApplyRefused, match="exist with other content: tests/test_calc.py"):
        apply_change(tree, {"tests/test_calc.py": TEST, "tests/test_b.py": TEST}, read)
    assert (tree / "tests" / "test_calc.py").read_text() == "# mine\n"
    assert not (tree / "tests" / "test_b.py").exists()


@pytest.mark.parametrize("path", ["../escape.py", "/tmp/absolute.py", "link/inside.py", ""])
def test_a_path_outside_the_tree_is_refused_before_anything_is_written(tmp_path: Path, path: str) -> None:
    tree, read = _tree(tmp_path)
    (tree / "link").symlink_to(tmp_path)
    with pytest.raises(ApplyRefused, match="outside the working tree"):
        apply_change(tree, {"tests/ok.py": TEST, path: TEST}, read)
    assert not (tree / "tests").exists()
    assert not (tmp_path / "escape.py").exists() and not (tmp_path / "inside.py").exists()
