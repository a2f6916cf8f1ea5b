"""Artifacts as S3 objects: the S3 side of the content-addressed store."""
from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from ..artifacts import ContentAddressedArtifacts, run_prefix


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
        """Asked for first: it is there when read (a build's upload, once the build ended). A refusal
        is then told apart from a missing object by listing (see `_exists`)."""
        try:
            return self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except self._s3.exceptions.NoSuchKey:
            return None
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "AccessDenied" or self._exists(key):
                raise
            return None

    def has_repository(self, url: str) -> bool:
        bucket, _, key = url.removeprefix("s3://").partition("/")
        return bucket == self.bucket and self._exists(key)

    def _exists(self, key: str) -> bool:
        """Listed, not asked for: the functions may list only under the bucket's prefixes (an
        s3:prefix condition), and without ListBucket on a key S3 answers a missing object with 403."""
        listed = self._s3.list_objects_v2(Bucket=self.bucket, Prefix=key, MaxKeys=1).get("Contents", [])
        return bool(listed) and listed[0]["Key"] == key

    def fetch_repository(self, url: str) -> bytes:
        """Bytes of a repository tarball at s3://bucket/key."""
        bucket, _, key = url.removeprefix("s3://").partition("/")
        return self._s3.get_object(Bucket=bucket, Key=key)["Body"].read()

    def list_keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            keys.extend(obj["Key"] for obj in page.get("Contents", []))
        return keys
