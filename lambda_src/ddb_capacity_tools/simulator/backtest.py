"""Runs in: workstation (the `ddb-capacity` command).

A trace from a real table's CloudWatch history: consumed capacity plus throttled demand,
per minute, for the table or one GSI. Uses the scaler's own metric fetch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from ddb_capacity_runtime.aws.metrics import fetch

from .trace import Trace, TraceError

#: CloudWatch keeps 1-minute datapoints for 15 days.
MAX_DAYS = 15


def history(
    cloudwatch: Any,
    dynamodb: Any,
    table: str,
    index: str | None,
    days: int,
    end: datetime | None = None,
    units_per_request: float = 1.0,
) -> Trace:
    """``days`` of history ending at ``end`` (default: now, on a whole minute). Demand is
    consumed + throttle events x ``units_per_request`` / 60, in units per second: what the
    table was asked for, as far as CloudWatch can tell."""
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise TraceError(
            f"--days: got {days!r}; expected a whole number from 1 to {MAX_DAYS} "
            f"(CloudWatch keeps 1-minute datapoints for {MAX_DAYS} days)"
        )
    end = history_end(end)
    try:
        description = dynamodb.describe_table(TableName=table)["Table"]
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code")
        if code == "ResourceNotFoundException":
            raise TraceError(
                f"--table: got {table!r}; no such table in this account and Region"
            ) from None
        raise
    if index is not None:
        names = [g["IndexName"] for g in description.get("GlobalSecondaryIndexes", [])]
        if index not in names:
            raise TraceError(
                f"--index: got {index!r}; table {table!r} has "
                f"{', '.join(names) if names else 'no global secondary index'}"
            )
    start = end - timedelta(days=days)
    keys = [(table, index, "read"), (table, index, "write")]
    series = fetch(cloudwatch, keys, start, end)
    demand = {}
    for key in keys:
        s = series[key]
        demand[(index, key[2])] = [
            c + t * units_per_request / 60 for c, t in zip(s.consumed, s.throttles, strict=True)
        ]
    name = table if index is None else f"{table}/{index}"
    return Trace(
        name,
        start,
        demand,
        notes=f"CloudWatch history of {name}, {days} day(s) to {end:%Y-%m-%d %H:%M} UTC",
    )


def history_end(end: datetime | None) -> datetime:
    """``end`` (default: now) in UTC on a whole minute; :class:`TraceError` unless it is
    within the last ``MAX_DAYS`` days (older minutes have no 1-minute datapoints left)."""
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
