"""A scaler test's partition key and its feed table (a provisioned table with a GSI)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import (
    Capacity,
    ProvisionedTable,
)

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


def feed(stack: cdk.Stack) -> ProvisionedTable:
    table = ProvisionedTable(
        stack,
        "Feed",
        partition_key=PK,
        read=Capacity(min_capacity=50, max_capacity=4000),
        write=Capacity(min_capacity=20, max_capacity=1000),
    )
    table.add_global_secondary_index(
        index_name="byTopic",
        partition_key=PK,
        read=Capacity(min_capacity=5, max_capacity=100),
        write=Capacity(min_capacity=5, max_capacity=100),
    )
    return table
