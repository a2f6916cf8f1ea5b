"""A small HTTP client for the agentledger API: JSON in, JSON out, errors as exceptions that
carry a message a person can act on."""
from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import TYPE_CHECKING, Any

from agentledger.hidden_text import printable

if TYPE_CHECKING:
    from collections.abc import Callable

    from .signing import Signer

REQUEST_TIMEOUT_S = 60.0
# A 429 is the API's edge refusing a request before anything acts on it, so the same request is
# sent again, after the Retry-After it names (at most this long), this many times in all.
THROTTLED_ATTEMPTS = 5
MAX_THROTTLED_WAIT_S = 30.0


class ApiError(Exception):
    """The API answered with an error status; `message` is the body's explanation, `retry_after_s`
    its Retry-After, if any."""

    def __init__(self, status: int, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after_s = retry_after_s


class ApiUnreachable(Exception):
    def __init__(self, base_url: str) -> None:
        super().__init__(f"cannot reach the agentledger API at {base_url}; start it with `agentledger serve`")
        self.base_url = base_url


class ApiClient:
    def __init__(self, base_url: str, sign: Signer, timeout_s: float = REQUEST_TIMEOUT_S,
                 urlopen: Callable[..., Any] = urllib.request.urlopen,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        """`urlopen` and `sleep`: the HTTP layer and the clock a throttled request waits on."""
        self.base_url = base_url.rstrip("/")
        self.sign = sign
        self.timeout_s = timeout_s
        self._urlopen = urlopen
        self._sleep = sleep

    def get(self, path: str, query: dict[str, Any] | None = None) -> Any:
        present = {name: value for name, value in (query or {}).items() if value is not None}
        suffix = f"?{urllib.parse.urlencode(present)}" if present else ""
        return self._send("GET", path + suffix, body=None, headers={})

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> Any:
        return self._send("POST", path, body=body, headers=headers or {})

    def _send(self, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
        """The answer's JSON. A throttled request (429) is sent again, signed afresh, after the wait
        its Retry-After names, with a line on stderr saying so; the same Idempotency-Key goes with it."""
        attempt = 1
        while True:
            try:
                return self._send_once(method, path, body, headers)
            except ApiError as refused:
                if refused.status != 429:
                    raise
                if attempt == THROTTLED_ATTEMPTS:
                    raise ApiError(429, f"{refused.message} (still throttled after {attempt} attempts: nothing "
                                        "was done; try again later)") from None
                wait_s = min(refused.retry_after_s or 2.0 ** attempt, MAX_THROTTLED_WAIT_S)
                why = refused.message
            attempt += 1
            again = f"{method} {path.split('?', 1)[0]} again (attempt {attempt} of {THROTTLED_ATTEMPTS})"
            print(printable(f"agentledger: the API is throttling requests (429: {why}); waiting {wait_s:g} s before "
                            f"sending {again}"), file=sys.stderr, flush=True)
            self._sleep(wait_s)

    def _send_once(self, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        url = self.base_url + path
        signed = self.sign(method, url, {"Content-Type": "application/json", "Accept": "application/json",
                                         **headers}, data)
        request = urllib.request.Request(url, data=data, method=method, headers=signed)
        try:
            with self._urlopen(request, timeout=self.timeout_s) as response:
                payload = response.read()
        except urllib.error.HTTPError as error:
            retry_after = _retry_after_s(error.headers.get("Retry-After"))
            raise ApiError(error.code, _error_message(error), retry_after) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            raise ApiUnreachable(self.base_url) from error
        return json.loads(payload) if payload else None


def fetch(url: str, timeout_s: float = REQUEST_TIMEOUT_S) -> bytes:
    """The bytes behind a presigned link."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.read()
    except urllib.error.HTTPError as error:
        raise ApiError(error.code, f"the artifact link answered HTTP {error.code}") from None
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        raise ApiUnreachable(url.split("?", 1)[0]) from error


def upload(grant: dict[str, Any], data: bytes, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
    """A browser-form POST of `data` under an upload grant (presigned: no SigV4 of our own)."""
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
             for name, value in grant["fields"].items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="repository.tar.gz"\r\n'
                 "Content-Type: application/gzip\r\n\r\n".encode() + data + f"\r\n--{boundary}--\r\n".encode())
    request = urllib.request.Request(grant["url"], data=b"".join(parts), method="POST",
                                     headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s):
            return
    except urllib.error.HTTPError as error:
        raise ApiError(error.code, f"the upload was refused: {error.read().decode(errors='replace')[:300]}") from None
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        raise ApiUnreachable(grant["url"]) from error


def _retry_after_s(value: str | None) -> float | None:
    """Retry-After in seconds; None when absent or not a number of seconds."""
    try:
        return max(float(value), 0.0) if value else None
    except ValueError:
        return None


def _error_message(error: urllib.error.HTTPError) -> str:
    raw = error.read().decode(errors="replace")
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return f"HTTP {error.code} {error.reason}" + (f": {raw.strip()[:200]}" if raw.strip() else "")
