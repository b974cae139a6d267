"""Constructs made to depend on one another (``b.node.add_dependency(a)``, as an app does to
create its tables one after the other) synthesize to a template CloudFormation accepts:
cfn-lint finds no circular dependency. The settle step and the replica schedules share one
provider per stack whose policy names every table it serves, so an order between a custom
resource and that policy would close a cycle through the other table."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import (
    Capacity,
    GlobalTableCapacity,
    HighWaterMark,
    PrewarmMethod,
    ProvisionedTable,
)
from tests.test_many_accounts import cfn_lint

KEY = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


def global_capacity(stack: cdk.Stack, id: str) -> GlobalTableCapacity:
    table = dynamodb.TableV2(
        stack,
        id,
        partition_key=KEY,
        billing=dynamodb.Billing.provisioned(
            read_capacity=dynamodb.Capacity.autoscaled(min_capacity=5, max_capacity=100),
            write_capacity=dynamodb.Capacity.autoscaled(min_capacity=5, max_capacity=50),
        ),
        replicas=[dynamodb.ReplicaTableProps(region="eu-west-1")],
    )
    return GlobalTableCapacity(
        stack, f"{id}Capacity", table=table, high_water_mark=HighWaterMark(write=500)
    )


def test_tables_made_to_depend_on_one_another_form_no_cycle(tmp_path: Path) -> None:
    # GIVEN two settled tables and two global tables' capacities, each second one made to
    # wait for the first
    stack = cdk.Stack(cdk.App(), "Ordered", env=cdk.Environment(region="us-east-1"))
    settled = [
        ProvisionedTable(
            stack,
            name,
            partition_key=KEY,
            read=Capacity(min_capacity=5, max_capacity=100, high_water_mark=1_000),
            write=Capacity(min_capacity=5, max_capacity=100),
            prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
        )
        for name in ("Catalog", "Prices")
    ]
    settled[1].node.add_dependency(settled[0])
    first, second = global_capacity(stack, "Orders"), global_capacity(stack, "Returns")
    second.node.add_dependency(first)
    # WHEN the stack is synthesized
    template = cdk.assertions.Template.from_stack(stack).to_json()
    (tmp_path / "Ordered.template.json").write_text(json.dumps(template))
    # THEN cfn-lint finds no error (a cycle is E3004), and each order holds
    errors = [m for m in cfn_lint([tmp_path / "Ordered.template.json"]) if m["Level"] == "Error"]
    assert errors == [], errors
    steps = {
        k: v for k, v in template["Resources"].items() if v["Type"] == "Custom::CapacitySettle"
    }
    prices = next(k for k in steps if k.startswith("Prices"))
    assert any(d.startswith("Catalog") for d in steps[prices]["DependsOn"])
