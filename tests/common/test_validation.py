"""Validation at the door: each bad input gets its own test and its exact message."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template

from constructs_pkg import Capacity, CapacityConfigError, ProvisionedTable
from tests.support.shape import ROOT

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
GK = dynamodb.Attribute(name="gk", type=dynamodb.AttributeType.STRING)
OK = Capacity(min_capacity=5, max_capacity=100)
WHERE = "ProvisionedTable Test/Orders"


def make_as(stack: cdk.Stack, id: str, **overrides: Any) -> ProvisionedTable:
    props: dict[str, Any] = {"partition_key": PK, "read": OK, "write": OK, **overrides}
    return ProvisionedTable(stack, id, **props)


def make(stack: cdk.Stack, **overrides: Any) -> ProvisionedTable:
    return make_as(stack, "Orders", **overrides)


def error_of(fn: Any) -> str:
    with pytest.raises(CapacityConfigError) as caught:
        fn()
    return str(caught.value)


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("point_in_time_recovery", "yes", "True or False"),
        ("deletion_protection", "false", "True or False"),
        ("deletion_protection", None, "True or False"),
        ("contributor_insights_enabled", 1, "True, False or None"),
    ],
)
def test_a_table_switch_that_is_not_true_or_false_is_refused_by_name(
    stack: cdk.Stack, name: str, value: object, allowed: str
) -> None:
    # (the CDK refused them with a TypeError naming the value's type, not the value; and it
    # read deletion_protection=None as its own default, off, against this construct's on)
    message = error_of(lambda: make(stack, **{name: value}))
    assert message == f"{WHERE}: {name}: got {value!r}; expected {allowed}"


def test_a_table_switch_is_checked_where_the_tables_other_props_are(stack: cdk.Stack) -> None:
    # GIVEN an id with a "/" (the construct path writes it "--")
    message = error_of(lambda: make_as(stack, "A/B", deletion_protection=0))
    # THEN the construct is named as in its other refusals
    assert message.startswith("ProvisionedTable Test/A--B: deletion_protection: got 0;")
    assert error_of(lambda: make_as(stack, "C/D", read_capacity=5)).startswith(
        "ProvisionedTable Test/C--D: read_capacity cannot be passed"
    )


def test_min_capacity_below_one(stack: cdk.Stack) -> None:
    message = error_of(lambda: make(stack, read=Capacity(min_capacity=0, max_capacity=10)))
    assert message == f"{WHERE} table read: min_capacity must be at least 1 capacity unit; got 0"


def test_min_above_max_is_refused_where_the_capacity_is_made() -> None:
    # wrong whatever the table: the error points at the Capacity(...) line, as a
    # ReservedCapacity's does, not at the table it is later given to
    message = error_of(lambda: Capacity(min_capacity=50, max_capacity=10))
    assert message == "Capacity: min_capacity (50) must be lower than or equal to max_capacity (10)"


def test_the_tables_guide_quotes_the_errors_as_they_are() -> None:
    """The two refusals the Tables guide prints are the library's, word for word."""
    import re

    guide = (ROOT / "docs" / "guides" / "tables.md").read_text()
    quoted = {
        " ".join(q.split()) for q in re.findall(r"`([^`]*must be[^`]*|[^`]*quota of[^`]*)`", guide)
    }
    stack = cdk.Stack(cdk.App(), "Shop")
    over = Capacity(min_capacity=10, max_capacity=50_000)
    raised = {
        error_of(lambda: make(stack, read=over)),
        error_of(lambda: Capacity(min_capacity=50, max_capacity=10)),
    }
    assert raised <= quoted, (raised, quoted)


def test_target_above_90(stack: cdk.Stack) -> None:
    bad = Capacity(min_capacity=5, max_capacity=10, target_utilization_percent=95)
    message = error_of(lambda: make(stack, read=bad))
    assert message == (
        f"{WHERE} table read: target_utilization_percent must be from 20 to 90 (%); got 95"
    )


def test_target_below_20(stack: cdk.Stack) -> None:
    bad = Capacity(min_capacity=5, max_capacity=10, target_utilization_percent=19.5)  # type: ignore[arg-type]
    message = error_of(lambda: make(stack, write=bad))
    assert message == (
        f"{WHERE} table write: target_utilization_percent must be from 20 to 90 (%); got 19.5"
    )


@pytest.mark.parametrize("target", [70.5, 20.25, 89.9])
def test_a_target_that_is_not_a_whole_percent_is_refused(stack: cdk.Stack, target: float) -> None:
    # GIVEN a target the fleet report, tune and the nightly tuning could not read back
    bad = Capacity(min_capacity=5, max_capacity=10, target_utilization_percent=target)  # type: ignore[arg-type]
    # THEN it is refused where the table is made, naming the field, the value and why
    message = error_of(lambda: make(stack, read=bad))
    assert message == (
        f"{WHERE} table read: target_utilization_percent must be a whole number from 20 to 90 "
        f"(%); got {target}: the fleet report, tune and the nightly tuning read and set whole "
        "percents"
    )


def test_a_whole_target_written_as_a_float_is_taken(stack: cdk.Stack) -> None:
    whole = Capacity(min_capacity=5, max_capacity=10, target_utilization_percent=70.0)  # type: ignore[arg-type]
    make(stack, read=whole)


def test_target_not_a_number(stack: cdk.Stack) -> None:
    bad = Capacity(min_capacity=5, max_capacity=10, target_utilization_percent="70%")  # type: ignore[arg-type]
    message = error_of(lambda: make(stack, read=bad))
    assert message == (
        f"{WHERE} table read: target_utilization_percent must be a number from 20 to 90; got '70%'"
    )


def test_high_water_mark_below_min_is_refused_where_the_capacity_is_made() -> None:
    message = error_of(lambda: Capacity(min_capacity=100, max_capacity=1000, high_water_mark=50))
    assert message == (
        "Capacity: high_water_mark (50) is below min_capacity (100); a "
        "high-water mark is the peak the table must take, at least its minimum"
    )


def test_a_token_range_is_left_to_the_deployment() -> None:
    # a CfnParameter's value cannot be compared at synth: CloudFormation checks it
    token: Any = cdk.Token.as_number(cdk.Aws.ACCOUNT_ID)
    assert Capacity(min_capacity=token, max_capacity=10).min_capacity == token
    assert Capacity(min_capacity=10, max_capacity=100, high_water_mark=token).high_water_mark


def test_max_above_default_quota(stack: cdk.Stack) -> None:
    bad = Capacity(min_capacity=5, max_capacity=50_000)
    message = error_of(lambda: make(stack, write=bad))
    assert message == (
        f"{WHERE} table write: max_capacity (50000) is above the per-table quota of 40000 "
        f"capacity units; lower it, or raise table_quota if your account's quota is higher"
    )


def test_high_water_mark_above_overridden_quota(stack: cdk.Stack) -> None:
    bad = Capacity(min_capacity=5, max_capacity=100, high_water_mark=12_000)
    message = error_of(lambda: make(stack, read=bad, table_quota=10_000))
    assert message == (
        f"{WHERE} table read: high_water_mark (12000) is above the per-table quota of 10000 "
        f"capacity units; lower it, or raise table_quota if your account's quota is higher"
    )


def test_raised_quota_admits_more(stack: cdk.Stack) -> None:
    table = make(stack, read=Capacity(min_capacity=5, max_capacity=80_000), table_quota=80_000)
    assert table.capacity("read").max_capacity == 80_000


def test_fractional_capacity(stack: cdk.Stack) -> None:
    message = error_of(lambda: make(stack, read=Capacity(min_capacity=2.5, max_capacity=10)))  # type: ignore[arg-type]
    assert message == (
        f"{WHERE} table read: min_capacity must be a whole number of capacity units; got 2.5"
    )


@pytest.mark.parametrize("field", ["min_capacity", "max_capacity"])
def test_a_missing_minimum_or_maximum_is_refused_by_name(stack: cdk.Stack, field: str) -> None:
    # GIVEN a Capacity whose minimum or maximum is None WHEN a table is made with it
    given = {"min_capacity": 5, "max_capacity": 10, field: None}
    message = error_of(lambda: make(stack, read=Capacity(**given)))  # type: ignore[arg-type]
    # THEN the library refuses it, naming the field (not the CDK's own TypeError)
    assert message == (
        f"{WHERE} table read: {field} must be a whole number of capacity units; got None"
    )


def test_pay_per_request_billing(stack: cdk.Stack) -> None:
    message = error_of(lambda: make(stack, billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST))
    assert message == (
        f"{WHERE}: billing_mode must be BillingMode.PROVISIONED; got "
        f"BillingMode.PAY_PER_REQUEST. For on-demand capacity use aws_dynamodb.Table or "
        f"TableV2 directly"
    )


def test_unknown_index_name(stack: cdk.Stack) -> None:
    table = make(stack)
    table.add_global_secondary_index(index_name="byCustomer", partition_key=GK, read=OK, write=OK)
    message = error_of(lambda: table.scalable_attribute("read", index_name="byCustomr"))
    assert message == (
        f"{WHERE}: unknown global secondary index 'byCustomr'; the table's indexes are: "
        f"'byCustomer'"
    )


def test_unknown_dimension(stack: cdk.Stack) -> None:
    message = error_of(lambda: make(stack).capacity("reads"))
    assert message == f"{WHERE}: dimension must be 'read' or 'write'; got 'reads'"


def test_duplicate_index_name(stack: cdk.Stack) -> None:
    table = make(stack)
    table.add_global_secondary_index(index_name="byCustomer", partition_key=GK, read=OK, write=OK)
    message = error_of(
        lambda: table.add_global_secondary_index(
            index_name="byCustomer", partition_key=GK, read=OK, write=OK
        )
    )
    assert message == (
        f"{WHERE}: index_name 'byCustomer' is already used by another global secondary "
        f"index; names must be unique per table"
    )


def test_index_name_too_short(stack: cdk.Stack) -> None:
    message = error_of(
        lambda: make(stack).add_global_secondary_index(
            index_name="g1", partition_key=GK, read=OK, write=OK
        )
    )
    assert message == (
        f"{WHERE}: index_name must be a string of 3 to 255 characters of a-z, A-Z, 0-9, "
        f"'_', '-' and '.'; got 'g1'"
    )


@pytest.mark.parametrize("name", [None, 123, b"byCustomer"])
def test_an_index_name_that_is_not_a_string_is_refused(stack: cdk.Stack, name: object) -> None:
    message = error_of(
        lambda: make(stack).add_global_secondary_index(
            index_name=name,  # type: ignore[arg-type]
            partition_key=GK,
            read=OK,
            write=OK,
        )
    )
    assert message == (
        f"{WHERE}: index_name must be a string of 3 to 255 characters of a-z, A-Z, 0-9, "
        f"'_', '-' and '.'; got {name!r}"
    )


def test_more_than_twenty_indexes(stack: cdk.Stack) -> None:
    table = make(stack)
    for i in range(20):
        table.add_global_secondary_index(
            index_name=f"index{i}", partition_key=GK, read=OK, write=OK
        )
    message = error_of(
        lambda: table.add_global_secondary_index(
            index_name="index20", partition_key=GK, read=OK, write=OK
        )
    )
    assert message == (
        f"{WHERE}: cannot add index 'index20': a table takes at most 20 global secondary "
        f"indexes (DynamoDB's default quota); it has 20"
    )


def test_index_capacity_is_validated_with_its_name(stack: cdk.Stack) -> None:
    table = make(stack)
    message = error_of(
        lambda: table.add_global_secondary_index(
            index_name="byCustomer",
            partition_key=GK,
            read=OK,
            write=Capacity(min_capacity=10, max_capacity=50_000),
        )
    )
    assert message == (
        f"{WHERE} index 'byCustomer' write: max_capacity (50000) is above the per-table quota "
        "of 40000 capacity units; lower it, or raise table_quota if your account's quota is "
        "higher"
    )


def test_capacity_of_wrong_type(stack: cdk.Stack) -> None:
    message = error_of(lambda: make(stack, read=100))
    assert message == f"{WHERE} table read: read must be a Capacity; got 100"


def test_table_quota_not_positive(stack: cdk.Stack) -> None:
    message = error_of(lambda: make(stack, table_quota=0))
    assert message == (
        f"{WHERE}: table_quota must be a whole number of capacity units from 1 to 1,000,000 "
        "(the account's per-table quota; DynamoDB's default is 40,000); got 0"
    )
    above = error_of(lambda: make(cdk.Stack(cdk.App(), "Other"), table_quota=1_000_001))
    assert above.endswith("DynamoDB's default is 40,000); got 1000001")


def test_the_largest_table_quota_is_taken(stack: cdk.Stack) -> None:
    # GIVEN the largest quota the refusal above names, and a dimension that reaches it
    whole = Capacity(min_capacity=5, max_capacity=1_000_000)
    make(stack, read=whole, table_quota=1_000_000)
    # THEN the table's read scales up to it
    Template.from_stack(stack).has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {"ScalableDimension": "dynamodb:table:ReadCapacityUnits", "MaxCapacity": 1_000_000},
    )


def test_prewarm_of_wrong_type(stack: cdk.Stack) -> None:
    message = error_of(lambda: make(stack, prewarm="WARM_THROUGHPUT"))
    assert message == (
        f"{WHERE}: prewarm must be PrewarmMethod.WARM_THROUGHPUT or "
        f"PrewarmMethod.PROVISION_THEN_SETTLE; got 'WARM_THROUGHPUT'"
    )


def test_provision_then_settle_with_no_mark_is_a_warning(stack: cdk.Stack) -> None:
    from aws_cdk.assertions import Annotations

    from constructs_pkg import PrewarmMethod

    # GIVEN PROVISION_THEN_SETTLE on a table, and on another whose GSI has a mark
    settled = PrewarmMethod.PROVISION_THEN_SETTLE
    make(stack, prewarm=settled)
    marked = make_as(stack, "Marked", prewarm=settled)
    mark = Capacity(min_capacity=5, max_capacity=100, high_water_mark=500)
    marked.add_global_secondary_index(index_name="byGk", partition_key=GK, read=mark, write=OK)
    # WHEN the app is synthesized THEN the first, which pre-warms nothing, is warned of
    cdk.App.of(stack).synth()  # type: ignore[union-attr]
    warned = [
        (w.id, str(w.entry.data))
        for w in Annotations.from_stack(stack).find_warning("*", Match.any_value())
    ]
    assert warned == [
        (
            "/Test/Orders",
            f"{WHERE}: prewarm=PROVISION_THEN_SETTLE, but neither the table nor any of its "
            "indexes has a high_water_mark, so nothing is pre-warmed: give a dimension "
            "Capacity(high_water_mark=...), or leave prewarm out "
            "[ack: ddb-capacity:prewarm-without-mark]",
        )
    ]


def test_disable_scale_in_not_a_bool(stack: cdk.Stack) -> None:
    bad = Capacity(min_capacity=5, max_capacity=10, disable_scale_in="no")  # type: ignore[arg-type]
    message = error_of(lambda: make(stack, write=bad))
    assert message == f"{WHERE} table write: disable_scale_in: got 'no'; expected True or False"


def test_unresolved_tokens_are_not_checked(stack: cdk.Stack) -> None:
    # GIVEN capacities that are only known at deploy time
    floor = cdk.CfnParameter(stack, "Floor", type="Number", default=5).value_as_number
    ceiling = cdk.CfnParameter(stack, "Ceiling", type="Number", default=50).value_as_number
    # WHEN the table is built THEN nothing is rejected: CloudFormation checks them later
    table = make(stack, read=Capacity(min_capacity=floor, max_capacity=ceiling))  # type: ignore[arg-type]
    assert cdk.Token.is_unresolved(table.capacity("read").min_capacity)


def test_every_table_prop_passes_through(stack: cdk.Stack) -> None:
    # GIVEN Table props ProvisionedTable does not name, and a local secondary index
    policy = iam.PolicyDocument(
        statements=[
            iam.PolicyStatement(
                actions=["dynamodb:GetItem"],
                principals=[iam.AccountRootPrincipal()],
                resources=["*"],
            )
        ]
    )
    table = make(
        stack,
        sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
        resource_policy=policy,
    )
    table.table.add_local_secondary_index(
        index_name="byDate",
        sort_key=dynamodb.Attribute(name="date", type=dynamodb.AttributeType.STRING),
    )
    # THEN they reach the table
    Template.from_stack(stack).has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "LocalSecondaryIndexes": [Match.object_like({"IndexName": "byDate"})],
            "ResourcePolicy": {
                "PolicyDocument": Match.object_like({"Statement": Match.any_value()})
            },
        },
    )


@pytest.mark.parametrize(
    ("typo", "near"),
    [("partion_key", "partition_key"), ("sort_kye", "sort_key"), ("reed", "read"), ("zzz", None)],
)
def test_an_unknown_prop_is_refused_naming_the_construct_and_the_closest_allowed(
    stack: cdk.Stack, typo: str, near: str | None
) -> None:
    """Not the TypeError of aws_dynamodb.Table, which names neither ProvisionedTable nor
    what it takes."""
    message = error_of(lambda: make(stack, **{typo: PK}))
    hint = f" (did you mean {near!r}?)" if near else ""
    assert message.startswith(f"{WHERE}: unknown prop {typo!r}{hint}; allowed: ")
    allowed = message.split("; allowed: ")[1].split(", ")
    # its own props and aws_dynamodb.Table's it passes through, not those it refuses
    assert {"read", "write", "prewarm", "partition_key", "sort_key", "stream"} <= set(allowed)
    assert not {"read_capacity", "point_in_time_recovery_specification"} & set(allowed)
    assert allowed == sorted(allowed)


def test_capacity_props_are_refused(stack: cdk.Stack) -> None:
    assert error_of(lambda: make(stack, read_capacity=5, warm_throughput=None)) == (
        f"{WHERE}: read_capacity, warm_throughput cannot be passed: read= and write= "
        f"(Capacity) set the table's capacity"
    )


def test_the_point_in_time_recovery_spec_is_set_by_its_own_argument(stack: cdk.Stack) -> None:
    spec = dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=False)
    assert error_of(lambda: make(stack, point_in_time_recovery_specification=spec)) == (
        f"{WHERE}: point_in_time_recovery_specification cannot be passed: "
        f"point_in_time_recovery= (True or False) sets it"
    )


def test_a_gsi_added_to_the_underlying_table_directly_is_an_error(stack: cdk.Stack) -> None:
    table = make(stack)
    table.table.add_global_secondary_index(index_name="sneaky", partition_key=GK)
    assert table.node.validate() == [
        f"{WHERE}: index 'sneaky' was added to the underlying table directly, so it has no "
        f"capacity settings nor auto scaling; add it with add_global_secondary_index(..., "
        f"read=Capacity(...), write=Capacity(...))"
    ]


def test_a_provisioned_table_is_an_itable(stack: cdk.Stack) -> None:
    from aws_cdk import aws_stepfunctions_tasks as tasks

    table = make(stack)
    role = iam.Role(stack, "Worker", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    # grants and metrics on the construct itself
    assert table.grant_read_write_data(role).success
    assert table.metric_consumed_read_capacity_units().metric_name == "ConsumedReadCapacityUnits"
    # and CDK APIs that take an ITable take it
    task = tasks.DynamoGetItem(
        stack, "Get", table=table, key={"pk": tasks.DynamoAttributeValue.from_string("x")}
    )
    assert stack.resolve(task.to_state_json())["Parameters"]["TableName"] == stack.resolve(
        table.table.table_name
    )
    assert stack.resolve(table.table_arn) == stack.resolve(table.table.table_arn)


@pytest.mark.parametrize(
    "capacity",
    [
        Capacity(min_capacity=100, max_capacity=100),  # a fixed capacity
        Capacity(min_capacity=5, max_capacity=10, target_utilization_percent=20),
        Capacity(min_capacity=5, max_capacity=10, target_utilization_percent=90),
        Capacity(min_capacity=5, max_capacity=40_000, high_water_mark=40_000),  # the quota
    ],
)
def test_each_capacity_prop_takes_its_bounds(stack: cdk.Stack, capacity: Capacity) -> None:
    make(stack, read=capacity)  # no error


@pytest.mark.parametrize("field", ["max_capacity", "high_water_mark"])
def test_a_capacity_one_unit_past_the_table_quota_is_refused(stack: cdk.Stack, field: str) -> None:
    props: dict[str, Any] = {"min_capacity": 5, "max_capacity": 40_000, field: 40_001}
    message = error_of(lambda: make(stack, read=Capacity(**props)))
    assert f"{field} (40001) is above the per-table quota of 40000" in message
