"""The default policy set over 30 days of noisy diurnal traffic, in one process: wall and CPU
time per policy and in all, against the 3 s goal, measured in one run, and how much of it
is the run-time core's decision code (``plan_table``, ``apply_plans``, ``plan_floors``,
``forecast_due``: what the scaler Lambda itself runs, called by the simulator's scaler).

The trace is made here, seeded, so every run replays the same minutes: a daily swing
(reads 1,500 -> 19,500 units/s, writes a quarter of that, peaking at 20:00 UTC) times
lognormal per-minute noise (sigma 0.25, as the minute-to-minute spread of the real
traces in ``../shared/traces/``), plus short bursts of 2 to 10 minutes at 2 to 4 times the
level, 4 a day on average at random minutes. It has no schedule, as a CSV trace has none,
so the default set is ``DEFAULT_POLICIES`` (``scheduled`` does not join). Demand is capped
at 40,000 units/s (the table quota).

Usage:
    .venv/bin/python -m benchmarks.simulate_noisy_30_days [--days 30] [--seed 1]
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import time
from collections.abc import Callable
from typing import Any

from ddb_capacity_tools.simulator import ModelParams, Prices, parse, policies, run_policy
from ddb_capacity_tools.simulator.run import DEFAULT_POLICIES
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace

GOAL_SECONDS = 3.0
NOISE_SIGMA = 0.25
BURSTS_PER_DAY = 4
CAP = 40_000.0
#: The run-time core's functions the simulated scaler calls, timed where it calls them.
CORE = ("plan_table", "apply_plans", "plan_floors", "forecast_due")


def _shape(minute_of_day: int) -> float:
    """0 overnight, 1 at 20:00 UTC (the diurnal scenario's swing)."""
    hour = minute_of_day / 60
    return ((1 + math.cos(2 * math.pi * (hour - 20) / 24)) / 2) ** 4


def _bursts(rng: random.Random, minutes: int) -> list[float]:
    """Per minute, the factor bursts put on demand (1 outside them)."""
    factor = [1.0] * minutes
    for _ in range(BURSTS_PER_DAY * minutes // 1440):
        start = rng.randrange(minutes)
        level = rng.uniform(2.0, 4.0)
        for m in range(start, min(minutes, start + rng.randint(2, 10))):
            factor[m] = max(factor[m], level)
    return factor


def noisy_diurnal(seed: int = 1, days: int = 30) -> Trace:
    """``days`` of the diurnal swing with lognormal noise and bursts (seeded)."""
    rng = random.Random(seed)  # noqa: S311 (a reproducible trace, not a secret)
    minutes = days * 1440
    burst = _bursts(rng, minutes)
    reads, writes = [], []
    for m in range(minutes):
        s = _shape(m % 1440)
        reads.append(min(CAP, (1_500 + 18_000 * s) * rng.lognormvariate(0, NOISE_SIGMA) * burst[m]))
        writes.append(min(CAP, (300 + 4_500 * s) * rng.lognormvariate(0, NOISE_SIGMA) * burst[m]))
    return Trace(
        "noisy-diurnal",
        START,
        {(None, "read"): reads, (None, "write"): writes},
        notes=f"{days} days; the diurnal swing x lognormal noise (sigma {NOISE_SIGMA}) and "
        f"{BURSTS_PER_DAY} bursts a day of 2-10 minutes at 2-4x",
    )


def _time_core() -> list[float]:
    """Wrap the core functions in the simulator's namespace; the list returned holds the
    seconds spent in them so far."""
    spent = [0.0]

    def timed(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - started

        return run

    for name in CORE:
        setattr(policies, name, timed(getattr(policies, name)))
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = time.perf_counter()
    trace = noisy_diurnal(args.seed, args.days)
    built = time.perf_counter() - started
    print(
        f"trace: {trace.name} (seed {args.seed}), {args.days} days, {trace.minutes:,} minutes "
        f"x {len(trace.demand)} dimensions (built in {built:.2f} s, not counted)\n"
    )
    print(
        f"{'policy':<22}{'wall s':>8}{'CPU s':>8}{'core s':>8}{'throttled min':>15}{'cost $':>11}"
    )
    params, prices = ModelParams().validate(), Prices()
    core = _time_core()
    wall = cpu = 0.0
    for name in DEFAULT_POLICIES:
        w0, c0, k0 = time.perf_counter(), time.process_time(), core[0]
        results = run_policy(parse(name), trace, params, prices)
        w, c, k = time.perf_counter() - w0, time.process_time() - c0, core[0] - k0
        wall, cpu = wall + w, cpu + c
        throttled = sum(r.throttled_minutes for r in results)
        cost = sum(r.cost_usd for r in results)
        print(f"{name:<22}{w:>8.2f}{c:>8.2f}{k:>8.2f}{throttled:>15,}{cost:>11,.2f}")
    verdict = "met" if wall <= GOAL_SECONDS else f"missed by {wall - GOAL_SECONDS:.2f} s"
    print(
        f"\nall {len(DEFAULT_POLICIES)} policies: {wall:.2f} s wall, {cpu:.2f} s CPU, "
        f"{core[0]:.2f} s of it in the run-time core; goal {GOAL_SECONDS:.0f} s wall: {verdict}"
    )


if __name__ == "__main__":
    main()
