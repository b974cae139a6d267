"""Runs in: stream reader Lambda.

The fast path's write signal from each served table's own DynamoDB stream, with no client
in the application's processes (``CapacityRequests``' ``FastPath(stream=...)``). An event
source mapping hands this function batches of one shard's records; it turns them into
write units per table and per GSI where the stream's view type shows them
(`core.stream`: DynamoDB's sizing rules, TTL deletions left out), adds them to the
per-10-second counters of the state store that every shard of the stream adds to
(`aws.stream_counts`), and decides on the sum with the signals function's one surge
decision (`fast_path.surge_raise.surge_dimension`): served writes over what is provisioned
drain the burst bucket, so the dimension is raised before it would empty (the stream's own
estimate of the bucket, `fast_path.surge_raise.keep_bucket`, kept at every batch, quiet ones
included), within the same surge cap and hourly budget as the hook's reports. The stream
sees no refusals: served writes pinned at what is provisioned read as refusals
(`core.bucket.pinned`), whatever the estimate says. The stream is DynamoDB's own record
of the writes it served, so its rate is the trusted demand the default surge cap counts
from (`core.surge.TRUSTED_SOURCES`), and it is taken whole (``share`` is the hook's).
Nothing here lowers anything.

The served writes are what the stream can see: refused demand, reads and the GSI writes
a view type hides are not in it. Records are untrusted input: an event that is not the
event source's shape is refused, each record is bounded (`core.untrusted`) before
anything reads it, and one that breaks a bound or names no table counts for nothing.
Failures are counted (EMF, alarmed) and never fail the invocation: a retried batch would
be added to the counters twice, and late records are worthless as a signal.

Counts: ``StreamRecordsMalformed`` (alarmed), ``StreamRecordsNotServed`` (records of a
table the construct does not serve: alarmed), ``StreamFailed`` (a table's records could
not be counted: alarmed), ``StreamRecordsLate`` (a window older than the counters keep),
``StreamTtlDeletions``, ``BucketFailed`` (the stream's bucket estimate not read or
written: alarmed); and the surge decision's own (``SurgesApplied``, ``SurgesFailed``,
...).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..aws import combiner, stream_counts, table_calls
from ..aws.clients import Clients, make_clients
from ..aws.counts import count
from ..aws.hold_table import Context
from ..aws.store import HoldStore, open_store
from ..core.deadline import Deadline
from ..core.errors import reason_of, shown
from ..core.holds import CapacityRequestError
from ..core.stream import (
    WINDOW_SECONDS,
    Shape,
    batch_rates,
    record_time,
    seen_shape,
    shape_of,
    window_rate,
)
from ..core.surge import SURGE_AT, Rates
from ..core.surge_report import CLOCK_SKEW_SECONDS, DimensionReport
from ..core.tables import units_of
from ..core.untrusted import UntrustedJSONError
from ..core.untrusted_values import check_json
from ..events import log_event
from ..requests.broker import BrokerConfig
from .corroboration import Signal
from .surge_raise import Described, keep_bucket, out_of_time, surge_dimension, time_share
from .surge_settings import STREAM, SurgeSettings

__all__ = ["MAX_RECORDS", "STREAM_ENTRY", "read_stream", "stream_handler"]

MAX_RECORDS = 10_000
"""The most records an event may carry: the event source's largest batch."""
MAX_RECORD_CHARS = 6 * 1024 * 1024
"""One record's bound, as JSON text: Lambda's largest synchronous payload, so every record
Lambda can deliver is measured (a legal 400 KB item of 200,000 booleans is a 3.3 MB record);
the work is bounded by the event, never a legal item refused."""
MAX_EVENT_ID = 128
"""The longest ``eventID`` a record is known by; a longer one, or none, is no stream's
record: it is known by its content instead (`record_id`)."""
MAX_RECORD_DEPTH = 72
"""One record's deepest nesting: an item may nest 32 levels, each two levels of JSON."""
STREAM_ENTRY = "stream"
"""The id the stream's rate goes by among the combined entries of a dimension."""
STREAM_ARN = re.compile(
    r"arn:(aws[a-z-]*):dynamodb:([a-z0-9-]{1,32}):(\d{12}):table/([A-Za-z0-9_.-]{3,255})/stream/"
    r"[A-Za-z0-9_.:-]{1,64}"
)
"""A table's stream ARN (``arn:<partition>:dynamodb:<region>:<account>:table/<NAME>/stream/
<label>``)."""
FUNCTION_ARN = re.compile(r"arn:(aws[a-z-]*):lambda:([a-z0-9-]{1,32}):(\d{12}):function:.+")
"""The reader's own function ARN, as Lambda's context gives it: its partition, Region and account
are the ones whose tables it serves."""


def stream_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """AWS Lambda entry point of the ``CapacityRequests`` stream reader."""
    # A broken configuration fails the invocation (its errors are alarmed).
    home = home_of(getattr(context, "invoked_function_arn", None))
    left = getattr(context, "get_remaining_time_in_millis", None)
    return read_stream(
        event,
        BrokerConfig.from_env(),
        SurgeSettings.from_env(),
        home=home,
        remaining_ms=left if callable(left) else None,
    )


def home_of(function_arn: object) -> tuple[str, str, str] | None:
    """(partition, Region, account) of the reader's own function ARN; None when it is not
    one (a call from outside Lambda: no record is then checked against a home)."""
    found = FUNCTION_ARN.fullmatch(function_arn) if isinstance(function_arn, str) else None
    return None if found is None else (found.group(1), found.group(2), found.group(3))


def read_stream(
    event: object,
    scopes: BrokerConfig,
    settings: SurgeSettings,
    *,
    clients: Clients | None = None,
    store: HoldStore | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    home: tuple[str, str, str] | None = None,
    remaining_ms: Callable[[], int] | None = None,
) -> dict[str, Any]:
    """Count one batch of stream records and surge what their sum makes due. ``scopes``:
    the tables and indexes served; ``clients`` and ``store``: default, from the
    environment; ``home``: the reader's own (partition, Region, account): a record of a
    stream elsewhere names another table, whatever its name, and is not served;
    ``remaining_ms``: the invocation's time left, of which each table has an even share
    before `RESERVE_MS` among the tables left (`surge_raise.time_share`): a dimension not
    reached within it is neither counted nor decided, and answered deferred
    (``SurgesDeferred``). Returns, per table and dimension, what was done."""
    records = event.get("Records") if isinstance(event, Mapping) else None
    if not isinstance(records, list) or len(records) > MAX_RECORDS:
        count("StreamRecordsMalformed")
        reason = (
            f"Records: got {shown(records)}; expected a list of at most {MAX_RECORDS:,} "
            "stream records"
        )
        log_event("stream-refused", level=logging.WARNING, reason=reason)
        return {"ok": False, "reason": reason}
    by_table = _by_table(records, home)
    settings = replace(settings, share=1.0)  # the stream sees every write, not a share
    ctx = Context(clients or make_clients(), clock, sleep, 0)
    held: HoldStore | None = None
    rows: list[dict[str, Any]] = []
    for i, (table, mine) in enumerate(by_table.items()):
        ms = None if remaining_ms is None else remaining_ms()
        share = time_share(ms, len(by_table) - i, clock)
        try:
            scopes.check(table, None)
        except CapacityRequestError as exc:
            count("StreamRecordsNotServed", len(mine))
            log_event("stream-refused", level=logging.WARNING, table=table, reason=str(exc))
            rows.append({"table": table, "status": "refused", "reason": str(exc)})
            continue
        try:  # each table is its own fault domain
            held = held or open_store(store, ctx.clients, clock)
            rows += _table(ctx, held, (table, share), mine, scopes, settings)
        except Exception as exc:
            count("StreamFailed")
            log_event("stream-failed", level=logging.ERROR, table=table, reason=reason_of(exc))
            rows.append({"table": table, "status": "failed", "reason": reason_of(exc)})
    return {"ok": True, "dimensions": rows}


def _by_table(
    records: Sequence[object], home: tuple[str, str, str] | None = None
) -> dict[str, list[Mapping[str, Any]]]:
    """The records by the table their ``eventSourceARN`` names, each bounded first; those
    that break a bound or name no table are counted (``StreamRecordsMalformed``), those of
    a stream in another partition, Region or account than ``home`` too
    (``StreamRecordsNotServed``)."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    malformed, elsewhere = 0, 0
    for record in records:
        try:
            check_json(record, "record", max_chars=MAX_RECORD_CHARS, max_depth=MAX_RECORD_DEPTH)
        except UntrustedJSONError:
            malformed += 1
            continue
        arn = record.get("eventSourceARN") if isinstance(record, Mapping) else None
        found = STREAM_ARN.fullmatch(arn) if isinstance(arn, str) else None
        if found is None or not isinstance(record, Mapping):
            malformed += 1
            continue
        if home is not None and found.group(1, 2, 3) != home:
            elsewhere += 1
            continue
        out.setdefault(found.group(4), []).append(record)
    if malformed:
        count("StreamRecordsMalformed", malformed)
        log_event("stream-records-malformed", level=logging.WARNING, records=malformed)
    if elsewhere:
        count("StreamRecordsNotServed", elsewhere)
        log_event(
            "stream-refused",
            level=logging.WARNING,
            records=elsewhere,
            reason="a stream of another partition, Region or account than the reader's own",
        )
    return out


@dataclass(frozen=True)
class _Window:
    """One counting window of a batch: its start, its units per table (None) and GSI, and
    its latest record's time."""

    start: int
    units: Mapping[str | None, float]
    latest: float
    batch: str | None = None
    """The window's batch id (`batch_id`): its records' ids, hashed."""


def _table(
    ctx: Context,
    store: HoldStore,
    mine: tuple[str, Deadline],
    records: list[Mapping[str, Any]],
    scopes: BrokerConfig,
    settings: SurgeSettings,
) -> list[dict[str, Any]]:
    """One table's records: counted per window and dimension, then each dimension
    decided on its sum; a GSI the construct does not serve is answered ``not served``, with
    its units, and neither counted nor raised; a dimension reached after the table's
    ``deadline`` is answered deferred (`surge_raise.out_of_time`)."""
    table, deadline = mine
    description = table_calls.describe(ctx.clients.dynamodb, table)
    billing = description.get("BillingModeSummary")
    if isinstance(billing, Mapping) and billing.get("BillingMode") == "PAY_PER_REQUEST":
        return [{"table": table, "status": "none", "reason": "on demand: nothing to raise"}]
    windows = _windows(records, seen_shape(shape_of(description), _view(records)), ctx.clock())
    rows = []
    for index in sorted({i for w in windows for i in w.units}, key=lambda i: i or ""):
        if index is not None:
            try:
                scopes.check(table, index)
            except CapacityRequestError:
                rows.append(_not_served(table, index, windows))
                continue
        counted = [w for w in windows if w.units.get(index, 0) > 0]
        if counted and deadline.left() <= 0:
            rows.append(_counted_only(store, table, index, counted))
        elif counted:
            where = (table, index, deadline)
            rows.append(_dimension(ctx, store, where, counted, description, settings))
    return rows


def _not_served(table: str, index: str, windows: list[_Window]) -> dict[str, Any]:
    """The answer for a GSI the construct does not serve: its units, not raised."""
    units = round(sum(w.units.get(index, 0.0) for w in windows), 1)
    where = {"table": table, "index": index, "dimension": "write"}
    return {**where, "status": "not served", "units": units}


def _view(records: list[Mapping[str, Any]]) -> str | None:
    """The stream's view type, when its records agree on one (None: GSIs not seen)."""
    views = [
        r["dynamodb"].get("StreamViewType")
        for r in records
        if isinstance(r.get("dynamodb"), Mapping)
    ]
    if not all(isinstance(v, str) for v in views) or len(set(views)) != 1:
        return None  # untrusted: none, several, or one that is not a name (a list, a map)
    return str(views[0])


def _windows(records: list[Mapping[str, Any]], shape: Shape, now: float) -> list[_Window]:
    """The batch's counting windows, oldest first: each record in the window of its time
    (a time ahead of ``now`` counts as now; none at all, as the batch's latest). TTL
    deletions and malformed records are counted here."""
    known = [t for t in map(record_time, records) if t is not None]
    fallback = min(max(known), now) if known else now
    groups: dict[int, list[Mapping[str, Any]]] = {}
    latest: dict[int, float] = {}
    for record in records:
        when = record_time(record)
        when = fallback if when is None else min(when, now + CLOCK_SKEW_SECONDS)
        start = int(when // WINDOW_SECONDS) * WINDOW_SECONDS
        groups.setdefault(start, []).append(record)
        latest[start] = max(latest.get(start, when), when)
    out, ttl, malformed = [], 0, 0
    for start in sorted(groups):
        rates = batch_rates(groups[start], shape)
        ttl, malformed = ttl + rates.ttl, malformed + rates.malformed
        out.append(_Window(start, rates.totals, latest[start], batch_id(groups[start])))
    if ttl:
        count("StreamTtlDeletions", ttl)
    if malformed:
        count("StreamRecordsMalformed", malformed)
    return out


def _counted_only(
    store: HoldStore, table: str, index: str | None, windows: list[_Window]
) -> dict[str, Any]:
    """A dimension reached after its table's time share: its units still added to its
    counters (a stream gives no record twice: the next batch decides on sums that hold
    them), the decision deferred (`surge_raise.out_of_time`)."""
    try:
        _add(store, table, DimensionReport(index, "write", 0.0, 0).sort_key, index, windows)
    except Exception as exc:
        count("StreamFailed")
        where: dict[str, Any] = {"table": table, "index": index, "dimension": "write"}
        log_event("stream-failed", level=logging.ERROR, **where, reason=reason_of(exc))
        return {**where, "status": "failed", "reason": reason_of(exc)}
    return out_of_time(table, index, "write")


def _dimension(
    ctx: Context,
    store: HoldStore,
    mine: tuple[str, str | None, Deadline],
    windows: list[_Window],
    description: Mapping[str, Any],
    settings: SurgeSettings,
) -> dict[str, Any]:
    """Add one dimension's units to its counters, and decide on the sums: its own fault
    domain. A quiet dimension (below what is provisioned, no surge under way) only has
    its bucket estimate kept; its lease is not waited for past ``deadline``."""
    table, index, deadline = mine
    d = DimensionReport(index, "write", 0.0, 0)
    where: dict[str, Any] = {"table": table, "index": index, "dimension": "write"}
    try:
        sums = _add(store, table, d.sort_key, index, windows)
        current = windows[-1] if windows[-1].start in sums else None
        if current is None:
            return {**where, "status": "late"}
        previous = sums.get(current.start - WINDOW_SECONDS, 0.0)
        rate = window_rate(sums[current.start], current.start, current.latest, previous)
        key = combiner.combiner_key(table, d.sort_key)
        found = combiner.read(store.dynamodb, store.name, key, ctx.clock())
        signal = Signal(STREAM, WINDOW_SECONDS, trusted=rate)
        provisioned = _provisioned(description, index)
        quiet = found.mark.started is None  # below the capacity, with no surge under way
        if provisioned is not None and rate < SURGE_AT * provisioned and quiet:
            bucket = keep_bucket(ctx, store, key, found, signal, (provisioned, rate, False))
            level = round(bucket.level)
            return {**where, "status": "none", "rate": round(rate, 1), "bucket": level}
    except Exception as exc:
        count("StreamFailed")
        log_event("stream-failed", level=logging.ERROR, **where, reason=reason_of(exc))
        return {**where, "status": "failed", "reason": reason_of(exc)}
    now = ctx.clock()
    rates = {STREAM_ENTRY: Rates(rate, 0.0, 0.0, now, rate)}
    seen = combiner.Entries(rates=rates, mark=found.mark, buckets=found.buckets)
    described = Described(ctx.clients, table, description)
    row = surge_dimension(
        ctx, store, table, d, seen, settings, signal, described, deadline=deadline
    )
    return {**row, "rate": round(rate, 1)}


def _add(
    store: HoldStore, table: str, sort_key: str, index: str | None, windows: list[_Window]
) -> dict[int, float]:
    """Each window's units added to its counter: the sums read back, by window start;
    windows too late to count are counted (``StreamRecordsLate``) and left out, and those
    added without their batch's id (``StreamUnitsUnguarded``: the window's ids were full). A counter
    that is not sound is taken as the window's own units, and counted as a failure of the
    dimension (``StreamFailed``, alarmed): the other shards' are lost."""
    sums: dict[int, float] = {}
    late = replayed = unguarded = 0
    for w in windows:
        units = int(round(w.units[index]))
        added = stream_counts.add(
            store.dynamodb, store.name, table, sort_key, w.start, units, w.batch, store.clock()
        )
        if added is None:
            late += units
        elif added.replayed:
            replayed += units
        else:
            sums[w.start] = added.total
            unguarded += units if added.unguarded else 0
            if added.unsound is not None:
                count("StreamFailed")
                log_event(
                    "stream-failed",
                    level=logging.ERROR,
                    table=table,
                    index=index,
                    dimension="write",
                    reason=f"the state store's counter of the window at {w.start}: "
                    f"{added.unsound}; this batch's units taken alone",
                )
    if late:
        count("StreamRecordsLate", late)
    if replayed:
        count("StreamUnitsReplayed", replayed)
    if unguarded:
        count("StreamUnitsUnguarded", unguarded)
    return sums


def batch_id(records: Sequence[Mapping[str, Any]]) -> str:
    """A batch's id within one window: the sha-256 of its records' ids (`record_id`),
    sorted; the same when Lambda delivers the batch again, so it is counted once."""
    text = "\n".join(sorted(map(record_id, records)))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def record_id(record: Mapping[str, Any]) -> str:
    """A record's id: its ``eventID`` (1 to `MAX_EVENT_ID` characters, as DynamoDB's stream
    gives every record one); for a record without such an id (a forged one), the sha-256 of
    its content (its JSON, keys sorted), which a batch delivered again carries unchanged:
    such a record is counted once too, never again on each replay."""
    given = record.get("eventID")
    if isinstance(given, str) and 0 < len(given) <= MAX_EVENT_ID:
        return given
    try:
        text = json.dumps(record, sort_keys=True, default=repr)
    except (TypeError, ValueError):  # keys that do not sort (no event decoded from JSON)
        text = repr(record)
    return "#" + hashlib.sha256(text.encode(errors="replace")).hexdigest()


def _provisioned(description: Mapping[str, Any], index: str | None) -> int | None:
    """The write units the dimension has provisioned, from ``description`` (read moments
    ago); None when it does not say."""
    try:
        return units_of(description, index)["write"]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # unknown: decide
