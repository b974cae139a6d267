"""Runs in: signals Lambda, CDK app (synth: its environment's names).

The fast path's server side: the signals function. The application's processes report
within seconds what they consume and the throttles they meet (one asynchronous invocation
per report, its payload `core.surge.Report.as_json`); this function adds up the
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
it above; throttles reported before its last raise are not counted again (they saw the
capacity before it). A surge lasts at most `SURGE_LIFETIME` from its first raise;
it ends by itself ``surge_minutes`` after the last report that asked for it, through the
restore that ends every expired hold. Nothing here lowers anything.

A report is untrusted: a malformed one (EMF ``ReportsRefused``, alarmed), or one for a
table the function does not serve (``ReportsNotServed``), is refused (``report-refused`` in
the log), never raised on (an asynchronous invocation that fails would be retried for
nothing); so is a dimension of an index it does not serve (``ReportsNotServed``), and a
newcomer to a dimension whose combiner is full (``CombinerFull``, alarmed). Each dimension
is its own fault domain: a surge that could not be applied is counted (``SurgesFailed``,
alarmed) and the others go on; one that found its dimension's lease taken, or its table
being updated while its surge is recorded, is deferred (``SurgesDeferred``): another update
of the dimension is under way, and the next report tries again. A raised one is
``SurgesApplied``, and the units it added ``SurgeUnits`` (alarmed over a threshold). A
surge is bounded by the surge cap (by default 4 x the capacity its dimension had when it
started) and by the dimension's budget of surge units an hour (kept in its combiner item);
one refused or cut short by its budget is ``SurgesOverBudget`` (alarmed).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ..aws import combiner, tables
from ..aws.clients import Clients, make_clients
from ..aws.store import HoldStore, Lease, open_store
from ..core.errors import shown
from ..core.holds import (
    MAX_HOLD_MINUTES,
    CapacityRequestError,
    CapacityRequestTimeout,
    HeldDimension,
    Hold,
    level,
)
from ..core.names import MAX_TABLE_QUOTA, UNITS
from ..core.surge import (
    DEFAULT_SURGE_MINUTES,
    DEFAULT_SURGE_SCALE,
    MAX_SURGE_SCALE,
    SURGE_LIFETIME_MINUTES,
    UNBOUNDED,
    Budget,
    Combined,
    DimensionReport,
    Report,
    SurgeReportError,
    budget_left,
    budget_window,
    cap_room,
    combine,
    parse_report,
    rates,
    surge_level,
)
from ..core.tables import Dimension, spec_of, throughput_of, warm_of
from ..core.untrusted import UntrustedJSONError, check_json
from ..events import log_event
from .broker import BrokerConfig, BrokerConfigError
from .context import Context, base_of, read_table
from .counts import count, count_within_warm
from .request import dimension_of, raise_held

__all__ = [
    "SHARE_ENV",
    "SURGE_BUDGET_ENV",
    "SURGE_CAP_ENV",
    "SURGE_SCALE_ENV",
    "SURGE_HOLD",
    "SURGE_LIFETIME",
    "SURGE_MINUTES_ENV",
    "SurgeSettings",
    "signals_handler",
    "surge_dimension",
    "take_report",
]

#: The signals function's settings (``CapacityRequests``' ``FastPath``).
SHARE_ENV = "CAPACITY_SURGE_SHARE"
SURGE_MINUTES_ENV = "CAPACITY_SURGE_MINUTES"
SURGE_CAP_ENV = "CAPACITY_SURGE_CAP"
SURGE_SCALE_ENV = "CAPACITY_SURGE_SCALE"
SURGE_BUDGET_ENV = "CAPACITY_SURGE_BUDGET"
#: The id of a dimension's surge hold.
SURGE_HOLD = "surge"
#: How long a raise waits for its dimension's lease (a request, a restore or another
#: surge holding it: each holds it for a few calls). Short, so that one hot dimension never
#: keeps the function's reserved slots waiting; a renewal does not wait at all. A report
#: that finds the lease taken is deferred: the next one, seconds later, tries again.
LEASE_WAIT_SECONDS = 2.0
#: The longest a surge lasts (`core.surge.SURGE_LIFETIME_MINUTES`).
SURGE_LIFETIME = timedelta(minutes=SURGE_LIFETIME_MINUTES)
#: The largest report the function reads, as JSON text (42 dimensions of the longest
#: names take about 20,000 characters).
MAX_REPORT_CHARS = 64 * 1024
#: A bound no table reaches: the rule asked only whether a surge is due at all.
_UNBOUNDED = 1_000_000_000


@dataclass(frozen=True)
class SurgeSettings:
    """How the signals function raises: ``share`` is the part of the traffic the reporting
    processes make (0 to 1), ``surge_minutes`` how long a surge holds after the last report
    that asked for it. The surge cap: ``cap``, the most units a surge may add over the
    capacity its dimension had when it started; without one, ``scale``: a surge reaches at
    most ``scale`` x that capacity (and may add `core.surge.MIN_SURGE_ROOM` units
    in any case); neither: no cap beyond the limits. ``budget``: the most units the surges
    of one dimension add in a window of `core.surge.BUDGET_WINDOW_SECONDS`; None:
    twice what one surge may add from the window's start (`core.surge.budget_left`);
    `core.surge.UNBOUNDED`: no budget."""

    share: float = 1.0
    surge_minutes: int = DEFAULT_SURGE_MINUTES
    cap: int | None = None
    scale: float | None = DEFAULT_SURGE_SCALE
    budget: int | str | None = None

    def __post_init__(self) -> None:
        share, minutes, cap = self.share, self.surge_minutes, self.cap
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise ValueError(f"share: got {shown(share)}; expected a number over 0, at most 1")
        if not _whole(minutes, 1, MAX_HOLD_MINUTES):
            raise ValueError(
                f"surge_minutes: got {shown(minutes)}; expected a whole number from 1 to "
                f"{MAX_HOLD_MINUTES}"
            )
        if cap is not None and not _whole(cap, 1, MAX_TABLE_QUOTA):
            raise ValueError(
                f"cap: got {shown(cap)}; expected None or a whole number from 1 to "
                f"{MAX_TABLE_QUOTA}"
            )
        if self.scale is not None and not _scale(self.scale):
            raise ValueError(
                f"scale: got {shown(self.scale)}; expected None or a number over 1, at most "
                f"{MAX_SURGE_SCALE:g}"
            )
        if self.budget not in (None, UNBOUNDED) and not _whole(
            self.budget, 1, 10 * MAX_TABLE_QUOTA
        ):
            raise ValueError(
                f"budget: got {shown(self.budget)}; expected None, {UNBOUNDED!r} or a whole "
                f"number from 1 to {10 * MAX_TABLE_QUOTA}"
            )

    def room(self, start: int, since: int | None = None, warm: int | None = None) -> int | None:
        """The most units one surge may add over ``start`` (None: no cap), within what
        the cap allows over ``since`` (`core.surge.cap_room`); the default cap
        reaches the dimension's warm throughput ``warm`` when known."""
        scale = None if self.cap is not None else self.scale
        return cap_room(start, since, self.cap, scale, warm)

    def budget_left(self, window: Budget, warm: int | None = None) -> int | None:
        """The units ``window``'s surges may still add (None: no budget); the default
        budget counts the warm throughput ``warm`` as one surge's room."""
        if self.budget == UNBOUNDED:
            return None
        budget = self.budget if isinstance(self.budget, int) else None
        scale = None if self.cap is not None else self.scale
        return budget_left(window, budget, self.cap, scale, warm)

    def to_env(self) -> dict[str, str]:
        """The settings as the construct writes them into the function's environment."""
        env = {SHARE_ENV: repr(float(self.share)), SURGE_MINUTES_ENV: str(self.surge_minutes)}
        if self.cap is not None:
            env[SURGE_CAP_ENV] = str(self.cap)
        elif self.scale is None:
            env[SURGE_CAP_ENV] = UNBOUNDED
        else:
            env[SURGE_SCALE_ENV] = repr(float(self.scale))
        if self.budget is not None:
            env[SURGE_BUDGET_ENV] = str(self.budget)
        return env

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> SurgeSettings:
        """The settings `to_env` wrote (an unset or empty variable: the default); a
        bad value fails with a `BrokerConfigError` naming the variable, the value
        and what is allowed (every report would fail, so the invocation fails)."""
        share = _setting(env, SHARE_ENV, float, lambda v: 0 < v <= 1, "a number over 0, at most 1")
        minutes = _setting(
            env,
            SURGE_MINUTES_ENV,
            int,
            lambda v: 1 <= v <= MAX_HOLD_MINUTES,
            f"a whole number from 1 to {MAX_HOLD_MINUTES}",
        )
        cap = _setting(
            env,
            SURGE_CAP_ENV,
            _or_unbounded(int),
            lambda v: v == UNBOUNDED or 1 <= v <= MAX_TABLE_QUOTA,
            f"a whole number from 1 to {MAX_TABLE_QUOTA}, {UNBOUNDED!r} (no cap), or unset "
            f"(the default cap: {SURGE_SCALE_ENV} x the start)",
        )
        scale = _setting(
            env, SURGE_SCALE_ENV, float, _scale, f"a number over 1, at most {MAX_SURGE_SCALE:g}"
        )
        budget = _setting(
            env,
            SURGE_BUDGET_ENV,
            _or_unbounded(int),
            lambda v: v == UNBOUNDED or 1 <= v <= 10 * MAX_TABLE_QUOTA,
            f"a whole number from 1 to {10 * MAX_TABLE_QUOTA}, {UNBOUNDED!r}, or unset (the "
            "default budget)",
        )
        return cls(
            1.0 if share is None else share,
            DEFAULT_SURGE_MINUTES if minutes is None else minutes,
            cap if isinstance(cap, int) else None,
            None if cap == UNBOUNDED else (DEFAULT_SURGE_SCALE if scale is None else scale),
            budget,
        )


def _or_unbounded(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    return lambda text: UNBOUNDED if text == UNBOUNDED else parse(text)


def _scale(value: object) -> bool:
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and 1 < value <= MAX_SURGE_SCALE
    )


def _setting(
    env: Mapping[str, str],
    name: str,
    parse: Callable[[str], Any],
    allowed: Callable[[Any], bool],
    expected: str,
) -> Any:
    """The value of the variable ``name`` (None: unset or empty), parsed and checked."""
    text = env.get(name)
    if text is None or not text.strip():
        return None
    try:
        value = parse(text.strip())
    except ValueError:
        value = None
    if value is None or not allowed(value):
        raise BrokerConfigError(f"{name}: got {shown(text)}; expected {expected}")
    return value


def signals_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """AWS Lambda entry point of the ``CapacityRequests`` signals function."""
    # A broken configuration fails the invocation (its errors are alarmed).
    return take_report(event, BrokerConfig.from_env(), SurgeSettings.from_env())


def take_report(
    event: object,
    scopes: BrokerConfig,
    settings: SurgeSettings,
    *,
    clients: Clients | None = None,
    store: HoldStore | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Combine one report with the others and raise what it makes due. ``scopes``: the
    tables and indexes served; ``clients`` and ``store``: default, from the environment
    (``$CAPACITY_HOLDS_TABLE`` and its bounds). Returns, per dimension, what was done."""
    now = clock()
    try:
        check_json(event, "report", max_chars=MAX_REPORT_CHARS)
    except UntrustedJSONError as exc:  # before anything reads it, its table included
        return {"ok": False, **_refused(None, None, exc)}
    try:
        report = parse_report(event, now)
    except SurgeReportError as exc:
        table = event.get("table") if isinstance(event, Mapping) else None
        return {"ok": False, **_refused(table, None, exc)}
    try:
        scopes.check(report.table, None)
    except CapacityRequestError as exc:
        return {"ok": False, **_refused(report.table, None, exc, "ReportsNotServed")}
    served: list[DimensionReport] = []
    rows: list[dict[str, Any]] = []
    for d in report.dims:
        try:
            scopes.check(report.table, d.index)
            served.append(d)
        except CapacityRequestError as exc:
            rows.append(_refused(report.table, d, exc, "ReportsNotServed"))
    ctx = Context(clients or make_clients(), clock, sleep, 0)
    held = open_store(store, ctx.clients, clock)
    rows += [_dimension(ctx, held, report, d, settings) for d in served]
    return {"ok": True, "dimensions": rows}


def _dimension(
    ctx: Context, store: HoldStore, report: Report, d: DimensionReport, settings: SurgeSettings
) -> dict[str, Any]:
    """Combine one dimension of ``report``, and surge it if due: its own fault domain."""
    try:
        found = _combine(ctx, store, report, d)
    except Exception as exc:  # each dimension is its own fault domain
        return _failed(report.table, d, exc)
    if found is None:
        count("CombinerFull")
        full = f"{combiner.MAX_PROCESSES} processes report on this dimension already"
        return _refused(report.table, d, CapacityRequestError(full), "CombinerFull")
    return surge_dimension(ctx, store, report.table, d, found, settings)


def surge_dimension(
    ctx: Context,
    store: HoldStore,
    table: str,
    d: DimensionReport,
    found: combiner.Entries,
    settings: SurgeSettings,
) -> dict[str, Any]:
    """The one surge decision on ``d``'s dimension, from what ``found`` holds (the
    combined reports, or the stream reader's rate) and its surge mark: raised, renewed or
    left alone, counted and logged; its own fault domain. The signals function and the
    stream reader both decide here."""
    try:
        row = _surge(ctx, store, table, d, found, settings)
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
        log_event("surge-deferred", **row)
    elif status == "ended":
        log_event("surge-ended", level=logging.WARNING, **row)
    elif status == "limited":
        log_event("surge-over-budget", level=logging.WARNING, **row)
    return row


def _failed(table: str, d: DimensionReport, exc: Exception) -> dict[str, Any]:
    """A dimension whose surge failed: counted (``SurgesFailed``, alarmed) and logged."""
    where: dict[str, Any] = {"table": table, "index": d.index, "dimension": d.dimension}
    count("SurgesFailed")
    log_event("surge-failed", level=logging.ERROR, **where, reason=_reason(exc))
    return {**where, "status": "failed", "reason": _reason(exc)}


def _combine(
    ctx: Context, store: HoldStore, report: Report, d: DimensionReport
) -> combiner.Entries | None:
    """Write this process's rates into the dimension's combiner item; every entry it then
    holds (None: the item keeps too many processes already)."""
    mine = rates(d, report.seconds, report.sent)
    key = combiner.combiner_key(report.table, d.sort_key)
    now = ctx.clock()
    found = combiner.record(store.dynamodb, store.name, key, report.process, mine, now)
    if found is None:
        return None
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


def _since_raise(found: combiner.Entries, now: float) -> Combined:
    """The sum of ``found``'s fresh entries, their throttles counted only when sent after
    the surge's last raise (earlier ones describe the capacity before it)."""
    raised = found.mark.raised
    kept = [
        r if raised is None or r.at >= raised else replace(r, throttled=0.0, unknown=0.0)
        for r in found.rates.values()
    ]
    return combine(kept, now)


@dataclass(frozen=True)
class _Standing:
    """Where a dimension's surge stands: its hold as recorded (active, or expired but not
    yet restored while the dimension stays raised over its baseline; None: no surge), the
    baseline the rule counts from, the level held (0: no surge) and the other active
    holds."""

    surge: Hold | None
    baseline: int
    held: int
    others: tuple[Hold, ...]


def _standing(state: HeldDimension | None, provisioned: int, now: datetime) -> _Standing:
    holds = list(state.holds) if state is not None else []
    others = tuple(h for h in holds if h.id != SURGE_HOLD and h.active(now))
    old = next((h for h in holds if h.id == SURGE_HOLD), None)
    current = max(provisioned, (state.set_to if state is not None else None) or 0)
    if old is not None and not old.active(now) and current <= old.baseline:
        old = None  # expired, and its raise is gone: a new surge starts from here
    if old is None:
        return _Standing(None, min(provisioned, MAX_TABLE_QUOTA), 0, others)
    return _Standing(old, old.baseline, level([*others, old]), others)


def _lifetime(store: HoldStore) -> timedelta:
    return min(SURGE_LIFETIME, store.limits.max_hold)


def _surge(
    ctx: Context,
    store: HoldStore,
    table: str,
    d: DimensionReport,
    found: combiner.Entries,
    settings: SurgeSettings,
) -> dict[str, Any]:
    """Raise ``d``'s dimension as far as the rule says, if it says so."""
    where = {"table": table, "index": d.index, "dimension": d.dimension}
    now = ctx.clock()
    combined = _since_raise(found, now)
    seen = {"demand": round(combined.demand, 1), "processes": combined.processes}
    raw = tables.describe(ctx.clients.dynamodb, table)
    if raw.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST":
        return {**where, "status": "none", **seen}  # on demand: nothing to raise
    provisioned = _provisioned(raw, table, d)
    warm = warm_of(spec_of(raw, d.index), d.dimension, store.limits.quota)
    standing = _standing(store.get(table, d.index, d.dimension), provisioned, ctx.now())
    due = surge_level(
        combined,
        provisioned,
        1.0,
        _UNBOUNDED,
        settings.share,
        settings.room(standing.baseline, _since(found.mark, now, standing), warm),
        held=standing.held,
        base=standing.baseline,
    )
    if due is None:
        return {**where, "status": "none", **seen}  # not due, whatever the target and limits
    mark = found.mark
    ended = _ended(store, standing, mark, now)
    if ended is not None:
        return {**where, "status": "ended", "to": standing.held, "reason": ended, **seen}
    renewal = _is_renewal(combined, provisioned, standing, mark, settings, now, warm)
    row = _apply(
        ctx, store, table, d, raw, provisioned, combined, standing, mark, renewal, settings
    )
    return {**where, **row, **seen}


def _provisioned(raw: Mapping[str, Any], table: str, d: DimensionReport) -> int:
    """The units provisioned to ``d``'s dimension, from the table's description ``raw``."""
    try:
        return int(throughput_of(raw, d.index)[UNITS[d.dimension]])
    except KeyError:
        raise CapacityRequestError(f"index: table {table} has no index {shown(d.index)}") from None


def _ended(
    store: HoldStore, standing: _Standing, mark: combiner.SurgeMark, now: float
) -> str | None:
    """Why a surge due again is not raised nor renewed: it has lasted its longest (None:
    it has not, or there is no surge)."""
    if standing.surge is None or mark.started is None:
        return None
    if now < mark.started + _lifetime(store).total_seconds():
        return None
    minutes = int(_lifetime(store).total_seconds() // 60)
    return (
        f"the surge has lasted its longest ({minutes} minutes): it ends at its "
        f"expiry, and a new one may start once it is restored"
    )


def _is_renewal(
    combined: Combined,
    provisioned: int,
    standing: _Standing,
    mark: combiner.SurgeMark,
    settings: SurgeSettings,
    now: float,
    warm: int | None,
) -> bool:
    """Whether the surge holds already what is due, sized as it was when last raised, on a
    dimension still provisioned at its level (``warm``: its warm throughput): then only
    its expiry is pushed."""
    return (
        standing.surge is not None
        and mark.aim is not None
        and mark.max_capacity is not None
        and provisioned >= standing.held
        and surge_level(
            combined,
            provisioned,
            mark.aim,
            mark.max_capacity,
            settings.share,
            settings.room(standing.baseline, _since(mark, now, standing), warm),
            held=standing.held,
            base=standing.baseline,
        )
        == standing.held
    )


def _apply(
    ctx: Context,
    store: HoldStore,
    table: str,
    d: DimensionReport,
    raw: Mapping[str, Any],
    provisioned: int,
    combined: Combined,
    standing: _Standing,
    mark: combiner.SurgeMark,
    renewal: bool,
    settings: SurgeSettings,
) -> dict[str, Any]:
    """A due surge, under the dimension's lease: renewed, or raised by the rule on the live
    table. Returns the row's status and what was done; a busy table or lease defers our
    own surge's update, and fails (CapacityRequestTimeout) a new surge."""
    key = combiner.combiner_key(table, d.sort_key)
    ours = standing.surge is not None  # a busy table or lease is then our surge's update
    if raw.get("TableStatus") != "ACTIVE" and not renewal:
        busy = f"table {table}: busy (status {raw.get('TableStatus')})"
        if ours:
            return {"status": "deferred", "reason": busy}
        raise CapacityRequestTimeout(busy)
    with ExitStack() as held:
        # A renewal tries the lease once, a raise waits a little: whoever holds it is
        # changing this very dimension, and the next report tries again.
        wait = 0.0 if renewal else LEASE_WAIT_SECONDS
        try:
            lease = held.enter_context(
                store.lease(
                    table, d.index, d.dimension, deadline=store.clock() + wait, sleep=ctx.sleep
                )
            )
        except CapacityRequestTimeout as exc:
            return {"status": "deferred", "reason": str(exc)}
        state = store.get(table, d.index, d.dimension)
        if renewal and _same(_standing(state, provisioned, ctx.now()), standing):
            return _renew(ctx, store, lease, key, state, standing, mark, settings)
        try:
            made = _hold_surge(ctx, store, lease, key, table, d, combined, mark, settings)
        except CapacityRequestTimeout as exc:  # the table or index is being updated
            if ours:
                return {"status": "deferred", "reason": str(exc)}
            raise
    if made is None:
        return {"status": "none"}
    return made


def _same(a: _Standing, b: _Standing) -> bool:
    """Whether two readings of a surge's standing hold the same level from the same base."""
    return (a.baseline, a.held, a.surge is None) == (b.baseline, b.held, b.surge is None)


def _renew(
    ctx: Context,
    store: HoldStore,
    lease: Lease,
    key: Mapping[str, Any],
    state: HeldDimension | None,
    standing: _Standing,
    mark: combiner.SurgeMark,
    settings: SurgeSettings,
) -> dict[str, Any]:
    """Under the lease, a surge that covers the demand already: its expiry pushed, and
    nothing else (no control-plane call)."""
    now = ctx.now()
    holds = list(state.holds) if state is not None else []
    old = next(h for h in holds if h.id == SURGE_HOLD)
    started = mark.started if mark.started is not None else ctx.clock()
    expires = max(old.expires, _expiry(store, now, started, settings))
    lease.write(holds=[replace(h, expires=expires) if h is old else h for h in holds])
    if mark.started is None:
        combiner.mark(store.dynamodb, store.name, key, started=started)
    return {"status": "renewed", "to": standing.held, "changes": [], "until": expires.isoformat()}


def _expiry(store: HoldStore, now: datetime, started: float, settings: SurgeSettings) -> datetime:
    """A surge's expiry from ``now``: ``surge_minutes`` on, within the hold store's longest
    hold and the surge's lifetime from ``started``."""
    surge_for = min(timedelta(minutes=settings.surge_minutes), store.limits.max_hold)
    last = datetime.fromtimestamp(started, UTC) + _lifetime(store)
    return datetime.fromtimestamp(int(min(now + surge_for, last).timestamp()), UTC)


def _hold_surge(
    ctx: Context,
    store: HoldStore,
    lease: Lease,
    key: Mapping[str, Any],
    table: str,
    d: DimensionReport,
    combined: Combined,
    mark: combiner.SurgeMark,
    settings: SurgeSettings,
) -> dict[str, Any] | None:
    """Under the dimension's lease: the rule on the live table, target and limits; then
    the surge hold made or renewed and the dimension raised to it. Returns the row's
    status, the level applied and the changes made; None when no surge is due after all."""
    managed = read_table(ctx, table, d.index, None)
    dim = dimension_of(managed, d.index, d.dimension)
    limits = dim.limits
    now = ctx.now()
    state = store.get(table, d.index, d.dimension)
    standing = _standing(state, dim.provisioned, now)
    want = _level_on(dim, combined, standing, settings, _since(mark, ctx.clock(), standing))
    if want is None:
        return None
    started = mark.started if standing.surge is not None else None
    fresh = started is None
    if started is None:
        started = ctx.clock()
    window = budget_window(mark.budget, ctx.clock(), standing.baseline)
    budgeted = _budgeted(
        store, key, state, standing, dim, want, now, started, settings, mark, window
    )
    if isinstance(budgeted, dict):
        return budgeted
    recorded, added = budgeted
    _, base = base_of(dim, state)
    before = max(base, standing.held or level(standing.others))
    applied = max(base, level(h for h in recorded if h.active(now)))
    done: list[dict[str, Any]] = []
    step = raise_held(ctx, lease, managed, dim, state, recorded, done, why="surge")
    raised = applied > before or bool(done)
    if added > 0:
        count("SurgeUnits", added)
    combiner.mark(
        store.dynamodb,
        store.name,
        key,
        started=started if fresh else None,
        raised=ctx.clock() if raised else None,
        aim=limits.target_utilization,
        max_capacity=limits.max_capacity,
    )
    row = {"to": applied, "changes": done, "within_warm": dim.within_warm(applied)}
    if step is True:  # recorded; the table's own update waits for the one under way
        return {**row, "status": "deferred", "reason": "another update of the table is under way"}
    return {**row, "status": "applied" if raised else "renewed"}


def _budgeted(
    store: HoldStore,
    key: Mapping[str, Any],
    state: HeldDimension | None,
    standing: _Standing,
    dim: Dimension,
    want: int,
    now: datetime,
    started: float,
    settings: SurgeSettings,
    mark: combiner.SurgeMark,
    window: Budget,
) -> tuple[list[Hold], int] | dict[str, Any]:
    """The dimension's holds with its surge made or renewed within the budget ``window``
    leaves, and the units the surge adds, spent from the window first (a conditional
    write on the window as read); a row when the budget refuses a new surge, or changed
    meanwhile."""
    left = settings.budget_left(window, dim.warm)
    if left == 0 and want > standing.held:
        count("SurgesOverBudget")
        if standing.surge is None:
            return {"status": "limited", "to": standing.held, "reason": _spent(window)}
    recorded = _renewed(
        store, state, standing, dim, want, now, started, settings, left, window.level
    )
    added = _units_of(recorded) - (standing.surge.units if standing.surge else 0)
    spent = replace(window, used=window.used + added)
    if added > 0 and not combiner.spend(store.dynamodb, store.name, key, mark.budget_text, spent):
        return {"status": "deferred", "reason": "the dimension's surge budget changed meanwhile"}
    if added > 0 and left is not None and added >= left:
        count("SurgesOverBudget")
    return recorded, added


def _level_on(
    dim: Dimension, combined: Combined, standing: _Standing, settings: SurgeSettings, since: int
) -> int | None:
    """The rule on the live dimension ``dim``, its target and limits."""
    return surge_level(
        combined,
        dim.provisioned,
        dim.limits.target_utilization,
        dim.limits.max_capacity,
        settings.share,
        settings.room(standing.baseline, since, dim.warm),
        held=standing.held,
        base=standing.baseline,
    )


def _since(mark: combiner.SurgeMark, now: float, standing: _Standing) -> int:
    """The level the dimension's budget window counts from at ``now``."""
    return budget_window(mark.budget, now, standing.baseline).level


def _units_of(holds: list[Hold]) -> int:
    """The units of the surge hold among ``holds``."""
    return next(h.units for h in holds if h.id == SURGE_HOLD)


def _spent(window: Budget) -> str:
    return (
        f"the dimension's surge budget is spent: {window.used:,} units added since "
        f"{datetime.fromtimestamp(window.start, UTC).isoformat()}, counting from "
        f"{window.level:,}; a new window begins an hour after that"
    )


def _renewed(
    store: HoldStore,
    state: HeldDimension | None,
    standing: _Standing,
    d: Dimension,
    want: int,
    now: datetime,
    started: float,
    settings: SurgeSettings,
    left: int | None = None,
    since: int | None = None,
) -> list[Hold]:
    """The dimension's holds with its surge hold made or renewed so that the level of every
    active hold reaches ``want``: its baseline the capacity before the surge, its units
    what it adds (never fewer than the surge's), its expiry ``surge_minutes`` from now
    (never earlier than it was, never past its lifetime); clamped to the surge cap, the
    budget ``left`` (None: none), the hold store's limits and the target's max. Refuses a
    surge the limits leave nothing to."""
    limits = store.limits
    holds = list(state.holds) if state is not None else []
    old = standing.surge
    others = list(standing.others)
    baseline = standing.baseline
    floor = min([baseline, *(h.baseline for h in others)])
    units = max(want - floor - sum(h.units for h in others), old.units if old else 0)
    room = [limits.max_units, limits.max_total_units - sum(h.units for h in others)]
    cap = settings.room(baseline, since, d.warm)
    if cap is not None:
        room.append(cap)
    if left is not None:  # the budget: what the surge holds already, and what is left
        room.append((old.units if old else 0) + left)
    if d.target is not None:  # the level of every hold stays within the target's max
        room.append(d.target.max_capacity - floor - sum(h.units for h in others))
    units = min(units, *room)
    if units < 1:
        raise CapacityRequestError(
            f"the hold store's limits or the scalable target's max leave no room for a surge "
            f"to {want:,} over {baseline:,}"
        )
    expires = _expiry(store, now, started, settings)
    if old is not None and old.expires > expires:
        expires = old.expires
    hold = Hold(SURGE_HOLD, d.index, d.dimension, units, expires, baseline)
    if old is not None:
        hold = replace(old, units=units, expires=expires)
    return [*(h for h in holds if h.id != SURGE_HOLD), hold]


def _refused(
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
        "report-refused", level=logging.WARNING, table=shown(table), **where, reason=_reason(exc)
    )
    return {"table": shown(table), **where, "status": "refused", "reason": _reason(exc)}


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 1_000 else text[:1_000] + "..."


def _whole(value: object, low: int, high: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and low <= value <= high
