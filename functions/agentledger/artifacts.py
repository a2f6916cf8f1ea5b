"""Artifacts in S3: content-addressed objects under the run's prefix, verified on read."""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any

from .caches import ContentCache
from .errors import ArtifactIntegrityError
from .fingerprints import sha256_bytes
from .models import ArtifactRef, Stage

PRESIGN_SECONDS = 3600
MANIFESTS_KEPT = 16  # file manifests held in memory: a warm function checks the same few again


def run_prefix(run_id: str) -> str:
    return f"runs/{run_id}/"


def artifact_key(run_id: str, stage: Stage, name: str, digest: str) -> str:
    """The key holds the content hash, so writing the same output again (a retry) is a no-op and
    a different output never overwrites evidence an earlier attempt left behind."""
    return f"{run_prefix(run_id)}{stage.value}/{digest[:16]}/{name}"


class ContentAddressedArtifacts(ABC):
    """What every artifact store does alike: key by content hash, format JSON and text, verify
    on read. A store supplies `_store` and `_load`."""

    bucket: str

    def __init__(self) -> None:
        self._manifests: ContentCache[str, dict[str, str]] = ContentCache(MANIFESTS_KEPT)

    @abstractmethod
    def _store(self, key: str, data: bytes, media_type: str, metadata: dict[str, str]) -> None: ...

    @abstractmethod
    def _load(self, key: str) -> bytes:
        """The object's bytes; KeyError when there is none."""

    def put(self, run_id: str, stage: Stage, name: str, data: bytes, media_type: str) -> ArtifactRef:
        digest = sha256_bytes(data)
        key = artifact_key(run_id, stage, name, digest)
        self._store(key, data, media_type, {"sha256": digest, "run-id": run_id, "stage": stage.value})
        return ArtifactRef(name=name, stage=stage, key=key, sha256=digest, size=len(data), media_type=media_type)

    def put_json(self, run_id: str, stage: Stage, name: str, document: Any) -> ArtifactRef:
        # Without indent: json's C encoder then does the work (a 10,000-file manifest written
        # with indent=2 took the pure-Python encoder 2 s); `jq .` lays an artifact out to read.
        data = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        return self.put(run_id, stage, name, data, "application/json")

    def put_text(self, run_id: str, stage: Stage, name: str, text: str, media_type: str = "text/plain") -> ArtifactRef:
        return self.put(run_id, stage, name, text.encode(), f"{media_type}; charset=utf-8")

    def get(self, ref: ArtifactRef) -> bytes:
        data = self._load(ref.key)
        if sha256_bytes(data) != ref.sha256:
            raise ArtifactIntegrityError(f"artifact {ref.key} does not match its recorded sha256")
        return data

    def get_json(self, ref: ArtifactRef) -> Any:
        return json.loads(self.get(ref))

    def read_manifest(self, ref: ArtifactRef) -> dict[str, str] | None:
        """A file manifest (path -> sha256), or None when it is gone or not what was recorded.
        Kept in memory by its content hash, so a manifest is fetched once per warm function."""
        cached = self._manifests.get(ref.sha256)
        if cached is not None:
            return cached
        try:
            manifest = self.get_json(ref)
        except (ArtifactIntegrityError, KeyError, ValueError):
            return None
        if not isinstance(manifest, dict):
            return None
        self._manifests.put(ref.sha256, manifest)
        return manifest

    @abstractmethod
    def download_url(self, key: str, expires_s: int) -> str: ...

    def presigned_url(self, ref: ArtifactRef) -> str:
        return self.download_url(ref.key, PRESIGN_SECONDS)


class ArtifactStore(ContentAddressedArtifacts):
    """Artifacts as S3 objects, with a SHA-256 checksum S3 verifies on upload."""

    def __init__(self, bucket: str, s3_client: Any, link_client: Any | None = None) -> None:
        super().__init__()
        self.bucket = bucket
        self._s3 = s3_client
        # Links are signed by a client of their own: locally it points at an S3 endpoint that a
        # browser, curl or a build sandbox can reach; on AWS it is the same client.
        self._links = link_client or s3_client

    def location(self, run_id: str) -> str:
        return f"s3://{self.bucket}/{run_prefix(run_id)}"

    def _store(self, key: str, data: bytes, media_type: str, metadata: dict[str, str]) -> None:
        self._s3.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=media_type,
                            ChecksumAlgorithm="SHA256", Metadata=metadata)

    def _load(self, key: str) -> bytes:
        try:
            return self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except self._s3.exceptions.NoSuchKey as missing:
            raise KeyError(key) from missing

    def download_url(self, key: str, expires_s: int) -> str:
        return self._links.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=expires_s
        )

    def upload_grant(self, key: str, max_bytes: int, expires_s: int, min_bytes: int = 1) -> dict[str, Any]:
        """A presigned POST for this one key (S3 enforces the key and the size range)."""
        grant = self._links.generate_presigned_post(
            self.bucket, key, Conditions=[["content-length-range", min_bytes, max_bytes]], ExpiresIn=expires_s)
        return {"url": grant["url"], "fields": grant["fields"]}

    def read(self, key: str) -> bytes | None:
        try:
            return self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except self._s3.exceptions.NoSuchKey:
            return None

    def has_repository(self, url: str) -> bool:
        bucket, _, key = url.removeprefix("s3://").partition("/")
        try:
            self._s3.head_object(Bucket=bucket, Key=key)
        except self._s3.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True

    def fetch_repository(self, url: str) -> bytes:
        """Bytes of a repository tarball at s3://bucket/key."""
        bucket, _, key = url.removeprefix("s3://").partition("/")
        return self._s3.get_object(Bucket=bucket, Key=key)["Body"].read()

    def list_keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            keys.extend(obj["Key"] for obj in page.get("Contents", []))
        return keys
