"""Runs in: scaler Lambda, broker Lambda, settle Lambda, workers (the user's own jobs, in
direct mode), workstation (``ddb-capacity`` in direct mode, examples).

DynamoDB's calls on one table that the run-time code makes as they are: DescribeTable,
UpdateTable and UntagResource. Clients are passed in; nothing here decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

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
