"""CapacityRequests in the template: the exact statements a worker is granted, the
restorer's function, schedule and statements, and bad props."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Annotations, Match, Template

from constructs_pkg import (
    AlarmOptions,
    Capacity,
    CapacityConfigError,
    CapacityRequests,
    FastPath,
    FunctionOptions,
    ThrottleAwareScaler,
)
from tests.support.alarm_style import alarm_actions_of
from tests.support.capacity_requests_construct import (
    CHECKS_ALARMS,
    PK,
    by_sid,
    move_minimums,
    policy,
    synth_errors,
    tables,
)


def test_a_worker_may_only_invoke_the_broker(stack: cdk.Stack) -> None:
    shipments, plain = tables(stack)
    worker = iam.Role(stack, "Worker", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    requests = CapacityRequests(stack, "Requests", tables=[shipments, plain])
    grant = requests.grant_request(worker)
    assert isinstance(grant, iam.Grant) and grant.success
    template = Template.from_stack(stack)
    (worker_policy,) = template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"Roles": [stack.resolve(worker.role_name)]}}
    ).values()
    assert worker_policy["Properties"]["PolicyDocument"]["Statement"] == [
        {
            "Effect": "Allow",
            "Action": "lambda:InvokeFunction",
            "Resource": stack.resolve(requests.broker.function_arn),
        }
    ]
    # No managed policy is attached to the worker
    for found in template.find_resources("AWS::IAM::ManagedPolicy").values():
        assert stack.resolve(worker.role_name) not in found["Properties"].get("Roles", [])


def test_the_broker_has_exactly_what_a_request_needs(stack: cdk.Stack) -> None:
    shipments, plain = tables(stack)
    shipments.add_global_secondary_index(
        index_name="byPartner",
        partition_key=PK,
        read=Capacity(min_capacity=5, max_capacity=100),
        write=Capacity(min_capacity=5, max_capacity=100),
    )
    requests = CapacityRequests(
        stack, "Requests", tables=[shipments, plain], restore_every=None, max_units=500
    )
    requests.connect(ThrottleAwareScaler(stack, "Scaler", tables=[shipments, plain]))
    plain.add_global_secondary_index(index_name="byDay", partition_key=PK)
    requests.allow_index(plain, "byDay")
    template = Template.from_stack(stack)
    props = policy(template, "Permissions of DynamoDB capacity request broker")
    names = [stack.resolve(shipments.table.table_name), stack.resolve(plain.table_name)]
    assert by_sid(props) == {
        "WriteOwnLogs": by_sid(props)["WriteOwnLogs"],
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
        "HoldStore": {
            "Sid": "HoldStore",
            "Effect": "Allow",
            "Action": [
                "dynamodb:GetItem",
                "dynamodb:UpdateItem",
                "dynamodb:Query",
                "dynamodb:Scan",
            ],
            "Resource": stack.resolve(requests.hold_store.table_arn),
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
        "ReadTraffic": {
            "Sid": "ReadTraffic",
            "Effect": "Allow",
            "Action": "cloudwatch:GetMetricData",
            "Resource": "*",
        },
    }
    # The broker knows what it serves: the tables, the table's own GSI, the allowed one
    (broker,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "ddb_capacity_runtime.requests.broker.broker_handler"}},
    ).values()
    env = broker["Properties"]["Environment"]["Variables"]
    assert env["CAPACITY_MAX_UNITS"] == "500"
    assert env["CAPACITY_MAX_TOTAL_UNITS"] == "500"  # max_units unless given
    # a flood of requests cannot take the account's concurrency
    assert broker["Properties"]["ReservedConcurrentExecutions"] == 10
    assert env["CAPACITY_HOLDS_TABLE"] == stack.resolve(requests.hold_store.table_name)
    scopes = json.loads(
        json.dumps(env["CAPACITY_SCOPES"])
    )  # a Fn::Join of the JSON around the names
    parts = scopes["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else f"<{list(p.values())[0]}>" for p in parts)
    shipments_ref = f"<{stack.resolve(shipments.table.table_name)['Ref']}>"
    plain_ref = f"<{stack.resolve(plain.table_name)['Ref']}>"
    assert json.loads(text) == [
        {"table": shipments_ref, "indexes": ["byPartner"]},
        {"table": plain_ref, "indexes": ["byDay"]},
    ]
    # Every scalable target the table made carries the tag the broker's grant needs
    for target in template.find_resources("AWS::ApplicationAutoScaling::ScalableTarget").values():
        assert {
            "Key": "ddb-capacity:table",
            "Value": stack.resolve(shipments.table.table_name),
        } in target["Properties"]["Tags"]
    # The hold store: on demand, keyed by table and dimension, with point-in-time recovery
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        },
    )
    # No restorer was asked for: the broker, and the connected scaler that ends expired
    # holds (its function and its rule); the broker's failures are alarmed
    template.resource_count_is("AWS::Lambda::Function", 2)
    template.resource_count_is("AWS::Events::Rule", 1)
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {"MetricName": "Errors", "AlarmActions": alarm_actions_of(stack, requests)},
    )
    # and so are holds dropped without lowering their table
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "DynamoDBCapacity",
            "MetricName": "HoldsDropped",
            "Threshold": 1,
            "AlarmActions": alarm_actions_of(stack, requests),
        },
    )


def test_the_holds_total_and_the_brokers_concurrency_are_props(stack: cdk.Stack) -> None:
    requests = CapacityRequests(
        stack,
        "Requests",
        tables=[tables(stack)[0]],
        max_units=500,
        max_total_units=1_200,
        broker_concurrency=None,
    )
    broker = Template.from_stack(stack).find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "ddb_capacity_runtime.requests.broker.broker_handler"}},
    )
    (props,) = [b["Properties"] for b in broker.values()]
    assert props["Environment"]["Variables"]["CAPACITY_MAX_TOTAL_UNITS"] == "1200"
    assert "ReservedConcurrentExecutions" not in props
    assert requests.environment["CAPACITY_MAX_TOTAL_UNITS"] == "1200"


def test_allow_index_needs_one_of_its_tables(stack: cdk.Stack) -> None:
    shipments, plain = tables(stack)
    named = dynamodb.Table.from_table_name(stack, "Named", "orders")
    requests = CapacityRequests(stack, "Requests", tables=[shipments, named], restore_every=None)
    # WHEN an index of another table is allowed THEN it is refused, naming the table (a
    # table imported by name, by that name too) and the construct's own
    imported = dynamodb.Table.from_table_name(stack, "Imported", "legacy")
    for table, shown in [(plain, "table Test/Plain"), (imported, "table Test/Imported ('legacy')")]:
        with pytest.raises(CapacityConfigError) as info:
            requests.allow_index(table, "byDay")
        assert str(info.value) == (
            "CapacityRequests Test/Requests: allow_index needs one of this construct's tables "
            f"(Test/Shipments, Test/Named ('orders')); got {shown}"
        )
    with pytest.raises(CapacityConfigError) as info:
        requests.allow_index("orders", "byDay")  # type: ignore[arg-type]
    assert str(info.value).endswith("; got 'orders'")
    with pytest.raises(CapacityConfigError, match="index_name must be .* got 'x'"):
        requests.allow_index(shipments, "x")


def test_a_function_user_and_group_can_be_granted(stack: cdk.Stack) -> None:
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments])
    function = lambda_.Function(
        stack,
        "Worker",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(e, c): pass"),
    )
    user, group = iam.User(stack, "Operator"), iam.Group(stack, "Operators")
    for grantee in (function, user, group):
        requests.grant_request(grantee)
    template = Template.from_stack(stack)
    policies = template.find_resources("AWS::IAM::Policy")
    attached = sorted(
        k for p in policies.values() for k in ("Roles", "Users", "Groups") if k in p["Properties"]
    )
    assert attached == ["Groups", "Roles", "Users"]
    # The function is told which broker to use
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "index.handler",
            "Environment": {
                "Variables": {"CAPACITY_BROKER": stack.resolve(requests.broker.function_name)}
            },
        },
    )


def test_the_restorer_is_a_rule_that_asks_the_broker_to_restore(stack: cdk.Stack) -> None:
    shipments, plain = tables(stack)
    requests = CapacityRequests(
        stack, "Requests", tables=[shipments, plain], restore_every=cdk.Duration.minutes(10)
    )
    template = Template.from_stack(stack)
    # no function of its own: the rule invokes the broker with the restore action
    broker = stack.resolve(requests.broker.function_arn)
    assert requests.restorer is not None
    rule = requests.restorer.node.default_child
    assert isinstance(rule, events.CfnRule)
    assert stack.resolve(rule.schedule_expression) == "rate(10 minutes)"
    [target] = stack.resolve(rule.targets)
    assert target["arn"] == broker
    assert json.loads(target["input"]) == {"action": "restore"}
    assert target["retryPolicy"]["maximumEventAgeInSeconds"] == 600
    template.resource_count_is("AWS::Lambda::Function", 1)
    # an asynchronous restore is never retried once the next is due; the broker's
    # reserved concurrency is its own (the requests'), never one run at a time
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "FunctionName": stack.resolve(requests.broker.function_name),
            "MaximumRetryAttempts": 0,
            "MaximumEventAgeInSeconds": 600,
        },
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "ddb_capacity_runtime.requests.broker.broker_handler",
            "ReservedConcurrentExecutions": 10,
        },
    )
    # only that rule may invoke the broker as events.amazonaws.com
    template.has_resource_properties(
        "AWS::Lambda::Permission",
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": broker,
            "Principal": "events.amazonaws.com",
            "SourceArn": stack.resolve(requests.restorer.rule_arn),
        },
    )
    # broker errors (a failed restore among them), requests timed out, dropped holds, holds
    # no restore of 30 minutes could end, and restorer runs dropped or expired
    template.resource_count_is("AWS::CloudWatch::Alarm", 6)
    assert {"RestorerRunsDropped", "RestorerRunsExpired"} <= set(requests.alarms)
    busy = requests.alarms["HoldsBusy"].node.default_child
    assert isinstance(busy, cloudwatch.CfnAlarm)
    assert stack.resolve(busy.metric_name) == "HoldsBusy"
    assert (busy.period, busy.statistic, busy.threshold) == (600, "Sum", 1)
    # 4 restores in a row: the first and the last 30 minutes apart
    assert (busy.evaluation_periods, busy.datapoints_to_alarm) == (4, 4)
    assert busy.treat_missing_data == "notBreaching"  # a restore that finds none sends none
    # AND an hourly restorer alarms on two in a row, never on one (a table UPDATING for a raise)
    hourly = cdk.Stack(cdk.App(), "Hourly")
    every = cdk.Duration.minutes(60)
    slow = CapacityRequests(hourly, "Requests", tables=[tables(hourly)[0]], restore_every=every)
    late = slow.alarms["HoldsBusy"].node.default_child
    assert isinstance(late, cloudwatch.CfnAlarm)
    assert (late.period, late.evaluation_periods, late.datapoints_to_alarm) == (3600, 2, 2)
    # AND its description says what stays busy (expired holds, or a surge of the fast path,
    # which counts HoldsBusy too), where the log says it and what to do
    said = busy.alarm_description or ""
    assert "4 periods of 10 minutes in a row" in said
    assert all(w in said for w in ("holds-busy", "surge-busy", "Wait", "KMS key"))
    # AND without a restorer, no alarm waits for it
    quiet = cdk.Stack(cdk.App(), "Quiet")
    alone = CapacityRequests(quiet, "Requests", tables=[tables(quiet)[0]], restore_every=None)
    assert "HoldsBusy" not in alone.alarms
    # AND a fast path without a restorer alarms all the same on the surges it defers while
    # their table is not ACTIVE: in every 5 minutes for 30 (one raise's UPDATING never does)
    fast = cdk.Stack(cdk.App(), "Fast")
    surging = CapacityRequests(
        fast, "Requests", tables=[tables(fast)[0]], restore_every=None, fast_path=FastPath()
    )
    alarm = surging.alarms["HoldsBusy"].node.default_child
    assert isinstance(alarm, cloudwatch.CfnAlarm)
    assert fast.resolve(alarm.metric_name) == "HoldsBusy"
    assert (alarm.period, alarm.statistic, alarm.threshold) == (300, "Sum", 1)
    assert (alarm.evaluation_periods, alarm.datapoints_to_alarm) == (7, 7)
    assert alarm.treat_missing_data == "notBreaching"
    assert "surge-busy" in (alarm.alarm_description or "")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tables": []}, "tables must list at least one table; got []"),
        (
            {"tables": ["Orders"]},
            "tables must be ProvisionedTable or aws_dynamodb.ITable; got 'Orders'",
        ),
        (
            {"restore_every": cdk.Duration.seconds(90)},
            "restore_every must be whole minutes from 1 to 60, or None; got 1 minute 30 seconds",
        ),
        (
            {"restore_every": cdk.Duration.hours(2)},
            "restore_every must be whole minutes from 1 to 60, or None; got 2 hours",
        ),
        (
            {"restore_every": cdk.Duration.seconds(30)},
            "restore_every must be whole minutes from 1 to 60, or None; got 30 seconds",
        ),
        (
            {"max_hold": cdk.Duration.seconds(30)},
            "max_hold must be whole minutes from 1 minute to 24 hours; got 30 seconds",
        ),
        ({"max_units": 0}, "max_units must be a whole number from 1 to table_quota (40000); got 0"),
        (
            {"max_units": 500, "max_total_units": 499},
            "max_total_units must be a whole number from max_units (500) to table_quota (40000); "
            "got 499",
        ),
        (
            {"broker_concurrency": 0},
            "broker_concurrency must be a whole number from 1 to 1000, or None; got 0",
        ),
        (
            {"broker_concurrency": 1_001},
            "broker_concurrency must be a whole number from 1 to 1000, or None; got 1001",
        ),
        (
            {"max_units": 40_001},
            "max_units must be a whole number from 1 to table_quota (40000); got 40001",
        ),
        (
            {"max_hold": cdk.Duration.hours(25)},
            "max_hold must be whole minutes from 1 minute to 24 hours; got 1 day 1 hour",
        ),
        (
            {"max_hold": cdk.Duration.minutes(cdk.Token.as_number(cdk.Aws.ACCOUNT_ID))},
            "max_hold must be known when the app is built (the functions are configured with "
            "its minutes); got a token (a CfnParameter's or another resource's value): give "
            "whole minutes from 1 minute to 24 hours",
        ),
        (
            {"max_hold": cdk.Duration.seconds(90)},
            "max_hold must be whole minutes from 1 minute to 24 hours; got 1 minute 30 seconds",
        ),
    ],
)
def test_bad_props(stack: cdk.Stack, kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"tables": [tables(stack)[0]], **kwargs}
    with pytest.raises(CapacityConfigError) as info:
        CapacityRequests(stack, "Requests", **args)
    assert str(info.value) == f"CapacityRequests Test/Requests: {message}"


@pytest.mark.parametrize(
    ("max_hold", "minutes"), [(cdk.Duration.minutes(1), "1"), (cdk.Duration.hours(24), "1440")]
)
def test_max_hold_is_taken_at_either_end_of_its_range(
    stack: cdk.Stack, max_hold: cdk.Duration, minutes: str
) -> None:
    # GIVEN the shortest hold allowed, or the longest
    CapacityRequests(stack, "Requests", tables=[tables(stack)[0]], max_hold=max_hold)
    # THEN the functions are configured with it, in minutes
    Template.from_stack(stack).has_resource_properties(
        "AWS::Lambda::Function",
        {"Environment": {"Variables": {"CAPACITY_MAX_HOLD_MINUTES": minutes}}},
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"restore_every": cdk.Duration.minutes(1)},
        {"restore_every": cdk.Duration.minutes(60)},
        {"max_units": 40_000},
        {"broker_concurrency": 1_000},
    ],
)
def test_each_prop_is_taken_at_the_edge_of_its_range(
    stack: cdk.Stack, kwargs: dict[str, Any]
) -> None:
    CapacityRequests(stack, "Requests", tables=[tables(stack)[0]], **kwargs)  # no error


def test_grant_needs_something_with_a_role(stack: cdk.Stack) -> None:
    requests = CapacityRequests(stack, "Requests", tables=[tables(stack)[0]], restore_every=None)
    with pytest.raises(
        CapacityConfigError,
        match=r"grant_request needs the grantee \(an iam.IGrantable\): a role, a user, a group",
    ):
        requests.grant_request(iam.AccountRootPrincipal())


def test_a_connected_scaler_obeys_and_ends_the_holds(stack: cdk.Stack) -> None:
    from constructs_pkg import ThrottleAwareScaler

    # GIVEN a scaler and capacity requests on the same table
    shipments, _ = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[shipments])
    requests = CapacityRequests(
        stack,
        "Requests",
        tables=[shipments],
        restore_every=None,
        max_units=5000,
        max_hold=cdk.Duration.hours(2),
    )
    # WHEN they are connected
    requests.connect(scaler)
    template = Template.from_stack(stack)
    # THEN the scaler knows the holds' bounds and keeps its state in the hold store
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "ddb_capacity_runtime.scaler.handler.lambda_handler",
            "Environment": {
                "Variables": {
                    "CAPACITY_HOLDS_TABLE": stack.resolve(requests.hold_store.table_name),
                    "CAPACITY_MAX_UNITS": "5000",
                    "CAPACITY_MAX_HOLD_MINUTES": "120",
                }
            },
        },
    )
    statements = by_sid(policy(template, "Permissions of Throttle-aware DynamoDB capacity scaler"))
    assert statements["StateStore"] == {
        "Sid": "StateStore",
        "Effect": "Allow",
        "Action": [
            "dynamodb:GetItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:Query",
            "dynamodb:Scan",
        ],
        "Resource": stack.resolve(requests.hold_store.table_arn),
    }
    assert "HoldStore" not in statements  # one statement for the one store
    # AND there is one store: the scaler's own is gone from the tree and the template
    assert scaler.state_store is requests.hold_store
    assert scaler.node.try_find_child("StateStore") is None
    stores = template.find_resources(
        "AWS::DynamoDB::Table", {"Properties": {"BillingMode": "PAY_PER_REQUEST"}}
    )
    assert list(stores) == [stack.resolve(requests.hold_store.table_name)["Ref"]]
    template.resource_count_is("AWS::DynamoDB::Table", 3)  # shipments, plain, the store


def test_the_hold_store_is_a_state_store(stack: cdk.Stack) -> None:
    requests = CapacityRequests(stack, "Requests", tables=[tables(stack)[0]])
    (store,) = (
        Template.from_stack(stack)
        .find_resources("AWS::DynamoDB::Table", {"Properties": {"BillingMode": "PAY_PER_REQUEST"}})
        .values()
    )
    assert store["Properties"]["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert store["Properties"]["PointInTimeRecoverySpecification"] == {
        "PointInTimeRecoveryEnabled": True
    }
    assert (store["DeletionPolicy"], store["UpdateReplacePolicy"]) == ("Delete", "Delete")
    assert store["Metadata"]["checkov"]["skip"] == [
        {
            "id": "CKV_AWS_119",
            "comment": "Encrypted at rest with DynamoDB's AWS owned key; it holds table names, "
            "unit counts and expiry times only, so a customer managed key would protect "
            "nothing more and cost $1 a month plus requests.",
        }
    ]
    assert requests.node.find_child("HoldStore") is requests.hold_store


def test_one_alarm_watches_what_is_dropped_from_a_state_store(stack: cdk.Stack) -> None:
    def dropped(template: Template) -> list[str]:
        alarms = template.find_resources("AWS::CloudWatch::Alarm")
        return sorted(
            k
            for k, a in alarms.items()
            for name in [a["Properties"].get("MetricName")]
            + [q["MetricStat"]["Metric"]["MetricName"] for q in a["Properties"].get("Metrics", [])]
            if name == "HoldsDropped"
        )

    # GIVEN a scaler alone: it alarms on what its tick drops from its own store
    alone = ThrottleAwareScaler(stack, "Alone", tables=[tables(stack)[0]])
    assert "HoldsDropped" in alone.alarms
    assert dropped(Template.from_stack(stack)) == [
        stack.get_logical_id(alone.alarms["HoldsDropped"].node.default_child)  # type: ignore[arg-type]
    ]
    # WHEN it is connected to capacity requests, whose alarm watches the same metric
    other = cdk.Stack(cdk.App(), "Connected")
    shipments = tables(other)[0]
    requests = CapacityRequests(other, "Requests", tables=[shipments])
    scaler = ThrottleAwareScaler(other, "Scaler", tables=[shipments])
    requests.connect(scaler)
    # THEN one alarm watches it: the requests'
    assert "HoldsDropped" not in scaler.alarms and "HoldsDropped" in requests.alarms
    assert len(dropped(Template.from_stack(other))) == 1
    # AND options the scaler was given for it are said to no longer apply
    told = cdk.Stack(cdk.App(), "Told")
    served = tables(told)[0]
    options = {"HoldsDropped": AlarmOptions(threshold=5)}
    moved = ThrottleAwareScaler(told, "Scaler", tables=[served], alarm_options=options)
    CapacityRequests(told, "Requests", tables=[served]).connect(moved)
    warned = Annotations.from_stack(told).find_warning(
        "*", Match.string_like_regexp("HoldsDropped")
    )
    assert len(warned) == 1 and "no longer apply" in str(warned[0].entry.data)
    # AND with the requests' alarm off, the scaler keeps its own
    third = cdk.Stack(cdk.App(), "Off")
    shipments = tables(third)[0]
    quiet = CapacityRequests(
        third,
        "Requests",
        tables=[shipments],
        alarm_options={"HoldsDropped": AlarmOptions(enabled=False)},
    )
    kept = ThrottleAwareScaler(third, "Scaler", tables=[shipments])
    quiet.connect(kept)
    assert "HoldsDropped" in kept.alarms and "HoldsDropped" not in quiet.alarms
    assert len(dropped(Template.from_stack(third))) == 1


def test_a_scaler_connects_to_one_capacity_requests_once(stack: cdk.Stack) -> None:
    from constructs_pkg import ThrottleAwareScaler

    shipments, plain = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[shipments, plain])
    first = CapacityRequests(stack, "Requests", tables=[shipments], restore_every=None)
    # THEN the scaler is connected as the first is built, and connecting it again is nothing
    assert scaler.state_store is first.hold_store
    first.connect(scaler)
    assert scaler.state_store is first.hold_store
    # AND other capacity requests serving another of its tables are refused as they are
    # built, naming the tables, the scaler, its store and the fix
    with pytest.raises(CapacityConfigError) as other:
        CapacityRequests(stack, "Others", tables=[plain], restore_every=None)
    assert str(other.value) == (
        "CapacityRequests Test/Others: tables has table Test/Plain, which "
        "ThrottleAwareScaler Test/Scaler manages, but that scaler keeps its state in the "
        "hold store of CapacityRequests Test/Requests already, and a scaler can be "
        "connected to one CapacityRequests only (it has one state store): serve it from "
        "that one, or manage it with another scaler"
    )


def test_a_scaler_made_after_the_requests_is_connected_too(stack: cdk.Stack) -> None:
    from constructs_pkg import ThrottleAwareScaler

    shipments, plain = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments])
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[plain])
    assert scaler.state_store is not requests.hold_store  # no table in common yet
    shipments.enable_throttle_aware_scaling(scaler)  # now one
    assert scaler.state_store is requests.hold_store
    assert synth_errors(stack) == []


def test_a_scaler_found_by_tag_alone_is_connected_by_hand(stack: cdk.Stack) -> None:
    from constructs_pkg import ThrottleAwareScaler

    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments])
    scaler = ThrottleAwareScaler(stack, "Scaler", tag_key="capacity")
    assert scaler.state_store is not requests.hold_store  # which tables it finds is unknown
    requests.connect(scaler)
    assert scaler.state_store is requests.hold_store


@pytest.mark.parametrize("given", ["scaler", None], ids=["a string", "None"])
def test_connect_refuses_what_is_not_a_scaler(stack: cdk.Stack, given: object) -> None:
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments])
    # WHEN something other than a ThrottleAwareScaler is connected THEN it is refused, named
    with pytest.raises(CapacityConfigError) as caught:
        requests.connect(given)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"CapacityRequests Test/Requests: connect: got {given!r}; expected a "
        "ThrottleAwareScaler (the construct itself)"
    )


def test_a_scaler_on_a_served_table_is_connected_without_a_call(stack: cdk.Stack) -> None:
    from constructs_pkg import ThrottleAwareScaler

    # GIVEN a scaler and capacity requests on the same table, no connect() call
    shipments, plain = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[shipments])
    requests = CapacityRequests(stack, "Requests", tables=[shipments, plain])
    # THEN the scaler keeps its state in the requests' hold store, and the app synthesizes
    assert scaler.state_store is requests.hold_store
    assert synth_errors(stack) == []


def test_requests_with_no_restorer_and_no_connected_scaler_fail_synthesis(
    stack: cdk.Stack,
) -> None:
    # GIVEN capacity requests with no restorer, and no scaler at all
    shipments, _ = tables(stack)
    CapacityRequests(stack, "Requests", tables=[shipments], restore_every=None)
    # WHEN the app is synthesized THEN it fails: nothing would end a hold whose worker died
    assert synth_errors(stack) == [
        "[Test/Requests] CapacityRequests Test/Requests: restore_every=None needs a connected "
        "ThrottleAwareScaler to end expired holds, and none is connected: nothing would end "
        "a hold its worker never released; keep the restorer (restore_every), or manage a "
        "served table with a scaler that is not a dry run (its tables, add_table or "
        "enable_throttle_aware_scaling: it is connected without a call; one that finds "
        "tables by tag: requests.connect(scaler))"
    ]


def test_requests_with_no_restorer_and_a_dry_run_scaler_fail_synthesis(stack: cdk.Stack) -> None:
    # GIVEN capacity requests with no restorer, connected to a scaler that is a dry run
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments], restore_every=None)
    requests.connect(ThrottleAwareScaler(stack, "Scaler", tables=[shipments], dry_run=True))
    # WHEN the app is synthesized THEN it fails: a dry run ends no hold
    (error,) = synth_errors(stack)
    assert "and each one connected is a dry run, which changes nothing: nothing would end" in error


def test_a_scaler_enabled_on_a_served_table_is_connected(stack: cdk.Stack) -> None:
    from constructs_pkg import ThrottleAwareScaler

    # GIVEN a tag-discovering scaler, enabled on a table the capacity requests serve
    shipments, _ = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tag_key="autoscaling_manager_enabled")
    shipments.enable_throttle_aware_scaling(scaler)
    requests = CapacityRequests(stack, "Requests", tables=[shipments])
    # THEN it is connected (the table is explicit), and the app synthesizes
    assert scaler.state_store is requests.hold_store
    assert synth_errors(stack) == []


def test_a_scaler_connected_after_both_are_made_synthesizes(stack: cdk.Stack) -> None:
    from constructs_pkg import ThrottleAwareScaler

    # GIVEN a scaler and capacity requests on the same table
    shipments, plain = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[shipments])
    requests = CapacityRequests(stack, "Requests", tables=[shipments], restore_every=None)
    scaler.add_table(plain)
    # WHEN they are connected THEN the app synthesizes
    requests.connect(scaler)
    assert synth_errors(stack) == []


def test_a_scaler_and_capacity_requests_on_different_tables_synthesize(
    stack: cdk.Stack,
) -> None:
    from constructs_pkg import ThrottleAwareScaler

    # GIVEN a scaler and capacity requests on different tables, not connected
    shipments, plain = tables(stack)
    ThrottleAwareScaler(stack, "Scaler", tables=[plain])
    CapacityRequests(stack, "Requests", tables=[shipments])
    # WHEN the app is synthesized THEN it passes: the two stores never share a table
    assert synth_errors(stack) == []


def test_a_scaler_connected_elsewhere_cannot_share_a_table(stack: cdk.Stack) -> None:
    from constructs_pkg import ThrottleAwareScaler

    # GIVEN a scaler connected to capacity requests on one table, and other capacity
    # requests on the scaler's other table
    shipments, plain = tables(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[shipments, plain])
    CapacityRequests(stack, "Others", tables=[plain], restore_every=None).connect(scaler)
    # WHEN the other is built THEN it is refused in Python: the scaler has its one store
    with pytest.raises(CapacityConfigError) as refused:
        CapacityRequests(stack, "Requests", tables=[shipments])
    assert str(refused.value) == (
        "CapacityRequests Test/Requests: tables has table Test/Shipments, which "
        "ThrottleAwareScaler Test/Scaler manages, but that scaler keeps its state in the "
        "hold store of CapacityRequests Test/Others already, and a scaler can be connected "
        "to one CapacityRequests only (it has one state store): serve it from that one, or "
        "manage it with another scaler"
    )


def test_two_capacity_requests_cannot_serve_one_table(stack: cdk.Stack) -> None:
    # GIVEN capacity requests serving two tables: another serving one of them would keep its
    # own hold store, so releasing a hold in one would lower the table under the other's
    shipments, plain = tables(stack)
    CapacityRequests(stack, "Requests", tables=[shipments, plain])
    # WHEN other capacity requests are built on one of them THEN they are refused in
    # Python, naming the field, the table and the requests that serve it
    with pytest.raises(CapacityConfigError) as caught:
        CapacityRequests(stack, "Others", tables=[shipments])
    assert str(caught.value) == (
        "CapacityRequests Test/Others: tables has table Test/Shipments, which "
        "CapacityRequests Test/Requests serves already; a table is served by one "
        "CapacityRequests (each keeps its own hold store, so neither would see the other's "
        "holds, and a release in one would lower the table under the other's hold): list "
        "each table in the tables of one of them only"
    )
    # AND so are two imports of one table name in one stack, given as its TableCapacity
    # or as the table itself
    CapacityRequests(stack, "Named", tables=[dynamodb.Table.from_table_name(stack, "A", "orders")])
    with pytest.raises(CapacityConfigError, match=r"Again: tables has table Test/B, which "):
        CapacityRequests(
            stack, "Again", tables=[dynamodb.Table.from_table_name(stack, "B", "orders")]
        )
    with pytest.raises(
        CapacityConfigError,
        match=r"Third: tables has table Test/Shipments\S*, which CapacityRequests Test/Requests ",
    ):
        CapacityRequests(stack, "Third", tables=[shipments.table])
    # AND the app of the first ones synthesizes: nothing is left to fail at synth
    assert synth_errors(stack) == []


def test_capacity_requests_in_other_stacks_may_import_tables_of_one_name() -> None:
    # two Regions' tables of one name are two tables: not compared across stacks
    app = cdk.App()
    for region in ("eu-west-1", "us-east-1"):
        here = cdk.Stack(app, region, env=cdk.Environment(account="111111111111", region=region))
        CapacityRequests(
            here, "Requests", tables=[dynamodb.Table.from_table_name(here, "T", "orders")]
        )
    assert [m for s in app.node.find_all() for m in s.node.validate()] == []


def test_a_table_given_twice_is_refused(stack: cdk.Stack) -> None:
    shipments, _ = tables(stack)
    named = dynamodb.Table.from_table_name(stack, "Named", "orders")
    again = dynamodb.Table.from_table_name(stack, "Again", "orders")
    carts = dynamodb.Table(stack, "Carts", partition_key=PK, table_name="carts")
    cases: list[tuple[list[Any], str]] = [
        ([shipments, shipments], "tables lists table Test/Shipments twice"),
        ([shipments, shipments.table], "tables lists table Test/Shipments twice"),
        ([named, named], "tables lists table Test/Named twice"),
        (
            [named, again],
            "tables lists Test/Named and Test/Again, which are one table (named 'orders' in "
            "stack Test)",
        ),
        (
            [carts, dynamodb.Table.from_table_name(stack, "Imported", "carts")],
            "tables lists Test/Carts and Test/Imported, which are one table (named 'carts' in "
            "stack Test)",
        ),
    ]
    for given, message in cases:
        with pytest.raises(CapacityConfigError) as info:
            CapacityRequests(stack, f"R{len(stack.node.children)}", tables=given)
        assert str(info.value).split(": ", 1)[1] == f"{message}; list each table once"


NO_FAST_PATH = "there is no fast path (fast_path=None)"


@pytest.mark.parametrize(
    ("kwargs", "option", "why"),
    [
        (
            {"alarm_options": {"SurgeUnits": AlarmOptions(enabled=False)}},
            "alarm_options['SurgeUnits'] configures an alarm",
            NO_FAST_PATH,
        ),
        (
            {"alarm_options": {"SignalsErrors": AlarmOptions(threshold=3)}},
            "alarm_options['SignalsErrors'] configures an alarm",
            NO_FAST_PATH,
        ),
        (
            {
                "fast_path": FastPath(surge_alarm_units=None),
                "alarm_options": {"SurgeUnits": AlarmOptions(threshold=5)},
            },
            "alarm_options['SurgeUnits'] configures an alarm",
            "FastPath(surge_alarm_units=None) leaves that alarm out",
        ),
        (
            {"fast_path": FastPath(), "alarm_options": {"StreamLag": AlarmOptions(threshold=5)}},
            "alarm_options['StreamLag'] configures an alarm",
            "the fast path has no stream signal (FastPath(stream=None))",
        ),
        (
            {"restore_every": None, "alarm_options": {"HoldsBusy": AlarmOptions(threshold=5)}},
            "alarm_options['HoldsBusy'] configures an alarm",
            "restore_every=None leaves the restorer out, and there is no fast path",
        ),
        (
            {"function_options": {"Signals": FunctionOptions(memory_size=512)}},
            "function_options['Signals'] configures a function",
            NO_FAST_PATH,
        ),
        (
            {
                "fast_path": FastPath(),
                "function_options": {"StreamReader": FunctionOptions(memory_size=512)},
            },
            "function_options['StreamReader'] configures a function",
            "the fast path has no stream signal (FastPath(stream=None))",
        ),
        (
            {
                "restore_every": None,
                "alarm_options": {"RestorerRunsDropped": AlarmOptions(threshold=5)},
            },
            "alarm_options['RestorerRunsDropped'] configures an alarm",
            "restore_every=None leaves the restorer out",
        ),
    ],
)
def test_options_for_what_is_never_made_are_refused(
    stack: cdk.Stack, kwargs: dict[str, Any], option: str, why: str
) -> None:
    # (they were ignored without a word)
    with pytest.raises(CapacityConfigError) as info:
        CapacityRequests(stack, "Requests", tables=[tables(stack)[0]], **kwargs)
    assert str(info.value) == (
        f"CapacityRequests Test/Requests: {option} these props never make: {why}; remove it"
    )


def test_every_alarm_made_takes_its_options(stack: cdk.Stack) -> None:
    from constructs_pkg.requests._capacity_requests import ALARM_IDS

    # GIVEN capacity requests with everything that has alarms
    requests = CapacityRequests(
        stack, "Requests", tables=[tables(stack)[0]], fast_path=FastPath(stream=True)
    )
    # THEN each alarm it makes may be given options, and none is left out
    assert sorted(requests.alarms) == sorted(ALARM_IDS)
    # and, given options for each, it is made
    again = CapacityRequests(
        cdk.Stack(cdk.App(), "Again"),
        "Requests",
        tables=[tables(cdk.Stack(cdk.App(), "T"))[0]],
        fast_path=FastPath(stream=True),
        alarm_options={alarm_id: AlarmOptions(threshold=9) for alarm_id in ALARM_IDS},
    )
    assert sorted(again.alarms) == sorted(ALARM_IDS)
