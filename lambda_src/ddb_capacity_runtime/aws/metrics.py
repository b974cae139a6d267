"""Consumed capacity and throttle events for every dimension of a tick, fetched with
GetMetricData in batches of up to 500 queries: the number of calls grows with the number
of queries / 500, not with tables x metrics."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.quota import utc
from ..core.series import MINUTE, Key, Series

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient


MAX_QUERIES_PER_CALL = 500


def _metric(key: Key, name: str) -> dict[str, Any]:
    table, index, _ = key
    dims = [{"Name": "TableName", "Value": table}]
    if index is not None:
        dims.append({"Name": "GlobalSecondaryIndexName", "Value": index})
    return {"Namespace": "AWS/DynamoDB", "MetricName": name, "Dimensions": dims}


def queries(keys: Iterable[Key]) -> list[tuple[str, Key, str, dict[str, Any]]]:
    """(query id, key, kind, query) for each dimension: a consumed and a throttle metric."""
    out = []
    for i, key in enumerate(keys):
        dim = key[2].capitalize()
        for kind, name in (
            ("consumed", f"Consumed{dim}CapacityUnits"),
            ("throttles", f"{dim}ThrottleEvents"),
        ):
            qid = f"{kind[0]}{i}"
            out.append(
                (
                    qid,
                    key,
                    kind,
                    {
                        "Id": qid,
                        "MetricStat": {"Metric": _metric(key, name), "Period": 60, "Stat": "Sum"},
                        "ReturnData": True,
                    },
                )
            )
    return out


def fetch(
    cloudwatch: CloudWatchClient, keys: list[Key], start: datetime, end: datetime
) -> dict[Key, Series]:
    """Every key's series over [start, end), zero-filled per minute."""
    planned = queries(keys)
    minutes = int((end - start) / MINUTE)
    starts = [start + i * MINUTE for i in range(minutes)]
    sums: dict[str, dict[datetime, float]] = {qid: {} for qid, *_ in planned}
    for offset in range(0, len(planned), MAX_QUERIES_PER_CALL):
        batch = [q for *_, q in planned[offset : offset + MAX_QUERIES_PER_CALL]]
        token = None
        while True:
            kwargs: dict[str, Any] = {
                "MetricDataQueries": batch,
                "StartTime": start,
                "EndTime": end,
                "ScanBy": "TimestampAscending",
            }
            if token:
                kwargs["NextToken"] = token
            response = cloudwatch.get_metric_data(**kwargs)
            for result in response["MetricDataResults"]:
                values = sums[result["Id"]]
                for ts, value in zip(result["Timestamps"], result["Values"], strict=True):
                    minute = utc(ts).replace(second=0, microsecond=0)
                    values[minute] = values.get(minute, 0.0) + float(value)
            token = response.get("NextToken")
            if not token:
                break
    out = {}
    by_key: dict[Key, dict[str, str]] = {}
    for qid, key, kind, _ in planned:
        by_key.setdefault(key, {})[kind] = qid
    for key, ids in by_key.items():
        consumed = [sums[ids["consumed"]].get(m, 0.0) / 60 for m in starts]
        throttles = [sums[ids["throttles"]].get(m, 0.0) for m in starts]
        out[key] = Series(list(starts), consumed, throttles)
    return out
