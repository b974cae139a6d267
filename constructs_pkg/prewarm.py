"""Runs in: CDK app (synth time).

The settle step of PROVISION_THEN_SETTLE: a CloudFormation custom resource per table,
served by one function per stack (`ddb_capacity_runtime.settle`)."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnResource, CustomResource, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from .compliance import acknowledge, skip_checkov
from .runtime import runtime_function

PROVIDER_ID = "CapacitySettleProvider"


def settle_function(scope: Construct) -> tuple[lambda_.Function, iam.ManagedPolicy]:
    """The stack's one settle function and its policy, created on first use."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(PROVIDER_ID)
    if existing is not None:
        function = existing.node.find_child("Function")
        policy = existing.node.find_child("FunctionPolicy")
        assert isinstance(function, lambda_.Function)
        assert isinstance(policy, iam.ManagedPolicy)
        return function, policy
    holder = Construct(stack, PROVIDER_ID)
    function, policy = runtime_function(
        holder,
        "Function",
        handler="ddb_capacity_runtime.settle.handler.handler",
        description="Settles PROVISION_THEN_SETTLE tables from their high-water mark",
        timeout=Duration.minutes(10),
        memory_size=256,
        configured_by_environment=False,  # its tables come in each event
    )
    reasons = {
        "Serverless-LambdaDLQ": "Invoked only by CloudFormation, which waits for the "
        "function's own SUCCESS/FAILED response; a failed event fails the deployment.",
        "HIPAA.Security-LambdaDLQ": "Invoked only by CloudFormation, which receives every "
        "failure through the custom-resource response.",
        "NIST.800.53.R5-LambdaDLQ": "Invoked only by CloudFormation, which receives every "
        "failure through the custom-resource response.",
        "PCI.DSS.321-LambdaDLQ": "Invoked only by CloudFormation, which receives every "
        "failure through the custom-resource response.",
        "Serverless-LambdaAsyncFailureDestination": "Invoked only by CloudFormation, "
        "which receives every failure through the custom-resource response.",
        "Serverless-LambdaTracing": "One DynamoDB call per table creation; its log line "
        "records it, tracing adds nothing but cost.",
        "HIPAA.Security-LambdaConcurrency": "Runs once per table creation; reserving "
        "concurrency would take it from the account for nothing.",
        "NIST.800.53.R5-LambdaConcurrency": "Runs once per table creation; reserving "
        "concurrency would take it from the account for nothing.",
        "HIPAA.Security-LambdaInsideVPC": "Calls only the DynamoDB control plane "
        "(DescribeTable, UpdateTable); it reaches no resource inside a VPC.",
        "NIST.800.53.R5-LambdaInsideVPC": "Calls only the DynamoDB control plane "
        "(DescribeTable, UpdateTable); it reaches no resource inside a VPC.",
        "PCI.DSS.321-LambdaInsideVPC": "Calls only the DynamoDB control plane "
        "(DescribeTable, UpdateTable); it reaches no resource inside a VPC.",
    }
    for finding, reason in reasons.items():
        acknowledge(holder, finding, reason)
    skip_checkov(function, "CKV_AWS_116", reasons["Serverless-LambdaDLQ"])
    skip_checkov(function, "CKV_AWS_115", reasons["HIPAA.Security-LambdaConcurrency"])
    return function, policy


class SettleStep(Construct):
    """Lowers a PROVISION_THEN_SETTLE table's dimensions from their high-water mark to
    their operating minimum, once, with one UpdateTable (one decrease per counter)."""

    def __init__(self, scope: Construct, id: str, *, table: dynamodb.Table) -> None:
        super().__init__(scope, id)
        self._targets: list[dict[str, Any]] = []
        function, policy = settle_function(self)
        cfn_table = table.node.default_child
        assert isinstance(cfn_table, dynamodb.CfnTable)
        policy.add_statements(
            iam.PolicyStatement(
                sid=f"Settle{Stack.of(table).get_logical_id(cfn_table)}",
                actions=["dynamodb:DescribeTable", "dynamodb:UpdateTable"],
                resources=[table.table_arn],
            )
        )
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=function.function_arn,
            resource_type="Custom::CapacitySettle",
            service_timeout=Duration.minutes(12),
            properties={"TableName": table.table_name, "Targets": []},
        )

    def add_target(
        self, index_name: str | None, dimension: str, high_water_mark: int, operating: int
    ) -> None:
        self._targets.append(
            {
                "Index": index_name or "",
                "Dimension": dimension,
                "HighWaterMark": high_water_mark,
                "Operating": operating,
            }
        )
        cfn = self.resource.node.default_child
        assert isinstance(cfn, CfnResource)
        cfn.add_property_override("Targets", list(self._targets))
