"""Runs in: scaler Lambda, workstation (examples, benchmarks).

What a tick reports: each decision's ``decision`` event, the raises left for the next
tick, hot keys and decreases held back, each table's Embedded Metric Format record and
the tick's own, and its summary (`TickSummary`). Apart from `tick`, which ships compiled:
its bytecode zips to twice its source, and the scaler's asset keeps within its size
budget (``tests/test_assets.py``); compiling this module costs a cold start about 1 ms.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..aws.actuator import Outcome
from ..core.outcomes import DONE, NOT_MADE, Status, change_row
from ..core.plan import Change, Held
from ..core.policy import HOLD, INCREASE, Decision
from ..core.series import Key, Series
from ..core.tables import ManagedTable
from ..events import log_event
from .tick_state import TickState as _Tick


@dataclass(eq=False)
class TickSummary:
    """What one tick did: the tables and dimensions it managed, the changes made
    (``changes``) and not made (``failed``) as rows, the tables skipped, the tables that
    failed, and the shared calls that failed. `to_dict` is the scaler Lambda's
    answer and the fields of its ``tick-done`` event."""

    tables: int
    dimensions: int
    changes: list[dict[str, Any]]
    failed: list[dict[str, Any]]
    skipped: list[dict[str, str]]
    failures: list[dict[str, str]]
    shared_failures: list[str]
    dry_run: bool
    batches: int = 0
    """the batches a sharded tick sent (0: the tick ran here)"""

    def to_dict(self) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "tables": self.tables,
            "dimensions": self.dimensions,
            "changes": self.changes,
            "failed": self.failed,
            "skipped": self.skipped,
            "failures": self.failures,
            "shared_failures": self.shared_failures,
            "dry_run": self.dry_run,
        }


def report_table(
    t: _Tick,
    table: ManagedTable,
    planned: list[tuple[Change, Decision]],
    results: Mapping[int, Outcome],
    series: Mapping[Key, Series],
    held: tuple[int, int],
) -> None:
    """Log each decision of ``table`` (with its outcome, where one was sent) and send the
    table's EMF record. ``held``: its decreases the reservation held back, and those held
    because its metrics' delivery was not witnessed."""
    for change, _ in planned:
        _log_decision(t, table.name, change, results.get(id(change)))
    values = _table_metrics(table, planned, t.now, table.name in t.failures)
    if t.config.policy.autopilot:  # dimensions whose forecast earned its place (a plan)
        values["ForecastsOn"] = sum(1 for d in table.dimensions if d.plan is not None)
    occasional = {
        "RaisesWithinWarm": within_warm(results.values()),
        "KeyRangeThrottleEvents": _report_causes(table, series),
        "HeldByReservation": held[0],
        "MetricsStalled": held[1],
        # a raise not sent, as for a table found UPDATING: alarmed when it lasts
        "Updating": int(_raises_retried(results.values()) > 0),
    }
    # only while they happen (each a billed custom metric)
    values |= {name: value for name, value in occasional.items() if value}
    t.emf(values, table.name)


def log_held(t: _Tick, table: str, held: list[Held]) -> None:
    """A ``held-by-reservation`` event for each decrease of ``table`` the reservation floor
    held back (cut, or not made)."""
    for h in held:
        d = h.change.dimension
        log_event(
            "held-by-reservation",
            table=table,
            index=d.index,
            dimension=d.dimension,
            old=h.change.old,
            asked=h.asked,
            new=h.change.new,
            reserved=t.config.reservation.units(d.dimension),
        )


def _log_decision(t: _Tick, table: str, change: Change, outcome: Outcome | None) -> None:
    """The ``decision`` event of one change; a failed outcome is a failure of the table."""
    status = outcome.status if outcome else Status.HELD
    fields: dict[str, Any] = {
        **change_row(change, status, outcome.error if outcome else None),
        "action": change.action,
        "reason": change.reason,
        "throttles_seen": change.throttles_seen,
    }
    if change.action == INCREASE:
        fields["within_warm"] = change.dimension.within_warm(change.new)
    if t.config.policy.autopilot:  # the forecast's gate: a plan in force, or reacting alone
        fields["forecast"] = "on" if change.dimension.plan is not None else "off"
    log_event("decision", **fields)
    if outcome is not None and outcome.status in NOT_MADE:
        d = change.dimension
        t.fail(table, f"{d.index or 'table'} {d.dimension}: {outcome.status}: {outcome.error}")


def _raises_retried(outcomes: Iterable[Outcome]) -> int:
    """How many of ``outcomes`` (one table's) are raises left for the next tick
    (``retry-next-tick``: the table found UPDATING under them, another update in flight,
    the capacity or the minimum moved since it was read, the lease busy), each logged
    (``raise-retried``, a warning). One such tick is usual; a table whose raises end so
    tick after tick is throttled and the scaler cannot help: its record says ``Updating``
    = 1, so the alarm of a table that stays UPDATING covers it."""
    retried = [
        o for o in outcomes if o.status == Status.RETRY_NEXT_TICK and o.change.action == INCREASE
    ]
    for o in retried:
        log_event(
            "raise-retried",
            level=logging.WARNING,
            **change_row(o.change, o.status, o.error),
            consequence="not raised this tick: the next tick decides again; counted as "
            "Updating, alarmed when it lasts updating_for_ticks ticks",
        )
    return len(retried)


def within_warm(outcomes: Iterable[Outcome]) -> int:
    """How many of ``outcomes`` are raises applied within their dimension's warm throughput:
    they landed at once (its partitions already serve the level: no split, no minutes of
    UPDATING). A dimension whose warm throughput is not known counts as not within it."""
    return sum(
        1
        for o in outcomes
        if o.status == Status.APPLIED
        and o.change.action == INCREASE
        and o.change.dimension.within_warm(o.change.new)
    )


def _table_metrics(
    table: ManagedTable, planned: list[tuple[Change, Decision]], now: datetime, failed: bool
) -> dict[str, float]:
    return {
        "Decisions": sum(1 for c, _ in planned if c.action != HOLD),
        "ThrottleEventsSeen": sum(c.throttles_seen for c, _ in planned),
        "DecreasesLeft": min((d.ledger.remaining_today(now) for d in table.dimensions), default=0),
        "CapacityAtMax": sum(1 for d in table.dimensions if d.provisioned >= d.limits.max_capacity),
        "Failures": int(failed),
        # only while it happens: each metric of a table is a CloudWatch custom metric, billed
        # for the hours it has data
        **({"IgnoredTags": table.ignored_tags} if table.ignored_tags else {}),
        **({"PlansNotKept": table.plans_not_kept} if table.plans_not_kept else {}),
        **({"BadTargets": table.bad_targets} if table.bad_targets else {}),
        **({"RefusedTags": table.refused_tags} if table.refused_tags else {}),
        **({"RefusedTunedTargets": table.refused_tuned} if table.refused_tuned else {}),
        **({"TargetsNotOwned": table.targets_not_owned} if table.targets_not_owned else {}),
    }


def _report_causes(table: ManagedTable, series: Mapping[Key, Series]) -> float:
    """Log each dimension's throttles capacity cannot fix (``hot-key``) and those whose
    cause is unknown (``throttle-causes-unknown``); returns the table's key-range events."""
    key_range = 0.0
    for d in table.dimensions:
        s = series.get(d.key)
        if s is None:
            continue
        where: dict[str, Any] = {"table": table.name, "index": d.index, "dimension": d.dimension}
        events = sum(s.key_range)
        if events > 0:
            key_range += events
            log_event(
                "hot-key",
                level=logging.WARNING,
                **where,
                events=events,
                unfixable_events=sum(s.unfixable),
                consequence="not raised for: more capacity cannot serve a hot key; "
                "CloudWatch Contributor Insights (throttled keys) names it",
            )
        if s.causes_unknown:
            log_event(
                "throttle-causes-unknown",
                level=logging.WARNING,
                **where,
                minutes=s.causes_unknown,
                consequence="their throttles are taken for provisioned-throughput ones",
            )
    return key_range


def report_tick(t: _Tick, tables: list[ManagedTable], throttles: int) -> None:
    """Log each failed table (with ``Failures`` = 1 for one never decided: never prepared,
    or left undecided by the deadline) and send the tick's own EMF record (with
    ``ControlPlaneThrottles``, the throttled attempts of its AWS calls, only while there are
    any)."""
    for name, reasons in t.failures.items():
        log_event("table-failed", level=logging.ERROR, table=name, reason="; ".join(reasons))
        if name not in t.counted:
            t.emf({"Failures": 1}, name)
    t.emf(
        {
            "Failures": len(t.failures),
            "SharedFailures": len(t.shared_failures) + len(t.throttled),
            "TablesManaged": len(tables),
            **({"ControlPlaneThrottles": throttles} if throttles else {}),
            **({"DeadlinePassed": t.late} if t.late else {}),
        }
    )


def tick_summary(
    t: _Tick, tables: list[ManagedTable], dimensions: int, outcomes: list[Outcome]
) -> TickSummary:
    return TickSummary(
        tables=len(tables),
        dimensions=dimensions,
        changes=[change_row(o.change, o.status, o.error) for o in outcomes if o.status in DONE],
        failed=[change_row(o.change, o.status, o.error) for o in outcomes if o.status not in DONE],
        skipped=t.skipped,
        failures=[{"table": n, "reason": "; ".join(r)} for n, r in t.failures.items()],
        shared_failures=t.shared_failures + t.throttled,
        dry_run=t.config.dry_run,
    )
