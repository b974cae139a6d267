"""The simulator's results and the run-time core's decisions, pinned: a hash of every
result field, every recorded series and every decision :func:`plan_table` made, for a few
policies over a seeded 3-day noisy trace (and a table with a GSI), under the model before
warm throughput and under the default one. The hashes were computed
before the simulator and the core were made faster; a change that moves any result or any
decision (its capacity, action or reason) fails here. They moved when the tick began to read
up to the newest delivered minute (the results stayed the same; only the first tick's reason
changed: it reads 2 minutes more, none of them known yet), and when throttles from before
the last raise began to top it up (a deliberate change of decisions), and when the
autopilot's forecast began to earn its place (a backtest against reacting alone) and one
noisy minute stopped buying capacity (a raise above target wants both newest minutes
above it): the autopilot's runs cost 8-13 % less on this trace (autopilot+stock:70
$356.41 -> $328.23, autopilot $614.42 -> $562.96 before warm throughput; $357.48 ->
$329.03 and $646.41 -> $563.79 with it), refusing more before warm throughput
(0 -> 0.65 M and 3.51 M -> 7.76 M requests) and about as much with it (0 -> 0, 5.19 M ->
5.29 M). And when the autopilot on target tracking stopped raising for load over the
capacity that the burst bucket absorbs (``core.bucket``): autopilot+stock:70 $328.23 ->
$325.80 before warm throughput and $329.03 -> $326.59 with it, refusing the same (0.65 M,
0); the other runs did not move. And when the scaler began to be handed what the Lambda's
GetMetricData makes of a minute without a datapoint (0 and known up to the newest minute its
batch holds, not delivered after it): under drawn delays (the autopilot's run, 1-3 minutes)
a minute whose datapoint comes later than another dimension's of the same minute reads 0,
known, as the Lambda reads it, where it used to read unknown: autopilot $562.96 -> $520.51
refusing 7.76 M -> 16.07 M requests before warm throughput, $563.79 -> $513.30 refusing
5.29 M -> 13.00 M with it; the runs without drawn delays did not move. And when such a
minute among the window's newest (`ScalerConfig.arriving_minutes`: its datapoint may still
be on its way) began to read unknown, as the Lambda reads it, rather than idle: the
autopilot's run is back to its results and decisions (and hashes) from before, $520.51 ->
$562.96 refusing 16.07 M -> 7.76 M before warm throughput, $513.30 -> $563.79 refusing
13.00 M -> 5.29 M with it (this trace has no idle minute); the others did not move."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import math
import random
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

import pytest

from ddb_capacity_runtime.aws.metrics import fetch, fetch_witness
from ddb_capacity_runtime.core.delivery import (
    WITNESS_PERIOD_MINUTES,
    Verdict,
    decided_from,
    verdict,
)
from ddb_capacity_runtime.core.plan import Change
from ddb_capacity_runtime.core.policy import Decision, DimensionState
from ddb_capacity_runtime.core.series import MINUTE, Series, window
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_tools.simulator import ModelParams, Prices, parse, policies, run_policy
from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace

#: (policy, tick, GSI trace, model spread) -> sha256 of its results and decisions.
PINNED = {
    (
        "stock:70",
        2,
        False,
        False,
    ): "e24edabffadd26ceaa6468a6e2b27c987a5374daec544afa07f46cef63d52b88",
    (
        "autopilot+stock:70",
        2,
        False,
        False,
    ): "4941aa5889159998c15a4ec4390a888b3df3344aebc45148e5eaaeb4ad83759e",
    (
        "throttle-aware+stock:70",
        1,
        True,
        False,
    ): "0caca8806abfd1485fe46b58a6c5b82efb5bd2a4e3570daf2e67f56438481467",
    (
        "autopilot",
        5,
        True,
        True,
    ): "92ba9673873b7577536a802b62a5a3239fe1f7ce5ca06e00919b2e0dae8ee4a2",
    ("oracle", 2, True, False): "7ad29f0661770324d78315fa4d7e285a410b1bffa84432cce806ea80fa52681a",
}
#: The same runs under the default model, where a raise within the warm throughput lands
#: in seconds (``PINNED`` runs with ``warm_update_seconds=None``: the model before it,
#: exactly). They moved when that rule came in.
PINNED_WARM = {
    (
        "stock:70",
        2,
        False,
        False,
    ): "590cc1978c14d021bf93f0187120cdbc8d06b267612299f68477b7cd495ff9a4",
    (
        "autopilot+stock:70",
        2,
        False,
        False,
    ): "d0aea8774d74ff9c7ad5bd7b2db7f779c2fa8ce6404b0b5f0bfdaba5c360d267",
    (
        "throttle-aware+stock:70",
        1,
        True,
        False,
    ): "49f92183c480002351bb4420d3c787a522d5be887f1690f84c155c796755aa89",
    (
        "autopilot",
        5,
        True,
        True,
    ): "8c0a2b38b1707c043044377322b9ef2c90cb5581d5584851d0b025aa6daa7f1f",
    ("oracle", 2, True, False): "7b85d78a2219061ab7a1678e245cec9c49783274bd4f962e77f482bb882e6ff5",
}


def _noisy(seed: int, days: int) -> dict[str, list[float]]:
    """A daily swing peaking at 20:00 UTC, times lognormal noise, with short bursts."""
    rng = random.Random(seed)  # noqa: S311 (a reproducible trace, not a secret)
    minutes = days * 1440
    burst = [1.0] * minutes
    for _ in range(4 * days):
        start, level = rng.randrange(minutes), rng.uniform(2.0, 4.0)
        for m in range(start, min(minutes, start + rng.randint(2, 10))):
            burst[m] = max(burst[m], level)
    reads, writes = [], []
    for m in range(minutes):
        s = ((1 + math.cos(2 * math.pi * ((m % 1440) / 60 - 20) / 24)) / 2) ** 4
        reads.append(min(40_000.0, (1_500 + 18_000 * s) * rng.lognormvariate(0, 0.25) * burst[m]))
        writes.append(min(40_000.0, (300 + 4_500 * s) * rng.lognormvariate(0, 0.25) * burst[m]))
    return {"read": reads, "write": writes}


def _trace(gsi: bool) -> Trace:
    table = _noisy(1, 3)
    demand: dict[tuple[str | None, str], list[float]] = {
        (None, "read"): table["read"],
        (None, "write"): table["write"],
    }
    if gsi:
        index = _noisy(2, 3)
        demand |= {("by-user", "read"): index["read"], ("by-user", "write"): index["write"]}
    return Trace("noisy-3-days", START, demand)


def fingerprint(
    policy: str,
    tick: int,
    gsi: bool,
    spread: bool,
    monkeypatch: pytest.MonkeyPatch,
    warm: int | None = None,
) -> str:
    """sha256 of every result field, recorded series and plan_table decision of one run."""
    digest = hashlib.sha256()
    # the simulator's policies' plan_table (their import of it, not an export)
    plan_table: Callable[..., list[tuple[Change, Decision]]] = vars(policies)["plan_table"]

    def recording(*args: Any, **kwargs: Any) -> list[tuple[Change, Decision]]:
        planned = plan_table(*args, **kwargs)
        digest.update(repr([(c.old, c.new, c.via, d) for c, d in planned]).encode())
        return planned

    monkeypatch.setattr(policies, "plan_table", recording)
    params = (
        ModelParams(delay_spread_minutes=2, update_spread_minutes=2) if spread else ModelParams()
    )
    params = dataclasses.replace(params, warm_update_seconds=warm)
    for r in run_policy(parse(policy), _trace(gsi), params.validate(), Prices(), tick=tick):
        fields = {k: v for k, v in vars(r).items() if k != "recorded"}
        digest.update(repr((fields, vars(r.recorded))).encode())
    return digest.hexdigest()


@pytest.mark.parametrize("warm", [None, ModelParams().warm_update_seconds])
@pytest.mark.parametrize(("policy", "tick", "gsi", "spread"), list(PINNED))
def test_results_and_decisions_are_unchanged(
    policy: str,
    tick: int,
    gsi: bool,
    spread: bool,
    warm: int | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pinned = PINNED if warm is None else PINNED_WARM
    assert (
        fingerprint(policy, tick, gsi, spread, monkeypatch, warm)
        == pinned[(policy, tick, gsi, spread)]
    )


@pytest.mark.parametrize("cls", [DimensionState, Decision, Change, Series])
def test_the_direct_init_takes_every_field_in_order_with_its_default(cls: type[Any]) -> None:
    """The hot dataclasses set their fields with records.direct_init: it takes every field,
    in order, with the field's default."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    fields = dataclasses.fields(cls)
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields, strict=True):
        if f.default is not dataclasses.MISSING:
            assert p.default == f.default
        elif f.default_factory is not dataclasses.MISSING:
            assert p.default in (f.default_factory(), None)
        else:
            assert p.default is inspect.Parameter.empty


def _publish(
    cw: Any, table: str, minutes: dict[datetime, tuple[float, float]], dimension: str = "Write"
) -> None:
    """Each minute's consumed units/s and throttle events of ``table``'s ``dimension``, as
    DynamoDB publishes them: nothing for a minute without traffic, no throttle events for
    none."""
    dims = [{"Name": "TableName", "Value": table}]
    data = []
    for ts, (consumed, events) in minutes.items():
        for name, value in (
            (f"Consumed{dimension}CapacityUnits", consumed * 60),
            (f"{dimension}ThrottleEvents", events),
        ):
            if value:
                data.append(
                    {"MetricName": name, "Dimensions": dims, "Timestamp": ts, "Value": value}
                )
    for i in range(0, len(data), 500):
        cw.put_metric_data(Namespace="AWS/DynamoDB", MetricData=data[i : i + 500])


def _visible(sim: SimulatedTable, key: tuple[str | None, str], m: int, t: int) -> tuple[bool, bool]:
    """Whether the consumed datapoint and the throttle events of minute ``m`` of ``key`` are
    visible at the start of minute ``t`` (each with its delay, plus the minute's draw)."""
    d, p, i = sim.dims[key], sim.params, m + sim.offset
    if p.delay_spread_minutes:
        return d.visible_at[i] <= t, d.throttles_visible_at[i] <= t
    return m + 1 + p.metric_delay_minutes <= t, m + 1 + p.throttle_delay_minutes <= t


@pytest.mark.parametrize(("delay", "spread", "lag"), [(2, 0, 2), (2, 2, 2), (1, 2, 0)])
def test_the_simulated_scaler_reads_minutes_without_traffic_as_the_lambda_does(
    aws_client: Callable[[str], Any],
    monkeypatch: pytest.MonkeyPatch,
    delay: int,
    spread: int,
    lag: int,
) -> None:
    """The scaler in the simulator is handed, for each minute without a datapoint, what the
    Lambda's GetMetricData makes of it (`metrics.fetch`): 0 and known up to the newest minute
    its batch holds a datapoint of, the state store's reads (one a tick) included, but for
    the window's newest minutes (`ScalerConfig.arriving_minutes`), where it is unknown (its
    datapoint may still be on its way); not delivered yet after it. Bursts of 10 minutes and
    20 idle ones in writes, reads idle in other minutes, ticks in both; every tick. With
    drawn delays (``spread``: 2-4 minutes after a minute ends), a dimension's minute may
    arrive after the other's or the store's: both read it unknown, not idle; with no metric
    lag (``lag``) too, as long as it comes no later than CloudWatch does (1-3 minutes after
    its minute ends: ``delay`` 1, drawn 2 more at most). And the dimensions' delivery witness
    (their provisioned capacity) is read alike: its newest datapoint, on which a decrease
    resting on minutes read as idle waits."""
    # the scaler's config in the simulator, with the metric lag asked
    monkeypatch.setattr(policies, "ScalerConfig", partial(ScalerConfig, metric_lag_minutes=lag))
    cw = aws_client("cloudwatch")
    writes = [800.0 if (m // 10) % 3 == 0 else 0.0 for m in range(90)]
    reads = [300.0 if (m // 10) % 3 != 1 else 0.0 for m in range(90)]
    trace = Trace("bursts", START, {(None, "read"): reads, (None, "write"): writes})
    params = ModelParams(
        metric_delay_minutes=delay, throttle_delay_minutes=delay, delay_spread_minutes=spread
    ).validate()
    policy = policies.ThrottleAware(2, 70, params)
    sim = SimulatedTable(trace, params, policy.initial(trace, params))
    config = policy.config
    assert config.metric_lag_minutes == lag
    undelivered, late = set(), 0
    for t in range(-params.warmup_minutes, trace.minutes):
        sim.begin_minute(t)
        if t % policy.tick == 0 and t >= 4:
            _, series = policy._describe(sim, t)
            table, store = f"bursts-{spread}-{lag}-{t}", f"store-{spread}-{lag}-{t}"
            start, end = window(sim.time(t), config.history_minutes, config.metric_lag_minutes)
            first = int((start - sim.trace.start) / MINUTE)
            minutes = range(max(first, -sim.offset), t)
            for key in sim.keys:  # every minute CloudWatch has of it by now
                d = sim.dims[key]
                seen_by = {m: _visible(sim, key, m, t) for m in minutes}
                published = {
                    sim.time(m): (
                        d.served[m + sim.offset] if seen_by[m][0] else 0.0,
                        d.throttle_events[m + sim.offset] if seen_by[m][1] else 0.0,
                    )
                    for m in minutes
                }
                _publish(cw, table, published, key[1].capitalize())
            witnessed = {sim.time(m): (0.5, 0.0) for m in minutes if m < t - delay and m % 2 == 0}
            _publish(cw, store, witnessed, "Read")  # the state store's: each tick reads it
            keys = [(table, index, dim) for index, dim in sim.keys]
            read = fetch(cw, keys, start, end, witness=store, arriving=config.arriving_minutes)
            _witness_read_alike(cw, sim, table, t, keys, config)
            for index, dim in sim.keys:
                got, seen = (
                    read[(table, index, dim)],
                    series[(policies.SIMULATED_TABLE, index, dim)],
                )
                listed = len(seen.minute_starts)
                assert got.minute_starts[:listed] == seen.minute_starts
                assert got.consumed[:listed] == pytest.approx(seen.consumed)
                assert got.throttles[:listed] == pytest.approx(seen.throttles)
                assert got.unknown[:listed] == (seen.unknown or [False] * listed)
                assert all(got.unknown[listed:]) and len(got.unknown) - listed == seen.undelivered
                undelivered.add(seen.undelivered)
                # minutes with traffic whose datapoint had not arrived while the batch's had
                d = sim.dims[(index, dim)]
                arrived = [
                    i
                    for i, m in enumerate(range(first, first + listed))
                    if m + sim.offset >= 0
                    and d.served[m + sim.offset]
                    and not _visible(sim, (index, dim), m, t)[0]
                ]
                assert all(got.unknown[i] for i in arrived)
                late += len(arrived)
        policy.act(sim, t)
        sim.end_minute(t)
    # idle minutes newer than the store's newest delivered read (one a tick, of an even
    # minute) are not delivered yet
    assert undelivered == ({delay, delay + 1} if delay % 2 == 0 else {delay})
    # under drawn delays, some minute with traffic came after the batch's: read unknown
    assert (late > 0) == (spread > 0)


def _witness_read_alike(
    cw: Any,
    sim: SimulatedTable,
    table: str,
    t: int,
    keys: list[tuple[str, str | None, str]],
    config: ScalerConfig,
) -> None:
    """The delivery witness (`core.delivery`) as the simulator models it at ``t`` and as the
    Lambda reads it (`metrics.fetch_witness`) from what CloudWatch holds: DynamoDB's
    provisioned capacity, one datapoint every 5 minutes stamped with its period's start,
    each visible `SimulatedTable.witness_delay` minutes after its period ends."""
    delay, period = sim.witness_delay, WITNESS_PERIOD_MINUTES
    dims = [{"Name": "TableName", "Value": table}]
    data = [
        {
            "MetricName": f"Provisioned{dim.capitalize()}CapacityUnits",
            "Dimensions": dims,
            "Timestamp": sim.time(m),
            "Value": 100.0,
        }
        for m in range(t - 60, t)
        if sim.time(m).minute % period == 0 and m + period + delay <= t
        for dim in ("read", "write")
    ]
    cw.put_metric_data(Namespace="AWS/DynamoDB", MetricData=data)
    errors: dict[Any, str] = {}
    read = fetch_witness(cw, keys, sim.time(t), errors=errors)
    assert errors == {}
    assert set(read.values()) == {sim.witness_through(t)}
    now = sim.time(t)
    since = decided_from(now, config)  # delivered in the model
    assert {verdict(newest, now, since) for newest in read.values()} == {Verdict.DELIVERED}
