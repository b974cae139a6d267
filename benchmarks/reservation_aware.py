"""Reservation-aware scaling against the same policies unaware of the reservation, measured in
one run.

DynamoDB reserved capacity is paid whether used or not, so provisioned capacity at or below it
costs nothing more: a policy that scales in below it saves nothing and adds risk. Each policy
(``stock:70``, ``stock:90``, ``autopilot+stock:70``, ``autopilot``) runs as it is and with
``+reserved`` (never lowering a dimension's total below the reservation), both charged by the
simulator's reservation cost rule (`ddb_capacity_tools.simulator.run.charge_reserved`: only
capacity above the reservation is charged; its fee is sunk), on:

- the built-in scenarios;
- the traces in ``../shared/traces/`` when that folder exists (read in place: their licence
  forbids copying them), 14 days a minute.

The reservation is sized per trace at two levels, per dimension: the median and the 10th
percentile of ``stock:70``'s (unaware) provisioned total, each rounded down to a hundred (a
level under 100 is no reservation, and is left out).

The claim: the reservation-aware policy refuses no more requests than the same policy unaware
of it, at no higher cost. Each comparison prints ``holds`` or ``DOES NOT HOLD`` with the first
minute it fails and what each policy had provisioned then.

``--quick`` (for the test suite, seconds): two scenarios cut to two days, two policies, the
median level only, no real traces.

Usage:
    .venv/bin/python -m benchmarks.reservation_aware [--traces DIR] [--quick] [--processes 2]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ddb_capacity_runtime.core.names import DIMENSIONS
from ddb_capacity_runtime.core.reservation import Reservation
from ddb_capacity_tools.simulator import SCENARIOS, ModelParams, Prices, parse, scenario, simulate
from ddb_capacity_tools.simulator.run import DimensionResult, charge_reserved
from ddb_capacity_tools.simulator.trace import Trace, cut, read_csv

POLICIES = ("stock:70", "stock:90", "autopilot+stock:70", "autopilot")
QUICK_POLICIES = ("stock:70", "autopilot")
DAYS = 14
QUICK_SCENARIOS = ("diurnal", "nightly-batch")
TOLERANCE = 1e-9
"""Relative slack for sums of floats compared."""


@dataclass(frozen=True)
class Row:
    """One policy, unaware and aware, under one reservation."""

    trace: str
    level: str
    policy: str
    refused: tuple[float, float]
    cost: tuple[float, float]
    why: str | None
    """None: the claim holds; else where it fails"""


def traces(folder: Path, quick: bool) -> list[Trace]:
    """The built-in scenarios (``quick``: two of them, two days) and the real traces."""
    names = QUICK_SCENARIOS if quick else tuple(SCENARIOS)
    out = [cut(scenario(n), 2 * 1440) if quick else scenario(n) for n in names]
    if quick:
        print("real traces: not read in --quick")
    elif not folder.is_dir() or not any(folder.glob("*.csv")):
        print(f"real traces: none ({folder} does not exist or holds no CSV)")
    else:
        for path in sorted(folder.glob("*.csv")):
            out.append(replace(cut(read_csv(path), DAYS * 1440), name=path.stem))
    return out


def levels(results: Sequence[DimensionResult], quick: bool) -> dict[str, ModelParams]:
    """The reservations to measure at, from an unaware run's provisioned totals: the median
    and the 10th percentile, each rounded down to a hundred (0: left out)."""
    out: dict[str, ModelParams] = {}
    cuts = {"median": 0.5} if quick else {"median": 0.5, "p10": 0.1}
    for label, q in cuts.items():
        units = {}
        for dim in DIMENSIONS:
            lists = [r.recorded.provisioned for r in results if r.key[1] == dim]
            totals = sorted(sum(m) for m in zip(*lists, strict=True)) if lists else [0]
            units[dim] = int(totals[int(q * (len(totals) - 1))]) // 100 * 100
        if any(units.values()):
            out[f"{label} R{units['read']}/W{units['write']}"] = ModelParams(
                reserved_read_units=units["read"], reserved_write_units=units["write"]
            )
    return out


def _why(
    unaware: list[DimensionResult],
    aware: list[DimensionResult],
    reserved: Reservation,
    refused: tuple[float, float],
) -> str:
    """Why the claim fails: where the aware run refused more (its first such minute and both
    capacities then), or why it cost more."""
    if refused[1] > refused[0]:
        for u, a in zip(unaware, aware, strict=True):
            pairs = zip(u.recorded.throttled, a.recorded.throttled, strict=True)
            for t, (x, y) in enumerate(pairs):
                if y > x + 1e-9:
                    mine, theirs = a.recorded.provisioned[t], u.recorded.provisioned[t]
                    because = (
                        "the unaware policy had raised above the reservation just before; "
                        "the aware one, high enough, had not"
                        if mine < theirs
                        else "as much capacity, less burst left: its bucket went earlier"
                    )
                    return (
                        f"refuses more: {u.key[1]} minute {t}: aware {mine} units, "
                        f"unaware {theirs} ({because})"
                    )
    if refused[1] < refused[0]:
        return (
            f"costs more while refusing {refused[0] - refused[1]:,.0f} fewer requests: serving "
            "them, it was sized on a larger consumption (the unaware one's throttles kept its "
            "capacity, and its bill, lower)"
        )
    decreases = sum(r.decreases for r in aware), sum(r.decreases for r in unaware)
    return (
        f"costs more, refusing as much: decreases aware {decreases[0]}, unaware "
        f"{decreases[1]} (a cut decrease spends one of the day's for a smaller saving, and "
        f"later ones move; reservation R{reserved.read_units}/W{reserved.write_units})"
    )


def compare(trace: Trace, policies: Sequence[str], processes: int) -> list[Row]:
    """Every policy unaware and aware at each level of ``trace``."""
    specs = [parse(p) for p in policies]
    unaware = simulate(trace, specs, progress=None, workers=processes)
    rows = []
    for label, params in levels([r for r in unaware if r.policy == "stock:70"], False).items():
        aware = simulate(
            trace,
            [parse(p + "+reserved") for p in policies],
            params,
            progress=None,
            workers=processes,
        )
        for p in policies:
            u = [replace(r) for r in unaware if r.policy == p]
            u = charge_reserved(u, params, Prices(), trace)
            a = [r for r in aware if r.policy == p + "+reserved"]
            refused = (sum(r.throttled_requests for r in u), sum(r.throttled_requests for r in a))
            cost = (sum(r.cost_usd for r in u), sum(r.cost_usd for r in a))
            holds = (
                refused[1] <= refused[0] * (1 + TOLERANCE) + 1e-6
                and cost[1] <= cost[0] * (1 + TOLERANCE) + 1e-9
            )
            rows.append(
                Row(
                    trace.name,
                    label,
                    p,
                    refused,
                    cost,
                    None if holds else _why(u, a, params.reservation, refused),
                )
            )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", default="../shared/traces", help="the real traces' folder")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args(argv)
    policies = QUICK_POLICIES if args.quick else POLICIES
    header = f"{'trace':<24} {'reservation':<22} {'policy':<20} "
    print(
        header + f"{'refused unaware':>16} {'aware':>14} {'$ unaware':>11} {'$ aware':>11}  claim"
    )
    failed = 0
    refused_more = 0
    for trace in traces(Path(args.traces), args.quick):
        for row in compare(trace, policies, args.processes):
            claim = "holds" if row.why is None else f"DOES NOT HOLD: {row.why}"
            failed += row.why is not None
            refused_more += row.refused[1] > row.refused[0]
            print(
                f"{row.trace:<24} {row.level:<22} {row.policy:<20} {row.refused[0]:>16,.0f} "
                f"{row.refused[1]:>14,.0f} {row.cost[0]:>11.2f} {row.cost[1]:>11.2f}  {claim}"
            )
    print(
        f"claim holds in all but {failed} comparison(s); the aware policy refused more in "
        f"{refused_more} of them"
        if failed
        else "claim holds everywhere"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
