"""The simulator's results and the run-time core's decisions, pinned in readable golden
files (``tests/simulator/goldens/``, made by `tests.support.sim_goldens`): every
result field, every recorded series and every decision :func:`plan_table` made, for a few
policies over a seeded 3-day noisy trace (and a table with a GSI), under the model before
warm throughput and under the default one, and the trace itself. Every float is held
exactly (as ``repr`` writes it): a change that moves any result or any decision (its
capacity, action or reason) fails here, showing the first lines that differ, where they
are (a dimension's result and its minute, or a decision's calls and minutes), the golden's
and the run's. When the change is meant, write the goldens again from the code and commit
them with it (the diff shows what moved; the CHANGELOG says why)::

    .venv/bin/python -m tests.support.sim_goldens --write    # or: make goldens

The other tests: the hot dataclasses' direct init, and the simulated scaler reading
minutes without traffic as the Lambda reads them from CloudWatch."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

import pytest

from ddb_capacity_runtime.aws.metrics import fetch, fetch_throttles, fetch_witness
from ddb_capacity_runtime.core.delivery import (
    WITNESS_PERIOD_MINUTES,
    Verdict,
    decided_from,
    verdict,
)
from ddb_capacity_runtime.core.plan import Change, plan_table
from ddb_capacity_runtime.core.policy import Decision, DimensionState
from ddb_capacity_runtime.core.series import MINUTE, Series, window
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_tools.simulator import ModelParams, policies
from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.sim_goldens import (
    CASES,
    GOLDENS,
    WRITE_COMMAND,
    Case,
    difference,
    golden,
    trace_golden,
)


def _same_as_golden(name: str, made: str) -> None:
    """Fails, showing the first differing lines, when ``made`` is not golden ``name``."""
    path = GOLDENS / f"{name}.json"
    if not path.exists():
        pytest.fail(f"{path}: no golden; write the goldens with {WRITE_COMMAND}", pytrace=False)
    found = difference(name, path.read_text(), made)
    if found:
        pytest.fail(found, pytrace=False)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_results_and_decisions_are_the_goldens(case: Case) -> None:
    _same_as_golden(case.name, golden(case))


def test_the_trace_is_its_golden() -> None:
    _same_as_golden("trace", trace_golden())


def test_a_run_differing_from_its_golden_shows_where_and_both_values() -> None:
    """One value changed in a golden (a throttled minute's served units): the difference
    names the run's part and minute, and shows the golden's line and the run's."""
    case = next(c for c in CASES if c.policy == "autopilot" and c.warm is None)
    made = golden(case)
    line = next(x for x in made.splitlines() if x.strip().startswith("[772, null, 5301.13"))
    changed = line.replace("5301.13", "5301.14", 1)
    found = difference(case.name, made.replace(line, changed, 1), made)
    assert "differs from its golden in 1 line(s)" in found
    assert '@@ golden line 28, run line 28: result [null, "read"] @@' in found
    assert f"-{changed}" in found and f"+{line}" in found
    assert found.endswith(WRITE_COMMAND)
    assert difference(case.name, made, made) == ""


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
    undelivered, late, throttles_read = set(), 0, set()
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
            throttles_read.update(_throttles_read_alike(cw, policy, sim, t, table, store, series))
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
    assert throttles_read == {
        True,
        False,
    }  # throttles read on some dimensions' ticks, not on others


def _throttles_read_alike(
    cw: Any,
    policy: policies.ThrottleAware,
    sim: SimulatedTable,
    t: int,
    table: str,
    store: str,
    series: dict[Any, Series],
) -> list[bool]:
    """The throttle events the simulated scaler reads at ``t`` after its first decision, on
    consumption alone (`ThrottleAware._picked`, `ThrottleAware._read`), are the Lambda's: its consumed
    capacity read alone, then the throttle events of the dimensions due
    (`metrics.fetch_throttles`); the others' read 0, not read."""
    config, now = policy.config, sim.time(t)
    described, _ = policy._describe(sim, t)
    first = plan_table(described, policy._assumed(series), config, now)
    mine = policy._read(series, policy._picked(first, series, now))
    start, end = window(now, config.history_minutes, config.metric_lag_minutes)
    keys = [(table, index, dim) for index, dim in sim.keys]
    alone = fetch(
        cw, keys, start, end, witness=store, arriving=config.arriving_minutes, throttles=False
    )
    due = [(table, k[1], k[2]) for k, s in mine.items() if s.throttles_read]
    errors: dict[Any, str] = {}
    read = fetch_throttles(cw, alone, due, start, end, errors=errors)
    assert errors == {}
    for index, dim in sim.keys:
        got, seen = read[(table, index, dim)], mine[(policies.SIMULATED_TABLE, index, dim)]
        listed = len(seen.minute_starts)
        assert got.throttles_read == seen.throttles_read
        assert got.throttles[:listed] == pytest.approx(seen.throttles)
        assert got.consumed[:listed] == pytest.approx(seen.consumed)
    return [s.throttles_read for s in mine.values()]


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
