"""The small Python repository the demo (and the tests) hand to the agent."""
from __future__ import annotations

from pathlib import Path

SAMPLE_FILES: dict[str, str] = {
    "textkit/__init__.py": '"""Small text helpers."""\n',
    "textkit/slug.py": '''"""Turn titles into URL slugs."""


def slugify(title):
    """Lower-case words joined by dashes.

    >>> slugify("Hello, World")
    'hello-world'
    >>> slugify("  many   spaces ")
    'many-spaces'
    """
    words = "".join(c if c.isalnum() else " " for c in title.lower()).split()
    return "-".join(words)
''',
    "textkit/stats.py": '''"""Counting words."""


def word_count(text):
    """How many words.

    >>> word_count("one two  three")
    3
    """
    return len(text.split())


def longest_word(text):
    """The longest word, first one on ties.

    >>> longest_word("a bb ccc dd")
    'ccc'
    """
    return max(text.split(), key=len)


def average_length(text):
    words = text.split()
    return sum(map(len, words)) / len(words)
''',
    "tests/test_existing.py": '''import unittest

from textkit.stats import average_length


class AverageLength(unittest.TestCase):
    def test_average(self):
        self.assertEqual(average_length("ab abcd"), 3)
''',
}

EDITED_FILE = "textkit/slug.py"


def write_sample_repository(root: Path) -> Path:
    for relative, text in SAMPLE_FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def edit_sample_repository(root: Path) -> str:
    """A change a colleague might push while the run waits: the plan read this file."""
    path = root / EDITED_FILE
    path.write_text(path.read_text().replace('Lower-case words joined by dashes.', 'Lower-case words, joined by dashes.'))
    return EDITED_FILE
