"""The smallest useful table: auto scaled on read and write, safe defaults."""

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from constructs_pkg import Capacity, ProvisionedTable, acknowledge, apply_nag_packs

from .compliance import AwsOwnedKeys


class MinimalTableStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, **kwargs: object) -> None:
        super().__init__(scope, id, **kwargs)  # type: ignore[arg-type]
        cdk.Aspects.of(self).add(AwsOwnedKeys())
        cdk.Tags.of(self).add("app", "sessions")
        sessions = ProvisionedTable(
            self,
            "Sessions",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            read=Capacity(min_capacity=5, max_capacity=500),
            write=Capacity(min_capacity=5, max_capacity=200),
        )
        for pack in ("HIPAA.Security", "NIST.800.53.R5"):
            acknowledge(
                sessions.table,
                f"{pack}-DynamoDBInBackupPlan",
                "Session data is short-lived; point-in-time recovery (on) covers it, so no "
                "AWS Backup plan is attached.",
            )
        cdk.CfnOutput(self, "SessionsTableName", value=sessions.table.table_name)


if __name__ == "__main__":
    app = cdk.App()
    apply_nag_packs(app)
    MinimalTableStack(app, "MinimalTable")
    app.synth()
