"""ThrottleAwareScaler in the template: the function, its schedule and dead-letter path,
its state store, the exact IAM statements, the alarms and the topic."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template

from constructs_pkg import (
    AlarmOptions,
    Capacity,
    CapacityConfigError,
    PrewarmMethod,
    ProvisionedTable,
    ThrottleAwareScaler,
)
from constructs_pkg.common._alarm_sink import AlarmTopic
from constructs_pkg.common._runtime import function_runtime
from tests.support.alarm_style import alarm_actions_of
from tests.support.capacity_requests_construct import CHECKS_ALARMS
from tests.support.scaler_construct import PK, feed


def statements(template: Template) -> dict[str, dict[str, Any]]:
    (policy,) = template.find_resources(
        "AWS::IAM::ManagedPolicy",
        {"Properties": {"Description": "Permissions of Throttle-aware DynamoDB capacity scaler"}},
    ).values()
    return {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}


def test_function_and_schedule_with_no_dead_letter_queue(stack: cdk.Stack) -> None:
    table = feed(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[table])
    template = Template.from_stack(stack)
    # THEN the function runs the run-time handler on the Python the tests run on, arm64,
    # one at a time, sized from the benchmark, with the scaler's configuration
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "ddb_capacity_runtime.scaler.handler.lambda_handler",
            "Runtime": function_runtime().name,
            "Architectures": ["arm64"],
            "ReservedConcurrentExecutions": 1,
            "Timeout": 180,
            "MemorySize": 256,
            "Environment": {
                "Variables": {
                    "SCALER_TABLES": stack.resolve(table.table.table_name),
                    "SCALER_TAG_KEY": "",
                    "SCALER_TAG_VALUE": "true",
                    "SCALER_DRY_RUN": "false",
                    "SCALER_TICK_MINUTES": "2",
                    "SCALER_MODE": "autopilot",
                    "SCALER_SCALE_DOWN_TICKS": "2",
                    "SCALER_METRICS_NAMESPACE": "DynamoDBCapacity",
                    "SCALER_OVERRIDES": Match.any_value(),
                    "CAPACITY_HOLDS_TABLE": stack.resolve(scaler.state_store.table_name),
                }
            },
        },
    )
    # AND a 2-minute rule with retries, and no dead-letter queue anywhere (a failed run is
    # counted: Errors, RunsDropped, RunsExpired)
    assert scaler.dead_letter_queue is None
    template.resource_count_is("AWS::SQS::Queue", 0)
    (function,) = template.find_resources("AWS::Lambda::Function").values()
    assert "DeadLetterConfig" not in function["Properties"]
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(2 minutes)",
            "Targets": [
                Match.object_like(
                    {
                        "Arn": stack.resolve(scaler.function.function_arn),
                        "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 120},
                    }
                )
            ],
        },
    )
    (invoke,) = template.find_resources("AWS::Lambda::EventInvokeConfig").values()
    assert invoke["Properties"]["MaximumRetryAttempts"] == 0
    assert invoke["Properties"]["MaximumEventAgeInSeconds"] == 120
    assert "DestinationConfig" not in invoke["Properties"]
    template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 365})


def test_overrides_carry_the_provisioned_tables_ranges(stack: cdk.Stack) -> None:
    table = feed(stack)
    legacy = dynamodb.Table.from_table_name(stack, "Legacy", "legacy-table")
    ThrottleAwareScaler(
        stack, "Scaler", tables=[table, legacy], overrides={"legacy-table": {"max": 300}}
    )
    (function,) = Template.from_stack(stack).find_resources("AWS::Lambda::Function").values()
    overrides = function["Properties"]["Environment"]["Variables"]["SCALER_OVERRIDES"]
    joined = "".join(p if isinstance(p, str) else "<feed>" for p in overrides["Fn::Join"][1])
    # every Capacity field the scaler uses reaches it: min, max and the target
    assert joined == (
        '{"<feed>":{"read":{"min":50,"max":4000,"target":70},'
        '"write":{"min":20,"max":1000,"target":70}},'
        '"legacy-table":{"max":300}}'
    )


def test_iam_is_least_privilege_statement_by_statement(stack: cdk.Stack) -> None:
    table = feed(stack)
    scaler = ThrottleAwareScaler(
        stack, "Scaler", tables=[table], tag_key="team-capacity", tag_value="managed"
    )
    template = Template.from_stack(stack)
    by_sid = statements(template)
    partition, region, account = (
        {"Ref": "AWS::Partition"},
        {"Ref": "AWS::Region"},
        {"Ref": "AWS::AccountId"},
    )
    assert set(by_sid) == {
        "WriteOwnLogs",
        "ManageTables",
        "ReadAutoScaling",
        "MoveMinimums",
        "MoveMinimumsOfTaggedTargets",
        "ReadMetrics",
        "ReadTableQuota",
        "DiscoverTables",
        "ManageTaggedTables",
        "ForgetStateTags",
        "ForgetStateTagsOnTaggedTables",
        "StateStore",
        "AutoScalingChecksAlarms",
    }  # no PutMetricData; no dead letters to send: the tick's metrics are EMF lines
    assert by_sid["AutoScalingChecksAlarms"] == CHECKS_ALARMS
    assert by_sid["ReadTableQuota"] == {
        "Sid": "ReadTableQuota",
        "Effect": "Allow",
        "Action": "dynamodb:DescribeLimits",
        "Resource": "*",
    }
    assert by_sid["ManageTables"] == {
        "Sid": "ManageTables",
        "Effect": "Allow",
        "Action": [
            "dynamodb:DescribeTable",
            "dynamodb:UpdateTable",
            "dynamodb:ListTagsOfResource",
        ],
        "Resource": stack.resolve(table.table.table_arn),
    }
    # no tag written: only 0.4's state tags removed, never the discovery tag nor anyone else's
    state_tags = {
        "ForAllValues:StringLike": {
            "aws:TagKeys": ["ddb-capacity:base-min:*", "ddb-capacity:forecast:*"]
        }
    }
    assert by_sid["ForgetStateTags"] == {
        "Sid": "ForgetStateTags",
        "Effect": "Allow",
        "Action": "dynamodb:UntagResource",
        "Resource": stack.resolve(table.table.table_arn),
        "Condition": state_tags,
    }
    assert by_sid["ForgetStateTagsOnTaggedTables"] == {
        "Sid": "ForgetStateTagsOnTaggedTables",
        "Effect": "Allow",
        "Action": "dynamodb:UntagResource",
        "Resource": {
            "Fn::Join": ["", ["arn:", partition, ":dynamodb:", region, ":", account, ":table/*"]]
        },
        "Condition": {
            "StringEquals": {"aws:ResourceTag/team-capacity": "managed"},
            **state_tags,
        },
    }
    # its state: items of its own store only
    assert by_sid["StateStore"] == {
        "Sid": "StateStore",
        "Effect": "Allow",
        "Action": [
            "dynamodb:GetItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:Query",
            "dynamodb:Scan",
        ],
        "Resource": stack.resolve(scaler.state_store.table_arn),
    }
    assert by_sid["ManageTaggedTables"] == {
        "Sid": "ManageTaggedTables",
        "Effect": "Allow",
        "Action": [
            "dynamodb:DescribeTable",
            "dynamodb:UpdateTable",
            "dynamodb:ListTagsOfResource",
        ],
        "Resource": {
            "Fn::Join": ["", ["arn:", partition, ":dynamodb:", region, ":", account, ":table/*"]]
        },
        "Condition": {"StringEquals": {"aws:ResourceTag/team-capacity": "managed"}},
    }
    targets = {
        "Fn::Join": [
            "",
            ["arn:", partition, ":application-autoscaling:", region, ":", account]
            + [":scalable-target/*"],
        ]
    }
    # RegisterScalableTarget only on the targets of its tables (tagged by the table), or on
    # targets that carry the discovery tag themselves; never with tags in the request
    for sid, key, value in (
        ("MoveMinimums", "ddb-capacity:table", [stack.resolve(table.table.table_name)]),
        ("MoveMinimumsOfTaggedTargets", "team-capacity", ["managed"]),
    ):
        assert by_sid[sid] == {
            "Sid": sid,
            "Effect": "Allow",
            "Action": "application-autoscaling:RegisterScalableTarget",
            "Resource": targets,
            "Condition": {
                "StringEquals": {
                    "application-autoscaling:service-namespace": "dynamodb",
                    f"aws:ResourceTag/{key}": value,
                },
                "Null": {"aws:TagKeys": "true"},
            },
        }
    assert by_sid["ReadAutoScaling"]["Action"] == [
        "application-autoscaling:DescribeScalableTargets",
        "application-autoscaling:DescribeScalingPolicies",
    ]
    assert by_sid["ReadMetrics"] == {
        "Sid": "ReadMetrics",
        "Effect": "Allow",
        "Action": "cloudwatch:GetMetricData",
        "Resource": "*",
    }
    assert by_sid["DiscoverTables"]["Action"] == "tag:GetResources"
    # AND nothing inline, nothing AWS-managed
    template.resource_count_is("AWS::IAM::Policy", 0)
    template.has_resource_properties("AWS::IAM::Role", {"ManagedPolicyArns": Match.absent()})


def test_the_scaler_keeps_its_state_in_its_own_store(stack: cdk.Stack) -> None:
    # GIVEN a scaler alone
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)])
    template = Template.from_stack(stack)
    # THEN its state store is an on-demand table keyed by pk and sk, with point-in-time
    # recovery, deleted with the stack, its AWS owned key explained to checkov
    (store,) = template.find_resources(
        "AWS::DynamoDB::Table", {"Properties": {"BillingMode": "PAY_PER_REQUEST"}}
    ).values()
    assert store["Properties"] == {
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
    }
    assert (store["DeletionPolicy"], store["UpdateReplacePolicy"]) == ("Delete", "Delete")
    (skip,) = store["Metadata"]["checkov"]["skip"]
    assert skip["id"] == "CKV_AWS_119" and "AWS owned key" in skip["comment"]
    # AND it is the child StateStore, the function is told its name and may use its items
    assert scaler.node.find_child("StateStore") is scaler.state_store
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": {"CAPACITY_HOLDS_TABLE": stack.resolve(scaler.state_store.table_name)}
            }
        },
    )
    assert statements(template)["StateStore"]["Resource"] == stack.resolve(
        scaler.state_store.table_arn
    )


@pytest.mark.parametrize("tag_key", [None, "team-capacity"])
def test_the_scaler_writes_no_tag_and_removes_only_the_state_tags(
    stack: cdk.Stack, tag_key: str | None
) -> None:
    ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)], tag_key=tag_key)
    by_sid = statements(Template.from_stack(stack))
    # no TagResource in any statement of its policy
    actions = [
        a
        for s in by_sid.values()
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    ]
    assert "dynamodb:TagResource" not in actions
    # UntagResource only in the statements that name 0.4's state tags
    untag = {sid for sid, s in by_sid.items() if "dynamodb:UntagResource" in str(s["Action"])}
    assert untag == {"ForgetStateTags"} | ({"ForgetStateTagsOnTaggedTables"} if tag_key else set())
    for sid in untag:
        assert by_sid[sid]["Action"] == "dynamodb:UntagResource"
        assert by_sid[sid]["Condition"]["ForAllValues:StringLike"] == {
            "aws:TagKeys": ["ddb-capacity:base-min:*", "ddb-capacity:forecast:*"]
        }


def test_use_state_store_moves_the_state_once(stack: cdk.Stack) -> None:
    # GIVEN a scaler and another store
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)])
    other = dynamodb.Table.from_table_name(stack, "Shared", "shared-store")
    # WHEN its state moves there
    scaler.use_state_store(other)
    template = Template.from_stack(stack)
    # THEN its own store is gone, and its name and its statement follow the move
    assert scaler.node.try_find_child("StateStore") is None and scaler.state_store is other
    assert not template.find_resources(
        "AWS::DynamoDB::Table", {"Properties": {"BillingMode": "PAY_PER_REQUEST"}}
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Environment": {"Variables": {"CAPACITY_HOLDS_TABLE": "shared-store"}}},
    )
    assert statements(template)["StateStore"]["Resource"] == stack.resolve(other.table_arn)
    # AND a second move is refused: one store per scaler
    with pytest.raises(CapacityConfigError) as caught:
        scaler.use_state_store(dynamodb.Table.from_table_name(stack, "Third", "third"))
    assert str(caught.value) == (
        "ThrottleAwareScaler Test/Scaler: already keeps its state in Test/Shared; a scaler "
        "has one state store, so it cannot move to Test/Third"
    )


def test_use_state_store_needs_a_table(stack: cdk.Stack) -> None:
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)])
    with pytest.raises(CapacityConfigError) as caught:
        scaler.use_state_store("shared-store")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "ThrottleAwareScaler Test/Scaler: use_state_store needs an aws_dynamodb.ITable; "
        "got 'shared-store'"
    )
    assert scaler.node.try_find_child("StateStore") is scaler.state_store


def test_without_tag_discovery_there_is_no_wildcard_table_statement(stack: cdk.Stack) -> None:
    ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)])
    by_sid = statements(Template.from_stack(stack))
    assert "ManageTaggedTables" not in by_sid and "DiscoverTables" not in by_sid


def test_alarms_go_to_an_encrypted_ssl_only_alarm_topic(stack: cdk.Stack) -> None:
    topic = AlarmTopic(stack, "Alarms").topic
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)], alarm_topic=topic)
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})
    template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})
    # only this account's alarms may use the key, and only to publish
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        {
                            "Sid": "AlarmsOfThisAccount",
                            "Effect": "Allow",
                            "Principal": {"Service": "cloudwatch.amazonaws.com"},
                            "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                            "Resource": "*",
                            "Condition": {
                                "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
                            },
                        }
                    ]
                )
            }
        },
    )
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            }
        },
    )
    (topic,) = alarm_actions_of(stack, scaler)
    alarms = template.find_resources("AWS::CloudWatch::Alarm")
    assert all(a["Properties"]["AlarmActions"] == [topic] for a in alarms.values())
    # errors, runs dropped, runs expired, not running, bad targets, refused tags, ignored
    # tags, metrics stalled, pinned at max, updating, holds dropped, plans not kept, 2 x 2 x
    # (table + 1 GSI) throttling, and the table's hot key
    assert len(alarms) == 12 + 4 + 1
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "MetricName": "Invocations",
            "ComparisonOperator": "LessThanThreshold",
            "Threshold": 1,
            "Period": 360,
            "TreatMissingData": "breaching",
        },
    )
    for namespace, name in (
        ("AWS/Events", "FailedInvocations"),
        ("AWS/Lambda", "AsyncEventsDropped"),
        ("AWS/Lambda", "Errors"),
    ):
        template.has_resource_properties(
            "AWS::CloudWatch::Alarm",
            {"MetricName": name, "Namespace": namespace, "Threshold": 1},
        )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {"MetricName": "Errors", "Namespace": "AWS/Lambda", "Threshold": 1},
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "EvaluationPeriods": 15,
            "Threshold": 1,
            "Metrics": [
                Match.object_like(
                    {
                        "MetricStat": {
                            "Metric": {
                                "MetricName": "CapacityAtMax",
                                "Namespace": "DynamoDBCapacity",
                            },
                            "Period": 120,
                            "Stat": "Maximum",
                        }
                    }
                )
            ],
        },
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "MetricName": "WriteThrottleEvents",
            "Namespace": "AWS/DynamoDB",
            "EvaluationPeriods": 10,
            "DatapointsToAlarm": 10,
            "Period": 60,
            "Statistic": "Sum",
            "Dimensions": Match.array_with(
                [{"Name": "GlobalSecondaryIndexName", "Value": "byTopic"}]
            ),
        },
    )


def _per_table_alarm(template: Template, alarm_id: str) -> dict[str, Any]:
    alarms: list[dict[str, Any]] = [
        a["Properties"]
        for k, a in template.find_resources("AWS::CloudWatch::Alarm").items()
        if k.startswith(f"Scaler{alarm_id}")
    ]
    (alarm,) = alarms
    return alarm


def assert_worst_table(alarm: dict[str, Any], metric: str, period: int, store: Any) -> None:
    """``alarm`` watches the tick's ``metric`` for the scaler's deployment (dimension
    StateStore, ``store``: its state store's name), which each table's record publishes
    too: its Maximum in a tick-long period is the worst table's; never another scaler's of
    the account. A plain metric: an alarm cannot watch a SEARCH expression (CloudWatch
    refuses it)."""
    (query,) = alarm["Metrics"]  # one metric, labelled (no expression)
    assert "Expression" not in query and query["ReturnData"] is True
    stat = query["MetricStat"]
    assert stat["Metric"] == {
        "MetricName": metric,
        "Namespace": "DynamoDBCapacity",
        "Dimensions": [{"Name": "StateStore", "Value": store}],
    }
    assert (stat["Stat"], stat["Period"]) == ("Maximum", period)


@pytest.mark.parametrize(
    ("kwargs", "ticks", "period"),
    [({}, 5, 120), ({"tick": cdk.Duration.minutes(5), "updating_for_ticks": 3}, 3, 300)],
)
def test_a_table_updating_for_n_ticks_in_a_row_alarms(
    stack: cdk.Stack, kwargs: dict[str, Any], ticks: int, period: int
) -> None:
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)], **kwargs)
    alarm = _per_table_alarm(Template.from_stack(stack), "UpdatingAlarm")
    # every one of N tick-long periods has a table the tick found UPDATING
    assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (ticks, ticks)
    assert alarm["Threshold"] == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["TreatMissingData"] == "notBreaching"
    assert_worst_table(alarm, "Updating", period, stack.resolve(scaler.state_store.table_name))
    assert alarm["AlarmActions"] == alarm_actions_of(stack, scaler)
    assert f"for {ticks} ticks in a row" in alarm["AlarmDescription"]
    # AND it covers a table whose raises end retry-next-tick tick after tick (the tick counts
    # those as Updating), and says what to look at
    assert "retry-next-tick" in alarm["AlarmDescription"]
    assert "raise-retried" in alarm["AlarmDescription"]


@pytest.mark.parametrize(
    ("kwargs", "period"), [({}, 120), ({"tick": cdk.Duration.minutes(5)}, 300)]
)
def test_the_autopilots_plans_not_kept_alarm(
    stack: cdk.Stack, kwargs: dict[str, Any], period: int
) -> None:
    # GIVEN a scaler in autopilot (the default)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)], **kwargs)
    alarm = _per_table_alarm(Template.from_stack(stack), "PlansNotKeptAlarm")
    # THEN any plan a tick could not keep alarms: the worst table's count in a tick
    assert (alarm["EvaluationPeriods"], alarm["Threshold"]) == (1, 1)
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["TreatMissingData"] == "notBreaching"
    assert_worst_table(alarm, "PlansNotKept", period, stack.resolve(scaler.state_store.table_name))
    assert alarm["AlarmActions"] == alarm_actions_of(stack, scaler)
    assert "plans-not-kept" in alarm["AlarmDescription"]
    assert scaler.alarms["PlansNotKept"] is not None


@pytest.mark.parametrize("kwargs", [{"mode": "reactive"}, {"dry_run": True}])
def test_a_scaler_that_keeps_no_plans_has_no_plans_alarm(
    stack: cdk.Stack, kwargs: dict[str, Any]
) -> None:
    # GIVEN a scaler in reactive mode, or a dry run: it never keeps a plan
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)], **kwargs)
    # THEN it has no alarm on plans not kept
    assert "PlansNotKept" not in scaler.alarms
    alarms = Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm")
    assert not [k for k in alarms if k.startswith("ScalerPlansNotKept")]
    # AND options for it name why they do nothing
    other = ThrottleAwareScaler(
        stack,
        "Other",
        tables=[dynamodb.Table.from_table_name(stack, "T", "t")],
        alarm_options={"PlansNotKept": AlarmOptions(threshold=2)},
        **kwargs,
    )
    assert other.node.validate() == [
        "ThrottleAwareScaler Test/Other: alarm_options['PlansNotKept'] configures an alarm "
        "this scaler never makes: it keeps no plans (mode='reactive', or dry_run=True); "
        "remove it"
    ]


@pytest.mark.parametrize(
    ("kwargs", "ticks", "period"),
    [
        ({}, 5, 120),
        ({"hot_key_for": cdk.Duration.minutes(30)}, 15, 120),
        ({"tick": cdk.Duration.minutes(5), "hot_key_for": cdk.Duration.minutes(12)}, 3, 300),
    ],
)
def test_each_managed_table_has_one_hot_key_alarm_on_its_own_key_range_throttles(
    stack: cdk.Stack, kwargs: dict[str, Any], ticks: int, period: int
) -> None:
    # GIVEN two managed tables, one with a GSI
    orders = dynamodb.Table.from_table_name(stack, "Orders", "orders")
    table = feed(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[table, orders], **kwargs)
    alarms = Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm")
    hot = {k: a["Properties"] for k, a in alarms.items() if k.startswith("ScalerHotKey")}
    # THEN one alarm per table (a GSI's throttles count on its table), on the count the
    # scaler makes per table per tick, in every tick of hot_key_for
    assert len(hot) == 2
    dimensions = [a["Dimensions"] for a in hot.values()]
    assert sorted(dimensions, key=str) == sorted(
        [
            [{"Name": "TableName", "Value": stack.resolve(table.table.table_name)}],
            [{"Name": "TableName", "Value": "orders"}],
        ],
        key=str,
    )
    for alarm in hot.values():
        assert (alarm["Namespace"], alarm["MetricName"]) == (
            "DynamoDBCapacity",
            "KeyRangeThrottleEvents",
        )
        assert (alarm["Period"], alarm["Statistic"]) == (period, "Sum")
        assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (ticks, ticks)
        assert alarm["TreatMissingData"] == "notBreaching"
        assert "THROTTLED_KEYS" in alarm["AlarmDescription"]
        assert alarm["AlarmActions"] == alarm_actions_of(stack, scaler)


@pytest.mark.parametrize(
    ("alarm_id", "metric", "tick"),
    [
        ("BadTargetsAlarm", "BadTargets", 2),
        ("BadTargetsAlarm", "BadTargets", 5),
        ("RefusedTagsAlarm", "RefusedTags", 2),
        ("RefusedTagsAlarm", "RefusedTags", 5),
        ("IgnoredTagsAlarm", "IgnoredTags", 2),
        ("IgnoredTagsAlarm", "IgnoredTags", 5),
        ("MetricsStalledAlarm", "MetricsStalled", 2),
        ("MetricsStalledAlarm", "MetricsStalled", 5),
        ("TargetNotOwnedAlarm", "TargetsNotOwned", 1),
    ],
)
def test_per_table_failures_alarm_on_their_first_tick(
    stack: cdk.Stack, alarm_id: str, metric: str, tick: int
) -> None:
    scaler = ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[feed(stack)],
        tick=cdk.Duration.minutes(tick),
        own_target=alarm_id.startswith("Target"),
    )
    alarm = _per_table_alarm(Template.from_stack(stack), alarm_id)
    # any table counting one in any tick-long period: the tick's metric, the worst table's
    assert (alarm["EvaluationPeriods"], alarm["Threshold"]) == (1, 1)
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["TreatMissingData"] == "notBreaching"  # sent only while it happens
    assert_worst_table(alarm, metric, tick * 60, stack.resolve(scaler.state_store.table_name))
    assert alarm["AlarmActions"] == alarm_actions_of(stack, scaler)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"throttled_for": cdk.Duration.days(2)},
            "throttled_for: alarm SustainedThrottling would watch 2880 periods of 1 minute "
            "(2 days); CloudWatch watches at most 1 day at that period: give a shorter one",
        ),
        (
            {"pinned_at_max_for": cdk.Duration.days(2)},
            "pinned_at_max_for: alarm PinnedAtMax would watch 1440 periods of 2 minutes "
            "(2 days); CloudWatch watches at most 1 day at that period: give a shorter one",
        ),
        (  # a day in whole 7-minute ticks is a day and 2 minutes
            {"hot_key_for": cdk.Duration.days(1), "tick": cdk.Duration.minutes(7)},
            "hot_key_for: alarm HotKey would watch 206 periods of 7 minutes (1 day 2 "
            "minutes); CloudWatch watches at most 1 day at that period: give a shorter one",
        ),
        (  # from an hour's period on, a week
            {"pinned_at_max_for": cdk.Duration.days(8), "tick": cdk.Duration.minutes(60)},
            "pinned_at_max_for: alarm PinnedAtMax would watch 192 periods of 1 hour (8 days); "
            "CloudWatch watches at most 7 days at that period: give a shorter one",
        ),
    ],
)
def test_an_alarm_window_cloudwatch_refuses_is_refused_naming_its_prop(
    kwargs: dict[str, Any], message: str
) -> None:
    stack = cdk.Stack(cdk.App(), "Test")
    with pytest.raises(CapacityConfigError) as refused:
        ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)], **kwargs)
    assert str(refused.value) == f"ThrottleAwareScaler Test/Scaler: {message}"


def test_alarm_options_periods_replace_a_window_cloudwatch_would_refuse(stack: cdk.Stack) -> None:
    # GIVEN a throttled_for too long for its alarm, but the alarm's own periods set shorter
    ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[feed(stack)],
        throttled_for=cdk.Duration.days(2),
        alarm_options={"SustainedThrottling": AlarmOptions(evaluation_periods=30)},
    )
    # THEN the scaler is made, each throttling alarm watching the periods it was given
    alarms = Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm")
    throttled = [a["Properties"] for k, a in alarms.items() if k.startswith("ScalerThrottled")]
    assert len(throttled) == 4  # read and write, of the table and its GSI
    assert {(a["EvaluationPeriods"], a["DatapointsToAlarm"]) for a in throttled} == {(30, 30)}


def test_alarm_windows_between_two_periods_are_rounded_up_to_whole_periods(
    stack: cdk.Stack,
) -> None:
    # GIVEN 5 minutes at max at the default tick of 2 minutes, and 90 seconds of throttling
    ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[feed(stack)],
        pinned_at_max_for=cdk.Duration.minutes(5),
        throttled_for=cdk.Duration.seconds(90),
    )
    template = Template.from_stack(stack)
    pinned = _per_table_alarm(template, "PinnedAtMaxAlarm")
    # THEN the pinned alarm watches 3 ticks (6 minutes), never less than asked for
    assert pinned["EvaluationPeriods"] == 3
    assert pinned["AlarmDescription"].startswith(
        "A managed table has sat at its max for 5 minutes. Look first:"
    )
    # AND each throttling alarm 2 periods of a minute, every one throttled
    alarms = template.find_resources("AWS::CloudWatch::Alarm")
    throttled = [a["Properties"] for k, a in alarms.items() if k.startswith("ScalerThrottled")]
    assert {(a["EvaluationPeriods"], a["DatapointsToAlarm"]) for a in throttled} == {(2, 2)}


@pytest.mark.parametrize("tick", [1, 10])
def test_a_dropped_tick_alarms_on_five_minutes_of_its_queue_whatever_the_tick(
    stack: cdk.Stack, tick: int
) -> None:
    scaler = ThrottleAwareScaler(
        stack, "Scaler", tables=[feed(stack)], tick=cdk.Duration.minutes(tick), sharded=True
    )
    alarm = _per_table_alarm(Template.from_stack(stack), "DeadLettersAlarm")
    # THEN one message seen on a sharded scaler's dead-letter queue in 5 minutes alarms
    assert scaler.dead_letter_queue is not None
    queue = stack.resolve(scaler.dead_letter_queue.queue_name)
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": queue}]
    assert (alarm["Period"], alarm["EvaluationPeriods"], alarm["Threshold"]) == (300, 1, 1)


def test_a_week_of_hourly_ticks_and_the_default_hot_key_window_at_a_long_tick_are_taken() -> None:
    stack = cdk.Stack(cdk.App(), "Test")
    ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[feed(stack)],
        tick=cdk.Duration.minutes(60),
        pinned_at_max_for=cdk.Duration.days(7),
    )
    hot_key = _per_table_alarm(Template.from_stack(stack), "HotKey")
    assert hot_key["EvaluationPeriods"] == 1  # the default: one tick, where 10 minutes is less
    pinned = _per_table_alarm(Template.from_stack(stack), "PinnedAtMaxAlarm")
    assert pinned["EvaluationPeriods"] == 168


def test_a_given_topic_is_used(stack: cdk.Stack) -> None:
    topic = sns.Topic(stack, "Ops", enforce_ssl=True)
    ThrottleAwareScaler(stack, "Scaler", tag_key="k", topic=topic)
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::SNS::Topic", 1)
    template.resource_count_is("AWS::KMS::Key", 0)


def test_explicit_tables_share_one_statement_of_the_policy(stack: cdk.Stack) -> None:
    """The managed policy holds 6,144 characters at most: a table adds its ARN to the one
    statement, not a statement of its own (docs: at about a dozen tables the deploy failed)."""
    first = feed(stack)
    second = ProvisionedTable(
        stack,
        "Second",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=5, max_capacity=50),
        write=Capacity(min_capacity=5, max_capacity=50),
    )
    ThrottleAwareScaler(stack, "Scaler", tables=[first, second])
    by_sid = statements(Template.from_stack(stack))
    assert not any(sid.startswith("ManageTable") and sid != "ManageTables" for sid in by_sid)
    assert by_sid["ManageTables"]["Resource"] == [
        stack.resolve(first.table.table_arn),
        stack.resolve(second.table.table_arn),
    ]


def test_a_table_opts_in_from_its_own_side(stack: cdk.Stack) -> None:
    table = feed(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tag_key="k")
    table.enable_throttle_aware_scaling(scaler)
    template = Template.from_stack(stack)
    assert statements(template)["ManageTables"]["Resource"] == stack.resolve(table.table.table_arn)
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Environment": {"Variables": {"SCALER_TABLES": stack.resolve(table.table.table_name)}}},
    )


def test_dry_run_and_tick(stack: cdk.Stack) -> None:
    ThrottleAwareScaler(stack, "Scaler", tag_key="k", dry_run=True, tick=cdk.Duration.minutes(5))
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Environment": {
                "Variables": {
                    "SCALER_DRY_RUN": "true",
                    "SCALER_TICK_MINUTES": "5",
                    "SCALER_SCALE_DOWN_TICKS": "1",
                }
            }
        },
    )
    template.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(5 minutes)"})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"tick": cdk.Duration.seconds(90)},
            "tick must be whole minutes from 1 to 60; got 1 minute 30 seconds",
        ),
        ({"tick": cdk.Duration.hours(2)}, "tick must be whole minutes from 1 to 60; got 2 hours"),
        (
            {"tick": cdk.Duration.seconds(30)},
            "tick must be whole minutes from 1 to 60; got 30 seconds",
        ),
        (
            {"tick": cdk.Duration.seconds(0)},
            "tick must be whole minutes from 1 to 60; got 0 seconds",
        ),
        (
            {"hot_key_for": cdk.Duration.seconds(30)},
            "hot_key_for must be a Duration from one tick (2 minutes) to 1 day; got 30 seconds",
        ),
        ({"tag_key": ""}, "tag_key must be a tag key of 1 to 128 characters; got ''"),
        *(
            (
                {"tag_key": "team", "tag_value": bad},
                f"tag_value must be a tag value, a string of 0 to 256 characters; got {shown}",
            )
            for bad, shown in (
                (1, "1"),
                (None, "None"),
                ("x" * 257, f"'{'x' * 199}... (259 characters)"),
            )
        ),
        (
            {"tables": ["orders"]},
            "tables must be ProvisionedTable or aws_dynamodb.ITable; got 'orders'",
        ),
        *(
            (
                {"updating_for_ticks": bad},
                "updating_for_ticks must be a whole number of ticks from 1 to 720 (a day at "
                f"a tick of 2 minutes); got {bad!r}",
            )
            for bad in (0, 721, 2.5, True, "5")
        ),
        (
            {"hot_key_for": cdk.Duration.minutes(1)},
            "hot_key_for must be a Duration from one tick (2 minutes) to 1 day; got 1 minute",
        ),
        (
            {"hot_key_for": cdk.Duration.days(2)},
            "hot_key_for must be a Duration from one tick (2 minutes) to 1 day; got 2 days",
        ),
        (
            {"hot_key_for": 10},
            "hot_key_for: got 10 (int); expected a Duration, a multiple of 1 second "
            "(aws_cdk.Duration.minutes(5), say)",
        ),
    ],
)
def test_bad_props(stack: cdk.Stack, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(CapacityConfigError) as caught:
        ThrottleAwareScaler(stack, "Scaler", **kwargs)
    assert str(caught.value) == f"ThrottleAwareScaler Test/Scaler: {message}"


# ------------------------------------------------------------------ checked at synth


def test_a_scaler_with_nothing_to_manage_is_refused(stack: cdk.Stack) -> None:
    scaler = ThrottleAwareScaler(stack, "Scaler")
    assert scaler.node.validate() == [
        "ThrottleAwareScaler Test/Scaler: nothing to manage: pass tables=[...], call "
        "add_table(...) or enable_throttle_aware_scaling(...), or set tag_key for tag discovery"
    ]


def test_a_table_is_managed_once_and_by_one_scaler(stack: cdk.Stack) -> None:
    # GIVEN a table under a scaler
    table = feed(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[table])
    # THEN managing it again, either way, is refused by name (its alarms would be made twice)
    again: list[Callable[[], None]] = [
        lambda: table.enable_throttle_aware_scaling(scaler),
        lambda: scaler.add_table(table),
    ]
    for manage in again:
        with pytest.raises(CapacityConfigError) as caught:
            manage()
        assert str(caught.value) == (
            "ThrottleAwareScaler Test/Scaler: manages Feed already (tables=[...], add_table "
            "or enable_throttle_aware_scaling, one of them once)"
        )
    # and so is the same table imported under its name
    named = dynamodb.Table.from_table_name(stack, "Named", "orders")
    scaler.add_table(named)
    with pytest.raises(CapacityConfigError, match="manages Again already"):
        scaler.add_table(dynamodb.Table.from_table_name(stack, "Again", "orders"))
    # and a table made here under a name, imported again under it
    made = dynamodb.Table(stack, "Carts", partition_key=PK, table_name="carts")
    scaler.add_table(made)
    with pytest.raises(CapacityConfigError, match="manages Imported already"):
        scaler.add_table(dynamodb.Table.from_table_name(stack, "Imported", "carts"))
    # AND a second scaler of the app on the same table fails synthesis, told once, naming both
    other = ThrottleAwareScaler(
        stack, "Other", tables=[table, dynamodb.Table.from_table_name(stack, "Elsewhere", "other")]
    )
    assert scaler.node.validate() == [
        "ThrottleAwareScaler Test/Scaler: manages Feed, which ThrottleAwareScaler "
        "Test/Other manages too; a table has one scaler (each would take the other's raised "
        "minimum for the configured one): manage it from one"
    ]
    assert other.node.validate() == []


def test_scalers_of_other_stacks_may_import_tables_of_one_name() -> None:
    # two Regions' tables of one name are two tables: not compared across stacks
    app = cdk.App()
    for region in ("eu-west-1", "us-east-1"):
        here = cdk.Stack(app, region, env=cdk.Environment(account="111111111111", region=region))
        ThrottleAwareScaler(
            here, "Scaler", tables=[dynamodb.Table.from_table_name(here, "T", "orders")]
        )
    assert [m for s in app.node.find_all() for m in s.node.validate()] == []


def test_tables_of_one_path_in_two_stacks_get_alarms_of_their_own() -> None:
    # GIVEN two stacks of one environment, each with a table at the path "Feed", and a
    # scaler in the first managing both
    app = cdk.App()
    env = cdk.Environment(account="111111111111", region="us-east-1")
    first, second = (cdk.Stack(app, name, env=env) for name in ("StackA", "StackB"))
    tables = [
        dynamodb.Table(s, "Feed", partition_key=PK, billing_mode=dynamodb.BillingMode.PROVISIONED)
        for s in (first, second)
    ]
    # WHEN it is built (this crashed: two alarms of one id)
    scaler = ThrottleAwareScaler(first, "Scaler", tables=tables)
    # THEN each table has its throttle and hot-key alarms, the first under the ids it
    # always had, the second's with its stack's path in front
    ids = {c.node.id for c in scaler.node.find_all() if c.node.id.startswith("HotKey")}
    assert ids == {"HotKeyFeed", "HotKeyStackB-Feed"}
    throttles = sorted(c.node.id for c in scaler.node.find_all() if c.node.id[:9] == "Throttled")
    assert throttles == [
        "ThrottledFeed-read",
        "ThrottledFeed-write",
        "ThrottledStackB-Feed-read",
        "ThrottledStackB-Feed-write",
    ]
    Template.from_stack(first)  # and it synthesizes


def test_a_tables_alarm_ids_do_not_depend_on_the_other_tables_managed() -> None:
    # GIVEN tables at the path "T" in two stacks, and a scaler in a third
    def alarm_ids(both: bool) -> set[str]:
        app = cdk.App()
        a, b, home = (cdk.Stack(app, name) for name in ("SA", "SB", "Home"))
        mode = dynamodb.BillingMode.PROVISIONED
        tables = [dynamodb.Table(s, "T", partition_key=PK, billing_mode=mode) for s in (a, b)]
        # WHEN it manages both, or SB's alone
        scaler = ThrottleAwareScaler(home, "Scaler", tables=tables if both else tables[1:])
        return {c.node.id for c in scaler.node.find_all() if "SB" in c.node.id}

    # THEN SB's table has the same alarm ids either way (its stack's path in front: not the
    # scaler's stack), so removing the other table replaces none of its alarms
    alone = alarm_ids(both=False)
    assert alone == alarm_ids(both=True)
    assert alone == {"HotKeySB-T", "ThrottledSB-T-read", "ThrottledSB-T-write"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"orders": {"mn": 5}},
            "table orders: override: unknown key 'mn'; allowed: min, max, target, read, write",
        ),
        (
            {"orders": {"write": {"maximum": 5}}},
            "table orders: override write: unknown key(s) maximum; allowed: min, max, target",
        ),
        (
            {"orders": {"target": 95}},
            "table orders read: override target must be a percentage from 20 to 90; got 95",
        ),
        (
            {"orders": {"min": 900, "max": 100}},
            "table orders read: min (900) must not be above max (100)",
        ),
    ],
)
def test_bad_overrides_are_refused_as_the_lambda_would(
    stack: cdk.Stack, overrides: dict[str, Any], message: str
) -> None:
    orders = dynamodb.Table.from_table_name(stack, "Orders", "orders")
    with pytest.raises(CapacityConfigError) as caught:
        ThrottleAwareScaler(stack, "Scaler", tables=[orders], overrides=overrides)
    assert str(caught.value) == f"ThrottleAwareScaler Test/Scaler: {message}"


def test_overrides_for_a_table_the_scaler_does_not_manage_are_refused(stack: cdk.Stack) -> None:
    orders = dynamodb.Table.from_table_name(stack, "Orders", "orders")
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[orders], overrides={"ordrs": {"max": 5}})
    assert scaler.node.validate() == [
        "ThrottleAwareScaler Test/Scaler: overrides name table 'ordrs', which the scaler does "
        "not manage; add the table, or set tag_key if it is found by tag"
    ]
    # with tag discovery, the table may be found by tag
    tagged = ThrottleAwareScaler(stack, "Tagged", tag_key="team", overrides={"ordrs": {"max": 5}})
    assert tagged.node.validate() == []


def test_a_gsi_added_after_enrolment_gets_its_alarms(stack: cdk.Stack) -> None:
    table = feed(stack)
    ThrottleAwareScaler(stack, "Scaler", tables=[table])
    table.add_global_secondary_index(
        index_name="late",
        partition_key=dynamodb.Attribute(name="late", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=5, max_capacity=50),
        write=Capacity(min_capacity=5, max_capacity=50),
    )
    alarms = Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm")
    late = [
        a
        for a in alarms.values()
        if {"Name": "GlobalSecondaryIndexName", "Value": "late"}
        in a["Properties"].get("Dimensions", [])
    ]
    assert len(late) == 2  # read and write


def test_alarm_ids_follow_table_names_not_list_positions() -> None:
    def alarm_ids(names: list[str]) -> set[str]:
        stack = cdk.Stack(cdk.App(), "S")
        tables = [dynamodb.Table.from_table_name(stack, n, n.lower()) for n in names]
        ThrottleAwareScaler(stack, "Scaler", tables=tables)
        template = Template.from_stack(stack)
        return {
            k
            for k, v in template.find_resources("AWS::CloudWatch::Alarm").items()
            if "Throttled" in k
        }

    both, second_only = alarm_ids(["Orders", "Users"]), alarm_ids(["Users"])
    # removing the first table leaves the second one's alarms as they were
    assert second_only and second_only < both


def test_the_autopilot_mode_reaches_the_lambda_with_its_own_scale_down(stack: cdk.Stack) -> None:
    from ddb_capacity_runtime.core.settings import ScalerConfig

    ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)])  # the default mode
    (function,) = Template.from_stack(stack).find_resources("AWS::Lambda::Function").values()
    env = function["Properties"]["Environment"]["Variables"]
    assert env["SCALER_MODE"] == "autopilot" and env["SCALER_SCALE_DOWN_TICKS"] == "2"
    # the Lambda reads them back as the autopilot's policy
    config = ScalerConfig.from_env(
        {**{k: v for k, v in env.items() if isinstance(v, str)}, "SCALER_TABLES": "feed"}
    )
    assert config.policy.autopilot and config.policy.scale_down_minutes == 4
    assert config.policy.hysteresis.total_seconds() == 300
    with pytest.raises(CapacityConfigError, match="mode must be one of reactive, autopilot"):
        ThrottleAwareScaler(stack, "Other", tables=[], mode="eager")


def test_a_bad_mode_in_the_environment_is_named() -> None:
    from ddb_capacity_runtime.core.settings import ConfigError, ScalerConfig

    with pytest.raises(ConfigError, match="SCALER_MODE: got 'eager'; expected one of"):
        ScalerConfig.from_env({"SCALER_MODE": "eager", "SCALER_TABLES": "feed"})
    # the default mode is the autopilot; the reactive mode is there when asked for
    assert ScalerConfig.from_env({"SCALER_TABLES": "feed"}).policy.autopilot
    reactive = {"SCALER_TABLES": "feed", "SCALER_MODE": "reactive"}
    assert not ScalerConfig.from_env(reactive).policy.autopilot


# ------------------------------------------------------------------ the constructs' own tags


def _library_tags(template: Template) -> dict[str, set[str]]:
    """Every ``ddb-capacity:`` tag key the template sets, with the values it gives it."""
    from ddb_capacity_runtime.core.names import TAG_PREFIX

    found: dict[str, set[str]] = {}
    for resource in template.to_json()["Resources"].values():
        tags = resource.get("Properties", {}).get("Tags", [])
        pairs = tags.items() if isinstance(tags, dict) else ((t["Key"], t["Value"]) for t in tags)
        for key, value in pairs:
            if key.startswith(TAG_PREFIX):
                found.setdefault(key, set()).add(json.dumps(value))
    return found


@pytest.mark.parametrize("prewarm", list(PrewarmMethod))
def test_the_scaler_knows_every_tag_the_constructs_write(
    stack: cdk.Stack, prewarm: PrewarmMethod
) -> None:
    from ddb_capacity_runtime.core.tags import CONSTRUCT_TAGS, parse_tags

    # GIVEN a pre-warmed table with a GSI under a scaler
    table = ProvisionedTable(
        stack,
        "Warm",
        partition_key=PK,
        read=Capacity(min_capacity=10, max_capacity=900, high_water_mark=4000),
        write=Capacity(min_capacity=10, max_capacity=900),
        prewarm=prewarm,
    )
    table.add_global_secondary_index(
        index_name="byTopic",
        partition_key=PK,
        read=Capacity(min_capacity=5, max_capacity=100, high_water_mark=400),
        write=Capacity(min_capacity=5, max_capacity=100),
    )
    ThrottleAwareScaler(stack, "Scaler", tables=[table])
    # WHEN the template's library tags are read as the tick reads a table's tags
    written = _library_tags(Template.from_stack(stack))
    # THEN each is one the library knows: none would be counted as ignored
    assert {"ddb-capacity:prewarm", "ddb-capacity:table"} <= written.keys()
    assert written.keys() <= CONSTRUCT_TAGS
    for key, values in written.items():
        for value in values:
            assert parse_tags({key: json.loads(value)}).ignored == [], (key, value)


# ------------------------------------------------------------------ owned target values


def _owned_env(stack: cdk.Stack) -> str | None:
    (function,) = Template.from_stack(stack).find_resources("AWS::Lambda::Function").values()
    owned = function["Properties"]["Environment"]["Variables"].get("SCALER_OWNED_TARGETS")
    if owned is None:
        return None
    return "".join(p if isinstance(p, str) else "<feed>" for p in owned["Fn::Join"][1])


def test_own_target_writes_each_dimensions_target_and_the_right_to_set_it(
    stack: cdk.Stack,
) -> None:
    table = feed(stack)
    table2 = ProvisionedTable(
        stack,
        "Other",
        partition_key=PK,
        read=Capacity(min_capacity=1, max_capacity=10, target_utilization_percent=50),
        write=Capacity(min_capacity=1, max_capacity=10),
    )
    legacy = dynamodb.Table.from_table_name(stack, "Legacy", "legacy-table")
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[table, legacy], own_target=True)
    scaler.add_table(table2)
    table.add_global_secondary_index(
        index_name="late",
        partition_key=dynamodb.Attribute(name="late", type=dynamodb.AttributeType.STRING),
        read=Capacity(min_capacity=5, max_capacity=50, target_utilization_percent=60),
        write=Capacity(min_capacity=5, max_capacity=50),
    )
    owned = _owned_env(stack)
    assert owned is not None
    # the ProvisionedTables' targets, GSIs included (one added after enrolment too);
    # the plain table's policies are not the scaler's
    assert owned == (
        '{"<feed>":{"read":70,"write":70,"indexes":{"byTopic":{"read":70,"write":70},'
        '"late":{"read":60,"write":70}}},"<feed>":{"read":50,"write":70,"indexes":{}}}'
    )
    statement = statements(Template.from_stack(stack))["SetOwnedTargetValues"]
    assert statement["Action"] == "application-autoscaling:PutScalingPolicy"
    assert statement["Condition"]["StringEquals"]["application-autoscaling:service-namespace"] == (
        "dynamodb"
    )
    tagged = statement["Condition"]["StringEquals"]["aws:ResourceTag/ddb-capacity:table"]
    assert len(tagged) == 2 and "legacy-table" not in json.dumps(tagged)
    assert statement["Condition"]["Null"] == {"aws:TagKeys": "true"}


def test_without_own_target_nothing_is_owned_and_no_policy_may_be_written(
    stack: cdk.Stack,
) -> None:
    ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)])
    assert _owned_env(stack) is None
    assert "SetOwnedTargetValues" not in statements(Template.from_stack(stack))
    assert "PutScalingPolicy" not in json.dumps(Template.from_stack(stack).to_json())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"own_target": True, "mode": "reactive"},
            "own_target needs mode='autopilot' (its plans set the target value); "
            "got mode='reactive'",
        ),
        ({"own_target": "yes"}, "own_target: got 'yes'; expected True or False"),
    ],
)
def test_bad_own_target_is_refused(stack: cdk.Stack, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(CapacityConfigError, match=re.escape(message)):
        ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)], **kwargs)


@pytest.mark.parametrize("dry_run", ["false", "yes", 0, None])
def test_a_dry_run_that_is_not_a_bool_is_refused(stack: cdk.Stack, dry_run: object) -> None:
    # "false" is true to Python: taken, it would leave the scaler deciding and never acting
    with pytest.raises(CapacityConfigError) as raised:
        ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)], dry_run=dry_run)  # type: ignore[arg-type]
    assert str(raised.value) == (
        f"ThrottleAwareScaler Test/Scaler: dry_run: got {dry_run!r}; expected True or False"
    )


@pytest.mark.parametrize("dry_run", [True, False])
def test_dry_run_reaches_the_function(stack: cdk.Stack, dry_run: bool) -> None:
    ThrottleAwareScaler(stack, "Scaler", tables=[feed(stack)], dry_run=dry_run)
    assert [v["SCALER_DRY_RUN"] for v in scaler_variables(stack)] == [str(dry_run).lower()]


def scaler_variables(stack: cdk.Stack) -> list[dict[str, Any]]:
    """The environment of each function of the stack that reads the scaler's settings."""
    functions = Template.from_stack(stack).find_resources("AWS::Lambda::Function").values()
    return [
        f["Properties"]["Environment"]["Variables"]
        for f in functions
        if "SCALER_MODE" in f["Properties"].get("Environment", {}).get("Variables", {})
    ]


def test_0_4_state_tags_are_read_only_in_the_window_the_app_opens(stack: cdk.Stack) -> None:
    from ddb_capacity_runtime.core.settings import ScalerConfig

    # GIVEN a scaler without the option, and a sharded one opening a week's window
    ThrottleAwareScaler(stack, "Closed", tables=[feed(stack)])
    until = datetime.now(UTC).date() + timedelta(days=7)
    ThrottleAwareScaler(
        stack, "Open", tables=[], tag_key="managed", sharded=True, read_legacy_state_until=until
    )
    closed, *opened = scaler_variables(stack)
    # THEN the first writes nothing (never read); both functions of the other read the date
    assert "SCALER_READ_LEGACY_STATE_UNTIL" not in closed
    assert len(opened) == 2
    for env in opened:
        assert env["SCALER_READ_LEGACY_STATE_UNTIL"] == until.isoformat()
        config = ScalerConfig.from_env({k: v for k, v in env.items() if isinstance(v, str)})
        assert config.read_legacy_state_until == until


@pytest.mark.parametrize(
    ("days", "value"),
    [(-1, None), (31, None), (None, "2026-12-01"), (None, datetime(2026, 12, 1, tzinfo=UTC))],
)
def test_a_window_in_the_past_too_far_ahead_or_not_a_date_is_refused(
    stack: cdk.Stack, days: int | None, value: object
) -> None:
    today = datetime.now(UTC).date()
    until = value if days is None else today + timedelta(days=days)
    last = today + timedelta(days=30)
    refused = None
    try:
        ThrottleAwareScaler(
            stack,
            "Scaler",
            tables=[feed(stack)],
            read_legacy_state_until=until,  # type: ignore[arg-type]
        )
    except CapacityConfigError as error:
        refused = str(error)
    if datetime.now(UTC).date() != today:  # the library read another day's date
        pytest.skip("UTC midnight passed while the scaler was built")
    assert refused is not None
    assert refused.startswith(
        f"ThrottleAwareScaler Test/Scaler: read_legacy_state_until must be a datetime.date "
        f"from today ({today}) to 30 days ahead ({last}): 0.4's state tags are read during "
        f"an upgrade only; got "
    )


def test_the_tag_key_and_the_legacy_window_are_taken_at_their_edges() -> None:
    from constructs_pkg.scaler._scaler_props import checked_legacy_until, checked_tag_key
    from ddb_capacity_runtime.core.settings import MAX_LEGACY_STATE_DAYS

    assert checked_tag_key("Scaler", "k" * 128) == "k" * 128
    with pytest.raises(CapacityConfigError, match="tag_key must be a tag key of 1 to 128"):
        checked_tag_key("Scaler", "k" * 129)
    today = datetime.now(UTC).date()
    last = today + timedelta(days=MAX_LEGACY_STATE_DAYS)
    assert checked_legacy_until("Scaler", today) == today
    assert checked_legacy_until("Scaler", last) == last
    for outside in (today - timedelta(days=1), last + timedelta(days=1)):
        with pytest.raises(CapacityConfigError, match="read_legacy_state_until must be"):
            checked_legacy_until("Scaler", outside)


def test_options_for_an_alarm_the_scaler_never_makes_fail_synthesis(stack: cdk.Stack) -> None:
    # GIVEN a scaler, not sharded, not owning targets, given options for those alarms, and
    # one found by tag given options for the per-table alarms it never makes
    table = feed(stack)
    options = {"BatchErrors": AlarmOptions(threshold=2), "TargetNotOwned": AlarmOptions()}
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[table], alarm_options=options)
    tagged = ThrottleAwareScaler(
        stack, "Tagged", tag_key="k", alarm_options={"HotKey": AlarmOptions(threshold=3)}
    )
    # THEN synthesis names each option and why it does nothing (it was silently ignored)
    never = "configures an alarm this scaler never makes"
    assert scaler.node.validate() == [
        f"ThrottleAwareScaler Test/Scaler: alarm_options['BatchErrors'] {never}: it is not "
        "sharded (sharded=False); remove it",
        f"ThrottleAwareScaler Test/Scaler: alarm_options['TargetNotOwned'] {never}: own_target "
        "is off; remove it",
    ]
    assert tagged.node.validate() == [
        f"ThrottleAwareScaler Test/Tagged: alarm_options['HotKey'] {never}: it manages no table "
        "explicitly (tables found by tag get no per-table alarms); remove it"
    ]
    # AND options for alarms it makes, the per-table ones included, are taken
    made = ThrottleAwareScaler(
        stack,
        "Made",
        tables=[dynamodb.Table.from_table_name(stack, "Other", "other")],
        alarm_options={"HotKey": AlarmOptions(threshold=3), "Updating": AlarmOptions()},
    )
    assert made.node.validate() == []
