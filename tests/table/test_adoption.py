"""Adopting a table that already exists: TableCapacity gives a plain ``aws_dynamodb.Table``
everything ProvisionedTable gives, without changing its logical ID or any property that is
not about capacity, so CloudFormation updates the table instead of replacing it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
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
            **{
                "read": Capacity(min_capacity=20, max_capacity=500),
                "write": Capacity(min_capacity=20, max_capacity=300, target_utilization_percent=60),
                "indexes": {
                    "byCustomer": (
                        Capacity(min_capacity=5, max_capacity=100),
                        Capacity(min_capacity=5, max_capacity=100),
                    )
                },
                **capacity,
            },
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
    # (without a high-water mark, not even its capacity: see the next test)
    assert new == old
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


def test_adopting_leaves_the_live_tables_provisioned_throughput_as_the_app_had_it(
    tmp_path: Path,
) -> None:
    # GIVEN a table the app provisioned at 10/10 (its GSI at 5/5), adopted with minimums of
    # 20 (GSI 5), and the same app after its minimums change
    before = app(tmp_path / "before", "Shop", adopt=False)
    after = app(tmp_path / "after", "Shop", adopt=True)
    (table_id,) = [k for k, v in before["Resources"].items() if v["Type"] == "AWS::DynamoDB::Table"]
    # THEN the table and its GSI keep the ProvisionedThroughput the app gave them:
    # CloudFormation sets a live table to a changed one on deploy, which would cut a table
    # auto scaling has raised (say to 300) to the template's value; the scalable targets
    # bring it into its range instead
    props = after["Resources"][table_id]["Properties"]
    assert props["ProvisionedThroughput"] == {"ReadCapacityUnits": 10, "WriteCapacityUnits": 10}
    assert props["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"] == {
        "ReadCapacityUnits": 5,
        "WriteCapacityUnits": 5,
    }
    assert after["Resources"][table_id] == before["Resources"][table_id]
    # AND the minimums are the scalable targets', so changing them later changes those
    # targets, never the table
    targets = sorted(
        (v["Properties"]["ScalableDimension"], v["Properties"]["MinCapacity"])
        for v in after["Resources"].values()
        if v["Type"] == "AWS::ApplicationAutoScaling::ScalableTarget"
    )
    assert targets == [
        ("dynamodb:index:ReadCapacityUnits", 5),
        ("dynamodb:index:WriteCapacityUnits", 5),
        ("dynamodb:table:ReadCapacityUnits", 20),
        ("dynamodb:table:WriteCapacityUnits", 20),
    ]
    moved = app(
        tmp_path / "moved",
        "Shop",
        adopt=True,
        read=Capacity(min_capacity=50, max_capacity=500),
        write=Capacity(min_capacity=40, max_capacity=300),
    )
    assert moved["Resources"][table_id] == before["Resources"][table_id]


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
    # (the table's own ProvisionedThroughput is aws-cdk-lib's default, 5/5)
    if prewarm is PrewarmMethod.WARM_THROUGHPUT:
        template.has_resource_properties(
            "AWS::DynamoDB::Table",
            {
                "WarmThroughput": {"ReadUnitsPerSecond": 4000},
                "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
            },
        )
        template.resource_count_is("Custom::CapacitySettle", 0)
    else:
        # provisioned at the mark (a raise the settle step brings down); the write, which
        # has none, keeps the app's value
        template.has_resource_properties(
            "AWS::DynamoDB::Table",
            {"ProvisionedThroughput": {"ReadCapacityUnits": 4000, "WriteCapacityUnits": 5}},
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


def _stock(call: str) -> Callable[[dynamodb.Table], None]:
    """One of aws-cdk-lib's own auto scaling calls on a table (``byCustomer`` for a GSI's),
    with its target tracking."""

    def scale(table: dynamodb.Table) -> None:
        bounds: dict[str, Any] = {"min_capacity": 5, "max_capacity": 100}
        method = getattr(table, call.split("(")[0])
        scaled = method("byCustomer", **bounds) if "index" in call else method(**bounds)
        scaled.scale_on_utilization(target_utilization_percent=70)

    return scale


STOCK_CALLS = [
    "auto_scale_read_capacity(...)",
    "auto_scale_write_capacity(...)",
    "auto_scale_global_secondary_index_read_capacity('byCustomer', ...)",
    "auto_scale_global_secondary_index_write_capacity('byCustomer', ...)",
]


@pytest.mark.parametrize("calls", [[c] for c in STOCK_CALLS] + [STOCK_CALLS[::3]])
def test_a_table_with_stock_auto_scaling_is_refused_naming_the_calls(calls: list[str]) -> None:
    # GIVEN a table (and its GSI) the app already auto scales with aws-cdk-lib's own calls
    stack = cdk.Stack(cdk.App(), "S")
    table = dynamodb.Table(
        stack, "T", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    )
    table.add_global_secondary_index(
        index_name="byCustomer",
        partition_key=dynamodb.Attribute(name="c", type=dynamodb.AttributeType.STRING),
    )
    for call in calls:
        _stock(call)(table)
    ok = Capacity(min_capacity=5, max_capacity=100)
    # WHEN TableCapacity adopts it THEN it is refused before the CDK's own refusal (a jsii
    # RuntimeError "Read AutoScaling already enabled for this table"), naming the calls
    with pytest.raises(CapacityConfigError) as caught:
        TableCapacity(stack, "C", table=table, read=ok, write=ok, indexes={"byCustomer": (ok, ok)})
    them = "that call" if len(calls) == 1 else "those calls"
    assert str(caught.value) == (
        f"TableCapacity S/C: table S/T is auto scaled already by aws-cdk-lib's own "
        f"table.{', table.'.join(calls)}; TableCapacity registers the scalable target and "
        "target tracking of every dimension itself (a dimension takes one), so the table "
        f"must have none: remove {them} (with the scale_on_utilization or scale_on_schedule "
        "on what it returned) and give each range here in read=, write= and indexes=; "
        "the scalable targets keep their logical IDs, so the deploy updates them in "
        "place (docs: Adoption)"
    )


def test_removing_stock_auto_scaling_keeps_the_scalable_targets_logical_ids(
    tmp_path: Path,
) -> None:
    # GIVEN the stack with stock auto scaling on every dimension, and the same stack with
    # those calls replaced by TableCapacity
    def synth(adopt: bool) -> dict[str, Any]:
        application = cdk.App(outdir=str(tmp_path / str(adopt)))
        stack = cdk.Stack(application, "Legacy")
        orders = dynamodb.Table(
            stack,
            "Orders",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        )
        orders.add_global_secondary_index(
            index_name="byCustomer",
            partition_key=dynamodb.Attribute(name="c", type=dynamodb.AttributeType.STRING),
        )
        ok = Capacity(min_capacity=5, max_capacity=100)
        if adopt:
            TableCapacity(
                stack, "C", table=orders, read=ok, write=ok, indexes={"byCustomer": (ok, ok)}
            )
        else:
            for call in STOCK_CALLS:
                _stock(call)(orders)
        return dict(Template.from_stack(stack).to_json())

    before, after = synth(False), synth(True)
    # THEN every scalable target and policy of the stock calls is still there, by the same
    # logical ID: CloudFormation updates them in place
    scaling = {
        k: v["Type"]
        for k, v in before["Resources"].items()
        if v["Type"].startswith("AWS::ApplicationAutoScaling::")
    }
    assert len(scaling) == 8
    assert {k: after["Resources"][k]["Type"] for k in scaling} == scaling
    # AND the table is unchanged
    (table_id,) = [k for k, v in before["Resources"].items() if v["Type"] == "AWS::DynamoDB::Table"]
    assert after["Resources"][table_id] == before["Resources"][table_id]


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
    # (moto's CloudFormation has no update for a DynamoDB table, so it would neither apply
    # a new ProvisionedThroughput nor replace; the template tests above show the table's
    # resource unchanged without a mark, and that CloudFormation updates a mark's
    # WarmThroughput or ProvisionedThroughput in place is its documented behaviour.)
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
