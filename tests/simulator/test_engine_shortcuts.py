"""The simulator's shortcuts in a run, each against its reference: the same run with the
shortcut turned back into the plain evaluation it skips (every minute's, every tick's), on
random small traces and models. Both runs must agree on every result field and every
recorded series, exactly.

- stock target tracking's low alarm, held while a datapoint at or above its threshold is
  among its newest 15 (`AutoScaling._hold`), against evaluating it every minute;
- the scaler tick's delivery verdict, kept per phase of the witness period
  (`ThrottleAware.delivered`), against working it out at every tick;
- the scaler tick's throttle reads, picked without its first decision where no dimension's
  read depends on it (`ThrottleAware._due`), against making that decision at every tick;
- the scaler tick's first decision taken for the tick's own where no series holds a
  throttle (`ThrottleAware._reused`), against deciding again with the throttles read;
- a decrease the quota refuses, refused again without asking the ledger until the minute it
  allows one (`SimulatedTable._refused_until`), against asking it at every attempt.
"""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.decreases import DecreaseLedger
from ddb_capacity_runtime.core.series import Series
from ddb_capacity_tools.simulator import ModelParams, Prices, parse
from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.policies import (
    SERIES_FIELDS,
    ThrottleAware,
    _consumption,
    _unread,
)
from ddb_capacity_tools.simulator.run import run_policy
from ddb_capacity_tools.simulator.stock import EXTRA_PERIODS, LOW_DATAPOINTS, AutoScaling
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.hypothesis_profiles import examples
from tests.support.sim_strategies import START, models, traces


def _run(policy: str, trace: Trace, params: ModelParams) -> list[Any]:
    results = run_policy(parse(policy), trace, params, Prices())
    return [(r.as_json(), r.recorded) for r in results]


def _alike(policy: str, trace: Trace, params: ModelParams) -> None:
    made = _run(policy, trace, params)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(AutoScaling, "_hold", lambda *_: None)  # every minute evaluated
        m.setattr(ThrottleAware, "delivered", ThrottleAware.delivered_now)  # every tick
        m.setattr(ThrottleAware, "_due", ThrottleAware._due_decided)  # every first decision
        m.setattr(ThrottleAware, "_reused", lambda *_: None)  # every tick decided again
        m.setattr(SimulatedTable, "_refused_until", lambda _, _ledger, t: t)  # ledger asked
        reference = _run(policy, trace, params)
    assert made == reference


@settings(max_examples=examples(60), deadline=None)
@given(
    trace=traces(),
    params=models(),
    policy=st.sampled_from(["stock:70", "stock:30", "stock:90", "stock:50+reserved"]),
)
def test_stock_runs_as_its_every_minute_reference(
    trace: Trace, params: ModelParams, policy: str
) -> None:
    if policy.endswith("+reserved"):
        params = replace(params, reserved_read_units=100)
    _alike(policy, trace, params)


@settings(max_examples=examples(25), deadline=None)
@given(
    trace=traces(),
    params=models(),
    policy=st.sampled_from(["autopilot+stock:70", "throttle-aware", "autopilot:60"]),
)
def test_the_scaler_runs_as_its_every_tick_reference(
    trace: Trace, params: ModelParams, policy: str
) -> None:
    _alike(policy, trace, params)


@settings(max_examples=examples(25), deadline=None)
@given(
    trace=traces(),
    params=models(),
    policy=st.sampled_from(["autopilot+stock:70", "throttle-aware+stock:50", "autopilot:60"]),
)
def test_each_tick_reads_the_throttles_its_first_decision_would_read(
    trace: Trace, params: ModelParams, policy: str
) -> None:
    """Tick by tick, the keys whose throttles are read are those the first decision picks."""
    shortcut, reference = ThrottleAware._due, ThrottleAware._due_decided
    compared = [0]

    def due(self: ThrottleAware, *args: Any) -> set[Any]:
        picked = shortcut(self, *args)
        assert picked == reference(self, *args)
        compared[0] += 1
        return picked

    with pytest.MonkeyPatch.context() as m:
        m.setattr(ThrottleAware, "_due", due)
        m.setattr(ThrottleAware, "_reused", lambda *_: None)  # `_due` at every tick
        run_policy(parse(policy), trace, params, Prices())
    assert compared[0] > 0


@pytest.mark.parametrize("policy", ["autopilot+stock:70", "autopilot:70"])
def test_the_first_decision_is_made_only_where_a_throttle_read_depends_on_it(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shortcut is taken, and not always (else the test above compares a path with
    itself): on target tracking no tick needs the first decision (a minimum not held raised
    is never lowered), by UpdateTable the ticks of a quiet stretch do."""
    decided = [0]
    original = ThrottleAware._due_decided

    def due(self: ThrottleAware, *args: Any) -> Any:
        decided[0] += 1
        return original(self, *args)

    monkeypatch.setattr(ThrottleAware, "_due_decided", due)
    monkeypatch.setattr(ThrottleAware, "_reused", lambda *_: None)  # `_due` at every tick
    ticks = _ticks_on_steps(policy, monkeypatch)
    assert ticks >= 150
    if policy.startswith("autopilot+stock"):
        assert decided[0] == 0
    else:
        assert 0 < decided[0] < ticks * 3 / 4


@pytest.mark.parametrize("policy", ["autopilot+stock:70", "autopilot:70", "throttle-aware"])
def test_the_first_decision_is_the_ticks_own_only_without_throttles_nor_targets(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tick's first decision is taken for its own (else the runs above compare a path
    with itself) by UpdateTable on the ticks of a stretch without throttles, and never on
    target tracking nor where a series holds a throttle."""
    reused = [0]
    original = ThrottleAware._reused

    def reuse(self: ThrottleAware, table: Any, series: Any, *args: Any) -> Any:
        first = original(self, table, series, *args)
        if first is not None:
            reused[0] += 1
            assert not any(any(s.throttles) for s in series.values())
        return first

    monkeypatch.setattr(ThrottleAware, "_reused", reuse)
    ticks = _ticks_on_steps(policy, monkeypatch)
    assert ticks >= 150
    if policy.startswith("autopilot+stock"):
        assert reused[0] == 0
    else:
        assert ticks / 2 < reused[0] < ticks


def _ticks_on_steps(policy: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many ticks ``policy`` makes over load that steps from high to low and back."""
    trace = Trace("steps", START, {(None, "read"): ([400.0] * 30 + [20.0] * 90) * 3})
    ticks = [0]
    original = ThrottleAware._tick

    def tick(self: ThrottleAware, *args: Any) -> None:
        ticks[0] += 1
        original(self, *args)

    monkeypatch.setattr(ThrottleAware, "_tick", tick)
    run_policy(parse(policy), trace, ModelParams(warmup_minutes=0), Prices())
    return ticks[0]


@settings(max_examples=examples(60), deadline=None)
@given(
    count=st.integers(0, 27),
    before=st.integers(0, 3000),
    offset=st.integers(0, 1439),
    second=st.sampled_from([0, 30]),
)
def test_a_refused_decrease_is_refused_until_the_minute_the_ledger_allows_one(
    count: int, before: int, offset: int, second: int
) -> None:
    """`SimulatedTable._refused_until` finds the first minute the ledger allows a decrease
    in: every minute before it refuses one."""
    start = START + timedelta(minutes=offset, seconds=second)
    trace = Trace("idle", start, {(None, "read"): [1.0] * 10})
    sim = SimulatedTable(trace, ModelParams(warmup_minutes=0), {(None, "read"): 10})
    ledger = DecreaseLedger(count, sim.time(0) - timedelta(minutes=before))
    assume(not ledger.can_decrease(sim.time(0)))
    until = sim._refused_until(ledger, 0)
    assert until > 0
    assert not any(ledger.can_decrease(sim.time(t)) for t in range(until))
    assert ledger.can_decrease(sim.time(until))


def test_refused_decreases_are_refused_without_asking_the_ledger_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The refusal is kept (else the runs above compare a path with itself): on load that
    falls by a third every 20 minutes, stock target tracking asks for a decrease the quota
    refuses minute after minute once its 4 free ones are spent, and the ledger is asked far
    fewer times."""
    trace = Trace(
        "stairs", START, {(None, "read"): [900.0 * (2 / 3) ** (m // 20) for m in range(400)]}
    )
    asked = [0]
    original = DecreaseLedger.can_decrease

    def can_decrease(self: DecreaseLedger, now: datetime) -> bool:
        asked[0] += 1
        return original(self, now)

    monkeypatch.setattr(DecreaseLedger, "can_decrease", can_decrease)
    (result,) = run_policy(parse("stock:70"), trace, ModelParams(warmup_minutes=0), Prices())
    assert result.rejected_decreases > 100
    assert asked[0] < result.rejected_decreases / 2


def _low_alarm_reads(monkeypatch: pytest.MonkeyPatch, hold: bool) -> int:
    """How many times stock's low alarm reads its window over a trace below its threshold
    but for a spike every 10 minutes, which keeps the alarm from firing."""
    trace = Trace("spiky", START, {(None, "read"): [100.0] * 20 + ([30.0] * 9 + [100.0]) * 20})
    reads = []
    original = SimulatedTable.present

    def present(self: SimulatedTable, key: Any, t: int, count: int) -> list[float]:
        reads.append(count)
        return original(self, key, t, count)

    with monkeypatch.context() as m:
        m.setattr(SimulatedTable, "present", present)
        if not hold:
            m.setattr(AutoScaling, "_hold", lambda *_: None)
        run_policy(parse("stock:70"), trace, ModelParams(warmup_minutes=0), Prices())
    return reads.count(LOW_DATAPOINTS + EXTRA_PERIODS)


def test_the_low_alarm_is_held_while_a_spike_is_among_its_datapoints(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shortcut is taken (else the tests above compare a path with itself)."""
    every_minute = _low_alarm_reads(monkeypatch, hold=False)
    held = _low_alarm_reads(monkeypatch, hold=True)
    assert every_minute > 150
    assert held < every_minute / 2


def _verdicts(params: ModelParams, start: datetime, kept: bool) -> list[bool]:
    """The delivery verdict of an autopilot's tick at each of 120 minutes, kept per phase
    (``kept``) or worked out at each."""
    trace = Trace("idle", start, {(None, "read"): [0.0] * 120})
    policy = ThrottleAware(1, 70, params, autopilot=True)
    sim = SimulatedTable(trace, params, policy.initial(trace, params))
    ask = policy.delivered if kept else policy.delivered_now
    return [ask(sim, t, sim.time(t)) for t in range(-30, 120)]


@settings(max_examples=examples(40), deadline=None)
@given(
    delay=st.integers(0, 15),
    offset=st.integers(0, 59),
    second=st.sampled_from([0, 1, 59]),
    warmup=st.integers(0, 30),
)
def test_the_delivery_verdict_kept_per_phase_is_the_one_worked_out_at_each_tick(
    delay: int, offset: int, second: int, warmup: int
) -> None:
    params = ModelParams(metric_delay_minutes=delay, warmup_minutes=warmup).validate()
    start = START + timedelta(minutes=offset, seconds=second)
    assert _verdicts(params, start, kept=True) == _verdicts(params, start, kept=False)


def test_the_delivery_verdict_moves_with_the_phase_when_metrics_are_late() -> None:
    """The verdict differs between phases of the witness period (else the test above
    compares a constant with itself): 15 minutes late, some ticks await the witness."""
    params = ModelParams(metric_delay_minutes=15).validate()
    assert len(set(_verdicts(params, START, kept=False))) == 2


def test_a_series_read_on_consumption_alone_keeps_every_other_field() -> None:
    """`_consumption` and `_unread` copy a `Series` by position (`_read_as`) where `replace`
    would cost a tick more: they agree with `replace` on a series whose every field is set,
    and the fields they pass are `Series`' own, in its order (a field added to it fails
    here until the copy passes it too)."""
    assert SERIES_FIELDS == tuple(f.name for f in fields(Series))
    minute = datetime(2026, 3, 1, tzinfo=UTC)
    s = Series(
        [minute, minute + timedelta(minutes=1)],
        [5.0, 6.0],
        [3.0, 0.0],
        [False, True],
        [1.0, 0.0],
        [0.5, 0.0],
        causes_unknown=1,
        undelivered=2,
        untrusted=1,
        throttles_read=True,
    )
    quiet = replace(s, throttles=[0.0, 0.0], unfixable=[], key_range=[])
    assert _consumption(s) == quiet
    assert _unread(quiet) == replace(quiet, throttles_read=False)
    assert _consumption(quiet) is quiet
