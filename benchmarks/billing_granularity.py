"""What billing provisioned capacity by the hour would change, measured in one run.

The simulator bills provisioned capacity by the minute (`simulator.run`: unit-minutes at the
unit-hour price over 60); `reserve` sizes a reservation by each clock hour's highest level
(`reserve_sizing.hourly`). Each policy runs once on a trace; its provisioned cost is printed
both ways (the same run, billed again by `reserve_sizing.hourly`: each clock hour at its
highest level, a partial hour at the trace's edge by its share), with the change, and the
policies ranked by each. On-demand is billed by request either way.

The trace is a CSV file as ``simulate`` reads it (``--trace``; the guides' figures are from
``tweets-ibm.csv`` of the shared traces, read in place: their licence forbids copying them),
or, with ``--quick`` (for the test suite), the built-in ``diurnal`` scenario cut to two days
and three policies.

Usage:
    .venv/bin/python -m benchmarks.billing_granularity --trace ../shared/traces/tweets-ibm.csv
    .venv/bin/python -m benchmarks.billing_granularity --quick
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ddb_capacity_tools.reserve_sizing import Hours, hourly
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, simulate
from ddb_capacity_tools.simulator.run import DimensionResult
from ddb_capacity_tools.simulator.scenarios import diurnal
from ddb_capacity_tools.simulator.trace import Trace, read_csv

POLICIES: tuple[str, ...] = (
    "stock:30",
    "stock:50",
    "stock:70",
    "stock:90",
    "autopilot:70",
    "autopilot+stock:70",
    "autopilot+stock:90",
    "throttle-aware",
    "on-demand",
    "oracle",
)
QUICK: tuple[str, ...] = ("stock:70", "autopilot:70", "on-demand")


def hour_bill(hours: Hours, prices: Prices) -> float:
    """Dollars for ``hours``: each hour's units at the unit-hour price, by its share of the
    hour, and what was billed outside provisioned capacity."""
    read = sum(u * w for u, w in zip(hours.read, hours.weights, strict=True))
    write = sum(u * w for u, w in zip(hours.write, hours.weights, strict=True))
    return read * prices.rcu_hour + write * prices.wcu_hour + hours.other_usd


def bills(trace: Trace, policies: Sequence[str], prices: Prices) -> list[tuple[str, float, float]]:
    """Each policy's cost over ``trace``, by the minute and by the hour."""
    ran: list[DimensionResult] = simulate(
        trace, [parse(p) for p in policies], ModelParams(), prices, progress=None
    )
    out = []
    for policy in policies:
        mine = [r for r in ran if r.policy == policy]
        by_minute = sum(r.cost_usd for r in mine)
        by_hour = (
            by_minute
            if policy == "on-demand"
            else hour_bill(hourly(mine, trace, 0, trace.minutes, prices), prices)
        )
        out.append((policy, by_minute, by_hour))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", help="a trace CSV file, as simulate reads it")
    parser.add_argument("--quick", action="store_true", help="a built-in scenario, 2 days")
    args = parser.parse_args(argv)
    if args.quick:
        trace, policies = diurnal(1, days=2), QUICK
    elif args.trace:
        trace, policies = read_csv(args.trace), POLICIES
    else:
        parser.error("give --trace FILE or --quick")
    rows = bills(trace, policies, Prices())
    print(f"{trace.name}: {trace.minutes:,} minutes, provisioned capacity billed two ways")
    print(f"{'policy':22} {'by the minute':>14} {'by the hour':>12} {'change':>8}")
    for policy, minute, hour in rows:
        change = 100 * (hour / minute - 1) if minute else 0.0
        print(f"{policy:22} {minute:14.2f} {hour:12.2f} {change:+7.1f}%")
    for label, column in (("by the minute", 1), ("by the hour", 2)):
        ranked = [r[0] for r in sorted(rows, key=lambda r: r[column])]
        print(f"cheapest first, {label}: {', '.join(ranked)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
