"""Runs in: scaler Lambda, broker Lambda, settle Lambda, workers (the user's own jobs, in
direct mode), workstation (``ddb-capacity`` in direct mode, examples).

DynamoDB's calls on one table that the run-time code makes as they are: DescribeTable,
UpdateTable and UntagResource; and the account's table quota (DescribeLimits). Clients are
passed in; nothing here decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..core.names import MAX_TABLE_QUOTA
from ..core.validators import is_whole

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def describe(dynamodb: DynamoDBClient, name: str) -> dict[str, Any]:
    """DescribeTable's ``Table`` of ``name``."""
    return cast("dict[str, Any]", dynamodb.describe_table(TableName=name)["Table"])


def update(dynamodb: DynamoDBClient, request: Mapping[str, Any]) -> None:
    """One UpdateTable with the arguments of ``request``."""
    dynamodb.update_table(**request)


def untag(dynamodb: DynamoDBClient, arn: str, keys: Sequence[str]) -> None:
    """Remove the tags ``keys`` from the table ``arn`` (one UntagResource)."""
    dynamodb.untag_resource(ResourceArn=arn, TagKeys=list(keys))


def account_table_quota(dynamodb: DynamoDBClient, configured: int) -> int:
    """The per-table quota to bound levels and minimums by: the larger of ``configured`` and
    the account's own (DescribeLimits' ``TableMaxReadCapacityUnits`` and
    ``TableMaxWriteCapacityUnits``, the larger of the two), at most `MAX_TABLE_QUOTA`. The
    answer is untrusted: a value that is not a whole number in range is no quota, and it can
    only raise ``configured`` (a smaller quota read never lowers what the tick may keep).
    Raises ValueError when the answer holds no quota; the call's own errors pass through."""
    answer = dynamodb.describe_limits()
    found = [
        value
        for key in ("TableMaxReadCapacityUnits", "TableMaxWriteCapacityUnits")
        if is_whole(value := answer.get(key), 1)
    ]
    if not found:
        raise ValueError(
            f"DescribeLimits: no table quota in the answer (TableMaxReadCapacityUnits "
            f"{answer.get('TableMaxReadCapacityUnits')!r:.40}, TableMaxWriteCapacityUnits "
            f"{answer.get('TableMaxWriteCapacityUnits')!r:.40}); expected whole numbers of "
            f"capacity units"
        )
    return min(MAX_TABLE_QUOTA, max(configured, *found))
