"""Do on-demand windows, declared or learned each day, pay where ``tune`` recommends them?
Measured in one run.

For each trace, ``tune`` as a user runs it (the ``plausible`` ensemble, fitted on the first
half, chosen on the second, figures a month) with the candidates ``autopilot:70``,
``autopilot+stock:70``, ``windows:70`` (``autopilot+stock:70`` with on-demand at the
hours of the day where on-demand cost less on the first half, the same every day) and
``hybrid:70`` (``autopilot+stock:70`` with on-demand in the hours each day learns from the 7
days before it, as ``learn_on_demand_windows`` deploys it), beside every stock target from 30 to
90 % and on-demand, which tune always tries. Printed per trace: what tune recommends; the
windows' hours, cost and refused units on the second half; the hybrid's; on-demand's; and
the best provisioned candidate's: the cheapest of the others within the same refusal limit
(the windows, the hybrid and on-demand left out; without the rule's last step, which may
take a simpler candidate costing a little more, so it can differ from the pick even where
the pick is provisioned).

The goal, printed with its verdict for each: wherever the windows (or the hybrid) are
recommended, they cost less than both on-demand and the best provisioned candidate, and
refuse no more than the rule's limit (equal refusals, as the rule counts them), on the half
they were not fitted on (the hybrid learns each day from the days before it only); and, more
strictly, where they also refuse no more than either of the two (medians).

Then, whether learning the hours anew each day would do better than declaring them once:
on the same base (``autopilot+stock:70``, the model's default setting, scored on the second
half), the windows learned once on the first half against the hours re-planned each day
from the 7 days before it (the simulator's hybrid plan), and on-demand.

The traces: each real trace of ``../shared/traces/`` (read in place: their licence forbids
copying them; 14 days a minute), the seeded noisy diurnal trace
(``simulate_noisy_30_days.noisy_diurnal``, 14 days), the nightly-batch scenario and a
daily spike (writes 60 x their level for 20 minutes at noon every day, 14 days).

Usage:
    .venv/bin/python -m benchmarks.declared_windows [--workers 2] [--traces DIR] [--only NAME]
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.simulate_noisy_30_days import noisy_diurnal
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, read_csv, scenario, simulate
from ddb_capacity_tools.simulator.candidates import ON_DEMAND, Candidate
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.hybrid import windows_of
from ddb_capacity_tools.simulator.policies import DEFAULT_TICK_MINUTES
from ddb_capacity_tools.simulator.run import DimensionResult, compose_hybrid, recovery_minutes
from ddb_capacity_tools.simulator.trace import Key, Trace
from ddb_capacity_tools.simulator.tune import choose, tune

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
WINDOWS = "windows:70"
HYBRID = "hybrid:70"
CANDIDATES = ("autopilot:70", "autopilot+stock:70", WINDOWS, HYBRID)


def daily_spike(days: int = 14) -> Trace:
    """Reads at 100/s; writes at 50/s, but 3,000/s from 12:00 to 12:20 UTC every day: the
    hours a declared window is made for."""
    writes = [3000.0 if 720 <= m % 1440 < 740 else 50.0 for m in range(days * 1440)]
    demand: dict[Key, list[float]] = {
        (None, "read"): [100.0] * len(writes),
        (None, "write"): writes,
    }
    return Trace("daily-spike", datetime(2026, 1, 5, tzinfo=UTC), demand)


def measure(trace: Trace, workers: int) -> dict[str, object]:
    """tune's answer on ``trace``: the pick, the windows, the hybrid, on-demand, the best
    provisioned candidate, the rule's limit, each candidate's figures a month on the second
    half."""
    settings = settings_of("plausible", ModelParams(), trace)
    tuning = tune(trace, settings, CANDIDATES, workers=workers)
    by_name = {c.policy: c for c in tuning.candidates}
    switched = (WINDOWS, HYBRID, ON_DEMAND)
    provisioned = [c for c in tuning.candidates if c.policy not in switched]
    best_provisioned, _ = choose(provisioned, tuning.rule, tuning.requested)
    return {
        "pick": tuning.recommended.policy,
        "windows": by_name[WINDOWS],
        "hybrid": by_name[HYBRID],
        "on_demand": by_name[ON_DEMAND],
        "provisioned": best_provisioned,
        "limit": tuning.rule.limit(tuning.best_stock, tuning.requested),
    }


def learned_against_declared(trace: Trace, workers: int) -> dict[str, tuple[float, float]]:
    """On ``autopilot+stock:70`` under the default setting, scored on the second half:
    (cost, refused units) of the windows declared once, the hours re-planned each day, and
    on-demand."""
    params, prices, split = ModelParams().validate(), Prices(), trace.minutes // 2
    policies = [parse("autopilot+stock:70"), parse(ON_DEMAND)]
    results = simulate(trace, policies, params, prices, None, workers=workers, score_from=split)
    base = [r for r in results if r.policy == "autopilot+stock:70"]
    od = [r for r in results if r.policy == ON_DEMAND]
    recovery = recovery_minutes(params, DEFAULT_TICK_MINUTES)

    def composed(name: str) -> list[DimensionResult]:
        return compose_hybrid(
            parse(name), base, od, trace, prices, split, basis=params.billing, recovery=recovery
        )

    return {
        name: (sum(r.cost_usd for r in rs), sum(r.throttled_requests for r in rs))
        for name, rs in (
            ("declared", composed(WINDOWS)),
            ("daily", composed("hybrid:70")),
            (ON_DEMAND, od),
        )
    }


def _cell(c: Candidate) -> str:
    return f"${c.cost:,.2f}, {c.refused / 1e6:,.2f} M"


def goal_met(m: dict[str, object], name: str = WINDOWS, strict: bool = False) -> bool | None:
    """Whether the goal holds where ``name`` (the windows, or the hybrid) is recommended;
    None where it is not. ``strict``: refusing no more than on-demand and the best provisioned
    candidate themselves (medians), rather than no more than the rule's limit."""
    if m["pick"] != name:
        return None
    w = m["windows" if name == WINDOWS else "hybrid"]
    od, p = m["on_demand"], m["provisioned"]
    assert isinstance(w, Candidate) and isinstance(od, Candidate) and isinstance(p, Candidate)
    limit = m["limit"]
    assert isinstance(limit, float)
    most = min(od.refused, p.refused) if strict else limit
    return w.cost < od.cost and w.cost < p.cost and w.refused <= most


def tuned_table(traces: list[Trace], workers: int) -> dict[str, tuple[int, int, int]]:
    """Print tune's answer on each of ``traces`` (`measure`) as a table; per candidate of
    the goal (the windows, the hybrid), (the traces where the goal held, those where it held
    refusing no more than on-demand and the best provisioned candidate, those where it was
    recommended)."""
    print(
        f"\n| trace | recommended | {WINDOWS} (hours, UTC) | {HYBRID} | on-demand | "
        "best provisioned | windows vs on-demand / provisioned | "
        "hybrid vs on-demand / provisioned |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    counts = {WINDOWS: [0, 0, 0], HYBRID: [0, 0, 0]}
    for trace in traces:
        m = measure(trace, workers)
        w, h, od, p = m["windows"], m["hybrid"], m["on_demand"], m["provisioned"]
        assert isinstance(w, Candidate) and isinstance(h, Candidate)
        assert isinstance(od, Candidate) and isinstance(p, Candidate)
        hours = ", ".join(f"{at:02d}:00+{n}h" for at, n in windows_of(w.hours)) or "none"
        for name, count in counts.items():
            met = goal_met(m, name)
            count[0] += bool(met)
            count[1] += bool(goal_met(m, name, strict=True))
            count[2] += met is not None
        print(
            f"| {trace.name.removesuffix('.csv')} | {m['pick']} | {_cell(w)} ({hours}) | "
            f"{_cell(h)} | {_cell(od)} | {p.policy}: {_cell(p)} | "
            f"{w.cost / od.cost:.3f}x / {w.cost / p.cost:.3f}x | "
            f"{h.cost / od.cost:.3f}x / {h.cost / p.cost:.3f}x |"
        )
    return {
        name: (held, strict, recommended) for name, (held, strict, recommended) in counts.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--traces", type=Path, default=SHARED)
    parser.add_argument("--only", help="one trace, by name (without .csv)")
    args = parser.parse_args()
    started = time.perf_counter()
    real = [read_csv(p) for p in sorted(args.traces.glob("*.csv"))] if args.traces.is_dir() else []
    traces = [*real, noisy_diurnal(seed=1, days=14), scenario("nightly-batch"), daily_spike()]
    if args.only:
        traces = [t for t in traces if t.name.removesuffix(".csv") == args.only]
    print(
        f"on-demand windows: {len(real)} real traces from {args.traces} and 3 others; tune, "
        "plausible ensemble, fitted on the first half, figures a month on the second "
        "(medians; cost, refused units)"
    )
    goals = tuned_table(traces, args.workers)
    print(
        "\nlearned each day against declared once (autopilot+stock:70, default setting, second "
        "half; cost, refused units):\n\n| trace | declared once | re-planned each day | "
        "on-demand | each day / once |\n| --- | --- | --- | --- | --- |"
    )
    for trace in traces:
        f = learned_against_declared(trace, args.workers)
        cells = " | ".join(f"${c:,.2f}, {r / 1e6:,.2f} M" for c, r in f.values())
        ratio = f["daily"][0] / f["declared"][0]
        print(f"| {trace.name.removesuffix('.csv')} | {cells} | {ratio:.3f}x |")
    print()
    for name, (held, strict, recommended) in goals.items():
        print(
            f"goal: where {name} is recommended it costs less than on-demand and the best "
            f"provisioned candidate within the rule's refusal limit: held on {held} of "
            f"{recommended} trace(s) where it was recommended ({len(traces)} traces); "
            f"refusing no more than either of them, too: on {strict} of {recommended}"
        )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
