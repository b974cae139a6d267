"""What the library adds to a stack and costs to run, against stock auto scaling, measured in
one run.

Synthesizes, in-process (the real aws-cdk-lib): a provisioned table with a GSI under stock
auto scaling (aws-cdk-lib's own ``auto_scale_*_capacity``, target 70 %); the README's quick
start (the same table as a ``ProvisionedTable`` and a ``ThrottleAwareScaler``) with the
default summary alarms and with the detailed ones; and the five-construct stack (that table,
a scaler owning its target, ``CapacityRequests`` with the stream fast path, ``FleetAdvisor``
and ``NightlyTuning``). Prints each one's resources, Lambda functions and alarms, what its
alarms cost a month ($0.10 each), and what the scaler's running cost model charges a table
without GSIs and with one, and a scaler once (`ddb_capacity_tools.simulator.scaler_cost`).

Usage:
    .venv/bin/python -m benchmarks.footprint
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import aws_cdk as cdk
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Template

from constructs_pkg import (
    Capacity,
    CapacityRequests,
    FastPath,
    FleetAdvisor,
    NightlyTuning,
    ProvisionedTable,
    ThrottleAwareScaler,
)
from constructs_pkg.common._alarm_summary import ALARMS_CONTEXT
from ddb_capacity_tools.simulator.prices import Prices
from ddb_capacity_tools.simulator.scaler_cost import monthly_fixed_cost, monthly_scaler_cost

STRING = dynamodb.AttributeType.STRING


def _stock(stack: cdk.Stack) -> None:
    table = dynamodb.Table(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="orderId", type=STRING),
        billing_mode=dynamodb.BillingMode.PROVISIONED,
        read_capacity=10,
        write_capacity=10,
    )
    table.add_global_secondary_index(
        index_name="byCustomer",
        partition_key=dynamodb.Attribute(name="customerId", type=STRING),
        read_capacity=5,
        write_capacity=5,
    )
    for scaling in (
        table.auto_scale_read_capacity(min_capacity=10, max_capacity=4_000),
        table.auto_scale_write_capacity(min_capacity=10, max_capacity=2_000),
        table.auto_scale_global_secondary_index_read_capacity(
            "byCustomer", min_capacity=5, max_capacity=1_000
        ),
        table.auto_scale_global_secondary_index_write_capacity(
            "byCustomer", min_capacity=5, max_capacity=2_000
        ),
    ):
        scaling.scale_on_utilization(target_utilization_percent=70)


def orders(stack: cdk.Stack, gsi: bool = True, name: str = "Orders") -> ProvisionedTable:
    """The README's quick-start table (reads pre-warmed), with its GSI unless ``gsi`` is
    False, and its stream for the fast path."""
    table = ProvisionedTable(
        stack,
        name,
        partition_key=dynamodb.Attribute(name="orderId", type=STRING),
        read=Capacity(min_capacity=10, max_capacity=4_000, high_water_mark=4_000),
        write=Capacity(min_capacity=10, max_capacity=2_000, target_utilization_percent=60),
        stream=dynamodb.StreamViewType.KEYS_ONLY,
    )
    if gsi:
        table.add_global_secondary_index(
            index_name="byCustomer",
            partition_key=dynamodb.Attribute(name="customerId", type=STRING),
            read=Capacity(min_capacity=5, max_capacity=1_000),
            write=Capacity(min_capacity=5, max_capacity=2_000),
        )
    return table


def quick_start(stack: cdk.Stack, gsi: bool = True) -> None:
    """The README's quick start in ``stack``: its table (with its GSI unless ``gsi`` is
    False) and a scaler."""
    orders(stack, gsi).enable_throttle_aware_scaling(ThrottleAwareScaler(stack, "Scaler"))


def five_constructs(stack: cdk.Stack) -> None:
    """The quick start's table, a scaler owning its target, capacity requests with the
    stream fast path, the fleet advisor and nightly tuning, in ``stack``."""
    table = orders(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", own_target=True)
    table.enable_throttle_aware_scaling(scaler)
    CapacityRequests(stack, "Requests", tables=[table], fast_path=FastPath(stream=True))
    NightlyTuning(
        stack,
        "Tuning",
        advisor=FleetAdvisor(stack, "Advisor"),
        scaler=scaler,
        allowed_targets=range(50, 91, 5),
    )


def measured(make: Callable[[cdk.Stack], None], style: str) -> Counter[str]:
    """The resource types of the stack ``make`` builds, in the alarm ``style``."""
    app = cdk.App()
    app.node.set_context(ALARMS_CONTEXT, style)
    stack = cdk.Stack(app, "Footprint", env=cdk.Environment(region="us-east-1"))
    make(stack)
    resources = Template.from_stack(stack).to_json()["Resources"].values()
    return Counter(r["Type"] for r in resources)


def main() -> None:
    alarm = Prices().alarm_month
    rows = [
        ("stock auto scaling, table + GSI", _stock, "summary"),
        ("quick start, summary alarms (default)", quick_start, "summary"),
        ("quick start, detailed alarms", quick_start, "detailed"),
        ("five constructs, summary alarms (default)", five_constructs, "summary"),
        ("five constructs, detailed alarms", five_constructs, "detailed"),
    ]
    print(f"{'stack':<44} {'resources':>9} {'functions':>9} {'alarms':>6} {'alarms $/mo':>11}")
    for name, make, style in rows:
        kinds = measured(make, style)
        alarms = kinds["AWS::CloudWatch::Alarm"]
        print(
            f"{name:<44} {sum(kinds.values()):>9} {kinds['AWS::Lambda::Function']:>9} "
            f"{alarms:>6} {alarms * alarm:>11.2f}"
        )
    print()
    print("the scaler's running cost a month (us-east-1 list prices, default tick):")
    for label, dims in (("a table without GSIs", 2), ("a table with one GSI", 4)):
        cost = monthly_scaler_cost(dims)
        print(
            f"  {label:<22} ${cost.total:.2f}  (metrics ${cost.metrics:.2f}, GetMetricData "
            f"${cost.reads:.2f}, alarms ${cost.alarms:.2f}, invocations ${cost.invocations:.2f})"
        )
    print(f"  {'once a scaler':<22} ${monthly_fixed_cost():.2f}")


if __name__ == "__main__":
    main()
