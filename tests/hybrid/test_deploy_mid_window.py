"""A ``cdk deploy`` in the middle of an on-demand window, against the moto server's
CloudFormation: the table as the library synthesizes it, deployed as a stack, switched to
on-demand by the window, then the stack updated while it is on-demand.

What moto's CloudFormation does not do, and so what this does not show: it makes no
Application Auto Scaling resources (the test registers the stack's targets itself, as the
stack would), and it applies no change of a table's properties on update. A real deploy that
changes the table's capacity properties switches it back to provisioned at the template's
throughput; the switch's check then restores its targets and ends the window
(`test_switch_day.test_a_table_made_provisioned_underneath_gets_its_targets_back`)."""

from __future__ import annotations

import json
import time
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template

from constructs_pkg import Capacity, ProvisionedTable
from ddb_capacity_runtime.hybrid.switcher import Switcher, Window
from ddb_capacity_tools.local_aws import create_store_table
from tests.support.moto_world import World
from tests.support.switch_world import Clock

WINDOW = Window("lunch", 3600, 500, 200)
TABLE = "AWS::DynamoDB::Table"


def _template(release: str, read_min: int) -> str:
    """The table's resource of a stack with a ProvisionedTable and an on-demand window, as
    CloudFormation gets it (the resources moto's CloudFormation makes)."""
    stack = cdk.Stack(cdk.App(), "Windowed")
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=read_min, max_capacity=100),
        write=Capacity(min_capacity=3, max_capacity=50),
    )
    table.add_on_demand_window("Lunch", start="12:00", duration=cdk.Duration.hours(1))
    cdk.Tags.of(table).add("release", release)
    resources = Template.from_stack(stack).to_json()["Resources"]
    (orders,) = (k for k, v in resources.items() if k.startswith("Orders") and v["Type"] == TABLE)
    return json.dumps({"Resources": {orders: resources[orders]}})


def _settled(cfn: Any, stack: str) -> str:
    for _ in range(100):
        status = str(cfn.describe_stacks(StackName=stack)["Stacks"][0]["StackStatus"])
        if not status.endswith("_IN_PROGRESS"):
            return status
        time.sleep(0.1)
    return status


@pytest.fixture
def deployed(aws_client: Any) -> Any:
    world = World(aws_client)
    cfn = aws_client("cloudformation")
    stack = world.name("windowed")
    cfn.create_stack(StackName=stack, TemplateBody=_template("1", 5))
    assert _settled(cfn, stack) == "CREATE_COMPLETE"
    (resource,) = cfn.describe_stack_resources(StackName=stack)["StackResources"]
    table = resource["PhysicalResourceId"]
    world.target(table, "read", 5, 100)
    world.target(table, "write", 3, 50)
    store = f"switch-{world.run_id}"
    create_store_table(world.ddb, store)
    switcher = Switcher(world.ddb, world.aas, store, Clock(time.time()), cloudwatch=world.cw)
    yield world, cfn, stack, table, switcher
    cfn.delete_stack(StackName=stack)


def _billing(world: World, table: str) -> str:
    described = world.ddb.describe_table(TableName=table)["Table"]
    return str(described["BillingModeSummary"]["BillingMode"])


def test_a_deploy_mid_window_neither_fails_nor_leaves_the_table_in_the_wrong_mode(
    deployed: Any,
) -> None:
    world, cfn, stack, table, switcher = deployed
    made = world.ddb.describe_table(TableName=table)["Table"]["CreationDateTime"]
    assert switcher.start(table, WINDOW) == "switched-to-on-demand"
    # WHEN the stack is deployed mid-window: a change elsewhere on the table (a tag), then
    # one of its capacity bounds (the read minimum, 5 -> 6)
    for release, read_min in (("2", 5), ("3", 6)):
        cfn.update_stack(StackName=stack, TemplateBody=_template(release, read_min))
        # THEN the deploy succeeds, the table is the same one and still on-demand
        assert _settled(cfn, stack) == "UPDATE_COMPLETE"
        now = world.ddb.describe_table(TableName=table)["Table"]
        assert now["CreationDateTime"] == made and _billing(world, table) == "PAY_PER_REQUEST"
        if read_min != 5:  # what CloudFormation does to the changed target (moto's does not)
            world.target(table, "read", read_min, 100)
        assert switcher.check(table) == "on-demand"
        targets = world.aas.describe_scalable_targets(
            ServiceNamespace="dynamodb", ResourceIds=[f"table/{table}"]
        )["ScalableTargets"]
        assert all(all(t["SuspendedState"].values()) for t in targets)  # suspended again
    # AND the window ends as it would have: provisioned no lower than before nor than the
    # deployed minimum, the targets back at the deployed bounds and resumed
    assert switcher.end(table) == "switched-to-provisioned"
    assert _billing(world, table) == "PROVISIONED"
    throughput = world.ddb.describe_table(TableName=table)["Table"]["ProvisionedThroughput"]
    assert (throughput["ReadCapacityUnits"], throughput["WriteCapacityUnits"]) == (6, 3)
    targets = world.aas.describe_scalable_targets(
        ServiceNamespace="dynamodb", ResourceIds=[f"table/{table}"]
    )["ScalableTargets"]
    assert sorted((t["MinCapacity"], t["MaxCapacity"]) for t in targets) == [(3, 50), (6, 100)]
    assert not any(any(t.get("SuspendedState", {}).values()) for t in targets)
    # AND a deploy after the window succeeds too
    cfn.update_stack(StackName=stack, TemplateBody=_template("4", 5))
    assert _settled(cfn, stack) == "UPDATE_COMPLETE"
