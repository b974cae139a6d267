"""Runs in: signals Lambda, CDK app (synth: its environment's names).

The fast path's server side: the signals function. The application's processes report
within seconds what they consume and the throttles they meet (one asynchronous invocation
per report, its payload `core.surge_report.Report.as_json`); this function adds up the
reports of every process per dimension in the state store (`aws.combiner`) and, when
the one rule (`core.surge.surge_level`) says the summed demand heads over what is
provisioned, or provisioned-throughput throttles appear, raises the dimension at once.

A raise is a hold (id ``surge``, one per dimension) recorded exactly as a capacity request
records one (`request.raise_held`): the scalable target's minimum goes up and the
table with it (UpdateTable, sent, never waited for), or UpdateTable alone without a target.
The surge's units are what brings the level of every active hold of the dimension (the
earliest baseline plus all their units) to the rule's level; the level reported is the one
applied. Its baseline is the capacity before it, kept while the surge is recorded (even
expired, until the restore ends it), so the surge cap counts from there and never again
from a raise of its own. Later reports that still ask for it renew it at its level (its
expiry pushed, without a control-plane call and without waiting for the lease), or raise
it above by a step at least unless throttled or near its capacity (`core.surge`). Throttles
reported before its last raise, or before the capacity last rose (DescribeTable's
``LastIncreaseDateTime``: a raise above the warm throughput lands minutes after it is
sent), are not counted again: they saw the capacity before it. A surge lasts at most
`SURGE_LIFETIME` from its first raise; it ends by itself ``surge_minutes`` after the last
report that asked for it, through the restore that ends every expired hold. Nothing here
lowers anything.

A report is untrusted: a malformed one (EMF ``ReportsRefused``, alarmed), or one for a
table the function does not serve (``ReportsNotServed``), is refused (``report-refused`` in
the log), never raised on (an asynchronous invocation that fails would be retried for
nothing); so is a dimension of an index it does not serve (``ReportsNotServed``). A
newcomer to a dimension whose combiner is full is heard through the entry newcomers share
(``CombinerFull``, alarmed). Each dimension
is its own fault domain: a surge that could not be applied is counted (``SurgesFailed``,
alarmed) and the others go on; one that found its dimension's lease taken, or its table
being updated while its surge is recorded, is deferred (``SurgesDeferred``): another update
of the dimension is under way, and the next report tries again (a busy table's is counted as
``HoldsBusy`` too, alarmed when it lasts: ``surge-busy``); so is one its report's time
(`time_share`) ran out before, a lease never being waited for past it. A raised one is
``SurgesApplied``, and the units it added ``SurgeUnits`` (alarmed over a threshold). A
surge is bounded by the surge cap (by default 4 x the capacity its dimension had when it
started) and by the dimension's budget of surge units an hour (kept in its combiner item);
one refused or cut short by its budget is ``SurgesOverBudget`` (alarmed).

Two rules of `core` bound when a surge starts and how far it goes, on what DynamoDB itself
measures. The burst-bucket rule (`core.bucket`): each signal (the hook's reports, the
table's stream) keeps an estimate of the dimension's burst bucket in its combiner item,
advanced at every look from the consumption it sees against what is provisioned
(`keep_bucket`), and a new surge that no throttle calls for starts only when the bucket
would empty before a raise sent at the next look lands. The estimate is untrusted input: one
that cannot be read or written is counted (``BucketFailed``, alarmed) and reads as empty, so
a surge is due as without the rule. The trusted demand (`core.surge.TRUSTED_SOURCES`):
when the surge cap or the budget cuts a surge the reports ask for, CloudWatch's consumed
capacity is read (`trusted_demand`, at most once a minute per dimension) and the surge
decided again with the demand it shows served: ``SurgesCorroborated`` when that widened it,
``CorroborationFailed`` (alarmed) when the read failed and the capped surge stands. The
stream's own rate is such a measure already (`Signal`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from ..aws import combiner, table_calls
from ..aws.clients import Clients, make_clients
from ..aws.counts import count
from ..aws.hold_table import Context, base_of, read_table
from ..aws.raise_counts import count_within_warm, malformed_dropped
from ..aws.store import HoldStore, Lease, open_store
from ..core.bucket import Bucket, Drain, advance, read_bucket
from ..core.deadline import NONE, Deadline
from ..core.errors import reason_of, shown
from ..core.holds import (
    CapacityRequestError,
    CapacityRequestTimeout,
    HeldDimension,
    Hold,
)
from ..core.surge import (
    Combined,
    Live,
    Standing,
    SurgePlan,
    SurgeReportError,
    first_look,
    plan_raise,
    rates,
    renewed_until,
    since_raise,
    standing,
    surge_lifetime,
)
from ..core.surge_report import DimensionReport, Report, parse_report
from ..core.tables import Dimension, ManagedTable, spec_of, units_of, warm_of
from ..core.untrusted import UntrustedJSONError
from ..core.untrusted_values import check_json
from ..events import log_event
from ..requests.broker import BrokerConfig
from ..requests.request import dimension_of, raise_held
from .corroboration import (
    Seen,
    Signal,
    corroborated_plan,
    may_corroborate,
    surge_confirmed,
    to_corroborate,
)
from .surge_settings import (
    BUCKET_WRITE_SECONDS,
    HOOK,
    LEASE_WAIT_SECONDS,
    MAX_REPORT_CHARS,
    OUT_OF_TIME,
    RESERVE_MS,
    SURGE_HOLD,
    UNCONFIRMED,
    SurgeSettings,
)

__all__ = [
    "keep_bucket",
    "out_of_time",
    "surge_dimension",
    "take_report",
    "time_share",
]


def take_report(
    event: object,
    scopes: BrokerConfig,
    settings: SurgeSettings,
    *,
    clients: Clients | None = None,
    store: HoldStore | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    deadline: Deadline = NONE,
) -> dict[str, Any]:
    """Combine one report with the others and raise what it makes due. ``scopes``: the
    tables and indexes served; ``clients`` and ``store``: default, from the environment
    (``$CAPACITY_HOLDS_TABLE`` and its bounds); ``deadline``: the report's time
    (`time_share`), after which no dimension is started and no lease waited for or taken:
    the dimensions left are deferred (`out_of_time`). Returns, per dimension, what was
    done."""
    now = clock()
    try:
        check_json(event, "report", max_chars=MAX_REPORT_CHARS)
    except UntrustedJSONError as exc:  # before anything reads it, its table included
        return {"ok": False, **refused_report(None, None, exc)}
    try:
        report = parse_report(event, now)
    except SurgeReportError as exc:
        table = event.get("table") if isinstance(event, Mapping) else None
        return {"ok": False, **refused_report(table, None, exc)}
    try:
        scopes.check(report.table, None)
    except CapacityRequestError as exc:
        return {"ok": False, **refused_report(report.table, None, exc, "ReportsNotServed")}
    served: list[DimensionReport] = []
    rows: list[dict[str, Any]] = []
    for d in report.dims:
        try:
            scopes.check(report.table, d.index)
            served.append(d)
        except CapacityRequestError as exc:
            rows.append(refused_report(report.table, d, exc, "ReportsNotServed"))
    ctx = Context(clients or make_clients(), clock, sleep, 0)
    held = open_store(store, ctx.clients, clock)
    described = Described(ctx.clients, report.table)
    rows += [
        _dimension(ctx, held, (report, described), d, settings, deadline)
        if deadline.left() > 0
        else out_of_time(report.table, d.index, d.dimension)
        for d in served
    ]
    return {"ok": True, "dimensions": rows}


def time_share(left_ms: int | None, parts: int, clock: Callable[[], float]) -> Deadline:
    """The deadline of the next of ``parts`` (the reports of a batch, or the tables of a
    stream batch, left to take in turn) with ``left_ms`` of the invocation left (None: not
    known, no deadline): an even share of the time before `RESERVE_MS`. What one part
    leaves unused goes to those after it, and one part's waits (a busy lease each of its
    dimensions waits for) never take the others' time."""
    if left_ms is None:
        return NONE
    return Deadline(clock() + (left_ms - RESERVE_MS) / 1000 / max(1, parts), clock)


def out_of_time(table: str, index: str | None, dimension: str) -> dict[str, Any]:
    """A dimension left undecided when its report's time (`time_share`) ran out: counted
    deferred (``SurgesDeferred``: the next report tries it again) and logged."""
    row: dict[str, Any] = {"table": table, "index": index, "dimension": dimension}
    row.update(status="deferred", reason=OUT_OF_TIME)
    count("SurgesDeferred")
    log_event("surge-deferred", **row)
    return row


class Described:
    """A table's description (DescribeTable), read on the first call and kept for the
    dimensions of one report or stream batch; a failed read is tried again by the next
    caller (each dimension is its own fault domain)."""

    def __init__(self, clients: Clients, table: str, raw: Mapping[str, Any] | None = None):
        self._clients, self._table, self._raw = clients, table, raw

    def __call__(self) -> Mapping[str, Any]:
        if self._raw is None:
            self._raw = table_calls.describe(self._clients.dynamodb, self._table)
        return self._raw


def _dimension(
    ctx: Context,
    store: HoldStore,
    reported: tuple[Report, Described],
    d: DimensionReport,
    settings: SurgeSettings,
    deadline: Deadline,
) -> dict[str, Any]:
    """Combine one dimension of ``report``, and surge it if due: its own fault domain."""
    report, described = reported
    try:
        found = _combine(ctx, store, report, d)
    except Exception as exc:  # each dimension is its own fault domain
        return _failed(report.table, d, exc)
    if found is None:
        count("CombinerFull")
        full = f"{combiner.MAX_PROCESSES} processes report on this dimension already"
        return refused_report(report.table, d, CapacityRequestError(full), "CombinerFull")
    signal = Signal(HOOK, report.seconds)  # the processes report about once a window
    return surge_dimension(
        ctx, store, report.table, d, found, settings, signal, described, deadline=deadline
    )


def keep_bucket(
    ctx: Context,
    store: HoldStore,
    key: Mapping[str, Any],
    found: combiner.Entries,
    signal: Signal,
    seen: tuple[int, float, bool],
) -> Bucket:
    """``signal``'s burst-bucket estimate of the dimension whose combiner item is ``key``,
    as ``found`` read it, advanced to now (`core.bucket.advance`) by what is ``seen``: the
    units provisioned, the units a second consumed, and whether requests are refused for
    capacity; written back when `BUCKET_WRITE_SECONDS` have passed since the one stored
    (a conditional write on the text read: a lost race is skipped). The stored estimate is
    untrusted input: one that is not one reads as unknown, which is empty. A stored
    estimate that cannot be read, or a write that fails, is counted (``BucketFailed``) and
    logged; the estimate advanced is returned whatever happened to its write."""
    now = ctx.clock()
    read = found.buckets.get(signal.source)
    kept = read_bucket(read, now, store.limits.quota)
    if kept is None and signal.source in found.buckets:
        _bucket_failed(key, signal, "the stored estimate is not one; it starts again empty")
    provisioned, rate, refused = seen
    bucket = advance(kept, provisioned, rate, now, refused)
    if kept is None or bucket.at - kept.at >= BUCKET_WRITE_SECONDS:
        try:
            combiner.keep_bucket(
                store.dynamodb, store.name, key, signal.source, read, bucket.text()
            )
        except Exception as exc:  # the estimate still serves this look
            _bucket_failed(key, signal, f"writing the estimate failed: {reason_of(exc)}")
    return bucket


def _bucket_failed(key: Mapping[str, Any], signal: Signal, reason: str) -> None:
    count("BucketFailed")
    log_event(
        "bucket-failed",
        level=logging.WARNING,
        table=key["pk"]["S"],
        key=key["sk"]["S"],
        source=signal.source,
        reason=reason,
    )


def surge_dimension(
    ctx: Context,
    store: HoldStore,
    table: str,
    d: DimensionReport,
    found: combiner.Entries,
    settings: SurgeSettings,
    signal: Signal,
    described: Described,
    *,
    deadline: Deadline = NONE,
) -> dict[str, Any]:
    """The one surge decision on ``d``'s dimension, from what ``found`` holds (the
    combined reports, or the stream reader's rate, as ``signal`` says), its surge mark
    and ``signal``'s burst-bucket estimate: raised, renewed or left alone, counted and
    logged; its own fault domain. The signals function and the stream reader both decide
    here. ``described``: the table's description for the first look, read once for all
    the dimensions of a report or a batch (under the lease, the table is read again);
    ``deadline``: after it, the dimension's lease is neither waited for nor taken (the
    surge deferred)."""
    try:
        row = _surge(ctx, store, (table, d), found, settings, signal, (described, deadline))
    except Exception as exc:  # each dimension is its own fault domain
        return _failed(table, d, exc)
    status = row.get("status")
    if status == "applied":
        count("SurgesApplied")
        count_within_warm(row.get("changes", []))
        log_event("surge-applied", **row)
    elif status == "renewed":
        log_event("surge-renewed", **row)
    elif status == "deferred":
        count("SurgesDeferred")
        _deferred(row)
    elif status == "ended":
        log_event("surge-ended", level=logging.WARNING, **row)
    elif status == "limited":
        log_event("surge-over-budget", level=logging.WARNING, **row)
    return row


OWN_UPDATE_S = 600
"""How long after a dimension's last surge raise its table being updated is taken for that
raise's own update (or the next one's, in a burst still growing), not for a table that
stays so: DynamoDB applies an increase within minutes."""


def _stuck(first: Seen, now: float) -> bool:
    """Whether ``first``'s table, found being updated, may be stuck (``HoldsBusy``): its
    surge last raised it `OWN_UPDATE_S` ago or more (or never), so the update under way is
    not that raise's."""
    raised = first.mark.raised
    return raised is None or now - raised >= OWN_UPDATE_S


def _deferred(row: Mapping[str, Any]) -> None:
    """A surge deferred, logged: because its table (or index) is being updated while its
    last raise is `OWN_UPDATE_S` old or more (``busy``: `_stuck`), also counted as
    ``HoldsBusy`` and logged ``surge-busy`` (a warning): a throttled table that stays so,
    which the alarm on holds whose table stays not ACTIVE (``HoldsBusy``) covers; else
    ``surge-deferred`` (its own raise's update under way, a busy lease, its share of the
    time spent)."""
    if row.get("busy"):
        count("HoldsBusy")
        log_event("surge-busy", level=logging.WARNING, **row)
    else:
        log_event("surge-deferred", **row)


def _failed(table: str, d: DimensionReport, exc: Exception) -> dict[str, Any]:
    """A dimension whose surge failed: counted (``SurgesFailed``, alarmed) and logged."""
    where: dict[str, Any] = {"table": table, "index": d.index, "dimension": d.dimension}
    count("SurgesFailed")
    log_event("surge-failed", level=logging.ERROR, **where, reason=reason_of(exc))
    return {**where, "status": "failed", "reason": reason_of(exc)}


def _combine(
    ctx: Context, store: HoldStore, report: Report, d: DimensionReport
) -> combiner.Entries | None:
    """Write this process's rates into the dimension's combiner item; every entry it then
    holds (None: the item keeps too many processes already)."""
    now = ctx.clock()
    mine = rates(d, report.seconds, report.sent, received=now)
    key = combiner.combiner_key(report.table, d.sort_key)
    found = combiner.record(store.dynamodb, store.name, key, report.process, mine, now)
    if found is None:
        return None
    if found.overflowed:  # heard through the shared entry: made-up ids may fill the item
        count("CombinerFull")
        log_event(
            "combiner-overflow",
            level=logging.WARNING,
            table=report.table,
            key=key["sk"]["S"],
            reporter=shown(report.process),
            reason=f"{combiner.MAX_PROCESSES} processes report on this dimension already: "
            "this report shares one entry with every newcomer's",
        )
    if found.repaired:
        count("SurgeEntriesIgnored", found.repaired)
        log_event(
            "combiner-repaired",
            level=logging.WARNING,
            table=report.table,
            key=key["sk"]["S"],
            dropped=found.repaired,
            reason="the item held more entries than the signals function writes",
        )
    if found.ignored:
        count("SurgeEntriesIgnored", len(found.ignored))
        log_event(
            "surge-entries-ignored",
            level=logging.WARNING,
            table=report.table,
            key=key["sk"]["S"],
            processes=[shown(p) for p in list(found.ignored)[:10]],
            reason="an entry that is not a process's rates within bounds",
        )
    if found.stale or found.ignored:
        combiner.forget(store.dynamodb, store.name, key, found)
    return found


def _standing(state: HeldDimension | None, provisioned: int, now: float) -> Standing[Hold]:
    """Where the dimension's surge stands at ``now`` (`core.surge.standing`), from its item."""
    holds = state.holds if state is not None else ()
    surge = next((h for h in holds if h.id == SURGE_HOLD), None)
    others = [h for h in holds if h.id != SURGE_HOLD]
    set_to = state.set_to if state is not None else None
    return standing(surge, others, set_to, provisioned, datetime.fromtimestamp(now, UTC))


def _live(dim: Dimension) -> Live:
    """The dimension as the decision reads it: its units, target, limits and warm
    throughput."""
    target_max = dim.target.max_capacity if dim.target is not None else None
    limits = dim.limits
    return Live(
        dim.provisioned, limits.target_utilization, limits.max_capacity, dim.warm, target_max
    )


def _surge(
    ctx: Context,
    store: HoldStore,
    dimension: tuple[str, DimensionReport],
    found: combiner.Entries,
    settings: SurgeSettings,
    signal: Signal,
    read: tuple[Described, Deadline],
) -> dict[str, Any]:
    """Raise ``d``'s dimension as far as the rule says, if it says so. Read the table
    (the reports' throttles counted only when sent after the surge's last raise and the
    capacity's last increase, `last_increase`) and the dimension's item; advance
    ``signal``'s bucket estimate (`keep_bucket`); look (`core.surge.first_look`); take
    the lease only for a surge that is due, before the deadline, and decide again on what
    is read under it."""
    table, d = dimension
    described, deadline = read
    where = {"table": table, "index": d.index, "dimension": d.dimension}
    now = ctx.clock()
    raw = described()
    state = store.get(table, d.index, d.dimension)
    combined, seen = _combined(found, raw, d, state, now)
    if raw.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST":
        return {**where, "status": "none", **seen}  # on demand: nothing to raise
    live = _first_live(ctx, store, (table, d), raw, found, combined, settings, signal)
    seen["bucket"] = round(live.drain.bucket.level) if live.drain and live.drain.bucket else 0
    stands = _standing(state, live.provisioned, now)
    lifetime = surge_lifetime(store.limits.max_hold)
    look = first_look(combined, live, now, stands, found.mark, settings, lifetime)
    if look.status == "none":
        return {**where, "status": "none", **seen}  # not due, whatever the target and limits
    if look.status == "limited":  # the cap leaves no room: a lie, or a demand to corroborate
        if not may_corroborate(
            Seen(table, d, combined, found.mark, live, stands, signal), settings, now
        ):
            count("SurgesOverBudget")
            return {**where, "status": "limited", "reason": look.reason, **seen}
    if look.status == "ended":
        return {**where, "status": "ended", "to": stands.held, "reason": look.reason, **seen}
    first = Seen(table, d, combined, found.mark, live, stands, signal)
    if stands.surge is not None and not surge_confirmed(ctx, store, first, now):
        return {**where, "status": "unconfirmed", "to": stands.held, "reason": UNCONFIRMED, **seen}
    status = raw.get("TableStatus")
    if look.status == "renew" and status == "ACTIVE":
        first = replace(first, renews=to_corroborate(first, settings, now, lifetime))
    renewal = look.status == "renew" and not first.renews
    row = _apply(ctx, store, first, (status, deadline), renewal, settings)
    return {**where, **row, **seen}


def _combined(
    found: combiner.Entries,
    raw: Mapping[str, Any],
    d: DimensionReport,
    state: HeldDimension | None,
    now: float,
) -> tuple[Combined, dict[str, Any]]:
    """The fresh reports added up (`since_raise`), and what the row says of them. While
    the dimension holds a surge, the throttles of a report telling of seconds before the
    capacity last rose (`last_increase`: the surge's raise landing, minutes after it was
    sent when above the warm throughput) are set aside: they saw the capacity before it,
    and against the new one their consumption would read as a small share of the traffic,
    sizing the next raise too high. A new surge's throttles are never set aside (another
    dimension's increase, which DescribeTable does not tell apart, may have come between).
    The throttles set aside are in the row (``set_aside``)."""
    held = state is not None and any(h.id == SURGE_HOLD for h in state.holds)
    increased = last_increase(raw, d.index, now) if held else None
    combined = since_raise(found.rates.values(), found.mark.raised, now, increased)
    seen: dict[str, Any] = {"demand": round(combined.demand, 1), "processes": combined.processes}
    if increased is not None:
        every = since_raise(found.rates.values(), found.mark.raised, now)
        aside = every.throttled + every.unknown - combined.throttled - combined.unknown
        if aside > 0:
            seen["set_aside"] = round(aside, 1)
    return combined, seen


LAST_INCREASE_SKEW_SECONDS = 5.0
"""How far after the function's clock DescribeTable's ``LastIncreaseDateTime`` may be and still
be read (as now): the clocks a little apart, right after an increase landed."""


def last_increase(raw: Mapping[str, Any], index: str | None, now: float) -> float | None:
    """When DescribeTable (``raw``) says the table's capacity, or the GSI's, last rose
    (``LastIncreaseDateTime``), in seconds since the epoch, at most ``now``: the reports
    telling of seconds before it saw the capacity before it. None when it says nothing
    sound, or a time more than `LAST_INCREASE_SKEW_SECONDS` after ``now`` (untrusted:
    never a reason to set aside a throttle reported since)."""
    try:
        at = spec_of(raw, index).get("ProvisionedThroughput", {}).get("LastIncreaseDateTime")
    except (KeyError, AttributeError, TypeError):
        return None
    if not isinstance(at, datetime):
        return None
    seconds = (at if at.tzinfo is not None else at.replace(tzinfo=UTC)).timestamp()
    return min(seconds, now) if seconds <= now + LAST_INCREASE_SKEW_SECONDS else None


def _first_live(
    ctx: Context,
    store: HoldStore,
    where: tuple[str, DimensionReport],
    raw: Mapping[str, Any],
    found: combiner.Entries,
    combined: Combined,
    settings: SurgeSettings,
    signal: Signal,
) -> Live:
    """The dimension as the first look reads it from the table's description ``raw``: its
    units and warm throughput, ``signal``'s bucket estimate advanced by the consumption
    seen (the reports' scaled up by ``share``; their throttles, not the stream's, show the
    bucket empty), and the demand ``signal`` trusts."""
    table, d = where
    provisioned = _provisioned(raw, table, d)
    warm = warm_of(spec_of(raw, d.index), d.dimension, store.limits.quota)
    refused = not signal.blind and (combined.throttled > 0 or combined.unknown > 0)
    seen = (provisioned, combined.consumed / settings.share, refused)
    key = combiner.combiner_key(table, d.sort_key)
    bucket = keep_bucket(ctx, store, key, found, signal, seen)
    drain = Drain(bucket, warm, signal.next_look, signal.blind)
    return Live(provisioned, warm=warm, drain=drain, trusted=signal.trusted or 0.0)


def _provisioned(raw: Mapping[str, Any], table: str, d: DimensionReport) -> int:
    """The units provisioned to ``d``'s dimension, from the table's description ``raw``."""
    try:
        return units_of(raw, d.index)[d.dimension]
    except KeyError:
        raise CapacityRequestError(f"index: table {table} has no index {shown(d.index)}") from None


def _apply(
    ctx: Context,
    store: HoldStore,
    first: Seen,
    when: tuple[object, Deadline],
    renewal: bool,
    settings: SurgeSettings,
) -> dict[str, Any]:
    """A due surge, under the dimension's lease: renewed, or raised by the rule on the live
    table. Returns the row's status and what was done; a busy table or lease defers our
    own surge's update, and fails (CapacityRequestTimeout) a new surge. The lease is
    neither waited for past ``deadline`` nor taken after it: the surge is then deferred."""
    table, d = first.table, first.d
    status, deadline = when  # the table's status as the first look read it; the deadline
    ours = first.stands.surge is not None  # a busy table or lease is then our surge's update
    if status != "ACTIVE" and not renewal:
        busy = f"table {table}: busy (status {status})"
        if ours:
            return {"status": "deferred", "reason": busy, "busy": _stuck(first, ctx.clock())}
        raise CapacityRequestTimeout(busy)
    with ExitStack() as held:
        # A renewal tries the lease once, a raise waits a little: whoever holds it is
        # changing this very dimension, and the next report tries again. Neither past the
        # deadline: a lease taken then could outlast the invocation.
        if deadline.left() <= 0:
            return {"status": "deferred", "reason": OUT_OF_TIME}
        until = deadline.wait_until(store.clock(), 0.0 if renewal else LEASE_WAIT_SECONDS)
        try:
            lease = held.enter_context(
                store.lease(table, d.index, d.dimension, deadline=until, sleep=ctx.sleep)
            )
        except CapacityRequestTimeout as exc:
            return {"status": "deferred", "reason": str(exc)}
        # Under the lease, what the look rested on is read again: the item, and for a
        # raise the live table and its target; the decision is taken again on it.
        state = store.get(table, d.index, d.dimension)
        if renewal:
            now = ctx.clock()
            if _standing(state, first.live.provisioned, now).same(first.stands):
                return _renew(ctx, store, lease, first, state, settings)
        try:
            return _raise(ctx, store, lease, first, state, settings)
        except CapacityRequestTimeout as exc:  # the table or index is being updated
            if ours:
                return {
                    "status": "deferred",
                    "reason": str(exc),
                    "busy": _stuck(first, ctx.clock()),
                }
            raise


def _renew(
    ctx: Context,
    store: HoldStore,
    lease: Lease,
    first: Seen,
    state: HeldDimension | None,
    settings: SurgeSettings,
) -> dict[str, Any]:
    """Under the lease, a surge that covers the demand already: its expiry pushed, and
    nothing else (no control-plane call)."""
    holds = list(state.holds) if state is not None else []
    old = next(h for h in holds if h.id == SURGE_HOLD)
    mark = first.mark
    started = mark.started if mark.started is not None else ctx.clock()
    expires = renewed_until(
        old.expires, ctx.now(), started, settings.surge_minutes, store.limits.max_hold
    )
    malformed_dropped(state, "surge renewed")
    lease.write(holds=[replace(h, expires=expires) if h is old else h for h in holds])
    if mark.started is None:
        combiner.mark(store.dynamodb, store.name, first.key, started=started)
    to = first.stands.held
    return {"status": "renewed", "to": to, "changes": [], "until": expires.isoformat()}


def _raise(
    ctx: Context,
    store: HoldStore,
    lease: Lease,
    first: Seen,
    state: HeldDimension | None,
    settings: SurgeSettings,
) -> dict[str, Any]:
    """Under the dimension's lease, with ``state`` its item read under it: read the live
    table, target and limits; decide (`core.surge.plan_raise`); then write the surge
    hold (made or renewed), spend the budget and raise the dimension to it. Returns the
    row's status, the level applied and the changes made."""
    managed = read_table(ctx, first.table, first.d.index, None, quota=store.limits.quota)
    dim = dimension_of(managed, first.d.index, first.d.dimension)
    _, base = base_of(dim, state)
    now = ctx.clock()
    stands = _standing(state, dim.provisioned, now)
    # the bucket rule's view and the trusted demand are the first look's
    live = replace(_live(dim), drain=first.live.drain, trusted=first.live.trusted)

    def decide(live: Live, bounds: SurgeSettings) -> SurgePlan:
        return plan_raise(first.combined, live, now, stands, first.mark, bounds, store.limits, base)

    plan, widened = corroborated_plan(ctx, store, first, live, settings, decide)
    if _keeps(first, stands, plan, widened):
        return _renew(ctx, store, lease, first, state, settings)
    if plan.status == "none":
        return {"status": "none"}
    if plan.status != "raise":
        if plan.over_budget:
            count("SurgesOverBudget")
        if plan.status == "limited":
            return {"status": "limited", "to": stands.held, "reason": plan.reason}
        raise CapacityRequestError(plan.reason)
    return _act(ctx, store, lease, first, managed, dim, state, stands, plan)


def _keeps(first: Seen, stands: Standing[Hold], plan: SurgePlan, widened: bool) -> bool:
    """Whether the surge is renewed at its level rather than as ``plan`` says: a renewal
    taken as a raise for CloudWatch (`Seen.renews`) that it did not widen, its standing
    unchanged; or a plan whose cap, narrower than the one the surge was raised under (the
    trusted demand lower now), would cut what the surge holds."""
    if stands.surge is None:
        return False
    if first.renews and not widened and stands.same(first.stands):
        return True
    return plan.status == "raise" and plan.units < stands.surge.units


def _act(
    ctx: Context,
    store: HoldStore,
    lease: Lease,
    first: Seen,
    managed: ManagedTable,
    dim: Dimension,
    state: HeldDimension | None,
    stands: Standing[Hold],
    plan: SurgePlan,
) -> dict[str, Any]:
    """Write what ``plan`` decided: the budget spent first (a conditional write on the
    window as read: one changed meanwhile defers the surge), then the surge hold recorded
    and the dimension raised to it (`request.raise_held`), then the surge's mark."""
    key = first.key
    if plan.spend is not None and not combiner.spend(
        store.dynamodb, store.name, key, first.mark.budget_text, plan.spend
    ):
        return {"status": "deferred", "reason": "the dimension's surge budget changed meanwhile"}
    if plan.over_budget:
        count("SurgesOverBudget")
    old, expires = stands.surge, plan.expires or ctx.now()
    hold = Hold(SURGE_HOLD, dim.index, dim.dimension, plan.units, expires, stands.baseline)
    if old is not None:
        hold = replace(old, units=plan.units, expires=expires)
    holds = state.holds if state is not None else ()
    recorded = [*(h for h in holds if h.id != SURGE_HOLD), hold]
    done: list[dict[str, Any]] = []
    step = raise_held(ctx, lease, managed, dim, state, recorded, done, why="surge")
    raised = plan.applied > plan.before or bool(done)
    if plan.added > 0:
        count("SurgeUnits", plan.added)
    combiner.mark(
        store.dynamodb,
        store.name,
        key,
        started=plan.started if plan.fresh else None,
        raised=ctx.clock() if raised else None,
        aim=dim.limits.target_utilization,
        max_capacity=dim.limits.max_capacity,
    )
    row = {"to": plan.applied, "changes": done, "within_warm": dim.within_warm(plan.applied)}
    if step is True:  # recorded; the table's own update waits for the one under way
        busy = "another update of the table is under way"
        return {**row, "status": "deferred", "reason": busy, "busy": _stuck(first, ctx.clock())}
    return {**row, "status": "applied" if raised else "renewed"}


def refused_report(
    table: object, d: DimensionReport | None, exc: Exception, metric: str = "ReportsRefused"
) -> dict[str, Any]:
    """A report, or one dimension of it, refused and counted as ``metric``: a malformed
    one (``ReportsRefused``, alarmed: the client hook never sends one), a table or index
    not served (``ReportsNotServed``: a hook that watches every table of a session reports
    on them too), a full combiner (``CombinerFull``, alarmed)."""
    if metric != "CombinerFull":
        count(metric)
    where: dict[str, Any] = {"index": d.index, "dimension": d.dimension} if d else {}
    log_event(
        "report-refused", level=logging.WARNING, table=shown(table), **where, reason=reason_of(exc)
    )
    return {"table": shown(table), **where, "status": "refused", "reason": reason_of(exc)}
