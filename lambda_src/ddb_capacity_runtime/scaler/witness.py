"""Runs in: scaler Lambda, workstation (examples, benchmarks).

A table's plan in a tick, with the delivery witness (`core.delivery`): read, in one
GetMetricData call a 500 in this Region and in each Region of a global table's other
replicas (their writes are decided on too), for the dimensions the tick is about to lower
on minutes read as idle (`read_witnesses`; a global table's writes, also on minutes read as
idle in one replica's own series: `TickState.replica_idle`), and since when each one not
recent has been found so (`keep_missing`); each table's decreases held for want of it
(`planned_table`), and logged (`log_unwitnessed`). Before them, the throttle events of the
dimensions a tick needs them of, after a first decision on consumption alone
(`read_throttles`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime

from ..aws import metrics
from ..aws.error_codes import describe_error
from ..core.delivery import (
    WITNESS_MINUTES,
    WORST_FIRST,
    Verdict,
    decided_from,
    hold_unwitnessed,
    idle_decreases,
    idle_minutes,
    is_recent,
    missing_mark,
    missing_marks,
    missing_since,
    provisioned_newest,
    verdict,
)
from ..core.floorplan import FloorPlan
from ..core.outcomes import Status, change_row
from ..core.plan import Change, Held, floor_planned, plan_table, throttles_due
from ..core.policy import Decision
from ..core.series import MINUTE, Key, Series, window
from ..core.tables import ManagedTable
from ..events import log_event
from .plans import with_plans_in_force
from .replicas import region_cloudwatch
from .tick_state import TickState

WHY_HELD = {
    Verdict.AWAITED: "its witness's newest period ends before the minutes the decrease is "
    "decided on (a short scale-down window): held until a tick whose witness reaches them",
    Verdict.NEW: "DynamoDB has published none of its provisioned capacity since the table "
    "began to be provisioned, and the table was created or switched from on-demand, or a "
    "tick first found it missing (a new GSI, a new replica's Region, a table switched back "
    "from on-demand), within the hour: held until it does; counted as MetricsStalled once "
    "it is an hour late",
    Verdict.UNREAD: "its delivery witness could not be read: a failure of the table",
}
"""Why a decrease is held, not counted as MetricsStalled (``witness-awaited``)."""


def regions_of(t: TickState, key: Key) -> list[str | None]:
    """The Regions whose witness a decrease of ``key`` waits for: this one (None), and for
    a global table's writes each other replica's (their minutes are merged in)."""
    return [None, *(t.config.replica_regions(key[0]) if key[2] == "write" else ())]


def verdict_of(t: TickState, table: ManagedTable, key: Key) -> tuple[Verdict, str | None]:
    """The `Verdict` of ``key``'s witnesses read this tick, the worst of its Regions', and
    the Region it is of (None: this one). A witness not read is `Verdict.UNREAD`."""
    since = decided_from(t.now, t.config)
    found = [
        (
            verdict(
                newest_of(t, table, r, key),
                t.now,
                since,
                began_in(table, r),
                t.missing.get((r, key)),
            ),
            r,
        )
        if (r, key) in t.witnesses
        else (Verdict.UNREAD, r)
        for r in regions_of(t, key)
    ]
    return min(found, key=lambda f: WORST_FIRST.index(f[0]))


def newest_of(t: TickState, table: ManagedTable, region: str | None, key: Key) -> datetime | None:
    """The newest datapoint of ``key``'s witness read in ``region`` this tick, of the
    table's provisioning (`core.delivery.provisioned_newest`; another Region's as read:
    the table's times here say nothing of its replica there); None: none."""
    return provisioned_newest(t.witnesses.get((region, key)), began_in(table, region), t.now)


def began_in(table: ManagedTable, region: str | None) -> datetime | None:
    """When ``table`` last began to be provisioned, as its witness in ``region`` (None: this
    one) may know it: this Region's time; another's is not known (the table's times here say
    nothing of its replica there)."""
    return table.began if region is None else None


def planned_table(
    t: TickState, table: ManagedTable, series: Mapping[Key, Series]
) -> tuple[list[tuple[Change, Decision]], list[Held], list[Change]]:
    """Every dimension's change (`plan_table`): a decrease that rests on minutes read as
    idle only where the dimension's delivery witness was read, recent and within the
    minutes the decrease is decided on, in every Region it waits for
    (`core.delivery.hold_unwitnessed`), then every decrease cut at the reservation floor
    (`floor_planned`, which spends it). Returns the plan, the decreases the floor held
    back, and those held for want of a witness."""
    allowed = not t.shared_failures
    own = {d.key: series[d.key] for d in table.dimensions}

    def plan(read: Mapping[Key, Series]) -> list[tuple[Change, Decision]]:
        return plan_table(table, read, t.config, t.now, decreases_allowed=allowed, floor=t.floor)

    planned, stalled = hold_unwitnessed(
        plan,
        own,
        lambda key: verdict_of(t, table, key)[0] is Verdict.DELIVERED,
        t.replica_idle,
    )
    if t.floor is None:
        return planned, [], stalled
    planned, held_back = floor_planned(planned, t.floor, t.config.policy.min_saving_fraction)
    return planned, held_back, stalled


def read_witnesses(
    t: TickState,
    tables: list[ManagedTable],
    series: Mapping[Key, Series],
    fresh: Mapping[Key, FloorPlan | None],
) -> None:
    """Read the delivery witness (`metrics.fetch_witness`, in one GetMetricData call a 500)
    of each dimension the tick is about to lower on minutes read as idle, into
    ``t.witnesses``, in this Region and, for a global table's writes, in each Region of
    its other replicas: a table none of whose dimensions is, a steady one, costs nothing. A
    witness not read (its query failed or was not trusted, its Region not reached) is a
    failure of its table, whose decrease is held when the table is decided; every other
    table goes on."""
    if t.shared_failures:  # no decrease anywhere this tick
        return
    asked: list[Key] = []
    for table in tables:
        if not any(_rests_on_idle(t, series, d.key) for d in table.dimensions):
            continue
        try:
            decided = with_plans_in_force(t.config, table, fresh, t.now)
            planned = plan_table(decided, series, t.config, t.now, floor=t.floor)
        except Exception:  # noqa: S112 (the table fails when it is decided, as it raises again)
            continue
        asked += [c.dimension.key for c in idle_decreases(planned, series, t.replica_idle)]
    by_region: dict[str | None, list[Key]] = {}
    for key in asked:
        for region in regions_of(t, key):
            by_region.setdefault(region, []).append(key)
    for region, keys in sorted(by_region.items(), key=lambda r: r[0] or ""):
        _read_in(t, region, keys)
    keep_missing(t, tables)


def keep_missing(t: TickState, tables: list[ManagedTable]) -> None:
    """Into ``t.missing``, since when each witness read this tick without a recent datapoint
    (within `core.delivery.WITNESS_MINUTES`, of the table's provisioning: `newest_of`) has
    been found so, kept in the state store
    (`core.delivery.MISSING_MARK`): a marker written by the first tick that finds it so,
    removed by the first that finds it recent (with any unsound one, or one older than the
    table's provisioning). A witness that stays recent writes nothing, nor does a dry run
    (there, one never published is a stall unless its table is new). A write that fails is
    a failure of the table, and leaves since when unknown: a stall."""
    if t.markers is None:  # not read: the shared failure forbids every decrease
        return
    named = {table.name: table for table in tables}
    marks: dict[str, list[str]] = {}
    for name, what in t.markers:
        marks.setdefault(name, []).append(what)
    for region, key in list(t.witnesses):
        found = missing_marks(marks.get(key[0], ()), region, key)
        newest = newest_of(t, named[key[0]], region, key)
        recent = is_recent(newest, t.now)
        since = None if recent else missing_since(found, began_in(named[key[0]], region), t.now)
        if not t.config.dry_run:
            try:
                since = _mark_missing(t, region, key, found, since, newest, recent)
            except Exception as exc:
                where = f"replica {region} " if region else ""
                why = f"{where}{key[1] or 'table'} {key[2]}: state store, witness marker"
                t.fail(key[0], f"{why}: {describe_error(exc)}")
                continue
        if since is not None:
            t.missing[(region, key)] = since


def _mark_missing(
    t: TickState,
    region: str | None,
    key: Key,
    found: Mapping[str, datetime | None],
    since: datetime | None,
    newest: datetime | None,
    recent: bool,
) -> datetime | None:
    """Leave ``key``'s witness in ``region`` one marker, of ``since`` (`missing_since` of
    its markers ``found``), or a new one if none is sound, or none if it is ``recent``;
    returns since when it has been found missing (None: it is recent). A new one is of
    this tick, or, for a witness whose ``newest`` datapoint is in the read but not recent,
    of when that datapoint stopped being recent: a stall first read long after it began
    stays counted once its last datapoint leaves the read."""
    kept = None
    if since is not None:
        kept = next(what for what, at in found.items() if at == since)
    gone = [what for what in found if what != kept]
    new = not recent and since is None
    if (gone or new) and t.deadline.left() <= 0:
        return since  # past the deadline nothing is written: since when stays as read
    for what in gone:
        t.store.unmark(key[0], what)
    if not new:
        return since
    at = t.now if newest is None else min(t.now, newest + WITNESS_MINUTES * MINUTE)
    t.store.mark(key[0], missing_mark(region, key, at))
    return at


def _rests_on_idle(t: TickState, series: Mapping[Key, Series], key: Key) -> bool:
    """Whether a decrease of ``key`` would rest on a minute read as idle: of its series,
    or, a global table's writes, of one replica's own (`TickState.replica_idle`)."""
    return key in series and bool(idle_minutes(series[key]) or any(t.replica_idle.get(key, ())))


def _read_in(t: TickState, region: str | None, keys: list[Key]) -> None:
    """``keys``' witnesses in ``region`` (None: this one) into ``t.witnesses``; each one
    not read fails its table, naming the Region."""
    errors: dict[Key, str] = {}
    found: dict[Key, datetime | None] = {}
    try:
        cloudwatch = t.clients.cloudwatch
        if region is not None:
            cloudwatch = region_cloudwatch(t.clients, region, t.deadline)
        found = metrics.fetch_witness(cloudwatch, keys, t.now, errors=errors)
    except Exception as exc:  # the Region not reached: every key of it unread
        errors = dict.fromkeys(keys, f"delivery witness: {describe_error(exc)}")
    for key, newest in found.items():
        t.witnesses[(region, key)] = newest
    where = f"replica {region} " if region else ""
    for key, error in errors.items():
        t.fail(key[0], f"{where}{key[1] or 'table'} {key[2]}: {error}")


def log_unwitnessed(t: TickState, table: ManagedTable, stalled: list[Change]) -> int:
    """Log each decrease of ``table`` held for want of a delivery witness: a
    ``metrics-stalled`` warning where the witness had no datapoint within
    `core.delivery.WITNESS_MINUTES` (`Verdict.STALLED`), else ``witness-awaited`` (info).
    Returns how many are counted as ``MetricsStalled``: the stalled ones."""
    counted = 0
    for change in stalled:
        found, region = verdict_of(t, table, change.dimension.key)
        newest = newest_of(t, table, region, change.dimension.key)
        fields = {
            **change_row(change, Status.HELD, None),
            "region": region,
            "witness": newest.isoformat() if newest else None,
        }
        if found is not Verdict.STALLED:
            log_event("witness-awaited", **fields, verdict=found, reason=WHY_HELD[found])
            continue
        counted += 1
        log_event(
            "metrics-stalled",
            level=logging.WARNING,
            **fields,
            consequence="not lowered: its minutes without a datapoint may be CloudWatch's "
            "delay, not idle; counted as MetricsStalled",
        )
    return counted


def read_throttles(
    t: TickState,
    tables: list[ManagedTable],
    series: Mapping[Key, Series],
    fresh: Mapping[Key, FloorPlan | None],
) -> dict[Key, Series]:
    """``series`` (consumption alone) with the throttle events of the dimensions due read,
    and their causes where throttled (`metrics.fetch_causes`). A tick decides on
    consumption alone (throttles taken for 0), then reads, in a second GetMetricData call,
    the throttle events of the dimensions where they may matter (`core.plan.throttles_due`),
    and decides again with them known. A dimension whose throttles were not read is never
    lowered (`Series.throttles_read`); one whose read failed is a failure of its table. A
    global table's are read whole by `metrics.fetch` already (its replicas' throttles add to
    its own)."""
    if t.config.replicas or not series:
        return dict(series)
    assumed = {k: replace(s, throttles_read=True) for k, s in series.items()}
    due: list[Key] = []
    for table in tables:
        try:
            decided = with_plans_in_force(t.config, table, fresh, t.now)
            planned = plan_table(decided, assumed, t.config, t.now, floor=t.floor)
        except Exception:  # the table fails when it is decided; its throttles are read
            due += [d.key for d in table.dimensions]
            continue
        due += throttles_due(planned, assumed, t.now, t.config.tick_minutes)
    due = [k for k in due if not all(series[k].unknown or [False])]  # its read failed
    start, end = window(t.now, t.config.history_minutes, t.config.metric_lag_minutes)
    unread: dict[Key, str] = {}  # each such dimension never lowered this tick
    out = dict(series)
    if due:
        out = metrics.fetch_throttles(t.clients.cloudwatch, out, due, start, end, errors=unread)
    by_cause: dict[Key, str] = {}
    out = metrics.fetch_causes(t.clients.cloudwatch, out, start, end, errors=by_cause)
    for key, error in (unread | by_cause).items():  # unread, or its throttles all fixable
        t.fail(key[0], f"{key[1] or 'table'} {key[2]}: {error}")
    return out
