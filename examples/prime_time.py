"""A daily prime-time swing (as in "Falling In And Out Of Love with DynamoDB, Part II"):
reads step up through the evening and back down
overnight, New York time.

The article stepped capacity up in 20 % increments with a cron; here each step raises the
auto scaling minimum, so auto scaling provisions ahead of the audience and still follows
it above the step. Three steps down a night spend three of the day's decreases, well
inside DynamoDB's quota (4, then 1 an hour, 27 a day); a schedule that needed more would
get a build-time warning.
"""

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from constructs_pkg import Capacity, ProvisionedTable, ScheduleEntry, acknowledge, apply_nag_packs

from .compliance import AwsOwnedKeys

ZONE = "America/New_York"
STEPS = [  # (name, cron, read minimum)
    ("warm-up", "cron(0 17 ? * * *)", 1_200),
    ("pre-show", "cron(0 18 ? * * *)", 1_800),
    ("prime-time", "cron(0 19 ? * * *)", 2_600),
    ("late-show", "cron(0 23 ? * * *)", 1_200),
    ("overnight", "cron(0 1 ? * * *)", 400),
    ("early", "cron(0 4 ? * * *)", 200),
]


class PrimeTimeStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, **kwargs: object) -> None:
        super().__init__(scope, id, **kwargs)  # type: ignore[arg-type]
        cdk.Aspects.of(self).add(AwsOwnedKeys())
        cdk.Tags.of(self).add("app", "guide")
        guide = ProvisionedTable(
            self,
            "Guide",
            partition_key=dynamodb.Attribute(name="channel", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="slot", type=dynamodb.AttributeType.STRING),
            read=Capacity(min_capacity=200, max_capacity=5_000, high_water_mark=5_000),
            write=Capacity(min_capacity=10, max_capacity=200),
        )
        for name, cron, minimum in STEPS:
            guide.add_schedule(
                ScheduleEntry(name=name, schedule=cron, min_capacity=minimum, time_zone=ZONE),
                dimension="read",
            )
        for pack in ("HIPAA.Security", "NIST.800.53.R5"):
            acknowledge(
                guide.table,
                f"{pack}-DynamoDBInBackupPlan",
                "The programme guide is published from the scheduling system, which keeps "
                "its history; point-in-time recovery (on) covers the table itself.",
            )


if __name__ == "__main__":
    app = cdk.App()
    apply_nag_packs(app)
    PrimeTimeStack(app, "PrimeTime")
    app.synth()
