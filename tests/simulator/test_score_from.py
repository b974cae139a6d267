"""Scoring from a minute (``run_policy(..., score_from=...)``): policies run over, see and
learn from every minute, and the results count from that minute on."""

from __future__ import annotations

import math
import random

import pytest

from ddb_capacity_tools.simulator import ModelParams, PolicyError, Prices, parse, run_policy
from ddb_capacity_tools.simulator.ensemble import run_ensemble, settings_of
from ddb_capacity_tools.simulator.ensemble import table as ensemble_table
from ddb_capacity_tools.simulator.run import DimensionResult, simulate
from ddb_capacity_tools.simulator.scenarios import START, scenario
from ddb_capacity_tools.simulator.trace import Trace

PRICES = Prices()
#: Every kind of policy, the oracle and the bound among them.
POLICIES = ("stock:70", "autopilot+stock:70", "fixed:9000", "on-demand", "oracle", "bound")
#: Policies whose own decisions do not look at the results' first minute.
BLIND = ("stock:70", "autopilot+stock:70", "fixed:9000", "on-demand")


def _trace(days: int = 2, seed: int = 7) -> Trace:
    """A daily swing with noise and a few bursts: throttles, decreases and costs each day."""
    rng = random.Random(seed)  # noqa: S311 (a reproducible trace, not a secret)
    reads, writes = [], []
    for m in range(days * 1440):
        s = ((1 + math.cos(2 * math.pi * ((m % 1440) / 60 - 20) / 24)) / 2) ** 4
        burst = 10.0 if m % 1440 in range(600, 620) else 1.0
        reads.append((1_000 + 12_000 * s) * rng.lognormvariate(0, 0.2) * burst)
        writes.append((200 + 3_000 * s) * rng.lognormvariate(0, 0.2) * burst)
    return Trace("swing", START, {(None, "read"): reads, (None, "write"): writes})


def _run(policy: str, trace: Trace, score_from: int | None = None) -> list[DimensionResult]:
    """Billed by the minute, so a later start's cost is a difference of cumulative sums."""
    params = ModelParams(billing="per-minute")
    return run_policy(parse(policy), trace, params, PRICES, score_from=score_from)


@pytest.fixture(scope="module")
def trace() -> Trace:
    return _trace()


@pytest.fixture(scope="module")
def full(trace: Trace) -> dict[str, list[DimensionResult]]:
    return {p: _run(p, trace) for p in POLICIES}


@pytest.mark.parametrize("policy", POLICIES)
def test_scoring_from_0_is_not_scoring(
    policy: str, trace: Trace, full: dict[str, list[DimensionResult]]
) -> None:
    for scored, whole in zip(_run(policy, trace, 0), full[policy], strict=True):
        assert scored.as_json() == whole.as_json()
        assert vars(scored) == vars(whole)
        assert scored.score_from == whole.score_from == 0


@pytest.mark.parametrize("policy", BLIND)
@pytest.mark.parametrize("start", [1, 1440 + 600, 2 * 1440 - 1])
def test_a_later_start_counts_the_difference_of_cumulative_sums(
    policy: str, start: int, trace: Trace, full: dict[str, list[DimensionResult]]
) -> None:
    for scored, whole in zip(_run(policy, trace, start), full[policy], strict=True):
        r = whole.recorded
        assert vars(scored.recorded) == vars(r)  # every decision, before the start too
        assert scored.score_from == scored.as_json()["score_from"] == start
        assert scored.throttled_requests == pytest.approx(
            whole.throttled_requests - sum(r.throttled[:start]) * 60
        )
        assert scored.throttle_events == pytest.approx(
            whole.throttle_events - sum(r.throttle_events[:start])
        )
        before = sum(1 for v in r.throttled[:start] if v > 1e-9)
        assert scored.throttled_minutes == whole.throttled_minutes - before
        if scored.first_throttle_minute is not None:
            assert scored.first_throttle_minute >= start
            assert r.throttled[scored.first_throttle_minute] > 1e-9
            assert not any(v > 1e-9 for v in r.throttled[start : scored.first_throttle_minute])
        assert scored.provisioned_unit_hours == pytest.approx(
            whole.provisioned_unit_hours - sum(r.provisioned[:start]) / 60
        )
        assert scored.demand_unit_hours == pytest.approx(
            whole.demand_unit_hours - sum(r.demand[:start]) / 60
        )
        unit = PRICES.unit_hour(whole.key[1])
        earlier = (
            sum(r.served[:start]) * 60 * PRICES.request_unit(whole.key[1])
            if policy == "on-demand"
            else sum(r.provisioned[:start]) / 60 * unit
        )
        assert scored.cost_usd == pytest.approx(whole.cost_usd - earlier)
        # one change lands per minute (UpdateTable latency 1): a decrease is a lower minute
        lower = sum(1 for i in range(1, start) if r.provisioned[i] < r.provisioned[i - 1])
        assert scored.decreases == whole.decreases - lower
        assert scored.peak_provisioned == max(r.provisioned[start:])
        assert sum(scored.throttled_by_cause.values()) == pytest.approx(scored.throttled_requests)


def test_the_scores_move_with_the_start(
    trace: Trace, full: dict[str, list[DimensionResult]]
) -> None:
    """Not a vacuous check: the trace throttles, decreases and costs before the middle."""
    whole = full["stock:70"][0]
    later = _run("stock:70", trace, 1440)[0]
    assert whole.throttled_requests > later.throttled_requests > 0
    assert whole.decreases > later.decreases > 0
    assert whole.cost_usd > later.cost_usd > 0


@pytest.mark.parametrize("start", [700, 1440 + 7])
def test_the_oracle_and_the_bound_plan_the_scored_minutes(
    start: int, trace: Trace, full: dict[str, list[DimensionResult]]
) -> None:
    oracle = _run("oracle", trace, start)
    floor = _run("bound", trace, start)
    stock = _run("stock:70", trace, start)
    for o, whole, b, s in zip(oracle, full["oracle"], floor, stock, strict=True):
        assert o.throttled_requests == 0 == sum(o.recorded.throttled)  # before the start too
        # as cheap as the whole trace's plan over the same minutes, within the 1 % its
        # dynamic program (a search, not an exact optimum) may miss by on another objective
        same = whole.cost_usd - sum(whole.recorded.provisioned[:start]) / 60 * (
            PRICES.unit_hour(o.key[1])
        )
        assert o.cost_usd <= 1.01 * same
        assert b.cost_usd <= o.cost_usd + 1e-9
        assert b.cost_usd <= s.cost_usd or s.throttled_requests > 0
        assert len(b.recorded.provisioned) == trace.minutes
        assert b.cost_usd < full["bound"][0 if o.key[1] == "read" else 1].cost_usd


def test_simulate_scores_every_policy_from_the_start(trace: Trace) -> None:
    specs = [parse(p) for p in ("stock:70", "on-demand", "bound")]
    for workers in (1, 2):
        params = ModelParams(billing="per-minute")  # as _run
        results = simulate(trace, specs, params, progress=None, workers=workers, score_from=1500)
        assert [r.score_from for r in results] == [1500] * 6
        alone = [r for s in specs for r in _run(s.text, trace, 1500)]
        assert [r.as_json() for r in results] == [r.as_json() for r in alone]


@pytest.mark.parametrize("bad", [-1, 2 * 1440, 1.5, True, "60"])
def test_a_start_outside_the_trace_is_refused(bad: object, trace: Trace) -> None:
    with pytest.raises(PolicyError, match=r"score_from: got .*; expected a whole minute from 0 to"):
        _run("stock:70", trace, bad)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="score_from"):
        simulate(trace, [parse("stock:70")], progress=None, score_from=bad)  # type: ignore[arg-type]


def test_the_spike_scored_after_it_is_quiet() -> None:
    """The spike's throttles fall before the minute scored from: none are counted."""
    spike = scenario("spike")
    whole = _run("stock:70", spike)
    first = max(r.first_throttle_minute or 0 for r in whole)
    last = max(i for r in whole for i, v in enumerate(r.recorded.throttled) if v > 1e-9)
    assert first > 0
    later = _run("stock:70", spike, last + 1)
    assert all(r.throttled_requests == 0 and r.first_throttle_minute is None for r in later)


def test_an_ensemble_scores_every_setting_from_the_start(trace: Trace) -> None:
    settings = settings_of("plausible", ModelParams())[:3]
    specs = [parse("stock:70"), parse("on-demand")]
    start = 1440
    spread = run_ensemble(trace, specs, settings, PRICES, workers=1, score_from=start)
    for r in spread:
        per_setting = [
            next(
                x
                for x in simulate(trace, specs, p, PRICES, progress=None, score_from=start)
                if x.policy == r.policy and x.key == r.key
            )
            for p in settings
        ]
        assert [x.cost_usd for x in r.runs] == [x.cost_usd for x in per_setting]
        assert r.throttled_requests.max == max(x.throttled_requests for x in per_setting)
        assert all(x.score_from == start for x in r.runs)
    whole = run_ensemble(trace, specs, settings, PRICES, workers=1)
    assert sum(r.cost_usd.median for r in spread) < sum(r.cost_usd.median for r in whole)
    # the table says what its dollars cover: the scored part, or the whole trace
    assert "cost $ (scored) min / med / max" in ensemble_table(spread, "plausible", 3)
    assert "cost $ (trace) min / med / max" in ensemble_table(whole, "plausible", 3)
