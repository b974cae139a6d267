"""Random small traces and models for the simulator's property tests (`traces`, `models`):
one or two dimensions of demand that steps, idles and spikes, and the model's delays, warm-up,
warm throughput, fast path and stream drawn from their plausible values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from ddb_capacity_tools.simulator import ModelParams
from ddb_capacity_tools.simulator.trace import Key, Trace

__all__ = ["START", "models", "traces"]

START = datetime(2026, 3, 1, 23, 0, tzinfo=UTC)


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    """One or two dimensions of demand: a level that steps, zeros (no traffic) and spikes;
    sometimes a GSI's too."""
    minutes = draw(st.integers(30, 240))
    demand: dict[Key, list[float]] = {}
    for dim in draw(st.sampled_from([("read",), ("read", "write")])):
        levels = st.one_of(
            st.just(0.0),
            st.floats(0.5, 40.0, allow_nan=False),
            st.floats(100.0, 900.0, allow_nan=False),
        )
        steps = draw(st.lists(st.tuples(levels, st.integers(1, 40)), min_size=1, max_size=12))
        row = [level for level, length in steps for _ in range(length)]
        demand[(None, dim)] = (row * (minutes // len(row) + 1))[:minutes]
    if draw(st.booleans()):  # a GSI, at a share of the table's demand
        share = draw(st.sampled_from([0.25, 1.0, 2.0]))
        for (_, dim), row in list(demand.items()):
            demand[("byCustomer", dim)] = [v * share for v in row]
    start = START + timedelta(
        minutes=draw(st.integers(0, 9)), seconds=draw(st.sampled_from([0, 30]))
    )
    return Trace("random", start, demand)


@st.composite
def models(draw: st.DrawFn) -> ModelParams:
    return ModelParams(
        metric_delay_minutes=draw(st.integers(0, 4)),
        throttle_delay_minutes=draw(st.integers(0, 4)),
        delay_spread_minutes=draw(st.sampled_from([0, 0, 2])),
        update_spread_minutes=draw(st.sampled_from([0, 3])),
        warmup_minutes=draw(st.integers(0, 30)),
        warm_update_seconds=draw(st.sampled_from([None, 10])),
        fast_path_seconds=draw(st.sampled_from([None, None, 20])),
        stream_seconds=draw(st.sampled_from([None, None, 5])),
    ).validate()
