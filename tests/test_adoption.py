"""Adopting a table that already exists: TableCapacity gives a plain ``aws_dynamodb.Table``
everything ProvisionedTable gives, without changing its logical ID or any property that is
not about capacity, so CloudFormation updates the table instead of replacing it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template

from constructs_pkg import Capacity, CapacityConfigError, PrewarmMethod, TableCapacity
from ddb_capacity_tools.local_aws import deploy, physical_ids

CAPACITY_PROPERTIES = {"ProvisionedThroughput", "WarmThroughput"}


def app(outdir: Path, stack_name: str, *, adopt: bool, **capacity: Any) -> dict[str, Any]:
    """A stack with a plain Table and a GSI; with ``adopt``, TableCapacity on it. Returns
    the template."""
    application = cdk.App(outdir=str(outdir))
    # No BootstrapVersion parameter: moto fails an update that reuses a parameter's value.
    stack = cdk.Stack(
        application,
        stack_name,
        env=cdk.Environment(account="123456789012", region="us-east-1"),
        synthesizer=cdk.DefaultStackSynthesizer(generate_bootstrap_version_rule=False),
    )
    orders = dynamodb.Table(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PROVISIONED,
        read_capacity=10,
        write_capacity=10,
        removal_policy=cdk.RemovalPolicy.DESTROY,
        stream=dynamodb.StreamViewType.NEW_IMAGE,
    )
    orders.add_global_secondary_index(
        index_name="byCustomer",
        partition_key=dynamodb.Attribute(name="customer", type=dynamodb.AttributeType.STRING),
        read_capacity=5,
        write_capacity=5,
    )
    if adopt:
        TableCapacity(
            stack,
            "OrdersCapacity",
            table=orders,
            read=Capacity(min_capacity=20, max_capacity=500),
            write=Capacity(min_capacity=20, max_capacity=300, target_utilization_percent=60),
            indexes={
                "byCustomer": (
                    Capacity(min_capacity=5, max_capacity=100),
                    Capacity(min_capacity=5, max_capacity=100),
                )
            },
            **capacity,
        )
    application.synth()
    template: dict[str, Any] = json.loads((outdir / f"{stack_name}.template.json").read_text())
    return template


def without_capacity(props: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in props.items() if k not in CAPACITY_PROPERTIES}
    out["GlobalSecondaryIndexes"] = [
        {k: v for k, v in g.items() if k not in CAPACITY_PROPERTIES}
        for g in props.get("GlobalSecondaryIndexes", [])
    ]
    return out


def test_adopting_keeps_the_logical_id_and_every_other_property(tmp_path: Path) -> None:
    # GIVEN a stack with a plain table, synthesized before and after adding TableCapacity
    before = app(tmp_path / "before", "Shop", adopt=False)
    after = app(tmp_path / "after", "Shop", adopt=True)
    # THEN every resource keeps its logical ID and type
    kept = {k: v["Type"] for k, v in before["Resources"].items()}
    assert {k: after["Resources"][k]["Type"] for k in kept} == kept
    (table_id,) = [k for k, v in kept.items() if v == "AWS::DynamoDB::Table"]
    old, new = before["Resources"][table_id], after["Resources"][table_id]
    # AND the table's properties are the same apart from capacity
    assert without_capacity(new["Properties"]) == without_capacity(old["Properties"])
    assert {k: v for k, v in new.items() if k != "Properties"} == {
        k: v for k, v in old.items() if k != "Properties"
    }
    assert new["Properties"]["ProvisionedThroughput"] == {
        "ReadCapacityUnits": 20,
        "WriteCapacityUnits": 20,
    }
    # AND every dimension now has a scalable target and a target-tracking policy
    added = [v["Type"] for k, v in after["Resources"].items() if k not in kept]
    assert added.count("AWS::ApplicationAutoScaling::ScalableTarget") == 4
    assert added.count("AWS::ApplicationAutoScaling::ScalingPolicy") == 4
    targets = [
        v["Properties"]["TargetTrackingScalingPolicyConfiguration"]["TargetValue"]
        for v in after["Resources"].values()
        if v["Type"] == "AWS::ApplicationAutoScaling::ScalingPolicy"
    ]
    assert sorted(targets) == [60, 70, 70, 70]


@pytest.mark.parametrize("prewarm", list(PrewarmMethod))
def test_a_high_water_mark_on_an_adopted_table(prewarm: PrewarmMethod) -> None:
    stack = cdk.Stack(cdk.App(), "S")
    table = dynamodb.Table(
        stack, "T", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    )
    TableCapacity(
        stack,
        "C",
        table=table,
        prewarm=prewarm,
        read=Capacity(min_capacity=10, max_capacity=900, high_water_mark=4000),
        write=Capacity(min_capacity=10, max_capacity=900),
    )
    template = Template.from_stack(stack)
    if prewarm is PrewarmMethod.WARM_THROUGHPUT:
        template.has_resource_properties(
            "AWS::DynamoDB::Table",
            {
                "WarmThroughput": {"ReadUnitsPerSecond": 4000},
                "ProvisionedThroughput": {"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
            },
        )
        template.resource_count_is("Custom::CapacitySettle", 0)
    else:
        template.has_resource_properties(
            "AWS::DynamoDB::Table",
            {"ProvisionedThroughput": {"ReadCapacityUnits": 4000, "WriteCapacityUnits": 10}},
        )
        template.resource_count_is("Custom::CapacitySettle", 1)


@pytest.mark.parametrize(
    ("indexes", "message"),
    [
        (
            None,
            "indexes must give (read, write) Capacity for exactly the table's GSIs "
            "['byCustomer']; missing ['byCustomer']",
        ),
        (
            {
                "byCustomer": (Capacity(min_capacity=1, max_capacity=2),) * 2,
                "nope": (Capacity(min_capacity=1, max_capacity=2),) * 2,
            },
            "indexes has the key 'nope', which is not a global secondary index of the "
            "table; the allowed keys are the table's GSIs ['byCustomer'], each one needed",
        ),
    ],
)
def test_every_gsi_of_an_adopted_table_needs_capacity(indexes: Any, message: str) -> None:
    stack = cdk.Stack(cdk.App(), "S")
    table = dynamodb.Table(
        stack, "T", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    )
    table.add_global_secondary_index(
        index_name="byCustomer",
        partition_key=dynamodb.Attribute(name="c", type=dynamodb.AttributeType.STRING),
    )
    ok = Capacity(min_capacity=1, max_capacity=2)
    with pytest.raises(CapacityConfigError) as caught:
        TableCapacity(stack, "C", table=table, read=ok, write=ok, indexes=indexes)
    assert str(caught.value) == f"TableCapacity S/C: {message}"


def test_on_demand_and_v2_tables_are_refused() -> None:
    stack = cdk.Stack(cdk.App(), "S")
    ok = Capacity(min_capacity=1, max_capacity=2)
    on_demand = dynamodb.Table(
        stack,
        "T",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
    )
    with pytest.raises(CapacityConfigError, match="billing mode is PAY_PER_REQUEST"):
        TableCapacity(stack, "C", table=on_demand, read=ok, write=ok)
    v2 = dynamodb.TableV2(
        stack, "V2", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    )
    with pytest.raises(CapacityConfigError) as caught:
        TableCapacity(stack, "D", table=v2, read=ok, write=ok)
    assert str(caught.value) == (
        "TableCapacity S/D: a TableV2 (AWS::DynamoDB::GlobalTable) manages its own capacity "
        "and auto scaling (TableV2's Capacity.autoscaled(...)); for its schedules, windows "
        "and high-water marks use GlobalTableCapacity"
    )


def test_a_table_owned_elsewhere_gets_scalable_targets_and_schedules() -> None:
    # GIVEN a table defined in another app, imported by name, with one GSI to schedule
    stack = cdk.Stack(cdk.App(), "S")
    orders = dynamodb.Table.from_table_name(stack, "Orders", "orders")
    capacity = TableCapacity(
        stack,
        "OrdersCapacity",
        table=orders,
        read=Capacity(min_capacity=5, max_capacity=500),
        write=Capacity(min_capacity=5, max_capacity=200, target_utilization_percent=60),
        indexes={"byCustomer": (Capacity(min_capacity=2, max_capacity=50),) * 2},
    )
    capacity.add_capacity_window(
        "nightly",
        dimension="write",
        capacity=150,
        start="02:00",
        duration=cdk.Duration.hours(1),
    )
    template = Template.from_stack(stack)
    # THEN this stack registers its four scalable targets, with target tracking, under the
    # service-linked role, and adds nothing else (no table, no role)
    template.resource_count_is("AWS::DynamoDB::Table", 0)
    template.resource_count_is("AWS::IAM::Role", 0)
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 4)
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalingPolicy", 4)
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "ResourceId": "table/orders",
            "ScalableDimension": "dynamodb:table:WriteCapacityUnits",
            "MinCapacity": 5,
            "MaxCapacity": 200,
            "ScheduledActions": [
                {
                    "ScheduledActionName": "nightly-raise",
                    "Schedule": "cron(45 1 ? * MON,TUE,WED,THU,FRI *)",
                    "ScalableTargetAction": {"MinCapacity": 150},
                    "Timezone": "UTC",
                },
                {
                    "ScheduledActionName": "nightly-restore",
                    "Schedule": "cron(0 3 ? * MON,TUE,WED,THU,FRI *)",
                    "ScalableTargetAction": {"MinCapacity": 5},
                    "Timezone": "UTC",
                },
            ],
        },
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "ResourceId": "table/orders/index/byCustomer",
            "ScalableDimension": "dynamodb:index:ReadCapacityUnits",
        },
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "TargetTrackingScalingPolicyConfiguration": {
                "TargetValue": 60,
                "PredefinedMetricSpecification": {
                    "PredefinedMetricType": "DynamoDBWriteCapacityUtilization"
                },
            },
        },
    )
    # AND a high-water mark, which needs the table itself, is refused
    other = cdk.Stack(cdk.App(), "Other")
    with pytest.raises(CapacityConfigError, match="high_water_mark needs the table in this app"):
        TableCapacity(
            other,
            "Warm",
            table=dynamodb.Table.from_table_name(other, "Orders", "orders"),
            read=Capacity(min_capacity=5, max_capacity=500, high_water_mark=900),
            write=Capacity(min_capacity=5, max_capacity=200),
        )


@pytest.mark.deploy
def test_adopting_a_deployed_table_updates_it_and_keeps_its_items(
    tmp_path: Path, aws_env: dict[str, str], moto_endpoint: str, aws_client: Any
) -> None:
    # GIVEN a plain table, deployed, with an item in it
    name = f"Adopt{uuid.uuid4().hex[:6]}"
    app(tmp_path / "before", name, adopt=False)
    deploy(tmp_path / "before", aws_env, name)
    (table,) = [v for k, v in physical_ids(moto_endpoint, name).items() if k.startswith("Orders")]
    ddb = aws_client("dynamodb")
    first = ddb.describe_table(TableName=table)["Table"]
    ddb.put_item(TableName=table, Item={"pk": {"S": "order-1"}})
    # WHEN TableCapacity is added and the stack deployed again
    app(tmp_path / "after", name, adopt=True)
    deploy(tmp_path / "after", aws_env, name)
    # THEN it is the same table, updated: same ARN, same creation time, the item still there
    # (moto forgets a stack's resources after an update, so the table is found by name)
    listed = (n for page in ddb.get_paginator("list_tables").paginate() for n in page["TableNames"])
    tables = [t for t in listed if t.startswith(f"{name}-Orders")]
    assert tables == [table]  # not replaced: no second table, and the first one kept
    second = ddb.describe_table(TableName=table)["Table"]
    assert (second["TableArn"], second["CreationDateTime"]) == (
        first["TableArn"],
        first["CreationDateTime"],
    )
    # (moto's CloudFormation has no update for a DynamoDB table, so it neither applies the
    # new ProvisionedThroughput nor replaces; that CloudFormation updates these properties
    # in place is its documented behaviour, and the template test above shows they are the
    # only ones that change.)
    assert ddb.get_item(TableName=table, Key={"pk": {"S": "order-1"}}).get("Item") is not None


IMPORTED_APP = """
import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from constructs_pkg import Capacity, TableCapacity

app = cdk.App()
stack = cdk.Stack(app, "S")
orders = dynamodb.Table.from_table_name(stack, "Orders", "orders")
TableCapacity(
    stack, "OrdersCapacity", table=orders,
    read=Capacity(min_capacity=5, max_capacity=500),
    write=Capacity(min_capacity=5, max_capacity=200),
)
app.synth()
print("synthesized")
"""


def test_a_table_owned_elsewhere_synthesizes_without_a_deprecation_warning(
    tmp_path: Path,
) -> None:
    """The imported table's target-tracking policies use no deprecated CDK name (the CDK
    prints a warning at every synth for one, as a new app's user sees it)."""
    env = {**os.environ, "CDK_VALIDATION": "false", "JSII_DEPRECATED": "warn"}
    done = subprocess.run(  # noqa: S603 (this interpreter, the app above)
        [sys.executable, "-c", IMPORTED_APP],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "synthesized" in done.stdout, done.stderr
    assert "deprecated" not in done.stderr.lower(), done.stderr
