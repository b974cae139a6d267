"""The throttle-aware scaler managing two tables: one given explicitly, one found by its tag,
next to a third table left to plain target tracking.

- ``Feed`` (explicit) is a ProvisionedTable under target tracking; when it is throttled the
  scaler raises its scalable targets' minimum, so auto scaling performs the raise at once,
  and it owns its target tracking's target value (``own_target``): while the autopilot's
  plan is in force, the policies aim at the plan's aim, then back at 70 %.
- ``Clicks`` (found by tag) is a provisioned table without auto scaling; the scaler sets its
  capacity with UpdateTable, decreases planned against the daily quota.
- ``Accounts`` is under stock target tracking only.

A ``FleetAdvisor`` reports on the account's tables every night, and ``NightlyTuning`` moves
``Feed``'s owned target values toward its recommendation, 50 to 90 %, 10 points a night at
most.
"""

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from constructs_pkg import (
    Capacity,
    FleetAdvisor,
    NightlyTuning,
    ProvisionedTable,
    ThrottleAwareScaler,
    acknowledge,
    apply_nag_packs,
)

from .compliance import AwsOwnedKeys

STRING = dynamodb.AttributeType.STRING
TAG_KEY, TAG_VALUE = "autoscaling_manager_enabled", "true"


class ThrottleAwareStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, **kwargs: object) -> None:
        super().__init__(scope, id, **kwargs)  # type: ignore[arg-type]
        cdk.Aspects.of(self).add(AwsOwnedKeys())
        feed = ProvisionedTable(
            self,
            "Feed",
            partition_key=dynamodb.Attribute(name="userId", type=STRING),
            read=Capacity(min_capacity=50, max_capacity=4_000),
            write=Capacity(min_capacity=20, max_capacity=1_000),
        )
        feed.add_global_secondary_index(
            index_name="byTopic",
            partition_key=dynamodb.Attribute(name="topic", type=STRING),
            read=Capacity(min_capacity=20, max_capacity=1_000),
            write=Capacity(min_capacity=20, max_capacity=1_000),
        )
        clicks = dynamodb.Table(
            self,
            "Clicks",
            partition_key=dynamodb.Attribute(name="clickId", type=STRING),
            billing_mode=dynamodb.BillingMode.PROVISIONED,
            read_capacity=10,
            write_capacity=100,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=True,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        cdk.Tags.of(clicks).add(TAG_KEY, TAG_VALUE)
        cdk.Tags.of(clicks).add("ddb-capacity:max", "2000")
        accounts = ProvisionedTable(
            self,
            "Accounts",
            partition_key=dynamodb.Attribute(name="accountId", type=STRING),
            read=Capacity(min_capacity=5, max_capacity=500),
            write=Capacity(min_capacity=5, max_capacity=100),
        )
        # own_target: while a plan is in force, Feed's target tracking aims at the plan's aim
        # sharded: a tick that finds more than 1,000 tagged tables sends them in batches
        scaler = ThrottleAwareScaler(
            self, "Scaler", tag_key=TAG_KEY, tag_value=TAG_VALUE, own_target=True, sharded=True
        )
        feed.enable_throttle_aware_scaling(scaler)
        # each night, after the advisor's report, Feed's target values move toward it
        NightlyTuning(
            self,
            "Tuning",
            advisor=FleetAdvisor(self, "Advisor"),
            scaler=scaler,
            allowed_targets=range(50, 91, 5),
            max_step=10,
        )

        for pack in ("HIPAA.Security", "NIST.800.53.R5", "PCI.DSS.321"):
            acknowledge(
                clicks,
                f"{pack}-DynamoDBAutoScalingEnabled",
                "The throttle-aware scaler manages this table's capacity (it carries "
                "the scaler's discovery tag), raising at once when it is throttled.",
            )
        for table in (feed.table, clicks, accounts.table):
            for pack in ("HIPAA.Security", "NIST.800.53.R5"):
                acknowledge(
                    table,
                    f"{pack}-DynamoDBInBackupPlan",
                    "Point-in-time recovery (on) gives 35 days of continuous backups; "
                    "the account's AWS Backup plan selects tables by tag, outside this "
                    "app.",
                )
        for tagged in (feed, clicks, accounts):
            cdk.Tags.of(tagged).add("app", "feed")
        cdk.CfnOutput(self, "ScalerFunctionName", value=scaler.function.function_name)


if __name__ == "__main__":
    app = cdk.App()
    apply_nag_packs(app)
    ThrottleAwareStack(app, "ThrottleAware")
    app.synth()
