"""List cursors the API hands out, sealed with an HMAC so that only a cursor it issued is taken
back: a forged or edited cursor names no place in the ledger. The seal covers the query the
cursor was issued for (the status filter, which picks the index it is a place in): replayed with
another query, it is refused rather than read as a place in the wrong index."""
from __future__ import annotations

import base64
import hashlib
import hmac

FORGED = "cursor is not one this API returned for this query"
MAC_BYTES = 16


class CursorSeal:
    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("the cursor signing key must be at least 16 bytes")
        self._key = key

    def seal(self, cursor: str | None, query: str) -> str | None:
        return None if cursor is None else f"{cursor}.{self._mac(cursor, query)}"

    def open(self, token: str | None, query: str) -> str | None:
        """The cursor inside `token`; a ValueError for anything this API did not issue for `query`."""
        if token is None:
            return None
        cursor, dot, mac = token.rpartition(".")
        if not dot or not cursor or not hmac.compare_digest(mac, self._mac(cursor, query)):
            raise ValueError(FORGED)
        return cursor

    def _mac(self, cursor: str, query: str) -> str:
        # The query first, NUL-separated: neither part can be shifted into the other.
        digest = hmac.new(self._key, f"{query}\0{cursor}".encode(), hashlib.sha256).digest()[:MAC_BYTES]
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")
