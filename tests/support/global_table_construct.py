"""Global table stacks, as the global-table construct tests make them."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from constructs_pkg import (
    GlobalTableCapacity,
)

KEY = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


def global_table(
    stack: Construct,
    *,
    read: dynamodb.Capacity | None = None,
    billing: dynamodb.Billing | None = None,
    **extra: Any,
) -> dynamodb.TableV2:
    return dynamodb.TableV2(
        stack,
        "Orders",
        partition_key=KEY,
        billing=billing
        or dynamodb.Billing.provisioned(
            read_capacity=read or dynamodb.Capacity.autoscaled(min_capacity=5, max_capacity=100),
            write_capacity=dynamodb.Capacity.autoscaled(min_capacity=5, max_capacity=50),
        ),
        global_secondary_indexes=[
            dynamodb.GlobalSecondaryIndexPropsV2(
                index_name="byCustomer",
                partition_key=dynamodb.Attribute(name="c", type=dynamodb.AttributeType.STRING),
            )
        ],
        replicas=[
            dynamodb.ReplicaTableProps(
                region="eu-west-1",
                read_capacity=dynamodb.Capacity.autoscaled(min_capacity=10, max_capacity=200),
            )
        ],
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True
        ),
        **extra,
    )


def new_stack(app: cdk.App | None = None) -> cdk.Stack:
    return cdk.Stack(app or cdk.App(), "Global", env=cdk.Environment(region="us-east-1"))


def make(**kwargs: Any) -> tuple[cdk.Stack, GlobalTableCapacity]:
    stack = new_stack()
    table = global_table(stack, **kwargs.pop("table", {}))
    return stack, GlobalTableCapacity(stack, "Capacity", table=table, **kwargs)
