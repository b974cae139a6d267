"""Synthesized capacity-request stacks as the construct tests read them: tables,
policies by statement id, the alarms every construct checks, and synth errors."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template

from constructs_pkg import (
    Capacity,
    ProvisionedTable,
)

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


PARTITION, REGION, ACCOUNT = (
    {"Ref": "AWS::Partition"},
    {"Ref": "AWS::Region"},
    {"Ref": "AWS::AccountId"},
)


TARGETS = {
    "Fn::Join": [
        "",
        [
            "arn:",
            PARTITION,
            ":application-autoscaling:",
            REGION,
            ":",
            ACCOUNT,
            ":scalable-target/*",
        ],
    ]
}


def tables(stack: cdk.Stack) -> tuple[ProvisionedTable, dynamodb.Table]:
    shipments = ProvisionedTable(
        stack,
        "Shipments",
        partition_key=PK,
        read=Capacity(min_capacity=10, max_capacity=1000),
        write=Capacity(min_capacity=10, max_capacity=6000),
    )
    plain = dynamodb.Table(
        stack, "Plain", partition_key=PK, billing_mode=dynamodb.BillingMode.PROVISIONED
    )
    return shipments, plain


def policy(template: Template, description: str) -> dict[str, Any]:
    (found,) = template.find_resources(
        "AWS::IAM::ManagedPolicy", {"Properties": {"Description": description}}
    ).values()
    return dict(found["Properties"])


def by_sid(properties: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in properties["PolicyDocument"]["Statement"]}


CHECKS_ALARMS = {
    "Sid": "AutoScalingChecksAlarms",
    "Effect": "Allow",
    "Action": ["cloudwatch:DescribeAlarms", "cloudwatch:PutMetricAlarm", "cloudwatch:DeleteAlarms"],
    "Resource": "*",
}
"""What Application Auto Scaling checks a caller changing a DynamoDB target may do (its
permissions validation): granted beside every RegisterScalableTarget, PutScalingPolicy and
PutScheduledAction, or the change fails."""


def move_minimums(names: list[Any]) -> dict[str, Any]:
    return {
        "Sid": "MoveMinimums",
        "Effect": "Allow",
        "Action": "application-autoscaling:RegisterScalableTarget",
        "Resource": TARGETS,
        "Condition": {
            "StringEquals": {
                "application-autoscaling:service-namespace": "dynamodb",
                "aws:ResourceTag/ddb-capacity:table": names,
            },
            "Null": {"aws:TagKeys": "true"},
        },
    }


def synth_errors(stack: cdk.Stack) -> list[str]:
    """What synthesizing the app reports, one ``[path] message`` line a failed validation."""
    app = cdk.Stage.of(stack)
    assert app is not None
    try:
        app.synth()
    except RuntimeError as exc:
        return [line.strip() for line in str(exc).splitlines() if line.startswith("  [")]
    return []
