"""Runs in: scaler Lambda, workstation (examples, benchmarks).

One tick of the throttle-aware scaler: discover, measure, decide, act, report.

`tick` (and `run_tick`, its summary as a dict) takes its clients and clock as
arguments, so the same tick runs in Lambda, in tests against a moto server, and in
benchmarks. Its steps: `prepare` (each table as the tick decides it),
`aws.metrics` (the window's series), `refusals` (tags refused),
`plans` (the autopilot's forecast), `witness` (the delivery witness of the dimensions
about to be lowered on minutes read as idle), the pure
`ddb_capacity_runtime.core.plan.plan_table` (the decisions), and
`aws.actuator` (acting).

Every table is its own fault domain: whatever goes wrong for one table (an AWS error, a
connection error, a bad override, anything raised) fails that table alone, and the others
are still decided and acted on. The calls a tick shares (tag discovery, scalable targets and
policies, GetMetricData) are retried by botocore, never past the tick's deadline
(`aws.retry.RetryWithin`); one that still fails makes the tick lower
nothing anywhere, while raises on the data it has still go ahead. Every failure is counted
(EMF ``Failures``) and reported in the summary, whose ``failures`` and ``shared_failures``
make the Lambda invocation fail after the tick has acted.

State: every piece of the tick's state is in the state store (`aws.store`),
read with one Scan a tick: the memory of each minimum it holds raised (reconciled with the
target's minimum: one someone else set becomes the configured one, never undone), the
autopilot's plans, and the capacity requests' holds. Tags are configuration only: 0.4's
state tags are moved into the store once, and removed (``state-moved-from-tags``).
A table's expired holds are ended first, and its active holds lift the dimension's min
(and max) to their level for the tick.

Reports through [`ddb_capacity_runtime.events`][]: a ``decision`` event per dimension, a
``hold-ended`` event per ended hold, ``raise-retried`` per raise left for the next tick,
``table-skipped``, ``table-failed``,
``shared-call-failed``, ``tag-refused``, ``target-held``, ``minimum-set-elsewhere``,
``state-moved-from-tags``, ``hot-key``, ``throttle-causes-unknown``, ``metrics-stalled``,
``witness-awaited``, ``target-value``,
``target-value-failed`` and ``target-not-owned`` (``own_target``) events, one Embedded Metric
Format record per table and one for the tick (dimension ``StateStore``: ``Failures``,
``SharedFailures``, ``TablesManaged``). A decided table's record (dimension ``TableName``)
carries ``Decisions``, ``ThrottleEventsSeen``, ``DecreasesLeft``, ``CapacityAtMax`` and
``Failures`` (and, in autopilot, ``ForecastsOn``: the dimensions whose
forecast earned its place and plans), and, only while what they count happens (each metric of
a table is a CloudWatch custom metric, billed for the hours it has data):
``RaisesWithinWarm`` (raises applied within their dimension's warm throughput, which
landed at once; a raise's ``decision`` event says ``within_warm`` too),
``KeyRangeThrottleEvents`` (throttles of a hot key, which capacity cannot fix: never raised
for; read from DynamoDB's metrics by cause for throttled dimensions only, see
`aws.metrics.fetch_causes`; a table whose causes cannot be read fails, and its throttles are
all taken for fixable), ``MetricsStalled`` (decreases held because they rested on minutes
without a datapoint, read as idle, while the dimension's delivery witness, its provisioned
capacity, here or in another replica's Region, had no datapoint within 20 minutes:
`core.delivery`; read for those dimensions alone, in one GetMetricData call a 500 in each
Region, see `witness`; a witness not reaching a short window yet, one not published yet
of a new table or first found missing within the hour (a new GSI, say), and one that
cannot be read, which fails its table, hold the decrease without being counted),
``PlansNotKept`` (plans the state store could not keep: a request held the dimension;
alarmed in autopilot),
``IgnoredTags`` (tags and stored items ignored), ``BadTargets`` (dimensions held because
their scalable target's minimum is above its maximum), ``RefusedTags`` (min or max tags not
obeyed because they would lower a limit below what the dimension consumes at its target
utilization; while that is not known such a tag is not obeyed either, and only logged),
``RefusedTunedTargets`` (tuned target values outside the nightly tuning's allowed targets,
not obeyed: the configured one is aimed at) and ``TargetsNotOwned`` (dimensions whose target
value the autopilot is to own, ``own_target``, with no target-tracking policy the scaler can
write back whole: left as they are). A table
that failed before it could be decided gets ``Failures`` = 1 alone; one skipped because it
is UPDATING, ``Updating`` = 1 alone; a decided one whose raise was left for the next tick
(``retry-next-tick``: another update in flight, the table UPDATING under it, its capacity
moved), ``Updating`` = 1 in its record: the alarm of a table that stays UPDATING covers a
table whose raises end so tick after tick.

When the account's scalable targets cannot be read, each table's own are read; a table
whose targets stay unknown is a failure of that table, and nothing of it changes that tick
(under a scalable target the scaler moves the target's minimum, never the table itself).

A tick keeps to its deadline (a batch's, or the one its handler gives it: the next tick
less a margin, within the function's timeout): before each lease wait and each
control-plane call that changes or re-reads a table it checks it, and a lease wait never
runs past it. What is left (a table not decided, a change not sent) is a failure of its
table, counted in the tick's ``DeadlinePassed`` (only while it happens), and decided by the
next tick.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from ..aws import actuator, metrics, table_calls
from ..aws.actuator import Outcome
from ..aws.clients import Clients
from ..aws.error_codes import describe_error
from ..aws.retry import RetryWithin, ThrottleCounter
from ..aws.store import HoldStore
from ..core.deadline import Deadline
from ..core.errors import LeasesNotGivenBack
from ..core.errors import TickFailed as TickFailed
from ..core.floorplan import FloorPlan
from ..core.holds import HeldDimension
from ..core.outcomes import Status
from ..core.plan import Change, Held
from ..core.policy import HOLD, Decision
from ..core.series import Key, Series, window
from ..core.settings import ScalerConfig
from ..core.tables import ManagedTable
from ..events import log_event
from .plans import keep_plans, new_plans, retarget, with_plans_in_force
from .reads import read_all, read_batch
from .refusals import refuse_tags
from .replicas import replicated
from .tick_report import TickSummary as TickSummary
from .tick_report import log_held, report_table, report_tick, tick_summary
from .tick_state import TickState as _Tick
from .witness import log_unwitnessed, planned_table, read_throttles, read_witnesses

if TYPE_CHECKING:
    from .shard import Batch

T = TypeVar("T")
DESCRIBE_THREADS = 16
"""DescribeTable calls in flight at once."""


def run_tick(
    config: ScalerConfig,
    clients: Clients,
    now: datetime,
    out: TextIO | None = None,
    *,
    threads: int = DESCRIBE_THREADS,
    store: HoldStore,
    batch: Batch | None = None,
    clock: Callable[[], float] = time.time,
    deadline: float | None = None,
) -> dict[str, Any]:
    """`tick`, its summary as a dict (`TickSummary.to_dict`)."""
    summary = tick(
        config,
        clients,
        now,
        out,
        threads=threads,
        store=store,
        batch=batch,
        clock=clock,
        deadline=deadline,
    )
    return summary.to_dict()


def tick(
    config: ScalerConfig,
    clients: Clients,
    now: datetime,
    out: TextIO | None = None,
    *,
    threads: int = DESCRIBE_THREADS,
    store: HoldStore,
    batch: Batch | None = None,
    clock: Callable[[], float] = time.time,
    found: Mapping[str, dict[str, str] | None] | None = None,
    deadline: float | None = None,
) -> TickSummary:
    """Discover, measure, decide and act once. Returns a summary. EMF records go to
    ``out`` (stdout by default); events to the log. ``store``: the state store, with the
    memory of every minimum the
    library holds raised, the autopilot's plans, and the capacity requests' holds, which
    the tick obeys and ends at expiry. With ``batch`` (`shard`), the batch's tables
    alone, their targets and state read for them. ``found``: the tables tag discovery found
    already this tick (it is not run again). Nothing is sent once ``clock()`` (a POSIX
    time) reaches ``deadline`` or the batch's, whichever is first."""
    ends = [x for x in (deadline, batch.deadline.timestamp() if batch else None) if x is not None]
    stop = Deadline(min(ends) if ends else None, clock)
    t = _Tick(config, clients, now.astimezone(UTC), out, store, stop)
    aws = _control_plane(clients)
    with ThrottleCounter(*aws) as throttles, RetryWithin(stop, *aws):
        t.config = _with_account_quota(t, batch.quotas if batch else None)
        if batch is None:
            tables, held = read_all(t, threads, found)
        else:
            tables, held = read_batch(t, batch, threads)
        dimensions = sum(len(table.dimensions) for table in tables)
        series = _measure(t, tables)
        tables = _refuse_tags(t, tables, series)
        fresh = new_plans(t, tables)
        t.set_floor(tables, batch.reserved if batch else None)
        series = read_throttles(t, tables, series, fresh)
        read_witnesses(t, tables, series, fresh)
        for event, failures, consequence in (
            ("shared-call-failed", t.shared_failures, "no decrease anywhere this tick"),
            (
                "shared-call-throttled",
                t.throttled,
                "what it reads is unknown this tick; other decisions go on",
            ),
        ):
            for failure in failures:
                log_event(event, level=logging.ERROR, error=failure, consequence=consequence)
        outcomes: list[Outcome] = []
        label = batch.label if batch is not None else "the tick"
        for table in tables:
            if stop.left() <= 0:
                t.fail_late(table.name, f"not decided: {label} reached its deadline")
                continue
            outcomes += _decide_and_act(t, table, series, fresh, held.get(table.name, []))
    report_tick(t, tables, throttles.count)
    return tick_summary(t, tables, dimensions, outcomes)


def _with_account_quota(t: _Tick, read: tuple[int, int] | None = None) -> ScalerConfig:
    """The tick's settings with the account's read and write quotas where above the
    configured one (`table_calls.tick_quota`; ``read``: as a sharded tick read them for its
    batches): each dimension is raised to its own at most, and ``table_quota`` (what tags
    and plans are read within) is the larger. A failed read keeps the configured quota:
    counted with the shared calls whose loss is confined (``SharedFailures``), other
    decisions go on."""
    quotas, failure = table_calls.tick_quota(t.clients.dynamodb, t.config.table_quota, read)
    t.throttled += [failure] if failure else []
    return replace(t.config, table_quota=max(quotas), quotas=quotas)


def _control_plane(clients: Clients) -> list[Any]:
    return [clients.dynamodb, clients.autoscaling, clients.cloudwatch, clients.tagging]


def _measure(t: _Tick, tables: list[ManagedTable]) -> dict[Key, Series]:
    """Every dimension's series over the tick's window (GetMetricData): its consumption
    alone (its throttles read where due: `read_throttles`), but a global table's whole; a
    batch that fails is a shared failure, and its dimensions' minutes unknown. The state
    store, which every tick reads, witnesses the minutes CloudWatch has delivered
    (`metrics.fetch`): idle tables alone are idle, not unknown; but for its newest minutes,
    whose datapoints may still be arriving (`ScalerConfig.arriving_minutes`): a dimension's
    minute among them is
    known only with a datapoint of its own."""
    start, end = window(t.now, t.config.history_minutes, t.config.metric_lag_minutes)
    keys = [d.key for table in tables for d in table.dimensions]
    if not keys:
        return {}
    errors: list[str] = []
    whole = bool(t.config.replicas)  # a global table's throttles add its replicas'
    series = metrics.fetch(
        t.clients.cloudwatch,
        keys,
        start,
        end,
        errors=errors,
        throttled=t.throttled,
        witness=t.store.name,
        arriving=t.config.arriving_minutes,
        throttles=whole,
    )
    t.shared_failures += errors
    if not whole:  # its throttles read where due (`read_throttles`)
        return series
    by_cause: dict[Key, str] = {}
    series = metrics.fetch_causes(
        t.clients.cloudwatch,
        series,
        start,
        end,
        errors=by_cause,
    )
    for key, error in by_cause.items():  # its throttles are all taken for fixable
        t.fail(key[0], f"{key[1] or 'table'} {key[2]}: {error}")
    return replicated(  # a global table's writes, as every replica's scaler reads them
        t.config, t.clients, tables, series, (start, end), t.fail, t.deadline, t.replica_idle
    )


def _refuse_tags(
    t: _Tick, tables: list[ManagedTable], series: Mapping[Key, Series]
) -> list[ManagedTable]:
    """``tables`` with the tags refused that would lower a limit below the need
    (`refusals.refuse_tags`); a table whose check fails is left alone, and fails."""
    checked = []
    for table in tables:
        try:
            checked.append(refuse_tags(t.config, table, series))
        except Exception as exc:  # the table is left alone this tick, and fails
            t.fail(table.name, f"checking its tags: {describe_error(exc)}")
    return checked


def _decide_and_act(
    t: _Tick,
    table: ManagedTable,
    series: Mapping[Key, Series],
    fresh: Mapping[Key, FloorPlan | None],
    held: list[HeldDimension],
) -> list[Outcome]:
    """Decide every dimension of ``table`` and apply the changes; log each decision and
    send the table's EMF record. Returns the outcomes of the changes sent. Raises nothing:
    what deciding, acting or reporting raises is a failure of ``table`` alone."""
    planned: list[tuple[Change, Decision]] = []
    held_back: list[Held] = []
    stalled = 0
    read = table
    try:
        # Decide, on what the tick read: this hour's plans, then every dimension's change.
        table = with_plans_in_force(t.config, table, fresh, t.now)
        planned, held_back, unwitnessed = planned_table(t, table, series)
        log_held(t, table.name, held_back)
        stalled = log_unwitnessed(t, table, unwitnessed)
        changes = [c for c, _ in planned if c.action != HOLD and c.new != c.old]
        # Act: the plans kept, the changes applied (each guarded by its own condition).
        if t.config.policy.autopilot and any(d.key in fresh for d in read.dimensions):
            failed = partial(t.fail, table.name)
            not_kept = keep_plans(t.store, read, fresh, held, t.config.dry_run, failed)
            table = replace(table, plans_not_kept=not_kept)
        try:
            applied = actuator.apply(
                t.clients.dynamodb,
                t.clients.autoscaling,
                table,
                changes,
                t.config.dry_run,
                t.now,
                store=t.store,
                deadline=t.deadline,
            )
        except LeasesNotGivenBack as exc:  # what was sent stands; a failure still
            applied = exc.outcomes
            t.fail(table.name, str(exc))
        t.late += sum(1 for o in applied if o.status == Status.DEADLINE)
        results = {id(o.change): o for o in applied}
        retarget(t, table)
    except Exception as exc:
        t.fail(table.name, describe_error(exc))
        results = {}
    try:  # what was sent stays in the summary, whatever reporting it raises
        report_table(t, table, planned, results, series, (len(held_back), stalled))
    except Exception as exc:
        t.fail(table.name, describe_error(exc))
    return list(results.values())
