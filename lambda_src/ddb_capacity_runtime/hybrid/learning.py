"""Runs in: on-demand switch Lambda.

A table's learned on-demand windows (``learn_on_demand_windows``): the hours of each UTC day
it runs on-demand, learned from its own CloudWatch metrics of the days before by the rule of
`core.on_demand_hours` (the simulator's ``hybrid`` learns by it too). Its run every hour at
:55 and :00 acts for the hour `LEAD_S` ahead (at :55 the next hour, at :00 this one); the day's
plan is learned by the first run for that day (23:55 the day before) and kept in the table's
switch state. Everything read here is untrusted: an event's settings are checked, a metric
that is not trusted leaves its hours unknown, and unknown hours never put the table on-demand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..aws.metrics import HourReads, fetch, fetch_hours
from ..core.errors import SwitchError, shown
from ..core.names import is_table_name
from ..core.on_demand_hours import (
    DAY_S,
    HISTORY_DAYS,
    HOUR_S,
    LEARNED_PER_DAY,
    LIST_PRICES,
    RETURN_MINUTES,
    SERVED_LAG_MINUTES,
    SERVED_MINUTES,
    Hour,
    day_plan,
    day_savings,
    hour_costs,
    past_slots,
    window_returns,
)
from ..core.series import Key
from ..core.tables import named_gsis
from ..core.validators import is_whole

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient

LEARNED = "learned"
"""The name a learned window has in the switch state and the logs."""
DEFERRED = "learning-deferred"
"""A learned table's run's outcome when the invocation had no time left to learn the table's day
(`LEARN_RESERVE_S`): no window starts (one past its end still ends), and the next run learns it
(counted as ``LearningDeferred``, not alarmed: a deployment whose tables are deferred night
after night needs a longer timeout, ``function_options``)."""
LEARN_RESERVE_S = 30.0
"""The seconds an invocation must have left to learn a table's day: one table's reads of 8 days
of metrics, with retries, and what the invocation still has to do after it."""
SKIPPED = "skipped-at-the-limit"
"""A learned table's run's outcome when its window would pass DynamoDB's rolling limit: the
window is skipped whole (counted as ``SwitchSkipped``, not alarmed)."""
LEAD_S = 360
"""A run acts for the hour this far ahead: its switch to on-demand starts 5 minutes before the
hour (the switch's own minutes), and its end comes on the hour."""
MOST_UNITS = 40_000_000
"""The largest on-demand maximum an event may carry (the constructs check the table's quota)."""


@dataclass(frozen=True)
class Learning:
    """A table's learned windows, as its event gives them: the target its on-demand hours are
    costed at as provisioned (20 to 90 %), and the on-demand maximums (a cost guard)."""

    table: str
    target: int
    max_read: int
    max_write: int


def learnings(event: Mapping[str, Any]) -> list[Learning | SwitchError]:
    """The tables of a ``learned`` event (``{"Action": "learned", "Tables": [{"Table",
    "TargetUtilization", "MaxReadRequestUnits", "MaxWriteRequestUnits"}]}``), each checked on
    its own (it comes through EventBridge: untrusted): a SwitchError naming what is wrong in
    place of a malformed entry, so that the other tables still run. SwitchError when
    ``Tables`` is not a list."""
    tables = event.get("Tables")
    if not isinstance(tables, list) or not tables:
        raise SwitchError(f"learned event: Tables {shown(tables, 200)}; expected a list")
    return [_learning(entry) for entry in tables]


def _learning(entry: object) -> Learning | SwitchError:
    got = entry if isinstance(entry, Mapping) else {}
    name, target = got.get("Table"), got.get("TargetUtilization")
    reads, writes = got.get("MaxReadRequestUnits"), got.get("MaxWriteRequestUnits")
    if not (
        is_table_name(name)
        and is_whole(target, 20, 90)
        and is_whole(reads, 1, MOST_UNITS)
        and is_whole(writes, 1, MOST_UNITS)
    ):
        return SwitchError(
            f"learned event: table {shown(entry, 200)}; expected Table (a table name), "
            f"TargetUtilization (20 to 90) and MaxRead/WriteRequestUnits (1 to {MOST_UNITS})"
        )
    return Learning(str(name), target, reads, writes)


def acting_for(now: float) -> tuple[int, int]:
    """The (day from the epoch, hour of day) a run at ``now`` acts for (`LEAD_S` ahead)."""
    day, second = divmod(int(now) + LEAD_S, DAY_S)
    return day, second // HOUR_S


def run_end(plan: Sequence[bool], day: int, hour: int) -> float:
    """When the run of on-demand hours of ``plan`` that ``hour`` is in ends (at the latest the
    day's end), in seconds from the epoch."""
    end = hour
    while end < len(plan) and plan[end]:
        end += 1
    return float(day * DAY_S + end * HOUR_S)


def keys_of(table: str, description: Mapping[str, Any]) -> list[Key]:
    """Every dimension of the table and its GSIs (DescribeTable's, untrusted: ValueError)."""
    gsis = named_gsis(f"DescribeTable {table}", description.get("GlobalSecondaryIndexes") or [])
    indexes: list[str | None] = [None, *(name for name, _ in gsis)]
    return [(table, index, dim) for index in indexes for dim in ("read", "write")]


@dataclass(frozen=True)
class Plan:
    """A day's learned windows: its 24 hours, whether each runs on-demand; and per hour a
    window ends at, the level each dimension (``"<index or ''>|read"``) returns at, where
    known."""

    hours: tuple[bool, ...]
    returns: dict[int, dict[str, int]]


def learn(
    cloudwatch: CloudWatchClient,
    table: str,
    description: Mapping[str, Any],
    learning: Learning,
    day: int,
) -> Plan:
    """``day``'s plan, learned from the table's metrics of the hours
    `core.on_demand_hours.past_slots` names (at most `LEARNED_PER_DAY` windows). SwitchError
    (the table left as it is) when the metrics or the table's description cannot be read."""
    rows = past_slots(day, HISTORY_DAYS)
    first = min(d for row in rows for d, _ in row)
    start = datetime.fromtimestamp(first * DAY_S, UTC)
    end = datetime.fromtimestamp(day * DAY_S, UTC)
    try:
        keys = keys_of(table, description)
        reads = fetch_hours(cloudwatch, keys, start, end)
    except Exception as exc:
        raise SwitchError(
            f"table {table}: its on-demand hours for day {day} could not be learned ({exc}); "
            "it stays as it is until they are"
        ) from None
    return plan_of(reads, day, learning.target)


def plan_of(reads: Mapping[Key, HourReads], day: int, target: int) -> Plan:
    """``day``'s plan from every dimension's reads of the hours before it (`learn`)."""
    rows = past_slots(day, HISTORY_DAYS)
    days = [[_hour(reads, slot, target) for slot in row] for row in rows]
    hours = tuple(day_plan(day_savings(days), LEARNED_PER_DAY))

    def peaks(hour: int) -> list[dict[Key, float] | None]:
        return [_peaks(reads, row[hour], days[k][hour] is not None) for k, row in enumerate(rows)]

    returns = window_returns(hours, peaks, target)
    named = {h: {f"{k[1] or ''}|{k[2]}": v for k, v in lv.items()} for h, lv in returns.items()}
    return Plan(hours, named)


def _peaks(
    reads: Mapping[Key, HourReads], slot: tuple[int, int], known: bool
) -> dict[Key, float] | None:
    """Each dimension's busiest minute (units per second) of the first `RETURN_MINUTES` of the
    hour at ``slot`` (None: the hour is not ``known``, `_hour`)."""
    if not known:
        return None
    begin = datetime.fromtimestamp(slot[0] * DAY_S + slot[1] * HOUR_S, UTC)
    minutes = [begin + timedelta(minutes=m) for m in range(RETURN_MINUTES)]
    return {
        key: max((r.consumed or {}).get(m, 0.0) / 60 for m in minutes) for key, r in reads.items()
    }


def _hour(reads: Mapping[Key, HourReads], slot: tuple[int, int], target: int) -> Hour | None:
    """One past hour costed from every dimension's reads (`core.on_demand_hours.Hour`).
    Unknown (None) when a dimension's consumption or provisioned capacity there is not
    trusted, or when no dimension has a datapoint there at all (DynamoDB publishes a
    provisioned table's capacity every few minutes, so an hour without any is not known
    idle). Its provisioned cost is the hour's
    highest provisioned level of every dimension; None (on-demand: estimated) when a
    dimension has none there."""
    begin = datetime.fromtimestamp(slot[0] * DAY_S + slot[1] * HOUR_S, UTC)
    minutes = [begin + timedelta(minutes=m) for m in range(60)]
    served: list[tuple[str, list[float]]] = []
    levels: list[float] = []
    seen = False
    for key, r in reads.items():
        if r.consumed is None or any(m in r.consumed_bad for m in minutes):
            return None
        if r.provisioned is None or begin in r.provisioned_bad:
            return None  # a level not trusted is not known: the hour is not on-demand either
        units = [r.consumed.get(m) for m in minutes]
        served.append((key[2], [(u or 0.0) / 60 for u in units]))
        top = None if r.provisioned is None else r.provisioned.get(begin)
        if top is not None and begin not in r.provisioned_bad:
            levels.append(top * LIST_PRICES.unit_hour(key[2]))
        seen = seen or top is not None or any(u is not None for u in units)
    if not seen:
        return None
    least, on_demand = hour_costs(served, target, LIST_PRICES)
    return Hour(sum(levels) if len(levels) == len(reads) else None, least, on_demand)


def served_levels(
    cloudwatch: CloudWatchClient, table: str, description: Mapping[str, Any], at: float
) -> dict[str, int]:
    """Each dimension's level served at the end of a window (declared or learned) ending at
    ``at``: the busiest minute (units per second, rounded up) of the `SERVED_MINUTES` that
    end `SERVED_LAG_MINUTES` before it (``"<index or ''>|read"`` to units). SwitchError
    when a minute is not known: the table is then not switched back, since it could go
    below what it served."""
    end = datetime.fromtimestamp(at, UTC).replace(second=0, microsecond=0)
    end -= timedelta(minutes=SERVED_LAG_MINUTES)
    start = end - timedelta(minutes=SERVED_MINUTES)
    try:
        keys = keys_of(table, description)
        series = fetch(cloudwatch, keys, start, end, throttles=False, delivered=True)
    except Exception as exc:
        raise SwitchError(
            f"table {table}: what it served at its window's end could not be read "
            f"({exc}); it stays on-demand until it is"
        ) from None
    out = {}
    for (_, index, dim), read in series.items():
        if read.unknown_minutes:
            raise SwitchError(
                f"table {table}: what {index or 'the table'} served ({dim}) at its window's "
                "end is not known; it stays on-demand until it is"
            )
        out[f"{index or ''}|{dim}"] = math.ceil(max(read.consumed, default=0.0) - 1e-9)
    return out
