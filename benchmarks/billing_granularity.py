"""The two billing bases, and tune against reserve, measured in one run.

Each policy runs once on a trace (the default model) and its provisioned cost is billed both
ways `simulator.billing` knows (``hourly-max``: each clock hour at its highest level, the
default; ``per-minute``: unit-minutes at the unit-hour price over 60), with the change, and the
policies ranked by each. On-demand is billed by request either way.

Then the check every command's figures rest on: for each policy, `tune`'s monthly figure (its
candidate scored from the trace's middle, one model setting, scaled to a month as
``tune --score-from`` scales it) against `reserve`'s (the same policy's hours on the same
minutes, `reserve_sizing.hourly`, with no reservation, scaled to a month as ``reserve``
scales it). The goal: within 0.5 % for every policy.

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

from ddb_capacity_tools import reserve
from ddb_capacity_tools.reserve_sizing import fleet_bill
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, simulate
from ddb_capacity_tools.simulator.billing import BASES
from ddb_capacity_tools.simulator.candidates import MONTH_HOURS, MONTH_MINUTES, scaled
from ddb_capacity_tools.simulator.scenarios import diurnal
from ddb_capacity_tools.simulator.trace import Trace, read_csv
from ddb_capacity_tools.simulator.tune_runs import place

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


GOAL_PERCENT = 0.5
"""tune's and reserve's monthly figures for a policy agree within this."""


def bills(trace: Trace, policies: Sequence[str], prices: Prices) -> list[tuple[str, float, float]]:
    """Each policy's cost over ``trace``, by the minute and by each clock hour's highest
    level."""
    costs: dict[str, dict[str, float]] = {}
    for basis in BASES:
        ran = simulate(
            trace, [parse(p) for p in policies], ModelParams(billing=basis), prices, progress=None
        )
        costs[basis] = {p: sum(r.cost_usd for r in ran if r.policy == p) for p in policies}
    return [(p, costs["per-minute"][p], costs["hourly-max"][p]) for p in policies]


def tune_and_reserve(
    trace: Trace, policies: Sequence[str], prices: Prices
) -> list[tuple[str, float, float]]:
    """Per policy, (tune's monthly figure, reserve's) on the minutes from the trace's middle."""
    split = trace.minutes // 2
    params = ModelParams()
    tuned = place(trace, list(policies), [params], prices, score_from=split)
    factor = MONTH_MINUTES / (trace.minutes - split)
    tune_month = {c.policy: scaled(c, factor).cost_usd.median for c in tuned}
    out = []
    for policy in policies:
        setup = reserve.Setup(current=policy, policy=policy, params=params, prices=prices)
        hours = reserve.plan_table(trace, split, setup).listed.score
        assert hours is not None  # scored: split is inside the trace
        month = fleet_bill(hours, {}, None, prices) * MONTH_HOURS / hours.hours
        out.append((policy, tune_month[policy], month))
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
    prices = Prices()
    rows = bills(trace, policies, prices)
    print(f"{trace.name}: {trace.minutes:,} minutes, provisioned capacity billed two ways")
    print(f"{'policy':22} {'per-minute':>12} {'hourly-max':>12} {'change':>8}")
    for policy, minute, hour in rows:
        change = 100 * (hour / minute - 1) if minute else 0.0
        print(f"{policy:22} {minute:12.2f} {hour:12.2f} {change:+7.1f}%")
    for label, column in (("per-minute", 1), ("hourly-max", 2)):
        ranked = [r[0] for r in sorted(rows, key=lambda r: r[column])]
        print(f"cheapest first, {label}: {', '.join(ranked)}")
    checked = [p for p in policies if p not in ("oracle", "bound")]
    print(f"\ntune against reserve, a month from the minutes after {trace.minutes // 2:,}:")
    print(f"{'policy':22} {'tune':>12} {'reserve':>12} {'diff':>8}")
    worst = 0.0
    for policy, tuned, reserved in tune_and_reserve(trace, checked, prices):
        diff = 100 * (reserved / tuned - 1) if tuned else 0.0
        worst = max(worst, abs(diff))
        print(f"{policy:22} {tuned:12.2f} {reserved:12.2f} {diff:+7.2f}%")
    held = "met" if worst <= GOAL_PERCENT else "missed"
    print(f"largest difference {worst:.2f}% (goal {GOAL_PERCENT}%: {held})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
