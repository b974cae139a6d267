"""The AWS clients the run-time code uses, made once and passed in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Clients:
    dynamodb: Any
    autoscaling: Any
    cloudwatch: Any
    tagging: Any


def make_clients(**kwargs: Any) -> Clients:
    """boto3 clients with adaptive retries (throttled control-plane calls back off)."""
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "adaptive", "max_attempts": 10})
    return Clients(
        boto3.client("dynamodb", config=config, **kwargs),
        boto3.client("application-autoscaling", config=config, **kwargs),
        boto3.client("cloudwatch", config=config, **kwargs),
        boto3.client("resourcegroupstaggingapi", config=config, **kwargs),
    )
