"""Runs in: workers (the user's own jobs).

The workers' data-plane calls on the user's own tables, as they are: one Scan page, one
BatchWriteItem, and the scan cursor table's CreateTable, GetItem and PutItem. Clients are
passed in; the pacing, retries and cursor rules stay with the workers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from ..core.errors import ScanError
from .error_codes import error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["CURSOR_KEY", "create_cursor_table", "get_consistent", "put", "scan_page", "write_batch"]


def scan_page(dynamodb: DynamoDBClient, request: Mapping[str, Any]) -> dict[str, Any]:
    """One Scan page with the arguments of ``request``."""
    return cast("dict[str, Any]", dynamodb.scan(**request))


def write_batch(
    dynamodb: DynamoDBClient, table: str, items: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """One BatchWriteItem putting ``items`` (attribute-value form) into ``table``, with the
    capacity it consumed."""
    return cast(
        "dict[str, Any]",
        dynamodb.batch_write_item(
            RequestItems={table: [{"PutRequest": {"Item": dict(item)}} for item in items]},
            ReturnConsumedCapacity="TOTAL",
        ),
    )


def get_consistent(
    dynamodb: DynamoDBClient, table: str, key: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The item of ``table`` at ``key``, read strongly consistent; None when there is none."""
    item = dynamodb.get_item(TableName=table, ConsistentRead=True, Key=dict(key)).get("Item")
    return cast("dict[str, Any] | None", item)


def put(dynamodb: DynamoDBClient, table: str, item: Mapping[str, Any]) -> None:
    """Put ``item`` into ``table`` (one PutItem)."""
    dynamodb.put_item(TableName=table, Item=dict(item))


CURSOR_KEY = [
    {"AttributeName": "scan_id", "KeyType": "HASH"},
    {"AttributeName": "segment", "KeyType": "RANGE"},
]
"""The cursor table's key: the scan's id, then the segment."""


def create_cursor_table(dynamodb: DynamoDBClient, name: str) -> None:
    """Create the cursor table (on-demand: it sees a few writes a second at most) and wait.
    A table of that name with the cursor's key is kept as it is, so a job that creates it
    can be run again to resume; one with another key is refused (ScanError), naming both."""
    try:
        dynamodb.create_table(
            TableName=name,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": "scan_id", "AttributeType": "S"},
                {"AttributeName": "segment", "AttributeType": "N"},
            ],
            KeySchema=cast("Any", CURSOR_KEY),
        )
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException":
            raise
        key = dynamodb.describe_table(TableName=name)["Table"].get("KeySchema")
        if key != CURSOR_KEY:
            raise ScanError(
                f"create_cursor_table: table {name!r} exists with the key {key}; a cursor "
                f"table's is {CURSOR_KEY}: name another table"
            ) from None
    dynamodb.get_waiter("table_exists").wait(TableName=name)
