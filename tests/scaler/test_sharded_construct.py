"""ThrottleAwareScaler(sharded=True) as a template: the batch queue, the batch function and
its event source, what each role may do, the alarms, and the props' errors. The examples'
app (tests/project/test_examples.py) runs it under cdk-nag, checkov and cfn-lint."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from constructs_pkg import CapacityConfigError, ThrottleAwareScaler

BATCH_HANDLER = "ddb_capacity_runtime.scaler.handler.batch_handler"
TICK_HANDLER = "ddb_capacity_runtime.scaler.handler.lambda_handler"


def functions(template: Template) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each function by its handler: (logical id, properties)."""
    return {
        r["Properties"]["Handler"]: (lid, r["Properties"])
        for lid, r in template.find_resources("AWS::Lambda::Function").items()
    }


def statements(template: Template, role_id: str) -> dict[str, dict[str, Any]]:
    """Every statement of the managed policies attached to the role, by Sid."""
    out = {}
    for policy in template.find_resources("AWS::IAM::ManagedPolicy").values():
        roles = policy["Properties"].get("Roles", [])
        if {"Ref": role_id} in roles:
            for s in policy["Properties"]["PolicyDocument"]["Statement"]:
                out[s.get("Sid", "")] = s
    return out


def role_of(function: dict[str, Any]) -> str:
    return str(function["Role"]["Fn::GetAtt"][0])


@pytest.fixture
def sharded(stack: cdk.Stack) -> Template:
    ThrottleAwareScaler(
        stack,
        "Scaler",
        tag_key="fleet",
        sharded=True,
        shard_above_tables=600,
        tables_per_batch=100,
        batch_concurrency=20,
    )
    return Template.from_stack(stack)


def test_the_batch_function_takes_one_batch_at_a_time_at_most_the_concurrency_asked(
    sharded: Template,
) -> None:
    (queue_id,) = [
        lid
        for lid, q in sharded.find_resources("AWS::SQS::Queue").items()
        if "RedrivePolicy" in q["Properties"]
    ]
    batch_id, batch = functions(sharded)[BATCH_HANDLER]
    (source,) = sharded.find_resources("AWS::Lambda::EventSourceMapping").values()
    props = source["Properties"]
    assert props["FunctionName"] == {"Ref": batch_id}
    assert props["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert props["BatchSize"] == 1
    assert props["ScalingConfig"] == {"MaximumConcurrency": 20}
    # its reserved concurrency is the event source's maximum: never throttled below it, and
    # never more of the account's concurrency
    assert batch["Timeout"] == 180 and batch["ReservedConcurrentExecutions"] == 20


def test_a_failed_batch_is_never_retried_and_lands_in_the_dead_letter_queue(
    sharded: Template,
) -> None:
    (queue,) = [
        q["Properties"]
        for q in sharded.find_resources("AWS::SQS::Queue").values()
        if "RedrivePolicy" in q["Properties"]
    ]
    # the scheduled function's own dead-letter queue (the scaler's DeadLettersAlarm)
    _, tick = functions(sharded)[TICK_HANDLER]
    dlq_arn = tick["DeadLetterConfig"]["TargetArn"]
    assert queue["RedrivePolicy"] == {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1}
    # visible again only after the function's timeout, and gone within the hour
    assert queue["VisibilityTimeout"] == 180 and queue["MessageRetentionPeriod"] == 3600
    assert queue["SqsManagedSseEnabled"] is True


def test_both_functions_read_the_same_settings_and_the_batch_queue_is_named(
    sharded: Template,
) -> None:
    _, tick = functions(sharded)[TICK_HANDLER]
    _, batch = functions(sharded)[BATCH_HANDLER]
    env = dict(tick["Environment"]["Variables"])
    # the same settings; the queue's URL is the scheduled function's alone
    queue_url = env.pop("CAPACITY_BATCH_QUEUE_URL")
    assert list(queue_url) == ["Ref"] and queue_url["Ref"].startswith("ScalerBatchQueue")
    assert batch["Environment"]["Variables"] == env
    assert env["SCALER_SHARD_ABOVE_TABLES"] == "600"
    assert env["SCALER_TABLES_PER_BATCH"] == "100"


def test_each_role_may_do_its_part_of_the_batches_and_both_the_tables_part(
    sharded: Template,
) -> None:
    _, tick = functions(sharded)[TICK_HANDLER]
    _, batch = functions(sharded)[BATCH_HANDLER]
    scheduled, batches = statements(sharded, role_of(tick)), statements(sharded, role_of(batch))
    assert scheduled["SendBatches"]["Action"] == "sqs:SendMessage"
    assert "SendBatches" not in batches
    assert sorted(batches["ReceiveBatches"]["Action"]) == [
        "sqs:ChangeMessageVisibility",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "sqs:ReceiveMessage",
    ]
    assert "ReceiveBatches" not in scheduled
    # the tables' statements are one policy, attached to both roles
    shared = {k for k in scheduled if k not in {"WriteOwnLogs", "DeadLetters", "SendBatches"}}
    assert shared and shared <= set(batches)
    assert all(batches[k] == scheduled[k] for k in shared)
    # AND what is the scheduled function's alone is not the batch function's: its log group
    # and its dead-letter queue (the batch queue's redrive moves a failed batch)
    assert "DeadLetters" in scheduled and "DeadLetters" not in batches
    logs = {r: s["WriteOwnLogs"]["Resource"] for r, s in (("tick", scheduled), ("batch", batches))}
    assert logs["tick"] != logs["batch"]
    assert logs["batch"]["Fn::GetAtt"][0].startswith("ScalerBatchFunctionLogs")


def test_a_failed_or_late_batch_alarms_to_the_scalers_topic(sharded: Template) -> None:
    alarms = sharded.find_resources("AWS::CloudWatch::Alarm")
    by_name = {lid.split("Scaler")[-1].rstrip("0123456789ABCDEF"): a for lid, a in alarms.items()}
    errors, late = (
        by_name["BatchErrorsAlarm"]["Properties"],
        by_name["BatchesLateAlarm"]["Properties"],
    )
    batch_id, _ = functions(sharded)[BATCH_HANDLER]
    assert errors["MetricName"] == "Errors"
    assert errors["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": batch_id}}]
    assert late["MetricName"] == "ApproximateAgeOfOldestMessage"
    # past the tick and the function's timeout (a failed batch stays in flight that long)
    assert late["Threshold"] == 120 + 180 and late["Statistic"] == "Maximum"
    topic = errors["AlarmActions"]
    assert late["AlarmActions"] == topic == by_name["ErrorsAlarm"]["Properties"]["AlarmActions"]


def test_without_sharded_nothing_of_it_is_deployed(stack: cdk.Stack) -> None:
    ThrottleAwareScaler(stack, "Scaler", tag_key="fleet")
    template = Template.from_stack(stack)
    assert list(functions(template)) == [TICK_HANDLER]
    assert template.find_resources("AWS::Lambda::EventSourceMapping") == {}
    env = functions(template)[TICK_HANDLER][1]["Environment"]["Variables"]
    assert not {"SCALER_SHARD_ABOVE_TABLES", "CAPACITY_BATCH_QUEUE_URL"} & set(env)


@pytest.mark.parametrize(
    ("props", "says"),
    [
        ({"shard_above_tables": 500}, "shard_above_tables applies to a sharded tick only; got 500"),
        ({"batch_concurrency": 5}, "batch_concurrency applies to a sharded tick only"),
        ({"sharded": "yes"}, "sharded: got 'yes'; expected True or False"),
        (
            {"sharded": True, "shard_above_tables": 0},
            "shard_above_tables must be a whole number from 1 to 1,000,000; got 0",
        ),
        (
            {"sharded": True, "tables_per_batch": 501},
            "tables_per_batch must be a whole number from 1 to 500; got 501",
        ),
        (
            {"sharded": True, "batch_concurrency": 1},
            "batch_concurrency must be a whole number from 2 to 1,000; got 1",
        ),
        ({"sharded": True, "tables_per_batch": 2.5}, "tables_per_batch must be a whole number"),
    ],
)
def test_bad_sharding_props_are_refused_naming_the_prop(
    stack: cdk.Stack, props: dict[str, Any], says: str
) -> None:
    with pytest.raises(CapacityConfigError, match=says):
        ThrottleAwareScaler(stack, "Scaler", tag_key="fleet", **props)
