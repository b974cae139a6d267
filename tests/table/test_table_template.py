"""Every ProvisionedTable prop, shown in the synthesized template. References are resolved
from the constructs themselves, never written as hashed logical ids."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template

from constructs_pkg import Capacity, PrewarmMethod, ProvisionedTable
from constructs_pkg.common._runtime import function_runtime
from constructs_pkg.table._table import PREWARM_TAG

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
SK = dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.NUMBER)
GK = dynamodb.Attribute(name="gk", type=dynamodb.AttributeType.STRING)


def resource_id(stack: cdk.Stack, table: ProvisionedTable, index: str | None = None) -> Any:
    parts: list[Any] = ["table/", stack.resolve(table.table.table_name)]
    if index:
        parts.append(f"/index/{index}")
    return {"Fn::Join": ["", parts]}


def target_props(
    stack: cdk.Stack, table: ProvisionedTable, kind: str, dimension: str, index: str | None = None
) -> dict[str, Any]:
    return {
        "ServiceNamespace": "dynamodb",
        "ResourceId": resource_id(stack, table, index),
        "ScalableDimension": f"dynamodb:{kind}:{dimension}CapacityUnits",
    }


def policy_for(
    template: Template,
    stack: cdk.Stack,
    table: ProvisionedTable,
    kind: str,
    dimension: str,
    index: str | None = None,
) -> dict[str, Any]:
    """The target-tracking configuration attached to one scalable target."""
    targets = template.find_resources(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {"Properties": target_props(stack, table, kind, dimension, index)},
    )
    assert len(targets) == 1, targets
    (target_id,) = targets
    policies = template.find_resources(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {"Properties": {"ScalingTargetId": {"Ref": target_id}}},
    )
    assert len(policies) == 1, policies
    (policy,) = policies.values()
    config: dict[str, Any] = policy["Properties"]["TargetTrackingScalingPolicyConfiguration"]
    return config


def test_minimal_table_has_safe_defaults_and_auto_scaling(stack: cdk.Stack) -> None:
    # GIVEN a table with only keys and ranges
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=PK,
        sort_key=SK,
        read=Capacity(min_capacity=5, max_capacity=500),
        write=Capacity(min_capacity=3, max_capacity=200),
    )
    # WHEN synthesized
    template = Template.from_stack(stack)
    # THEN it is provisioned at its minimum, keyed, with PITR and deletion protection
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 3},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "DeletionProtectionEnabled": True,
            "WarmThroughput": Match.absent(),
            "BillingMode": Match.absent(),
        },
    )
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )
    # AND both dimensions are auto scaled at the stock 70 % target, scale-in on
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            **target_props(stack, table, "table", "Read"),
            "MinCapacity": 5,
            "MaxCapacity": 500,
        },
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            **target_props(stack, table, "table", "Write"),
            "MinCapacity": 3,
            "MaxCapacity": 200,
        },
    )
    read_policy = policy_for(template, stack, table, "table", "Read")
    assert read_policy == {
        "DisableScaleIn": False,
        "PredefinedMetricSpecification": {
            "PredefinedMetricType": "DynamoDBReadCapacityUtilization"
        },
        "TargetValue": 70,
    }
    # AND no high-water mark means no prewarm tag and no settle step
    template.resource_count_is("Custom::CapacitySettle", 0)
    template.resource_count_is("AWS::Lambda::Function", 0)
    assert PREWARM_TAG not in str(template.to_json())


def test_target_cooldowns_and_scale_in_reach_the_policy(stack: cdk.Stack) -> None:
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=PK,
        read=Capacity(min_capacity=5, max_capacity=500),
        write=Capacity(
            min_capacity=5,
            max_capacity=900,
            target_utilization_percent=45,
            scale_in_cooldown=cdk.Duration.minutes(10),
            scale_out_cooldown=cdk.Duration.seconds(30),
            disable_scale_in=True,
        ),
    )
    template = Template.from_stack(stack)
    assert policy_for(template, stack, table, "table", "Write") == {
        "DisableScaleIn": True,
        "PredefinedMetricSpecification": {
            "PredefinedMetricType": "DynamoDBWriteCapacityUtilization"
        },
        "ScaleInCooldown": 600,
        "ScaleOutCooldown": 30,
        "TargetValue": 45,
    }


def test_every_gsi_dimension_is_managed(stack: cdk.Stack) -> None:
    # GIVEN a table with two GSIs
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=PK,
        read=Capacity(min_capacity=5, max_capacity=50),
        write=Capacity(min_capacity=5, max_capacity=50),
    )
    table.add_global_secondary_index(
        index_name="byCustomer",
        partition_key=GK,
        sort_key=SK,
        projection_type=dynamodb.ProjectionType.INCLUDE,
        non_key_attributes=["total"],
        read=Capacity(min_capacity=2, max_capacity=20, target_utilization_percent=55),
        write=Capacity(min_capacity=4, max_capacity=40, disable_scale_in=True),
    )
    table.add_global_secondary_index(
        index_name="byStatus",
        partition_key=GK,
        read=Capacity(min_capacity=1, max_capacity=10),
        write=Capacity(min_capacity=1, max_capacity=10),
    )
    template = Template.from_stack(stack)
    # THEN each of the 6 dimensions has one scalable target and one policy
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalableTarget", 6)
    template.resource_count_is("AWS::ApplicationAutoScaling::ScalingPolicy", 6)
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "GlobalSecondaryIndexes": Match.array_with(
                [
                    Match.object_like(
                        {
                            "IndexName": "byCustomer",
                            "KeySchema": [
                                {"AttributeName": "gk", "KeyType": "HASH"},
                                {"AttributeName": "sk", "KeyType": "RANGE"},
                            ],
                            "Projection": {
                                "ProjectionType": "INCLUDE",
                                "NonKeyAttributes": ["total"],
                            },
                            "ProvisionedThroughput": {
                                "ReadCapacityUnits": 2,
                                "WriteCapacityUnits": 4,
                            },
                        }
                    )
                ]
            ),
        },
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            **target_props(stack, table, "index", "Read", "byCustomer"),
            "MinCapacity": 2,
            "MaxCapacity": 20,
        },
    )
    assert policy_for(template, stack, table, "index", "Read", "byCustomer")["TargetValue"] == 55
    assert policy_for(template, stack, table, "index", "Write", "byCustomer")["DisableScaleIn"]
    assert table.index_names == ["byCustomer", "byStatus"]
    assert table.scalable_attribute("write", "byStatus") is not None


def test_warm_throughput_on_table_and_gsis(stack: cdk.Stack) -> None:
    # GIVEN high-water marks under the default WARM_THROUGHPUT method
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=PK,
        read=Capacity(min_capacity=5, max_capacity=500, high_water_mark=15_000),
        write=Capacity(min_capacity=5, max_capacity=500, high_water_mark=6_000),
    )
    table.add_global_secondary_index(
        index_name="byCustomer",
        partition_key=GK,
        read=Capacity(min_capacity=2, max_capacity=20),
        write=Capacity(min_capacity=2, max_capacity=20, high_water_mark=5_000),
    )
    template = Template.from_stack(stack)
    # THEN warm throughput carries the marks and provisioned capacity stays at the minimum
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
            "WarmThroughput": {"ReadUnitsPerSecond": 15_000, "WriteUnitsPerSecond": 6_000},
            "GlobalSecondaryIndexes": [
                Match.object_like(
                    {
                        "IndexName": "byCustomer",
                        "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 2},
                        "WarmThroughput": {"WriteUnitsPerSecond": 5_000},
                    }
                )
            ],
            "Tags": Match.array_with([{"Key": PREWARM_TAG, "Value": "WARM_THROUGHPUT"}]),
        },
    )
    # AND no decrease is spent: there is no settle step
    template.resource_count_is("Custom::CapacitySettle", 0)


def test_provision_then_settle(stack: cdk.Stack) -> None:
    # GIVEN high-water marks under PROVISION_THEN_SETTLE, with write scale-in off
    table = ProvisionedTable(
        stack,
        "Catalog",
        partition_key=PK,
        prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
        read=Capacity(min_capacity=25, max_capacity=8_000, high_water_mark=8_000),
        write=Capacity(
            min_capacity=10, max_capacity=2_000, disable_scale_in=True, high_water_mark=3_000
        ),
    )
    table.add_global_secondary_index(
        index_name="bySupplier",
        partition_key=GK,
        read=Capacity(min_capacity=4, max_capacity=400, high_water_mark=4_000),
        write=Capacity(min_capacity=2, max_capacity=20),
    )
    template = Template.from_stack(stack)
    # THEN the table and GSI are created at their marks, with no warm throughput
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "ProvisionedThroughput": {"ReadCapacityUnits": 8_000, "WriteCapacityUnits": 3_000},
            "WarmThroughput": Match.absent(),
            "GlobalSecondaryIndexes": [
                Match.object_like(
                    {
                        "ProvisionedThroughput": {
                            "ReadCapacityUnits": 4_000,
                            "WriteCapacityUnits": 2,
                        },
                    }
                )
            ],
            "Tags": Match.array_with([{"Key": PREWARM_TAG, "Value": "PROVISION_THEN_SETTLE"}]),
        },
    )
    # AND one settle step lists exactly the dimensions above their operating minimum
    template.has_resource_properties(
        "Custom::CapacitySettle",
        {
            "TableName": stack.resolve(table.table.table_name),
            "Targets": [
                {"Index": "", "Dimension": "read", "HighWaterMark": 8_000, "Operating": 25},
                {"Index": "", "Dimension": "write", "HighWaterMark": 3_000, "Operating": 10},
                {
                    "Index": "bySupplier",
                    "Dimension": "read",
                    "HighWaterMark": 4_000,
                    "Operating": 4,
                },
            ],
        },
    )
    # AND its two functions run the run-time package on the tests' Python runtime, arm64,
    # each call short: the provider waits between them
    for handler in ("on_event", "is_complete"):
        template.has_resource_properties(
            "AWS::Lambda::Function",
            {
                "Handler": f"ddb_capacity_runtime.settle.handler.{handler}",
                "Runtime": function_runtime().name,
                "Architectures": ["arm64"],
                "Timeout": 60,
                "MemorySize": 256,
                "LoggingConfig": Match.object_like({"LogFormat": "JSON"}),
            },
        )
    template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 365})
    # AND the provider asks every 10 seconds until 31 minutes have passed (the step's own
    # 30 and a minute), and CloudFormation waits 2 minutes more
    (machine,) = template.find_resources("AWS::StepFunctions::StateMachine").values()
    definition = "".join(
        p for p in machine["Properties"]["DefinitionString"]["Fn::Join"][1] if isinstance(p, str)
    )
    assert '"IntervalSeconds":10,"MaxAttempts":186' in definition
    template.has_resource_properties(
        "Custom::CapacitySettle",
        {"ServiceToken": {"Fn::GetAtt": [Match.string_like_regexp("frameworkonEvent"), "Arn"]}},
    )
    template.has_resource_properties("Custom::CapacitySettle", {"ServiceTimeout": "1980"})


def test_settle_step_carries_each_targets_utilization_and_may_read_traffic_and_minimums(
    stack: cdk.Stack,
) -> None:
    # GIVEN a PROVISION_THEN_SETTLE table whose read aims at 60 % and whose write at the
    # default (70 %)
    table = ProvisionedTable(
        stack,
        "Live",
        partition_key=PK,
        prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
        read=Capacity(
            min_capacity=100,
            max_capacity=4_000,
            target_utilization_percent=60,
            high_water_mark=2_000,
        ),
        write=Capacity(min_capacity=5, max_capacity=500, high_water_mark=500),
    )
    template = Template.from_stack(stack)
    # THEN each settle target says its auto scaling's target, so an Update lowers the live
    # table no further than its traffic needs at it
    (settle,) = template.find_resources("Custom::CapacitySettle").values()
    assert settle["Properties"]["TableName"] == stack.resolve(table.table.table_name)
    assert settle["Properties"]["Targets"] == [
        {
            "Index": "",
            "Dimension": "read",
            "HighWaterMark": 2_000,
            "Operating": 100,
            "TargetUtilization": 60,
        },
        {
            "Index": "",
            "Dimension": "write",
            "HighWaterMark": 500,
            "Operating": 5,
            "TargetUtilization": 70,
        },
    ]
    # AND is_complete's role may read the traffic and the scalable targets' minimums now
    # (GetMetricData and DescribeScalableTargets have no resource-level permission, and it
    # reads no scaling policy), and on_event's may not
    reads = [
        {"Sid": "ReadTraffic", "Action": "cloudwatch:GetMetricData"},
        {"Sid": "ReadAutoScaling", "Action": "application-autoscaling:DescribeScalableTargets"},
    ]
    for read in reads:
        statement = {**read, "Effect": "Allow", "Resource": "*"}
        granted = {
            role["Ref"]
            for policy in template.find_resources("AWS::IAM::ManagedPolicy").values()
            if statement in policy["Properties"]["PolicyDocument"]["Statement"]
            for role in policy["Properties"]["Roles"]
        }
        assert len(granted) == 1, read
        assert "CapacitySettleProviderIsCompleteRole" in next(iter(granted))


def test_settle_function_is_one_per_stack_and_scoped_to_its_tables(stack: cdk.Stack) -> None:
    # GIVEN two PROVISION_THEN_SETTLE tables in one stack
    tables = [
        ProvisionedTable(
            stack,
            name,
            partition_key=PK,
            prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
            read=Capacity(min_capacity=5, max_capacity=50, high_water_mark=900),
            write=Capacity(min_capacity=5, max_capacity=50),
        )
        for name in ("First", "Second")
    ]
    template = Template.from_stack(stack)
    # THEN one provider, with its two functions (and its framework's three), serves both
    # settle steps
    handlers = [
        f["Properties"]["Handler"]
        for f in template.find_resources("AWS::Lambda::Function").values()
    ]
    assert sorted(handlers) == [
        "ddb_capacity_runtime.settle.handler.is_complete",
        "ddb_capacity_runtime.settle.handler.on_event",
        "framework.isComplete",
        "framework.onEvent",
        "framework.onTimeout",
    ]
    template.resource_count_is("Custom::CapacitySettle", 2)
    # AND the inline policies are the provider's waiter's, which invokes its framework, and
    # each table's grant (below)
    inline = template.find_resources("AWS::IAM::Policy")
    (waiter,) = [v for k, v in inline.items() if "SettleGrant" not in k]
    statements = waiter["Properties"]["PolicyDocument"]["Statement"]
    assert {s["Action"] for s in statements} == {"lambda:InvokeFunction"}
    # AND the framework's functions invoke (and wait for) the two settle functions only,
    # and its onEvent starts the waiter, through customer-managed policies
    template.has_resource_properties(
        "AWS::IAM::ManagedPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Sid": "InvokeSettleFunctions",
                                "Action": ["lambda:InvokeFunction", "lambda:GetFunction"],
                                "Resource": [
                                    {"Fn::GetAtt": [Match.string_like_regexp("OnEvent"), "Arn"]},
                                    {"Fn::GetAtt": [Match.string_like_regexp("IsComplete"), "Arn"]},
                                ],
                            }
                        ),
                        Match.object_like(
                            {"Sid": "StartWaiter", "Action": "states:StartExecution"}
                        ),
                    ]
                )
            },
            "Roles": [{"Ref": Match.string_like_regexp("FrameworkOnEventRole")}],
        },
    )
    assert not any(
        "ManagedPolicyArns" in r["Properties"]
        for r in template.find_resources("AWS::IAM::Role").values()
    )
    # AND is_complete's role is granted each table in a policy naming that table alone,
    # nothing wider
    for t in tables:
        template.has_resource_properties(
            "AWS::IAM::Policy",
            {
                "PolicyDocument": {
                    "Statement": [
                        {
                            "Sid": f"Settle{stack.resolve(t.table.table_name)['Ref']}",
                            "Action": ["dynamodb:DescribeTable", "dynamodb:UpdateTable"],
                            "Effect": "Allow",
                            "Resource": stack.resolve(t.table.table_arn),
                        }
                    ]
                },
                "Roles": [
                    {"Ref": Match.string_like_regexp("CapacitySettleProviderIsCompleteRole")}
                ],
            },
        )
    assert len(inline) == 1 + len(tables)
    # AND the functions' roles carry no AWS managed policy
    roles = template.find_resources(
        "AWS::IAM::Role",
        {"Properties": {"Description": Match.string_like_regexp("PROVISION_THEN_SETTLE")}},
    )
    assert len(roles) == 2
    assert all("ManagedPolicyArns" not in r["Properties"] for r in roles.values())


def test_the_settle_providers_framework_functions_take_lambdas_least_memory(
    stack: cdk.Stack,
) -> None:
    # GIVEN a PROVISION_THEN_SETTLE table, and so the settle step's provider
    ProvisionedTable(
        stack,
        "Orders",
        partition_key=PK,
        prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
        read=Capacity(min_capacity=5, max_capacity=50, high_water_mark=900),
        write=Capacity(min_capacity=5, max_capacity=50),
    )
    functions = Template.from_stack(stack).find_resources("AWS::Lambda::Function").values()
    # THEN its framework's three functions, which only relay events, are given 128 MB, the
    # least Lambda takes, and no more
    framework = [
        f["Properties"] for f in functions if f["Properties"]["Handler"].startswith("framework.")
    ]
    assert [f["MemorySize"] for f in framework] == [128, 128, 128]


def test_settle_skips_marks_equal_to_minimum(stack: cdk.Stack) -> None:
    ProvisionedTable(
        stack,
        "T",
        partition_key=PK,
        prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
        read=Capacity(min_capacity=50, max_capacity=500, high_water_mark=50),
        write=Capacity(min_capacity=5, max_capacity=50),
    )
    template = Template.from_stack(stack)
    template.resource_count_is("Custom::CapacitySettle", 0)


def test_pass_through_props(stack: cdk.Stack) -> None:
    ProvisionedTable(
        stack,
        "Events",
        partition_key=PK,
        read=Capacity(min_capacity=1, max_capacity=10),
        write=Capacity(min_capacity=1, max_capacity=10),
        table_name="events",
        table_class=dynamodb.TableClass.STANDARD_INFREQUENT_ACCESS,
        stream=dynamodb.StreamViewType.NEW_IMAGE,
        time_to_live_attribute="expiresAt",
        point_in_time_recovery=False,
        deletion_protection=False,
        removal_policy=cdk.RemovalPolicy.DESTROY,
        contributor_insights_enabled=True,
    )
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "TableName": "events",
            "TableClass": "STANDARD_INFREQUENT_ACCESS",
            "StreamSpecification": {"StreamViewType": "NEW_IMAGE"},
            "TimeToLiveSpecification": {"AttributeName": "expiresAt", "Enabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": False},
            "DeletionProtectionEnabled": False,
            "ContributorInsightsSpecification": {"Enabled": True},
        },
    )
    template.has_resource("AWS::DynamoDB::Table", {"DeletionPolicy": "Delete"})


def test_underlying_table_is_exposed_for_grants(stack: cdk.Stack) -> None:
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=PK,
        read=Capacity(min_capacity=1, max_capacity=10),
        write=Capacity(min_capacity=1, max_capacity=10),
    )
    role = iam.Role(stack, "Worker", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    assert isinstance(table.table, dynamodb.Table)
    table.table.grant_read_data(role)
    Template.from_stack(stack).has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": Match.array_with(["dynamodb:Query", "dynamodb:GetItem"]),
                                "Resource": Match.array_with(
                                    [stack.resolve(table.table.table_arn)]
                                ),
                            }
                        )
                    ]
                )
            },
        },
    )
