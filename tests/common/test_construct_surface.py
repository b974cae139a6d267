"""The constructs behave like their peers: ProvisionedTable's ITable members typed and
documented as aws-cdk-lib's; the alarms of the scaler, the capacity requests and the fleet
advisor returned by stable id and shaped by ``alarm_options``; ``metric_*`` methods on the
EMF metrics the run-time sends; ``function_options`` merged over each function's defaults
and refused, naming the constraint, where the run-time's deadlines need it. Synthesized with
the real aws-cdk-lib (and the five cdk-nag packs where the template changes)."""

from __future__ import annotations

import inspect
import json
import math
import re
import typing
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match, Template
from constructs import IConstruct

import ddb_capacity_runtime
from constructs_pkg import (
    AlarmOptions,
    CapacityConfigError,
    CapacityRequests,
    FastPath,
    FleetAdvisor,
    FunctionOptions,
    ProvisionedTable,
    ThrottleAwareScaler,
    acknowledge,
    apply_nag_packs,
)
from constructs_pkg.common._function_options import (
    DEFAULT_ARCHITECTURE,
    FunctionConfig,
    FunctionDefaults,
    function_configs,
)
from constructs_pkg.common._runtime import ARCHITECTURE
from constructs_pkg.requests._capacity_requests import FUNCTION_DEFAULTS as REQUEST_FUNCTIONS
from constructs_pkg.requests._capacity_requests import REQUEST_METRICS
from constructs_pkg.scaler._scaler import FUNCTION_DEFAULTS as SCALER_FUNCTIONS
from constructs_pkg.scaler._scaler import NAMESPACE, SCALER_METRICS
from ddb_capacity_runtime.core.deadline import MARGIN
from ddb_capacity_runtime.requests.broker import NAMESPACE as BROKER_NAMESPACE
from ddb_capacity_runtime.requests.client import BROKER_MAX_WAIT
from ddb_capacity_runtime.scaler.handler import tick_deadline
from tests.support.alarm_style import alarm_actions_of
from tests.support.construct_surface import PK, SMALL, settled
from tests.support.docs import run_block
from tests.support.shape import ROOT

T = TypeVar("T")


def cfn_of(construct: IConstruct, kind: type[T]) -> T:
    """The CloudFormation resource ``construct`` wraps (its default child), as ``kind``."""
    child = construct.node.default_child
    assert isinstance(child, kind), child
    return child


def orders(stack: cdk.Stack) -> ProvisionedTable:
    table = ProvisionedTable(stack, "Orders", partition_key=PK, read=SMALL, write=SMALL)
    table.add_global_secondary_index(index_name="byDay", partition_key=PK, read=SMALL, write=SMALL)
    return table


def alarms_of(template: Template) -> list[dict[str, Any]]:
    found = template.find_resources("AWS::CloudWatch::Alarm").values()
    return [{"AlarmDescription": "", **a["Properties"]} for a in found]


def refused(make: typing.Callable[[cdk.Stack], object]) -> str:
    with pytest.raises(CapacityConfigError) as caught:
        make(cdk.Stack(cdk.App(), "Test"))
    return str(caught.value)


# ---------------------------------------------------------------------- ITable delegates

#: ITable's own members and IResource's (a Construct's, such as ``node``, are inherited).
ITABLE_MEMBERS = sorted(
    name
    for name in dir(dynamodb.ITable)
    if not name.startswith("_") and name not in dir(IConstruct) and name != "stack"
)


@pytest.mark.parametrize("name", ITABLE_MEMBERS)
def test_every_itable_member_is_typed_and_documented_on_provisioned_table(name: str) -> None:
    # GIVEN a member of aws-cdk-lib's ITable
    member = inspect.getattr_static(ProvisionedTable, name)
    function = member.fget if isinstance(member, property) else member
    assert function is not None
    # THEN the library defines it itself (TableCapacity's delegation), with a docstring and
    # no Any in its types
    assert function.__qualname__.startswith(("TableCapacity.", "TableDelegation.")), (
        function.__qualname__
    )
    assert (function.__doc__ or "").strip(), f"{name} has no docstring"
    hints = typing.get_type_hints(function)
    assert "return" in hints
    assert all(hint is not Any for hint in hints.values()), (name, hints)


def test_grants_and_metrics_return_what_aws_cdk_returns(stack: cdk.Stack) -> None:
    # GIVEN a ProvisionedTable and a role
    table = orders(stack)
    role = iam.Role(stack, "Worker", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    # WHEN the role is granted read and write, and metrics are asked for
    grant = table.grant_read_write_data(role)
    consumed = table.metric_consumed_read_capacity_units(period=Duration.minutes(1))
    throttled = table.metric_throttled_requests_for_operations(
        operations=[dynamodb.Operation.GET_ITEM]
    )
    # THEN an iam.Grant on the table, and CloudWatch metrics of the table
    assert isinstance(grant, iam.Grant) and grant.success
    assert isinstance(consumed, cloudwatch.Metric)
    assert consumed.namespace == "AWS/DynamoDB"
    assert consumed.metric_name == "ConsumedReadCapacityUnits"
    assert consumed.period.to_seconds() == 60
    assert consumed.dimensions is not None
    assert stack.resolve(consumed.dimensions["TableName"]) == stack.resolve(table.table_name)
    assert isinstance(throttled, cloudwatch.MathExpression)
    Template.from_stack(stack).has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Action": Match.array_with(["dynamodb:PutItem"])})]
                )
            }
        },
    )


# ---------------------------------------------------------------------- the scaler's alarms


def test_the_scaler_returns_every_alarm_it_makes_by_stable_id(stack: cdk.Stack) -> None:
    # GIVEN a sharded scaler of a table with a GSI
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[orders(stack)], sharded=True)
    # THEN every alarm of the template is in `alarms`, under a name of what it watches
    assert set(scaler.alarms) == {
        "Errors",
        "RunsDropped",
        "RunsExpired",
        "DeadLetters",
        "NotRunning",
        "BatchErrors",
        "BatchesLate",
        "BadTargets",
        "RefusedTags",
        "IgnoredTags",
        "MetricsStalled",
        "HoldsDropped",
        "PlansNotKept",
        "PinnedAtMax",
        "Updating",
        "HotKey/Orders",
        "SustainedThrottling/Orders-read",
        "SustainedThrottling/Orders-write",
        "SustainedThrottling/Orders-byDay-read",
        "SustainedThrottling/Orders-byDay-write",
    }
    assert all(isinstance(a, cloudwatch.Alarm) for a in scaler.alarms.values())
    assert len(alarms_of(Template.from_stack(stack))) == len(scaler.alarms)
    # AND a scaler that owns target values alarms on those it cannot write
    other = cdk.Stack(cdk.App(), "Owning")
    owner = ThrottleAwareScaler(other, "Scaler", tables=[orders(other)], own_target=True)
    assert set(owner.alarms) ^ set(scaler.alarms) == {
        "TargetNotOwned",
        "BatchErrors",
        "BatchesLate",
        "DeadLetters",  # a sharded scaler's batches' queue
    }
    # AND the mapping is read-only
    with pytest.raises(TypeError):
        scaler.alarms["Errors"] = scaler.alarms["NotRunning"]  # type: ignore[index]


def test_an_alarm_takes_four_actions_of_the_apps_beside_its_topic(stack: cdk.Stack) -> None:
    # GIVEN four pager topics for the errors alarm: CloudWatch's five with the scaler's topic
    pagers = [sns.Topic(stack, f"Pager{i}") for i in range(4)]
    actions = [cw_actions.SnsAction(p) for p in pagers]
    scaler = ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[orders(stack)],
        alarm_options={"Errors": AlarmOptions(actions=actions)},
    )
    # THEN the alarm notifies all five
    errors = stack.resolve(cfn_of(scaler.alarms["Errors"], cloudwatch.CfnAlarm).alarm_actions)
    assert len(errors) == 5


def test_alarm_options_turn_off_rethreshold_and_add_actions(stack: cdk.Stack) -> None:
    # GIVEN a pager topic, and options for three alarms
    pager = sns.Topic(stack, "Pager")
    scaler = ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[orders(stack)],
        alarm_options={
            "PinnedAtMax": AlarmOptions(enabled=False),
            "SustainedThrottling": AlarmOptions(threshold=50, evaluation_periods=3),
            "Errors": AlarmOptions(actions=[cw_actions.SnsAction(pager)]),
        },
    )
    template = Template.from_stack(stack)
    alarms = alarms_of(template)
    # THEN the alarm turned off is made nowhere
    assert "PinnedAtMax" not in scaler.alarms
    Annotations.from_stack(stack).has_warning(
        "/Test/Scaler", Match.string_like_regexp("alarm PinnedAtMax is off")
    )
    assert not [a for a in alarms if "sat at its max" in a["AlarmDescription"]]
    # AND every throttling alarm takes 3 minutes of 50 throttles (the default: 10 of 1)
    throttling = [a for a in alarms if a["AlarmDescription"].startswith("Sustained")]
    assert len(throttling) == 4
    assert {
        (a["Threshold"], a["EvaluationPeriods"], a["DatapointsToAlarm"]) for a in throttling
    } == {(50, 3, 3)}
    # AND the errors alarm notifies the pager besides the scaler's OpsItem
    errors = stack.resolve(cfn_of(scaler.alarms["Errors"], cloudwatch.CfnAlarm).alarm_actions)
    assert errors == [
        *alarm_actions_of(stack, scaler),
        {"Ref": stack.get_logical_id(cfn_of(pager, sns.CfnTopic))},
    ]


def test_a_new_evaluation_period_count_is_described_in_time(stack: cdk.Stack) -> None:
    # GIVEN the updating alarm over 7 ticks instead of 5
    ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[orders(stack)],
        alarm_options={"Updating": AlarmOptions(evaluation_periods=7)},
    )
    # THEN its description says 7 ticks, 14 minutes at the default tick
    Template.from_stack(stack).has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "EvaluationPeriods": 7,
            "DatapointsToAlarm": 7,
            "AlarmDescription": Match.string_like_regexp("for 7 ticks in a row \\(14 minutes\\)"),
        },
    )


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            {"Eror": AlarmOptions()},
            "alarm_options: unknown alarm id 'Eror' (did you mean 'Errors'?); expected one of: "
            "Errors, DeadLetters, NotRunning,",
        ),
        ({"Errors": 1}, "alarm_options['Errors']: got 1; expected an AlarmOptions"),
        ([AlarmOptions()], "alarm_options: got [AlarmOptions("),
        (
            {"Errors": AlarmOptions(threshold=0)},
            "alarm_options['Errors'].threshold: got 0; expected a number above 0, or None",
        ),
        ({"Errors": AlarmOptions(threshold=math.nan)}, "threshold: got nan; expected a number"),
        ({"Errors": AlarmOptions(threshold=True)}, "threshold: got True; expected a number"),
        (
            {"Errors": AlarmOptions(evaluation_periods=0)},
            "alarm_options['Errors'].evaluation_periods: got 0; expected a whole number from 1",
        ),
        (  # an alarm turned off is checked all the same: it may be turned on again
            {"Errors": AlarmOptions(enabled=False, evaluation_periods=0)},
            "alarm_options['Errors'].evaluation_periods: got 0; expected a whole number from 1 "
            "to 1,440",
        ),
        (
            {"Errors": AlarmOptions(evaluation_periods=721)},
            "(1 day of 2 minutes periods): alarm_options['Errors'].evaluation_periods: got 721; "
            "expected a whole number from 1 to 720",
        ),
        (
            {"Errors": AlarmOptions(enabled="no")},  # type: ignore[arg-type]
            "alarm_options['Errors'].enabled: got 'no'; expected True or False",
        ),
        (
            {"Errors": AlarmOptions(actions=[object()])},  # type: ignore[list-item]
            "alarm_options['Errors'].actions: got <object object",
        ),
        (
            {"Errors": AlarmOptions(actions="arn:aws:sns:us-east-1:1:pager")},  # type: ignore[arg-type]
            "alarm_options['Errors'].actions: got 'arn:aws:sns:us-east-1:1:pager'; expected a "
            "list of CloudWatch alarm actions",
        ),
        (
            {"Errors": AlarmOptions(actions=[SimpleNamespace(bind=print)] * 5)},
            "alarm_options['Errors'].actions: got 5; expected at most 4 (CloudWatch takes 5 "
            "alarm actions, and the alarm topic is one)",
        ),
    ],
)
def test_bad_alarm_options_are_refused_by_name(options: Any, expected: str) -> None:
    message = refused(
        lambda s: ThrottleAwareScaler(s, "Scaler", tables=[orders(s)], alarm_options=options)
    )
    assert message.startswith("ThrottleAwareScaler Test/Scaler"), message
    assert expected in message, message


# ---------------------------------------------------------------------- the scaler's metrics


def test_scaler_metrics_are_the_ticks_emf_metrics(stack: cdk.Stack) -> None:
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[orders(stack)], tick=Duration.minutes(5))
    # the tick's own record: the scaler's deployment's (dimension StateStore, its state
    # store's name), Sum over a tick
    store = stack.resolve(scaler.state_store.table_name)
    failures = scaler.metric_failures()
    assert (failures.namespace, failures.metric_name, failures.statistic) == (
        NAMESPACE,
        "Failures",
        "Sum",
    )
    assert failures.period.to_seconds() == 300
    assert stack.resolve(failures.dimensions) == {"StateStore": store}
    # a table's record: dimension TableName; options win over the defaults
    at_max = scaler.metric_capacity_at_max("orders", statistic="Maximum", period=Duration.hours(1))
    assert at_max.dimensions == {"TableName": "orders"}
    assert (at_max.metric_name, at_max.statistic, at_max.period.to_seconds()) == (
        "CapacityAtMax",
        "Maximum",
        3600,
    )
    assert scaler.metric_failures(table_name="orders").dimensions == {"TableName": "orders"}
    # the worst-table twins, for the deployment (each table's record publishes them so too)
    worst = scaler.metric("BadTargets", statistic="Maximum")
    assert worst.metric_name == "BadTargets"
    assert stack.resolve(worst.dimensions) == {"StateStore": store}
    assert scaler.metric_key_range_throttle_events("orders").metric_name == "KeyRangeThrottleEvents"
    # AND a user's alarm on one synthesizes
    scaler.metric_deadline_passed().create_alarm(stack, "Late", threshold=1, evaluation_periods=1)
    Template.from_stack(stack).has_resource_properties(
        "AWS::CloudWatch::Alarm", {"MetricName": "DeadlinePassed", "Namespace": NAMESPACE}
    )


def test_a_metrics_own_dimensions_win_over_its_table_name(stack: cdk.Stack) -> None:
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[orders(stack)])
    # GIVEN a table's metric with dimensions of the caller's, one of them its TableName
    given = {"TableName": "orders-eu", "Tier": "gold"}
    metric = scaler.metric_capacity_at_max("orders", dimensions_map=given)
    # THEN the caller's dimensions win, as the metric's other options do
    assert metric.dimensions == given


@pytest.mark.parametrize(
    ("name", "table", "expected"),
    [
        ("Failure", None, "metric: got 'Failure'; expected one of the metrics it sends: "),
        ("Decisions", None, "metric 'Decisions' needs table_name (it is sent per table)"),
        ("SharedFailures", "orders", "metric 'SharedFailures' is sent once a run"),
    ],
)
def test_a_metric_the_scaler_does_not_send_is_refused(
    stack: cdk.Stack, name: str, table: str | None, expected: str
) -> None:
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[orders(stack)])
    with pytest.raises(CapacityConfigError, match=None) as caught:
        scaler.metric(name, table_name=table)
    assert expected in str(caught.value), caught.value


RUNTIME = Path(ddb_capacity_runtime.__file__).parent


@pytest.mark.parametrize("name", sorted(set(SCALER_METRICS) | set(REQUEST_METRICS)), ids=str)
def test_every_metric_offered_is_one_the_runtime_sends(name: str) -> None:
    # GIVEN the run-time's source: each metric name a construct offers is sent there
    sources = "\n".join(p.read_text() for p in RUNTIME.rglob("*.py"))
    assert f'"{name}"' in sources, f"{name} is offered but never sent"


def test_the_namespaces_are_the_runtimes() -> None:
    assert NAMESPACE == BROKER_NAMESPACE == "DynamoDBCapacity"


# ---------------------------------------------------------------------- capacity requests


def test_capacity_requests_alarms_and_metrics(stack: cdk.Stack) -> None:
    # GIVEN capacity requests with a fast path, one alarm off and one re-thresholded
    requests = CapacityRequests(
        stack,
        "Requests",
        tables=[orders(stack)],
        fast_path=FastPath(),
        alarm_options={
            "ReportsRefused": AlarmOptions(enabled=False),
            "SurgeUnits": AlarmOptions(threshold=2_500),
        },
    )
    alarms = alarms_of(Template.from_stack(stack))
    # THEN the alarms made are returned by id, the one turned off absent
    assert set(requests.alarms) == {
        "BrokerErrors",
        "TimedOut",
        "HoldsDropped",
        "RestorerRunsDropped",
        "RestorerRunsExpired",
        "HoldsBusy",
        "SignalsErrors",
        "SurgeBudget",
        "SurgesUnconfirmed",
        "SurgeUnits",
        "SurgesFailed",
        "SurgeEntriesIgnored",
        "CombinerFull",
        "SignalsDropped",
        "BucketFailed",
        "CorroborationFailed",
        "HookFailures",
    }
    assert len(alarms) == len(requests.alarms)
    assert not [a for a in alarms if a.get("MetricName") == "ReportsRefused"]
    (units,) = [a for a in alarms if a.get("MetricName") == "SurgeUnits"]
    assert units["Threshold"] == 2_500 and units["Period"] == 3600
    # AND its metrics are the run-time's counts
    reports = requests.metric_reports_refused()
    assert (reports.namespace, reports.metric_name, reports.period.to_seconds()) == (
        BROKER_NAMESPACE,
        "ReportsRefused",
        300,
    )
    assert requests.metric_refused().metric_name == "Refused"
    assert requests.metric_timed_out().metric_name == "TimedOut"
    assert requests.metric_holds_dropped().metric_name == "HoldsDropped"


def test_capacity_requests_refuse_an_alarm_of_the_scaler() -> None:
    message = refused(
        lambda s: CapacityRequests(
            s, "R", tables=[orders(s)], alarm_options={"Errors": AlarmOptions()}
        )
    )
    assert "CapacityRequests Test/R: alarm_options: unknown alarm id 'Errors'" in message
    assert "expected one of: BrokerErrors, TimedOut, HoldsDropped," in message


# ---------------------------------------------------------------------- function options


def function_of(template: Template, description: str) -> dict[str, Any]:
    (found,) = template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Description": description}}
    ).values()
    properties: dict[str, Any] = found["Properties"]
    return properties


def retention_of(template: Template, function: dict[str, Any]) -> int:
    group = function["LoggingConfig"]["LogGroup"]["Ref"]
    days: int = template.to_json()["Resources"][group]["Properties"]["RetentionInDays"]
    return days


def test_scaler_function_options_merge_over_the_defaults(tmp_path: Path) -> None:
    # GIVEN a sharded scaler whose functions get more memory, a longer timeout, a month of
    # logs and x86, under the five cdk-nag packs
    app = cdk.App(outdir=str(tmp_path))
    apply_nag_packs(app)
    stack = cdk.Stack(app, "Test")
    table = orders(stack)
    for pack in ("HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321"):
        acknowledge(table.table, f"{pack}-DynamoDBInBackupPlan", "A table of this test only.")
    scaler = ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[table],
        sharded=True,
        function_options={
            "Scaler": FunctionOptions(
                memory_size=1024,
                timeout=Duration.minutes(5),
                log_retention=logs.RetentionDays.ONE_MONTH,
                architecture=lambda_.Architecture.X86_64,
            )
        },
    )
    app.synth()  # raises on any unacknowledged finding
    template = Template.from_stack(stack)
    # THEN both of its functions run so
    for description in (
        "Throttle-aware DynamoDB capacity scaler",
        "Throttle-aware DynamoDB capacity scaler, batches of a sharded tick",
    ):
        function = function_of(template, description)
        assert (function["MemorySize"], function["Timeout"], function["Architectures"]) == (
            1024,
            300,
            ["x86_64"],
        )
        assert retention_of(template, function) == 30
    # AND what follows the timeout follows it: the batch queue's visibility and the
    # late-batch alarm (a tick of 2 minutes plus the timeout)
    template.has_resource_properties("AWS::SQS::Queue", {"VisibilityTimeout": 300})
    late = cfn_of(scaler.alarms["BatchesLate"], cloudwatch.CfnAlarm)
    assert late.threshold == 120 + 300


def test_unset_function_options_keep_the_defaults(stack: cdk.Stack) -> None:
    ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[orders(stack)],
        function_options={"Scaler": FunctionOptions(memory_size=512)},
    )
    template = Template.from_stack(stack)
    function = function_of(template, "Throttle-aware DynamoDB capacity scaler")
    assert (function["MemorySize"], function["Timeout"], function["Architectures"]) == (
        512,
        180,
        ["arm64"],
    )
    assert retention_of(template, function) == 365


def test_capacity_requests_and_fleet_advisor_function_options(stack: cdk.Stack) -> None:
    CapacityRequests(
        stack,
        "Requests",
        tables=[orders(stack)],
        fast_path=FastPath(),
        function_options={
            "Broker": FunctionOptions(memory_size=512),
            "Signals": FunctionOptions(timeout=Duration.seconds(45)),
        },
    )
    FleetAdvisor(
        stack, "Advisor", function_options={"Worker": FunctionOptions(timeout=Duration.minutes(5))}
    )
    template = Template.from_stack(stack)
    assert function_of(template, "DynamoDB capacity request broker")["MemorySize"] == 512
    assert function_of(template, "DynamoDB capacity signals (fast path)")["Timeout"] == 45
    assert function_of(template, "DynamoDB capacity request broker")["Timeout"] == 900
    assert function_of(template, "DynamoDB fleet advisor")["Timeout"] == 300
    # the worker's queue hides a message six times the worker's timeout
    template.has_resource_properties("AWS::SQS::Queue", {"VisibilityTimeout": 1800})


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (
            lambda s: ThrottleAwareScaler(
                s,
                "S",
                tables=[orders(s)],
                function_options={"Scaler": FunctionOptions(timeout=Duration.seconds(30))},
            ),
            "ThrottleAwareScaler Test/S: function_options['Scaler']: timeout: got 30 seconds; "
            "expected a Duration from 1 minute to 15 minutes: a tick sends nothing in the last "
            "20 seconds before its timeout",
        ),
        (
            lambda s: ThrottleAwareScaler(
                s,
                "S",
                tables=[orders(s)],
                function_options={"Scaler": FunctionOptions(timeout=Duration.minutes(16))},
            ),
            "timeout: got 16 minutes; expected a Duration from 1 minute to 15 minutes",
        ),
        (
            lambda s: ThrottleAwareScaler(
                s,
                "S",
                tables=[orders(s)],
                function_options={"Scaler": FunctionOptions(timeout=Duration.seconds(0))},
            ),
            "timeout: got 0 seconds; expected a Duration from 1 minute to 15 minutes",
        ),
        (
            lambda s: CapacityRequests(
                s,
                "R",
                tables=[orders(s)],
                function_options={"Broker": FunctionOptions(timeout=Duration.minutes(10))},
            ),
            "function_options['Broker']: timeout: got 10 minutes; expected a Duration exactly "
            "15 minutes: a request waits up to 13 minutes for its table (BROKER_MAX_WAIT)",
        ),
        (
            lambda s: CapacityRequests(
                s,
                "R",
                tables=[orders(s)],
                function_options={"Signals": FunctionOptions(timeout=Duration.minutes(2))},
            ),
            "timeout: got 2 minutes; expected a Duration from 10 seconds to 1 minute: a report "
            "is stale after a minute",
        ),
        (
            lambda s: ThrottleAwareScaler(
                s,
                "S",
                tables=[orders(s)],
                function_options={"Scaler": FunctionOptions(memory_size=64)},
            ),
            "function_options['Scaler']: memory_size: got 64; expected a whole number from 128 "
            "to 10,240",
        ),
        (
            lambda s: FleetAdvisor(
                s,
                "F",
                function_options={"Worker": FunctionOptions(memory_size=math.inf)},  # type: ignore[arg-type]
            ),
            "function_options['Worker']: memory_size: got inf; expected a whole number",
        ),
        (
            lambda s: ThrottleAwareScaler(
                s,
                "S",
                tables=[orders(s)],
                function_options={"Scaler": FunctionOptions(log_retention=30)},  # type: ignore[arg-type]
            ),
            "log_retention: got 30; expected an aws_logs.RetentionDays, or None",
        ),
        (
            lambda s: ThrottleAwareScaler(
                s,
                "S",
                tables=[orders(s)],
                function_options={"Scaler": FunctionOptions(architecture="arm64")},  # type: ignore[arg-type]
            ),
            "architecture: got 'arm64'; expected an aws_lambda.Architecture, or None",
        ),
        (
            lambda s: CapacityRequests(
                s, "R", tables=[orders(s)], function_options={"Scaler": FunctionOptions()}
            ),
            "function_options: unknown function 'Scaler'; expected one of: Broker, Signals, "
            "StreamReader",
        ),
        (
            lambda s: ThrottleAwareScaler(
                s,
                "S",
                tables=[orders(s)],
                function_options={"Scaler": {"memory_size": 512}},  # type: ignore[dict-item]
            ),
            "function_options['Scaler']: got {'memory_size': 512}; expected a FunctionOptions",
        ),
    ],
)
def test_bad_function_options_are_refused_naming_the_constraint(make: Any, expected: str) -> None:
    message = refused(make)
    assert expected in message, message


@pytest.mark.parametrize(
    "timeout", [SCALER_FUNCTIONS["Scaler"].shortest, Duration.minutes(3), Duration.minutes(15)]
)
def test_a_tick_in_any_allowed_timeout_keeps_time_to_act_and_ends_before_it(
    timeout: Duration,
) -> None:
    # GIVEN a tick run in a function of an allowed timeout, started with all of it left
    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    seconds = timeout.to_seconds()
    context = SimpleNamespace(get_remaining_time_in_millis=lambda: seconds * 1000)
    for tick_minutes in (1, 2, 60):
        deadline = tick_deadline(now, tick_minutes, context, now.timestamp())
        left = deadline - now.timestamp()
        # THEN its deadline leaves it time to act, and falls before the timeout by MARGIN
        assert left >= 40, (timeout.to_human_string(), tick_minutes, left)
        assert left <= seconds - MARGIN.total_seconds()


def test_the_broker_timeout_outlasts_its_longest_wait() -> None:
    shortest = REQUEST_FUNCTIONS["Broker"].shortest.to_seconds()
    assert shortest > BROKER_MAX_WAIT.total_seconds()


# ---------------------------------------------------------------------- the guide's app


def test_the_guides_app_synthesizes_as_it_says(tmp_path: Path) -> None:
    # GIVEN the guide's three python blocks, one app in three parts
    text = (ROOT / "docs" / "guides" / "alarms-metrics-functions.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 3
    # WHEN it runs
    run_block("\n".join(blocks), tmp_path)
    template = Template.from_json(
        json.loads((tmp_path / "cdk.out" / "Orders.template.json").read_text())
    )
    alarms = alarms_of(template)
    # THEN the alarms are as its options say
    assert not [a for a in alarms if "sat at its max" in a["AlarmDescription"]]
    throttling = [a for a in alarms if a["AlarmDescription"].startswith("Sustained")]
    assert {(a["Threshold"], a["EvaluationPeriods"]) for a in throttling} == {(50, 3)}
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm", {"MetricName": "Refused", "Threshold": 10, "Period": 3600}
    )
    # AND the scaler's errors alarm ends with the team's runbook, after the library's text
    errors = [a for a in alarms if a["AlarmDescription"].startswith("The capacity scaler failed")]
    assert [a["AlarmDescription"].split(" in docs/operations/alarms.md. ")[1] for a in errors] == [
        "Team runbook: https://wiki.example.com/ddb-capacity"
    ]
    # AND the functions as their options say
    brokers = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Description": "DynamoDB capacity request broker"}},
    ).values()
    assert sorted(b["Properties"]["Architectures"][0] for b in brokers) == ["arm64", "x86_64"]
    assert sorted(retention_of(template, b["Properties"]) for b in brokers) == [30, 365]


# ---------------------------------------------------------------------- the settle functions


def test_the_settle_functions_take_their_options_and_the_wait_is_the_providers(
    stack: cdk.Stack,
) -> None:
    # GIVEN two settled tables asking for the same settle functions
    options = {"Settle": FunctionOptions(memory_size=512, timeout=Duration.minutes(5))}
    settled(stack, "Catalog", options)
    settled(stack, "Prices", options)
    template = Template.from_stack(stack)
    # THEN the stack's two settle functions run so
    for description in (
        "Checks the settle step of PROVISION_THEN_SETTLE tables",
        "Settles PROVISION_THEN_SETTLE tables from their high-water mark",
    ):
        function = function_of(template, description)
        assert (function["MemorySize"], function["Timeout"]) == (512, 300)
    # AND CloudFormation waits for the provider's 31 minutes and 2 more, whatever the options
    settles = template.find_resources("Custom::CapacitySettle").values()
    assert [s["Properties"]["ServiceTimeout"] for s in settles] == ["1980", "1980"]


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (
            lambda s: ProvisionedTable(
                s,
                "T",
                partition_key=PK,
                read=SMALL,
                write=SMALL,
                function_options={"Settle": FunctionOptions()},
            ),
            "ProvisionedTable Test/T: function_options: got {'Settle': FunctionOptions(",
        ),
        (
            lambda s: settled(s, "T", {"Settle": FunctionOptions(timeout=Duration.seconds(30))}),
            "function_options['Settle']: timeout: got 30 seconds; expected a Duration from 1 "
            "minute to 15 minutes: each call of the settle step makes one DescribeTable",
        ),
    ],
)
def test_bad_settle_function_options_are_refused(make: Any, expected: str) -> None:
    message = refused(make)
    assert expected in message, message


def test_the_settle_providers_logs_are_kept_and_deleted_as_the_settle_functions(
    stack: cdk.Stack,
) -> None:
    # GIVEN a settled table asking for its settle step's logs to be kept a month
    month = {"Settle": FunctionOptions(log_retention=logs.RetentionDays.ONE_MONTH)}
    settled(stack, "Catalog", month)
    template = Template.from_stack(stack)
    functions = [f["Properties"] for f in template.find_resources("AWS::Lambda::Function").values()]
    framework = [f for f in functions if f["Handler"].startswith("framework.")]
    # THEN the provider's framework functions keep theirs a month too, as the step's own do
    assert len(framework) == 3 and len(functions) == 5
    assert {retention_of(template, f) for f in functions} == {30}
    # AND each log group goes with the stack, none left behind
    resources = template.to_json()["Resources"]
    groups = {f["LoggingConfig"]["LogGroup"]["Ref"] for f in functions}
    assert {resources[g]["DeletionPolicy"] for g in groups} == {"Delete"}


@pytest.mark.parametrize("seconds", [60, 900])
def test_a_settle_timeout_at_either_end_of_its_range_is_taken(
    stack: cdk.Stack, seconds: int
) -> None:
    # GIVEN the shortest timeout a call of the settle step allows, or Lambda's longest
    settled(stack, "Catalog", {"Settle": FunctionOptions(timeout=Duration.seconds(seconds))})
    template = Template.from_stack(stack)
    # THEN both of the step's functions run with it
    for description in (
        "Checks the settle step of PROVISION_THEN_SETTLE tables",
        "Settles PROVISION_THEN_SETTLE tables from their high-water mark",
    ):
        assert function_of(template, description)["Timeout"] == seconds


def test_a_second_settled_table_asking_for_another_function_is_told_why() -> None:
    message = refused(
        lambda s: (
            settled(s, "Catalog", None),
            settled(s, "Prices", {"Settle": FunctionOptions(memory_size=512)}),
        )
    )
    assert message.startswith(
        "ProvisionedTable Test/Prices: function_options['Settle']: got 512 MB, a timeout of "
        "1 minute, logs kept ONE_YEAR, arm64; but the stack's one settle step "
        "(Test/CapacitySettleProvider) is already made with 256 MB,"
    ), message
    assert "every PROVISION_THEN_SETTLE table of a stack shares it" in message, message


def test_a_second_settled_table_asking_for_another_log_retention_is_refused() -> None:
    # GIVEN two settled tables alike but for how long their settle step keeps its logs
    month = {"Settle": FunctionOptions(log_retention=logs.RetentionDays.ONE_MONTH)}
    message = refused(lambda s: (settled(s, "Catalog", None), settled(s, "Prices", month)))
    # THEN the second is refused: the one step it shares keeps them a year
    assert "function_options['Settle']: got 256 MB" in message, message
    assert "logs kept ONE_MONTH, arm64; but the stack's one settle step" in message, message


def printed_by_python(code: str) -> str:
    """What ``code`` prints, run by this Python in a fresh process (nothing loaded yet)."""
    import subprocess
    import sys

    run = [sys.executable, "-c", code]
    return subprocess.run(run, check=True, capture_output=True, text=True).stdout


def test_a_table_without_a_settle_step_synthesizes_without_the_lambda_bindings() -> None:
    """A ProvisionedTable built and synthesized in a fresh process loads no
    ``aws_cdk.aws_lambda`` (nor the EC2 module it loads: about 0.3 s of a synth) unless it
    makes a settle step: with a high-water mark by WARM_THROUGHPUT, or PROVISION_THEN_SETTLE
    with its function options checked but no high-water mark; the settle step loads it."""

    def loaded(prewarm: str, high_water_mark: int | None) -> list[str]:
        code = (
            "import sys, tempfile\n"
            "import aws_cdk as cdk\n"
            "from aws_cdk import aws_dynamodb as dynamodb\n"
            "from constructs_pkg import Capacity, FunctionOptions, PrewarmMethod, ProvisionedTable\n"
            "app = cdk.App(outdir=tempfile.mkdtemp())\n"
            "stack = cdk.Stack(app, 'Shop')\n"
            "ProvisionedTable(stack, 'Orders', partition_key=dynamodb.Attribute(\n"
            "    name='id', type=dynamodb.AttributeType.STRING),\n"
            f"    read=Capacity(min_capacity=5, max_capacity=100, high_water_mark={high_water_mark}),\n"
            "    write=Capacity(min_capacity=5, max_capacity=100),\n"
            f"    prewarm=PrewarmMethod.{prewarm},\n"
            "    function_options=({'Settle': FunctionOptions(memory_size=512)}\n"
            f"                      if '{prewarm}' == 'PROVISION_THEN_SETTLE' else None))\n"
            "app.synth()\n"
            "print(sorted(m for m in sys.modules if m in ('aws_cdk.aws_lambda', 'aws_cdk.aws_ec2')))\n"
        )
        out = printed_by_python(code)
        return list(json.loads(out.splitlines()[-1].replace("'", '"')))

    assert loaded("WARM_THROUGHPUT", 50) == []
    assert loaded("PROVISION_THEN_SETTLE", None) == []
    assert loaded("PROVISION_THEN_SETTLE", 50) == ["aws_cdk.aws_ec2", "aws_cdk.aws_lambda"]


def test_function_configs_made_alike_are_one_config() -> None:
    """Configs compare by value: an ``Architecture`` or a ``Duration`` made twice alike (two
    jsii objects) gives one config, ``Architecture.ARM_64`` given reads as the default, and
    each is named in the config's text; the hints of FunctionOptions resolve."""
    defaults = {"Settle": FunctionDefaults(256, Duration.minutes(1), shortest=Duration.seconds(30))}

    def config(**options: Any) -> FunctionConfig:
        return function_configs("Test", {"Settle": FunctionOptions(**options)}, defaults)["Settle"]

    assert config(architecture=lambda_.Architecture.ARM_64) == config() == config(timeout=None)
    assert str(config()).endswith(", arm64")
    x86 = config(architecture=lambda_.Architecture.X86_64, timeout=Duration.minutes(2))
    assert x86 == config(architecture=lambda_.Architecture.X86_64, timeout=Duration.seconds(120))
    assert hash(x86) == hash(
        config(architecture=lambda_.Architecture.X86_64, timeout=Duration.minutes(2))
    )
    assert x86 != config(timeout=Duration.minutes(2))
    assert x86 != config(architecture=lambda_.Architecture.X86_64)
    assert str(x86).endswith("a timeout of 2 minutes, logs kept ONE_YEAR, x86_64")
    assert ARCHITECTURE.name == DEFAULT_ARCHITECTURE
    hints = typing.get_type_hints(FunctionOptions)
    assert hints["architecture"] == lambda_.Architecture | None


def test_a_timeout_from_a_parameter_is_taken_in_seconds_and_refused_in_minutes(
    stack: cdk.Stack,
) -> None:
    """A token's amount is converted by the CDK from seconds alone: ``Duration.seconds`` of
    a parameter is left to deploy time, and two tables giving it share the settle step;
    ``Duration.minutes`` of one is refused naming the field, not with jsii's error."""
    refusing = cdk.Stack(cdk.App(), "Test")  # a refused construct stays half made in its tree
    minutes = cdk.CfnParameter(refusing, "SettleMinutes", type="Number")
    seconds = cdk.CfnParameter(stack, "SettleSeconds", type="Number")

    def timed(timeout: Duration) -> dict[str, FunctionOptions]:
        return {"Settle": FunctionOptions(timeout=timeout)}

    with pytest.raises(CapacityConfigError) as refused:
        settled(refusing, "Minutes", timed(Duration.minutes(minutes.value_as_number)))
    assert str(refused.value) == (
        "ProvisionedTable Test/Minutes: function_options['Settle']: timeout: got <token> "
        "minutes; a timeout whose amount is a token (a parameter's) must be a "
        "Duration.seconds(...): a token cannot be converted to the seconds Lambda takes"
    )
    settled(stack, "Catalog", timed(Duration.seconds(seconds.value_as_number)))
    settled(stack, "Prices", timed(Duration.seconds(seconds.value_as_number)))
    settles = Template.from_stack(stack).find_resources(
        "AWS::Lambda::Function", {"Properties": {"Timeout": {"Ref": "SettleSeconds"}}}
    )
    assert len(settles) == 2  # the step's two functions, once for the stack


def test_a_memory_size_from_a_parameter_is_left_to_deploy_time(stack: cdk.Stack) -> None:
    # GIVEN the settle step's memory size from a parameter (a token, not a number yet)
    memory = cdk.CfnParameter(stack, "SettleMemory", type="Number")
    tokened = FunctionOptions(memory_size=memory.value_as_number)  # type: ignore[arg-type]
    settled(stack, "Catalog", {"Settle": tokened})
    # THEN both of the step's functions take the parameter's value when the stack deploys
    settles = Template.from_stack(stack).find_resources(
        "AWS::Lambda::Function", {"Properties": {"MemorySize": {"Ref": "SettleMemory"}}}
    )
    assert len(settles) == 2


def test_the_lazy_lambda_module_is_not_loaded_by_copying_or_probing_it() -> None:
    import copy

    code = (
        "import copy, inspect, sys\n"
        "from constructs_pkg.common import _function_options as function_options\n"
        "lazy = function_options.lambda_\n"
        "copy.copy(lazy); inspect.unwrap(lazy); hasattr(lazy, '__wrapped__')\n"
        "print('aws_cdk.aws_lambda' in sys.modules)\n"
    )
    assert printed_by_python(code).split()[-1] == "False"
    from constructs_pkg.common import _function_options as function_options

    assert copy.copy(vars(function_options)["lambda_"]).Architecture is lambda_.Architecture


def test_tables_given_function_options_made_alike_share_the_settle_step(stack: cdk.Stack) -> None:
    # GIVEN two PROVISION_THEN_SETTLE tables, each given its own FunctionOptions, alike
    def alike() -> dict[str, FunctionOptions]:  # new objects each time
        x86 = lambda_.Architecture.X86_64
        return {"Settle": FunctionOptions(architecture=x86, timeout=Duration.minutes(2))}

    # WHEN both are made, THEN they share the stack's one settle step, run as they asked
    settled(stack, "Catalog", alike())
    settled(stack, "Prices", alike())
    template = Template.from_stack(stack)
    settles = template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Architectures": ["x86_64"], "Timeout": 120}}
    )
    assert len(settles) == 2  # the step's two functions, once for the stack


def test_the_package_imports_a_construct_module_on_first_use_of_its_names() -> None:
    """An app using the table and the scaler does not load the capacity requests', the fleet
    advisor's or the tuning's modules (their CDK imports cost synth time); every public name
    still resolves, and a name the package does not have is an ``AttributeError``."""

    code = (
        "import sys\n"
        "from constructs_pkg import ProvisionedTable, ThrottleAwareScaler, Capacity\n"
        "print(sorted(m for m in sys.modules if m.startswith('constructs_pkg.')\n"
        "             or m in ('aws_cdk.aws_stepfunctions', 'aws_cdk.custom_resources')))\n"
    )
    loaded = set(json.loads(printed_by_python(code).replace("'", '"')))
    assert "constructs_pkg.scaler._scaler" in loaded
    assert not loaded & {
        "constructs_pkg.requests._capacity_requests",
        "constructs_pkg.fleet._advisor",
        "constructs_pkg.fleet._tuning",
        "constructs_pkg.fast_path._stream_signal",
        # a settle's provider alone needs these: large modules, slow to load and to unload
        "aws_cdk.aws_stepfunctions",
        "aws_cdk.custom_resources",
    }
    import constructs_pkg

    assert all(getattr(constructs_pkg, name) is not None for name in constructs_pkg.__all__)
    assert dir(constructs_pkg) == sorted(constructs_pkg.__all__)  # no Any, TYPE_CHECKING, ...
    with pytest.raises(AttributeError, match="no attribute 'Tabel'"):
        constructs_pkg.Tabel  # noqa: B018
