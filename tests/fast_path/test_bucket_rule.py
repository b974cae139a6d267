"""The burst-bucket rule (``core.bucket``): a surge starts only when the bucket would empty
before a raise lands; an estimate that starts empty, refills at what is provisioned less what
is consumed, is emptied by refusals and set aside when they prove it wrong; read back from the
state store as untrusted text. And the simulator's fast path, which calls the same rule: a
noise-only trace raises nothing, a step that would empty the bucket still does. The numbers
expected are worked out here from the documented rule, not from the code's own functions."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core import bucket as rule
from ddb_capacity_runtime.core.bucket import Bucket, Drain, advance, read_bucket, would_empty
from ddb_capacity_runtime.core.policy import HOLD, INCREASE
from ddb_capacity_runtime.core.surge import Combined, surge_level
from ddb_capacity_tools.simulator import ModelParams, Prices, parse
from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.policies import ThrottleAware
from ddb_capacity_tools.simulator.run import build
from ddb_capacity_tools.simulator.scenarios import START, noisy
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.hypothesis_profiles import examples

WRITE = (None, "write")
READ = (None, "read")


# ---------------------------------------------------------------- the estimate


def test_an_unknown_estimate_starts_empty_and_refills_at_the_unused_capacity() -> None:
    first = advance(None, 100, 40.0, 1_000.0)
    assert (first.level, first.at, first.provisioned, first.rate) == (0.0, 1_000.0, 100, 40.0)
    # 10 s later at 40/s: (100 - 40) x 10 = 600 unit-seconds
    assert advance(first, 100, 40.0, 1_010.0).level == 600.0
    # the higher of the two rates counts over the gap: (100 - 70) x 10
    assert advance(first, 100, 70.0, 1_010.0).level == 300.0
    # and the lower of the two capacities: (80 - 40) x 10
    assert advance(first, 80, 40.0, 1_010.0).level == 400.0


def test_over_a_gap_the_higher_rate_and_the_lower_capacity_count_whichever_end_saw_them() -> None:
    # GIVEN an estimate seen at 100 units provisioned and 40/s consumed
    first = advance(None, 100, 40.0, 1_000.0)
    # THEN 10 s later at 10/s, the 40/s seen at the start counts: (100 - 40) x 10
    assert advance(first, 100, 10.0, 1_010.0).level == 600.0
    # and 10 s later at 150 units, the 100 provisioned at the start: (100 - 40) x 10
    assert advance(first, 150, 40.0, 1_010.0).level == 600.0


def test_the_estimate_holds_at_most_half_of_what_dynamodb_keeps() -> None:
    kept = Bucket(0.0, 0.0, 100, 0.0)
    full = advance(kept, 100, 0.0, 299.0)  # 100 x 299 s unused
    assert full.level == 150 * 100  # 150 s of the capacity, not 299 (nor DynamoDB's 300)
    assert rule.ASSUMED_BURST_SECONDS * 2 == rule.BURST_SECONDS


def test_demand_over_the_capacity_drains_it_and_a_long_gap_forgets_it() -> None:
    kept = Bucket(10_000.0, 0.0, 100, 100.0)
    assert advance(kept, 100, 160.0, 60.0).level == 10_000.0 - 60 * 60
    assert advance(kept, 100, 400.0, 60.0).level == 0.0  # never below empty
    assert advance(kept, 100, 10.0, 301.0).level == 0.0  # 301 s unseen: unknown again


def test_an_estimate_from_another_clock_is_carried_without_refilling() -> None:
    kept = Bucket(5_000.0, 2_000.0, 100, 10.0)
    later = advance(kept, 100, 10.0, 1_990.0)
    assert (later.level, later.at) == (5_000.0, 2_000.0)


def test_refusals_empty_the_estimate_and_set_a_wrong_one_aside_for_a_day() -> None:
    # it still held 2,000 unit-seconds, 20 s of 100 units: it was wrong
    kept = Bucket(2_000.0, 0.0, 100, 100.0)
    wrong = advance(kept, 100, 100.0, 5.0, refused=True)
    assert wrong.level == 0.0 and wrong.until == 5.0 + 24 * 3600 and not wrong.trusted
    assert would_empty(Bucket(15_000.0, 100.0, 100, 10.0, wrong.until), 120.0, 100, 500, 10)
    # it held 5 s of the capacity: the bucket emptied as estimated, nothing set aside
    nearly = advance(Bucket(500.0, 0.0, 100, 100.0), 100, 100.0, 5.0, refused=True)
    assert nearly.level == 0.0 and nearly.until == 0.0 and nearly.trusted


def test_the_stored_text_reads_back_and_anything_else_is_unknown() -> None:
    b = Bucket(1_234.0, 1_700_000_000.0, 100, 12.5, 1_700_003_600.0, 1_699_999_990.0)
    assert read_bucket(b.text(), 1_700_000_010.0, 40_000) == b
    now, quota = 1_700_000_010.0, 40_000
    for bad in (
        None,
        7,
        "",
        "1:2:3:4:5",  # five parts: another shape
        "x:1700000000:100:1.0:0:0",
        "-1:1700000000:100:1.0:0:0",
        "nan:1700000000:100:1.0:0:0",
        "inf:1700000000:100:1.0:0:0",
        "1:1700000999:100:1.0:0:0",  # its time ahead of the reader's
        "1:1700000000:50000:1.0:0:0",  # units over the quota
        "15001:1700000000:100:1.0:0:0",  # more than the bucket holds
        "1:1700000000:100:1.0:1800000000:0",  # set aside for years
        "1:1700000000:100:1.0:0:1700000001",  # pinned since after its own time
        "1:1700000000:100.5:1.0:0:0",
        "9" * 97,
    ):
        assert read_bucket(bad, now, quota) is None, bad


@given(
    level=st.floats(0, 1e9),
    at=st.floats(0, 2e9),
    provisioned=st.integers(0, 40_000),
    rate=st.floats(0, 1e6),
    now=st.floats(0, 2e9),
)
@settings(max_examples=examples(200), deadline=None)
def test_any_text_read_back_is_within_the_bounds(
    level: float, at: float, provisioned: int, rate: float, now: float
) -> None:
    text = f"{level:.0f}:{at:.0f}:{provisioned}:{rate:.1f}:0:0"
    got = read_bucket(text, now, 40_000)
    if got is not None:
        assert 0 <= got.level <= 150 * got.provisioned
        assert got.at <= now + 60 and got.provisioned <= 40_000


def test_an_estimate_at_each_bound_reads_back() -> None:
    now, quota, day = 1_700_000_000.0, 40_000, 24 * 3600
    # GIVEN estimates that touch each bound the reader checks, and no more
    for good in (
        Bucket(0.0, now, 0, 0.0),  # empty, never set aside, never pinned: zeros
        Bucket(1.0, now, quota, 1.0),  # units at the quota
        Bucket(1.0, now + 60, 100, 1.0),  # a minute ahead of the reader's clock
        Bucket(15_000.0, now, 100, 1.0),  # 150 s of its 100 units: what it holds at most
        Bucket(1.0, now, 100, 10.0 * quota),  # consumed at ten times the quota
        Bucket(0.0, now, 100, 100.0, now + day),  # set aside for a day from its time
        Bucket(1.0, now, 100, 101.0, 0.0, now),  # pinned since its own time
    ):
        # THEN each reads back as it was written
        assert read_bucket(good.text(), now, quota) == good, good
    # AND one step past a bound is not read
    for bad in ("1:1700000061:100:1.0:0:0", "1:1700000000:40001:1.0:0:0"):
        assert read_bucket(bad, now, quota) is None, bad


def test_an_estimate_consumed_at_over_ten_times_the_quota_is_not_read() -> None:
    now, quota = 1_700_000_000.0, 40_000
    # a rate a tenth of a unit over ten times the quota is no rate a dimension consumes
    assert read_bucket(f"1:{now:.1f}:100:{10 * quota + 0.1:.1f}:0:0", now, quota) is None


def test_what_advance_writes_when_refused_or_pinned_reads_back() -> None:
    # GIVEN an estimate found wrong at 5 s, and one first seen pinned at 5 s
    wrong = advance(Bucket(2_000.0, 0.0, 100, 100.0), 100, 100.0, 5.0, refused=True)
    pinned = advance(Bucket(2_000.0, 0.0, 100, 50.0), 100, 101.0, 5.0)
    assert wrong.until == 5.0 + 24 * 3600 and pinned.pinned_since == 5.0
    # THEN both read back from the state store as they were
    assert read_bucket(wrong.text(), 5.0, 40_000) == wrong
    assert read_bucket(pinned.text(), 5.0, 40_000) == pinned


def test_a_first_look_records_a_pinned_start_and_never_a_rate_below_zero() -> None:
    # GIVEN a first look at 101/s on 100 units: pinned at the capacity from then
    assert advance(None, 100, 101.0, 5.0).pinned_since == 5.0
    # AND a first look told a rate below zero (a report that cannot be): taken as 0/s
    first = advance(None, 100, -50.0, 0.0)
    assert first.rate == 0.0
    # THEN 10 s later at the same report, the bucket refills at the capacity, no faster
    assert advance(first, 100, -50.0, 10.0).level == 1_000.0


def test_a_gap_of_exactly_the_longest_carried_keeps_the_estimate() -> None:
    kept = Bucket(1_000.0, 0.0, 100, 100.0)
    # 300 s unseen at the capacity: carried (nothing refilled); a second more forgets it
    assert advance(kept, 100, 100.0, 300.0).level == 1_000.0
    assert advance(kept, 100, 100.0, 301.0).level == 0.0


def test_refusals_prove_an_estimate_wrong_only_past_ten_seconds_of_the_capacity() -> None:
    # GIVEN refusals while the estimate held exactly 10 s of 100 units: not wrong
    exact = advance(Bucket(1_000.0, 0.0, 100, 100.0), 100, 100.0, 0.0, refused=True)
    assert exact.level == 0.0 and exact.until == 0.0
    # AND a unit-second more: wrong, set aside for a day
    more = advance(Bucket(1_001.0, 0.0, 100, 100.0), 100, 100.0, 0.0, refused=True)
    assert more.until == 24 * 3600


def test_consumption_is_pinned_up_to_two_percent_over_the_capacity() -> None:
    assert rule.pinned(100.0, 100) and rule.pinned(102.0, 100)
    assert not rule.pinned(99.9, 100) and not rule.pinned(102.1, 100)


def test_the_bucket_is_due_when_it_holds_exactly_what_the_wait_drains() -> None:
    # 130/s on 100 units drains 30/s; a raise sent at the next look (10 s) lands 300 s
    # later above the warm throughput: 310 s x 30 = 9,300 drained
    assert would_empty(Bucket(9_300.0, 0.0, 100, 130.0), 130.0, 100, None, 10.0)
    assert not would_empty(Bucket(9_301.0, 0.0, 100, 130.0), 130.0, 100, None, 10.0)
    # demand exactly at the warm throughput lands in 10 s: 20 s x 30 = 600
    assert not would_empty(Bucket(601.0, 0.0, 100, 130.0), 130.0, 100, 130, 10.0)
    assert would_empty(Bucket(601.0, 0.0, 100, 130.0), 130.0, 100, 129, 10.0)


# ---------------------------------------------------------------- the rule


def test_a_surge_is_due_only_when_the_bucket_would_empty_before_a_raise_lands() -> None:
    full = Bucket(15_000.0, 0.0, 100, 130.0)
    # 130/s on 100 units drains 30/s; within warm throughput a raise sent at the next look
    # (10 s) lands 10 s later: 20 s x 30 = 600 < 15,000: the bucket lasts
    assert not would_empty(full, 130.0, 100, 1_000, 10.0)
    # above the warm throughput it lands 300 s later: 310 s x 30 = 9,300, still < 15,000
    assert not would_empty(full, 130.0, 100, None, 10.0)
    # 250/s: 310 s x 150 = 46,500 > 15,000 with no warm throughput; 20 s x 150 within it
    assert would_empty(full, 250.0, 100, None, 10.0)
    assert not would_empty(full, 250.0, 100, 1_000, 10.0)
    low = Bucket(500.0, 0.0, 100, 130.0)
    assert would_empty(low, 130.0, 100, 1_000, 10.0)  # 600 > 500
    assert would_empty(None, 101.0, 100, 1_000, 10.0)  # not known: due


def test_the_stream_blind_to_refusals_reads_consumption_pinned_a_while_as_empty() -> None:
    full = Bucket(15_000.0, 0.0, 100, 50.0)
    once = advance(full, 100, 101.0, 10.0)  # served at 101/s on 100 units: pinned, once
    assert once.pinned_since == 10.0
    assert not would_empty(once, 101.0, 100, 1_000, 10.0, blind=True)
    twice = advance(once, 100, 100.0, 20.0)  # and still, 10 s later
    assert twice.pinned_since == 10.0
    assert would_empty(twice, 100.0, 100, 1_000, 10.0, blind=True)
    assert not would_empty(twice, 100.0, 100, 1_000, 10.0, blind=False)  # the hook sees throttles
    # 130/s is served from the bucket, not pinned: the run of pinned looks ends
    above = advance(twice, 100, 130.0, 30.0)
    assert above.pinned_since == 0.0
    assert not would_empty(above, 130.0, 100, 1_000, 10.0, blind=True)


def test_noise_the_bucket_absorbs_raises_nothing_and_throttles_always_do() -> None:
    drain = Drain(Bucket(15_000.0, 0.0, 1_000, 1_300.0), 2_000, 10.0)
    noise = Combined(demand=1_300.0, consumed=1_300.0, processes=3)
    assert surge_level(noise, 1_000, 0.7, 40_000) == math.ceil(1_300 / 0.7)  # without the rule
    assert surge_level(noise, 1_000, 0.7, 40_000, drain=drain) is None
    throttled = Combined(demand=1_300.0, throttled=5.0, consumed=1_000.0, processes=3)
    assert surge_level(throttled, 1_000, 0.7, 40_000, drain=drain) == math.ceil(1_300 / 0.7)
    unknown = Combined(demand=1_300.0, unknown=5.0, consumed=1_000.0, processes=3)
    assert surge_level(unknown, 1_000, 0.7, 40_000, drain=drain) == math.ceil(1_300 / 0.7)
    # a surge held is renewed whatever the bucket: the rule decides only a new one
    assert surge_level(noise, 1_858, 0.7, 40_000, held=1_858, base=1_000, drain=drain) == 1_858


@pytest.mark.parametrize("warm", [None, 1_000])
def test_a_step_that_would_empty_the_bucket_is_due_at_once(warm: int | None) -> None:
    drain = Drain(Bucket(15_000.0, 0.0, 100, 100.0), warm, 10.0)
    step = Combined(demand=1_000.0, consumed=1_000.0, processes=1)
    # 900/s over: 20 s x 900 = 18,000 > 15,000 even within the warm throughput
    assert surge_level(step, 100, 0.7, 40_000, drain=drain) == math.ceil(1_000 / 0.7)


# ---------------------------------------------------------------- the simulator


def _floors(trace: Trace, **model: object) -> tuple[dict[int, int], SimulatedTable]:
    """``autopilot+stock:90`` with the fast path over ``trace``: per minute, the level the
    surge holds on the busier dimension (0: none), and the table."""
    params = ModelParams(warmup_minutes=60, **model).validate()  # type: ignore[arg-type]
    policy = build(parse("autopilot+stock:90"), trace, params, Prices(), None, 5)
    assert isinstance(policy, ThrottleAware) and policy.fast is not None
    sim = SimulatedTable(trace, params, policy.initial(trace, params))
    held: dict[int, int] = {}
    for t in range(-60, trace.minutes):
        sim.begin_minute(t)
        policy.act(sim, t)
        sim.end_minute(t)
        held[t] = max(policy.fast.floor(k, t) for k in (READ, WRITE))
    return held, sim


def _over(trace: Trace, sim: SimulatedTable, key: tuple[str | None, str]) -> int:
    """The minutes after the first hour whose demand went over what was provisioned."""
    recorded = sim.recorded[key]
    return sum(
        1 for m in range(60, trace.minutes) if trace.demand[key][m] > recorded.provisioned[m]
    )


@pytest.mark.parametrize("signal", [{"fast_path_seconds": 20}, {"stream_seconds": 5}])
def test_a_noise_only_trace_raises_nothing_in_the_simulator(signal: dict[str, int]) -> None:
    trace = noisy(3, events=20.0, units=10.0, days=1)
    held, sim = _floors(trace, **signal)
    # no surge starts once the estimate has had an hour to fill (it starts empty: unknown)
    starts = [t for t in range(60, trace.minutes) if held[t] and not held[t - 1]]
    assert starts == []
    # and not because the noise stayed under the capacity: it went over, often
    assert _over(trace, sim, WRITE) + _over(trace, sim, READ) >= 20
    assert sum(sim.recorded[WRITE].throttled[60:]) == 0


@pytest.mark.parametrize("signal", [{"fast_path_seconds": 20}, {"stream_seconds": 5}])
def test_a_step_the_bucket_cannot_absorb_still_surges(signal: dict[str, int]) -> None:
    demand = [200.0] * 120 + [1_500.0] * 30
    trace = Trace("step", START, {WRITE: demand, READ: [600.0] * 150})
    held, _ = _floors(trace, **signal)
    assert not any(held[t] for t in range(60, 120))
    assert any(held[t] for t in range(120, 123))  # within the step's first minutes


# ---------------------------------------------------------------- the scaler's tick


def test_the_autopilot_on_target_tracking_leaves_noise_over_the_capacity_to_the_bucket() -> None:
    from ddb_capacity_runtime.core.policy import DimensionState, autopilot_config, decide

    def state(provisioned: int, consumed: list[float]) -> DimensionState:
        now = datetime(2026, 1, 5, 12, tzinfo=UTC)
        n = len(consumed)
        return DimensionState(
            provisioned=provisioned,
            consumed=consumed,
            throttles=[0.0] * n,
            minute_starts=[now - timedelta(minutes=n - i + 1) for i in range(n)],
            min_capacity=5,
            max_capacity=10_000,
            now=now,
        )

    # 13 quiet minutes at 600 of 1,000, then two at 1,200: 20 % over the capacity. The
    # window's estimate: (1,000 - 600) x 60 s a minute fills 150 s of the capacity
    # (150,000) by the 7th minute; two minutes at 1,200 drain 24,000 of it. Over the next
    # 180 s and a raise's 300 s, 1,200 / s drains 200 x 480 = 96,000: the bucket lasts.
    noise = state(1_000, [600.0] * 13 + [1_200.0] * 2)
    assert decide(noise, autopilot_config(), tracked=True).action == HOLD
    # alone (no target tracking to scale out), the autopilot raises as before
    assert decide(noise, autopilot_config()).capacity == math.ceil(1_200 / 0.7)
    # 1,300 / s drains 300 x 480 = 144,000, more than the 114,000 left: raised
    over = state(1_000, [600.0] * 13 + [1_300.0] * 2)
    assert decide(over, autopilot_config(), tracked=True).action == INCREASE
    # 3x the capacity drains 2,000 x 480 = 960,000 > what is left: raised at once
    step = state(1_000, [600.0] * 13 + [3_000.0] * 2)
    assert decide(step, autopilot_config(), tracked=True).action == INCREASE
    # a window that is short of minutes starts empty: raised
    short = state(1_000, [1_300.0] * 2)
    assert decide(short, autopilot_config(), tracked=True).action == INCREASE


def test_load_at_exactly_the_capacity_drains_no_bucket_and_is_raised_for() -> None:
    from ddb_capacity_runtime.core.policy import autopilot_config, decide
    from tests.support.policy import state

    # GIVEN 13 quiet minutes at 600 of 1,000 (the bucket fills), then two at exactly 1,000:
    # above the 70 % target, but not over the capacity, so no bucket is drawn on
    at_capacity = state(1_000, [600.0] * 13 + [1_000.0] * 2)
    # WHEN the autopilot on target tracking decides
    d = decide(at_capacity, autopilot_config(), tracked=True)
    # THEN it raises for the load above the target, as without the bucket: 1,000 / 0.7
    assert (d.action, d.capacity) == (INCREASE, 1_429)


def test_one_throttle_event_in_the_window_leaves_nothing_to_the_bucket() -> None:
    from ddb_capacity_runtime.core.policy import autopilot_config, decide
    from tests.support.policy import state

    # GIVEN the noise the bucket absorbs (13 minutes at 600 of 1,000, two at 1,200)
    consumed = [600.0] * 13 + [1_200.0] * 2
    assert decide(state(1_000, consumed), autopilot_config(), tracked=True).action == HOLD
    # WHEN one request was refused 12 minutes ago (older than the recent minutes)
    throttles = [0.0] * 15
    throttles[3] = 1.0
    d = decide(state(1_000, consumed, throttles), autopilot_config(), tracked=True)
    # THEN the estimate is not trusted: raised to the peak at the target
    assert (d.action, d.capacity) == (INCREASE, math.ceil(1_200 / 0.7))


def test_the_surges_benchmark_runs_in_its_quick_mode_and_a_lie_buys_no_more(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import surges

    assert surges.main(["--quick", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    verdicts = [line for line in out.splitlines() if line.startswith(("PASS ", "MISS "))]
    assert len(verdicts) == 3 + 3 + 2  # one noisy trace x 3, the flash crowd x 3, the liar x 2
    assert all(v.startswith("PASS ") for v in verdicts if v[5:].startswith("liar"))
    assert all("from the goal:" in v for v in verdicts if v.startswith("MISS "))
