"""A nightly bulk load at 05:00 on weekdays ("Handle traffic spikes with Amazon DynamoDB
provisioned capacity", design 6).

The import job writes about 3,000 units per second for an hour. A capacity window raises
the write minimum 10 minutes before 05:00, so auto scaling has provisioned it before the
first write, and restores the operating minimum at 06:00. The index the load also feeds
gets its own window.
"""

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from constructs_pkg import Capacity, ProvisionedTable, acknowledge, apply_nag_packs

from .compliance import AwsOwnedKeys

STRING = dynamodb.AttributeType.STRING


class BulkLoadStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, **kwargs: object) -> None:
        super().__init__(scope, id, **kwargs)  # type: ignore[arg-type]
        cdk.Aspects.of(self).add(AwsOwnedKeys())
        cdk.Tags.of(self).add("app", "ledger")
        ledger = ProvisionedTable(
            self,
            "Ledger",
            partition_key=dynamodb.Attribute(name="accountId", type=STRING),
            sort_key=dynamodb.Attribute(name="entryId", type=STRING),
            read=Capacity(min_capacity=20, max_capacity=2_000),
            write=Capacity(min_capacity=20, max_capacity=4_000),
        )
        ledger.add_global_secondary_index(
            index_name="byDay",
            partition_key=dynamodb.Attribute(name="day", type=STRING),
            read=Capacity(min_capacity=10, max_capacity=500),
            write=Capacity(min_capacity=20, max_capacity=4_000),
        )
        for index_name in (None, "byDay"):
            ledger.add_capacity_window(
                "nightly-load",
                dimension="write",
                index_name=index_name,
                capacity=3_000,
                start="05:00",
                duration=cdk.Duration.hours(1),
                lead=cdk.Duration.minutes(10),
                time_zone="Europe/Paris",
            )
        for pack in ("HIPAA.Security", "NIST.800.53.R5"):
            acknowledge(
                ledger.table,
                f"{pack}-DynamoDBInBackupPlan",
                "The ledger is reloaded every weekday from the accounting export; point-in-"
                "time recovery (on) covers the hours in between.",
            )


if __name__ == "__main__":
    app = cdk.App()
    apply_nag_packs(app)
    BulkLoadStack(app, "BulkLoad")
    app.synth()
