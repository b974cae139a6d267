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

from ddb_capacity_runtime.core.errors import CapacityConfigError

from .compliance import acknowledge, skip_checkov
from .runtime import FunctionConfig, FunctionDefaults, runtime_function

PROVIDER_ID = "CapacitySettleProvider"
#: The settle function's defaults and the timeouts it allows (``function_options["Settle"]``
#: of a PROVISION_THEN_SETTLE table). CloudFormation waits 2 minutes more than the timeout.
SETTLE_DEFAULTS = {
    "Settle": FunctionDefaults(
        256,
        Duration.minutes(10),
        shortest=Duration.minutes(1),
        why="the settle step waits for its table until 30 seconds before its timeout, "
        "then answers CloudFormation: at least a minute, and Lambda's longest is 15 minutes",
    )
}
#: What CloudFormation waits for the settle function beyond its timeout.
SERVICE_MARGIN = Duration.minutes(2)


class _SettleProvider(Construct):
    """The holder of the stack's settle function, with the config it was made with."""

    def __init__(self, scope: Construct, id: str, config: FunctionConfig) -> None:
        super().__init__(scope, id)
        self.config = config


def settle_function(
    scope: Construct, where: str, config: FunctionConfig
) -> tuple[lambda_.Function, iam.ManagedPolicy]:
    """The stack's one settle function and its policy, created on first use as ``config``
    says; a later table (``where``) must ask for the same ``config``."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(PROVIDER_ID)
    if existing is not None:
        function = existing.node.find_child("Function")
        policy = existing.node.find_child("FunctionPolicy")
        assert isinstance(function, lambda_.Function)
        assert isinstance(policy, iam.ManagedPolicy)
        made = existing.config if isinstance(existing, _SettleProvider) else config
        if made != config:
            raise CapacityConfigError(
                f"{where}: function_options['Settle']: got {config}; but the stack's one "
                f"settle function ({existing.node.path}) is already made with {made}: every "
                "PROVISION_THEN_SETTLE table of a stack shares it, so give them the same "
                "function_options"
            )
        return function, policy
    holder = _SettleProvider(stack, PROVIDER_ID, config)
    function, policy = runtime_function(
        holder,
        "Function",
        handler="ddb_capacity_runtime.settle.handler.handler",
        description="Settles PROVISION_THEN_SETTLE tables from their high-water mark",
        config=config,
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

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        table: dynamodb.Table,
        where: str,
        config: FunctionConfig,
    ) -> None:
        super().__init__(scope, id)
        self._targets: list[dict[str, Any]] = []
        function, policy = settle_function(self, where, config)
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
            service_timeout=Duration.seconds(
                config.timeout.to_seconds() + SERVICE_MARGIN.to_seconds()
            ),
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
