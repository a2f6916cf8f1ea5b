"""The results leave the build as one tarball, POSTed to the output grant the build was given."""
from __future__ import annotations

import json
import os
import secrets
import tarfile
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from .layout import (
    OUTPUT_ARCHIVE_LIMIT_BYTES,
    OUTPUT_GRANT_VARIABLE,
    PROGRESS_FILE,
    PROGRESS_GRANT_KEY,
    PROGRESS_LIMIT_BYTES,
    RESULTS_DIR,
)
from .processes import DriverError, say

if TYPE_CHECKING:
    from pathlib import Path

UPLOAD_TIMEOUT_S = 60
UPLOAD_ATTEMPTS = 3
UPLOAD_BACKOFF_S = 1.0
ERROR_BODY_BYTES = 300
PROGRESS_TIMEOUT_S = 5  # a progress post that hangs must not hold the build up


def upload_results(results: Path, archive: Path) -> None:
    grant = load_grant()
    make_archive(results, archive)
    size = archive.stat().st_size
    if size > OUTPUT_ARCHIVE_LIMIT_BYTES:
        raise DriverError(f"the results' archive is {size} bytes, over the {OUTPUT_ARCHIVE_LIMIT_BYTES} byte limit")
    say(f"uploading the results ({size} bytes)")
    boundary = secrets.token_hex(16)
    body = multipart_body(grant["fields"], archive.read_bytes(), boundary)
    status = post_with_retries(grant["url"], body, boundary)
    say(f"uploaded (HTTP {status})")


class ProgressPoster:
    """Posts the build's progress to the progress grant, when the orchestrator gave one. Progress is
    for a person watching: a post that fails is said once and never stops the build."""

    def __init__(self, grant: dict[str, Any] | None) -> None:
        self.grant = grant
        self.failed = False

    @classmethod
    def from_environment(cls) -> ProgressPoster:
        try:
            grant = load_grant().get(PROGRESS_GRANT_KEY)
        except DriverError:
            return cls(None)
        usable = isinstance(grant, dict) and isinstance(grant.get("url"), str) and isinstance(grant.get("fields"), dict)
        return cls(grant if usable else None)

    def __call__(self, document: dict[str, Any]) -> None:
        if self.grant is None:
            return
        data = json.dumps(document, separators=(",", ":")).encode()
        if len(data) > PROGRESS_LIMIT_BYTES:
            return  # the kit bounds what it reports; a document past the grant's limit is a bug, not news
        boundary = secrets.token_hex(16)
        body = multipart_body(self.grant["fields"], data, boundary, PROGRESS_FILE, "application/json")
        try:
            post(self.grant["url"], body, boundary, PROGRESS_TIMEOUT_S)
        except DriverError as error:
            if not self.failed:
                say(f"the build's progress could not be posted ({error}); the build goes on")
            self.failed = True


def load_grant() -> dict[str, Any]:
    try:
        grant = json.loads(os.environ[OUTPUT_GRANT_VARIABLE])
    except KeyError:
        raise DriverError(f"{OUTPUT_GRANT_VARIABLE} is not set") from None
    except ValueError as error:
        raise DriverError(f"{OUTPUT_GRANT_VARIABLE} is not JSON: {error}") from error
    if not (isinstance(grant, dict) and isinstance(grant.get("url"), str)
            and isinstance(grant.get("fields"), dict)):
        raise DriverError(f"{OUTPUT_GRANT_VARIABLE} must hold a url and fields")
    return grant


def make_archive(results: Path, archive: Path) -> Path:
    if not results.is_dir():
        raise DriverError(f"{RESULTS_DIR} does not exist: nothing to upload")
    with tarfile.open(archive, "w:gz") as tar:
        for entry in sorted(results.iterdir()):
            tar.add(entry, arcname=entry.name, filter=only_files_and_directories)
    return archive


def only_files_and_directories(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    # Only the kit writes the results, but a link or a device must never leave the build.
    return member if member.isfile() or member.isdir() else None


def multipart_body(fields: dict[str, Any], content: bytes, boundary: str, filename: str = "output.tar.gz",
                   media_type: str = "application/gzip") -> bytes:
    """The presigned POST's fields in their order, then the file: S3 ignores fields after it."""
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                     f"{value}\r\n".encode())
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                 f'filename="{filename}"\r\nContent-Type: {media_type}\r\n\r\n'.encode())
    parts.append(content)
    parts.append(f"\r\n--{boundary}--\r\n".encode())
    return b"".join(parts)


def post_with_retries(url: str, body: bytes, boundary: str) -> int:
    """Retries what may pass on a second try (connection errors, 5xx), never a refusal."""
    for attempt in range(1, UPLOAD_ATTEMPTS):
        try:
            return post(url, body, boundary)
        except TransientUploadError as error:
            say(f"upload attempt {attempt} failed ({error}), retrying")
            time.sleep(UPLOAD_BACKOFF_S * attempt)
    return post(url, body, boundary)


class TransientUploadError(DriverError):
    pass


def post(url: str, body: bytes, boundary: str, timeout_s: float = UPLOAD_TIMEOUT_S) -> int:
    request = urllib.request.Request(
        url, data=body, method="POST",
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status
    except urllib.error.HTTPError as error:
        answer = error.read()[:ERROR_BODY_BYTES].decode("utf-8", "replace")
        failure = TransientUploadError if error.code >= 500 else DriverError
        raise failure(f"upload refused: HTTP {error.code}: {answer}") from error
    except OSError as error:  # URLError, timeouts, resets: the answer never came
        raise TransientUploadError(f"upload failed: {error}") from error
