"""What agentledger never shows or writes as itself: control characters (but newline and tab) and
Unicode's format characters, each shown as the escape a Python string literal would use."""
from __future__ import annotations

import pytest

from agentledger.hidden_text import described, hidden_characters, printable


@pytest.mark.parametrize(("text", "shown"), [
    ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),  # C0: a terminal title set
    ("\r\x7f\x9b2J", "\\x0d\\x7f\\x9b2J"),  # a carriage return, DEL, a C1 CSI
    ("if access_level != \u202e\u2066user\u2069\u2066:", "if access_level != \\u202e\\u2066user\\u2069\\u2066:"),
    ("zero\u200bwidth\u200d\u2060\ufeff", "zero\\u200bwidth\\u200d\\u2060\\ufeff"),
    ("soft\xadhyphen", "soft\\xadhyphen"),
    ("tag\U000e0041\U000e007f", "tag\\U000e0041\\U000e007f"),  # tag characters, which smuggle text to models
])
def test_control_and_format_characters_are_shown_as_escapes(text: str, shown: str) -> None:
    assert printable(text) == shown


def test_newlines_tabs_and_the_letters_of_any_script_are_shown_as_they_are() -> None:
    text = "def test_x():\n\tassert naïve('日本語') == 'שלום' + '😀'\n"
    assert printable(text) == text


def test_each_hidden_character_is_found_with_its_line() -> None:
    text = 'def test_x():\n    assert f("\u202eabc") == "cba"\n\n    # \u2066ok\u2069\n'
    assert hidden_characters(text) == [(2, "\u202e"), (4, "\u2066"), (4, "\u2069")]
    assert hidden_characters("plain\ttext\n") == []


def test_a_hidden_character_is_described_by_its_code_point_and_name() -> None:
    assert described("\u202e") == "U+202E RIGHT-TO-LEFT OVERRIDE"
    assert described("\u2066") == "U+2066 LEFT-TO-RIGHT ISOLATE"
    assert described("\x1b") == "U+001B CONTROL CHARACTER"
