"""Runs in: CDK app (synth time).

The IAM statements the library's functions are granted: the state store's actions, reading
DynamoDB's scalable targets, and moving the minimums (or target values) of the targets
tagged for a function, never others."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam

STORE_ACTIONS = [
    "dynamodb:GetItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:Query",
    "dynamodb:Scan",
]
"""What the scaler may do in its state store: read items, write them with conditional writes,
delete an item left holding nothing (`HoldStore.keep_plan`), and list a table's items (Query)
or all of them (Scan)."""
HOLD_STORE_ACTIONS = [a for a in STORE_ACTIONS if a != "dynamodb:DeleteItem"]
"""What a capacity request's broker and restorer may do in the hold store: `STORE_ACTIONS`
but deleting items (giving a lease back is a write; only the scaler deletes)."""


def state_store_statement(
    sid: str, table: dynamodb.ITable | str, actions: list[str] = STORE_ACTIONS
) -> iam.PolicyStatement:
    """``actions`` (default `STORE_ACTIONS`) on the state store ``table`` (or its ARN), and
    nothing else."""
    arn = table if isinstance(table, str) else table.table_arn
    return iam.PolicyStatement(sid=sid, actions=list(actions), resources=[arn])


SCALABLE_TARGETS = (
    f"arn:{Aws.PARTITION}:application-autoscaling:{Aws.REGION}:{Aws.ACCOUNT_ID}:scalable-target/*"
)
"""Every scalable target of the account and Region: Application Auto Scaling generates target ARNs,
so a grant can only name them all and narrow them down with conditions."""


SCALABLE_TARGETS_FINDING = (
    "Resource::arn:<AWS::Partition>:application-autoscaling:<AWS::Region>:"
    "<AWS::AccountId>:scalable-target/*"
)
"""How cdk-nag prints `SCALABLE_TARGETS` in a finding."""


def scalable_targets_reason(tagged: str, policies: str = "") -> str:
    """What the scalable-target wildcard still allows, for its acknowledgements;
    ``tagged`` says which tag a target must carry, ``policies`` which targets' scaling
    policies may be written (none when empty)."""
    return (
        "Application Auto Scaling generates scalable-target ARNs, so the grant names "
        "scalable-target/*. Its conditions allow RegisterScalableTarget (min, max, suspended "
        f"state) only on DynamoDB targets tagged {tagged}, and never with tags in the request."
        + (
            f" PutScalingPolicy (an owned target value) is allowed only on those of {policies}."
            if policies
            else ""
        )
    )


def read_autoscaling_statement(*, policies: bool = True) -> iam.PolicyStatement:
    """Reading DynamoDB's scalable targets and, with ``policies``, their scaling policies
    (no resource-level permissions)."""
    actions = ["application-autoscaling:DescribeScalableTargets"]
    if policies:
        actions.append("application-autoscaling:DescribeScalingPolicies")
    return iam.PolicyStatement(sid="ReadAutoScaling", actions=actions, resources=["*"])


VALIDATED_ALARM_ACTIONS = (
    "cloudwatch:DescribeAlarms",
    "cloudwatch:PutMetricAlarm",
    "cloudwatch:DeleteAlarms",
)
"""What Application Auto Scaling checks that a caller changing a DynamoDB scalable target
(RegisterScalableTarget, PutScalingPolicy, PutScheduledAction) may do in CloudWatch: it
tries them itself, with calls of its own, and fails the change when one is denied."""

VALIDATION_REASON = (
    "Application Auto Scaling fails a change of a DynamoDB scalable target unless its caller "
    "may call CloudWatch's DescribeAlarms, PutMetricAlarm and DeleteAlarms, which it checks "
    "with calls of its own (Permissions validation for Application Auto Scaling API calls on "
    "target resources); the function never calls them."
)
"""Why the functions that change scalable targets hold `VALIDATED_ALARM_ACTIONS` on ``*``."""


def autoscaling_validation_statement() -> iam.PolicyStatement:
    """`VALIDATED_ALARM_ACTIONS` on ``*``: the checks Application Auto Scaling makes of a
    caller before it changes a target (their resource is its own choice)."""
    return iam.PolicyStatement(
        sid="AutoScalingChecksAlarms", actions=list(VALIDATED_ALARM_ACTIONS), resources=["*"]
    )


def move_minimums_statement(sid: str, tag_key: str, values: Sequence[str]) -> iam.PolicyStatement:
    """RegisterScalableTarget on the DynamoDB targets tagged ``tag_key`` with one of
    ``values``, and with no tags in the request (it cannot tag a target, nor create one: a
    target that does not exist carries no tag)."""
    return _on_tagged_targets(sid, "RegisterScalableTarget", tag_key, values)


def _on_tagged_targets(
    sid: str, action: str, tag_key: str, values: Sequence[str]
) -> iam.PolicyStatement:
    """Application Auto Scaling's ``action`` on the DynamoDB targets tagged ``tag_key`` with
    one of ``values``, with no tags in the request."""
    return iam.PolicyStatement(
        sid=sid,
        actions=[f"application-autoscaling:{action}"],
        resources=[SCALABLE_TARGETS],
        conditions={
            "StringEquals": {
                "application-autoscaling:service-namespace": "dynamodb",
                f"aws:ResourceTag/{tag_key}": list(values),
            },
            "Null": {"aws:TagKeys": "true"},
        },
    )


def set_target_values_statement(
    sid: str, tag_key: str, values: Sequence[str]
) -> iam.PolicyStatement:
    """PutScalingPolicy on the DynamoDB targets tagged ``tag_key`` with one of ``values``
    (an owned policy's target value), with no tags in the request."""
    return _on_tagged_targets(sid, "PutScalingPolicy", tag_key, values)
