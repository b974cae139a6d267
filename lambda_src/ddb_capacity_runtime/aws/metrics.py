"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (simulator backtests, ``ddb-capacity``).

Consumed capacity and throttle events for every dimension of a tick, fetched with
GetMetricData in batches of up to 500 queries: the number of calls grows with the number
of queries / 500, not with tables x metrics."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..core.decreases import utc
from ..core.delivery import WITNESS_READ_MINUTES
from ..core.series import MINUTE, Key, Series, step_start, tell_causes
from .error_codes import describe_error, is_throttle

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient


MAX_QUERIES_PER_CALL = 500


WITNESS_ID = "w"
"""The query id of a batch's witness (`fetch`): no dimension's ids start with it."""
WITNESS_METRIC = "ConsumedReadCapacityUnits"


def _metric(key: Key, name: str) -> dict[str, Any]:
    table, index, _ = key
    dims = [{"Name": "TableName", "Value": table}]
    if index is not None:
        dims.append({"Name": "GlobalSecondaryIndexName", "Value": index})
    return {"Namespace": "AWS/DynamoDB", "MetricName": name, "Dimensions": dims}


def _query(qid: str, key: Key, name: str, period: int, stat: str = "Sum") -> dict[str, Any]:
    """One GetMetricData query: the ``stat`` of ``name`` of ``key`` per ``period`` seconds."""
    return {
        "Id": qid,
        "MetricStat": {"Metric": _metric(key, name), "Period": period, "Stat": stat},
        "ReturnData": True,
    }


def queries(
    keys: Iterable[Key], kinds: tuple[str, ...] = ("consumed", "throttles")
) -> list[tuple[str, Key, str, dict[str, Any]]]:
    """(query id, key, kind, query) for each dimension and each of ``kinds``: its consumed
    capacity, its throttle events."""
    out = []
    for i, key in enumerate(keys):
        dim = key[2].capitalize()
        for kind in kinds:
            name = f"Consumed{dim}CapacityUnits" if kind == "consumed" else f"{dim}ThrottleEvents"
            qid = f"{kind[0]}{i}"
            out.append((qid, key, kind, _query(qid, key, name, 60)))
    return out


def fetch(
    cloudwatch: CloudWatchClient,
    keys: list[Key],
    start: datetime,
    end: datetime,
    *,
    errors: list[str] | None = None,
    throttled: list[str] | None = None,
    witness: str | None = None,
    arriving: int = 0,
    delivered: bool = False,
    throttles: bool = True,
) -> dict[Key, Series]:
    """Every key's series over [start, end), zero-filled per minute, with what is unknown.

    A minute of a key is unknown when either query of the key is not trusted (see
    ``_fetch_batch``: a page with a status other than ``Complete``/``PartialData``, no page
    ``Complete``, or Timestamps and Values of different lengths), when it lies after the
    newest known minute of any trusted query of the key's batch (not delivered yet, rather
    than idle), or when its value is NaN, negative or infinite or its timestamp was
    returned more than once.

    ``witness``: a table read every tick (the scaler's state store), whose consumed read
    capacity is asked in every batch too: a minute it shows delivered is delivered for the
    batch, so a batch of idle tables (no datapoint of their own) is known idle, not unknown.
    ``delivered``: every minute is taken for delivered, as a witness would show it (another
    Region's: no store there; `ddb_capacity_runtime.core.delivery`'s witness proves it).

    ``arriving``: the newest minutes of [start, end) whose datapoints may still be on their
    way (CloudWatch delivers a minute 1-3 minutes late, and not every metric of a batch at
    once). Among them, a minute without a datapoint of the key's own (neither query has
    one) is unknown even when another query of the batch shows it delivered: it may be
    late rather than idle. An older minute without one is known idle.

    Each GetMetricData call is retried by botocore (the client's retry mode). With
    ``errors`` given, a batch that still fails leaves its keys wholly unknown and its error
    appended (to ``throttled`` instead, when given and the call was throttled); without, it
    raises. ``throttles`` False: consumption alone (`fetch_throttles` reads the rest)."""
    planned = queries(keys, ("consumed", "throttles") if throttles else ("consumed",))
    minutes = int((end - start) / MINUTE)
    starts = [start + i * MINUTE for i in range(minutes)]
    reads = _Reads.of([*(qid for qid, *_ in planned), WITNESS_ID])
    newest: dict[str, datetime | None] = {}  # per query: the newest minute of its batch
    failed: set[str] = set()
    for offset in range(0, len(planned), MAX_QUERIES_PER_CALL):
        ids = [qid for qid, *_ in planned[offset : offset + MAX_QUERIES_PER_CALL]]
        batch = [q for *_, q in planned[offset : offset + MAX_QUERIES_PER_CALL]]
        if witness is not None and len(batch) < MAX_QUERIES_PER_CALL:
            batch.append(_query(WITNESS_ID, (witness, None, "read"), WITNESS_METRIC, 60))
        try:
            newest_minute = _fetch_batch(cloudwatch, batch, start, end, reads)
        except Exception as exc:
            if errors is None:
                raise
            into = throttled if throttled is not None and is_throttle(exc) else errors
            into.append(f"GetMetricData ({len(batch)} queries): {describe_error(exc)}")
            failed.update(ids)
            continue
        newest.update(dict.fromkeys(ids, end - MINUTE if delivered else newest_minute))
    return _by_key(planned, reads, newest, failed, starts, minutes - arriving)


def _by_key(
    planned: list[tuple[str, Key, str, dict[str, Any]]],
    reads: _Reads,
    newest: dict[str, datetime | None],
    failed: set[str],
    starts: list[datetime],
    arriving_from: int,
) -> dict[Key, Series]:
    """Each key's series (`_series`), wholly unknown where a query of it ``failed``."""
    by_key: dict[Key, dict[str, str]] = {}
    for qid, key, kind, _ in planned:
        by_key.setdefault(key, {})[kind] = qid
    out = {}
    for key, kinds in by_key.items():
        pair = tuple(kinds.values())
        if any(q in failed for q in pair):
            out[key] = Series.all_unknown(starts)
        else:
            out[key] = _series(reads, pair, newest[pair[0]], starts, arriving_from)
    return out


def _series(
    reads: _Reads,
    pair: tuple[str, ...],
    last: datetime | None,
    starts: list[datetime],
    arriving_from: int,
) -> Series:
    """One key's series from its consumed and throttle queries (``pair``), ``last`` the
    newest known minute of their batch; from the minute at ``arriving_from`` (an index of
    ``starts``) on, a minute without a datapoint of either query is unknown (`fetch`).
    Without a throttle query, its throttles are not read."""
    whole = all(reads.complete.get(q, False) for q in pair)
    untrusted = [not whole or any(m in reads.bad[q] for q in pair) for m in starts]
    unknown = [u or last is None or m > last for m, u in zip(starts, untrusted, strict=True)]
    sums, events = reads.sums[pair[0]], reads.sums[pair[-1]] if pair[1:] else {}
    for i in range(max(arriving_from, 0), len(starts)):  # the newest minutes only
        if not unknown[i] and starts[i] not in sums and starts[i] not in events:
            unknown[i] = True  # no datapoint of its own yet: late, or idle
    consumed = [0.0 if u else sums.get(m, 0.0) / 60 for m, u in zip(starts, unknown, strict=True)]
    throttles = [0.0 if u else events.get(m, 0.0) for m, u in zip(starts, unknown, strict=True)]
    read = len(pair) > 1
    return Series(
        list(starts), consumed, throttles, unknown, untrusted=sum(untrusted), throttles_read=read
    )


def fetch_throttles(
    cloudwatch: CloudWatchClient,
    series: Mapping[Key, Series],
    keys: list[Key],
    start: datetime,
    end: datetime,
    *,
    errors: dict[Key, str],
) -> dict[Key, Series]:
    """``series`` (`fetch`'s, without throttles) with the throttle events of ``keys`` read, in
    one more call a 500: in each minute known there (one unknown stays so, and one whose
    value is not trusted becomes so; all of them where the query is not complete). A key
    whose call fails keeps its throttles unread (never lowered this tick), its error
    recorded in ``errors``."""
    planned = queries(keys, ("throttles",))
    reads = _Reads.of(qid for qid, *_ in planned)
    out = dict(series)
    for chunk, why in _calls(cloudwatch, planned, start, end, reads, "throttle events"):
        if why:
            errors.update(dict.fromkeys((key for _, key, *_ in chunk), why))
            continue
        for qid, key, *_ in chunk:
            whole = reads.complete.get(qid, False)  # else every minute untrusted, as `fetch`
            bad = reads.bad[qid] if whole else set(series[key].minute_starts)
            out[key] = _with_throttles(series[key], reads.sums[qid], bad)
    return out


def _calls(
    cloudwatch: CloudWatchClient,
    planned: list[tuple[Any, ...]],
    start: datetime,
    end: datetime,
    reads: _Reads,
    what: str,
    raising: bool = False,
) -> Iterator[tuple[list[tuple[Any, ...]], str]]:
    """``planned`` (each ending with its query) fetched into ``reads``, up to 500 queries a
    call: each chunk with "" or, when its call failed, the error in words naming ``what``
    (with ``raising``, the error is raised)."""
    for offset in range(0, len(planned), MAX_QUERIES_PER_CALL):
        chunk = planned[offset : offset + MAX_QUERIES_PER_CALL]
        try:
            _fetch_batch(cloudwatch, [p[-1] for p in chunk], start, end, reads)
        except Exception as exc:
            if raising:
                raise
            yield chunk, f"GetMetricData, {what} ({len(chunk)} queries): {describe_error(exc)}"
            continue
        yield chunk, ""


@dataclass(repr=False, eq=False)
class _Reads:
    """What the pages of GetMetricData said, per query id: the sum of each minute, the
    minutes not to be trusted, and whether the query is trusted at all."""

    sums: dict[str, dict[datetime, float]]
    bad: dict[str, set[datetime]]
    complete: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def of(cls, qids: Iterable[str]) -> _Reads:
        ids = list(qids)
        return cls({qid: {} for qid in ids}, {qid: set() for qid in ids})


def _fetch_batch(
    cloudwatch: CloudWatchClient,
    batch: list[dict[str, Any]],
    start: datetime,
    end: datetime,
    reads: _Reads,
) -> datetime | None:
    """Read one batch (every page) into ``reads``; returns the newest known minute in
    [start, end) of any trusted query of the batch (None: none).

    Whatever the order of the pages: a query is trusted (``reads.complete[qid]``) only if
    every page carrying it reports ``Complete`` or ``PartialData`` (CloudWatch's status on
    a page followed by more), at least one reports ``Complete``, and none of its results has
    Timestamps and Values of different lengths. A minute is added to ``reads.bad[qid]``
    when its value is NaN, negative or infinite, or when it appears more than once for the
    query (in one page or across pages): such a minute is never summed. Results whose Id is
    not a query of this batch are ignored.
    """
    ours = {str(q["Id"]) for q in batch}
    statuses: dict[str, set[str | None]] = {qid: set() for qid in ours}
    mismatched: set[str] = set()
    seen: dict[str, set[datetime]] = {qid: set() for qid in ours}
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
            qid = result["Id"]
            if qid not in ours:
                continue  # not a query of this batch: ignored
            statuses[qid].add(result.get("StatusCode"))
            if not _take(result, reads.sums[qid], reads.bad[qid], seen[qid]):
                mismatched.add(qid)  # which value is which minute is unknown
        token = response.get("NextToken")
        if not token:
            break
    newest: datetime | None = None
    for qid in ours:
        found = statuses[qid]
        reads.complete[qid] = (
            "Complete" in found and found <= {"Complete", "PartialData"} and qid not in mismatched
        )
        if not reads.complete[qid]:
            continue
        for minute in reads.sums[qid]:
            if start <= minute < end and minute not in reads.bad[qid]:
                newest = minute if newest is None else max(newest, minute)
    return newest


def _take(
    result: Mapping[str, Any],
    values: dict[datetime, float],
    bad: set[datetime],
    seen: set[datetime],
) -> bool:
    """Add one result's minutes to ``values`` (``bad``: those not to be trusted, ``seen``:
    those any page returned); False when its Timestamps and Values differ in length."""
    timestamps = result.get("Timestamps", [])
    raw_values = result.get("Values", [])
    if len(timestamps) != len(raw_values):
        return False
    for ts, raw in zip(timestamps, raw_values, strict=True):
        minute = utc(ts).replace(second=0, microsecond=0)
        if minute in seen:
            bad.add(minute)  # returned twice: neither value is trusted
            values.pop(minute, None)
            continue
        seen.add(minute)
        value = float(raw)
        if not math.isfinite(value) or value < 0:
            bad.add(minute)
            continue
        values[minute] = value
    return True


def witness_queries(keys: Iterable[Key]) -> list[tuple[str, Key, dict[str, Any]]]:
    """(query id, key, query) for each key: its delivery witness, DynamoDB's provisioned
    capacity of the key's table or GSI and dimension (`core.delivery`), per minute (the
    datapoints keep their own 5-minute timestamps)."""
    out = []
    for i, key in enumerate(keys):
        qid = f"p{i}"
        name = f"Provisioned{key[2].capitalize()}CapacityUnits"
        out.append((qid, key, _query(qid, key, name, 60, "SampleCount")))
    return out


def fetch_witness(
    cloudwatch: CloudWatchClient,
    keys: list[Key],
    now: datetime,
    *,
    errors: dict[Key, str],
) -> dict[Key, datetime | None]:
    """Each key's newest witness datapoint (`core.delivery`) in the `WITNESS_READ_MINUTES`
    before the minute of ``now``; None: none. One query a key, up to 500 a call (a tick
    asks only for the dimensions it is about to lower on minutes read as idle). A key whose
    query fails or is not trusted (see ``_fetch_batch``) is left out, and its error
    recorded in ``errors``: its witness is unknown, so it never counts as delivered."""
    planned = witness_queries(keys)
    end = utc(now).replace(second=0, microsecond=0)
    start = end - WITNESS_READ_MINUTES * MINUTE
    reads = _Reads.of(qid for qid, *_ in planned)
    out: dict[Key, datetime | None] = {}
    for chunk, why in _calls(cloudwatch, planned, start, end, reads, "delivery witness"):
        if why:
            errors.update(dict.fromkeys((key for _, key, _ in chunk), why))
            continue
        for qid, key, _ in chunk:
            if not reads.complete.get(qid, False):
                errors[key] = "GetMetricData, delivery witness: not complete"
                continue
            seen = [m for m in reads.sums[qid] if m not in reads.bad[qid] and start <= m < end]
            out[key] = max(seen, default=None)
    return out


CAUSES = ("ProvisionedThroughput", "KeyRangeThroughput", "AccountLimit", "MaxOnDemandThroughput")
"""DynamoDB's throttle metrics by cause (``{Read,Write}<cause>ThrottleEvents``, published since 2025
beside the lumped ``ReadThrottleEvents`` / ``WriteThrottleEvents``): the one more capacity fixes
first, then those it cannot (a hot key's partition, the account's per-table limit, an on-demand
maximum)."""


def cause_queries(keys: Iterable[Key]) -> list[tuple[str, Key, str, dict[str, Any]]]:
    """(query id, key, cause, query) for each key and each of `CAUSES`."""
    out = []
    for i, key in enumerate(keys):
        dim = key[2].capitalize()
        for n, cause in enumerate(CAUSES):
            qid = f"x{n}_{i}"
            out.append((qid, key, cause, _query(qid, key, f"{dim}{cause}ThrottleEvents", 60)))
    return out


def fetch_causes(
    cloudwatch: CloudWatchClient,
    series: Mapping[Key, Series],
    start: datetime,
    end: datetime,
    *,
    errors: dict[Key, str] | None = None,
) -> dict[Key, Series]:
    """``series`` with the throttles of each throttled key told apart by cause.

    Only keys with a throttle in a known minute are read (4 queries each), so a tick
    without throttles makes no call, and the batches of `fetch` stay full. Per
    throttled minute, ``unfixable`` = the lumped events less the provisioned-throughput ones
    and less those no cause metric explains (capacity may fix those: the rule from before
    the causes), and ``key_range`` the key-range ones, each at most the lumped events. A
    throttled minute that no cause metric explains at all (a time or Region without them)
    is counted in ``causes_unknown``: all its throttles are taken for fixable. A key whose
    cause queries fail or are not trusted keeps every throttle fixable, all its throttled
    minutes count as unknown, and with ``errors`` given its error is recorded there (keyed
    by the key; without, the error is raised)."""
    throttled = [k for k, s in series.items() if any(t > 0 for t in s.throttles)]
    out = dict(series)
    if not throttled:
        return out
    planned = cause_queries(throttled)
    reads = _Reads.of([*(qid for qid, *_ in planned), WITNESS_ID])
    failed: dict[str, str] = {}
    calls = _calls(cloudwatch, planned, start, end, reads, "throttles by cause", errors is None)
    for chunk, why in calls:
        if why:
            failed.update(dict.fromkeys((q for q, *_ in chunk), why))
    by_key: dict[Key, list[str]] = {}
    for qid, key, _, _ in planned:
        by_key.setdefault(key, []).append(qid)
    for key, qids in by_key.items():
        broken = [q for q in qids if q in failed or not reads.complete.get(q, False)]
        if broken and errors is not None:
            errors[key] = failed.get(broken[0], "throttles by cause: not complete")
        out[key] = _with_causes(series[key], reads, None if broken else qids)
    return out


def _with_throttles(s: Series, events: dict[datetime, float], bad: set[datetime]) -> Series:
    """``s`` with its throttle ``events`` read, none in a minute unknown or in ``bad``."""
    was = s.unknown or [False] * len(s.minute_starts)
    unknown = [u or m in bad for m, u in zip(s.minute_starts, was, strict=True)]
    starts = zip(s.minute_starts, unknown, strict=True)
    throttles = [0.0 if u else events.get(m, 0.0) for m, u in starts]
    more = sum(unknown) - sum(was)
    return replace(
        s,
        throttles=throttles,
        unknown=unknown if more or s.unknown else [],
        untrusted=s.untrusted + more,
        throttles_read=True,
    )


def _with_causes(s: Series, reads: _Reads, qids: list[str] | None) -> Series:
    """``s`` with ``unfixable``, ``key_range`` and ``causes_unknown`` from the cause
    queries ``qids`` (in `CAUSES` order; None: not read)."""
    n = len(s.minute_starts)
    unfixable, key_range, unknown = [0.0] * n, [0.0] * n, 0
    for i, (minute, lumped) in enumerate(zip(s.minute_starts, s.throttles, strict=True)):
        if lumped <= 0 or (s.unknown and s.unknown[i]):
            continue
        values = (
            None
            if qids is None or any(minute in reads.bad[q] for q in qids)
            else [reads.sums[q].get(minute, 0.0) for q in qids]
        )
        told = tell_causes(lumped, values[0], values[1], sum(values[2:])) if values else None
        if told is None:
            unknown += 1  # no cause said: all taken for fixable
            continue
        unfixable[i], key_range[i] = told
    if not any(unfixable):  # none: the lists stay empty, as for a series never read
        unfixable, key_range = [], []
    return replace(s, unfixable=unfixable, key_range=key_range, causes_unknown=unknown)


HISTORY_QUERIES_PER_CALL = 25
"""CloudWatch returns at most 100,800 datapoints per GetMetricData call: 14 days of 5-minute steps
are 4,032 a query, so a history call carries at most this many queries."""


def fetch_history(
    cloudwatch: CloudWatchClient,
    keys: list[Key],
    end: datetime,
    days: int,
    step_minutes: int,
) -> dict[Key, list[float | None]]:
    """Each key's consumed capacity over the ``days`` before ``end``, as average units per
    second per ``step_minutes`` step (oldest first), for the autopilot's forecast. A step
    with no datapoint reads 0 (DynamoDB publishes none for a minute without traffic). A
    query that is not trusted (see ``_fetch_batch``: a page with a status other than
    ``Complete``/``PartialData``, no page ``Complete``, or Timestamps and Values of different
    lengths) makes all its steps None; a NaN, negative or infinite value, or a timestamp
    returned more than once, makes its step None. The forecast only ever raises a minimum,
    so a missing datapoint can only make it raise less; a key whose steps are all None is
    no forecast at all, and its plan in force stays (`scaler.plans.forecast_plans`)."""
    end = step_start(end, step_minutes)
    steps = days * 1440 // step_minutes
    start = end - steps * step_minutes * MINUTE
    period = step_minutes * 60
    ids: dict[str, Key] = {}
    batch_queries: list[dict[str, Any]] = []
    for i, key in enumerate(keys):
        qid = f"h{i}"
        ids[qid] = key
        name = f"Consumed{key[2].capitalize()}CapacityUnits"
        batch_queries.append(_query(qid, key, name, period))
    out: dict[Key, list[float | None]] = {}
    for first in range(0, len(batch_queries), HISTORY_QUERIES_PER_CALL):
        batch = batch_queries[first : first + HISTORY_QUERIES_PER_CALL]
        qids = [str(q["Id"]) for q in batch]
        reads = _Reads.of(qids)
        _fetch_batch(cloudwatch, batch, start, end, reads)
        for qid in qids:
            if not reads.complete.get(qid, False):
                out[ids[qid]] = [None] * steps
                continue
            values: list[float | None] = []
            for n in range(steps):
                moment = start + n * step_minutes * MINUTE
                values.append(
                    None if moment in reads.bad[qid] else reads.sums[qid].get(moment, 0.0) / period
                )
            out[ids[qid]] = values
    return out


@dataclass(frozen=True)
class HourReads:
    """One key's reads for learning its table's on-demand hours (`fetch_hours`): its consumed
    capacity per minute (units, the minute's Sum) and its provisioned capacity's highest per
    clock hour, each with the minutes or hours not to be trusted; None where the query is
    not trusted at all (see ``_fetch_batch``)."""

    consumed: Mapping[datetime, float] | None
    consumed_bad: frozenset[datetime]
    provisioned: Mapping[datetime, float] | None
    provisioned_bad: frozenset[datetime]


def fetch_hours(
    cloudwatch: CloudWatchClient, keys: list[Key], start: datetime, end: datetime
) -> dict[Key, HourReads]:
    """Each key's consumed capacity per minute and provisioned capacity's hourly highest over
    [start, end), two queries a key, up to 500 a call; a failed call raises."""
    planned = []
    for i, key in enumerate(keys):
        dim = key[2].capitalize()
        planned.append((f"c{i}", _query(f"c{i}", key, f"Consumed{dim}CapacityUnits", 60)))
        name = f"Provisioned{dim}CapacityUnits"
        planned.append((f"p{i}", _query(f"p{i}", key, name, 3600, "Maximum")))
    reads = _Reads.of(qid for qid, _ in planned)
    for _ in _calls(cloudwatch, planned, start, end, reads, "learning", raising=True):
        pass

    def read(qid: str) -> tuple[Mapping[datetime, float] | None, frozenset[datetime]]:
        trusted = reads.complete.get(qid, False)
        return (dict(reads.sums[qid]) if trusted else None), frozenset(reads.bad[qid])

    return {key: HourReads(*read(f"c{i}"), *read(f"p{i}")) for i, key in enumerate(keys)}
