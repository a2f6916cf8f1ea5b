"""Characters a reader does not see as themselves: the control characters (C0 and C1, but newline
and tab) and Unicode's format characters (category Cf: the bidi embeddings, overrides and
isolates, zero-width spaces and joiners, the byte order mark).

Printed raw, a control character can set a terminal's title, move its cursor or overwrite the
lines above; a format character reorders or hides what is shown (Trojan Source, CVE-2021-42574).
Either way a reviewer would read, and approve, other text than what is there. This is the one
definition for what agentledger shows a person (the CLI, `serve`, the console mirrors it) and for
what it writes into a repository (the generated tests)."""
from __future__ import annotations

import re
import unicodedata

LAYOUT_CONTROLS = "\n\t"  # controls that only lay text out, shown as what they do
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf"})
# re has no \p{Cf}: any character but printable ASCII is looked at, and its category decides.
_MAYBE_HIDDEN = re.compile(r"[^\t\n\x20-\x7e]")


def is_hidden(character: str) -> bool:
    return character not in LAYOUT_CONTROLS and unicodedata.category(character) in HIDDEN_CATEGORIES


def escape(character: str) -> str:
    """`\\x1b` below U+0100, `\\u202e` in the basic plane, `\\U000e0001` above it: Python's own
    escapes, so the text reads as a string literal would."""
    code = ord(character)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str) -> str:
    """`text` with each hidden character shown as its escape, never sent as itself."""
    return _MAYBE_HIDDEN.sub(lambda match: escape(match[0]) if is_hidden(match[0]) else match[0], text)


def hidden_characters(text: str) -> list[tuple[int, str]]:
    """(line, character) of each hidden character of `text`, lines counted from 1 at each newline."""
    found: list[tuple[int, str]] = []
    line, counted_to = 1, 0
    for match in _MAYBE_HIDDEN.finditer(text):
        if is_hidden(match[0]):
            line += text.count("\n", counted_to, match.start())
            counted_to = match.start()
            found.append((line, match[0]))
    return found


def described(character: str) -> str:
    """`U+202E RIGHT-TO-LEFT OVERRIDE`; a C0 or C1 control has no name in Unicode's data."""
    return f"U+{ord(character):04X} {unicodedata.name(character, 'CONTROL CHARACTER')}"
