"""Stream-signal stacks of a provisioned table with a stream."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import (
    Capacity,
    ProvisionedTable,
)
from tests.support.capacity_requests_construct import PK

CAPACITY = Capacity(min_capacity=5, max_capacity=500)


def provisioned(stack: cdk.Stack, id: str = "Orders", **props: Any) -> ProvisionedTable:
    return ProvisionedTable(stack, id, partition_key=PK, read=CAPACITY, write=CAPACITY, **props)


def with_stream(stack: cdk.Stack, id: str = "Events") -> dynamodb.Table:
    """A provisioned table of the app with its own stream."""
    return dynamodb.Table(
        stack,
        id,
        partition_key=PK,
        billing_mode=dynamodb.BillingMode.PROVISIONED,
        stream=dynamodb.StreamViewType.NEW_IMAGE,
    )
