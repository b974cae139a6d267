"""Runs in: workstation (the `ddb-capacity` command).

The hybrid policy (``hybrid``, ``hybrid:T``): the autopilot on stock target tracking
(``autopilot+stock:T``, what a `ProvisionedTable` with the scaler deploys) most of the day,
on-demand in the hours of the day where, on the table's own past days, on-demand cost less
than the autopilot, and never more switches to on-demand than AWS allows.

Billing mode is a table's, so the whole table (every dimension, every GSI) switches at
once. Each day's plan is made from the days before it only (at most ``HISTORY_DAYS``):

1. For each hour of the day, what each past day would have paid in that hour provisioned
   (the level target tracking at the hybrid's target needed for the hour's busiest minute)
   and on-demand, from what the table served: the rule the deployed switch learns by
   (``learn_on_demand_windows``, `ddb_capacity_runtime.core.on_demand_hours`), which sees
   only what was served, whatever mode the table was in. The hour's saving is the median
   over the past days of (provisioned - on-demand).
2. The day's on-demand windows are the at most `SWITCHES_PER_DAY` runs of whole
   hours whose savings add up to the most (`best_windows`): a cheap hour between two
   on-demand ones joins them when the limit on windows makes that the better use of one
   (switching itself costs nothing in the model).
3. A window only starts while fewer than `SWITCHES_PER_DAY` switches to on-demand
   were made in the 24 hours before it (AWS's rolling limit); switching back to
   provisioned is allowed at any time.

The first day has no history and runs on the autopilot alone.

The declared windows (``windows``, ``windows:T``) are what a table deploys with
``add_on_demand_window``: the same hours every day, chosen once (`fixed_hours`) from the
median saving of each hour of the day over the minutes they are learned from (``tune``: its
fitting part), then kept.

For both, the deployed switch suspends the table's scalable targets from the switch's start
and returns the table to its level of then: so from the switch's start to the window, and for
``recovery`` minutes after it (the autopilot's next tick and its UpdateTable), the table holds
that level whatever the autopilot's own run did (`frozen`).

Both count the switch's own minutes (`SWITCH_MINUTES`): each switch to on-demand starts that
many minutes before its window's first hour (`led`), and those minutes are the autopilot's,
since the table serves (and is billed) as provisioned until the switch ends (`switched`).
Billed by the clock hour, a switch started on the hour would pay that hour's provisioned
capacity too; started before it, the hour is on-demand's.

How the run is put together (`compose`): the autopilot runs over the whole trace on
its own simulated provisioned table, and on-demand over the whole trace (its limits,
`model`); each minute takes the autopilot's minute or on-demand's, by the plan. What
this leaves out is in the docs' fidelity table: that the autopilot,
while the table is on-demand, would see the on-demand table's traffic rather than its own
table's (and could make no capacity change: its decreases there still count); and
on-demand's previous peak after a switch (the on-demand run's, not a switched table's).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from ddb_capacity_runtime.core.on_demand_hours import (
    HISTORY_DAYS,
    LEARNED_PER_DAY,
    RETURN_MINUTES,
    SERVED_LAG_MINUTES,
    SERVED_MINUTES,
    Hour,
    best_windows,
    day_plan,
    day_savings,
    hour_costs,
    past_slots,
    window_returns,
)
from ddb_capacity_runtime.core.switches import MAX_SWITCHES, recent

from . import billing
from .model import Recorded
from .prices import Prices
from .trace import Key

__all__ = [
    "DECLARED_PER_DAY",
    "HISTORY_DAYS",
    "SWITCHES_PER_DAY",
    "SWITCH_MINUTES",
    "Composed",
    "best_windows",
    "compose",
    "costs",
    "daily",
    "day_plans",
    "best_of",
    "fixed_hours",
    "first_peaks",
    "frozen",
    "led",
    "plan",
    "costed_hours",
    "switched",
    "windows_of",
    "within_limit",
]

SWITCHES_PER_DAY = MAX_SWITCHES
"""Switches to on-demand AWS allows a table in a rolling 24 hours (switching back to provisioned is
not limited)."""
DECLARED_PER_DAY = SWITCHES_PER_DAY - 1
"""The most declared windows a day `fixed_hours` chooses: one short of DynamoDB's limit, since
windows at the same hours every day are exactly 24 hours apart, and a switch a few seconds late
one day would make the next day's first one a fifth in 24 hours."""
REFUSAL_SLACK = 0.0002
"""The share of the units asked that declared windows may refuse beyond the autopilot alone on the
minutes they are learned from (`best_of`): the tune rule's default floor, `candidates.REFUSAL_FLOOR`
(not imported: the candidates import this module; a test keeps the two equal)."""
SWITCH_MINUTES = 5
"""The minutes a switch to on-demand takes in the model, during which the table serves and is billed
as provisioned. AWS: the switch "can take several minutes. During the switching period, your table
delivers throughput that is consistent with the previously provisioned" units ("Considerations when
switching capacity modes in DynamoDB"); switching back delivers on-demand's previous peak, so the
end of a window is taken as immediate."""
DAY = 1440
HOUR = 60


def _hourly(per_minute: Sequence[float], offset: int) -> dict[tuple[int, int], float]:
    """``per_minute`` summed by (day, hour of day), minute 0 at minute ``offset`` of day 0."""
    out: dict[tuple[int, int], float] = {}
    for m, v in enumerate(per_minute):
        day, minute = divmod(offset + m, DAY)
        slot = (day, minute // HOUR)
        out[slot] = out.get(slot, 0.0) + v
    return out


def costed_hours(
    base: Mapping[Key, Recorded],
    on_demand: Mapping[Key, Recorded],
    prices: Prices,
    offset: int,
    target: int,
    basis: str = billing.PER_MINUTE,
) -> dict[tuple[int, int], Hour]:
    """Per (day, hour of day), the hour as the deployed switch costs it
    (`on_demand_hours.Hour`): what the base's provisioned capacity cost in it, billed by
    ``basis``; and, from the units each dimension served on-demand (the on-demand run's, which
    serves what is asked), what on-demand charges and what the least level target tracking at
    ``target`` % needs for the hour's busiest minute would cost (`on_demand_hours.hour_costs`)."""
    keys = list(on_demand)
    minutes = len(on_demand[keys[0]].served) if keys else 0
    levels = {k: _levels(base[k].provisioned, offset, basis) for k in keys}
    out: dict[tuple[int, int], Hour] = {}
    m = 0
    while m < minutes:
        day, minute = divmod(offset + m, DAY)
        end = min(minutes, m + HOUR - minute % HOUR)
        least, charged = hour_costs(
            [(k[1], on_demand[k].served[m:end]) for k in keys], target, prices
        )
        paid = sum(prices.provisioned(k[1], sum(levels[k][m:end])) for k in keys)
        out[(day, minute // HOUR)] = Hour(paid, least * (end - m) / HOUR, charged)
        m = end
    return out


def plan(
    costed: Mapping[tuple[int, int], Hour],
    minutes: int,
    offset: int = 0,
    most: int = SWITCHES_PER_DAY,
    history: int = HISTORY_DAYS,
    hindsight: bool = False,
    peaks: Mapping[tuple[int, int], Mapping[Key, float]] | None = None,
    target: int = 70,
    returns: dict[tuple[int, int], dict[Key, int]] | None = None,
) -> list[bool]:
    """Per minute of a trace of ``minutes``, whether the table is on-demand: each day's
    windows (`day_plans`), the rolling limit of ``most`` switches to on-demand in 24 hours
    kept. ``offset``: the trace's first minute's minute of the day (UTC). With ``returns``,
    it is given for each (day, hour a window of its plan ends at) the level each dimension
    returns at, where known (`day_plans`)."""
    days = (offset + minutes + DAY - 1) // DAY
    wanted: list[bool] = []
    for day, (hours, levels) in enumerate(
        day_plans(costed, days, most, history, hindsight, peaks or {}, target)
    ):
        wanted += [h for h in hours for _ in range(HOUR)]
        if returns is not None:
            returns.update({(day, end): v for end, v in levels.items()})
    return within_limit(wanted[offset : offset + minutes], most)


def day_plans(
    costed: Mapping[tuple[int, int], Hour],
    days: int,
    most: int = SWITCHES_PER_DAY,
    history: int = HISTORY_DAYS,
    hindsight: bool = False,
    peaks: Mapping[tuple[int, int], Mapping[Key, float]] | None = None,
    target: int = 70,
) -> list[tuple[list[bool], dict[int, dict[Key, int]]]]:
    """Each of ``days`` days' plan as the deployed switch learns it
    (`ddb_capacity_runtime.hybrid.learning.plan_of`): its 24 hours
    (`on_demand_hours.day_plan`) from the ``costed`` hours (`costed_hours`) of the ``history``
    days before it (`on_demand_hours.past_slots`: the day before's last hour is not yet known
    when the switch learns, its occurrence of the day before that is used), those an earlier
    plan put on-demand seen as the switch sees them (no provisioned cost of their own,
    `on_demand_hours.day_savings`); and, from ``peaks`` (`first_peaks`), the level each
    dimension returns at after each of its windows, by the hour it ends at
    (`on_demand_hours.return_level` at ``target`` %), where known. With ``hindsight``, each
    day's windows come from that day's own costs: a cost reference for benchmarks, not a
    bound (the rolling limit links the days, and a day's choice can cost the next one a
    window)."""
    out = []
    on_demand: set[tuple[int, int]] = set()
    for day in range(days):
        rows = [[(day, h) for h in range(24)]] if hindsight else past_slots(day, history)
        past = [[_lived(costed, slot, on_demand) for slot in row] for row in rows]
        hours = day_plan(day_savings(past), min(most, LEARNED_PER_DAY))
        on_demand.update((day, hour) for hour in range(24) if hours[hour])
        seen = partial(_seen, peaks or {}, rows)
        out.append((hours, window_returns(hours, seen, target)))
    return out


def _seen(
    peaks: Mapping[tuple[int, int], Mapping[Key, float]],
    rows: Sequence[Sequence[tuple[int, int]]],
    hour: int,
) -> list[Mapping[Key, float] | None]:
    """Per past day of ``rows``, the ``peaks`` of its occurrence of ``hour`` (None: none)."""
    return [peaks.get(row[hour]) for row in rows]


def first_peaks(
    on_demand: Mapping[Key, Recorded], offset: int
) -> dict[tuple[int, int], dict[Key, float]]:
    """Per (day, hour of day), each dimension's busiest minute (units per second served
    on-demand) of the hour's first `on_demand_hours.RETURN_MINUTES` (an hour the trace starts
    within: none)."""
    keys = list(on_demand)
    minutes = len(on_demand[keys[0]].served) if keys else 0
    out: dict[tuple[int, int], dict[Key, float]] = {}
    for m in range((-offset) % HOUR, minutes, HOUR):
        day, minute = divmod(offset + m, DAY)
        end = min(minutes, m + RETURN_MINUTES)
        out[(day, minute // HOUR)] = {k: max(on_demand[k].served[m:end]) for k in keys}
    return out


def _lived(
    costed: Mapping[tuple[int, int], Hour],
    slot: tuple[int, int],
    on_demand: set[tuple[int, int]],
) -> Hour | None:
    """The hour at ``slot`` as the switch would have seen it: without a provisioned cost of
    its own where the plan put it on-demand."""
    hour = costed.get(slot)
    return replace(hour, provisioned=None) if hour is not None and slot in on_demand else hour


def fixed_hours(
    provisioned_cost: Sequence[float],
    on_demand_cost: Sequence[float],
    offset: int = 0,
    until: int | None = None,
    most: int = DECLARED_PER_DAY,
) -> list[bool]:
    """The 24 hours of the day a declared window puts on-demand every day: `best_windows` of
    each hour's median saving (provisioned - on-demand) over the whole clock hours of
    minutes 0 to ``until`` (None: every minute; a part of an hour at either end is left
    out), at most ``most`` windows. ``offset`` as for `plan`."""
    end = len(provisioned_cost) if until is None else until
    paid = _hourly(provisioned_cost[:end], offset)
    charged = _hourly(on_demand_cost[:end], offset)
    whole = _hourly([1.0] * end, offset)
    savings = []
    for hour in range(24):
        seen = [paid[s] - charged[s] for s in paid if s[1] == hour and whole[s] == HOUR]
        savings.append(statistics.median(seen) if seen else 0.0)
    hours = best_windows(savings, most)
    if all(hours):  # a window lasts under a day: the hour saving least stays provisioned
        hours[min(range(24), key=lambda h: savings[h])] = False
    return hours


def best_of(
    hours: Sequence[bool],
    base: Mapping[Key, Recorded],
    on_demand: Mapping[Key, Recorded],
    prices: Prices,
    offset: int,
    until: int,
    recovery: int,
    basis: str,
) -> list[bool]:
    """Of ``hours``' windows, the set (any of them, or none) that costs least over minutes 0
    to ``until`` as composed and billed (by ``basis``), among those that refuse no more than
    ``base`` alone there (beyond `REFUSAL_SLACK` of the units asked). Hours are chosen by each
    hour's own saving; composed, a window also costs what it does around it: the switch holds
    the table's level of before it from the switch's start and for ``recovery`` minutes after
    (`frozen`), a table returned below what comes next refuses, one returned at a peak's level
    pays it for that clock hour."""
    mine = {k: _cut(r, until) for k, r in base.items()}
    theirs = {k: _cut(r, until) for k, r in on_demand.items()}
    asked = sum(sum(r.demand) for r in mine.values())
    allowed = sum(sum(r.throttled) for r in mine.values()) + REFUSAL_SLACK * asked
    first = offset % HOUR

    def judged(chosen: list[bool]) -> tuple[bool, float]:
        composed = compose(mine, theirs, prices, offset, hours=chosen, recovery=recovery)
        refused = sum(sum(c.recorded.throttled) for c in composed.values())
        cost = sum(
            billing.charge(k[1], c.recorded.provisioned, c.recorded.served, prices, first, basis)
            for k, c in composed.items()
        )
        return refused > allowed, cost

    windows = windows_of(hours)
    sets = []
    for n in range(len(windows) + 1):
        for picked in itertools.combinations(windows, n):
            chosen = [False] * 24
            for first_hour, long in picked:
                for h in range(first_hour, first_hour + long):
                    chosen[h % 24] = True
            sets.append(chosen)
    return min(sets, key=judged)


def _cut(r: Recorded, until: int) -> Recorded:
    """``r``'s minutes before ``until``."""
    out = Recorded(
        r.demand[:until],
        r.served[:until],
        r.throttled[:until],
        r.provisioned[:until],
        r.throttle_events[:until],
    )
    if r.key_range:
        out.with_key_range(r.key_range[:until])
    return out


def windows_of(hours: Sequence[bool]) -> list[tuple[int, int]]:
    """The declared windows ``hours`` (24, of the day) make: (first hour, hours long) each,
    by first hour; a run through midnight is one window."""
    starts = [h for h in range(24) if hours[h] and not hours[h - 1]]
    out = []
    for h in starts:
        n = 0
        while n < 24 and hours[(h + n) % 24]:
            n += 1
        out.append((h, n))
    return out


def daily(hours: Sequence[bool], offset: int, minutes: int) -> list[bool]:
    """Per minute of a trace of ``minutes``, whether ``hours`` (24, of the day) put it
    on-demand; ``offset`` as for `plan`."""
    return [hours[(offset + m) // HOUR % 24] for m in range(minutes)]


def led(wanted: Sequence[bool], minutes: int = SWITCH_MINUTES) -> list[bool]:
    """``wanted`` (on-demand minutes, by plan) with each window's switch started ``minutes``
    earlier (not before the first minute), so that the switch ends as the window starts."""
    out = list(wanted)
    for m in range(1, len(wanted)):
        if wanted[m] and not wanted[m - 1]:
            out[max(0, m - minutes) : m] = [True] * min(m, minutes)
    return out


def switched(mask: Sequence[bool], minutes: int = SWITCH_MINUTES) -> list[bool]:
    """``mask`` (on-demand minutes, by plan) as served: each window's first ``minutes`` are
    still provisioned, the switch's own (`SWITCH_MINUTES`)."""
    out, run = [], 0
    for on in mask:
        run = run + 1 if on else 0
        out.append(run > minutes)
    return out


def within_limit(wanted: Sequence[bool], most: int) -> list[bool]:
    """``wanted`` with every on-demand window dropped that would start while ``most``
    switches to on-demand were made in the 24 hours before it."""
    out: list[bool] = []
    switches: list[int] = []  # seconds from the trace's start, as `core.switches` counts them
    on = dropped = False
    for m, w in enumerate(wanted):
        if not w:
            on = dropped = False
        elif not on and not dropped:  # a window's first minute: a switch to on-demand
            if len(recent(switches, m * 60)) >= most:
                dropped = True  # the whole window, not its later minutes
            else:
                switches.append(m * 60)
                on = True
        out.append(on)
    return out


@dataclass
class Composed:
    """One dimension of the hybrid: its minutes and its cost from the first scored minute."""

    recorded: Recorded
    cost_usd: float
    on_demand_minutes: int


def costs(
    base: Mapping[Key, Recorded],
    on_demand: Mapping[Key, Recorded],
    prices: Prices,
    offset: int = 0,
    basis: str = billing.PER_MINUTE,
) -> tuple[list[float], list[float]]:
    """Per minute, (what the table's provisioned capacity cost in ``base``, what on-demand
    charged for its requests in ``on_demand``): every dimension's together, in dollars. By
    the hour's highest level (``basis`` hourly-max), each minute is charged its clock hour's
    highest level, so that an hour's minutes add up to what the hour is billed."""
    keys = list(base)
    minutes = len(base[keys[0]].demand) if keys else 0
    unit = [prices.provisioned(k[1], 1) for k in keys]  # a unit-minute's dollars
    request = [prices.on_demand(k[1], 1) for k in keys]  # a minute of 1 unit/s
    provisioned = [_levels(base[k].provisioned, offset, basis) for k in keys]
    served = [on_demand[k].served for k in keys]
    paid = [sum(p[m] * u for p, u in zip(provisioned, unit, strict=True)) for m in range(minutes)]
    charged = [sum(s[m] * r for s, r in zip(served, request, strict=True)) for m in range(minutes)]
    return paid, charged


def _levels(levels: Sequence[int], offset: int, basis: str) -> Sequence[int]:
    """``levels`` as billed: as they are (per-minute), or each minute at its clock hour's
    highest (hourly-max; minute 0 at minute ``offset`` of its day)."""
    if basis == billing.PER_MINUTE:
        return levels
    out = list(levels)
    start = 0
    while start < len(levels):
        end = min(len(levels), start + HOUR - (offset + start) % HOUR)
        top = max(levels[start:end])
        out[start:end] = [top] * (end - start)
        start = end
    return out


def compose(
    base: Mapping[Key, Recorded],
    on_demand: Mapping[Key, Recorded],
    prices: Prices,
    offset: int = 0,
    start: int = 0,
    most: int = SWITCHES_PER_DAY,
    hindsight: bool = False,
    hours: Sequence[bool] | None = None,
    recovery: int = 0,
    target: int = 70,
    basis: str = billing.PER_MINUTE,
) -> dict[Key, Composed]:
    """The hybrid from a provisioned run (``base``) and an on-demand run of the same
    trace, per dimension: each minute the base's or on-demand's, by `plan` over the hours
    costed (`costed_hours` at ``target`` %, every dimension's together), or with
    ``hours`` (24, `fixed_hours`) by those hours every day; either way within the rolling
    limit, each window's first minutes the switch's (`switched`). ``start``: the first
    minute that counts for the cost (the plan uses every minute); ``hindsight``: as for
    `plan`; ``recovery``: the minutes after a window the table keeps its level of the
    switch's start (`frozen`), as the deployed switch returns it; ``basis``: how the plan
    bills the base's provisioned hours."""
    keys = list(base)
    minutes = len(base[keys[0]].demand) if keys else 0
    unit = {k: prices.provisioned(k[1], 1) for k in keys}  # a unit-minute's dollars
    request = {k: prices.on_demand(k[1], 1) for k in keys}  # a minute of 1 unit/s
    returns: dict[tuple[int, int], dict[Key, int]] = {}
    if hours is None:
        costed = costed_hours(base, on_demand, prices, offset, target, basis)
        peaks = first_peaks(on_demand, offset)
        wanted = plan(
            costed, minutes, offset, most, hindsight=hindsight, peaks=peaks, target=target,
            returns=returns,
        )  # fmt: skip
    else:
        wanted = within_limit(daily(hours, offset, minutes), most)
    asked = within_limit(led(wanted), most)
    mask = switched(asked)
    held = _held_minutes(asked, mask, recovery)
    floors = _floors(base, mask, held, returns, offset, on_demand)
    out = {}
    for k in keys:
        b, o = frozen(base[k], held, floors.get(k)), on_demand[k]
        cost = sum(
            o.served[m] * request[k] if mask[m] else b.provisioned[m] * unit[k]
            for m in range(start, minutes)
        )
        out[k] = Composed(_picked(b, o, mask), cost, sum(mask[start:]))
    return out


def _held_minutes(asked: Sequence[bool], mask: Sequence[bool], recovery: int) -> dict[int, int]:
    """Per minute the table's level is held (targets suspended, the autopilot not yet acting),
    the minute whose level it holds: each switch's own minutes (``asked`` but not ``mask``)
    and the ``recovery`` minutes after its window, at the switch's first minute's level."""
    held: dict[int, int] = {}
    began = 0
    for m, on in enumerate(asked):
        if on and (m == 0 or not asked[m - 1]):
            began = m
        if on and not mask[m]:
            held[m] = began
        if m and mask[m - 1] and not mask[m]:
            for after in range(m, min(m + recovery, len(asked))):
                if asked[after]:
                    break
                held[after] = began
    return held


def _floors(
    base: Mapping[Key, Recorded],
    mask: Sequence[bool],
    held: Mapping[int, int],
    returns: Mapping[tuple[int, int], Mapping[Key, int]],
    offset: int,
    served: Mapping[Key, Recorded],
) -> dict[Key, dict[int, int]]:
    """Per dimension, the held minutes after each window (``mask`` on-demand) it returns no
    lower than: what it ``served`` on-demand in the busiest of its last minutes
    (`on_demand_hours.SERVED_MINUTES`, read `SERVED_LAG_MINUTES` before its end), and for a
    learned window the level its plan's ``returns`` give for the hour it ends at (the plan of
    the day of its last minute); each at most the highest level the base ever had (its
    maximum capacity bounds it)."""
    out: dict[Key, dict[int, int]] = {}
    tops = {k: max(r.provisioned, default=0) for k, r in base.items()}
    for m in range(1, len(mask)):
        if not (mask[m - 1] and not mask[m]):
            continue
        levels = dict(returns.get(((offset + m - 1) // DAY, (offset + m) % DAY // HOUR), {}))
        last = range(max(0, m - SERVED_LAG_MINUTES - SERVED_MINUTES), m - SERVED_LAG_MINUTES)
        for k, r in served.items():
            peak = max((r.served[i] for i in last if mask[i]), default=0.0)
            levels[k] = max(levels.get(k, 0), math.ceil(peak - 1e-9))
        after = m
        while after in held and after > held[after]:
            for k, level in levels.items():
                out.setdefault(k, {})[after] = min(level, tops[k])
            after += 1
    return out


def frozen(b: Recorded, held: dict[int, int], floors: Mapping[int, int] | None = None) -> Recorded:
    """``b`` with each minute of ``held`` at the level of the minute it holds, or its
    ``floors`` level where higher: billed at that level, serving what ``b`` served where ``b``
    had no more, else at most that level (no burst counted), the rest throttled; above what
    ``b`` had (a floor), serving what is asked up to it."""
    if not held:
        return b
    provisioned, served, throttled = list(b.provisioned), list(b.served), list(b.throttled)
    floors = floors or {}
    for m, first in held.items():
        level = max(b.provisioned[first], floors.get(m, 0))
        provisioned[m] = level
        if b.provisioned[m] > level:
            served[m] = min(b.demand[m], float(level))
            throttled[m] = b.demand[m] - served[m]
        elif floors.get(m, 0) > b.provisioned[m]:
            served[m] = max(b.served[m], min(b.demand[m], float(level)))
            throttled[m] = b.demand[m] - served[m]
    out = Recorded(list(b.demand), served, throttled, provisioned, list(b.throttle_events))
    if b.key_range:
        out.with_key_range(b.key_range)
    return out


def _picked(b: Recorded, o: Recorded, mask: Sequence[bool]) -> Recorded:
    """Each minute of ``b`` (provisioned) or, where ``mask`` is set, of ``o`` (on-demand)."""

    def pick(ours: Sequence[float], theirs: Sequence[float]) -> list[float]:
        return [t if od else v for v, t, od in zip(ours, theirs, mask, strict=True)]

    recorded = Recorded(
        list(b.demand),
        pick(b.served, o.served),
        pick(b.throttled, o.throttled),
        [0 if od else p for p, od in zip(b.provisioned, mask, strict=True)],
        pick(b.throttle_events, o.throttle_events),
    )
    zeros = [0.0] * len(mask)
    if b.key_range or o.key_range:
        recorded.with_key_range(pick(b.key_range or zeros, o.key_range or zeros))
    if o.on_demand or o.max_on_demand:
        recorded.with_on_demand(
            pick(zeros, o.on_demand or zeros), pick(zeros, o.max_on_demand or zeros)
        )
    return recorded
