"""Small repositories written into tmp_path, shaped like what users hand the agent."""

from __future__ import annotations

import subprocess
import textwrap
from typing import TYPE_CHECKING

from agentledger.agent import PlanBrief

if TYPE_CHECKING:
    from pathlib import Path

BRIEF = PlanBrief(request="write tests for calc")

CALC = '''\
"""A calculator."""

SCALE = 10


def add(a, b):
    """Add two numbers.

    >>> add(2, 3)
    5
    >>> total = add(1, 1)
    >>> total * SCALE
    20
    """
    return a + b


def divide(a, b):
    """
    >>> divide(1, 0)
    Traceback (most recent call last):
      ...
    ZeroDivisionError: division by zero
    """
    return a / b


def subtract(a, b):
    """
    >>> subtract(3, 1)
    2
    """
    return a - b


def multiply(a, b):
    return a * b


def _hidden(a):
    """
    >>> _hidden(1)
    1
    """
    return a


class Accumulator:
    def total(self):
        """
        >>> Accumulator().total()
        0
        """
        return 0
'''

EXISTING_TEST = '''\
from pkg.calc import subtract


def test_subtract():
    assert subtract(3, 1) == 2
'''


def write(root: Path, path: str, content: str) -> Path:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(textwrap.dedent(content), encoding="utf-8")
    return target


def make_sample_repo(root: Path) -> Path:
    """pkg/calc.py with tested, untested, example-less and private functions, plus a broken file."""
    write(root, "pkg/__init__.py", "")
    write(root, "pkg/calc.py", CALC)
    write(root, "pkg/broken.py", "def broken(:\n    pass\n")
    write(root, "tests/test_calc.py", EXISTING_TEST)
    write(root, "README.md", "# sample\n")
    return root


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def make_git_repo(root: Path) -> str:
    """Commit everything under root; returns the commit id."""
    git(root, "init", "--quiet")
    git(root, "config", "user.name", "Sample Author")
    git(root, "config", "user.email", "author@example.com")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "sample")
    return git(root, "rev-parse", "HEAD")
