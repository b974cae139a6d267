"""Runs in: tests.

The provisioned table the on-demand windows' synth tests give windows to, declared or
learned."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import Capacity, ProvisionedTable


def orders(stack: cdk.Stack, id: str = "Orders") -> ProvisionedTable:
    """A table of reads 5 to 1,000 and writes 5 to 500."""
    return ProvisionedTable(
        stack,
        id,
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=5, max_capacity=1000),
        write=Capacity(min_capacity=5, max_capacity=500),
    )
