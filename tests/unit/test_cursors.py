"""List cursors are sealed: the API takes back only what it handed out."""
from __future__ import annotations

import pytest

from agentledger.adapters.dynamodb_ledger import encode_cursor
from agentledger.cursors import FORGED, CursorSeal

KEY = b"a-key-of-enough-length"
QUERY = "status="
CURSOR = encode_cursor({"pk": "run#run-1", "sk": "run", "entity": "run", "created_key": "2026-12-03#run-1"})


def test_a_sealed_cursor_opens_to_the_cursor_it_sealed() -> None:
    seal = CursorSeal(KEY)
    assert seal.open(seal.seal(CURSOR, QUERY), QUERY) == CURSOR
    assert seal.seal(None, QUERY) is None and seal.open(None, QUERY) is None


@pytest.mark.parametrize("token", [
    CURSOR,  # well-formed but never sealed: a forged place in the ledger
    f"{CURSOR}.AAAAAAAAAAAAAAAAAAAAAA",
    ".abc", "abc.", "", "...",
])
def test_anything_the_api_did_not_seal_is_refused(token: str) -> None:
    with pytest.raises(ValueError, match=FORGED):
        CursorSeal(KEY).open(token, QUERY)


def test_a_cursor_sealed_with_another_key_or_edited_is_refused() -> None:
    sealed = CursorSeal(b"another-key-of-enough-length").seal(CURSOR, QUERY)
    assert sealed is not None
    with pytest.raises(ValueError, match=FORGED):
        CursorSeal(KEY).open(sealed, QUERY)
    mine = CursorSeal(KEY).seal(CURSOR, QUERY)
    assert mine is not None
    edited = mine.replace(CURSOR[:4], CURSOR[:3] + ("A" if CURSOR[3] != "A" else "B"), 1)
    with pytest.raises(ValueError, match=FORGED):
        CursorSeal(KEY).open(edited, QUERY)


def test_a_cursor_replayed_with_another_query_is_refused() -> None:
    seal = CursorSeal(KEY)
    issued = seal.seal(CURSOR, "status=")
    assert seal.open(issued, "status=") == CURSOR
    with pytest.raises(ValueError, match=FORGED):
        seal.open(issued, "status=complete")


def test_a_short_key_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16 bytes"):
        CursorSeal(b"short")
