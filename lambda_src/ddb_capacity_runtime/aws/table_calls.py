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
from .error_codes import describe_error

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


def tick_quota(
    dynamodb: DynamoDBClient, configured: int, read: tuple[int, int] | None = None
) -> tuple[tuple[int, int], str | None]:
    """The per-table read and write quotas a tick bounds each dimension by, and why they
    are the ``configured`` one when the account's could not be read (else None): ``read``,
    the quotas a sharded tick read for its batches, where given (no call; they only raise
    ``configured``), else `account_table_quota`."""
    if read is not None:
        return (max(configured, read[0]), max(configured, read[1])), None
    try:
        return account_table_quota(dynamodb, configured), None
    except Exception as exc:
        return (configured, configured), (
            f"dynamodb:DescribeLimits: {describe_error(exc)}; the configured table quota "
            f"({configured:,}) bounds this tick"
        )


QUOTA_FIELDS = ("TableMaxReadCapacityUnits", "TableMaxWriteCapacityUnits")


def account_table_quota(dynamodb: DynamoDBClient, configured: int) -> tuple[int, int]:
    """The per-table read and write quotas to bound each dimension by: for each, the larger
    of ``configured`` and the account's own (DescribeLimits' ``TableMaxReadCapacityUnits``,
    ``TableMaxWriteCapacityUnits``), at most `MAX_TABLE_QUOTA`. The answer is untrusted: a
    value that is not a whole number is no quota (``configured`` for its dimension), and
    one can only raise ``configured`` (a smaller quota read never lowers what the tick may
    keep). Raises ValueError when the answer holds no quota; the call's own errors pass
    through."""
    answer = dynamodb.describe_limits()
    found = [v if is_whole(v := answer.get(key), 1) else 0 for key in QUOTA_FIELDS]
    if not any(found):
        raise ValueError(
            f"DescribeLimits: no table quota in the answer (TableMaxReadCapacityUnits "
            f"{answer.get('TableMaxReadCapacityUnits')!r:.40}, TableMaxWriteCapacityUnits "
            f"{answer.get('TableMaxWriteCapacityUnits')!r:.40}); expected whole numbers of "
            f"capacity units"
        )
    read, write = (min(MAX_TABLE_QUOTA, max(configured, v)) for v in found)
    return read, write
