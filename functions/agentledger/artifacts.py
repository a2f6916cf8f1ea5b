"""Artifacts: content-addressed objects under the run's prefix, verified on read. The S3 store is
in `adapters.s3_artifacts`; this is what every store does alike."""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any

from .caches import ContentCache
from .errors import ArtifactIntegrityError
from .fingerprints import sha256_bytes
from .models import ArtifactRef, Stage

MANIFESTS_KEPT = 16  # file manifests held in memory: a warm function checks the same few again


def run_prefix(run_id: str) -> str:
    return f"runs/{run_id}/"


def stage_prefix(run_id: str, stage: Stage) -> str:
    return f"{run_prefix(run_id)}{stage.value}/"


def artifact_key(run_id: str, stage: Stage, name: str, digest: str) -> str:
    """The key holds the content hash, so writing the same output again (a retry) is a no-op and
    a different output never overwrites evidence an earlier attempt left behind."""
    return f"{stage_prefix(run_id, stage)}{digest[:16]}/{name}"


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

    def presigned_url(self, ref: ArtifactRef, expires_s: int) -> str:
        return self.download_url(ref.key, expires_s)
