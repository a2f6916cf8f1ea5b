"""List cursors the API hands out, sealed with an HMAC so that only a cursor it issued is taken
back: a forged or edited cursor names no place in the ledger."""
from __future__ import annotations

import base64
import hashlib
import hmac

FORGED = "cursor is not one this API returned"
MAC_BYTES = 16


class CursorSeal:
    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("the cursor signing key must be at least 16 bytes")
        self._key = key

    def seal(self, cursor: str | None) -> str | None:
        return None if cursor is None else f"{cursor}.{self._mac(cursor)}"

    def open(self, token: str | None) -> str | None:
        """The cursor inside `token`; a ValueError for anything this API did not issue."""
        if token is None:
            return None
        cursor, dot, mac = token.rpartition(".")
        if not dot or not cursor or not hmac.compare_digest(mac, self._mac(cursor)):
            raise ValueError(FORGED)
        return cursor

    def _mac(self, cursor: str) -> str:
        digest = hmac.new(self._key, cursor.encode(), hashlib.sha256).digest()[:MAC_BYTES]
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")
