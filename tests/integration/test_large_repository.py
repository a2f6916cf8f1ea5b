"""A repository of 5,000 files goes to review with no ledger item growing with it: the files'
fingerprints are manifest artifacts in S3, and DynamoDB keeps their digests (issue 14)."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration

# Their manifest is about 500 KB: past DynamoDB's item limit, and eight times the bound below, were
# it kept in one ledger item. (How inspect and a run scale to 10,000 files is the bench's, (d).)
FILES = 5_000
# DynamoDB refuses items over 400 KB; a ledger item must stay far below, whatever the repository.
ITEM_BOUND_BYTES = 64 * 1024
MODULE = '''"""Bulk helpers."""


def total(values):
    """Add them up.

    >>> total([1, 2, 3])
    6
    """
    return sum(values)
'''


def write_large_repository(root: Path, files: int) -> Path:
    (root / "bulk").mkdir(parents=True)
    (root / "bulk" / "__init__.py").write_text(MODULE)
    (root / "README.md").write_text("Many records, one helper.\n")
    for number in range(files - 2):
        directory = root / "data" / f"part_{number // 500:03}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"record_{number:05}.txt").write_text(f"record {number}\n")
    return root


def item_sizes(client: Any, table: str) -> list[tuple[int, str]]:
    """Every item of `table` with its size as DynamoDB's wire format spells it (an upper bound of
    what DynamoDB counts against its item limit)."""
    sizes = []
    for page in client.get_paginator("scan").paginate(TableName=table):
        for item in page["Items"]:
            name = "/".join(str(next(iter(item[key].values()))) for key in ("pk", "sk") if key in item)
            sizes.append((len(json.dumps(item)), name))
    return sorted(sizes, reverse=True)


def test_a_5000_file_repository_reaches_review_with_every_ledger_item_bounded(driver, runtime, tmp_path):
    repo = write_large_repository(tmp_path / "large", FILES)
    run_id = driver.start(repo)
    waiting = driver.wait(run_id)
    assert waiting["run"]["status"] == "awaiting_review", waiting.get("handoff")

    manifest = json.loads(driver.artifact_bytes(run_id, "source-manifest.json"))
    assert len(manifest) == FILES and manifest["bulk/__init__.py"]
    dynamodb = runtime.client("dynamodb")
    for output in ("LedgerTableName", "IdempotencyTableName"):
        largest = item_sizes(dynamodb, runtime.output(output))[:3]
        assert largest[0][0] < ITEM_BOUND_BYTES, f"largest items of {output}: {largest}"

    # A change is still named, from the manifests.
    (repo / "data" / "part_000" / "record_00007.txt").write_text("edited\n")
    evidence = driver.view(run_id)["evidence_status"]
    assert evidence["source_tree"]["status"] == "stale"
    assert "modified: data/part_000/record_00007.txt" in evidence["source_tree"]["reason"]
