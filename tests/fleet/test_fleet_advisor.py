"""FleetAdvisor as a template: the bucket, the queues, its one function on the advisor
asset, the schedules of its steps, the event source, least-privilege IAM statement by statement, the
alarms; synthesized under the five cdk-nag packs (an unacknowledged finding fails synth),
cfn-lint clean; bad props refused with the prop, the value and what is allowed."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Aws, Duration, Token
from aws_cdk import aws_events as events
from aws_cdk.assertions import Match, Template

from constructs_pkg import apply_nag_packs
from constructs_pkg.common._runtime import staged_advisor
from constructs_pkg.fleet._advisor import FleetAdvisor
from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_tools.fleet_settings import AdvisorSettings
from tests.support.fleet_advisor import statements_of

HANDLER = "ddb_capacity_tools.fleet_lambda.advisor_handler"


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Template, Path]:
    """A stack with a FleetAdvisor (the 05:30 UTC lister, a 2-hour delay), synthesized
    under the five packs: synth raises on any unacknowledged finding."""
    outdir = tmp_path_factory.mktemp("fleet")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Fleet")
    FleetAdvisor(
        stack,
        "Advisor",
        schedule=events.CronOptions(minute="30", hour="23"),
        report_delay=Duration.hours(2),
        max_concurrency=25,
        candidates=["on-demand", "autopilot:70"],
    )
    apply_nag_packs(app)
    app.synth()
    return Template.from_stack(stack), outdir


def function(template: Template) -> tuple[str, Mapping[str, Any]]:
    """The advisor's one function: its logical id and resource."""
    [(logical_id, found)] = template.find_resources("AWS::Lambda::Function").items()
    assert found["Properties"]["Handler"] == HANDLER
    return logical_id, found


def test_one_function_on_the_advisor_asset_with_one_settings_contract(
    synthesized: tuple[Template, Path],
) -> None:
    template, outdir = synthesized
    _, found = function(template)
    props = found["Properties"]
    assert props["Architectures"] == ["arm64"]
    env = props["Environment"]["Variables"]
    assert set(env) == set(AdvisorSettings("b").to_env())
    assert env["FLEET_ADVISOR_CANDIDATES"] == "on-demand,autopilot:70"
    assert env["FLEET_ADVISOR_REPORT_DELAY_MINUTES"] == "120"
    assert props["Timeout"] == 900
    assert props["MemorySize"] == 1769
    # its scheduled runs only: a failed one goes to the dead-letter queue, never retried
    assert "ReservedConcurrentExecutions" not in props  # the event source bounds it
    assert "DeadLetterConfig" in props
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 3600},
    )
    # the asset holds the two packages and the tools' pure-Python dependencies, no more
    staged = sorted(p.name for p in staged_advisor().iterdir())
    assert staged == ["cronsim", "ddb_capacity_runtime", "ddb_capacity_tools", "tzdata"]
    assert not list(staged_advisor().rglob("__pycache__"))


def test_the_advisor_asset_imports_nothing_outside_it_but_lambdas_own(tmp_path: Path) -> None:
    """The handlers import, from a fresh interpreter, only the asset's packages, the
    standard library, and boto3 with its dependencies (which Lambda's runtime has)."""
    script = (
        "import sys, json\n"
        "import ddb_capacity_tools.fleet_lambda\n"
        "top = {m.split('.')[0] for m in sys.modules if not m.startswith('_')}\n"
        "print(json.dumps(sorted(top - set(sys.stdlib_module_names))))\n"
    )
    import boto3

    boto_site = str(Path(boto3.__file__).resolve().parents[1])
    out = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            f"import sys; sys.path[:0] = [{str(staged_advisor())!r}, {boto_site!r}]\n" + script,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    imported = set(json.loads(out))
    lambdas_own = {"boto3", "botocore", "jmespath", "dateutil", "urllib3", "s3transfer", "six"}
    assert imported - lambdas_own <= {"ddb_capacity_runtime", "ddb_capacity_tools", "cronsim"}


def test_schedules_queue_and_event_source(synthesized: tuple[Template, Path]) -> None:
    template, _ = synthesized
    logical_id, _ = function(template)
    rules = template.find_resources("AWS::Events::Rule")
    steps = {}
    for rule in rules.values():
        [target] = rule["Properties"]["Targets"]
        assert target["Arn"] == {"Fn::GetAtt": [logical_id, "Arn"]}
        transformer = target["InputTransformer"]
        assert transformer["InputPathsMap"] == {"time": "$.time"}
        step = json.loads(transformer["InputTemplate"].replace("<time>", '"t"'))["step"]
        steps[step] = rule["Properties"]["ScheduleExpression"]
    # the list step at 23:30 UTC, the report 2 hours later: 01:30 the next day
    assert steps == {"list": "cron(30 23 * * ? *)", "report": "cron(30 1 * * ? *)"}
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "BatchSize": 1,
            "ScalingConfig": {"MaximumConcurrency": 25},
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
        },
    )
    template.has_resource_properties(
        "AWS::SQS::Queue",
        {
            "VisibilityTimeout": 5400,  # 6 x the worker's timeout
            "RedrivePolicy": {"maxReceiveCount": 3, "deadLetterTargetArn": Match.any_value()},
            "SqsManagedSseEnabled": True,
        },
    )
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "BucketEncryption": Match.object_like({}),
            "LifecycleConfiguration": {
                "Rules": [Match.object_like({"ExpirationInDays": 90, "Status": "Enabled"})]
            },
        },
    )
    policy = next(iter(template.find_resources("AWS::S3::BucketPolicy").values()))
    [deny] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {
        "Bool": {"aws:SecureTransport": "false"}
    }


def test_the_function_may_do_its_parts_only(synthesized: tuple[Template, Path]) -> None:
    template, _ = synthesized
    role = function(template)[1]["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = statements_of(template, role)
    actions = {
        sid: sorted(s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        for sid, s in statements.items()
    }
    assert actions == {
        "WriteOwnLogs": ["logs:CreateLogStream", "logs:PutLogEvents"],
        "DeadLetters": ["sqs:SendMessage"],
        "ListTables": ["dynamodb:ListTables"],
        "SendTables": ["sqs:SendMessage"],
        "ReceiveTables": [
            "sqs:ChangeMessageVisibility",
            "sqs:DeleteMessage",
            "sqs:GetQueueAttributes",
            "sqs:ReceiveMessage",
        ],
        "ReadMetrics": ["cloudwatch:GetMetricData"],
        "DescribeTables": ["dynamodb:DescribeTable"],
        "ReadAutoScaling": [
            "application-autoscaling:DescribeScalableTargets",
            "application-autoscaling:DescribeScalingPolicies",
        ],
        "ReadWriteRuns": ["s3:GetObject", "s3:PutObject"],
        "ListRuns": ["s3:ListBucket"],
    }
    runs = [r["Fn::Join"][1][-1] for r in statements["ReadWriteRuns"]["Resource"]]
    assert runs == ["/runs/*", "/latest/*"]  # its own prefixes, not the whole bucket
    # unconditioned: S3 answers 404 for a missing key only to a caller that may list the
    # bucket, and a GetObject carries no s3:prefix for a condition to match
    assert "Condition" not in statements["ListRuns"]
    # nothing inline, nothing AWS-managed
    props = template.find_resources("AWS::IAM::Role")[role]["Properties"]
    assert "ManagedPolicyArns" not in props and "Policies" not in props


def test_alarms_on_dead_letters_failures_and_missing_tables(
    synthesized: tuple[Template, Path],
) -> None:
    template, _ = synthesized
    alarms = template.find_resources("AWS::CloudWatch::Alarm").values()
    watched = {a["Properties"].get("MetricName"): a["Properties"] for a in alarms}
    assert set(watched) == {
        "ApproximateNumberOfMessagesVisible",
        "Failures",
        "TablesFailed",
        "TablesMissing",
    }
    for props in watched.values():
        assert props["Threshold"] == 1 and len(props["AlarmActions"]) == 1
        assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert watched["TablesMissing"]["Namespace"] == "DynamoDBCapacity/FleetAdvisor"
    # each count of this advisor's (its report bucket), never another advisor's of the account
    (bucket,) = template.find_resources("AWS::S3::Bucket")
    for name in ("Failures", "TablesFailed", "TablesMissing"):
        assert watched[name]["Dimensions"] == [{"Name": "ReportBucket", "Value": {"Ref": bucket}}]
    template.resource_count_is("AWS::SNS::Topic", 0)  # its alarms open OpsItems


def test_cfn_lint_finds_no_errors(synthesized: tuple[Template, Path]) -> None:
    _, outdir = synthesized
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), str(outdir / "Fleet.template.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode & 2 == 0, result.stdout  # 2 = errors (4 = warnings)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {"schedule": events.CronOptions(minute="0", hour="2", week_day="MON")},
            "schedule: got week_day='MON'; expected a daily time: minute and hour only",
        ),
        (
            {"schedule": events.CronOptions(minute="*/5", hour="2")},
            "schedule.minute: got '*/5'; expected a whole number from 0 to 59",
        ),
        (
            {"report_delay": Duration.minutes(5)},
            "report_delay: got 5 minutes; expected 15 minutes to 23 hours",
        ),
        ({"max_concurrency": 1}, "max_concurrency: got 1; expected a whole number from 2 to 1,000"),
        (
            {"report_delay": Duration.seconds(3630)},
            "report_delay: got 1 hour 30 seconds; expected whole minutes",
        ),
        (
            {"report_delay": Duration.minutes(Token.as_number(Aws.ACCOUNT_ID))},
            "report_delay must be known when the app is built (its minutes set the report's "
            "schedule); got a token (a CfnParameter's or another resource's value): give whole "
            "minutes, 15 minutes to 23 hours",
        ),
        (
            {"report_delay": Duration.seconds(Token.as_number(Aws.ACCOUNT_ID))},
            "report_delay must be known when the app is built (its minutes set the report's "
            "schedule); got a token (a CfnParameter's or another resource's value): give whole "
            "minutes, 15 minutes to 23 hours",
        ),
        ({"days": 15}, "days: got 15; expected a whole number from 1 to 14"),
        ({"days": 14.5}, "days: got 14.5; expected a whole number from 1 to 14"),
        ({"max_concurrency": 10.5}, "max_concurrency: got 10.5; expected a whole number"),
        ({"candidates": ["oracle"]}, "candidates: got 'oracle'; expected stock:T"),
        ({"candidates": ["stock:95"]}, "candidates 'stock:95': target utilization 95"),
        ({"candidates": [5]}, "candidates: got 5 (a int); expected a policy's name: stock:T"),
        ({"candidates": "stock:70"}, "candidates: got 'stock:70'; expected a list of policies"),
    ],
)
def test_bad_props_are_refused_with_the_prop_and_the_value(
    props: dict[str, Any], message: str
) -> None:
    stack = cdk.Stack(cdk.App(), "Bad")
    with pytest.raises(CapacityConfigError) as caught:
        FleetAdvisor(stack, "Advisor", **props)
    assert "FleetAdvisor Bad/Advisor: " + message in str(caught.value)
