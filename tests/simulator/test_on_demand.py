"""On-demand as DynamoDB documents it: up to double the previous peak at once (a peak
counts after ``on_demand_peak_minutes``), a new table's warm throughput, and the maximum
throughput (``OnDemandThroughput``)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_tools.simulator import ModelError, ModelParams, Prices, parse, run_policy
from ddb_capacity_tools.simulator.on_demand import ON_DEMAND_WARM
from ddb_capacity_tools.simulator.run import DimensionResult
from ddb_capacity_tools.simulator.scenarios import START, scenario
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.hypothesis_profiles import examples

LAG = ModelParams().on_demand_peak_minutes
WARM = ON_DEMAND_WARM["write"]


def _run(writes: list[float], **model: object) -> DimensionResult:
    """On-demand over ``writes`` (reads idle); the write result."""
    trace = Trace("t", START, {(None, "read"): [0.0] * len(writes), (None, "write"): writes})
    params = ModelParams(**model).validate()  # type: ignore[arg-type]
    return run_policy(parse("on-demand"), trace, params, Prices())[1]


def _refused(r: DimensionResult) -> list[float]:
    return list(r.recorded.throttled)


levels = st.floats(min_value=0, max_value=60_000, allow_nan=False)


@settings(max_examples=examples(60), deadline=None)
@given(writes=st.lists(levels, min_size=1, max_size=200), warmup=st.sampled_from([0, 10, 60]))
def test_demand_within_double_the_previous_peak_is_never_refused(
    writes: list[float], warmup: int
) -> None:
    r = _run(writes, warmup_minutes=warmup, max_capacity=1_000_000)
    served = [writes[0]] * warmup + list(r.recorded.served)
    for t, (d, refused) in enumerate(zip(writes, _refused(r), strict=True)):
        i = t + warmup
        peak = max(served[: i - LAG + 1], default=0.0) if i >= LAG else 0.0
        limit = max(WARM, 2 * peak)
        if d <= limit:
            assert refused == 0
        else:  # what exceeds the limit, exactly, and no more
            assert refused == pytest.approx(d - limit)
        assert r.recorded.served[t] <= max(limit, 0) + 1e-6
    assert r.throttled_by_cause["on_demand"] == pytest.approx(r.throttled_requests)


@settings(max_examples=examples(40), deadline=None)
@given(level=st.floats(min_value=WARM, max_value=40_000))
def test_a_sustained_level_is_served_once_the_peak_has_doubled_enough(level: float) -> None:
    """A new table (no warm-up) at a steady ``level``: it serves the warm throughput, then
    double that ``LAG`` minutes later, and so on, until it serves everything."""
    steps = math.ceil(math.log2(level / WARM)) if level > WARM else 0
    r = _run([level] * (LAG * (steps + 2)), warmup_minutes=0)
    refused = [t for t, v in enumerate(_refused(r)) if v > 0]
    assert refused == list(range(LAG * steps))
    for t in refused:  # the served level doubles each LAG minutes
        assert r.recorded.served[t] == pytest.approx(WARM * 2 ** (t // LAG))


@settings(max_examples=examples(40), deadline=None)
@given(
    base=st.floats(min_value=WARM / 2, max_value=8_000),
    factor=st.floats(min_value=2.01, max_value=4.0),
    lag=st.sampled_from([5, 30, 60]),
)
def test_refusals_stop_within_the_time_constant_after_a_jump(
    base: float, factor: float, lag: int
) -> None:
    """From a steady ``base``, a jump to at most 4x (double the instant limit) is refused
    for exactly ``lag`` minutes when it exceeds the limit, then served."""
    writes = [base] * 120 + [base * factor] * (3 * lag)
    r = _run(writes, on_demand_peak_minutes=lag)
    limit = max(WARM, 2 * base)
    refused = [t for t, v in enumerate(_refused(r)) if v > 0]
    if base * factor <= limit:
        assert refused == []
    else:
        assert refused == list(range(120, 120 + lag))


def test_the_cap_refuses_what_exceeds_it() -> None:
    cap = 3_000
    writes = [1_000.0] * 30 + [5_000.0] * 30 + [2_000.0] * 30
    r = _run(writes, on_demand_max_write_units=cap, warm_write_units=100_000)
    assert _refused(r) == [0.0] * 30 + [2_000.0] * 30 + [0.0] * 30
    assert max(r.recorded.served) == cap
    causes = r.throttled_by_cause
    assert causes["max_on_demand"] == 2_000 * 30 * 60 == r.throttled_requests
    assert causes["on_demand"] == causes["provisioned"] == 0
    # only what was served is billed
    assert r.cost_usd == pytest.approx(sum(r.recorded.served) * 60 * 0.625 / 1e6)
    # the table quota caps it too
    quota = _run([50_000.0] * 10, warm_write_units=100_000)
    assert _refused(quota) == [10_000.0] * 10


@pytest.mark.parametrize("level", [1.0, WARM, 3 * WARM, 39_000.0])
def test_a_flat_trace_is_never_refused(level: float) -> None:
    r = _run([level] * 300)
    assert r.throttled_requests == 0 and r.throttled_minutes == 0
    assert r.throttled_by_cause == dict.fromkeys(r.throttled_by_cause, 0)


def test_warm_throughput_raises_what_a_new_table_serves_at_once() -> None:
    writes = [2 * WARM] * 60  # one doubling of a new table's
    cold = _run(writes, warmup_minutes=0)
    warm = _run(writes, warmup_minutes=0, warm_write_units=int(2 * WARM))
    assert cold.throttled_minutes == LAG and cold.first_throttle_minute == 0
    assert warm.throttled_requests == 0
    # warm throughput below a new table's changes nothing
    assert vars(_run(writes, warmup_minutes=0, warm_write_units=1).recorded) == vars(cold.recorded)


def _rule(demand: list[float], warm: float, lag: int, warmup: int) -> list[float]:
    """The documented rule, minute by minute: refused = what exceeds the larger of the warm
    throughput and double the highest traffic served ``lag`` or more minutes before."""
    served = [demand[0]] * warmup
    refused = []
    for d in demand:
        old = served[: len(served) - lag + 1] if len(served) >= lag else []
        limit = max([warm] + [2 * s for s in old])
        refused.append(max(0.0, d - limit))
        served.append(d - refused[-1])
    return refused


def test_the_spike_throttles_for_the_documented_30_minutes() -> None:
    """The spike: writes jump from 4,000-5,000 to about 18,000 at 13:00. Double the quiet
    hour's peak (under 10,000) is refused the rest for 30 minutes; then double what was
    served at 13:00 (about 20,000) covers it. Reads (about 1,000) stay under 12,000."""
    trace = scenario("spike")
    params = ModelParams()
    read, write = run_policy(parse("on-demand"), trace, params, Prices())
    demand = trace.demand[(None, "write")]
    expected = _rule(demand, WARM, 30, params.warmup_minutes)
    assert [t for t, v in enumerate(expected) if v > 0] == list(range(60, 90))
    assert _refused(write) == pytest.approx(expected)
    assert write.first_throttle_minute == 60 and write.throttled_minutes == 30
    assert write.throttled_by_cause["on_demand"] == pytest.approx(sum(expected) * 60)
    assert read.throttled_requests == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("on_demand_peak_minutes", 0),
        ("on_demand_peak_minutes", 1.5),
        ("on_demand_max_read_units", 0),
        ("on_demand_max_write_units", -1),
        ("on_demand_max_write_units", 2_000_000),
    ],
)
def test_the_on_demand_fields_are_validated(field: str, value: float) -> None:
    overrides: dict[str, Any] = {field: value}
    with pytest.raises(ModelError, match=rf"^{field}: got {value!r}; expected a whole number"):
        ModelParams(**overrides).validate()
    flag = "--" + field.replace("_", "-")
    with pytest.raises(ModelError, match=rf"^{flag}: got"):
        ModelParams(**overrides).validate(flags=True)


def test_unlimited_is_the_default_and_none_is_accepted() -> None:
    params = ModelParams(on_demand_max_read_units=None).validate()
    assert params.on_demand_max_write_units is None
    with pytest.raises(ModelError, match="or None \\(unlimited\\)"):
        ModelParams(on_demand_max_read_units=0).validate()
