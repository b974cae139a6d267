"""One tick of the throttle-aware scaler: discover, measure, decide, act, report.

``run_tick`` takes its clients and clock as arguments, so the same tick runs in Lambda, in
tests against a moto server, and in benchmarks. The decisions themselves are the pure
:func:`ddb_capacity_runtime.core.plan.plan_table`.

Every table is its own fault domain: whatever goes wrong for one table (an AWS error, a
connection error, a bad override, anything raised) fails that table alone, and the others
are still decided and acted on. The calls a tick shares (tag discovery, scalable targets and
policies, GetMetricData) are retried with backoff; one that still fails makes the tick lower
nothing anywhere, while raises on the data it has still go ahead. Every failure is counted
(EMF ``Failures``) and reported in the summary, whose ``failures`` and ``shared_failures``
make the Lambda invocation fail after the tick has acted.

State: every piece of the tick's state is in the state store (:mod:`..requests.store`),
read with one Scan a tick: the memory of each minimum it holds raised (reconciled with the
target's minimum: one someone else set becomes the configured one, never undone), the
autopilot's plans, and the capacity requests' holds. Tags are configuration only: 0.4's
state tags are moved into the store once, and removed (``state-moved-from-tags``).
A table's expired holds are ended first, and its active holds lift the dimension's min
(and max) to their level for the tick.

Reports through :mod:`ddb_capacity_runtime.events`: a ``decision`` event per dimension, a
``hold-ended`` event per ended hold, ``table-skipped``, ``table-failed``,
``shared-call-failed``, ``tag-refused``, ``target-held``, ``minimum-set-elsewhere`` and
``state-moved-from-tags`` events, one Embedded Metric
Format record per table and one for the tick (no dimension: ``Failures``,
``SharedFailures``, ``TablesManaged``). A decided table's record (dimension ``TableName``)
carries ``Decisions``, ``ThrottleEventsSeen``, ``DecreasesLeft``, ``CapacityAtMax``,
``Failures`` and ``IgnoredTags``, and, only while what they count happens (each metric of
a table is a CloudWatch custom metric, billed for the hours it has data):
``PlansNotKept`` (plans the state store could not keep: a request held the dimension),
``BadTargets`` (dimensions held because their scalable target's minimum is above its
maximum) and ``RefusedTags`` (min or max tags
not obeyed because they would lower a limit below what the dimension consumes at its
target utilization; while that is not known such a tag is not obeyed either, and only
logged). A table that failed before it could be
decided gets ``Failures`` = 1 alone; one skipped because it is UPDATING, ``Updating`` = 1
alone.

When the account's scalable targets cannot be read, each table's own are read; a table
whose targets stay unknown is a failure of that table, and nothing of it changes that tick
(under a scalable target the scaler moves the target's minimum, never the table itself).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, TextIO, TypeVar

from ..aws import actuator, discovery, metrics
from ..aws.actuator import Outcome
from ..aws.clients import Clients
from ..aws.discovery import NotManaged, TableUpdating
from ..aws.retry import describe_error, with_retries
from ..core.floorplan import STEP_MINUTES, FloorPlan
from ..core.forecast import HISTORY_DAYS, apply_plans, forecast_due, plan_floors
from ..core.memory import reconcile
from ..core.plan import Change, delivered, plan_table
from ..core.policy import HOLD, Decision, capacity_units
from ..core.series import MINUTE, Key, Series, step_start, window
from ..core.settings import Limits, ScalerConfig
from ..core.tables import ManagedTable, ScalableTarget
from ..events import emit_metrics, log_event
from ..requests import ending, holds
from ..requests.store import HeldDimension, HoldStore

T = TypeVar("T")
#: Outcomes counted as failures. ``retry-next-tick`` is not one: another update was in
#: flight, or the capacity moved since it was read, and the next tick decides again.
FAILED_STATUSES = frozenset({"failed", "invalid", "access-denied", "not-found", "quota-exceeded"})
#: DescribeTable calls in flight at once.
DESCRIBE_THREADS = 16


class TickFailed(RuntimeError):
    """The tick acted on every table it could, but some table or shared call failed."""


def _row(change: Change, status: str, error: str | None) -> dict[str, Any]:
    """What a decision event and the tick's summary say of one change."""
    d = change.dimension
    return {
        "table": d.table,
        "index": d.index,
        "dimension": d.dimension,
        "via": change.via,
        "from": change.old,
        "to": change.new,
        "status": status,
        **({"error": error} if error else {}),
    }


def _emf(
    config: ScalerConfig, now: datetime, values: Mapping[str, float], table: str | None = None
) -> dict[str, Any]:
    """One Embedded Metric Format record: per table (dimension ``TableName``) or per tick."""
    return {
        "_aws": {
            "Timestamp": int(now.timestamp() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": config.namespace,
                    "Dimensions": [["TableName"]] if table else [[]],
                    "Metrics": [{"Name": n, "Unit": "Count"} for n in values],
                }
            ],
        },
        **({"TableName": table} if table else {}),
        **values,
    }


def _table_metrics(
    table: ManagedTable, planned: list[tuple[Change, Decision]], now: datetime, failed: bool
) -> dict[str, float]:
    return {
        "Decisions": sum(1 for c, _ in planned if c.action != HOLD),
        "ThrottleEventsSeen": sum(c.throttles_seen for c, _ in planned),
        "DecreasesLeft": min((d.ledger.remaining_today(now) for d in table.dimensions), default=0),
        "CapacityAtMax": sum(1 for d in table.dimensions if d.provisioned >= d.limits.max_capacity),
        "Failures": int(failed),
        "IgnoredTags": table.ignored_tags,
        # only while it happens: each metric of a table is a CloudWatch custom metric, billed
        # for the hours it has data
        **({"PlansNotKept": table.plans_not_kept} if table.plans_not_kept else {}),
        **({"BadTargets": table.bad_targets} if table.bad_targets else {}),
        **({"RefusedTags": table.refused_tags} if table.refused_tags else {}),
    }


class TargetsUnknown(Exception):
    """Whether the table's dimensions are under scalable targets is not known this tick."""


def _own_targets(
    clients: Clients, name: str, description: Mapping[str, Any]
) -> dict[tuple[str, str], ScalableTarget]:
    """The scalable targets of one table and its GSIs, read for it alone (the account's
    listing failed). Raises TargetsUnknown when they cannot be read: nothing of the table
    may change then, since under a target the scaler must move the target's minimum, never
    the table itself."""
    try:
        return discovery.scalable_targets(
            clients.autoscaling, discovery.table_resource_ids(name, description)
        )
    except Exception as exc:
        raise TargetsUnknown(
            f"scalable targets not read ({describe_error(exc)}): whether its dimensions are "
            "under auto scaling is not known, so none of them is changed this tick"
        ) from exc


def _prepare(
    name: str,
    tags: dict[str, str] | None,
    config: ScalerConfig,
    clients: Clients,
    targets: Mapping[tuple[str, str], ScalableTarget] | None,
    now: datetime,
    store: HoldStore,
    held: list[HeldDimension],
    marked: bool | None,
) -> ManagedTable:
    """One table as the tick will decide it: described with the state store's memory of
    each minimum, 0.4's state tags moved into the store, minimums set by someone else made
    the configured ones, expired holds ended, active holds applied. ``targets`` None: the
    account's scalable targets could not be read, and the table's own are read for it.
    Raises NotManaged (skipped) or anything else (a failure of this table: TargetsUnknown
    when its targets cannot be read either)."""
    description = None
    if targets is None:
        description = clients.dynamodb.describe_table(TableName=name)["Table"]
        discovery.check_managed(description)
        targets = _own_targets(clients, name, description)
    table = discovery.describe_table(
        clients.dynamodb, name, tags, config, targets, now, description=description, held=held
    )
    ignored = table.ignored_tags + sum(len(s.malformed) for s in held)
    if not config.dry_run:
        moved, legacy_ignored = _move_legacy_state(clients, store, table, held, marked)
        ignored += legacy_ignored
        if moved:
            held = store.table(name)
            table = discovery.describe_table(
                clients.dynamodb, name, None, config, targets, now, held=held
            )
        changed = _adopt_minimums_set_elsewhere(clients, store, table)
        if any(s.needs_restore(now) for s in held):
            for ended in ending.restore_expired(
                name,
                store=store,
                clients=clients,
                clock=now.timestamp,
                lower_direct=False,
                held=held,
            ):
                log_event("hold-ended", **ended)
            # ending holds moved minimums: the account's listing is stale for this table
            fresh = clients.dynamodb.describe_table(TableName=name)["Table"]
            targets = _own_targets(clients, name, fresh)
            changed = True
        if changed:
            held = store.table(name)
            table = discovery.describe_table(
                clients.dynamodb, name, None, config, targets, now, held=held
            )
    return replace(holds.lift(table, held, now), ignored_tags=ignored)


#: The marker of a table whose state a 0.5 tick has taken in hand (:meth:`HoldStore.mark`).
STATE_MARKER = "state-in-store"


def _move_legacy_state(
    clients: Clients,
    store: HoldStore,
    table: ManagedTable,
    held: list[HeldDimension],
    marked: bool | None,
) -> tuple[bool, int]:
    """The first time a tick sees a table (``marked`` False), move 0.4's state tags into
    the state store: a remembered minimum becomes the dimension's memory unless the store
    has one already; plans are made anew each hour, so an old plan tag is only removed.
    The tags go (one UntagResource), then the table is marked, so a failure on the way
    makes the next tick try again. State tags found on a marked table are not state (tags
    are configuration, and anyone allowed to tag could write them): removed, and counted
    as ignored. ``marked`` None (the store could not be read): nothing is done. Returns
    whether the store changed, and how many tags were ignored."""
    if marked is None or (marked and not table.legacy_tags):
        return False, 0
    moved: list[dict[str, Any]] = []
    if not marked:
        in_store = {h.scope for h in held if h.base is not None}
        for scope, memory in sorted(table.legacy_memories.items(), key=str):
            if scope in in_store:
                continue
            index, dim = scope
            with store.lease(table.name, index, dim, deadline=store.clock() + 5) as lease:
                fresh = store.get(table.name, index, dim)
                if fresh is not None and fresh.base is not None:
                    continue
                raised = memory.set_to if memory.set_to not in (None, memory.base) else None
                lease.write(memory.base, set_to=raised)
                moved.append({"index": index, "dimension": dim, "base": memory.base, "set": raised})
    else:
        log_event(
            "tag-ignored",
            level=logging.WARNING,
            table=table.name,
            keys=table.legacy_tags,
            reason="state tags on a table whose state is in the state store already: not "
            "read, and removed",
        )
    if table.legacy_tags:
        clients.dynamodb.untag_resource(ResourceArn=table.arn, TagKeys=table.legacy_tags)
        log_event("state-moved-from-tags", table=table.name, moved=moved, removed=table.legacy_tags)
    if not marked:
        store.mark(table.name, STATE_MARKER)
    return bool(moved), len(table.legacy_tags) if marked else 0


def _adopt_minimums_set_elsewhere(clients: Clients, store: HoldStore, table: ManagedTable) -> bool:
    """Record, for each dimension whose minimum someone else set (its memory says
    ``changed_elsewhere``), that minimum as its configured one: the library forgets what
    it had set, so it never undoes the change nor reads it as its own later. Under the
    dimension's lease, the item and the target's minimum are read again first: what the
    tick listed may be stale. Returns whether anything changed."""
    changed = False
    for d in table.dimensions:
        if d.target is None or d.memory is None or not d.memory.changed_elsewhere:
            continue
        with store.lease(d.table, d.index, d.dimension, deadline=store.clock() + 5) as lease:
            fresh = store.get(d.table, d.index, d.dimension)
            minimum = discovery.current_minimum(clients.autoscaling, d.target)
            if fresh is None or minimum is None:
                continue
            memory = reconcile(fresh, minimum)
            if memory.changed_elsewhere:
                lease.write(memory.base, set_to=None, intent=None)
                changed = True
    return changed


def _without_bad_targets(table: ManagedTable) -> ManagedTable:
    """``table`` without the dimensions whose scalable target reports a minimum above its
    maximum (counted in ``table.bad_targets``): they are held, neither decided nor acted on,
    until the target is fixed."""
    if not table.bad_targets:
        return table
    kept = [d for d in table.dimensions if d.target is None or not d.target.inverted]
    return replace(table, dimensions=kept)


def _need(series: Series | None, target: float) -> tuple[float | None, int | None]:
    """The dimension's peak consumption (units per second) over the tick's window, and the
    capacity it takes at ``target``; (None, None) when not every minute up to the newest
    delivered one is known (:func:`.plan.delivered`: as for a decrease)."""
    if series is None:
        return None, None
    known, stopped = delivered(series)
    if known.unknown_minutes or stopped or not known.consumed:
        return None, None
    peak = max(known.consumed)
    return peak, capacity_units(peak / target)


def _refuse_tags(
    config: ScalerConfig, table: ManagedTable, series: Mapping[Key, Series]
) -> ManagedTable:
    """``table`` with the min and max tags that would lower a dimension's limit below what
    it consumes at its target utilization (or while that is not known) refused for that
    dimension (:meth:`.ScalerConfig.refuse_lowering_tags`): the dimension keeps the limits
    it would have without them (and any hold's lift). Each refusal is logged
    (``tag-refused``) and the tags refused are counted (``table.refused_tags``). A dimension
    under a scalable target has the target's limits, not the tags'."""
    if not any(not name.endswith("target") for name in table.tag_limits):
        return table
    dims = []
    refused_keys: set[str] = set()
    for d in table.dimensions:
        if d.target is not None:
            dims.append(d)
            continue
        target = d.limits.target_utilization
        peak, need = _need(series.get(d.key), target)
        kept, refused = config.refuse_lowering_tags(table.name, table.tag_limits, d.dimension, need)
        if refused:
            # only ever raised: a hold's lift on top of the tags' limits stays
            d = replace(
                d,
                limits=Limits(
                    max(d.limits.min_capacity, kept.min_capacity),
                    max(d.limits.max_capacity, kept.max_capacity),
                    d.limits.target_utilization,
                ),
            )
        for r in refused:
            if need is not None:  # known to hurt: counted (and alarmed); unknown: held back
                refused_keys.add(r.key)
            now_limit = getattr(d.limits, f"{r.limit}_capacity")
            consumption = (
                "its consumption is not known this tick, and unknown data never lowers capacity"
                if need is None
                else f"it consumes up to {peak:.1f} units/s, {need} units at its "
                f"{target:.0%} target"
            )
            log_event(
                "tag-refused",
                level=logging.WARNING if need is not None else logging.INFO,
                table=table.name,
                index=d.index,
                dimension=d.dimension,
                key=r.key,
                value=r.value,
                consumed=None if peak is None else round(peak, 3),
                needs=need,
                reason=f"{r.key}={r.value} would lower the dimension's {r.limit} below what "
                f"it needs: {consumption}. Not obeyed: the {r.limit} stays {now_limit}",
            )
        dims.append(d)
    return replace(table, dimensions=dims, refused_tags=len(refused_keys))


def _forecast_plans(
    config: ScalerConfig,
    clients: Clients,
    tables: list[ManagedTable],
    now: datetime,
    shared: Callable[..., Any],
    sleep: Callable[[float], None],
) -> dict[Key, FloorPlan | None]:
    """The autopilot's forecast of ``tables`` (those whose forecast tick of the hour this
    is, :func:`.forecast.forecast_due`): 14 days of 5-minute history of every dimension
    (one GetMetricData query each, 25 a call), and its plan of floors, or None where the
    forecast is not good enough. Each forecast is logged. A failed read is a shared
    failure: no new plan (the plans kept in the state store still hold until they end), and no
    decrease anywhere this tick."""
    dims = [d for t in tables for d in t.dimensions]
    if not dims:
        return {}
    end = step_start(now - config.metric_lag_minutes * MINUTE, STEP_MINUTES)
    history = shared(
        "forecast history",
        lambda: metrics.fetch_history(
            clients.cloudwatch,
            [d.key for d in dims],
            end,
            HISTORY_DAYS,
            STEP_MINUTES,
            call=lambda f: with_retries(f, sleep=sleep),
        ),
        {},
        retried=True,  # each page is retried on its own; the read is not retried again
    )
    plans: dict[Key, FloorPlan | None] = {}
    for d in dims:
        if d.key not in history:
            continue
        plan, f = plan_floors(
            history[d.key],
            _minute(end),
            _minute(now),
            d.limits.target_utilization or config.policy.target_utilization,
            d.limits.min_capacity,
            d.limits.max_capacity,
            minute_of_day=now.hour * 60 + now.minute,
        )
        log_event(
            "forecast",
            table=d.table,
            index=d.index,
            dimension=d.dimension,
            season=f.season,
            error=None if f.error is None else round(f.error, 4),
            peak=f.peak,
            floor=max(plan.floors) if plan else None,
            plan=plan.value() if plan else None,
            reason=f.reason,
        )
        plans[d.key] = plan
    return plans


def _fail(failures: dict[str, list[str]], table: str, reason: str) -> None:
    failures.setdefault(table, []).append(reason)


def _minute(moment: datetime) -> int:
    """The plans' clock: whole minutes since the epoch."""
    return int(moment.timestamp() // 60)


def _keep_plans(
    store: HoldStore,
    table: ManagedTable,
    fresh: Mapping[Key, FloorPlan | None],
    held: list[HeldDimension],
    dry_run: bool,
    failed: Callable[[str], None],
) -> ManagedTable:
    """Keep this hour's plans in the state store, and the table with them: every dimension
    the forecast reached gets its new plan or loses its old one, and so do the plans kept
    for dimensions no longer managed (an index gone). Nothing changes for a table the
    forecast did not reach this tick (``fresh`` has none of its dimensions).

    A plan is kept with a conditional write made only while nobody holds the dimension's
    lease; one that could not be kept is obeyed this tick, and counted
    (``table.plans_not_kept``): its dimension reacts alone until the next hour. A store
    write that fails is reported to ``failed`` (a failure of the table), and the tick goes
    on with the plans: raises this tick need no store write."""
    if not any(d.key in fresh for d in table.dimensions):
        return table
    dims, not_kept = [], 0
    for d in table.dimensions:
        if d.key in fresh:
            plan = fresh[d.key]
            if not dry_run and plan != d.plan:
                value = plan.value() if plan is not None else None
                try:
                    if not store.keep_plan(d.table, d.index, d.dimension, value):
                        not_kept += 1
                except Exception as exc:
                    failed(f"keeping the forecast's plans: {describe_error(exc)}")
                    not_kept += 1
            d = replace(d, plan=plan)
        dims.append(d)
    for state in held:  # an index not ACTIVE now keeps its plan; one gone loses it
        gone = state.index is not None and state.index not in table.indexes
        if state.plan is not None and gone and not dry_run:
            try:
                store.keep_plan(state.table, state.index, state.dimension, None)
            except Exception as exc:
                failed(f"forgetting a plan: {describe_error(exc)}")
    if not_kept:
        log_event(
            "plans-not-kept",
            level=logging.WARNING,
            table=table.name,
            not_kept=not_kept,
            reason="a capacity request or restore held the dimension's state; these plans "
            "are obeyed this tick only, and the next hour plans again",
        )
    return replace(table, dimensions=dims, plans_not_kept=not_kept)


def run_tick(
    config: ScalerConfig,
    clients: Clients,
    now: datetime,
    out: TextIO | None = None,
    *,
    sleep: Callable[[float], None] = time.sleep,
    threads: int = DESCRIBE_THREADS,
    store: HoldStore,
) -> dict[str, Any]:
    """Discover, measure, decide and act once. Returns a summary. EMF records go to
    ``out`` (stdout by default); events to the log. ``sleep`` is the backoff between tries
    of a shared call. ``store``: the state store, with the memory of every minimum the
    library holds raised, the autopilot's plans, and the capacity requests' holds, which
    the tick obeys and ends at expiry."""
    now = now.astimezone(UTC)
    shared_failures: list[str] = []

    def shared(what: str, call: Callable[[], T], default: T, *, retried: bool = False) -> T:
        """``call``, retried with backoff unless it retries its own parts (``retried``);
        a failure is recorded and ``default`` returned."""
        try:
            return call() if retried else with_retries(call, sleep=sleep)
        except Exception as exc:
            shared_failures.append(f"{what}: {describe_error(exc)}")
            return default

    # None when the account's listing fails: each table's own targets are read instead,
    # and a table whose targets stay unknown is left as it is (never sent UpdateTable)
    targets: Mapping[tuple[str, str], ScalableTarget] | None = shared(
        "scalable targets", lambda: discovery.scalable_targets(clients.autoscaling), None
    )
    explicit: dict[str, dict[str, str] | None] = dict.fromkeys(config.tables)
    found = shared(
        "tag discovery", lambda: discovery.find_tables(clients.tagging, config), explicit
    )

    # unread, no memory is known: a minimum is then never moved (its memory could not be
    # checked), and the shared failure forbids decreases
    scanned = shared("state store", store.scan, None)
    held: dict[str, list[HeldDimension]] = scanned[0] if scanned else {}

    failures: dict[str, list[str]] = {}
    skipped: list[dict[str, str]] = []
    updating: list[str] = []  # skipped while UPDATING: counted, so one stuck there alarms
    tables: list[ManagedTable] = []
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        prepared = {
            name: pool.submit(
                _prepare,
                name,
                tags,
                config,
                clients,
                targets,
                now,
                store,
                held.get(name, []),
                None if scanned is None else (name, STATE_MARKER) in scanned[1],
            )
            for name, tags in found.items()
        }
        for name, future in prepared.items():
            try:
                tables.append(_without_bad_targets(future.result()))
            except NotManaged as exc:
                skipped.append({"table": name, "reason": str(exc)})
                if isinstance(exc, TableUpdating):
                    updating.append(name)
            except Exception as exc:
                failures.setdefault(name, []).append(describe_error(exc))
    for entry in skipped:
        log_event("table-skipped", table=entry["table"], reason=entry["reason"])
    for name in updating:  # only while it happens (a billed custom metric)
        emit_metrics(_emf(config, now, {"Updating": 1}, name), out)

    start, end = window(now, config.history_minutes, config.metric_lag_minutes)
    keys = [d.key for t in tables for d in t.dimensions]
    metric_errors: list[str] = []
    series = (
        metrics.fetch(
            clients.cloudwatch,
            keys,
            start,
            end,
            errors=metric_errors,
            call=lambda f: with_retries(f, sleep=sleep),
        )
        if keys
        else {}
    )
    shared_failures += metric_errors
    checked = []
    for table in tables:
        try:
            checked.append(_refuse_tags(config, table, series))
        except Exception as exc:  # the table is left alone this tick, and fails
            _fail(failures, table.name, f"checking its tags: {describe_error(exc)}")
    tables = checked
    fresh: dict[Key, FloorPlan | None] = {}
    if config.policy.autopilot:
        due = [t for t in tables if forecast_due(t.name, now.minute, config.tick_minutes)]
        if due:
            fresh = _forecast_plans(config, clients, due, now, shared, sleep)
    for failure in shared_failures:
        log_event(
            "shared-call-failed",
            level=logging.ERROR,
            error=failure,
            consequence="no decrease anywhere this tick",
        )

    outcomes: list[Outcome] = []
    for table in tables:
        planned: list[tuple[Change, Decision]] = []
        try:
            if config.policy.autopilot:
                table = _keep_plans(
                    store,
                    table,
                    fresh,
                    held.get(table.name, []),
                    config.dry_run,
                    partial(_fail, failures, table.name),
                )
                plans = {d.key: d.plan for d in table.dimensions if d.plan is not None}
                table = apply_plans(table, plans, _minute(now))
            planned = plan_table(table, series, config, now, decreases_allowed=not shared_failures)
            changes = [c for c, _ in planned if c.action != HOLD and c.new != c.old]
            results = {
                id(o.change): o
                for o in actuator.apply(
                    clients.dynamodb,
                    clients.autoscaling,
                    table,
                    changes,
                    config.dry_run,
                    now,
                    store=store,
                )
            }
        except Exception as exc:
            failures.setdefault(table.name, []).append(describe_error(exc))
            results = {}
        for change, _ in planned:
            outcome = results.get(id(change))
            fields: dict[str, Any] = {
                **_row(
                    change,
                    outcome.status if outcome else "held",
                    outcome.error if outcome else None,
                ),
                "action": change.action,
                "reason": change.reason,
                "throttles_seen": change.throttles_seen,
            }
            log_event("decision", **fields)
            if outcome is not None and outcome.status in FAILED_STATUSES:
                d = change.dimension
                failures.setdefault(table.name, []).append(
                    f"{d.index or 'table'} {d.dimension}: {outcome.status}: {outcome.error}"
                )
        outcomes.extend(results.values())
        emit_metrics(
            _emf(
                config, now, _table_metrics(table, planned, now, table.name in failures), table.name
            ),
            out,
        )
    managed = {t.name for t in tables}
    for name, reasons in failures.items():
        log_event("table-failed", level=logging.ERROR, table=name, reason="; ".join(reasons))
        if name not in managed:
            emit_metrics(_emf(config, now, {"Failures": 1}, name), out)
    emit_metrics(
        _emf(
            config,
            now,
            {
                "Failures": len(failures),
                "SharedFailures": len(shared_failures),
                "TablesManaged": len(tables),
            },
        ),
        out,
    )

    def row(o: Outcome) -> dict[str, Any]:
        return _row(o.change, o.status, o.error)

    return {
        "tables": len(tables),
        "dimensions": len(keys),
        "changes": [row(o) for o in outcomes if o.status in ("applied", "dry-run")],
        "failed": [row(o) for o in outcomes if o.status not in ("applied", "dry-run")],
        "skipped": skipped,
        "failures": [{"table": n, "reason": "; ".join(r)} for n, r in failures.items()],
        "shared_failures": shared_failures,
        "dry_run": config.dry_run,
    }
