"""Runs in: on-demand switch Lambda, workstation (simulator).

The hours of the day a table runs on-demand, learned from its own past days: one rule for the
switch's learned windows (``learn_on_demand_windows``, `hybrid.learning`) and for the
simulator's ``hybrid`` policy that models them.

1. Each clock hour of each past day is costed both ways (`Hour`): what its provisioned
   capacity cost, as billed (the hour's highest level); and what on-demand charges for the
   units it served (`hour_costs`). An hour the table spent on-demand has no provisioned
   cost of its own: it is taken as the least level that would have served it (its busiest
   minute's units per second over the target, `hour_costs`), scaled by how much more than
   that least level the table's provisioned hours of the same days paid (`day_savings`), so
   that an hour is judged alike whichever mode it ran in.
2. Each hour of the day's saving is the median over the past days known for it of
   (provisioned - on-demand) (`day_plan`; none known: no saving).
3. The day's on-demand windows are the at most `LEARNED_PER_DAY` runs of whole hours whose
   savings add up to the most (`best_windows`).
4. A window ends with the table back to provisioned no lower than before it, nor than the
   level target tracking at ``target`` % needs for the busiest minute of the first
   `RETURN_MINUTES` of the hour after it, taken as the median over the same past days
   (`return_level`): the level the traffic of that hour usually needs, ready as it comes;
   nor than what it served in the busiest of its own last `SERVED_MINUTES` (known
   `SERVED_LAG_MINUTES` later).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from .switches import MAX_SWITCHES

K = TypeVar("K")

LEARNED_PER_DAY = MAX_SWITCHES - 1
"""The most learned windows a day's plan holds: one switch short of DynamoDB's 4 in any rolling 24
hours, since a plan is much the same from one day to the next (a median of 7 days), its windows
about 24 hours apart, and a switch a few seconds later one day than the next would make a fourth
window a fifth switch in 24 hours."""
HISTORY_DAYS = 7
"""The most past days a day's windows are learned from."""
HOURS = 24
HOUR_S = 3600
DAY_S = 86_400
PLANNED_BEFORE_S = 300
"""A day's windows are learned this long before the day begins (the switch's run at 23:55 UTC,
which starts a window of the day's first hour)."""
RETURN_MINUTES = 15
"""The first minutes of the hour after a window whose busiest sets the level it returns at."""
SERVED_MINUTES = 15
"""The last minutes of a learned window whose busiest the table returns no lower than."""
SERVED_LAG_MINUTES = 5
"""How long before a window's end those minutes end: CloudWatch delivers a minute up to 3
minutes late (`core.modes.DELIVERY_MINUTES`), and 2 more (`core.modes.LATE_MINUTES`) are
left to it, as a tick leaves them; a minute older than that without a datapoint is idle."""
SETTLED_S = 600
"""An hour is learned from once it ended this long before: CloudWatch delivers a minute's
datapoints within a few minutes."""


@dataclass(frozen=True)
class UnitPrices:
    """The list prices the hours are costed at: dollars per provisioned unit-hour and per
    on-demand request unit (us-east-1, Standard table class; the other Regions and the
    Standard-IA class keep much the same ratio between the two, which is all the choice of
    hours depends on)."""

    rcu_hour: float = 0.00013
    wcu_hour: float = 0.00065
    read_request_million: float = 0.125
    write_request_million: float = 0.625

    def unit_hour(self, dimension: str) -> float:
        return self.wcu_hour if dimension == "write" else self.rcu_hour

    def request_unit(self, dimension: str) -> float:
        per_million = (
            self.write_request_million if dimension == "write" else self.read_request_million
        )
        return per_million / 1_000_000


LIST_PRICES = UnitPrices()


class Priced(Protocol):
    """What `hour_costs` reads of a price list (`UnitPrices`, the simulator's ``Prices``)."""

    def unit_hour(self, dimension: str) -> float: ...

    def request_unit(self, dimension: str) -> float: ...


def hour_costs(
    served: Iterable[tuple[str, Sequence[float]]], target: int, prices: Priced = LIST_PRICES
) -> tuple[float, float]:
    """(provisioned, on-demand) dollars of one clock hour from what each of the table's
    dimensions served in it: ``served`` gives per dimension its kind (``read`` or ``write``)
    and its units per second in each minute of the hour. Provisioned: the level target
    tracking at ``target`` % (1 to 100) needs for the busiest minute, at least 1 unit, for
    the hour; on-demand: every unit served."""
    provisioned = on_demand = 0.0
    for dimension, minutes in served:
        level = least_level(max(minutes, default=0.0), target)
        provisioned += level * prices.unit_hour(dimension)
        on_demand += sum(minutes) * 60 * prices.request_unit(dimension)
    return provisioned, on_demand


def past_slots(day: int, history: int = HISTORY_DAYS) -> list[list[tuple[int, int]]]:
    """The hours a ``day``'s windows are learned from, as (day, hour of day), ``history`` rows
    of 24: for each hour of the day, its ``history`` latest occurrences that had ended
    `SETTLED_S` before the day's plan is made (`PLANNED_BEFORE_S` before the day): so the
    day before's last hour is not among them, its occurrence of the day before that is.
    Days count from the epoch (UTC)."""
    made = day * DAY_S - PLANNED_BEFORE_S - SETTLED_S
    rows = []
    for k in range(history):
        row = []
        for hour in range(HOURS):
            d = day - 1 - k
            if d * DAY_S + (hour + 1) * HOUR_S > made:
                d -= 1
            row.append((d, hour))
        rows.append(row)
    return rows


@dataclass(frozen=True)
class Hour:
    """One clock hour of a past day, in dollars: what its provisioned capacity cost (None:
    the table was on-demand), the least provisioned level that would have served it cost
    (`hour_costs`), and what on-demand charges for what it served."""

    provisioned: float | None
    least: float
    on_demand: float


def day_savings(days: Sequence[Sequence[Hour | None]]) -> list[list[float | None]]:
    """Each hour's saving (provisioned - on-demand; None where the hour is not known) of
    ``days`` (each 24 `Hour`). An on-demand hour's provisioned cost is its least level's
    times the days' calibration: what their provisioned hours paid over what their least
    levels would have (at least 1; 1 when no hour was provisioned)."""
    paid = [h for d in days for h in d if h is not None and h.provisioned is not None]
    least = sum(h.least for h in paid)
    scale = max(1.0, sum(h.provisioned or 0.0 for h in paid) / least) if least > 0 else 1.0
    return [
        [
            None
            if h is None
            else (h.least * scale if h.provisioned is None else h.provisioned) - h.on_demand
            for h in d
        ]
        for d in days
    ]


def least_level(peak: float, target: int) -> int:
    """The least level target tracking at ``target`` % holds for ``peak`` units per second:
    at least 1."""
    return max(1, math.ceil(peak * 100 / target - 1e-9))


def return_level(peaks: Iterable[float | None], target: int) -> int | None:
    """The level a dimension returns at after a window: `least_level` of the median of its
    busiest minute of the first `RETURN_MINUTES` of the hour after the window on past days
    (``peaks``, units per second, None where a day does not know it); None when none does."""
    known = [p for p in peaks if p is not None]
    return least_level(statistics.median(known), target) if known else None


def run_ends(hours: Sequence[bool]) -> list[int]:
    """The hours at which a day plan's windows end (the first hour after each; 0 for one that
    runs to the day's end)."""
    return [
        (h + 1) % HOURS for h in range(HOURS) if hours[h] and not (h + 1 < HOURS and hours[h + 1])
    ]


def window_returns(
    hours: Sequence[bool],
    peaks: Callable[[int], Sequence[Mapping[K, float] | None]],
    target: int,
) -> dict[int, dict[K, int]]:
    """Per hour a window of the day plan ``hours`` ends at (`run_ends`), the level each
    dimension returns at where known (`return_level` at ``target`` %): ``peaks(hour)`` gives
    per past day each dimension's busiest minute of that hour's first `RETURN_MINUTES`
    (None: the day does not know the hour)."""
    out: dict[int, dict[K, int]] = {}
    for end in run_ends(hours):
        seen = peaks(end)
        keys = dict.fromkeys(k for p in seen if p for k in p)
        levels = {k: return_level([p.get(k) if p else None for p in seen], target) for k in keys}
        out[end] = {k: v for k, v in levels.items() if v is not None}
    return out


def day_plan(past: Iterable[Sequence[float | None]], most: int = MAX_SWITCHES) -> list[bool]:
    """The 24 hours of a day that run on-demand, from ``past`` days' savings (each 24 hours'
    provisioned - on-demand dollars, None where the hour is not known): each hour's median
    saving over the days that know it (no saving when none does), then `best_windows`."""
    days = list(past)
    savings: list[float] = []
    for hour in range(HOURS):
        known = [s for d in days if (s := d[hour]) is not None]
        savings.append(statistics.median(known) if known else 0.0)
    return best_windows(savings, most)


def best_windows(savings: Sequence[float], most: int = MAX_SWITCHES) -> list[bool]:
    """Which hours of ``savings`` (dollars on-demand saves in each hour; negative: what it
    costs more) run on-demand: at most ``most`` runs of consecutive hours, chosen so that
    their savings add up to the most. Hours that save nothing are never chosen on their
    own (an empty plan when no hour saves)."""
    n = len(savings)
    if most < 1 or n == 0:
        return [False] * n
    # best[k][i]: the most saved in hours < i with k runs, the last ending before i (off)
    # or at i - 1 (on); how[k][i]: how that state was reached, to walk back.
    neg = float("-inf")
    off = [[0.0] * (n + 1) for _ in range(most + 1)]
    on = [[neg] * (n + 1) for _ in range(most + 1)]
    came_off = [[False] * (n + 1) for _ in range(most + 1)]  # off[k][i] from on[k][i-1]
    came_on = [[False] * (n + 1) for _ in range(most + 1)]  # on[k][i] from off[k-1][i-1]
    for i in range(1, n + 1):
        s = savings[i - 1]
        for k in range(most + 1):
            from_on = on[k][i - 1]
            if from_on > off[k][i - 1]:
                off[k][i], came_off[k][i] = from_on, True
            else:
                off[k][i] = off[k][i - 1]
            if k:
                start, go_on = off[k - 1][i - 1], on[k][i - 1]
                if start >= go_on:
                    on[k][i], came_on[k][i] = start + s, True
                else:
                    on[k][i] = go_on + s
    k = max(range(most + 1), key=lambda j: max(off[j][n], on[j][n]))
    state_on = on[k][n] > off[k][n]
    if max(off[k][n], on[k][n]) <= 0:
        return [False] * n
    chosen = [False] * n
    i = n
    while i > 0:
        if state_on:
            chosen[i - 1] = True
            if came_on[k][i]:
                k, state_on = k - 1, False
        elif came_off[k][i]:
            state_on = True
        i -= 1
    return chosen
