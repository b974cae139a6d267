"""An orders table with two GSIs, pre-warmed for a product launch.

Day-to-day traffic is small, but the launch is expected to bring about 20,000 writes and
30,000 reads per second from its first minute. The table and both indexes carry that as
their high-water mark through DynamoDB's warm throughput, so the launch needs no capacity
ramp, while auto scaling keeps the provisioned (billed) capacity near what is consumed.
"""

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from constructs_pkg import Capacity, PrewarmMethod, ProvisionedTable, acknowledge, apply_nag_packs

from .compliance import AwsOwnedKeys

STRING = dynamodb.AttributeType.STRING


class OrdersLaunchStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, **kwargs: object) -> None:
        super().__init__(scope, id, **kwargs)  # type: ignore[arg-type]
        cdk.Aspects.of(self).add(AwsOwnedKeys())
        cdk.Tags.of(self).add("app", "orders")
        orders = ProvisionedTable(
            self,
            "Orders",
            partition_key=dynamodb.Attribute(name="orderId", type=STRING),
            read=Capacity(min_capacity=50, max_capacity=30_000, high_water_mark=30_000),
            write=Capacity(
                min_capacity=50,
                max_capacity=20_000,
                target_utilization_percent=60,
                scale_out_cooldown=cdk.Duration.seconds(30),
                scale_in_cooldown=cdk.Duration.minutes(10),
                high_water_mark=20_000,
            ),
            prewarm=PrewarmMethod.WARM_THROUGHPUT,
        )
        orders.add_global_secondary_index(
            index_name="byCustomer",
            partition_key=dynamodb.Attribute(name="customerId", type=STRING),
            sort_key=dynamodb.Attribute(name="createdAt", type=STRING),
            read=Capacity(min_capacity=20, max_capacity=15_000, high_water_mark=15_000),
            write=Capacity(min_capacity=20, max_capacity=20_000, high_water_mark=20_000),
        )
        orders.add_global_secondary_index(
            index_name="byStatus",
            partition_key=dynamodb.Attribute(name="status", type=STRING),
            sort_key=dynamodb.Attribute(name="createdAt", type=STRING),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
            read=Capacity(min_capacity=10, max_capacity=5_000),
            write=Capacity(min_capacity=20, max_capacity=20_000, high_water_mark=20_000),
        )
        for pack in ("HIPAA.Security", "NIST.800.53.R5"):
            acknowledge(
                orders.table,
                f"{pack}-DynamoDBInBackupPlan",
                "Point-in-time recovery (on) gives 35 days of continuous backups; the "
                "organisation's AWS Backup plan selects tables by tag, outside this app.",
            )
        cdk.CfnOutput(self, "OrdersTableName", value=orders.table.table_name)


if __name__ == "__main__":
    app = cdk.App()
    apply_nag_packs(app)
    OrdersLaunchStack(app, "OrdersLaunch")
    app.synth()
