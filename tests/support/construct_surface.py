"""A partition key, two capacity ranges and a settled provisioned table, as the construct
tests of surface and order make them."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import (
    Capacity,
    PrewarmMethod,
    ProvisionedTable,
)

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


SMALL = Capacity(min_capacity=1, max_capacity=10)


HIGH = Capacity(min_capacity=5, max_capacity=100, high_water_mark=1_000)


def settled(stack: cdk.Stack, id: str, options: Any) -> ProvisionedTable:
    return ProvisionedTable(
        stack,
        id,
        partition_key=PK,
        read=HIGH,
        write=SMALL,
        prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
        function_options=options,
    )
