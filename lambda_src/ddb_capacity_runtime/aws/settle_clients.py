"""Runs in: the settle function (ddb_capacity_runtime.settle).

The settle function's clients: DynamoDB with boto3's defaults, and its reads (traffic,
scalable targets' minimums, a hold store's holds) bounded so that a read that fails only
leaves the table at its mark. Apart from `clients` so that no other function's asset
carries them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .clients import CONNECT_TIMEOUT_SECONDS

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient


def dynamodb_client() -> DynamoDBClient:
    """A DynamoDB client with boto3's default configuration (the settle function's)."""
    import boto3

    return boto3.client("dynamodb")


SETTLE_READ_ATTEMPTS = 2
SETTLE_READ_TIMEOUT_SECONDS = 5
"""The settle function's read of its table's traffic: at most this many attempts, each at most
`CONNECT_TIMEOUT_SECONDS` to connect and this long to read an answer (some 15 s in all): a read
that fails only leaves the table at its mark."""
SETTLE_MINIMUMS_READ_TIMEOUT_SECONDS = 3
"""The settle function's read of its table's scalable targets (their live minimums): as many
attempts, each at most this long to read its short answer (some 11 s in all; with the traffic's
and 2 pages of the hold store's, 48 s, within the function's shortest timeout of 60 s): a read
that fails only leaves the table at its mark."""


def _settle_reads(read_timeout: float) -> Any:
    """The configuration of the settle function's read clients: `SETTLE_READ_ATTEMPTS`
    attempts, each at most ``read_timeout`` seconds to read an answer."""
    from botocore.config import Config

    return Config(
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=read_timeout,
        retries={"mode": "standard", "total_max_attempts": SETTLE_READ_ATTEMPTS},
    )


def settle_cloudwatch_client() -> CloudWatchClient:
    """The settle function's CloudWatch client, bounded (`SETTLE_READ_TIMEOUT_SECONDS`)."""
    import boto3

    return boto3.client("cloudwatch", config=_settle_reads(SETTLE_READ_TIMEOUT_SECONDS))


def settle_autoscaling_client() -> ApplicationAutoScalingClient:
    """The settle function's Application Auto Scaling client, bounded
    (`SETTLE_MINIMUMS_READ_TIMEOUT_SECONDS`)."""
    import boto3

    config = _settle_reads(SETTLE_MINIMUMS_READ_TIMEOUT_SECONDS)
    return boto3.client("application-autoscaling", config=config)


def settle_store_client() -> DynamoDBClient:
    """The settle function's DynamoDB client for its read of a hold store, bounded as its
    read of the minimums (`SETTLE_MINIMUMS_READ_TIMEOUT_SECONDS`: some 11 s a page)."""
    import boto3

    return boto3.client("dynamodb", config=_settle_reads(SETTLE_MINIMUMS_READ_TIMEOUT_SECONDS))
