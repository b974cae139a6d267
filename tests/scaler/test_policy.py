"""The pure layers of the scaler: the decrease-quota ledger and the policy."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.decreases import DecreaseLedger
from ddb_capacity_runtime.core.policy import (
    DECREASE,
    HOLD,
    INCREASE,
    Decision,
    DimensionState,
    PolicyConfig,
    autopilot_config,
    combine_counter,
    decide,
    decide_scalable_min,
)
from tests.support.hypothesis_profiles import examples
from tests.support.policy import CONFIG, NOON, state

# ------------------------------------------------------------------ ledger


def test_four_decreases_at_any_time() -> None:
    ledger = DecreaseLedger()
    for _ in range(4):
        assert ledger.can_decrease(NOON)
        ledger = ledger.spend(NOON)
    assert not ledger.can_decrease(NOON + timedelta(minutes=59))
    assert ledger.can_decrease(NOON + timedelta(hours=1))


def test_at_most_27_a_day() -> None:
    ledger = DecreaseLedger(27, NOON - timedelta(hours=3))
    assert not ledger.can_decrease(NOON)
    assert ledger.remaining_today(NOON) == 0


def test_the_27th_decrease_of_a_day_is_allowed_after_an_hour_without_one() -> None:
    # 26 spent, the last 3 hours ago: one more today, and DynamoDB's 27 is a counter it can tell
    ledger = DecreaseLedger(26, NOON - timedelta(hours=3))
    assert ledger.can_decrease(NOON) and ledger.remaining_today(NOON) == 1
    reported = {"NumberOfDecreasesToday": 27, "LastDecreaseDateTime": NOON}
    assert DecreaseLedger.from_throughput(reported, NOON).decreases_today == 27


def test_a_table_that_tells_no_decrease_counter_has_spent_none() -> None:
    # no NumberOfDecreasesToday (a table never decreased): 4 now, then one an hour 13:00-23:00
    for reported in ({}, {"NumberOfDecreasesToday": None}):
        ledger = DecreaseLedger.from_throughput(reported, NOON)
        assert ledger.decreases_today == 0 and ledger.remaining_today(NOON) == 4 + 11


def test_counter_resets_at_utc_midnight() -> None:
    ledger = DecreaseLedger(27, datetime(2026, 11, 19, 23, 59, tzinfo=UTC))
    assert ledger.can_decrease(datetime(2026, 11, 20, 0, 0, tzinfo=UTC))


def test_a_last_decrease_at_midnight_utc_counts_today_and_one_before_it_does_not() -> None:
    midnight = datetime(2026, 11, 20, 0, 0, tzinfo=UTC)
    for last, counted in ((midnight, 6), (midnight - timedelta(microseconds=1), 0)):
        reported = {"NumberOfDecreasesToday": 6, "LastDecreaseDateTime": last}
        assert DecreaseLedger.from_throughput(reported, NOON).decreases_today == counted


def test_the_reserve_is_spent_for_a_saving_of_exactly_the_least_fall_or_the_large_share() -> None:
    # a ledger with its last decreases: everything left is the reserve
    ledger = DecreaseLedger(4, NOON - timedelta(hours=2))
    left = ledger.remaining_today(NOON)

    def allows(saving: float, units: int = 0, least_fall: int = 0) -> bool:
        return ledger.allows(
            NOON,
            saving,
            reserve=left,
            large_saving_fraction=0.5,
            saving_units=units,
            least_fall=least_fall,
        )[0]

    assert allows(0.1, 300, least_fall=300) and not allows(0.1, 299, least_fall=300)
    assert allows(0.5) and not allows(0.49)


@pytest.mark.parametrize("last", [None, "x"], ids=["missing", "not-a-time"])
def test_a_counter_past_the_free_ones_without_a_sound_last_decrease_takes_none_for_granted(
    last: object,
) -> None:
    # 10 spent today, the last one's time not said (or not a time): its hourly slot may be
    # taken, so none now; the next at 13:00, then one an hour to 23:00
    reported = {"NumberOfDecreasesToday": 10, "LastDecreaseDateTime": last}
    ledger = DecreaseLedger.from_throughput(reported, NOON)
    assert not ledger.can_decrease(NOON) and ledger.can_decrease(NOON + timedelta(hours=1))
    assert ledger.remaining_today(NOON) == 11
    # below the free ones the time does not matter: 2 spent leave 2 now
    free = DecreaseLedger.from_throughput({"NumberOfDecreasesToday": 2}, NOON)
    assert free.can_decrease(NOON) and free.remaining_today(NOON) == 2 + 11


def test_from_throughput_trusts_dynamodb() -> None:
    reported = {"NumberOfDecreasesToday": 6, "LastDecreaseDateTime": NOON - timedelta(minutes=20)}
    ledger = DecreaseLedger.from_throughput(reported, NOON)
    assert ledger.decreases_today == 6 and not ledger.can_decrease(NOON)


def test_remaining_today() -> None:
    # at 12:00 with none spent: 4 now, then one per hour from 13:00 to 23:00
    assert DecreaseLedger().remaining_today(NOON) == 4 + 11
    # at 22:30 after 4: one at 22:30 (hour passed), then one at 23:30
    late = datetime(2026, 11, 20, 22, 30, tzinfo=UTC)
    assert DecreaseLedger(4, late - timedelta(hours=2)).remaining_today(late) == 2


def test_remaining_today_waits_an_hour_from_the_last_decrease() -> None:
    # 4 spent, the last at 12:00; at 12:30 the next is at 13:00, then hourly to 23:00
    ledger = DecreaseLedger(4, NOON)
    assert ledger.remaining_today(NOON + timedelta(minutes=30)) == 11
    # at 23:30 after one at 23:10, the next would be at 00:10: none left today
    late = datetime(2026, 11, 20, 23, 30, tzinfo=UTC)
    assert DecreaseLedger(5, late - timedelta(minutes=20)).remaining_today(late) == 0


def test_reserve_is_spent_only_for_a_large_saving() -> None:
    late = datetime(2026, 11, 20, 23, 10, tzinfo=UTC)
    ledger = DecreaseLedger(10, late - timedelta(hours=2))  # one left today
    assert ledger.allows(late, 0.3, reserve=2, large_saving_fraction=0.5)[0] is False
    assert ledger.allows(late, 0.6, reserve=2, large_saving_fraction=0.5)[0] is True


# ------------------------------------------------------------------ policy rules


def test_throttled_raises_in_proportion_to_refused_demand() -> None:
    # GIVEN 100 provisioned, fully consumed, 3,000 refused requests a minute (50/s)
    s = state(100, [100.0] * 5, [0, 0, 0, 3000, 3000])
    d = decide(s)
    # THEN demand ~150/s at 70 % target: 215, far above the 20 % minimum step
    assert d.action == INCREASE and d.capacity == 215
    assert "throttled" in d.reason and d.throttles_seen == 6000


def test_throttled_takes_at_least_the_minimum_step() -> None:
    d = decide(state(1000, [650.0] * 5, [0, 0, 0, 0, 6]))
    assert d.capacity == 1200  # 20 % step beats (650 + 0.1) / 0.7 = 929


def test_throttles_before_the_last_increase_are_not_counted_again() -> None:
    s = state(300, [100.0] * 5, [500, 500, 0, 0, 0], last_increase=NOON - timedelta(minutes=3))
    assert decide(s).action == HOLD


def test_throttled_at_max_holds() -> None:
    d = decide(state(500, [500.0] * 5, [0, 0, 0, 0, 900], max_capacity=500))
    assert (d.action, d.capacity) == (HOLD, 500) and "at max" in d.reason


def test_above_target_raises_to_peak_over_target() -> None:
    d = decide(state(100, [60.0, 60.0, 70.0, 80.0, 84.0]))
    assert (d.action, d.capacity) == (INCREASE, 120)


def test_below_min_raises_to_min() -> None:
    assert decide(state(3, [0.0] * 5, min_capacity=10)).capacity == 10


def test_sustained_low_decreases_toward_target() -> None:
    d = decide(state(1000, [200.0] * 15 + [140.0] * 5))
    assert (d.action, d.capacity) == (DECREASE, 286)  # peak 200 / 0.7


def test_idle_goes_to_min() -> None:
    d = decide(state(1000, [0.0] * 15))
    assert (d.action, d.capacity) == (DECREASE, 5) and d.reason.startswith("idle")


def test_no_decrease_while_throttled_anywhere_in_the_window() -> None:
    throttles = [0.0] * 15
    throttles[2] = 4
    s = state(1000, [10.0] * 15, throttles, last_increase=NOON - timedelta(minutes=5))
    assert decide(s).action == HOLD


def test_no_decrease_within_hysteresis() -> None:
    s = state(1000, [10.0] * 15, last_increase=NOON - timedelta(minutes=20))
    d = decide(s)
    assert d.action == HOLD and "increased 20 min ago" in d.reason


def test_short_history_does_not_decrease() -> None:
    assert decide(state(1000, [1.0] * 5)).reason == "not enough history to decrease"


def test_small_saving_is_not_worth_a_decrease_but_can_ride_along() -> None:
    # GIVEN a decrease to 45 / 0.7 = 65 (35 % saved) where 40 % is required
    strict = PolicyConfig(min_saving_fraction=0.4)
    d = decide(state(100, [45.0] * 15, min_capacity=1), strict)
    assert d.action == HOLD and d.free_decrease == 65 and "not worth" in d.reason


def test_quota_blocks_a_decrease() -> None:
    ledger = DecreaseLedger(27, NOON - timedelta(hours=1))
    d = decide(state(1000, [0.0] * 15, ledger=ledger))
    assert d.action == HOLD and "exhausted" in d.reason


def test_above_max_lowers_to_max() -> None:
    d = decide(state(900, [100.0] * 15, max_capacity=500))
    assert (d.action, d.capacity) == (DECREASE, 500)


def test_combine_counter_lets_a_small_decrease_ride_along() -> None:
    decisions = {
        "read": Decision(300, "x", DECREASE, free_decrease=300),
        "write": Decision(100, "small", HOLD, free_decrease=80),
    }
    combined = combine_counter(decisions, {"read": 1000, "write": 100})
    assert combined["write"].capacity == 80 and combined["write"].action == DECREASE
    alone = combine_counter({"write": decisions["write"]}, {"write": 100})
    assert alone["write"].action == HOLD


# ------------------------------------------------------------------ properties

series = st.lists(st.floats(min_value=0, max_value=5_000, allow_nan=False), min_size=1, max_size=30)


@st.composite
def states(draw: st.DrawFn) -> DimensionState:
    consumed = draw(series)
    throttles = draw(
        st.lists(
            st.sampled_from([0.0, 0.0, 0.0, 1.0, 50.0, 5000.0]),
            min_size=len(consumed),
            max_size=len(consumed),
        )
    )
    mn = draw(st.integers(1, 1000))
    mx = draw(st.integers(mn, 20_000))
    minutes_ago = draw(st.one_of(st.none(), st.integers(0, 120)))
    return state(
        draw(st.integers(1, 25_000)),
        consumed,
        throttles,
        min_capacity=mn,
        max_capacity=mx,
        last_increase=None if minutes_ago is None else NOON - timedelta(minutes=minutes_ago),
        ledger=DecreaseLedger(
            draw(st.integers(0, 27)), NOON - timedelta(minutes=draw(st.integers(0, 600)))
        ),
    )


@given(states())
def test_bounds_always_hold(s: DimensionState) -> None:
    d = decide(s)
    if d.action != HOLD:
        assert s.min_capacity <= d.capacity <= s.max_capacity


@given(states())
def test_never_decreases_while_throttled(s: DimensionState) -> None:
    if sum(s.throttles) > 0:
        assert decide(s).action != DECREASE


@given(states())
def test_every_increase_is_justified(s: DimensionState) -> None:
    # an increase has one of the module docstring's reasons: below the minimum, throttles
    # since the last raise, load above the target, or throttles before the last raise
    # whose demand the capacity now does not serve at the target; a raise for those alone
    # goes no further than that demand at the target (no step)
    d = decide(s)
    if d.action != INCREASE:
        return
    new = [s.last_increase is None or m >= s.last_increase for m in s.minute_starts]
    fresh_throttles = any(t > 0 and n for t, n in zip(s.throttles, new, strict=True))
    above_target = max(s.consumed[-2:]) > s.provisioned * CONFIG.target_utilization
    if fresh_throttles or above_target or s.provisioned < s.min_capacity:
        return
    per = CONFIG.units_per_throttled_request / 60
    older = [
        c + t * per for c, t, n in zip(s.consumed, s.throttles, new, strict=True) if t > 0 and not n
    ]
    assert older, d.reason
    needed = max(older) / CONFIG.target_utilization
    assert s.provisioned < needed, d.reason
    assert d.capacity - 1 < needed, d.reason


def test_throttles_before_the_last_raise_raise_past_what_the_capacity_serves() -> None:
    # GIVEN capacity 1 (min 1, max 2), raised at noon, and a minute before that served 1/s
    # with one request refused: 1.02/s, more than 1 unit serves at 70 %
    consumed, throttles = [0.0] * 5, [0.0] * 5
    consumed[2], throttles[2] = 1.0, 1.0
    s = state(1, consumed, throttles, min_capacity=1, max_capacity=2, last_increase=NOON)
    # WHEN the policy decides
    d = decide(s)
    # THEN it raises to what serves that demand at the target (here the max), as the rule
    # "throttles older than the last increase" says
    assert (d.action, d.capacity) == (INCREASE, 2)
    assert d.reason.startswith("throttled before the last raise")


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.floats(min_value=0, max_value=3_000, allow_nan=False), min_size=24 * 12, max_size=24 * 12
    ),
    st.integers(0, 23 * 60),
)
def test_a_day_never_spends_more_decreases_than_the_quota(load: list[float], start: int) -> None:
    # GIVEN a UTC day of 5-minute ticks over a random load (units/s), applied to one table
    day0 = datetime(2026, 11, 20, tzinfo=UTC) + timedelta(minutes=start % 5)
    provisioned, ledger, last_increase, spent = 100, DecreaseLedger(), None, []
    served: list[float] = []
    refused: list[float] = []
    for tick, demand in enumerate(load):
        now = day0 + timedelta(minutes=5 * tick)
        if now.date() != day0.date():
            break
        served += [min(demand, provisioned)] * 5
        refused += [max(0.0, demand - provisioned) * 60] * 5
        n = min(20, len(served))
        starts = [now - timedelta(minutes=n - i) for i in range(n)]
        s = DimensionState(
            provisioned, served[-n:], refused[-n:], starts, 1, 40_000, now, ledger, last_increase
        )
        d = decide(s)
        if d.action == DECREASE:
            assert ledger.can_decrease(now)
            ledger = ledger.spend(now)
            spent.append(now)
        elif d.action == INCREASE:
            last_increase = now
        provisioned = d.capacity
    # THEN DynamoDB's rule held at every decrease: <= 27, and beyond 4 an hour apart
    assert len(spent) <= 27
    for earlier, later in zip(spent[3:], spent[4:], strict=False):
        assert later - earlier >= timedelta(hours=1)


def test_config_defaults_are_stock_compatible() -> None:
    assert (CONFIG.target_utilization, CONFIG.buffer) == (0.7, 0.2)
    assert CONFIG.reserve_decreases == 2


@pytest.mark.parametrize("target", [0.5, 0.9])
def test_target_override_per_dimension(target: float) -> None:
    d = decide(state(100, [60.0] * 5, target_utilization=target))
    assert d.action == (INCREASE if 60 > 100 * target else HOLD)


# ------------------------------------------------------------------ autopilot


def test_autopilot_does_not_chase_a_burst_that_is_over() -> None:
    from ddb_capacity_runtime.core.policy import autopilot_config

    # a 2-minute burst to 300/s, throttled, 10 minutes ago; quiet (10/s) since
    consumed = [10.0] * 5 + [100.0, 100.0] + [10.0] * 10
    throttles = [0.0] * 5 + [12_000.0, 12_000.0] + [0.0] * 10
    old = decide(state(100, consumed, throttles), CONFIG)
    assert old.action == INCREASE and old.capacity == 429  # 300 / 0.7: the burst is chased
    auto = decide(state(100, consumed, throttles), autopilot_config())
    assert auto.action != INCREASE  # nothing of it is left in the newest minutes
    # the same burst in the newest minutes is raised for at once
    now = decide(state(100, consumed[:-10] + consumed[5:7], throttles[:-10] + throttles[5:7]))
    fresh = decide(
        state(100, consumed[:-10] + consumed[5:7], throttles[:-10] + throttles[5:7]),
        autopilot_config(),
    )
    assert fresh.action == INCREASE and fresh.capacity == now.capacity == 429


def test_autopilot_lowers_soon_after_a_burst() -> None:
    from ddb_capacity_runtime.core.policy import autopilot_config

    raised = NOON - timedelta(minutes=8)
    quiet = state(1_000, [10.0] * 6, last_increase=raised, ledger=DecreaseLedger())
    assert decide(quiet, CONFIG).action == HOLD  # 30 minutes of hysteresis, 15 low minutes
    auto = decide(quiet, autopilot_config())
    assert auto.action == DECREASE and auto.capacity == 15  # 10 / 0.7


def test_autopilot_keeps_noisy_load_but_gives_back_a_short_burst() -> None:
    from ddb_capacity_runtime.core.policy import autopilot_config

    auto = autopilot_config()
    # load that comes and goes: 5,000/s two minutes in three over the half hour, 1,000/s in
    # the newest minutes; the decrease leaves capacity for the 5,000 (5,000 / 0.7)
    noisy = [5_000.0, 5_000.0, 1_000.0] * 9 + [1_000.0] * 4
    kept = decide(state(12_000, noisy, max_capacity=40_000), auto)
    assert (kept.action, kept.capacity) == (DECREASE, 7_143)
    # without the settle span it would give all of it back
    alone = replace(auto, settle_minutes=0)
    assert decide(state(12_000, noisy, max_capacity=40_000), alone).capacity == 1_429
    # a 5-minute burst to 20,000/s that ended 5 minutes ago is a sixth of the span: given back
    burst = [1_000.0] * 21 + [20_000.0] * 5 + [1_000.0] * 5
    gone = decide(state(30_000, burst, max_capacity=40_000), auto)
    assert (gone.action, gone.capacity) == (DECREASE, 1_429)


def test_autopilot_makes_no_small_raise_without_throttles() -> None:
    from ddb_capacity_runtime.core.policy import autopilot_config

    # 73 % of 1,000: above the 70 % target, a raise to 1,043 (4 %): not worth an update
    # slot in autopilot mode; the reactive mode makes it
    small = state(1_000, [730.0] * 5)
    assert decide(small, CONFIG).capacity == 1_043
    held = decide(small, autopilot_config())
    assert held.action == HOLD and "less than a step" in held.reason
    # 80 %: a raise to 1,143 (14 %) is made; and a throttled minute is raised for at once
    assert decide(state(1_000, [800.0] * 5), autopilot_config()).capacity == 1_143
    throttled = state(1_000, [730.0] * 5, [0.0] * 4 + [60.0])
    assert decide(throttled, autopilot_config()).action == INCREASE


def test_autopilot_decreases_once_the_newest_minutes_are_free_of_throttles() -> None:
    from ddb_capacity_runtime.core.policy import autopilot_config

    consumed = [10.0] * 20
    throttles = [0.0] * 10 + [600.0] + [0.0] * 9  # a throttled minute 10 minutes ago
    assert decide(state(1_000, consumed, throttles), CONFIG).action != DECREASE
    auto = decide(state(1_000, consumed, throttles), autopilot_config())
    assert auto.action == DECREASE and auto.capacity == 15
    recent = [0.0] * 18 + [600.0, 0.0]  # one within the 4 low minutes still stops it
    blocked = decide(state(1_000, consumed, recent), autopilot_config())
    assert blocked.action != DECREASE


# ------------------------------------------------------------------ the forecast's floors


def test_no_decrease_below_what_the_forecast_needs_within_the_half_hour() -> None:
    quiet = [10.0] * 20
    assert decide(state(1_000, quiet), CONFIG).capacity == 15  # idle: down to 10 / 0.7
    kept = decide(state(1_000, quiet, keep=600), CONFIG)
    assert kept.action == DECREASE and kept.capacity == 600
    assert "the forecast needs" in kept.reason
    held = decide(state(1_000, quiet, keep=1_200), CONFIG)
    assert held.action == HOLD and "the forecast needs 1200" in held.reason


def test_a_floor_above_the_targets_minimum_raises_it_and_a_lower_one_restores_part() -> None:
    from ddb_capacity_runtime.core.policy import decide_scalable_min

    quiet = [10.0] * 20
    # the plan's floor (as the min) is above the target's minimum: raised to it, even
    # though the capacity is already there
    up = decide_scalable_min(state(9_000, quiet, min_capacity=8_572), 10, CONFIG)
    assert (up.action, up.capacity) == (INCREASE, 8_572)
    # the floor has dropped, but the next half hour needs 4,000: the minimum goes to that
    part = decide_scalable_min(state(9_000, quiet, min_capacity=10, keep=4_000), 8_572, CONFIG)
    assert (part.action, part.capacity) == (DECREASE, 4_000)
    assert "what the forecast needs" in part.reason
    # nothing planned: the configured minimum is restored
    done = decide_scalable_min(state(9_000, quiet, min_capacity=10), 8_572, CONFIG)
    assert (done.action, done.capacity) == (DECREASE, 10)


def test_autopilot_above_max_and_above_target_still_goes_down_to_max() -> None:
    from ddb_capacity_runtime.core.policy import autopilot_config

    # 80 of 100 is above target, but the max is 5: the raise rule never keeps it above max
    d = decide(state(100, [80.0] * 5, max_capacity=5, min_capacity=1), autopilot_config())
    assert (d.action, d.capacity) == (DECREASE, 5)


def test_the_plans_reserve_replaces_the_fixed_one() -> None:
    # 25 decreases spent today: 2 left, the configured reserve; a 38 % saving waits for a
    # larger one unless the forecast sees no fall later today (reserve 0), and waits
    # all the more when it sees three
    spent = DecreaseLedger(25, NOON - timedelta(hours=2))
    low = [350.0] * 20  # 350 / 0.7 = 500 of 800: a 38 % saving
    assert decide(state(800, low, ledger=spent), CONFIG).action == HOLD
    free = decide(state(800, low, ledger=spent, reserve=0), CONFIG)
    assert (free.action, free.capacity) == (DECREASE, 500)
    assert decide(state(800, low, ledger=spent, reserve=3), CONFIG).action == HOLD


def test_the_reserve_goes_to_the_decreases_that_save_most() -> None:
    # 2 decreases left today and 2 falls ahead, the smaller saving 250 units: a decrease now
    # takes one of them, so it must save more than that fall would
    spent = DecreaseLedger(25, NOON - timedelta(hours=2))
    low = [350.0] * 20  # to 500: saves 300 units (38 %), under the 50 % "large saving"
    ranked = decide(state(800, low, ledger=spent, reserve=2, least_fall=250), CONFIG)
    assert (ranked.action, ranked.capacity) == (DECREASE, 500)
    assert "300 units >= the least fall's 250" in ranked.reason
    held = decide(state(800, low, ledger=spent, reserve=2, least_fall=301), CONFIG)
    assert held.action == HOLD and "300 units < the least fall's 301" in held.reason
    # a large fraction is not enough when the falls ahead save more: 60 of 100 units
    small = decide(state(100, [28.0] * 20, ledger=spent, reserve=2, least_fall=301), CONFIG)
    assert small.action == HOLD
    # the same without a known least fall: the 60 % saving is large enough
    large = decide(state(100, [28.0] * 20, ledger=spent, reserve=2), CONFIG)
    assert (large.action, large.capacity) == (DECREASE, 40)
    # with decreases to spare, the least fall does not matter
    spare = decide(state(800, low, reserve=2, least_fall=10_000), CONFIG)
    assert spare.action == DECREASE


# ------------------------------------------------------------------ the newest minutes


AUTOPILOT = autopilot_config()


def test_a_fresh_minute_that_reads_low_never_lets_a_decrease_through() -> None:
    # GIVEN 4 low minutes the autopilot would decrease on, the first two of them finished
    # and the two newest delivered within the metric lag (CloudWatch may still add to them)
    consumed = [80.0, 80.0, 10.0, 10.0, 1.0, 1.0]
    # WHEN the newest two are fresh, THEN the finished minutes decide: held
    held = decide(state(100, consumed, fresh=2), AUTOPILOT)
    assert held.action == HOLD
    # AND taken as finished, the same minutes would have lowered it
    assert decide(state(100, consumed, fresh=0), AUTOPILOT).action == DECREASE


def test_a_fresh_minute_counts_for_a_raise() -> None:
    # GIVEN the newest minute, delivered but maybe not finished, already above target
    # (and throttled): a partial sum is a lower bound of the minute's load
    consumed = [50.0] * 4 + [80.0, 95.0]
    above = decide(state(100, consumed, fresh=1), AUTOPILOT)
    assert above.action == INCREASE and above.capacity == 136
    throttled = decide(state(100, [50.0] * 6, [0.0] * 5 + [6000.0], fresh=1), AUTOPILOT)
    # demand 50 + 6000 / 60 = 150 units/s, at 70 %
    assert throttled.action == INCREASE and throttled.capacity == 215


def test_the_autopilot_raises_above_target_only_when_every_recent_minute_is() -> None:
    # GIVEN one noisy minute above target among the recent ones, no throttle
    one = decide(state(100, [50.0] * 5 + [95.0]), AUTOPILOT)
    # THEN no capacity is bought for it (target tracking's high alarm wants 2 of 2)
    assert one.action == HOLD
    # AND the reactive mode still raises for it
    assert decide(state(100, [50.0] * 5 + [95.0]), CONFIG).action == INCREASE
    # AND two minutes above target raise to their peak at the target
    both = decide(state(100, [50.0] * 4 + [80.0, 95.0]), AUTOPILOT)
    assert both.action == INCREASE and both.capacity == 136


# ------------------------------------------------------------------ throttles before a raise


def test_throttles_from_before_the_last_raise_top_it_up_only_past_what_it_serves() -> None:
    # GIVEN a raise to 100 one minute ago, sized by served load alone (above target), and
    # the throttles of the minute before it arriving only now (CloudWatch's delay)
    raised = NOON - timedelta(minutes=1)
    consumed = [60.0] * 5 + [100.0]
    throttles = [0.0] * 5 + [3000.0]  # the newest minute started 2 minutes ago
    s = state(100, consumed, throttles, last_increase=raised)
    assert s.minute_starts[-1] < raised
    # THEN the raise is topped up to that minute's demand: (100 + 50) / 0.7
    top = decide(s, AUTOPILOT)
    assert (top.action, top.capacity) == (INCREASE, 215)
    assert top.reason.startswith("throttled before the last raise")
    # AND a raise that already serves that demand at the target is not raised again (no
    # minimum step for throttles it was sized by)
    covered = decide(state(215, consumed, throttles, last_increase=raised), AUTOPILOT)
    assert covered.action == HOLD
    # AND throttles after the raise still raise by at least the step, as before
    after = state(215, consumed, throttles, last_increase=NOON - timedelta(minutes=10))
    assert decide(after, AUTOPILOT).capacity == 258


# ------------------------------------------------------------------ the edges of the rules


def test_capacity_is_rounded_up_from_the_sixth_decimal_place() -> None:
    from ddb_capacity_runtime.core.policy import capacity_units

    # GIVEN values just above 7 units: float noise (4.9 / 0.7), and a millionth or two more
    # THEN noise below half a millionth is 7, and a millionth or more needs an eighth unit
    assert capacity_units(4.9 / 0.7) == capacity_units(7.0000004) == 7
    assert capacity_units(7.000001) == capacity_units(7.0000019) == 8
    assert capacity_units(7.0000021) == 8


def test_a_throttled_raise_covers_the_larger_demand_of_minutes_before_the_last_raise() -> None:
    # GIVEN a raise to 100 three minutes ago; the minute before it refused 5,400 requests
    # (60 + 90 = 150/s), the newest minute after it refused 60 (100 + 1 = 101/s)
    raised = NOON - timedelta(minutes=3)
    s = state(100, [60.0] * 3 + [100.0] * 2, [0, 0, 5400, 0, 60], last_increase=raised)
    assert s.minute_starts[2] < raised <= s.minute_starts[4]
    # WHEN the policy decides
    d = decide(s)
    # THEN the raise is sized by the larger demand, 150 / 0.7, not the newest 101 / 0.7
    assert (d.action, d.capacity) == (INCREASE, 215)


def test_the_minimum_step_is_rounded_up_to_a_whole_unit() -> None:
    # GIVEN 12 units throttled by a little demand (5.1/s: 8 units at the target)
    d = decide(state(12, [5.0] * 5, [0, 0, 0, 0, 6]))
    # THEN the raise is at least 20 % of 12 = 2.4, rounded up to 3: to 15
    assert (d.action, d.capacity) == (INCREASE, 15)
    # AND a configured least step of 10 units beats those 3: to 22
    wide = decide(state(12, [5.0] * 5, [0, 0, 0, 0, 6]), PolicyConfig(min_step_units=10))
    assert (wide.action, wide.capacity) == (INCREASE, 22)


@pytest.mark.parametrize("units", [10, 20, 30, 50, 100, 200, 300, 1_000])
def test_the_autopilot_raises_by_exactly_the_smallest_raise(units: int) -> None:
    # GIVEN the two recent minutes at 77 % of the units: a raise by 10 % exactly (whatever
    # float noise 1.1 times the units carries: 100 x 1.1 is 110.00000000000001)
    busy = units * 0.77
    d = decide(state(units, [units * 0.5] * 3 + [busy] * 2), AUTOPILOT)
    # THEN it is not smaller than the smallest raise: made
    assert (d.action, d.capacity) == (INCREASE, units * 11 // 10)


def test_a_recent_minute_exactly_at_the_aim_is_not_above_it() -> None:
    # GIVEN the older of the two recent minutes exactly at the target, the newer above it
    at_aim = 100 * AUTOPILOT.target_utilization
    s = state(100, [50.0] * 4 + [at_aim, 90.0])
    # THEN the autopilot does not raise: not every recent minute is above the target
    assert decide(s, AUTOPILOT).action == HOLD
    # AND a little above the target, it raises to the peak at the target
    above = decide(state(100, [50.0] * 4 + [at_aim + 0.001, 90.0]), AUTOPILOT)
    assert (above.action, above.capacity) == (INCREASE, 129)


def test_one_fresh_minute_is_left_out_of_the_low_minutes() -> None:
    # GIVEN 4 finished minutes, the oldest at 80 % of 100 units, and the newest minute
    # delivered within the metric lag, reading 1/s
    consumed = [80.0, 10.0, 10.0, 10.0, 1.0]
    # WHEN that newest minute is fresh, THEN the 4 finished ones decide: no decrease
    assert decide(state(100, consumed, fresh=1), AUTOPILOT).action == HOLD
    # AND taken as finished it would have pushed the 80 % minute out and lowered it
    assert decide(state(100, consumed, fresh=0), AUTOPILOT).action == DECREASE


def test_a_window_whose_peak_is_exactly_the_lower_target_is_not_low() -> None:
    # GIVEN every minute exactly at target - buffer of 100 units
    lower = 100 * (CONFIG.target_utilization - CONFIG.buffer)
    # THEN no decrease: the minutes must be below it
    assert decide(state(100, [lower] * 15)).action == HOLD
    # AND just below it, the decrease is made
    assert decide(state(100, [lower - 0.01] * 15)).action == DECREASE


def test_a_decrease_saving_exactly_the_least_fraction_is_made() -> None:
    # GIVEN an idle dimension of 100 units whose minimum is 80: a 20 % saving exactly
    d = decide(state(100, [1.0] * 15, min_capacity=80))
    # THEN it is worth a decrease (the least saving is 20 %)
    assert (d.action, d.capacity) == (DECREASE, 80)


def test_one_throttle_event_in_the_window_keeps_a_raised_minimum() -> None:
    from ddb_capacity_runtime.core.policy import decide_scalable_min

    # GIVEN a target's minimum raised to 200, quiet load, one refused request 3 minutes ago
    throttles = [0.0] * 30
    throttles[-3] = 1.0
    held = decide_scalable_min(state(200, [10.0] * 30, throttles), 200, AUTOPILOT)
    # THEN the minimum stays raised
    assert (held.action, held.capacity) == (HOLD, 200)
    # AND without that request the configured minimum is restored
    calm = decide_scalable_min(state(200, [10.0] * 30), 200, AUTOPILOT)
    assert (calm.action, calm.capacity) == (DECREASE, 5)


@given(
    states(),
    st.integers(0, 1_000),
    st.integers(-1_000, 0),
    st.sampled_from([CONFIG, autopilot_config()]),
)
def test_a_minimum_not_held_raised_is_never_lowered(
    s: DimensionState, keep: int, below: int, config: PolicyConfig
) -> None:
    # a target's minimum at or below the configured one is never lowered, whatever the window
    # (so a tick's first decision never makes its throttles due: the simulator's tick makes
    # none for such a dimension)
    s = replace(s, keep=keep)
    current_min = max(1, s.min_capacity + below)
    assert decide_scalable_min(s, current_min, config).capacity >= current_min
