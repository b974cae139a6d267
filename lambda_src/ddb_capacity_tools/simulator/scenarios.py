"""Runs in: workstation (the `ddb-capacity` command).

Built-in traffic scenarios. Each is deterministic for a given seed."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from ..tool_errors import ScenarioError as ScenarioError
from .trace import Trace

START = datetime(2026, 1, 5, tzinfo=UTC)
"""A Monday; every scenario starts on it."""


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    build: Callable[[int], Trace]


def _rng(seed: int) -> random.Random:
    return random.Random(seed)  # noqa: S311 (jitter for a reproducible trace, not a secret)


def _spike(seed: int) -> Trace:
    rng = _rng(seed)
    quiet = [rng.uniform(4_000, 5_000) for _ in range(60)]
    spike = [rng.uniform(17_500, 18_500) for _ in range(60)]
    after = [rng.uniform(4_000, 5_000) for _ in range(60)]
    reads = [rng.uniform(900, 1_100) for _ in range(180)]
    start = START.replace(hour=12)
    return Trace(
        "spike",
        start,
        {(None, "read"): reads, (None, "write"): quiet + spike + after},
        schedule=[
            {
                "name": "before-spike",
                "schedule": "at(2026-01-05T12:58:00)",
                "dimension": "write",
                "min_capacity": 18_000,
            },
            {
                "name": "after-spike",
                "schedule": "at(2026-01-05T14:05:00)",
                "dimension": "write",
                "min_capacity": 1,
            },
        ],
        notes="writes jump from 4,000-5,000 to 18,000 WCU at 13:00 UTC for an hour",
    )


def _jump(name: str, seed: int, steps: list[tuple[int, float]], notes: str) -> Trace:
    """Writes at 4,000-5,000 WCU for an hour, then the ``steps`` (minute from the jump,
    level) each jittered by +-500, then quiet again; reads steady at about 1,000 RCU."""
    rng = _rng(seed)
    writes = [rng.uniform(4_000, 5_000) for _ in range(60)]
    for n, (start, level) in enumerate(steps[:-1]):
        end = steps[n + 1][0]
        writes += [rng.uniform(level - 500, level + 500) for _ in range(end - start)]
    writes += [rng.uniform(4_000, 5_000) for _ in range(60)]
    reads = [rng.uniform(900, 1_100) for _ in writes]
    return Trace(
        name,
        START.replace(hour=12),
        {(None, "read"): reads, (None, "write"): writes},
        notes=notes,
    )


def _spike_14000(seed: int) -> Trace:
    # the same bulk work paced to 14,000 WCU: 18,000 x 60 / 14,000 = 77 minutes
    return _jump(
        "spike-14000",
        seed,
        [(0, 14_000.0), (77, 0.0)],
        "writes jump from 4,000-5,000 to 14,000 WCU at 13:00 UTC for 77 minutes: the "
        "spike's work, self-throttled (the AWS spikes post, Figure 5)",
    )


def _slow_start(seed: int) -> Trace:
    return _jump(
        "slow-start",
        seed,
        [(0, 9_000.0), (5, 14_000.0), (11, 18_000.0), (60, 0.0)],
        "writes step from 4,000-5,000 to 9,000, 14,000 and 18,000 WCU over 11 minutes from "
        "13:00 UTC, then hold 18,000 to 14:00: the spike's work, slow-started (the AWS "
        "spikes post, Figure 6)",
    )


def _prime_time(hour: float) -> float:
    """0 overnight, 1 at 20:00 UTC."""
    return ((1 + math.cos(2 * math.pi * (hour - 20) / 24)) / 2) ** 4


def _diurnal(seed: int) -> Trace:
    return diurnal(seed, days=7)


def diurnal(seed: int, days: int) -> Trace:
    """The diurnal scenario over ``days`` days (the benchmark runs 30)."""
    rng = _rng(seed)
    reads, writes = [], []
    for m in range(days * 1440):
        s = _prime_time((m % 1440) / 60)
        reads.append((1_500 + 18_000 * s) * rng.uniform(0.95, 1.05))
        writes.append((300 + 4_500 * s) * rng.uniform(0.95, 1.05))
    return Trace(
        "diurnal",
        START,
        {(None, "read"): reads, (None, "write"): writes},
        schedule=[
            {
                "name": "prime-time-read",
                "schedule": "cron(0 17 * * ? *)",
                "dimension": "read",
                "min_capacity": 20_000,
            },
            {
                "name": "prime-time-write",
                "schedule": "cron(0 17 * * ? *)",
                "dimension": "write",
                "min_capacity": 5_000,
            },
            {
                "name": "night-read",
                "schedule": "cron(0 23 * * ? *)",
                "dimension": "read",
                "min_capacity": 1,
            },
            {
                "name": "night-write",
                "schedule": "cron(0 23 * * ? *)",
                "dimension": "write",
                "min_capacity": 1,
            },
        ],
        notes=f"{days} days; reads swing 1,500 -> 19,500 RCU and writes 300 -> 4,800 WCU, "
        "peaking at 20:00 UTC; the schedule holds prime-time minimums 17:00-23:00",
    )


def _nightly_batch(seed: int) -> Trace:
    return nightly_batch(seed, days=7)


def nightly_batch(seed: int, days: int) -> Trace:
    """The nightly-batch scenario over ``days`` days (the benchmarks run 14)."""
    rng = _rng(seed)
    reads, writes = [], []
    for m in range(days * 1440):
        minute_of_day = m % 1440
        batch = 120 <= minute_of_day < 240
        writes.append(rng.uniform(7_600, 8_400) if batch else rng.uniform(20, 80))
        reads.append(rng.uniform(1_900, 2_100))
    return Trace(
        "nightly-batch",
        START,
        {(None, "read"): reads, (None, "write"): writes},
        schedule=[
            {
                "name": "before-batch",
                "schedule": "cron(55 1 * * ? *)",
                "dimension": "write",
                "min_capacity": 8_500,
            },
            {
                "name": "after-batch",
                "schedule": "cron(5 4 * * ? *)",
                "dimension": "write",
                "min_capacity": 1,
            },
        ],
        notes=f"{days} days; writes 8,000 WCU from 02:00 to 04:00 UTC and almost none "
        "otherwise; reads steady at 2,000 RCU",
    )


def _flash_crowd(seed: int) -> Trace:
    rng = _rng(seed)
    reads, writes = [], []
    for m in range(6 * 60):
        factor = 10 if 180 <= m < 200 else 1
        reads.append(3_000 * factor * rng.uniform(0.95, 1.05))
        writes.append(1_000 * factor * rng.uniform(0.95, 1.05))
    return Trace(
        "flash-crowd",
        START.replace(hour=12),
        {(None, "read"): reads, (None, "write"): writes},
        notes="6 hours of steady traffic (3,000 RCU, 1,000 WCU) with an unannounced "
        "10x for 20 minutes at 15:00 UTC; no schedule can know it",
    )


def poisson(rng: random.Random, mean: float) -> int:
    """A draw from a Poisson distribution of ``mean`` (Knuth's method: fine for the
    means here, up to a few dozen)."""
    limit, k, p = math.exp(-mean), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def noisy(seed: int, events: float = 10.0, units: float = 20.0, days: int = 2) -> Trace:
    """Poisson-like traffic: each minute's requests a Poisson draw of mean ``events``,
    each ``units`` units a second (writes; reads 3x), for ``days`` days. Nothing but
    noise: a minute may run at twice the mean and the next at half."""
    rng = _rng(seed)
    n = days * 24 * 60
    writes = [poisson(rng, events) * units for _ in range(n)]
    reads = [poisson(rng, events) * units * 3 for _ in range(n)]
    return Trace(
        f"noisy-{events:g}",
        START,
        {(None, "read"): reads, (None, "write"): writes},
        notes=f"{days} days of Poisson-like noise: {events:g} events a minute on average, "
        f"{units:g} WCU (and {3 * units:g} RCU) each",
    )


def _noisy(seed: int) -> Trace:
    return noisy(seed)


HOT_KEY_SHARE = 0.4
"""The hot key's share of requests in the hot-key scenarios: with 3,000 WCU of writes it alone asks
its partition for 1,200 WCU, beyond the 1,000 a partition serves."""


def _hot_key(seed: int) -> Trace:
    """A steady table, 2 days: 3,000 WCU and 6,000 RCU (+-5 %), one key taking 40 % of
    the requests."""
    rng = _rng(seed)
    minutes = 2 * 1440
    return Trace(
        "hot-key",
        START,
        {
            (None, "read"): [6_000 * rng.uniform(0.95, 1.05) for _ in range(minutes)],
            (None, "write"): [3_000 * rng.uniform(0.95, 1.05) for _ in range(minutes)],
        },
        notes="2 days of a steady table (6,000 RCU, 3,000 WCU) where one key takes "
        f"{HOT_KEY_SHARE:.0%} of the requests: about 1,200 WCU on its partition, which "
        "serves 1,000; no capacity fixes it, and no split for heat either",
        key_skew=HOT_KEY_SHARE,
    )


def _hot_key_surge(seed: int) -> Trace:
    """6 hours at 1,000 WCU and 3,000 RCU with a 5x surge for an hour from 15:00, one key
    taking 25 % of the requests."""
    rng = _rng(seed)
    reads, writes = [], []
    for m in range(6 * 60):
        factor = 5.0 if 180 <= m < 240 else 1.0
        reads.append(3_000 * factor * rng.uniform(0.95, 1.05))
        writes.append(1_000 * factor * rng.uniform(0.95, 1.05))
    return Trace(
        "hot-key-surge",
        START.replace(hour=12),
        {(None, "read"): reads, (None, "write"): writes},
        notes="6 hours of 3,000 RCU and 1,000 WCU with an unannounced 5x surge for an hour "
        "at 15:00 UTC; one key takes 25 % of the requests: 1,250 WCU and 3,750 RCU on its "
        "partition during the surge, beyond what a partition serves. Capacity fixes the "
        "rest of the surge's throttles, not those",
        key_skew=0.25,
    )


SCENARIOS = {
    s.name: s
    for s in (
        Scenario(
            "spike",
            "4,000 -> 18,000 WCU for an hour after a quiet hour (the AWS spikes post, "
            "Figures 2, 3 and 7)",
            _spike,
        ),
        Scenario(
            "spike-14000",
            "the spike's work paced to 14,000 WCU, for 77 minutes (Figure 5)",
            _spike_14000,
        ),
        Scenario(
            "slow-start",
            "the spike's work ramped 9,000 -> 14,000 -> 18,000 WCU over 11 minutes (Figure 6)",
            _slow_start,
        ),
        Scenario("diurnal", "a daily prime-time swing, 7 days", _diurnal),
        Scenario("nightly-batch", "writes only at night, steady reads, 7 days", _nightly_batch),
        Scenario("flash-crowd", "an unannounced 10x for 20 minutes on a steady base", _flash_crowd),
        Scenario(
            "noisy",
            "Poisson-like noise around 200 WCU and 600 RCU (10 events a minute), 2 days",
            _noisy,
        ),
        Scenario(
            "hot-key",
            "a steady table (3,000 WCU) where one key takes 40 % of the requests, 2 days",
            _hot_key,
        ),
        Scenario(
            "hot-key-surge",
            "an unannounced 5x surge for an hour while one key takes 25 % of the requests",
            _hot_key_surge,
        ),
    )
}


def scenario(name: str, seed: int = 1) -> Trace:
    if name not in SCENARIOS:
        raise ScenarioError(f"--scenario: got {name!r}; expected one of {', '.join(SCENARIOS)}")
    return SCENARIOS[name].build(seed)
