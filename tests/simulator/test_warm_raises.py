"""The simulator's warm throughput and the table's stream as a signal: a raise within the
warm throughput of every dimension it changes lands in seconds, any other change takes
``update_minutes``; the warm throughput follows the highest capacity ever provisioned; the
stream sees served writes only and raises before the bucket empties; the ensemble spans
both latencies and the stream's delay."""

from __future__ import annotations

from typing import Any

import pytest

from ddb_capacity_tools.simulator import ModelError, ModelParams, Prices, parse
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.run import run_policy
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace

READ, WRITE = (None, "read"), (None, "write")


def _table(warm: int = 0, **model: Any) -> SimulatedTable:
    trace = Trace("flat", START, {READ: [10.0] * 20, WRITE: [10.0] * 20})
    params = ModelParams(
        warmup_minutes=0, update_minutes=3, warm_write_units=warm, **model
    ).validate()
    return SimulatedTable(trace, params, {READ: 100, WRITE: 100})


def _landed(sim: SimulatedTable, t: int, values: dict[str, int], second: int = 0) -> int:
    """The first minute from ``t`` on at whose end every value is provisioned."""
    sim.begin_minute(t)
    assert sim.update_table(t, None, values, second=second) == "applied"
    sim.end_minute(t)
    m = t
    while any(sim.dims[(None, d)].provisioned != v for d, v in values.items()):
        m += 1
        sim.begin_minute(m)
        sim.end_minute(m)
    return m


def test_a_raise_within_the_warm_throughput_lands_in_seconds() -> None:
    sim = _table(warm=1_000)
    assert _landed(sim, 0, {"write": 900}) == 0
    d = sim.dims[WRITE]
    # the minute is served in two parts: 10 s at 100, then 900
    assert d.provisioned_at[0] == 900
    assert not sim.busy(None, 1)


def test_a_raise_above_the_warm_throughput_takes_the_update_minutes() -> None:
    sim = _table(warm=1_000)
    assert _landed(sim, 0, {"write": 1_001}) == 3


def test_a_raise_sent_inside_a_minute_lands_that_many_seconds_later() -> None:
    sim = _table(warm=1_000, warm_update_seconds=30)
    assert _landed(sim, 0, {"write": 500}, second=40) == 1  # 40 s + 30 s: 10 s into minute 1


def test_a_decrease_or_a_mixed_change_takes_the_update_minutes() -> None:
    sim = _table(warm=1_000)
    assert _landed(sim, 0, {"write": 50}) == 3
    sim = _table(warm=1_000)
    assert _landed(sim, 0, {"write": 500, "read": 50}) == 3


def test_a_raise_of_a_dimension_with_no_warm_headroom_is_slow() -> None:
    sim = _table(warm=1_000)  # reads: warm at their initial 100
    assert _landed(sim, 0, {"write": 500, "read": 200}) == 3


def test_the_warm_throughput_follows_the_highest_capacity_ever_provisioned() -> None:
    sim = _table()
    assert _landed(sim, 0, {"write": 2_000}) == 3  # above 100: slow, and now warm at 2,000
    assert sim.dims[WRITE].warm == 2_000
    assert _landed(sim, 4, {"write": 100}) == 7
    assert _landed(sim, 8, {"write": 2_000}) == 8  # back up to it: at once
    assert sim.dims[WRITE].warm == 2_000  # a decrease never lowers it


def test_off_turns_every_change_slow_again() -> None:
    sim = _table(warm=1_000, warm_update_seconds=None)
    assert _landed(sim, 0, {"write": 500}) == 3


def test_the_new_params_are_checked_by_name() -> None:
    with pytest.raises(ModelError, match="warm_update_seconds: got 601"):
        ModelParams(warm_update_seconds=601).validate()
    with pytest.raises(ModelError, match="stream_seconds: got 0"):
        ModelParams(stream_seconds=0).validate()


# ---------------------------------------------------------------- the stream signal


def _step(dim: str, before: float, after: float, at: int = 30, minutes: int = 90) -> Trace:
    other = "read" if dim == "write" else "write"
    return Trace(
        "step",
        START,
        {(None, dim): [before] * at + [after] * (minutes - at), (None, other): [5.0] * minutes},
    )


def _refused(policy: str, trace: Trace, **model: object) -> dict[str, float]:
    params = ModelParams(warmup_minutes=30, **model).validate()  # type: ignore[arg-type]
    return {
        r.key[1]: r.throttled_requests for r in run_policy(parse(policy), trace, params, Prices())
    }


def test_the_stream_raises_a_write_jump_before_the_bucket_empties() -> None:
    # 1,000 writes a second under autopilot+stock:70, then 4,000: capacity 1,429 drains
    # its bucket in about 60 s; the stream sees the served writes 2 s later
    trace = _step("write", 1_000.0, 4_000.0)
    slow = _refused("autopilot+stock:70", trace, warm_update_seconds=None)
    stream = _refused("autopilot+stock:70", trace, stream_seconds=2, warm_write_units=8_000)
    assert slow["write"] > 0
    assert stream["write"] < 0.1 * slow["write"]


def test_the_stream_sees_no_reads() -> None:
    trace = _step("read", 1_000.0, 4_000.0)
    assert _refused("autopilot+stock:70", trace, stream_seconds=2) == _refused(
        "autopilot+stock:70", trace
    )


def test_stock_policies_ignore_the_stream() -> None:
    trace = _step("write", 1_000.0, 4_000.0)
    assert _refused("stock:70", trace, stream_seconds=2) == _refused("stock:70", trace)


def test_the_stream_never_raises_below_the_capacity() -> None:
    # writes well under the provisioned capacity: the stream adds nothing and costs nothing
    trace = _step("write", 500.0, 600.0)
    params = ModelParams(warmup_minutes=30).validate()
    with_stream = ModelParams(warmup_minutes=30, stream_seconds=2).validate()
    policy = parse("autopilot+stock:70")
    costs = [r.cost_usd for r in run_policy(policy, trace, params, Prices())]
    assert costs == [r.cost_usd for r in run_policy(policy, trace, with_stream, Prices())]


# ---------------------------------------------------------------- the ensemble


def test_the_ensemble_spans_both_latencies_and_the_streams_delay() -> None:
    on = settings_of("plausible", ModelParams(stream_seconds=2))
    warm = [p.warm_update_seconds for p in on]
    assert warm.count(None) == 2
    assert min(w for w in warm if w is not None) == 5
    assert max(w for w in warm if w is not None) == 60
    assert {p.stream_seconds for p in on} == {1, 2, 4, 8}
    off = settings_of("plausible", ModelParams(warm_update_seconds=None))
    assert {p.warm_update_seconds for p in off} == {None}
    assert {p.stream_seconds for p in off} == {None}
