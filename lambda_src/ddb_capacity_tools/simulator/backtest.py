"""Runs in: workstation (the `ddb-capacity` command).

A trace from a real table's CloudWatch history: consumed capacity plus throttled demand,
per minute, for the table or one GSI. Uses the scaler's own metric fetch.

Where DynamoDB published the throttles by cause (``{Read,Write}KeyRangeThroughputThrottleEvents``
and the others, read by the scaler's own `fetch_causes`), the refused demand is split:
the key-range part goes to `Trace.key_range`, and every replay refuses it again
whatever the capacity (a hot partition refused it); the rest is demand capacity could have
served. Where they were not published (older minutes, a Region without them) or could not
be read, every throttle is taken for a provisioned-throughput one, as before the causes
were published, and the trace's notes say so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from ddb_capacity_runtime.aws.error_codes import error_code
from ddb_capacity_runtime.aws.metrics import fetch, fetch_causes
from ddb_capacity_runtime.core.names import MAX_TABLE_QUOTA
from ddb_capacity_runtime.core.series import Key as SeriesKey
from ddb_capacity_runtime.core.series import Series
from ddb_capacity_runtime.core.validators import is_whole

from .text import counted
from .trace import Key, Trace, TraceError

MAX_DAYS = 15
"""CloudWatch keeps 1-minute datapoints for 15 days."""


def check_days(days: object) -> int:
    """``--days``, refused unless a whole number from 1 to `MAX_DAYS`."""
    if not is_whole(days, 1, MAX_DAYS):
        raise TraceError(
            f"--days: got {days!r}; expected a whole number from 1 to {MAX_DAYS} "
            f"(CloudWatch keeps 1-minute datapoints for {MAX_DAYS} days)"
        )
    return days


def history(
    cloudwatch: Any,
    dynamodb: Any,
    table: str,
    index: str | None,
    days: int,
    end: datetime | None = None,
    units_per_request: float = 1.0,
    *,
    with_indexes: bool = False,
    description: Any = None,
) -> Trace:
    """``days`` of history ending at ``end`` (default: now, on a whole minute). Demand is
    consumed + throttle events x ``units_per_request`` / 60, in units per second: what the
    table was asked for, as far as CloudWatch can tell. The table's (``index`` None) or one
    GSI's; with ``with_indexes`` (and no ``index``), the table's and every GSI's, as one
    trace: the table's whole bill, since billing mode is the table's. Its GSIs are read
    from ``description`` (`describe`'s answer, when the caller has it) or from
    DescribeTable."""
    check_days(days)
    if with_indexes and index is not None:
        raise TraceError(f"--index: got {index!r}; a table's whole bill takes no --index")
    end = history_end(end)
    start = end - timedelta(days=days)
    if description is None:
        description = describe(dynamodb, table)
    which = _indexes(description, table, index, with_indexes)
    keys = [(table, i, dim) for i in which for dim in ("read", "write")]
    errors: dict[SeriesKey, str] = {}
    series = fetch_causes(
        cloudwatch, fetch(cloudwatch, keys, start, end), start, end, errors=errors
    )
    demand = {}
    for key in keys:
        s = series[key]
        demand[(key[1], key[2])] = [
            c + t * units_per_request / 60 for c, t in zip(s.consumed, s.throttles, strict=True)
        ]
        trusted(table, key, s, demand[(key[1], key[2])])
    key_range, said = by_cause(series, units_per_request, errors)
    name = table if index is None else f"{table}/{index}"
    if len(which) > 1:
        name = f"{table} (+{counted(len(which) - 1, 'GSI')})"
    return Trace(
        name,
        start,
        demand,
        notes=f"CloudWatch history of {name}, {counted(days, 'day')} to {end:%Y-%m-%d %H:%M} UTC"
        + (f"; {said}" if said else ""),
        key_range=key_range,
    )


PLAUSIBLE_UNITS = 100 * MAX_TABLE_QUOTA
"""The most units a second one minute of a dimension's history may ask for, consumed and
throttled (a hundred times the largest table quota): more is no demand DynamoDB could have
been sent, but an answer of CloudWatch's not to be trusted."""


def trusted(table: str, key: SeriesKey, series: Series, demand: list[float]) -> None:
    """Raises TraceError when CloudWatch's answer for ``key`` (``series``, and the ``demand``
    read from it) is not to be trusted: a minute answered with a status other than
    ``Complete``, a NaN, negative, infinite or repeated value (`Series.untrusted`), or more
    than `PLAUSIBLE_UNITS`. Nothing is judged on such a history: its minutes would read as
    idle or as any demand at all, and a recommendation on them could lower capacity."""
    label = key[2] if key[1] is None else f"{key[1]} {key[2]}"
    where = f"{table}: CloudWatch's answer for its {label} capacity"
    if series.untrusted:
        raise TraceError(
            f"{where} left {counted(series.untrusted, 'minute')} not to be trusted (a status other "
            "than Complete, or a NaN, negative, infinite or repeated value); nothing is "
            "judged on that history: try again later"
        )
    peak = max(demand, default=0.0)
    if peak > PLAUSIBLE_UNITS:
        raise TraceError(
            f"{where} says {peak:.3g} units a second in one minute, more than any table "
            f"is sent ({PLAUSIBLE_UNITS:,} at most); nothing is judged on that history"
        )


def describe(dynamodb: Any, table: str) -> Any:
    """DescribeTable's answer for ``table`` (its ``Table``, untrusted); a table that does
    not exist is a TraceError naming it."""
    try:
        return dynamodb.describe_table(TableName=table)["Table"]
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            raise TraceError(
                f"--table: got {table!r}; no such table in this account and Region"
            ) from None
        raise


def _indexes(
    description: Any, table: str, index: str | None, with_indexes: bool
) -> list[str | None]:
    """The indexes whose history is read (None: the table's own), from DescribeTable's
    answer: ``index`` alone, after checking that the table has it; or, ``with_indexes``,
    the table and every GSI it has."""
    found = description.get("GlobalSecondaryIndexes") if isinstance(description, dict) else None
    listed = found if isinstance(found, list) else []
    names = [g.get("IndexName") for g in listed if isinstance(g, dict)]
    gsis = [n for n in names if isinstance(n, str)]  # untrusted: names only
    if index is not None and index not in gsis:
        raise TraceError(
            f"--index: got {index!r}; table {table!r} has "
            f"{', '.join(gsis) if gsis else 'no global secondary index'}"
        )
    return [None, *gsis] if with_indexes else [index]


def by_cause(
    series: dict[SeriesKey, Series], units_per_request: float, errors: dict[SeriesKey, str]
) -> tuple[dict[Key, list[float]] | None, str]:
    """The demand refused by key range (units/s, per dimension and minute; None when none
    was), and a note on the causes: how much of the refused demand each explains, and
    which throttled minutes had no cause published (taken for provisioned-throughput
    throttles, lumped)."""
    key_range: dict[Key, list[float]] = {}
    notes, lumped = [], []
    for key, s in series.items():
        refused = sum(s.throttles)
        if refused <= 0:
            continue
        label = key[2] if key[1] is None else f"{key[1]} {key[2]}"
        if key in errors:
            lumped.append(f"{label} (causes not read: {errors[key]})")
        elif s.causes_unknown:
            lumped.append(
                f"{label} ({counted(s.causes_unknown, 'throttled minute')} without causes)"
            )
        if s.key_range and any(s.key_range):
            key_range[(key[1], key[2])] = [k * units_per_request / 60 for k in s.key_range]
        notes.append(f"{label}: {sum(s.key_range) / refused:.0%} of throttle events key-range")
    if lumped:
        notes.append(
            "throttles by cause not published for "
            + ", ".join(lumped)
            + ": taken for provisioned-throughput throttles (lumped)"
        )
    return key_range or None, "; ".join(notes)


def history_end(end: datetime | None) -> datetime:
    """``end`` (default: now) in UTC on a whole minute;
    [`TraceError`][ddb_capacity_tools.simulator.TraceError] unless it is within the last
    ``MAX_DAYS`` days (older minutes have no 1-minute datapoints left)."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    if end is None:
        return now
    earliest = now - timedelta(days=MAX_DAYS)
    try:
        moment = end.astimezone(UTC).replace(second=0, microsecond=0)
    except (ValueError, OverflowError):  # a time near datetime's limits
        moment = None
    if moment is None or not earliest <= moment <= now:
        raise TraceError(
            f"--end: got {end.isoformat()!r}; expected an ISO-8601 time from "
            f"{earliest:%Y-%m-%dT%H:%M}Z to now ({now:%Y-%m-%dT%H:%M}Z): CloudWatch keeps "
            f"1-minute datapoints for {MAX_DAYS} days"
        )
    return moment
