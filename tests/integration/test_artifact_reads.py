"""ArtifactStore.read on moto's S3: a build's upload is asked for once, and a missing one is None.
On the worker's local stack, in a bucket of the test's own: a moto mock of its own, nested in the
stack's, would leave moto's settings as they were before the stack started (Step Functions stops
running state machines)."""
from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING

import boto3
import pytest

from agentledger.adapters.s3_artifacts import ArtifactStore
from agentledger.local.runtime import REGION

if TYPE_CHECKING:
    from agentledger.local.runtime import LocalRuntime

pytestmark = pytest.mark.integration


@pytest.fixture
def store(runtime: LocalRuntime) -> tuple[ArtifactStore, Counter[str]]:
    s3 = boto3.client("s3", region_name=REGION)  # its own client: the count is of this store's requests only
    bucket = f"artifact-reads-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="runs/r/verify/out.tar.gz", Body=b"x")
    sent: Counter[str] = Counter()
    s3.meta.events.register("before-send.s3.*", lambda event_name, **_: sent.update([event_name.split(".")[2]]))
    return ArtifactStore(bucket, s3), sent


def test_an_upload_that_is_there_is_read_with_one_request(store: tuple[ArtifactStore, Counter[str]]) -> None:
    artifacts, sent = store
    assert artifacts.read("runs/r/verify/out.tar.gz") == b"x"
    assert sent == Counter({"GetObject": 1})


def test_an_upload_that_is_not_there_is_none(store: tuple[ArtifactStore, Counter[str]]) -> None:
    artifacts, _ = store
    assert artifacts.read("runs/r/verify/missing.tar.gz") is None
