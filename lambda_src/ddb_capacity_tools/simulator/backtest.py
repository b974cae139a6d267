"""A trace from a real table's CloudWatch history: consumed capacity plus throttled demand,
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
    end = (end or datetime.now(UTC)).astimezone(UTC).replace(second=0, microsecond=0)
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
