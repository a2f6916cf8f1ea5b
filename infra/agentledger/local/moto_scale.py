"""Where moto 5.2.5 keeps or does far more per request than AWS, growing with everything stored
before, the local runtime keeps and does what AWS would. Each of these was measured with 20 to 50
concurrent runs on one `serve` (2 cores): together they took memory from 250 MB growing to 3.7 GB
over 60 runs to a few hundred kB per run, and most of the CPU time from moto to the handlers.
moto_seams puts these in place of moto's own members."""
from __future__ import annotations

import copy
import threading
import types
from collections import defaultdict
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from moto.core.common_models import BaseModel
from moto.core.models import botocore_stubber
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

from .dynamodb_lock import BACKEND_LOCK

if TYPE_CHECKING:
    from collections.abc import Callable

    from moto.core.serialize import BaseJSONSerializer
    from moto.dynamodb.models import DynamoDBBackend
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent


def untracked_model(cls: type[BaseModel], *args: Any, **kwargs: Any) -> BaseModel:
    """A model object, untracked (in place of `BaseModel.__new__`). AWS forgets an item once it is
    overwritten or deleted. moto appends every model object it ever creates to its class's
    `instances_tracked` (for its /moto-api dashboard), so nothing is ever freed: every version of
    every DynamoDB item, every S3 object body, every log event, and a whole-table copy per
    TransactWriteItems (measured: 245 tables of copies kept after 5 runs; `serve` grew 250 MB to
    3.7 GB over 60 runs). The local runtime does not track them: what the backends still hold
    stays, the rest is freed. The dashboard, unused here, shows no models."""
    return super(BaseModel, cls).__new__(cls)


_items_backed_up: ContextVar[bool] = ContextVar("transaction_items_backed_up", default=False)


def transactions_back_up_only_what_they_write(original: Callable[..., Any]) -> Callable[..., Any]:
    """A cancelled TransactWriteItems leaves every item as it was. moto gets there by deep-copying
    each whole table a transaction names before it starts, so a transaction's cost grows with the
    table and runs under the backend lock that every other item operation waits for (measured:
    13% of all CPU time with 20 concurrent runs, and growing with each run). The items the
    transaction writes are all that a cancellation has to put back: this backs those up instead,
    and moto's whole-table copy becomes the table itself (tables_are_not_copied_for_transactions)."""
    def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
        with BACKEND_LOCK:  # no other operation between the backup and a restore
            try:
                backup = [_item_backup(self, operation) for operation in transact_items]
            except (KeyError, ValueError, TypeError, AttributeError, StopIteration):
                return original(self, transact_items)  # malformed: moto's own checks answer it
            token = _items_backed_up.set(True)
            try:
                return original(self, transact_items)
            except Exception:
                for table, hash_key, range_key, item in backup:
                    _put_back(table, hash_key, range_key, item)
                raise
            finally:
                _items_backed_up.reset(token)

    return transact_write_items


def tables_are_not_copied_for_transactions(copy_module: types.ModuleType) -> types.SimpleNamespace:
    """The `copy` module as moto's DynamoDB models see it: a table that a transaction names is not
    deep-copied while transactions_back_up_only_what_they_write has backed up its items."""
    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        if isinstance(value, Table) and _items_backed_up.get():
            return value
        return copy_module.deepcopy(value, memo)

    return types.SimpleNamespace(**{**vars(copy_module), "deepcopy": deepcopy})


def _item_backup(backend: DynamoDBBackend,
                 operation: dict[str, Any]) -> tuple[Table, DynamoType, DynamoType | None, Any]:
    [(kind, request)] = operation.items()
    table = backend.tables[request["TableName"]]
    attributes = request["Item"] if kind == "Put" else request["Key"]
    hash_key = DynamoType(attributes[table.hash_key_attr])
    range_key = DynamoType(attributes[table.range_key_attr]) if table.range_key_attr else None
    return table, hash_key, range_key, copy.deepcopy(table.get_item(hash_key, range_key))


def _put_back(table: Table, hash_key: DynamoType, range_key: DynamoType | None, item: Any) -> None:
    if range_key is None:
        if item is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = item
    elif item is None:
        table.items.get(hash_key, {}).pop(range_key, None)
    else:
        table.items[hash_key][range_key] = item


def lambda_tasks_share_one_client(original: Callable[..., Any]) -> Callable[..., Any]:
    """moto's interpreter builds a new boto3 Lambda client for every Lambda task it runs (measured:
    5% of all CPU time with 50 concurrent runs); the Step Functions service keeps its connections.
    Clients are safe to share between threads, so tasks share one per region."""
    clients: dict[tuple[str, str, bool], Any] = {}

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        key = (region, service, botocore_stubber.enabled)  # moto's own client depends on the last
        if key not in clients:
            clients[key] = original(region=region, service=service, state_credentials=state_credentials)
        return clients[key]

    return boto_client_for


# A deployment's state machines: one definition for all its executions, and few in all.
PARSED_DEFINITIONS_KEPT = 16


def definitions_are_parsed_once(original: Callable[[str], tuple[EvalComponent, Any]]) -> Any:
    """moto's interpreter parses the state machine's definition with ANTLR at every execution's
    start, and again at each CreateStateMachine (measured: 0.15 s of CPU time an execution, a
    tenth of a whole run's). The syntax tree depends on the definition alone and nothing writes
    to it, so each definition is parsed once; each execution still gets a program of its own,
    built from the tree (the interpreter's states hold an execution's state)."""
    trees: dict[str, Any] = {}  # ANTLR's syntax trees (antlr4 has no type hints)
    keeping = threading.Lock()

    def parse(definition: str) -> tuple[EvalComponent, Any]:
        tree = trees.get(definition)
        if tree is None:
            program, tree = original(definition)
            with keeping:
                if len(trees) < PARSED_DEFINITIONS_KEPT:
                    trees[definition] = tree
            return program, tree
        return Preprocessor().visit(tree), tree

    return staticmethod(parse)


def queries_read_only_their_partition(original: Callable[..., Any]) -> Callable[..., Any]:
    """A Query reads one partition, of the table or of an index. moto's reads every item of the
    table, sorted, to keep those with the partition key (measured: a quarter of all CPU time with
    50 concurrent runs in the ledger, and growing with each run; and a page of the sharded run
    listing, 9 index queries, took 5 to 9 s over 200 runs' items, past the API's 29 s under load).
    The table's items are narrowed to that partition while moto's query runs: for the table, by
    its key; for an index, by one pass over the items for the index's partition key."""
    def query(self: Table, hash_key: DynamoType | None, range_comparison: Any, range_objs: Any, limit: Any,
              exclusive_start_key: Any, scan_index_forward: Any, projection_expressions: Any,
              index_name: str | None = None, *args: Any, **kwargs: Any) -> Any:
        def moto_query() -> Any:
            return original(self, hash_key, range_comparison, range_objs, limit, exclusive_start_key,
                            scan_index_forward, projection_expressions, index_name, *args, **kwargs)

        if hash_key is None:
            return moto_query()
        with BACKEND_LOCK:  # no other operation sees the narrowed table
            everything = self.items
            if index_name is None:
                partition = everything.get(hash_key)
                self.items = defaultdict(dict, {} if partition is None else {hash_key: partition})
            else:
                self.items = _index_partition(self, index_name, hash_key)
            try:
                return moto_query()
            finally:
                self.items = everything

    return query


def _index_partition(table: Table, index_name: str, hash_key: DynamoType) -> defaultdict[Any, Any]:
    """The table's items (as `Table.items` holds them) whose index partition key is `hash_key`."""
    index = table.get_index(index_name)
    attribute = next(key["AttributeName"] for key in index.schema if key["KeyType"] == "HASH")

    def in_partition(item: Any) -> bool:
        value = item.attrs.get(attribute)  # absent from items outside a sparse index
        return value is not None and bool(value == hash_key)

    narrowed: defaultdict[Any, Any] = defaultdict(dict)
    if not table.range_key_attr:
        narrowed.update((key, item) for key, item in table.items.items() if in_partition(item))
        return narrowed
    for key, rows in table.items.items():
        kept = {range_key: item for range_key, item in rows.items() if in_partition(item)}
        if kept:
            narrowed[key] = kept
    return narrowed


def attribute_values_are_sent_as_stored(original: Callable[..., Any]) -> Callable[..., Any]:
    """moto keeps DynamoDB items in their wire form ({"S": ...}, {"M": {...}}) and then serializes
    each attribute value member by member through the service model, as though it were any
    structure: most of the CPU time of a busy local stack (measured: 44% with 20 concurrent runs,
    every ledger read paying for every attribute of every record). An attribute value is already
    what goes on the wire, so it is sent as it is; one holding a binary value (bytes, which the
    serializer base64-encodes) still goes through moto's serializer."""
    def serialize_structure(self: BaseJSONSerializer, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if shape.name == "AttributeValue" and _holds_no_binary(value) \
                and self.operation_model.service_model.service_name == "dynamodb":
            self._default_serialize(serialized, value, shape, key)
            return
        original(self, serialized, value, shape, key)

    return serialize_structure


def _holds_no_binary(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_holds_no_binary(member) for member in value.values())
    if isinstance(value, list):
        return all(_holds_no_binary(member) for member in value)
    return not isinstance(value, (bytes, bytearray))

