"""Imports that start when a partner's file lands ("Handle traffic spikes with Amazon DynamoDB
provisioned capacity", design 7): the time is not
known in advance, but the worker knows when it is about to start.

The worker asks for capacity first, and starts writing once the table is ready::

    from datetime import timedelta
    from ddb_capacity_runtime.requests import request_capacity

    # CAPACITY_BROKER in the task's environment names the broker (BrokerFunctionName):
    # the task role may invoke it (grant_request), and reaches nothing else
    with request_capacity("Shipments...", write=2_000, hold=timedelta(minutes=20)):
        run_import()  # the minimum is back to its base when the block ends

Two imports at once add up (+4,000 over the traffic). If the worker dies, the restorer
ends its hold within 5 minutes of its expiry.
"""

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from constructs import Construct

from constructs_pkg import (
    Capacity,
    CapacityRequests,
    ProvisionedTable,
    acknowledge,
    apply_nag_packs,
)

from .compliance import AwsOwnedKeys

STRING = dynamodb.AttributeType.STRING


class PartnerImportStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, **kwargs: object) -> None:
        super().__init__(scope, id, **kwargs)  # type: ignore[arg-type]
        cdk.Aspects.of(self).add(AwsOwnedKeys())
        cdk.Tags.of(self).add("app", "shipments")
        shipments = ProvisionedTable(
            self,
            "Shipments",
            partition_key=dynamodb.Attribute(name="shipmentId", type=STRING),
            read=Capacity(min_capacity=10, max_capacity=1_000),
            write=Capacity(min_capacity=10, max_capacity=6_000),
        )
        worker = iam.Role(
            self,
            "ImportWorker",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            description="The partner import's task role",
        )
        requests = CapacityRequests(self, "Requests", tables=[shipments])
        requests.grant_request(worker)  # lambda:InvokeFunction on the broker, nothing else
        for pack in ("HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321"):
            acknowledge(
                worker,
                f"{pack}-IAMNoInlinePolicy",
                "The task role's only statement is the grant to invoke the capacity broker, "
                "added where CDK grants go (the role's default policy).",
            )
        for pack in ("HIPAA.Security", "NIST.800.53.R5"):
            acknowledge(
                shipments.table,
                f"{pack}-DynamoDBInBackupPlan",
                "Shipments are re-imported from the partners' files; point-in-time "
                "recovery (on) covers the hours in between.",
            )
        cdk.CfnOutput(self, "BrokerFunctionName", value=requests.broker.function_name)
        cdk.CfnOutput(self, "TableName", value=shipments.table.table_name)
        cdk.CfnOutput(self, "HoldStoreName", value=requests.hold_store.table_name)


if __name__ == "__main__":
    app = cdk.App()
    apply_nag_packs(app)
    PartnerImportStack(app, "PartnerImport")
    app.synth()
