"""The settle step of PROVISION_THEN_SETTLE, as the constructs make it: a table a
``CapacityRequests`` serves has its step told the hold store, and may read it (Query) and
nothing else of it; a step made after the requests is told too; a store of another stack is
not read (a warning), for the two stacks would depend on each other. The stack's step alarms
on the dimensions it left at their mark (``SettleLeft``). Real CDK synth; the settle role's
permissions evaluated from the template (``tests/support/iam_eval.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Annotations, Match
from aws_cdk.assertions import Template as CdkTemplate

from constructs_pkg import (
    Capacity,
    CapacityRequests,
    PrewarmMethod,
    ProvisionedTable,
    TableCapacity,
)
from tests.support.iam_eval import ACCOUNT, PARTITION, REGION, Request, Template, allowed

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
MARKED = Capacity(min_capacity=5, max_capacity=500, high_water_mark=400)
PLAIN = Capacity(min_capacity=5, max_capacity=500)


def settled(stack: cdk.Stack, id: str, read: Capacity = MARKED) -> ProvisionedTable:
    return ProvisionedTable(
        stack,
        id,
        partition_key=PK,
        read=read,
        write=PLAIN,
        prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
    )


def steps(template: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each settle step's properties, by the logical id of its table."""
    return {
        r["Properties"]["TableName"]["Ref"]: r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "Custom::CapacitySettle"
    }


def logical(template: Mapping[str, Any], prefix: str) -> str:
    (found,) = [
        str(k)
        for k, r in template["Resources"].items()
        if k.startswith(prefix) and r["Type"] == "AWS::DynamoDB::Table"
    ]
    return found


def settle_role(template: Template) -> str:
    (role,) = [
        str(f["Properties"]["Role"]["Fn::GetAtt"][0])
        for f in template.of_type("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "ddb_capacity_runtime.settle.handler.is_complete"
    ]
    return role


def test_a_served_table_s_settle_step_reads_its_holds_and_nothing_else_of_the_store() -> None:
    # GIVEN two settled tables, one served by capacity requests, the other not
    stack = cdk.Stack(cdk.App(), "Holds")
    orders = settled(stack, "Orders")
    settled(stack, "Catalog")
    CapacityRequests(stack, "Requests", tables=[orders])
    raw = CdkTemplate.from_stack(stack).to_json()
    store = logical(raw, "RequestsHoldStore")
    # THEN the served table's step names the hold store; the other's names none
    by_table = steps(raw)
    assert by_table[logical(raw, "Orders")]["HoldStore"] == {"Ref": store}
    assert "HoldStore" not in by_table[logical(raw, "Catalog")]
    # AND the settle function may Query the store for the served table's items alone, and
    # neither read an item nor write one
    template = Template(raw)
    statements = template.statements_of(settle_role(template))
    arn = f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{store}"
    own = {"dynamodb:LeadingKeys": logical(raw, "Orders")}  # Ref: the table's name
    other = {"dynamodb:LeadingKeys": logical(raw, "Catalog")}
    assert allowed(statements, Request("dynamodb:Query", arn, own))
    assert not allowed(statements, Request("dynamodb:Query", arn, other))
    for action in ("GetItem", "Scan", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"):
        assert not allowed(statements, Request(f"dynamodb:{action}", arn)), action
    # AND that grant is in the served table's own policy, which its step depends on
    (grant,) = [
        r
        for k, r in raw["Resources"].items()
        if k.startswith("OrdersSettleGrant") and r["Type"] == "AWS::IAM::Policy"
    ]
    sids = [s["Sid"] for s in grant["Properties"]["PolicyDocument"]["Statement"]]
    assert sids == [f"Settle{logical(raw, 'Orders')}", "ReadHolds"]


def test_a_step_made_after_the_requests_is_told_the_store_too() -> None:
    # GIVEN a served table with no mark until a GSI with one is added after the requests
    stack = cdk.Stack(cdk.App(), "Later")
    orders = settled(stack, "Orders", read=PLAIN)
    requests = CapacityRequests(stack, "Requests", tables=[orders])
    assert orders.node.try_find_child("Settle") is None
    orders.add_global_secondary_index(
        index_name="byDay", partition_key=PK, read=MARKED, write=PLAIN
    )
    raw = CdkTemplate.from_stack(stack).to_json()
    # THEN its step, made with the GSI, names the requests' hold store
    (props,) = steps(raw).values()
    assert props["HoldStore"] == {"Ref": logical(raw, "RequestsHoldStore")}
    assert requests.hold_store.node.path.startswith("Later/Requests")


@pytest.mark.parametrize("first", ["capacity", "requests"])
def test_an_adopted_table_served_as_the_plain_table_has_its_step_read_the_holds(
    first: str,
) -> None:
    # GIVEN a table of the app adopted by a TableCapacity with PROVISION_THEN_SETTLE, and
    # capacity requests given the plain table (not its TableCapacity), made before or after
    stack = cdk.Stack(cdk.App(), "Adopted")
    orders = dynamodb.Table(
        stack,
        "Orders",
        partition_key=PK,
        billing_mode=dynamodb.BillingMode.PROVISIONED,
        read_capacity=5,
        write_capacity=5,
    )

    def capacity() -> None:
        TableCapacity(
            stack,
            "OrdersCapacity",
            table=orders,
            read=MARKED,
            write=PLAIN,
            prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
        )

    if first == "capacity":
        capacity()
    CapacityRequests(stack, "Requests", tables=[orders])
    if first == "requests":
        capacity()
    raw = CdkTemplate.from_stack(stack).to_json()
    # THEN the table's step names the requests' hold store, and may Query its items
    (props,) = steps(raw).values()
    assert props["HoldStore"] == {"Ref": logical(raw, "RequestsHoldStore")}
    (grant,) = [
        r
        for k, r in raw["Resources"].items()
        if k.startswith("OrdersCapacitySettleGrant") and r["Type"] == "AWS::IAM::Policy"
    ]
    sids = [s["Sid"] for s in grant["Properties"]["PolicyDocument"]["Statement"]]
    assert sids == [f"Settle{logical(raw, 'Orders')}", "ReadHolds"]


def test_a_hold_store_of_another_stack_is_not_read_and_synthesis_says_so() -> None:
    # GIVEN a settled table served by capacity requests of another stack
    app = cdk.App()
    tables = cdk.Stack(app, "Tables")
    orders = settled(tables, "Orders")
    CapacityRequests(cdk.Stack(app, "Requests"), "Requests", tables=[orders])
    # THEN its step names no store (the two stacks would depend on each other), with a
    # warning naming why and what to do; the app synthesizes
    assembly = app.synth()
    raw = assembly.get_stack_by_name("Tables").template
    (props,) = steps(raw).values()
    assert "HoldStore" not in props
    Annotations.from_stack(tables).has_warning(
        "*", Match.string_like_regexp("put the CapacityRequests in the table's stack")
    )


def test_the_stack_s_settle_step_alarms_on_a_dimension_left_at_its_mark() -> None:
    # GIVEN two settled tables of one stack
    stack = cdk.Stack(cdk.App(), "Alarmed")
    settled(stack, "Orders")
    settled(stack, "Catalog")
    raw = CdkTemplate.from_stack(stack).to_json()
    template = CdkTemplate.from_stack(stack)
    # THEN one alarm watches the settle function's SettleLeft, any in 5 minutes, on the
    # stack's shared alarm topic, its description in the four parts
    (function,) = [
        k
        for k, r in raw["Resources"].items()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"].get("Handler") == "ddb_capacity_runtime.settle.handler.is_complete"
    ]
    template.resource_count_is("AWS::CloudWatch::Alarm", 1)
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "DynamoDBCapacity",
            "MetricName": "SettleLeft",
            "Dimensions": [{"Name": "SettleFunction", "Value": {"Ref": function}}],
            "Statistic": "Sum",
            "Period": 300,
            "Threshold": 1,
            "EvaluationPeriods": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "notBreaching",
            "AlarmActions": [Match.object_like({"Fn::Join": Match.any_value()})],  # an OpsItem
            "AlarmDescription": Match.string_like_regexp(
                "Look first: the settle-left warnings.*Do: .*auto scaling lowers an "
                "auto-scaled dimension as its traffic allows, but a fixed one .no scalable "
                "target. stays at its mark until you lower it with aws dynamodb update-table"
                ".*Runbook: Settle left "
                r"\(SettleLeftAlarm\) under PROVISION_THEN_SETTLE in "
                "docs/operations/alarms.md"
            ),
        },
    )
