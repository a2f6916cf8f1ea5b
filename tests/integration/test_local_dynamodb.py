"""The local stack's DynamoDB answers as DynamoDB does, and keeps what DynamoDB keeps: an item as
last written, not every version of it (moto alone kept every one, and a copy of the whole table
per transaction, which is how `serve` grew to gigabytes over a few dozen runs)."""
from __future__ import annotations

import gc
import tracemalloc
import uuid
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

pytestmark = pytest.mark.integration


@pytest.fixture
def table(runtime) -> Iterator[str]:
    """A table of its own (partition key pk, sort key sk, an index on `kind`), dropped afterwards."""
    name = f"scratch-{uuid.uuid4().hex[:8]}"
    ddb = runtime.client("dynamodb")
    ddb.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": attribute, "AttributeType": "S"} for attribute in ("pk", "sk", "kind")],
        GlobalSecondaryIndexes=[{"IndexName": "by-kind", "Projection": {"ProjectionType": "ALL"},
                                 "KeySchema": [{"AttributeName": "kind", "KeyType": "HASH"},
                                               {"AttributeName": "sk", "KeyType": "RANGE"}]}])
    yield name
    ddb.delete_table(TableName=name)


def key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def retained_bytes(work: Callable[[], None]) -> int:
    """How much of what `work` allocated is still alive once it is done."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


EVERY_TYPE = {
    "s": {"S": "é\u2028 text"}, "empty": {"S": ""}, "n": {"N": "1.50"}, "yes": {"BOOL": True}, "no": {"BOOL": False},
    "nothing": {"NULL": True}, "b": {"B": b"\x00\xffbinary"}, "ss": {"SS": ["a", "b"]}, "ns": {"NS": ["1", "2"]},
    "bs": {"BS": [b"\x01", b"\x02"]}, "l": {"L": [{"S": "x"}, {"N": "3"}, {"B": b"\x03"}, {"L": []}]},
    "m": {"M": {"inner": {"M": {"deep": {"SS": ["z"]}}}, "bin": {"B": b"\x04"}, "none": {"M": {}}}},
}


def test_every_kind_of_attribute_value_comes_back_as_it_was_written(runtime, table):
    ddb = runtime.client("dynamodb")
    item = {**key("p", "1"), "kind": {"S": "k"}, **EVERY_TYPE}
    plain = {**key("p", "2"), "kind": {"S": "k"}, **{k: v for k, v in EVERY_TYPE.items() if k in ("s", "n", "m")}}
    ddb.put_item(TableName=table, Item=item)
    assert ddb.put_item(TableName=table, Item=plain, ReturnValues="ALL_OLD").get("Attributes") is None
    assert ddb.get_item(TableName=table, Key=key("p", "1"), ConsistentRead=True)["Item"] == item
    assert ddb.query(TableName=table, KeyConditionExpression="pk = :p",
                     ExpressionAttributeValues={":p": {"S": "p"}})["Items"] == [item, plain]
    assert ddb.scan(TableName=table)["Items"] == [item, plain]
    assert ddb.batch_get_item(RequestItems={table: {"Keys": [key("p", "1")]}})["Responses"][table] == [item]
    assert ddb.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": key("p", "2")}}]
                                  )["Responses"] == [{"Item": plain}]
    updated = ddb.update_item(TableName=table, Key=key("p", "2"), UpdateExpression="SET n = :n",
                              ExpressionAttributeValues={":n": {"N": "2"}}, ReturnValues="ALL_NEW")["Attributes"]
    assert updated == {**plain, "n": {"N": "2"}}
    assert ddb.delete_item(TableName=table, Key=key("p", "1"), ReturnValues="ALL_OLD")["Attributes"] == item


def test_a_query_reads_its_partition_in_key_order_page_by_page(runtime, table):
    ddb = runtime.client("dynamodb")
    for pk in ("a", "b", "c"):
        for n in (3, 1, 4, 0, 2):
            ddb.put_item(TableName=table, Item={**key(pk, f"{n:02}"), "kind": {"S": f"odd-{n % 2}"},
                                                "n": {"N": str(n)}})

    def sort_keys(**query: Any) -> list[str]:
        return [i["sk"]["S"] for i in ddb.query(TableName=table, **query)["Items"]]

    b = {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "b"}}}
    assert sort_keys(**b) == ["00", "01", "02", "03", "04"]
    assert sort_keys(**b, ScanIndexForward=False) == ["04", "03", "02", "01", "00"]
    first = ddb.query(TableName=table, **b, Limit=2)
    assert [i["sk"]["S"] for i in first["Items"]] == ["00", "01"] and first["LastEvaluatedKey"] == key("b", "01")
    assert sort_keys(**b, ExclusiveStartKey=first["LastEvaluatedKey"]) == ["02", "03", "04"]
    assert sort_keys(KeyConditionExpression="pk = :p AND sk BETWEEN :from AND :to",
                     ExpressionAttributeValues={":p": {"S": "c"}, ":from": {"S": "01"}, ":to": {"S": "03"}}
                     ) == ["01", "02", "03"]
    assert sort_keys(KeyConditionExpression="pk = :p", FilterExpression="n > :n",
                     ExpressionAttributeValues={":p": {"S": "a"}, ":n": {"N": "2"}}) == ["03", "04"]
    assert sort_keys(KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "none"}}) == []
    across = ddb.query(TableName=table, IndexName="by-kind", KeyConditionExpression="kind = :k",
                       ExpressionAttributeValues={":k": {"S": "odd-1"}})["Items"]
    assert sorted((i["pk"]["S"], i["sk"]["S"]) for i in across) == [(pk, sk) for pk in "abc" for sk in ("01", "03")]


def test_a_cancelled_transaction_leaves_every_item_as_it_was(runtime, table):
    ddb = runtime.client("dynamodb")
    ddb.put_item(TableName=table, Item={**key("t", "kept"), "v": {"N": "1"}})
    ddb.put_item(TableName=table, Item={**key("t", "doomed"), "v": {"N": "1"}})
    writes = [
        {"Put": {"TableName": table, "Item": {**key("t", "new"), "v": {"N": "1"}}}},
        {"Update": {"TableName": table, "Key": key("t", "kept"), "UpdateExpression": "SET v = :v",
                    "ExpressionAttributeValues": {":v": {"N": "2"}}}},
        {"Delete": {"TableName": table, "Key": key("t", "doomed")}},
    ]
    refused = {"ConditionCheck": {"TableName": table, "Key": key("t", "absent"),
                                  "ConditionExpression": "attribute_exists(pk)"}}
    with pytest.raises(ddb.exceptions.TransactionCanceledException):
        ddb.transact_write_items(TransactItems=[*writes, refused])

    def stored() -> dict[str, str]:
        items = ddb.query(TableName=table, KeyConditionExpression="pk = :p",
                          ExpressionAttributeValues={":p": {"S": "t"}})["Items"]
        return {i["sk"]["S"]: i["v"]["N"] for i in items}

    assert stored() == {"doomed": "1", "kept": "1"}
    ddb.transact_write_items(TransactItems=writes)
    assert stored() == {"kept": "2", "new": "1"}


def test_an_item_written_over_and_over_is_kept_once(runtime, table):
    ddb = runtime.client("dynamodb")
    value = "x" * 10_000
    ddb.put_item(TableName=table, Item={**key("w", "1"), "v": {"S": value}})

    def overwrite() -> None:
        for version in range(200):
            ddb.put_item(TableName=table, Item={**key("w", "1"), "v": {"S": f"{value}{version}"}})
            ddb.update_item(TableName=table, Key=key("w", "1"), UpdateExpression="SET n = :n",
                            ExpressionAttributeValues={":n": {"N": str(version)}})

    # Its 400 versions would be 4 MB; one item and the allocator's noise are far less.
    assert retained_bytes(overwrite) < 400_000
