"""The hybrid billing policy: on-demand in the hours the table's own history marks as
bursty, at most 4 switches to on-demand in a rolling 24 hours, each day planned from the
days before it only."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.on_demand_hours import Hour
from ddb_capacity_tools.simulator import ModelParams, PolicyError, parse, run_policy
from ddb_capacity_tools.simulator.hybrid import (
    DAY,
    SWITCHES_PER_DAY,
    best_windows,
    compose,
    costed_hours,
    plan,
    within_limit,
)
from ddb_capacity_tools.simulator.model import Recorded
from ddb_capacity_tools.simulator.policies import DEFAULT_TICK_MINUTES
from ddb_capacity_tools.simulator.prices import Prices
from ddb_capacity_tools.simulator.run import recovery_minutes
from ddb_capacity_tools.simulator.scenarios import scenario
from tests.support.hypothesis_profiles import examples


def _runs(chosen: list[bool]) -> int:
    return sum(1 for k, _ in itertools.groupby(chosen) if k)


def _brute(savings: list[float], most: int) -> float:
    best = 0.0
    for mask in itertools.product([False, True], repeat=len(savings)):
        if _runs(list(mask)) <= most:
            best = max(best, sum(s for s, on in zip(savings, mask, strict=True) if on))
    return best


@settings(max_examples=examples(150), deadline=None)
@given(
    savings=st.lists(st.integers(-5, 5).map(float), min_size=0, max_size=10),
    most=st.integers(0, 4),
)
def test_best_windows_saves_the_most_with_at_most_the_allowed_runs(
    savings: list[float], most: int
) -> None:
    chosen = best_windows(savings, most)
    assert len(chosen) == len(savings)
    assert _runs(chosen) <= most
    saved = sum(s for s, on in zip(savings, chosen, strict=True) if on)
    assert saved == pytest.approx(_brute(savings, most))
    assert saved >= 0


def test_a_cheap_hour_between_two_bursts_joins_them_only_when_that_saves_more() -> None:
    assert best_windows([3, -1, 3], 1) == [True, True, True]
    assert best_windows([3, -4, 3], 1) == [True, False, False]
    assert best_windows([3, -4, 3], 2) == [True, False, True]
    assert best_windows([-1, -2, 0, -3], 4) == [False] * 4


def test_within_limit_drops_a_fifth_switch_in_24_hours_and_keeps_the_next_days() -> None:
    wanted = [False] * (2 * DAY)
    starts = [0, 100, 200, 300, 400, DAY + 1]
    for s in starts:
        wanted[s : s + 10] = [True] * 10
    kept = within_limit(wanted, SWITCHES_PER_DAY)
    assert [kept[s] for s in starts] == [True, True, True, True, False, True]
    assert _runs(kept) == 5
    assert not any(kept[400:410])


def _daily(
    hours_cheap: set[int], days: int, od_cheaper_by: float = 1.0
) -> tuple[list[float], list[float]]:
    """Per minute: what provisioned pays and on-demand charges; on-demand is cheaper in
    ``hours_cheap`` by ``od_cheaper_by`` per minute, dearer elsewhere by 1."""
    paid, charged = [], []
    for m in range(days * DAY):
        hour = (m % DAY) // 60
        paid.append(2.0)
        charged.append(2.0 - od_cheaper_by if hour in hours_cheap else 3.0)
    return paid, charged


def _plan(
    paid: list[float], charged: list[float], offset: int = 0, hindsight: bool = False
) -> list[bool]:
    """The plan of per-minute costs each way, summed by clock hour (the provisioned cost
    taken for its least: no calibration)."""
    sums: dict[tuple[int, int], list[float]] = {}
    for m, (p, c) in enumerate(zip(paid, charged, strict=True)):
        day, minute = divmod(offset + m, DAY)
        slot = sums.setdefault((day, minute // 60), [0.0, 0.0])
        slot[0], slot[1] = slot[0] + p, slot[1] + c
    costed = {k: Hour(p, p, c) for k, (p, c) in sums.items()}
    return plan(costed, len(paid), offset, hindsight=hindsight)


def test_plan_runs_on_demand_in_the_bursty_hours_from_the_second_day() -> None:
    paid, charged = _daily({10, 11, 12}, days=3)
    mask = _plan(paid, charged)
    assert not any(mask[:DAY])  # no history on the first day
    for day in (1, 2):
        on = [m % DAY for m in range(day * DAY, (day + 1) * DAY) if mask[m]]
        assert on == list(range(600, 780))


def test_a_days_plan_uses_only_the_days_before_it() -> None:
    paid, charged = _daily({10}, days=3)
    changed = list(charged)
    changed[2 * DAY :] = [0.0] * DAY  # day 2 alone: on-demand free all day
    assert _plan(paid, charged)[: 3 * DAY] == _plan(paid, changed)[: 3 * DAY]
    paid4, charged4 = _daily({10}, days=4)
    charged4[DAY : 3 * DAY] = [0.0] * (2 * DAY)  # the median of days 0-2 now says on-demand
    assert not all(_plan(paid4, charged4)[DAY + 60 * h] for h in range(24))
    assert all(_plan(paid4, charged4)[3 * DAY + 60 * h] for h in range(24))


def test_plan_aligns_hours_to_the_clock_with_the_offset() -> None:
    paid, charged = _daily({10}, days=3)
    # the same costs, the trace starting at 06:00: its minute 0 is 06:00
    shifted = _plan(paid[360:], charged[360:], offset=360)
    assert shifted[DAY + 600 - 360] and not shifted[DAY + 600 - 361]


def _recorded(provisioned: list[int], served: list[float], throttled: list[float]) -> Recorded:
    demand = [s + t for s, t in zip(served, throttled, strict=True)]
    return Recorded(demand, served, throttled, provisioned, [t * 60 for t in throttled])


def test_compose_takes_each_minute_from_the_run_in_force_and_bills_it() -> None:
    prices = Prices()
    minutes = 3 * DAY
    hour = [(m % DAY) // 60 == 10 for m in range(minutes)]
    spike = [m % DAY == 630 for m in range(minutes)]
    # on-demand serves everything: 50 units/s all day but in hour 10, where a quiet 1/s has
    # one minute at 800/s; provisioned pays 80 units, and 1,000 in hour 10, where it refuses
    # 5/s in the busy minute
    key = (None, "write")
    od_served = [800.0 if sp else 1.0 if h else 50.0 for h, sp in zip(hour, spike, strict=True)]
    levels = [1000 if h else 80 for h in hour]
    base = _recorded(
        levels,
        [795.0 if sp else v for v, sp in zip(od_served, spike, strict=True)],
        [5.0 if sp else 0.0 for sp in spike],
    )
    od = _recorded([0] * minutes, od_served, [0.0] * minutes)
    # on-demand is cheaper than 1,000 units in hour 10, and dearer than 80 in the others
    costed = costed_hours({key: base}, {key: od}, prices, 0, 70)
    saved = [h for h in range(24) if (costed[(0, h)].provisioned or 0) > costed[(0, h)].on_demand]
    assert saved == [10]
    # its least level is what 800/s needs at 70 %: 1,143 units for the hour
    assert costed[(0, 10)].least == pytest.approx(1143 * prices.unit_hour("write"))
    out = compose({key: base}, {key: od}, prices, start=DAY)[key]
    # on-demand exactly in the planned hour from the second day: its switch starts before it
    assert out.on_demand_minutes == 2 * 60
    assert out.recorded.provisioned[:DAY] == levels[:DAY]
    assert out.recorded.provisioned[DAY + 599] == 80 and out.recorded.provisioned[DAY + 600] == 0
    assert out.recorded.throttled[DAY + 630] == 0.0 and out.recorded.served[DAY + 630] == 800.0
    assert out.recorded.throttled[630] == 5.0  # the first day: provisioned, no history
    mask = [m >= DAY and h for m, h in enumerate(hour)]
    expected = sum(
        od.served[m] * 60 * prices.request_unit("write")
        if on
        else levels[m] / 60 * prices.unit_hour("write")
        for m, on in enumerate(mask)
        if m >= DAY
    )
    assert out.cost_usd == pytest.approx(expected)


def test_compose_stays_provisioned_when_on_demand_never_saves() -> None:
    prices = Prices()
    minutes = 2 * DAY
    key = (None, "read")
    base = _recorded([100] * minutes, [90.0] * minutes, [0.0] * minutes)
    od = _recorded([0] * minutes, [90.0] * minutes, [0.0] * minutes)
    out = compose({key: base}, {key: od}, prices)[key]
    assert out.on_demand_minutes == 0
    assert out.recorded == base
    assert out.cost_usd == pytest.approx(100 * minutes / 60 * prices.unit_hour("read"))


def test_simulate_runs_the_hybrid_as_the_autopilot_and_on_demand_composed() -> None:
    trace = scenario("nightly-batch")
    # compose bills by the minute; so does this run
    params, prices = ModelParams(billing="per-minute").validate(), Prices()
    hybrid = run_policy(parse("hybrid:70"), trace, params, prices)
    base = run_policy(parse("autopilot+stock:70"), trace, params, prices)
    od = run_policy(parse("on-demand"), trace, params, prices)
    mine, theirs = {r.key: r.recorded for r in base}, {r.key: r.recorded for r in od}
    recovery = recovery_minutes(params, DEFAULT_TICK_MINUTES)
    composed = compose(mine, theirs, prices, recovery=recovery)
    for r in hybrid:
        c = composed[r.key]
        assert r.policy == "hybrid:70"
        assert r.cost_usd == pytest.approx(c.cost_usd)
        assert r.throttled_requests == pytest.approx(sum(c.recorded.throttled) * 60)
        assert r.provisioned_unit_hours == pytest.approx(sum(c.recorded.provisioned) / 60)
    # the nightly write burst is learned: on-demand in those hours from the second day on
    assert max(c.on_demand_minutes for c in composed.values()) > 0
    assert sum(r.cost_usd for r in hybrid) < sum(r.cost_usd for r in base)
    # scored from day 3: the same plan and minutes, everything counted from there
    later = run_policy(parse("hybrid:70"), trace, params, prices, score_from=2 * DAY)
    base_later = run_policy(parse("autopilot+stock:70"), trace, params, prices, score_from=2 * DAY)
    assert sum(r.cost_usd for r in later) < sum(r.cost_usd for r in hybrid)
    for whole, part, b in zip(hybrid, later, base_later, strict=True):
        assert part.recorded == whole.recorded
        assert part.score_from == 2 * DAY
        assert (part.decreases, part.rejected_decreases) == (b.decreases, b.rejected_decreases)
        assert part.decreases < whole.decreases or whole.decreases == 0


def test_a_hybrids_target_is_checked_as_the_autopilots() -> None:
    assert parse("hybrid").kind == "hybrid" and parse("hybrid").value is None
    assert parse("hybrid:60").value == 60
    with pytest.raises(PolicyError, match=r"--policy 'hybrid:95': target utilization 95"):
        parse("hybrid:95")


def test_hindsight_plans_each_day_from_its_own_costs_and_never_pays_more() -> None:
    paid, charged = _daily({10}, days=3)
    charged[2 * DAY + 900 : 2 * DAY + 960] = [0.0] * 60  # day 2 alone: 15:00 is cheap
    ahead, behind = _plan(paid, charged), _plan(paid, charged, hindsight=True)
    assert behind[2 * DAY + 900] and not ahead[2 * DAY + 900]
    assert behind[600] and not ahead[600]  # day 0 too: its own costs, no history needed

    def cost(mask: list[bool]) -> float:
        return sum(c if od else p for p, c, od in zip(paid, charged, mask, strict=True))

    assert cost(behind) <= cost(ahead)


def test_a_window_refused_at_its_start_is_dropped_whole_even_when_the_limit_frees() -> None:
    wanted = [False] * (2 * DAY)
    for s in (0, 100, 200, 300):
        wanted[s : s + 10] = [True] * 10
    wanted[1430:1450] = [True] * 20  # starts 1430: 4 switches in the 24 h before it
    kept = within_limit(wanted, SWITCHES_PER_DAY)
    assert not any(kept[1430:1450])  # the limit frees at 1440, mid-window: still dropped
    wanted[1500:1510] = [True] * 10  # the next window: the first switch is 24 h old
    assert all(within_limit(wanted, SWITCHES_PER_DAY)[1500:1510])


def test_a_learned_window_returns_the_table_at_the_level_the_hour_after_needs() -> None:
    # GIVEN nightly batches from 02:00, whose hour before the hybrid learns to run on-demand
    trace = scenario("nightly-batch")
    params, prices = ModelParams().validate(), Prices()
    hybrid = run_policy(parse("hybrid:70"), trace, params, prices)
    base = run_policy(parse("autopilot+stock:70"), trace, params, prices)
    writes = next(r for r in hybrid if r.key == (None, "write")).recorded
    ends = [
        m
        for m in range(1, len(writes.provisioned))
        if writes.provisioned[m - 1] == 0 < writes.provisioned[m]
    ]
    assert any(m % DAY == 120 for m in ends)  # a window ends as a batch starts
    # THEN the table comes back at the batch's level (8,000/s at 70 %), not at its level of
    # before the window, and refuses no more than the autopilot alone
    for m in ends:
        if m % DAY == 120:
            assert writes.provisioned[m] >= 8_000 / 0.7
    refused = sum(r.throttled_requests for r in hybrid)
    assert refused <= sum(r.throttled_requests for r in base)
    assert sum(r.cost_usd for r in hybrid) < sum(r.cost_usd for r in base)


def test_a_learned_window_returns_the_table_no_lower_than_it_served_at_its_end() -> None:
    prices = Prices()
    minutes = 3 * DAY
    hour = [(m % DAY) // 60 == 10 for m in range(minutes)]
    # on-demand serves 50 units/s all day but hour 10: a quiet 1/s, one minute at 800/s,
    # and on the last day 900/s from 10:45 to 10:55
    late = [m >= 2 * DAY and 645 <= m % DAY < 655 for m in range(minutes)]
    od_served = [
        900.0 if lt else 800.0 if m % DAY == 630 else 1.0 if h else 50.0
        for m, (h, lt) in enumerate(zip(hour, late, strict=True))
    ]
    levels = [1000 if h else 80 for h in hour]
    key = (None, "write")
    base = _recorded(levels, od_served, [0.0] * minutes)
    od = _recorded([0] * minutes, od_served, [0.0] * minutes)
    out = compose({key: base}, {key: od}, prices, recovery=3)[key]
    # THEN after the last day's window the table holds what it served at its end (900),
    # after the first's its level of before (80: the hour after needs 72)
    assert out.recorded.provisioned[DAY + 660 : DAY + 663] == [80] * 3
    assert out.recorded.provisioned[2 * DAY + 660 : 2 * DAY + 663] == [900] * 3
