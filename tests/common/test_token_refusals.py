"""A CDK token where the app must know the value when it is built is refused where the
construct is made, naming the prop, never passed on as its numeric stand-in (about
-1.9e289: a function's environment, a capacity compared with it) nor left to aws-cdk-lib,
which stops with an error naming no prop (a range, a map key, a Duration's unit, an id)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import (
    Capacity,
    CapacityConfigError,
    CapacityRequests,
    GlobalTableCapacity,
    PrewarmMethod,
    ProvisionedTable,
    ThrottleAwareScaler,
)

KEY = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
SMALL = Capacity(min_capacity=5, max_capacity=100)


def number(stack: cdk.Stack) -> Any:
    return cdk.CfnParameter(stack, "Number", type="Number").value_as_number


def text(stack: cdk.Stack) -> Any:
    return cdk.CfnParameter(stack, "Text").value_as_string


def table(stack: cdk.Stack, **props: Any) -> ProvisionedTable:
    return ProvisionedTable(
        stack, "Orders", partition_key=KEY, **{"read": SMALL, "write": SMALL, **props}
    )


def scaler(stack: cdk.Stack, **props: Any) -> ThrottleAwareScaler:
    return ThrottleAwareScaler(stack, "Scaler", **{"tag_key": "team", **props})


def global_table(stack: cdk.Stack) -> dynamodb.TableV2:
    scaled = dynamodb.Capacity.autoscaled(max_capacity=100)
    billing = dynamodb.Billing.provisioned(read_capacity=scaled, write_capacity=scaled)
    return dynamodb.TableV2(stack, "Global", partition_key=KEY, billing=billing)


CASES: dict[str, tuple[str, Callable[[cdk.Stack], object]]] = {
    # the scaler's environment read CAPACITY_TABLE_QUOTA="-1888...": every tick failed
    "scaler table_quota": (
        "ThrottleAwareScaler Test/Scaler: table_quota",
        lambda s: scaler(s, table_quota=number(s)),
    ),
    "table table_quota": (
        "ProvisionedTable Test/Orders: table_quota",
        lambda s: table(s, table_quota=number(s)),
    ),
    "requests table_quota": (
        "CapacityRequests Test/Requests: table_quota",
        lambda s: CapacityRequests(s, "Requests", tables=[table(s)], table_quota=number(s)),
    ),
    "global table_quota": (
        "GlobalTableCapacity Test/Capacity: table_quota",
        lambda s: GlobalTableCapacity(s, "Capacity", table=global_table(s), table_quota=number(s)),
    ),
    # no settle step: the table stayed at its mark
    "settled high_water_mark": (
        "ProvisionedTable Test/Orders table read: high_water_mark",
        lambda s: table(
            s,
            prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
            read=Capacity(min_capacity=5, max_capacity=100, high_water_mark=number(s)),
        ),
    ),
    "target_utilization_percent": (
        "ProvisionedTable Test/Orders table write: target_utilization_percent",
        lambda s: table(
            s,
            write=Capacity(min_capacity=5, max_capacity=100, target_utilization_percent=number(s)),
        ),
    ),
    "tag_key": ("ThrottleAwareScaler Test/Scaler: tag_key", lambda s: scaler(s, tag_key=text(s))),
    "tick": (
        "ThrottleAwareScaler Test/Scaler: tick",
        lambda s: scaler(s, tick=Duration.minutes(number(s))),
    ),
    "tick in seconds": (
        "ThrottleAwareScaler Test/Scaler: tick",
        lambda s: scaler(s, tick=Duration.seconds(number(s))),
    ),
    "pinned_at_max_for": (
        "ThrottleAwareScaler Test/Scaler: pinned_at_max_for",
        lambda s: scaler(s, pinned_at_max_for=Duration.minutes(number(s))),
    ),
    "throttled_for": (
        "ThrottleAwareScaler Test/Scaler: throttled_for",
        lambda s: scaler(s, throttled_for=Duration.minutes(number(s))),
    ),
    "hot_key_for": (
        "ThrottleAwareScaler Test/Scaler: hot_key_for",
        lambda s: scaler(s, hot_key_for=Duration.minutes(number(s))),
    ),
    "index_name": (
        "ProvisionedTable Test/Orders: index_name",
        lambda s: table(s).add_global_secondary_index(
            index_name=text(s), partition_key=KEY, read=SMALL, write=SMALL
        ),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_token_the_app_must_know_is_refused_naming_the_prop(case: str) -> None:
    # GIVEN a prop given a CfnParameter's value
    prop, build = CASES[case]
    stack = cdk.Stack(cdk.App(), "Test")
    # WHEN the construct is made THEN it is refused there, naming the prop
    with pytest.raises(CapacityConfigError) as caught:
        build(stack)
    said = str(caught.value)
    assert said.startswith(f"{prop} must be known when the app is built ("), said
    assert "got a token (a CfnParameter's or another resource's value): give " in said


def test_a_token_high_water_mark_is_still_taken_as_warm_throughput() -> None:
    # GIVEN a token mark with the default prewarm: CloudFormation takes it as given
    stack = cdk.Stack(cdk.App(), "Test")
    mark = number(stack)
    # WHEN the table is made THEN the mark is its warm throughput
    orders = table(stack, read=Capacity(min_capacity=5, max_capacity=100, high_water_mark=mark))
    assert orders.capacity("read").high_water_mark is mark
