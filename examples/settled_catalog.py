"""A product catalog pre-warmed by PROVISION_THEN_SETTLE, with write scale-in off.

The catalog is created provisioned at its high-water mark (8,000 reads, 2,000 writes per
second), which makes DynamoDB allocate for that peak, and is then settled to its operating
minimum by a one-shot step: one UpdateTable, one decrease of the table's daily quota.
Writes keep scale-in off (a nightly import must never find capacity taken away mid-run).
"""

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from constructs_pkg import Capacity, PrewarmMethod, ProvisionedTable, acknowledge, apply_nag_packs

from .compliance import AwsOwnedKeys


class SettledCatalogStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, **kwargs: object) -> None:
        super().__init__(scope, id, **kwargs)  # type: ignore[arg-type]
        cdk.Aspects.of(self).add(AwsOwnedKeys())
        cdk.Tags.of(self).add("app", "catalog")
        catalog = ProvisionedTable(
            self,
            "Catalog",
            partition_key=dynamodb.Attribute(name="sku", type=dynamodb.AttributeType.STRING),
            read=Capacity(min_capacity=25, max_capacity=8_000, high_water_mark=8_000),
            write=Capacity(
                min_capacity=10, max_capacity=2_000, disable_scale_in=True, high_water_mark=2_000
            ),
            prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,
        )
        for pack in ("HIPAA.Security", "NIST.800.53.R5"):
            acknowledge(
                catalog.table,
                f"{pack}-DynamoDBInBackupPlan",
                "The catalog is rebuilt from the product system of record every night; "
                "point-in-time recovery (on) covers the day in between.",
            )
        cdk.CfnOutput(self, "CatalogTableName", value=catalog.table.table_name)


if __name__ == "__main__":
    app = cdk.App()
    apply_nag_packs(app)
    SettledCatalogStack(app, "SettledCatalog")
    app.synth()
