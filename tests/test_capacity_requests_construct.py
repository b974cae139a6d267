"""CapacityRequests in the template: the exact statements a worker is granted, the
restorer's function, schedule and statements, and bad props."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from constructs_pkg import Capacity, CapacityConfigError, CapacityRequests, ProvisionedTable

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
    return {s.get("Sid", "logs"): s for s in properties["PolicyDocument"]["Statement"]}


def test_a_worker_gets_exactly_what_a_request_needs(stack: cdk.Stack) -> None:
    shipments, plain = tables(stack)
    worker = iam.Role(stack, "Worker", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"))
    requests = CapacityRequests(stack, "Requests", tables=[shipments, plain], restore_every=None)
    requests.grant_request(worker)
    template = Template.from_stack(stack)
    props = policy(template, "Lets a worker request DynamoDB capacity for work about to start")
    assert props["Roles"] == [stack.resolve(worker.role_name)]
    assert by_sid(props) == {
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
                "dynamodb:DeleteItem",
                "dynamodb:Query",
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
        "MoveDynamoDBMinimums": {
            "Sid": "MoveDynamoDBMinimums",
            "Effect": "Allow",
            "Action": "application-autoscaling:RegisterScalableTarget",
            "Resource": TARGETS,
            "Condition": {
                "StringEquals": {"application-autoscaling:service-namespace": "dynamodb"}
            },
        },
        "ReadTraffic": {
            "Sid": "ReadTraffic",
            "Effect": "Allow",
            "Action": "cloudwatch:GetMetricData",
            "Resource": "*",
        },
    }
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
    # No restorer was asked for: no function, no rule, nothing inline.
    template.resource_count_is("AWS::Lambda::Function", 0)
    template.resource_count_is("AWS::Events::Rule", 0)
    template.resource_count_is("AWS::IAM::Policy", 0)


def test_a_function_user_and_group_can_be_granted(stack: cdk.Stack) -> None:
    shipments, _ = tables(stack)
    requests = CapacityRequests(stack, "Requests", tables=[shipments], restore_every=None)
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
    policies = template.find_resources("AWS::IAM::ManagedPolicy")
    attached = sorted(
        k for p in policies.values() for k in ("Roles", "Users", "Groups") if k in p["Properties"]
    )
    assert attached == ["Groups", "Roles", "Users"]


def test_the_restorer_runs_on_a_schedule_with_only_restore_permissions(stack: cdk.Stack) -> None:
    shipments, plain = tables(stack)
    requests = CapacityRequests(
        stack, "Requests", tables=[shipments, plain], restore_every=cdk.Duration.minutes(10)
    )
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "ddb_capacity_runtime.requests.restorer.restorer_handler",
            "ReservedConcurrentExecutions": 1,
            "Environment": {
                "Variables": {
                    "CAPACITY_TABLES": {
                        "Fn::Join": [
                            ",",
                            [
                                stack.resolve(shipments.table.table_name),
                                stack.resolve(plain.table_name),
                            ],
                        ]
                    },
                    "CAPACITY_HOLDS_TABLE": stack.resolve(requests.hold_store.table_name),
                    "CAPACITY_MAX_UNITS": "40000",
                    "CAPACITY_MAX_HOLD_MINUTES": "1440",
                }
            },
        },
    )
    template.has_resource_properties(
        "AWS::Events::Rule", {"ScheduleExpression": "rate(10 minutes)"}
    )
    props = policy(template, "Permissions of DynamoDB capacity hold restorer")
    statements = by_sid(props)
    assert set(statements) == {
        "logs",
        "DeadLetters",
        "HoldTables",
        "HoldStore",
        "ReadAutoScaling",
        "MoveDynamoDBMinimums",
    }
    # It reads and moves the tables; it never tags them.
    assert statements["HoldTables"]["Action"] == [
        "dynamodb:DescribeTable",
        "dynamodb:ListTagsOfResource",
        "dynamodb:UpdateTable",
    ]
    assert statements["DeadLetters"]["Resource"] == stack.resolve(
        requests.restorer.dead_letter_queue.queue_arn if requests.restorer else None
    )


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
        ({"max_units": 0}, "max_units must be a whole number from 1 to 40000; got 0"),
        (
            {"max_hold": cdk.Duration.hours(25)},
            "max_hold must be whole minutes from 1 minute to 24 hours; got 1 day 1 hour",
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


def test_grant_needs_something_with_a_role(stack: cdk.Stack) -> None:
    requests = CapacityRequests(stack, "Requests", tables=[tables(stack)[0]], restore_every=None)
    with pytest.raises(
        CapacityConfigError,
        match="grant_request needs a role, a user, a group or something with a role",
    ):
        requests.grant_request(iam.AccountRootPrincipal())  # type: ignore[arg-type]


def test_a_connected_scaler_obeys_and_ends_the_holds(stack: cdk.Stack) -> None:
    from constructs_pkg import ThrottleAwareScaler

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
    requests.connect(scaler)
    template = Template.from_stack(stack)
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
    assert statements["HoldStore"]["Action"] == [
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:Scan",
    ]
    assert statements["HoldStore"]["Resource"] == stack.resolve(requests.hold_store.table_arn)
