"""The default policy set over 30 days of noisy diurnal traffic, in one process: wall and CPU
time per policy and in all, against the 3 s goal, measured in one run.

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
import math
import random
import time

from ddb_capacity_tools.simulator import ModelParams, Prices, parse, run_policy
from ddb_capacity_tools.simulator.run import DEFAULT_POLICIES
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace

GOAL_SECONDS = 3.0
NOISE_SIGMA = 0.25
BURSTS_PER_DAY = 4
CAP = 40_000.0


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
    print(f"{'policy':<22}{'wall s':>8}{'CPU s':>8}{'throttled min':>15}{'cost $':>11}")
    params, prices = ModelParams().validate(), Prices()
    wall = cpu = 0.0
    for name in DEFAULT_POLICIES:
        w0, c0 = time.perf_counter(), time.process_time()
        results = run_policy(parse(name), trace, params, prices)
        w, c = time.perf_counter() - w0, time.process_time() - c0
        wall, cpu = wall + w, cpu + c
        throttled = sum(r.throttled_minutes for r in results)
        cost = sum(r.cost_usd for r in results)
        print(f"{name:<22}{w:>8.2f}{c:>8.2f}{throttled:>15,}{cost:>11,.2f}")
    verdict = "met" if wall <= GOAL_SECONDS else f"missed by {wall - GOAL_SECONDS:.2f} s"
    print(
        f"\nall {len(DEFAULT_POLICIES)} policies: {wall:.2f} s wall, {cpu:.2f} s CPU; "
        f"goal {GOAL_SECONDS:.0f} s wall: {verdict}"
    )


if __name__ == "__main__":
    main()
