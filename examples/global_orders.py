"""A global table's launch day: an orders table in two Regions (``TableV2``, provisioned,
auto scaled in each replica), ready for a launch every weekday morning Paris time, and
for the European morning reads in eu-west-1 alone, and for the day's reads of its index.

Write capacity is one setting of every replica, so the launch window raises the write
minimum everywhere; the morning reads are a read window of one replica. Each window raises
the minimum before it and restores it after (a raise alone would keep the minimum up for
good). The high-water
marks are the table's warm throughput, the same in every replica. The table keeps its own
minimum, maximum and target value: the schedules move the minimum between them.

Each Region's throttle-aware scaler manages its own replica: the table's stack holds
us-east-1's, a stack in eu-west-1 holds eu-west-1's. Each reads its replica's throttles and
raises its read minimum alone; writes are decided on every replica's writes, so both
scalers raise the write minimum together.
"""

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from constructs_pkg import (
    EVERY_DAY,
    GlobalTableCapacity,
    HighWaterMark,
    ThrottleAwareScaler,
    apply_nag_packs,
)


class GlobalOrdersStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, **kwargs: object) -> None:
        super().__init__(scope, id, **kwargs)  # type: ignore[arg-type]
        orders = dynamodb.TableV2(
            self,
            "Orders",
            table_name="orders",  # named: the other Region's stack finds its replica by name
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            billing=dynamodb.Billing.provisioned(
                read_capacity=dynamodb.Capacity.autoscaled(min_capacity=5, max_capacity=100),
                write_capacity=dynamodb.Capacity.autoscaled(min_capacity=5, max_capacity=50),
            ),
            global_secondary_indexes=[
                dynamodb.GlobalSecondaryIndexPropsV2(
                    index_name="byCustomer",
                    partition_key=dynamodb.Attribute(
                        name="customer", type=dynamodb.AttributeType.STRING
                    ),
                )
            ],
            replicas=[
                dynamodb.ReplicaTableProps(
                    region="eu-west-1",
                    read_capacity=dynamodb.Capacity.autoscaled(min_capacity=10, max_capacity=200),
                )
            ],
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
        )
        self.capacity = capacity = GlobalTableCapacity(
            self,
            "OrdersCapacity",
            table=orders,
            high_water_mark=HighWaterMark(write=2_000),
            index_high_water_marks={"byCustomer": HighWaterMark(read=500)},
        )
        capacity.add_capacity_window(  # every replica: writes are one setting
            "launch",
            dimension="write",
            capacity=40,
            start="09:00",
            duration=Duration.hours(2),
            time_zone="Europe/Paris",
        )
        capacity.add_capacity_window(  # eu-west-1's replica alone, raised then restored
            "eu-morning",
            dimension="read",
            capacity=150,
            start="06:00",
            duration=Duration.hours(4),
            week_days=EVERY_DAY,
            region="eu-west-1",
        )
        capacity.add_capacity_window(  # the GSI's reads in every replica
            "index-reads",
            dimension="read",
            capacity=20,
            start="07:00",
            duration=Duration.hours(12),
            week_days=EVERY_DAY,
            index_name="byCustomer",
        )
        # this stack's Region's replica (us-east-1)
        self.scaler = ThrottleAwareScaler(self, "Scaler", tables=[capacity])


class GlobalOrdersReplicaStack(cdk.Stack):
    """The scaler of the replica in this stack's Region (eu-west-1)."""

    def __init__(
        self, scope: Construct, id: str, capacity: GlobalTableCapacity, **kwargs: object
    ) -> None:
        super().__init__(scope, id, **kwargs)  # type: ignore[arg-type]
        self.scaler = ThrottleAwareScaler(self, "Scaler", tables=[capacity.replica(self)])


if __name__ == "__main__":
    app = cdk.App()
    apply_nag_packs(app)
    primary = GlobalOrdersStack(app, "GlobalOrders", env=cdk.Environment(region="us-east-1"))
    replica = GlobalOrdersReplicaStack(
        app, "GlobalOrdersEu", primary.capacity, env=cdk.Environment(region="eu-west-1")
    )
    replica.add_stack_dependency(primary)  # the table, and its replica's tagged targets, first
    app.synth()
