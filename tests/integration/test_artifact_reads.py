"""ArtifactStore.read on moto's S3: a build's upload is asked for once, and a missing one is None."""
from __future__ import annotations

from collections import Counter

import boto3
from moto import mock_aws

from agentledger.adapters.s3_artifacts import ArtifactStore

BUCKET = "artifacts"


def _store() -> tuple[ArtifactStore, Counter[str]]:
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    sent: Counter[str] = Counter()
    s3.meta.events.register("before-send.s3.*", lambda event_name, **_: sent.update([event_name.split(".")[2]]))
    return ArtifactStore(BUCKET, s3), sent


@mock_aws
def test_an_upload_that_is_there_is_read_with_one_request() -> None:
    store, sent = _store()
    boto3.client("s3", region_name="us-east-1").put_object(Bucket=BUCKET, Key="runs/r/verify/out.tar.gz", Body=b"x")
    assert store.read("runs/r/verify/out.tar.gz") == b"x"
    assert sent == Counter({"GetObject": 1})


@mock_aws
def test_an_upload_that_is_not_there_is_none() -> None:
    store, _ = _store()
    assert store.read("runs/r/verify/missing.tar.gz") is None
