"""ThrottleAwareScaler's ``overrides``: a table named by its name or by its ``table_name``
token is checked alike; a table whose own ranges are the scaler's bounds (a
``ProvisionedTable``'s, a global table replica's) cannot be overridden, its ranges being
read from its scalable targets; what the template writes is what the Lambda reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template

from constructs_pkg import (
    Capacity,
    CapacityConfigError,
    GlobalTableCapacity,
    ProvisionedTable,
    ThrottleAwareScaler,
)
from ddb_capacity_runtime.core.settings import ScalerConfig

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


def orders(stack: cdk.Stack) -> ProvisionedTable:
    return ProvisionedTable(
        stack,
        "T",
        table_name="Orders",
        partition_key=PK,
        read=Capacity(min_capacity=5, max_capacity=100),
        write=Capacity(min_capacity=5, max_capacity=100),
    )


def plain(stack: cdk.Stack, id: str, name: str | None = None) -> dynamodb.Table:
    return dynamodb.Table(
        stack,
        id,
        table_name=name,
        partition_key=PK,
        billing_mode=dynamodb.BillingMode.PROVISIONED,
    )


def overrides_env(stack: cdk.Stack) -> Any:
    (function,) = Template.from_stack(stack).find_resources("AWS::Lambda::Function").values()
    return function["Properties"]["Environment"]["Variables"]["SCALER_OVERRIDES"]


BOUNDED = (
    "ThrottleAwareScaler Test/Scaler: overrides name table Test/T ('Orders'), whose range and "
    "target the scaler takes from its ProvisionedTable's read= and write=: the table's "
    "scalable targets hold them and a tick reads them there, so an override would change "
    "nothing; set them in its ProvisionedTable's read= and write="
)


@pytest.mark.parametrize("by_token", [False, True])
@pytest.mark.parametrize("override", [{"min": 5}, {"minn": 500}, {"min": 500}, {"max": 300}])
def test_an_override_of_a_provisioned_table_is_refused_saying_where_its_ranges_are_set(
    stack: cdk.Stack, by_token: bool, override: dict[str, Any]
) -> None:
    """By its name or its table_name: refused, never written over (or under) the
    table's ranges."""
    table = orders(stack)
    key = table.table_name if by_token else "Orders"
    with pytest.raises(CapacityConfigError) as caught:
        ThrottleAwareScaler(stack, "Scaler", tables=[table], overrides={key: override})
    assert str(caught.value).startswith(BOUNDED)


@pytest.mark.parametrize("by_token", [False, True])
def test_an_override_of_a_provisioned_table_added_later_is_refused_when_it_is_added(
    stack: cdk.Stack, by_token: bool
) -> None:
    table = orders(stack)
    key = table.table_name if by_token else "Orders"
    scaler = ThrottleAwareScaler(stack, "Scaler", overrides={key: {"max": 300}})
    with pytest.raises(CapacityConfigError) as caught:
        table.enable_throttle_aware_scaling(scaler)
    assert str(caught.value).startswith(BOUNDED)


def test_an_override_of_a_replica_is_refused_saying_where_its_ranges_are_set() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Global", env=cdk.Environment(region="us-east-1"))
    table = dynamodb.TableV2(
        stack,
        "Orders",
        table_name="orders",
        partition_key=PK,
        billing=dynamodb.Billing.provisioned(
            read_capacity=dynamodb.Capacity.autoscaled(max_capacity=100),
            write_capacity=dynamodb.Capacity.autoscaled(max_capacity=50),
        ),
        replicas=[dynamodb.ReplicaTableProps(region="eu-west-1")],
    )
    capacity = GlobalTableCapacity(stack, "Capacity", table=table)
    with pytest.raises(CapacityConfigError) as caught:
        ThrottleAwareScaler(stack, "Scaler", tables=[capacity], overrides={"orders": {"max": 9}})
    assert (
        "overrides name table Global/Orders ('orders'), whose range and target the scaler "
        "takes from its replica's Capacity.autoscaled(...) in us-east-1" in str(caught.value)
    )


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            {"minn": 500},
            "table Test/Plain: override: unknown key 'minn'; allowed: min, max, target, read, "
            "write",
        ),
        ({"min": 500, "max": 100}, "table Test/Plain read: min (500) must not be above max (100)"),
        (
            {"write": {"max": 50_000}},
            "table Test/Plain write: override write.max must be a whole number of capacity "
            "units from 1 to 40000",
        ),
    ],
)
def test_an_override_by_table_name_token_is_checked_as_one_by_name(
    stack: cdk.Stack, override: dict[str, Any], message: str
) -> None:
    table = plain(stack, "Plain")
    with pytest.raises(CapacityConfigError) as caught:
        ThrottleAwareScaler(stack, "Scaler", tables=[table], overrides={table.table_name: override})
    assert str(caught.value).startswith(f"ThrottleAwareScaler Test/Scaler: {message}")


def test_a_token_no_managed_table_has_is_checked_too(stack: cdk.Stack) -> None:
    elsewhere = plain(stack, "Elsewhere")
    with pytest.raises(CapacityConfigError) as caught:
        ThrottleAwareScaler(
            stack, "Scaler", tag_key="team", overrides={elsewhere.table_name: {"mx": 5}}
        )
    assert str(caught.value).startswith(
        "ThrottleAwareScaler Test/Scaler: table (named at deploy time): override: unknown key 'mx'"
    )


@pytest.mark.parametrize(
    "key", [lambda t: "plain-orders", lambda t: t.table_name], ids=["name", "token"]
)
def test_a_table_made_in_the_app_may_be_named_by_its_name_or_its_token(
    stack: cdk.Stack, key: Callable[[dynamodb.Table], str]
) -> None:
    """The name given to a table made in the app is a name the scaler manages, and what
    the Lambda reads back is the override as given."""
    table = plain(stack, "Plain", "plain-orders")
    scaler = ThrottleAwareScaler(
        stack, "Scaler", tables=[table], overrides={key(table): {"max": 300, "write": {"min": 7}}}
    )
    assert scaler.node.validate() == []
    raw = overrides_env(stack)
    if isinstance(raw, dict):  # {"Fn::Join": [...]}: the table's Ref is its name
        raw = "".join(p if isinstance(p, str) else "plain-orders" for p in raw["Fn::Join"][1])
    config = ScalerConfig.from_env({"SCALER_TABLES": "plain-orders", "SCALER_OVERRIDES": raw})
    limits = config.limits("plain-orders", {})
    assert (limits["read"].max_capacity, limits["write"].max_capacity) == (300, 300)
    assert (limits["read"].min_capacity, limits["write"].min_capacity) == (5, 7)


def test_a_table_named_twice_is_refused(stack: cdk.Stack) -> None:
    table = plain(stack, "Plain", "plain-orders")
    scaler = ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[table],
        overrides={"plain-orders": {"max": 300}, table.table_name: {"max": 200}},
    )
    assert scaler.node.validate() == [
        "ThrottleAwareScaler Test/Scaler: overrides name table Test/Plain ('plain-orders') "
        "twice, by its name and by its table_name: give its override once"
    ]


@pytest.mark.parametrize("setting", ["min", "max"])
def test_a_bool_where_a_whole_number_is_expected_is_refused(stack: cdk.Stack, setting: str) -> None:
    # GIVEN an override whose min or max is True (which the Lambda would read as 1)
    given = {"min": 1, "max": 10, setting: True}
    table = dynamodb.Table.from_table_name(stack, "Imported", "orders")
    # WHEN the scaler is made THEN it is refused, naming the table and the setting
    with pytest.raises(CapacityConfigError) as caught:
        ThrottleAwareScaler(stack, "Scaler", tables=[table], overrides={"orders": given})
    assert str(caught.value) == (
        f"ThrottleAwareScaler Test/Scaler: table orders read: override {setting} must be a "
        "whole number of capacity units from 1 to 40000 (the table quota, "
        "CAPACITY_TABLE_QUOTA); got True"
    )
