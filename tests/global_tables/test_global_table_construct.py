"""GlobalTableCapacity on a provisioned TableV2 with two replicas and a GSI: synthesized
under the five cdk-nag packs and checked by cfn-lint; one custom resource per Region with
that Region's actions (write in every replica, read where asked); warm throughput for the
high-water marks; a least-privilege role; and every schedule that would break a global
table's rules refused, naming the table."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match, Template
from constructs import Construct

from constructs_pkg import (
    AlarmOptions,
    CapacityConfigError,
    CapacityRequests,
    FunctionOptions,
    GlobalTableCapacity,
    HighWaterMark,
    ScheduleEntry,
    ScheduleError,
    ThrottleAwareScaler,
    apply_nag_packs,
)
from ddb_capacity_runtime.core.errors import shown
from ddb_capacity_runtime.core.names import OWNER_TAG, TARGET_TAG
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.global_tables.replica_actions import ACTION_PREFIX, parse_schedule
from examples.global_orders import GlobalOrdersReplicaStack, GlobalOrdersStack
from tests.support.alarm_style import alarm_actions_of
from tests.support.capacity_requests_construct import CHECKS_ALARMS
from tests.support.checkov import checkov_reports, start_checkov, templates
from tests.support.global_table_construct import KEY, global_table, make, new_stack
from tests.support.many_accounts import cfn_lint


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Template, Path]:
    """The guide's example (examples/global_orders.py): the table's stack and the
    eu-west-1 replica's scaler's, synthesized under the five packs: synth raises on any
    unacknowledged finding."""
    outdir = tmp_path_factory.mktemp("global")
    app = cdk.App(outdir=str(outdir))
    apply_nag_packs(app)
    stack = GlobalOrdersStack(app, "GlobalOrders", env=cdk.Environment(region="us-east-1"))
    replica = GlobalOrdersReplicaStack(
        app, "GlobalOrdersEu", stack.capacity, env=cdk.Environment(region="eu-west-1")
    )
    app.synth()
    assert (outdir / f"{replica.artifact_id}.template.json").exists()
    return Template.from_stack(stack), outdir


def resources(template: Template) -> dict[str, Mapping[str, Any]]:
    """Each Region's custom resource's properties, by Region."""
    found = template.find_resources("Custom::ReplicaSchedule")
    return {r["Properties"]["Region"]: r for r in found.values()}


def resource_prefix(resource: Mapping[str, Any]) -> str:
    """The prefix every action of a resource begins with: the library's, and the resource's
    own (8 hex digits)."""
    names: set[str] = {a["ScheduledActionName"][:22] for a in resource["Properties"]["Actions"]}
    (prefix,) = names
    assert re.fullmatch(re.escape(ACTION_PREFIX) + r"[0-9a-f]{8}-", prefix), prefix
    return prefix


def test_a_renamed_construct_names_its_actions_apart_from_the_old_ones() -> None:
    # GIVEN the same table's capacity under two construct ids (a rename: CloudFormation
    # creates the new resource, then deletes the old one with the old one's actions)
    def prefixes(construct_id: str) -> set[str]:
        stack = new_stack()
        capacity = GlobalTableCapacity(stack, construct_id, table=global_table(stack))
        capacity.add_schedule(entry(), dimension="write")
        found = resources(Template.from_stack(stack))
        return {resource_prefix(r) for r in found.values()}

    # THEN no action of one is named as one of the other's
    assert prefixes("Capacity").isdisjoint(prefixes("Renamed"))
    assert prefixes("Capacity") == prefixes("Capacity")  # and the names are stable


def test_each_region_gets_its_actions(synthesized: tuple[Template, Path]) -> None:
    template, _ = synthesized
    found = resources(template)
    assert set(found) == {"us-east-1", "eu-west-1"}
    prefixes = {region: resource_prefix(r) for region, r in found.items()}
    names = {
        region: {
            (a["Index"], a["Dimension"], ACTION_PREFIX + a["ScheduledActionName"][22:])
            for a in r["Properties"]["Actions"]
        }
        for region, r in found.items()
    }
    # each resource names its actions with a prefix of its own (after the library's)
    assert len(set(prefixes.values())) == 2
    write = {
        ("", "write", f"{ACTION_PREFIX}launch-raise"),
        ("", "write", f"{ACTION_PREFIX}launch-restore"),
    }
    index = {
        ("byCustomer", "read", f"{ACTION_PREFIX}index-reads-raise"),
        ("byCustomer", "read", f"{ACTION_PREFIX}index-reads-restore"),
    }
    morning = {
        ("", "read", f"{ACTION_PREFIX}eu-morning-raise"),
        ("", "read", f"{ACTION_PREFIX}eu-morning-restore"),
    }
    assert names["us-east-1"] == write | index
    assert names["eu-west-1"] == write | index | morning
    (table,) = template.find_resources("AWS::DynamoDB::GlobalTable")
    (role,) = [k for k in template.find_resources("AWS::IAM::Role") if "ScheduleRole" in k]
    (grant,) = [
        k for k in template.find_resources("AWS::IAM::ManagedPolicy") if "ScheduleGrant" in k
    ]
    arn = "arn:aws:iam::123456789012:role/Global-OrdersCapacityScheduleRole-0a1b"
    for resource in found.values():
        # made after the table and after its role's grant (deleted before them)
        assert {table, grant} <= set(resource["DependsOn"])
        assert resource["Properties"]["TableName"] == {"Ref": table}
        assert resource["Properties"]["RoleArn"] == {"Fn::GetAtt": [role, "Arn"]}
        # the function reads the properties back as it will at deploy time
        text = json.dumps(resource["Properties"]).replace(f'{{"Ref": "{table}"}}', '"Orders"')
        props = json.loads(text.replace(json.dumps({"Fn::GetAtt": [role, "Arn"]}), f'"{arn}"'))
        assert len(parse_schedule(props).actions) == len(resource["Properties"]["Actions"])
        assert parse_schedule(props).role_arn == arn
    raised = next(
        a
        for a in found["eu-west-1"]["Properties"]["Actions"]
        if a["ScheduledActionName"].endswith("launch-raise")
    )
    assert raised["ScalableTargetAction"] == {"MinCapacity": 40}
    assert raised["Schedule"] == "cron(45 8 ? * MON,TUE,WED,THU,FRI *)"
    assert raised["Timezone"] == "Europe/Paris"


def test_the_high_water_marks_are_the_warm_throughput(synthesized: tuple[Template, Path]) -> None:
    template, _ = synthesized
    (table,) = template.find_resources("AWS::DynamoDB::GlobalTable").values()
    assert table["Properties"]["WarmThroughput"] == {"WriteUnitsPerSecond": 2_000}
    (gsi,) = table["Properties"]["GlobalSecondaryIndexes"]
    assert gsi["WarmThroughput"] == {"ReadUnitsPerSecond": 500}


def test_the_function_may_schedule_only_this_tables_targets_in_its_regions(
    synthesized: tuple[Template, Path],
) -> None:
    template, _ = synthesized
    managed = template.find_resources("AWS::IAM::ManagedPolicy")
    (policy,) = [
        p for k, p in managed.items() if k.startswith("ReplicaScheduleProviderFunctionPolicy")
    ]
    (grant,) = [p for k, p in managed.items() if "ScheduleGrant" in k]
    roles = template.find_resources("AWS::IAM::Role")
    (role,) = [k for k in roles if "ScheduleRole" in k]
    (function_role,) = [k for k in roles if k.startswith("ReplicaScheduleProviderFunctionRole")]
    # the function's own policy names no table: it may only assume the table's role,
    own = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert set(own) == {"WriteOwnLogs", "AssumeScheduleRoles"}
    assert own["AssumeScheduleRoles"]["Action"] == "sts:AssumeRole"
    assert own["AssumeScheduleRoles"]["Resource"] == {"Fn::GetAtt": [role, "Arn"]}
    (table,) = template.find_resources("AWS::DynamoDB::GlobalTable")
    assert table not in json.dumps(policy)  # no statement names the table
    (function,) = [
        f
        for f in template.find_resources("AWS::Lambda::Function").values()
        if f["Properties"].get("Handler", "").endswith("global_tables.handler.on_event")
    ]
    # AssumeRole at its own Region's STS endpoint
    assert (
        function["Properties"]["Environment"]["Variables"]["AWS_STS_REGIONAL_ENDPOINTS"]
        == "regional"
    )
    # which trusts the function's role alone, and holds the grant
    (trust,) = roles[role]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"AWS": {"Fn::GetAtt": [function_role, "Arn"]}}
    assert grant["Properties"]["Roles"] == [{"Ref": role}]
    statements = {s["Sid"]: s for s in grant["Properties"]["PolicyDocument"]["Statement"]}
    (table,) = template.find_resources("AWS::DynamoDB::GlobalTable")
    regions = {
        r["Fn::Join"][1][2].split(":")[2] for r in statements["ScheduleTaggedTargets"]["Resource"]
    }
    assert regions == {"us-east-1", "eu-west-1"}
    schedule = statements["ScheduleTaggedTargets"]
    assert set(schedule["Action"]) == {
        "application-autoscaling:PutScheduledAction",
        "application-autoscaling:DeleteScheduledAction",
    }
    assert schedule["Condition"]["StringEquals"] == {
        "application-autoscaling:service-namespace": "dynamodb",
        f"aws:ResourceTag/{TARGET_TAG}": {"Ref": table},
    }
    role_arn = {"Fn::GetAtt": [role, "Arn"]}
    keys = {"aws:TagKeys": [TARGET_TAG, OWNER_TAG]}
    tag = statements["TagTargets"]["Condition"]
    assert tag["StringEquals"] == {
        f"aws:RequestTag/{TARGET_TAG}": {"Ref": table},
        f"aws:RequestTag/{OWNER_TAG}": role_arn,
    }
    assert tag["ForAllValues:StringEquals"] == keys
    # a target tagged for another table keeps its tag
    assert tag["StringEqualsIfExists"] == {f"aws:ResourceTag/{TARGET_TAG}": {"Ref": table}}
    untag = statements["UntagTargets"]["Condition"]
    assert untag["StringEquals"] == {f"aws:ResourceTag/{TARGET_TAG}": {"Ref": table}}
    # in any Region (one dropped from the table, a table replaced), only what it tagged
    unschedule, untag_own = statements["UnscheduleOwnTargets"], statements["UntagOwnTargets"]
    assert unschedule["Action"] == "application-autoscaling:DeleteScheduledAction"
    assert unschedule["Condition"]["StringEquals"] == {
        "application-autoscaling:service-namespace": "dynamodb",
        f"aws:ResourceTag/{OWNER_TAG}": role_arn,
    }
    assert untag_own["Condition"] == {
        "StringEquals": {f"aws:ResourceTag/{OWNER_TAG}": role_arn},
        "ForAllValues:StringEquals": keys,
    }
    for statement in (unschedule, untag_own):
        assert statement["Resource"]["Fn::Join"][1][2] == ":application-autoscaling:*:"
    assert statements["ReadTargets"]["Action"] == [
        "application-autoscaling:DescribeScalableTargets",
        "application-autoscaling:DescribeScheduledActions",
    ]
    assert statements["ReadTags"]["Action"] == "application-autoscaling:ListTagsForResource"
    assert statements["ReadTags"]["Resource"]["Fn::Join"][1][2] == ":application-autoscaling:*:"
    assert set(statements) == {
        "ReadTargets",
        "TagTargets",
        "UntagTargets",
        "ScheduleTaggedTargets",
        "ReadTags",
        "UntagOwnTargets",
        "UnscheduleOwnTargets",
        "AutoScalingChecksAlarms",
    }
    assert statements["AutoScalingChecksAlarms"] == CHECKS_ALARMS
    # the function is made after its own policy, and deleted before it
    assert any(d.startswith("ReplicaScheduleProviderFunctionPolicy") for d in function["DependsOn"])


def test_cfn_lint_and_checkov_find_nothing(
    synthesized: tuple[Template, Path], tmp_path: Path
) -> None:
    _, outdir = synthesized
    scan = start_checkov(templates([outdir], tmp_path / "templates"))
    found = cfn_lint(sorted(outdir.glob("*.template.json")))
    assert [m for m in found if m["Level"] == "Error"] == []
    reports = checkov_reports(scan)
    failed = [
        (c["check_id"], c["resource"]) for r in reports for c in r["results"]["failed_checks"]
    ]
    assert failed == []
    assert sum(r["summary"]["passed"] for r in reports) > 20


def entry(minimum: int | None = 20, maximum: int | None = None, name: str = "e") -> ScheduleEntry:
    return ScheduleEntry(
        name=name, schedule="cron(0 6 * * ? *)", min_capacity=minimum, max_capacity=maximum
    )


@pytest.mark.parametrize(
    ("add", "message"),
    [
        (
            lambda c: c.add_schedule(entry(), dimension="write", region="eu-west-1"),
            "one setting of every replica",
        ),
        (
            lambda c: c.add_schedule(entry(), dimension="read", region="ap-south-1"),
            "has replicas in us-east-1, eu-west-1",
        ),
        (
            lambda c: c.add_schedule(entry(20, 40), dimension="read"),
            "max_capacity: got 40.*template's",
        ),
        (
            lambda c: c.add_schedule(entry(60), dimension="write"),
            "minimum of 60 is above .* maximum there \\(50",
        ),
        (
            lambda c: c.add_schedule(entry(150), dimension="read"),
            "replica us-east-1 .*minimum of 150 .*\\(100",
        ),
        (
            lambda c: c.add_schedule(entry(), dimension="read", index_name="nope"),
            "unknown global secondary index 'nope'",
        ),
        (
            lambda c: c.add_schedule(entry(), dimension="both"),
            "dimension must be 'read' or 'write'",
        ),
        (
            lambda c: c.add_capacity_window(
                "w", dimension="write", capacity=51, start="09:00", duration=Duration.hours(1)
            ),
            "window 'w'.*minimum of 51 is above",
        ),
    ],
)
def test_schedules_that_break_a_global_tables_rules_are_refused(add: Any, message: str) -> None:
    _, capacity = make()
    with pytest.raises(CapacityConfigError, match=message):
        add(capacity)


@pytest.mark.parametrize(
    "call",
    [
        lambda c, r: c.add_schedule(entry(), dimension="read", region=r),
        lambda c, r: c.add_capacity_window(
            "w", dimension="read", capacity=50, start="06:00", duration=Duration.hours(1), region=r
        ),
        lambda c, r: c.schedule_preview(region=r),
    ],
)
def test_a_region_that_is_a_token_is_refused_as_one(call: Any) -> None:
    # GIVEN a table in a stack of its own Region (us-east-1) and a replica in eu-west-1
    _, capacity = make()
    # WHEN a schedule names its Region by a token (the stack's Region as CloudFormation
    # resolves it) THEN it is refused as a token, asking for a Region's name
    with pytest.raises(CapacityConfigError) as e:
        call(capacity, cdk.Aws.REGION)
    assert str(e.value) == (
        "GlobalTableCapacity Global/Capacity: region must be known when the app is built (it "
        "picks the replica a schedule is for); got a token (a CfnParameter's or another "
        "resource's value): give one of the table's replica Regions (us-east-1, eu-west-1)"
    )


def test_a_one_region_table_in_a_stack_without_a_region_takes_the_stacks_region() -> None:
    # (its one replica is the stack's, known at deploy time only)
    stack = cdk.Stack(cdk.App(), "NewUser")
    capacity = one_region_table(stack)
    capacity.add_schedule(entry(), dimension="read", region=stack.region)
    assert [e.min_capacity for e in capacity.schedule_preview(region=stack.region)][:1] == [20]


def test_a_read_schedule_of_one_region_is_bounded_by_that_regions_maximum() -> None:
    _, capacity = make()
    capacity.add_schedule(entry(150), dimension="read", region="eu-west-1")  # 200 there
    assert [e.min_capacity for e in capacity.schedule_preview(region="eu-west-1")][:1] == [150]
    assert capacity.schedule_preview(region="us-east-1") == []


def test_a_fixed_capacity_has_no_target_to_schedule() -> None:
    _, capacity = make(table={"read": dynamodb.Capacity.fixed(5)})
    with pytest.raises(CapacityConfigError, match="table read capacity has no auto scaling"):
        capacity.add_schedule(entry(), dimension="read", region="us-east-1")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"high_water_mark": HighWaterMark()}, "at least one of them"),
        ({"high_water_mark": HighWaterMark(write=0)}, "high_water_mark.write: got 0 units a"),
        (
            {"high_water_mark": HighWaterMark(read=50_000)},
            "high_water_mark.read: got 50000 units a second; expected a whole number from 1 "
            "to table_quota \\(40000\\)",
        ),
        (
            {"index_high_water_marks": {"byCustomer": HighWaterMark(read=5, write=0)}},
            "index_high_water_marks\\['byCustomer'\\].write: got 0 units a second",
        ),
        ({"high_water_mark": 5}, "high_water_mark: got 5"),
        (
            {"index_high_water_marks": {"nope": HighWaterMark(read=5)}},
            "index_high_water_marks: got \\['nope'\\]",
        ),
        (
            {
                "table": {"warm_throughput": dynamodb.WarmThroughput(write_units_per_second=900)},
                "high_water_mark": HighWaterMark(write=2_000),
            },
            "already sets this warm throughput",
        ),
    ],
)
def test_bad_tables_and_marks_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(CapacityConfigError, match=message):
        make(**kwargs)


@pytest.mark.parametrize(
    ("marks", "message"),
    [
        (
            {"high_water_mark": HighWaterMark(write=3)},
            "high_water_mark: write (3) is below the write minimum of the table (5, its "
            "template's)",
        ),
        (
            {"high_water_mark": HighWaterMark(read=9, write=50)},
            "high_water_mark: read (9) is below the read minimum of the table in eu-west-1 "
            "(10, its template's)",
        ),
        (
            {"index_high_water_marks": {"byCustomer": HighWaterMark(read=2)}},
            "index_high_water_marks['byCustomer']: read (2) is below the read minimum of "
            "index 'byCustomer' (5, its template's)",
        ),
    ],
)
def test_a_mark_below_the_templates_minimum_is_refused(marks: dict[str, Any], message: str) -> None:
    # (as Capacity refuses a mark below its min_capacity)
    with pytest.raises(CapacityConfigError) as refused:
        make(**marks)
    assert str(refused.value) == (
        f"GlobalTableCapacity Global/Capacity: {message}; a high-water mark is the peak the "
        "table must take, at least its minimum"
    )
    make(high_water_mark=HighWaterMark(read=10, write=5))  # at the minimum: taken


def test_an_on_demand_global_table_is_refused() -> None:
    stack = new_stack()
    table = dynamodb.TableV2(stack, "T", partition_key=KEY, billing=dynamodb.Billing.on_demand())
    with pytest.raises(CapacityConfigError, match="bills PAY_PER_REQUEST.*Billing.provisioned"):
        GlobalTableCapacity(stack, "C", table=table)


def test_a_table_that_is_no_table_v2_is_refused() -> None:
    stack = new_stack()
    table = dynamodb.Table(stack, "T", partition_key=KEY)
    with pytest.raises(
        CapacityConfigError, match="expected an aws_dynamodb.TableV2.*use TableCapacity"
    ) as refused:
        GlobalTableCapacity(stack, "C", table=table)  # type: ignore[arg-type]
    # the construct given is named by its class and path, not its address in memory
    assert "table: got <aws_cdk.aws_dynamodb.Table Global/T>;" in str(refused.value)
    assert "object at 0x" not in str(refused.value)


@pytest.mark.parametrize("given", ["TableV2", "GlobalTableCapacity"])
def test_a_global_table_given_to_capacity_requests_is_refused_saying_what_serves_it(
    given: str,
) -> None:
    """Capacity requests serve aws_dynamodb.Tables: a TableV2 (or its GlobalTableCapacity)
    used to be taken as any ITable, and its requests left to fail at run time."""
    stack, capacity = make()
    table = capacity.table if given == "TableV2" else capacity
    with pytest.raises(CapacityConfigError) as refused:
        CapacityRequests(cdk.Stack(cdk.App(), "Other"), "Requests", tables=[table])  # type: ignore[list-item]
    assert str(refused.value) == (
        f"CapacityRequests Other/Requests: tables: got {shown(table)}, a global table "
        "(TableV2); capacity requests serve aws_dynamodb.Tables only (ProvisionedTable, "
        "TableCapacity); a global table's replicas follow their auto scaling, "
        "GlobalTableCapacity's schedules and the throttle-aware scaler (docs: Global tables)"
    )


@pytest.mark.parametrize("make", ["ThrottleAwareScaler", "CapacityRequests"])
def test_a_table_imported_as_a_table_v2_is_refused_saying_how_to_import_a_plain_one(
    make: str,
) -> None:
    stack = new_stack()
    imported = dynamodb.TableV2.from_table_name(stack, "Imported", "Orders")
    with pytest.raises(CapacityConfigError) as refused:
        if make == "ThrottleAwareScaler":
            ThrottleAwareScaler(stack, "Made", tables=[imported])
        else:
            CapacityRequests(stack, "Made", tables=[imported])
    message = str(refused.value)
    assert message.startswith(
        f"{make} Global/Made: tables: got <aws_cdk.aws_dynamodb._TableBaseV2Proxy "
        "Global/Imported>, a table imported as a TableV2 (a global table); "
    )
    assert message.endswith(
        "(docs: Global tables). A table that is not global is imported with "
        "aws_dynamodb.Table.from_table_name"
    )
    # while the same table imported as a Table is taken
    plain = dynamodb.Table.from_table_name(stack, "Plain", "Orders")
    assert ThrottleAwareScaler(stack, "Plain" + make, tables=[plain]).tables == (plain,)


def test_a_table_v2_given_to_a_scaler_is_refused_saying_to_wrap_it() -> None:
    stack, capacity = make()
    for add in (
        lambda: ThrottleAwareScaler(stack, "Scaler", tables=[capacity.table]),
        lambda: ThrottleAwareScaler(stack, "Other").add_table(capacity.table),
    ):
        with pytest.raises(CapacityConfigError) as refused:
            add()
        assert str(refused.value).endswith(
            "tables: got <aws_cdk.aws_dynamodb.TableV2 Global/Orders>, a global table "
            "(TableV2); the scaler manages a TableV2 through GlobalTableCapacity: pass "
            "GlobalTableCapacity(stack, id, table=...) in tables=[...] or to add_table, which "
            "manages this stack's Region's replica (docs: Global tables)"
        )
    # while the GlobalTableCapacity itself is managed
    assert ThrottleAwareScaler(stack, "Managed", tables=[capacity]).tables == (capacity.table,)


def test_the_whole_schedule_is_checked_at_synth_in_each_region() -> None:
    stack, capacity = make()
    capacity.add_schedule(entry(20, name="a"), dimension="write")
    capacity.add_schedule(entry(30, name="b"), dimension="write")  # the same minute
    with pytest.raises(Exception, match="replica us-east-1, eu-west-1: .*'a' and 'b' both fire"):
        cdk.App.of(stack).synth()  # type: ignore[union-attr]


def test_a_raise_no_entry_sets_back_is_a_warning_in_each_region() -> None:
    """A scheduled action stays in force: a raise alone keeps the write minimum up for
    good, which each replica's whole-schedule check says (a warning, as a table's)."""
    stack, capacity = make()
    capacity.add_schedule(entry(20, name="morning"), dimension="write")
    Template.from_stack(stack)
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("morning"))
    (warning,) = [str(m.entry.data) for m in found]
    assert warning.startswith("replica us-east-1, eu-west-1: table write: 'morning' raise")
    assert "no entry sets it back" in warning and "min_capacity=5" in warning
    # with its restore, none
    stack, capacity = make()
    capacity.add_capacity_window(
        "morning", dimension="write", capacity=20, start="06:00", duration=Duration.hours(2)
    )
    Template.from_stack(stack)
    assert Annotations.from_stack(stack).find_warning("*", Match.any_value()) == []


def test_replicas_added_after_the_construct_are_refused_at_synth() -> None:
    stack, capacity = make()
    capacity.table.add_replica(region="ap-south-1")
    with pytest.raises(Exception, match="replicas added after this construct \\(ap-south-1\\)"):
        cdk.App.of(stack).synth()  # type: ignore[union-attr]


def test_a_window_one_replica_refuses_is_added_to_none() -> None:
    """us-east-1's read minimum is 5, eu-west-1's 10: a read window of 8 raises the first
    and would lower the second, so it is refused, and no Region keeps it (the same name
    can be given again)."""
    _, capacity = make()
    with pytest.raises(ScheduleError, match="eu-west-1 table read window 'w': capacity: got 8"):
        capacity.add_capacity_window(
            "w", dimension="read", capacity=8, start="09:00", duration=Duration.hours(1)
        )
    assert capacity.schedule_preview(region="us-east-1") == []
    capacity.add_capacity_window(
        "w", dimension="read", capacity=20, start="09:00", duration=Duration.hours(1)
    )
    assert {
        e.placed.entry.name for e in capacity.schedule_preview(region="us-east-1", count=40)
    } == {
        "w-raise",
        "w-restore",
    }
    # a count of firings that is not 1 or more is refused, naming it
    with pytest.raises(CapacityConfigError, match=r"schedule_preview: count must be a whole .*-1$"):
        capacity.schedule_preview(region="us-east-1", count=-1)


def test_indexes_added_after_the_construct_are_refused_at_synth() -> None:
    """A GSI the construct never saw would have no schedules, no alarms and no scaling by
    the scaler, while a schedule on it is refused as unknown: the synth fails instead."""
    stack, capacity = make()
    capacity.table.add_global_secondary_index(
        index_name="late",
        partition_key=dynamodb.Attribute(name="late", type=dynamodb.AttributeType.STRING),
    )
    with pytest.raises(Exception, match="global secondary indexes added after this construct"):
        cdk.App.of(stack).synth()  # type: ignore[union-attr]


def test_a_token_high_water_mark_is_left_to_cloudformation() -> None:
    stack = new_stack()
    token: Any = cdk.CfnParameter(stack, "Warm", type="Number").value_as_number
    GlobalTableCapacity(
        stack, "Capacity", table=global_table(stack), high_water_mark=HighWaterMark(read=token)
    )
    (table,) = Template.from_stack(stack).find_resources("AWS::DynamoDB::GlobalTable").values()
    assert table["Properties"]["WarmThroughput"] == {"ReadUnitsPerSecond": {"Ref": "Warm"}}


def test_a_schedule_error_is_still_a_schedule_error() -> None:
    _, capacity = make()
    with pytest.raises(ScheduleError, match="cron"):
        capacity.add_schedule(
            ScheduleEntry(name="x", schedule="cron(nope)", min_capacity=5), dimension="write"
        )


def scaler_settings(template: Template) -> dict[str, Any]:
    """The scaler function's settings, as the tick will read them (JSON decoded)."""
    (function,) = [
        f
        for f in template.find_resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"].endswith("scaler.handler.lambda_handler")
    ]
    variables = function["Properties"]["Environment"]["Variables"]
    table = "Orders"  # the table's name, where the template names it by a Ref
    out = {}
    for key in ("SCALER_TABLES", "SCALER_OVERRIDES", "SCALER_REPLICAS"):
        value = variables[key]
        if isinstance(value, dict) and "Fn::Join" in value:
            value = "".join(p if isinstance(p, str) else table for p in value["Fn::Join"][1])
        elif isinstance(value, dict):  # {"Ref": the table}
            value = table
        out[key] = value if key == "SCALER_TABLES" else json.loads(value)
    return out


def test_each_regions_scaler_manages_its_replica_on_every_replicas_writes(
    synthesized: tuple[Template, Path],
) -> None:
    template, outdir = synthesized
    eu = Template.from_json(json.loads((outdir / "GlobalOrdersEu.template.json").read_text()))
    here, there = scaler_settings(template), scaler_settings(eu)
    # the table's own stack names it by a Ref; the other Region's stack by its name
    assert here["SCALER_TABLES"] == "Orders" and there["SCALER_TABLES"] == "orders"
    assert here["SCALER_REPLICAS"] == {"Orders": {"regions": ["eu-west-1"]}}
    assert there["SCALER_REPLICAS"] == {"orders": {"regions": ["us-east-1"]}}
    # the bounds are the template's in each Region: reads per replica, writes one setting
    write = {"min": 5, "max": 50, "target": 70}
    assert here["SCALER_OVERRIDES"] == {
        "Orders": {"read": {"min": 5, "max": 100, "target": 70}, "write": write}
    }
    assert there["SCALER_OVERRIDES"] == {
        "orders": {"read": {"min": 10, "max": 200, "target": 70}, "write": write}
    }
    # each reads back as a valid configuration
    for settings in (here, there):
        config = ScalerConfig.from_env(
            {k: v if isinstance(v, str) else json.dumps(v) for k, v in settings.items()}
        )
        (name,) = config.tables
        assert config.replica_regions(name) in (("eu-west-1",), ("us-east-1",))


def replica_app(
    *, name: str | None = "orders", region: str | None = "eu-west-1", read: Any = None
) -> tuple[GlobalTableCapacity, cdk.Stack]:
    """A global table (named ``name``) in us-east-1 and eu-west-1, and a stack in
    ``region`` for a replica's scaler."""
    app = cdk.App()
    stack = new_stack(app)
    extra: dict[str, Any] = {} if name is None else {"table_name": name}
    table = global_table(stack, read=read, **extra)
    capacity = GlobalTableCapacity(stack, "Capacity", table=table)
    env = cdk.Environment(region=region) if region else None
    return capacity, cdk.Stack(app, "Other", env=env)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"region": "ap-south-1"}, "no replica in ap-south-1; the table's replicas are in"),
        ({"region": None}, "a replica's scaler in a stack other than the table's needs a stack"),
        ({"name": None}, "give the TableV2 a table_name"),
        (
            {"read": dynamodb.Capacity.fixed(10), "region": "us-east-1"},
            "replica us-east-1: read capacity is fixed; the scaler manages an autoscaled",
        ),
    ],
)
def test_a_replica_that_cannot_be_managed_is_refused(kwargs: dict[str, Any], message: str) -> None:
    capacity, other = replica_app(**kwargs)
    with pytest.raises(CapacityConfigError, match="GlobalTableCapacity Global/Capacity") as e:
        capacity.replica(other)
    assert message in str(e.value)


def one_region_table(stack: cdk.Stack) -> GlobalTableCapacity:
    """A provisioned TableV2 in the stack's Region alone, and its GlobalTableCapacity."""
    table = dynamodb.TableV2(
        stack,
        "Orders",
        partition_key=KEY,
        billing=dynamodb.Billing.provisioned(
            read_capacity=dynamodb.Capacity.autoscaled(max_capacity=100),
            write_capacity=dynamodb.Capacity.autoscaled(max_capacity=50),
        ),
    )
    return GlobalTableCapacity(stack, "Capacity", table=table)


def test_a_one_region_table_is_managed_in_a_stack_without_a_region() -> None:
    """As a ProvisionedTable is: its replica is the stack's, wherever the stack deploys."""
    stack = cdk.Stack(cdk.App(), "NewUser")
    capacity = one_region_table(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler")
    scaler.add_table(capacity)
    settings = scaler_settings(Template.from_stack(stack))
    assert settings["SCALER_REPLICAS"] == {"Orders": {"regions": []}}
    assert settings["SCALER_OVERRIDES"] == {
        "Orders": {
            "read": {"min": 1, "max": 100, "target": 70},
            "write": {"min": 1, "max": 50, "target": 70},
        }
    }
    config = ScalerConfig.from_env(
        {k: v if isinstance(v, str) else json.dumps(v) for k, v in settings.items()}
    )
    assert config.tables == ("Orders",) and config.replica_regions("Orders") == ()


def test_a_scaler_in_another_stack_without_a_region_is_refused() -> None:
    app = cdk.App()
    capacity = one_region_table(cdk.Stack(app, "NewUser"))
    other = cdk.Stack(app, "Other")
    with pytest.raises(CapacityConfigError) as e:
        capacity.replica(other)
    assert str(e.value) == (
        "GlobalTableCapacity NewUser/Capacity: a replica's scaler in a stack other than the "
        "table's needs a stack with its Region (env=Environment(region=...)), by which it "
        "finds its replica; Other has none"
    )


def test_a_replica_goes_to_the_scaler_of_its_own_region() -> None:
    capacity, other = replica_app()
    replica = capacity.replica(other)
    assert capacity.replica(other).table.node.path == replica.table.node.path  # imported once
    with pytest.raises(CapacityConfigError) as e:
        ThrottleAwareScaler(capacity, "Scaler", tables=[replica])
    assert (
        "the replica in eu-west-1 is managed by a scaler in eu-west-1; this one is in us-east-1"
        in (str(e.value))
    )


def accounts_app(table_account: str | None) -> tuple[GlobalTableCapacity, cdk.App]:
    """A global table named "orders" in us-east-1 and eu-west-1, its stack in
    ``table_account`` (None: known at deploy time only)."""
    app = cdk.App()
    stack = cdk.Stack(app, "Global", env=cdk.Environment(account=table_account, region="us-east-1"))
    table = global_table(stack, table_name="orders")
    return GlobalTableCapacity(stack, "Capacity", table=table), app


def test_a_replicas_scaler_in_another_account_is_refused_naming_both() -> None:
    """Every replica of a global table is in the table's account: a scaler in a stack of
    another account would import, grant and alarm on a table of that name there."""
    capacity, app = accounts_app("111111111111")
    other = cdk.Stack(app, "Other", env=cdk.Environment(account="222222222222", region="eu-west-1"))
    expected = (
        "the replica of global table 'orders' in eu-west-1 is in the table's account, "
        "111111111111; the scaler's stack, Other, is in account 222222222222: a replica's "
        "scaler must be in a stack of account 111111111111 (the table's), in the replica's "
        "Region"
    )
    # WHEN its replica is asked for there THEN it is refused, nothing imported there
    with pytest.raises(CapacityConfigError) as e:
        capacity.replica(other)
    assert str(e.value) == f"GlobalTableCapacity Global/Capacity: {expected}"
    assert other.node.children == []
    # WHEN the replica of a stack of the table's account is given to that scaler THEN the
    # scaler refuses it
    same = cdk.Stack(app, "Same", env=cdk.Environment(account="111111111111", region="eu-west-1"))
    replica = capacity.replica(same)
    with pytest.raises(CapacityConfigError) as e:
        ThrottleAwareScaler(other, "Scaler", tables=[replica])
    assert str(e.value) == f"ThrottleAwareScaler Other/Scaler: {expected}"
    ThrottleAwareScaler(same, "Scaler", tables=[replica])  # the table's account: taken


@pytest.mark.parametrize(
    ("table_account", "scaler_account"), [(None, "222222222222"), ("111111111111", None)]
)
def test_an_account_known_at_deploy_time_only_is_taken_on_trust(
    table_account: str | None, scaler_account: str | None
) -> None:
    capacity, app = accounts_app(table_account)
    other = cdk.Stack(app, "Other", env=cdk.Environment(account=scaler_account, region="eu-west-1"))
    scaler = ThrottleAwareScaler(other, "Scaler", tables=[capacity.replica(other)])
    assert other.resolve(scaler.tables[0].table_name) == "orders"


def test_a_replica_whose_other_regions_are_no_regions_names_is_refused() -> None:
    """The other replicas' Regions go into the scaler's settings, which its Lambda reads
    as untrusted: a replica Region that is no Region's name is refused at synth."""
    app = cdk.App()
    stack = new_stack(app)
    table = dynamodb.TableV2(
        stack,
        "Orders",
        table_name="orders",
        partition_key=KEY,
        billing=dynamodb.Billing.provisioned(
            read_capacity=dynamodb.Capacity.autoscaled(max_capacity=100),
            write_capacity=dynamodb.Capacity.autoscaled(max_capacity=50),
        ),
        replicas=[dynamodb.ReplicaTableProps(region="Moon Base")],
    )
    capacity = GlobalTableCapacity(stack, "Capacity", table=table)
    with pytest.raises(CapacityConfigError) as e:
        capacity.replica(stack)
    assert "the replica in us-east-1 reads its other replicas' writes in their Regions" in str(
        e.value
    )
    assert "'Moon Base'" in str(e.value)


def test_two_global_tables_of_one_id_give_each_its_own_replica() -> None:
    """Two TableV2s with the same construct id under different parents, named apart: each
    replica imported into another Region's stack is its own table."""
    app = cdk.App()
    stack = new_stack(app)
    found = {}
    for parent, name in (("A", "orders"), ("B", "users")):
        scope = Construct(stack, parent)
        table = global_table(scope, table_name=name)  # id "Orders" under each parent
        found[name] = GlobalTableCapacity(scope, "Capacity", table=table)
    other = cdk.Stack(app, "Other", env=cdk.Environment(region="eu-west-1"))
    names = {n: other.resolve(c.replica(other).table.table_name) for n, c in found.items()}
    assert names == {"orders": "orders", "users": "users"}


def test_the_providers_function_waits_for_its_roles_policy(
    synthesized: tuple[Template, Path],
) -> None:
    # the framework's onEvent function is created once its role may invoke the schedule
    # function, and deleted before that policy goes (the policy names no table: no cycle)
    template = synthesized[0].to_json()["Resources"]
    (policy,) = [
        k for k in template if k.startswith("ReplicaScheduleProviderFrameworkOnEventPolicy")
    ]
    (framework,) = [
        k
        for k, v in template.items()
        if v["Type"] == "AWS::Lambda::Function" and "frameworkonEvent" in k
    ]
    assert policy in template[framework]["DependsOn"]


def test_the_replica_schedule_function_alarms_on_its_errors_once_a_stack() -> None:
    # GIVEN two global tables' capacities in one stack, given no topic
    stack = new_stack()
    first = GlobalTableCapacity(stack, "Capacity", table=global_table(stack))
    scope = Construct(stack, "Other")
    second = GlobalTableCapacity(scope, "Capacity", table=global_table(scope))
    template = Template.from_stack(stack)
    # THEN one alarm, on the shared function's errors, notifying the stack's library topic
    (alarm,) = template.find_resources("AWS::CloudWatch::Alarm").values()
    (function,) = [
        k
        for k, f in template.find_resources("AWS::Lambda::Function").items()
        if f["Properties"].get("Handler", "").endswith("global_tables.handler.on_event")
    ]
    props = alarm["Properties"]
    assert (props["Namespace"], props["MetricName"]) == ("AWS/Lambda", "Errors")
    assert props["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function}}]
    assert (props["Threshold"], props["Period"]) == (1, 300)
    assert props["AlarmActions"] == alarm_actions_of(stack, first)
    assert first.alarms["Errors"] is second.alarms["Errors"]
    # AND a third asking for another topic, or other options, is refused by name, naming
    # the capacity that set them
    for name, kwargs in (
        ("alarm_topic", {"alarm_topic": sns.Topic(stack, "Mine")}),
        ("alarm_options", {"alarm_options": {"Errors": AlarmOptions(threshold=3)}}),
    ):
        elsewhere = Construct(stack, f"Third{name}")
        with pytest.raises(
            CapacityConfigError,
            match=f"{name}: got .*; but GlobalTableCapacity Global/Capacity made the stack's one",
        ):
            GlobalTableCapacity(elsewhere, "Capacity", table=global_table(elsewhere), **kwargs)


def test_later_capacities_may_leave_the_alarms_out_or_give_the_same() -> None:
    # GIVEN a capacity given an imported topic and a threshold
    stack = new_stack()
    arn = "arn:aws:sns:us-east-1:123456789012:pager"
    first = GlobalTableCapacity(
        stack,
        "Capacity",
        table=global_table(stack),
        alarm_topic=sns.Topic.from_topic_arn(stack, "Pager", arn),
        alarm_options={"Errors": AlarmOptions(threshold=2)},
    )
    # WHEN others leave them out, or give the same topic imported again and equal options
    second_scope, third_scope = Construct(stack, "Second"), Construct(stack, "Third")
    second = GlobalTableCapacity(second_scope, "Capacity", table=global_table(second_scope))
    third = GlobalTableCapacity(
        third_scope,
        "Capacity",
        table=global_table(third_scope),
        alarm_topic=sns.Topic.from_topic_arn(third_scope, "Pager", arn),
        alarm_options={"Errors": AlarmOptions(threshold=2, evaluation_periods=1)},
    )
    # THEN all share the first one's alarm, and no library topic is made
    assert first.alarms["Errors"] is second.alarms["Errors"] is third.alarms["Errors"]
    assert second.alarm_topic is first.alarm_topic
    template = Template.from_stack(stack)
    assert template.find_resources("AWS::SNS::Topic") == {}
    (alarm,) = template.find_resources("AWS::CloudWatch::Alarm").values()
    assert alarm["Properties"]["AlarmActions"] == [arn]
    assert alarm["Properties"]["Threshold"] == 2
    assert first.metric_errors().metric_name == "Errors"


def test_the_replica_schedule_alarm_can_be_turned_off() -> None:
    stack, capacity = make(alarm_options={"Errors": AlarmOptions(enabled=False)})
    assert Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm") == {}
    assert dict(capacity.alarms) == {}


def test_global_tables_given_function_options_made_alike_share_the_function() -> None:
    # GIVEN two global tables of one stack, each capacity given its own FunctionOptions,
    # alike (two jsii Durations and Architectures, made apart)
    stack = new_stack()
    for parent, name in (("A", "orders"), ("B", "users")):
        scope = Construct(stack, parent)
        GlobalTableCapacity(
            scope,
            "Capacity",
            table=global_table(scope, table_name=name),
            function_options={
                "ReplicaSchedules": FunctionOptions(
                    timeout=Duration.minutes(3), architecture=lambda_.Architecture.X86_64
                )
            },
        )
    # WHEN synthesized, THEN both share the stack's one replica-schedule function, as asked
    template = Template.from_stack(stack)
    assert template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Architectures": ["x86_64"], "Timeout": 180}}
    )


def test_global_tables_given_different_function_options_are_refused_naming_both() -> None:
    stack = new_stack()
    for parent, name, memory in (("A", "orders", 512), ("B", "users", 1024)):
        scope = Construct(stack, parent)
        options = {"ReplicaSchedules": FunctionOptions(memory_size=memory)}
        table = global_table(scope, table_name=name)
        if parent == "A":
            GlobalTableCapacity(scope, "Capacity", table=table, function_options=options)
            continue
        with pytest.raises(CapacityConfigError) as refused:
            GlobalTableCapacity(scope, "Capacity", table=table, function_options=options)
    assert (
        "GlobalTableCapacity Global/B/Capacity: function_options['ReplicaSchedules']: got "
        "1024 MB, a timeout of 2 minutes, logs kept ONE_YEAR, arm64; but GlobalTableCapacity "
        "Global/A/Capacity made the stack's one replica-schedule provider with 512 MB, a "
        "timeout of 2 minutes, logs kept ONE_YEAR, arm64: every GlobalTableCapacity"
    ) in str(refused.value)


def test_more_scheduled_actions_than_a_target_takes_are_refused_at_synth() -> None:
    # GIVEN 201 entries on the write targets (every replica's)
    stack, capacity = make()
    for n in range(201):
        capacity.add_schedule(
            ScheduleEntry(
                name=f"e{n}", schedule=f"cron({n % 60} {n // 60} * * ? *)", min_capacity=20
            ),
            dimension="write",
        )
    # THEN synthesis fails naming the target and the limit in each Region
    with pytest.raises(Exception) as caught:
        cdk.App.of(stack).synth()  # type: ignore[union-attr]
    for region in ("us-east-1", "eu-west-1"):
        assert (
            f"replica {region}: GlobalTableCapacity Global/Capacity replica {region} table "
            "write: 201 scheduled actions (a window counts 2: its raise and its restore); "
            "Application Auto Scaling keeps at most 200 a scalable target"
        ) in str(caught.value)


def test_more_actions_in_a_region_than_the_function_puts_are_refused_at_synth() -> None:
    # GIVEN 101 entries on the write targets and 100 on the read ones: 201 in each Region
    stack, capacity = make()
    for dimension, count in (("write", 101), ("read", 100)):
        for n in range(count):
            capacity.add_schedule(
                ScheduleEntry(
                    name=f"{dimension}{n}",
                    schedule=f"cron({n % 60} {n // 60} * * ? *)",
                    min_capacity=20,
                ),
                dimension=dimension,
            )
    # THEN synthesis fails in each Region, naming the function's limit
    with pytest.raises(Exception) as caught:
        cdk.App.of(stack).synth()  # type: ignore[union-attr]
    assert (
        "replica us-east-1, eu-west-1: GlobalTableCapacity Global/Capacity: 201 scheduled "
        "actions in one Region, its table's and every GSI's together; the replica-schedule "
        "function puts at most 200 a Region"
    ) in str(caught.value)
