"""Runs in: signals Lambda, CDK app (synth: its environment's names).

The fast path's server side: the signals function. The application's processes report
within seconds what they consume and the throttles they meet (one asynchronous invocation
per report, its payload :meth:`..core.surge.Report.as_json`); this function adds up the
reports of every process per dimension in the state store (:mod:`..aws.combiner`) and, when
the one rule (:func:`..core.surge.surge_level`) says the summed demand heads over what is
provisioned, or provisioned-throughput throttles appear, raises the dimension at once.

A raise is a hold (id ``surge``, one per dimension) recorded exactly as a capacity request
records one (:func:`.request.raise_held`): the scalable target's minimum goes up and the
table with it (UpdateTable, sent, never waited for), or UpdateTable alone without a target.
Later reports that still ask for it renew it (its level only ever goes up, its expiry is
pushed); it ends by itself ``surge_minutes`` after the last of them, through the restore
that ends every expired hold. Nothing here lowers anything.

A report is untrusted: a malformed one, or one for a table the function does not serve, is
refused (EMF ``ReportsRefused``, ``report-refused`` in the log), never raised on (an
asynchronous invocation that fails would be retried for nothing); so is a dimension of an
index it does not serve. Each dimension is its own fault domain: a surge that could not be
applied is counted (``SurgesFailed``, alarmed) and the others go on; an applied one is
``SurgesApplied``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ..aws import combiner, tables
from ..aws.clients import Clients, make_clients
from ..core.names import TABLE_QUOTA, UNITS
from ..core.surge import (
    DEFAULT_SURGE_MINUTES,
    Combined,
    DimensionReport,
    Report,
    ReportError,
    combine,
    parse_report,
    rates,
    surge_level,
)
from ..core.tables import Dimension, throughput_of
from ..events import log_event
from .broker import BrokerConfig, BrokerConfigError
from .context import Context, read_table
from .counts import count
from .holds import MAX_HOLD_MINUTES, CapacityRequestError, CapacityRequestTimeout, Hold, shown
from .request import dimension_of, raise_held
from .store import HeldDimension, HoldLimits, HoldStore, Lease, open_store

__all__ = [
    "SHARE_ENV",
    "SURGE_CAP_ENV",
    "SURGE_HOLD",
    "SURGE_MINUTES_ENV",
    "SurgeSettings",
    "signals_handler",
    "take_report",
]

#: The signals function's settings (``CapacityRequests``' ``FastPath``).
SHARE_ENV = "CAPACITY_SURGE_SHARE"
SURGE_MINUTES_ENV = "CAPACITY_SURGE_MINUTES"
SURGE_CAP_ENV = "CAPACITY_SURGE_CAP"
#: The id of a dimension's surge hold.
SURGE_HOLD = "surge"
#: How long a surge waits for its dimension's lease (a request or a restore holding it).
LEASE_WAIT_SECONDS = 10.0
#: A bound no table reaches: the rule asked only whether a surge is due at all.
_UNBOUNDED = 1_000_000_000


@dataclass(frozen=True)
class SurgeSettings:
    """How the signals function raises: ``share`` is the part of the traffic the reporting
    processes make (0 to 1), ``surge_minutes`` how long a surge holds after the last report
    that asked for it, ``cap`` the most units a surge may add over what was provisioned
    (None: no cap beyond the limits)."""

    share: float = 1.0
    surge_minutes: int = DEFAULT_SURGE_MINUTES
    cap: int | None = None

    def __post_init__(self) -> None:
        share, minutes, cap = self.share, self.surge_minutes, self.cap
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise ValueError(f"share: got {shown(share)}; expected a number over 0, at most 1")
        if not _whole(minutes, 1, MAX_HOLD_MINUTES):
            raise ValueError(
                f"surge_minutes: got {shown(minutes)}; expected a whole number from 1 to "
                f"{MAX_HOLD_MINUTES}"
            )
        if cap is not None and not _whole(cap, 1, TABLE_QUOTA):
            raise ValueError(
                f"cap: got {shown(cap)}; expected None or a whole number from 1 to {TABLE_QUOTA}"
            )

    def to_env(self) -> dict[str, str]:
        """The settings as the construct writes them into the function's environment."""
        return {
            SHARE_ENV: repr(float(self.share)),
            SURGE_MINUTES_ENV: str(self.surge_minutes),
            **({SURGE_CAP_ENV: str(self.cap)} if self.cap is not None else {}),
        }

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> SurgeSettings:
        """The settings :meth:`to_env` wrote; a bad value names its variable
        (:class:`BrokerConfigError`: every report would fail, so the invocation fails)."""
        raw = {n: env.get(n) for n in (SHARE_ENV, SURGE_MINUTES_ENV, SURGE_CAP_ENV)}
        try:
            share = float(raw[SHARE_ENV] or 1.0)
            minutes = int(raw[SURGE_MINUTES_ENV] or DEFAULT_SURGE_MINUTES)
            cap_text = raw[SURGE_CAP_ENV]
            cap = int(cap_text) if cap_text else None
            return cls(share, minutes, cap)
        except ValueError as exc:
            raise BrokerConfigError(f"{exc} (read from {raw!r:.300})") from None


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
        report = parse_report(event, now)
        scopes.check(report.table, None)
    except (ReportError, CapacityRequestError) as exc:
        table = event.get("table") if isinstance(event, Mapping) else None
        return {"ok": False, **_refused(table, None, exc)}
    served: list[DimensionReport] = []
    rows: list[dict[str, Any]] = []
    for d in report.dims:
        try:
            scopes.check(report.table, d.index)
            served.append(d)
        except CapacityRequestError as exc:
            rows.append(_refused(report.table, d, exc))
    ctx = Context(clients or make_clients(), clock, sleep, 0)
    held = open_store(store, ctx.clients, clock)
    rows += [_dimension(ctx, held, report, d, settings) for d in served]
    return {"ok": True, "dimensions": rows}


def _dimension(
    ctx: Context, store: HoldStore, report: Report, d: DimensionReport, settings: SurgeSettings
) -> dict[str, Any]:
    """Combine one dimension of ``report``, and surge it if due: its own fault domain."""
    where: dict[str, Any] = {"table": report.table, "index": d.index, "dimension": d.dimension}
    try:
        combined = _combine(ctx, store, report, d)
        if combined is None:
            full = f"{combiner.MAX_PROCESSES} processes report on this dimension already"
            return _refused(report.table, d, CapacityRequestError(full))
        row = _surge(ctx, store, report.table, d, combined, settings)
    except Exception as exc:  # each dimension is its own fault domain
        count("SurgesFailed")
        log_event("surge-failed", level=logging.ERROR, **where, reason=_reason(exc))
        return {**where, "status": "failed", "reason": _reason(exc)}
    if row.get("status") == "applied":
        count("SurgesApplied")
        log_event("surge-applied", **row)
    elif row.get("status") == "renewed":
        log_event("surge-renewed", **row)
    elif row.get("status") == "failed":
        count("SurgesFailed")
        log_event("surge-failed", level=logging.ERROR, **row)
    return row


def _combine(ctx: Context, store: HoldStore, report: Report, d: DimensionReport) -> Combined | None:
    """Write this process's rates into the dimension's combiner item; the sum of every
    fresh entry (None: the item keeps too many processes already)."""
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
    return combine(found.rates.values(), now)


def _surge(
    ctx: Context,
    store: HoldStore,
    table: str,
    d: DimensionReport,
    combined: Combined,
    settings: SurgeSettings,
) -> dict[str, Any]:
    """Raise ``d``'s dimension as far as the rule says, if it says so."""
    where = {"table": table, "index": d.index, "dimension": d.dimension}
    seen = {"demand": round(combined.demand, 1), "processes": combined.processes}
    raw = tables.describe(ctx.clients.dynamodb, table)
    if raw.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST":
        return {**where, "status": "none", **seen}  # on demand: nothing to raise
    try:
        provisioned = int(throughput_of(raw, d.index)[UNITS[d.dimension]])
    except KeyError:
        raise CapacityRequestError(f"index: table {table} has no index {shown(d.index)}") from None
    if surge_level(combined, provisioned, 1.0, _UNBOUNDED, settings.share, settings.cap) is None:
        return {**where, "status": "none", **seen}  # not due, whatever the target and limits
    try:
        if raw.get("TableStatus") != "ACTIVE":
            raise CapacityRequestTimeout(f"table {table}: busy (status {raw.get('TableStatus')})")
        with store.lease(
            table,
            d.index,
            d.dimension,
            deadline=store.clock() + LEASE_WAIT_SECONDS,
            sleep=ctx.sleep,
        ) as lease:
            made = _hold_surge(ctx, store, lease, table, d, combined, settings)
    except CapacityRequestTimeout as exc:
        if _surging(store, table, d, ctx.now()):
            return {**where, "status": "busy", "reason": str(exc), **seen}  # ours, under way
        raise
    if made is None:
        return {**where, "status": "none", **seen}
    level, step, done = made
    row = {**where, "status": "applied", "to": level, "changes": done, **seen}
    if step is True and not done:
        return {**row, "status": "failed", "reason": "another update of the table is under way"}
    return row if done else {**row, "status": "renewed"}


def _hold_surge(
    ctx: Context,
    store: HoldStore,
    lease: Lease,
    table: str,
    d: DimensionReport,
    combined: Combined,
    settings: SurgeSettings,
) -> tuple[int, int | bool, list[dict[str, Any]]] | None:
    """Under the dimension's lease: the rule on the live table, target and limits; then
    the surge hold made or renewed and the dimension raised to it. Returns the surge's
    level, what :func:`.request.raise_held` returned and the changes made; None when no
    surge is due after all."""
    managed = read_table(ctx, table, d.index, None)
    dim = dimension_of(managed, d.index, d.dimension)
    limits = dim.limits
    want = surge_level(
        combined,
        dim.provisioned,
        limits.target_utilization,
        limits.max_capacity,
        settings.share,
        settings.cap,
    )
    if want is None:
        return None
    state = store.get(table, d.index, d.dimension)
    recorded, hold = _renewed(store.limits, state, dim, want, ctx.now(), settings)
    done: list[dict[str, Any]] = []
    step = raise_held(ctx, lease, managed, dim, state, recorded, done, why="surge")
    return hold.baseline + hold.units, step, done


def _renewed(
    limits: HoldLimits,
    state: HeldDimension | None,
    d: Dimension,
    want: int,
    now: datetime,
    settings: SurgeSettings,
) -> tuple[list[Hold], Hold]:
    """The dimension's holds with its surge hold made or renewed to reach ``want``: its
    baseline the capacity first seen, its units what it adds (never fewer than an active
    surge's), its expiry ``surge_minutes`` from now (never earlier than it was); clamped to
    the surge cap, the hold store's limits and the target's max. Refuses a surge the limits
    leave nothing to."""
    holds = list(state.holds) if state is not None else []
    old = next((h for h in holds if h.id == SURGE_HOLD and h.active(now)), None)
    others = [h for h in holds if h.id != SURGE_HOLD]
    active = [h for h in others if h.active(now)]
    baseline = old.baseline if old is not None else min(d.provisioned, TABLE_QUOTA)
    units = max(want - baseline, old.units if old is not None else 0)
    room = [limits.max_units, limits.max_total_units - sum(h.units for h in active)]
    if settings.cap is not None:
        room.append(settings.cap)
    if d.target is not None:  # the level of every hold stays within the target's max
        floor = min([baseline, *(h.baseline for h in active)])
        room.append(d.target.max_capacity - floor - sum(h.units for h in active))
    units = min(units, *room)
    if units < 1:
        raise CapacityRequestError(
            f"the hold store's limits or the scalable target's max leave no room for a surge "
            f"to {want:,} over {baseline:,}"
        )
    surge_for = min(timedelta(minutes=settings.surge_minutes), limits.max_hold)
    expires = datetime.fromtimestamp(int((now + surge_for).timestamp()), UTC)
    if old is not None and old.expires > expires:
        expires = old.expires
    hold = Hold(SURGE_HOLD, d.index, d.dimension, units, expires, baseline)
    if old is not None:
        hold = replace(old, units=units, expires=expires)
    return [*others, hold], hold


def _surging(store: HoldStore, table: str, d: DimensionReport, now: datetime) -> bool:
    """Whether the dimension has an active surge hold (its raise is under way)."""
    state = store.get(table, d.index, d.dimension)
    return state is not None and any(h.id == SURGE_HOLD and h.active(now) for h in state.holds)


def _refused(table: object, d: DimensionReport | None, exc: Exception) -> dict[str, Any]:
    count("ReportsRefused")
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
