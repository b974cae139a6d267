"""CapacityRequests with the fast path in the template: the signals function, its exact
statements, the grant (invoking the signals function and nothing else), its alarms, cdk-nag
with the five packs, and bad props."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Match, Template

from constructs_pkg import (
    UNBOUNDED,
    Capacity,
    CapacityConfigError,
    CapacityRequests,
    FastPath,
    ProvisionedTable,
    ThrottleAwareScaler,
    acknowledge,
    apply_nag_packs,
)
from tests.support.alarm_style import alarm_actions_of
from tests.support.capacity_requests_construct import (
    CHECKS_ALARMS,
    PK,
    by_sid,
    move_minimums,
    policy,
    tables,
)
from tests.support.shape import ROOT

HANDLER = "ddb_capacity_runtime.fast_path.signals_function.signals_handler"
DESCRIPTION = "Permissions of DynamoDB capacity signals (fast path)"


def signals_function(template: Template) -> dict[str, Any]:
    (found,) = template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Handler": HANDLER}}
    ).values()
    return dict(found["Properties"])


def test_the_signals_function_has_exactly_what_a_surge_needs(stack: cdk.Stack) -> None:
    # GIVEN capacity requests with the fast path on
    shipments, plain = tables(stack)
    requests = CapacityRequests(
        stack,
        "Requests",
        tables=[shipments, plain],
        max_units=5_000,
        fast_path=FastPath(share=0.5, surge_for=cdk.Duration.minutes(10), surge_cap=2_000),
    )
    template = Template.from_stack(stack)
    # THEN the function is told its tables, the hold store, its bounds and its settings
    props = signals_function(template)
    env = props["Environment"]["Variables"]
    assert {k: v for k, v in env.items() if k.startswith("CAPACITY_SURGE")} == {
        "CAPACITY_SURGE_SHARE": "0.5",
        "CAPACITY_SURGE_MINUTES": "10",
        "CAPACITY_SURGE_CAP": "2000",
    }
    assert env["CAPACITY_HOLDS_TABLE"] == stack.resolve(requests.hold_store.table_name)
    assert env["CAPACITY_MAX_UNITS"] == "5000"
    broker = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "ddb_capacity_runtime.requests.broker.broker_handler"}},
    )
    (broker_props,) = [b["Properties"] for b in broker.values()]
    assert env["CAPACITY_SCOPES"] == broker_props["Environment"]["Variables"]["CAPACITY_SCOPES"]
    # answers in seconds, takes 10 reports at once, never retries a stale one
    assert (props["Timeout"], props["ReservedConcurrentExecutions"]) == (30, 10)
    assert requests.signals is not None
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "FunctionName": stack.resolve(requests.signals.function_name),
            "MaximumRetryAttempts": 0,
            "MaximumEventAgeInSeconds": 60,
        },
    )
    # AND its role may read and raise its tables and targets, and write the store: no more
    names = [stack.resolve(shipments.table.table_name), stack.resolve(plain.table_name)]
    statements = by_sid(policy(template, DESCRIPTION))
    assert statements == {
        "WriteOwnLogs": statements["WriteOwnLogs"],
        "HoldTables": {
            "Sid": "HoldTables",
            "Effect": "Allow",
            "Action": [
                "dynamodb:DescribeTable",
                "dynamodb:ListTagsOfResource",
                "dynamodb:UpdateTable",
            ],
            "Resource": [stack.resolve(shipments.table.table_arn), stack.resolve(plain.table_arn)],
        },
        "SurgeStore": {
            "Sid": "SurgeStore",
            "Effect": "Allow",
            "Action": ["dynamodb:GetItem", "dynamodb:UpdateItem"],
            "Resource": stack.resolve(requests.hold_store.table_arn),
            # only the items of its own tables: every one it touches has the table as pk
            "Condition": {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": names}},
        },
        "ReadAutoScaling": {
            "Sid": "ReadAutoScaling",
            "Effect": "Allow",
            "Action": [
                "application-autoscaling:DescribeScalableTargets",
                "application-autoscaling:DescribeScalingPolicies",
            ],
            "Resource": "*",
        },
        "MoveMinimums": move_minimums(names),
        "AutoScalingChecksAlarms": CHECKS_ALARMS,
        # CloudWatch's consumed capacity, when the default cap cuts a surge short
        "ReadTraffic": {
            "Sid": "ReadTraffic",
            "Effect": "Allow",
            "Action": "cloudwatch:GetMetricData",
            "Resource": "*",
        },
    }


def test_a_reporting_process_may_only_invoke_the_signals_function(stack: cdk.Stack) -> None:
    # GIVEN a worker granted the fast path, and a function granted it
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments], fast_path=FastPath())
    worker = iam.Role(stack, "Worker", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    function = lambda_.Function(
        stack,
        "App",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(e, c): pass"),
    )
    grant = requests.grant_signals(worker)
    requests.grant_signals(function)
    assert isinstance(grant, iam.Grant) and grant.success
    assert requests.signals is not None
    template = Template.from_stack(stack)
    # THEN the worker's one statement is InvokeFunction on the signals function alone
    (worker_policy,) = template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"Roles": [stack.resolve(worker.role_name)]}}
    ).values()
    assert worker_policy["Properties"]["PolicyDocument"]["Statement"] == [
        {
            "Effect": "Allow",
            "Action": "lambda:InvokeFunction",
            "Resource": stack.resolve(requests.signals.function_arn),
        }
    ]
    # no managed policy (the store's, the tables') reaches the worker
    for found in template.find_resources("AWS::IAM::ManagedPolicy").values():
        assert stack.resolve(worker.role_name) not in found["Properties"].get("Roles", [])
    text = json.dumps(worker_policy)
    assert "UpdateTable" not in text and "GetItem" not in text
    assert "RegisterScalableTarget" not in text
    # the function is told where to report
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "index.handler",
            "Environment": {
                "Variables": {"CAPACITY_SIGNALS": stack.resolve(requests.signals.function_name)}
            },
        },
    )


def test_failed_surges_and_the_functions_errors_are_alarmed(stack: cdk.Stack) -> None:
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments], fast_path=FastPath())
    template = Template.from_stack(stack)
    topic = alarm_actions_of(stack, requests)
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "DynamoDBCapacity",
            "MetricName": "SurgesFailed",
            "Statistic": "Sum",
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "notBreaching",
            "AlarmActions": topic,
        },
    )
    assert requests.signals is not None
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "MetricName": "Errors",
            "Dimensions": [
                {"Name": "FunctionName", "Value": stack.resolve(requests.signals.function_name)}
            ],
            "AlarmActions": topic,
        },
    )
    # a full combiner refusing a report, and reports Lambda dropped before running them
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "DynamoDBCapacity",
            "MetricName": "CombinerFull",
            "Statistic": "Sum",
            "Threshold": 1,
            "AlarmActions": topic,
        },
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/Lambda",
            "MetricName": "AsyncEventsDropped",
            "Dimensions": [
                {"Name": "FunctionName", "Value": stack.resolve(requests.signals.function_name)}
            ],
            "Statistic": "Sum",
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "notBreaching",
            "AlarmActions": topic,
        },
    )
    # deferred surges (another update of the dimension under way) page nobody
    alarms = template.find_resources("AWS::CloudWatch::Alarm").values()
    assert all(a["Properties"].get("MetricName") != "SurgesDeferred" for a in alarms)

    # a hook in a Lambda function that could not send its reports (its EMF count), granted
    # here (its series of the hold store) or through its role alone (its series of the
    # signals function it reports to): the two summed
    def hook_failures(dimension: str, value: object) -> dict[str, Any]:
        metric = {
            "Namespace": "DynamoDBCapacity",
            "MetricName": "HookFailures",
            "Dimensions": [{"Name": dimension, "Value": value}],
        }
        return {"MetricStat": {"Metric": metric, "Period": 300, "Stat": "Sum"}}

    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Metrics": Match.array_with(
                [
                    Match.object_like(
                        {"Expression": "FILL(store, 0) + FILL(function, 0)", "ReturnData": True}
                    ),
                    Match.object_like(
                        hook_failures("StateStore", stack.resolve(requests.hold_store.table_name))
                    ),
                    Match.object_like(
                        hook_failures(
                            "SignalsFunction", stack.resolve(requests.signals.function_name)
                        )
                    ),
                ]
            ),
            "Threshold": 1,
            "AlarmActions": topic,
        },
    )
    # a combiner item holding entries no signals function writes (the store's untrusted
    # content), ignored
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "DynamoDBCapacity",
            "MetricName": "SurgeEntriesIgnored",
            "Statistic": "Sum",
            "Threshold": 1,
            "AlarmActions": topic,
        },
    )
    # broker errors (its restores'), requests timed out, holds dropped, holds busy; signals
    # errors, surges
    # failed, entries ignored, combiner full, reports dropped, reports refused, surge
    # budget met, surge units, a bucket estimate not kept, a corroboration failed, surges
    # unconfirmed, hook failures; restorer runs dropped or expired
    template.resource_count_is("AWS::CloudWatch::Alarm", 18)


def test_refused_reports_the_budget_and_surge_volume_are_alarmed(stack: cdk.Stack) -> None:
    # GIVEN the fast path with its defaults, and one whose volume alarm is set
    shipments, plain = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments], fast_path=FastPath())
    topic = alarm_actions_of(stack, requests)
    template = Template.from_stack(stack)
    # THEN a malformed report and a surge that met its budget each page at once
    for metric in ("ReportsRefused", "SurgesOverBudget"):
        template.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {
                "Namespace": "DynamoDBCapacity",
                "MetricName": metric,
                "Threshold": 1,
                "Period": 300,
                "AlarmActions": topic,
            },
        )
    # and surges adding 10,000 units in an hour do
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "DynamoDBCapacity",
            "MetricName": "SurgeUnits",
            "Statistic": "Sum",
            "Period": 3600,
            "Threshold": 10_000,
            "AlarmActions": topic,
        },
    )
    other = cdk.Stack(cdk.App(), "Other")
    shipments, _ = tables(other)
    CapacityRequests(
        other, "Requests", tables=[shipments], fast_path=FastPath(surge_alarm_units=None)
    )
    alarms = Template.from_stack(other).find_resources("AWS::CloudWatch::Alarm").values()
    assert all(a["Properties"].get("MetricName") != "SurgeUnits" for a in alarms)


def test_the_default_cap_and_budget_reach_the_signals_function(stack: cdk.Stack) -> None:
    shipments, plain = tables(stack)
    third = dynamodb.Table(stack, "Third", partition_key=PK)
    CapacityRequests(stack, "Default", tables=[shipments], fast_path=FastPath())
    CapacityRequests(
        stack, "Scaled", tables=[plain], fast_path=FastPath(surge_scale=2.5, surge_budget=3_000)
    )
    CapacityRequests(
        stack,
        "Free",
        tables=[third],
        fast_path=FastPath(surge_cap=UNBOUNDED, surge_budget=UNBOUNDED),
    )
    template = Template.from_stack(stack)
    found = template.find_resources(
        "AWS::Lambda::Function",
        {
            "Properties": {
                "Handler": "ddb_capacity_runtime.fast_path.signals_function.signals_handler"
            }
        },
    )
    envs = {
        key.split("Signals")[0]: {
            k: v
            for k, v in r["Properties"]["Environment"]["Variables"].items()
            if k in ("CAPACITY_SURGE_CAP", "CAPACITY_SURGE_SCALE", "CAPACITY_SURGE_BUDGET")
        }
        for key, r in found.items()
    }
    assert [envs[k] for k in sorted(envs)] == [
        {"CAPACITY_SURGE_SCALE": "4.0"},
        {"CAPACITY_SURGE_CAP": "unbounded", "CAPACITY_SURGE_BUDGET": "unbounded"},
        {"CAPACITY_SURGE_SCALE": "2.5", "CAPACITY_SURGE_BUDGET": "3000"},
    ]


def test_every_alarm_of_the_fast_path_has_a_runbook_entry(stack: cdk.Stack) -> None:
    from aws_cdk import aws_cloudwatch as cloudwatch

    CapacityRequests(stack, "Requests", tables=[tables(stack)[0]], fast_path=FastPath())
    runbook = (ROOT / "docs" / "operations" / "alarms.md").read_text()
    headings = re.findall(r"^### .*$", runbook, re.M)
    ids = {c.node.id for c in stack.node.find_all() if isinstance(c, cloudwatch.Alarm)}
    assert {
        "SignalsErrorsAlarm",
        "SurgesFailedAlarm",
        "CombinerFullAlarm",
        "SignalsDroppedAlarm",
    } <= ids
    assert {i for i in ids if not any(f"`{i}" in h for h in headings)} == set()
    permissions = (ROOT / "docs" / "operations" / "permissions.md").read_text()
    assert "| SurgeStore |" in permissions and "grant_signals" in permissions


def test_without_the_fast_path_there_is_no_signals_function(stack: cdk.Stack) -> None:
    requests = CapacityRequests(stack, "Requests", tables=[tables(stack)[0]])
    assert (requests.signals, requests.signals_policy) == (None, None)
    template = Template.from_stack(stack)
    # the broker's alone: its restores, asynchronous, are never retried once stale
    template.resource_count_is("AWS::Lambda::EventInvokeConfig", 1)
    assert not template.find_resources(
        "AWS::Lambda::Function", {"Properties": {"Handler": HANDLER}}
    )
    with pytest.raises(CapacityConfigError) as info:
        requests.grant_signals(iam.Role(stack, "W", assumed_by=iam.AccountRootPrincipal()))
    assert str(info.value) == (
        "CapacityRequests Test/Requests: grant_signals needs the fast path; pass "
        "fast_path=FastPath() to CapacityRequests"
    )


@pytest.mark.parametrize("concurrency", [10, None])
def test_the_five_nag_packs_pass_with_the_fast_path(
    tmp_path: Path, concurrency: int | None
) -> None:
    # GIVEN an app under the five packs with the fast path on and a process granted it
    app = cdk.App(outdir=str(tmp_path))
    apply_nag_packs(app)
    stack = cdk.Stack(app, "Fast")
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=5, max_capacity=500),
        write=Capacity(min_capacity=5, max_capacity=500),
    )
    for pack in ("HIPAA.Security", "NIST.800.53.R5"):
        acknowledge(table.table, f"{pack}-DynamoDBInBackupPlan", "A test table of this test only.")
    worker = iam.Role(stack, "Worker", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    for pack in ("HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321"):
        acknowledge(
            worker,
            f"{pack}-IAMNoInlinePolicy",
            "The worker's only statement is the grant to invoke the signals function.",
        )
    requests = CapacityRequests(
        stack, "Requests", tables=[table], fast_path=FastPath(concurrency=concurrency)
    )
    requests.grant_signals(worker)
    # THEN it synthesizes: no unacknowledged finding (a finding raises ValidationFailed)
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert len(report["pluginReports"]) == 5


def test_without_a_restorer_a_connected_scaler_must_end_the_surges() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Test")
    shipments, _ = tables(stack)
    CapacityRequests(
        stack, "Requests", tables=[shipments], restore_every=None, fast_path=FastPath()
    )
    with pytest.raises(RuntimeError, match="fast_path with restore_every=None needs a connected"):
        app.synth()
    # with a connected scaler, its tick ends them
    app = cdk.App()
    stack = cdk.Stack(app, "Test")
    shipments, _ = tables(stack)
    requests = CapacityRequests(
        stack, "Requests", tables=[shipments], restore_every=None, fast_path=FastPath()
    )
    requests.connect(ThrottleAwareScaler(stack, "Scaler", tables=[shipments]))
    app.synth()


@pytest.mark.parametrize(
    ("fast_path", "message"),
    [
        ("yes", "fast_path must be a FastPath or None; got 'yes'"),
        (FastPath(share=0), "fast_path.share must be a number over 0 and at most 1; got 0"),
        (FastPath(share=1.5), "fast_path.share must be a number over 0 and at most 1; got 1.5"),
        (FastPath(share=True), "fast_path.share must be a number over 0 and at most 1; got True"),
        (
            FastPath(surge_for=cdk.Duration.seconds(90)),
            "fast_path.surge_for must be whole minutes from 1 minute to max_hold (120 minutes); "
            "got 1 minute 30 seconds",
        ),
        (
            FastPath(surge_for=cdk.Duration.minutes(cdk.Token.as_number(cdk.Aws.ACCOUNT_ID))),
            "fast_path.surge_for must be known when the app is built (the functions are "
            "configured with its minutes); got a token (a CfnParameter's or another resource's "
            "value): give whole minutes from 1 minute to max_hold (120 minutes)",
        ),
        (
            FastPath(surge_for=cdk.Duration.hours(3)),
            "fast_path.surge_for must be whole minutes from 1 minute to max_hold (120 minutes); "
            "got 3 hours",
        ),
        (
            FastPath(surge_cap=0),
            "fast_path.surge_cap must be a whole number from 1 to max_units (5000), None (the "
            "default cap) or UNBOUNDED; got 0",
        ),
        (
            FastPath(surge_cap="none"),
            "fast_path.surge_cap must be a whole number from 1 to max_units (5000), None (the "
            "default cap) or UNBOUNDED; got 'none'",
        ),
        (
            FastPath(surge_scale=1),
            "fast_path.surge_scale must be a number over 1, at most 100; got 1",
        ),
        (
            FastPath(surge_cap=500, surge_scale=2.0),
            "fast_path.surge_scale applies to the default cap only; got surge_scale=2.0 with "
            "surge_cap=500: set one of them",
        ),
        (
            FastPath(surge_budget=-5),
            "fast_path.surge_budget must be a whole number from 1 to 400000, None (the default "
            "budget) or UNBOUNDED; got -5",
        ),
        (
            FastPath(surge_alarm_units=0.5),  # type: ignore[arg-type]
            "fast_path.surge_alarm_units must be a whole number from 1 to 10000000, or None; "
            "got 0.5",
        ),
        (
            FastPath(surge_cap=5_001),
            "fast_path.surge_cap must be a whole number from 1 to max_units (5000), None (the default cap) or UNBOUNDED; "
            "got 5001",
        ),
        (
            FastPath(concurrency=0),
            "fast_path.concurrency must be a whole number from 1 to 1000, or None; got 0",
        ),
        (
            FastPath(concurrency=1_001),
            "fast_path.concurrency must be a whole number from 1 to 1000, or None; got 1001",
        ),
        (
            FastPath(surge_budget=400_001),
            "fast_path.surge_budget must be a whole number from 1 to 400000, None (the default "
            "budget) or UNBOUNDED; got 400001",
        ),
        (
            FastPath(surge_alarm_units=0),
            "fast_path.surge_alarm_units must be a whole number from 1 to 10000000, or None; got 0",
        ),
    ],
)
def test_bad_fast_path(stack: cdk.Stack, fast_path: Any, message: str) -> None:
    with pytest.raises(CapacityConfigError) as info:
        fast_path_requests(stack, fast_path)
    assert str(info.value) == f"CapacityRequests Test/Requests: {message}"


def fast_path_requests(stack: cdk.Stack, fast_path: Any) -> CapacityRequests:
    """Capacity requests of up to 5,000 units held up to 2 hours, with ``fast_path``."""
    return CapacityRequests(
        stack,
        "Requests",
        tables=[tables(stack)[0]],
        max_units=5_000,
        max_hold=cdk.Duration.hours(2),
        fast_path=fast_path,
    )


@pytest.mark.parametrize(
    "fast_path",
    [
        FastPath(surge_for=cdk.Duration.hours(2)),  # max_hold itself
        FastPath(surge_for=cdk.Duration.minutes(1)),
        FastPath(concurrency=1_000),
        FastPath(surge_budget=400_000),
        FastPath(surge_alarm_units=1),
        FastPath(surge_cap=5_000),  # max_units itself
    ],
)
def test_a_fast_path_is_taken_at_the_edges_of_its_ranges(
    stack: cdk.Stack, fast_path: FastPath
) -> None:
    fast_path_requests(stack, fast_path)  # no error
