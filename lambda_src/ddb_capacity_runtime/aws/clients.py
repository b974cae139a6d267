"""Runs in: scaler Lambda, broker Lambda, settle Lambda, workers (the user's own jobs, in
direct mode), workstation (``ddb-capacity``, examples, benchmarks).

The AWS clients the run-time code uses, made once and passed in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_resourcegroupstaggingapi import ResourceGroupsTaggingAPIClient


@dataclass(frozen=True)
class Clients:
    dynamodb: DynamoDBClient
    autoscaling: ApplicationAutoScalingClient
    cloudwatch: CloudWatchClient
    tagging: ResourceGroupsTaggingAPIClient
    #: SQS, for the batches of a sharded tick (None where nothing sends them)
    sqs: Any = None


def make_clients(*, with_sqs: bool = False, **kwargs: Any) -> Clients:
    """boto3 clients with adaptive retries (throttled control-plane calls back off); an SQS
    client too ``with_sqs``."""
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "adaptive", "max_attempts": 10})
    return Clients(
        boto3.client("dynamodb", config=config, **kwargs),
        boto3.client("application-autoscaling", config=config, **kwargs),
        boto3.client("cloudwatch", config=config, **kwargs),
        boto3.client("resourcegroupstaggingapi", config=config, **kwargs),
        boto3.client("sqs", config=config, **kwargs) if with_sqs else None,
    )


def dynamodb_client() -> DynamoDBClient:
    """A DynamoDB client with boto3's default configuration (the settle function's)."""
    import boto3

    return boto3.client("dynamodb")
