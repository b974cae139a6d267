"""Runs in: scaler Lambda (the scheduled function and the batch function).

The scaler's entry points: read the configuration, run one tick (or send its batches, or
run one batch of it), report."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO

from ..aws import discovery, table_calls
from ..aws.clients import Clients, botocore_session, make_clients
from ..aws.error_codes import describe_error
from ..aws.retry import RetryWithin, ThrottleCounter
from ..aws.store import HoldStore, open_store
from ..core.deadline import MARGIN, Deadline
from ..core.errors import BatchError
from ..core.holds import CapacityRequestError
from ..core.names import BATCH_QUEUE_ENV, DIMENSIONS, STORE_ENV
from ..core.reservation import not_covered
from ..core.settings import ScalerConfig
from ..core.tables import named_gsis, provisioned_units
from ..events import emf_record, emit_metrics, log_event
from .tick import DESCRIBE_THREADS, TickFailed, TickSummary, tick

if TYPE_CHECKING:
    from .shard import Batch


def lambda_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """The scheduled function's entry point: one tick (`coordinate`). A bad
    configuration fails the invocation with its message; so does a tick in which a table,
    a shared call or the sending of a batch failed (after it acted on the rest), so that
    the errors alarm and the dead-letter queue see it."""
    config = ScalerConfig.from_env(os.environ)
    queue_url = os.environ.get(BATCH_QUEUE_ENV) or None
    clients = make_clients(with_sqs=queue_url is not None, session=botocore_session())
    store = _store(clients)
    now = scheduled_time(event, datetime.now(UTC), config.tick_minutes)
    deadline = tick_deadline(now, config.tick_minutes, context, time.time())
    summary = coordinate(config, clients, now, store=store, queue_url=queue_url, deadline=deadline)
    complete(summary)
    return summary.to_dict()


def scheduled_time(event: object, now: datetime, tick_minutes: int) -> datetime:
    """The time EventBridge scheduled this run for (the event's ``time``), when it says one
    within the tick before ``now``; else ``now``. A run Lambda delayed keeps its tick's
    time, so its batches' deadline is its tick's, not later."""
    raw = event.get("time") if isinstance(event, Mapping) else None
    try:
        at = datetime.fromisoformat(raw.replace("Z", "+00:00")) if isinstance(raw, str) else None
    except (ValueError, OverflowError):
        at = None
    if at is None or at.tzinfo is None:
        return now
    return at if now - timedelta(minutes=tick_minutes) <= at <= now else now


def tick_deadline(now: datetime, tick_minutes: int, context: Any, clock: float) -> float:
    """The deadline of a tick run here (a POSIX time): the next tick less
    `core.deadline.MARGIN`, as a batch's, and no later than the function's timeout (its
    ``context``'s remaining time from ``clock``, the time now) less the same margin."""
    ends = [(now + timedelta(minutes=tick_minutes) - MARGIN).timestamp()]
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if callable(remaining):
        ends.append(clock + remaining() / 1000 - MARGIN.total_seconds())
    return min(ends)


def batch_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """The batch function's entry point: each SQS record's batch (`shard`), ticked on
    its tables alone. A record that is not a batch, a batch received after its deadline,
    and a batch in which anything failed fail the invocation, after every record was
    tried; each is counted (EMF ``Failures``; ``LateBatches`` for a late one)."""
    config = ScalerConfig.from_env(os.environ)
    clients = make_clients(session=botocore_session())
    store = _store(clients)
    records = event.get("Records") if isinstance(event, Mapping) else None
    if not isinstance(records, list) or not records:
        raise BatchError(f"batch function: the event has no SQS Records; got {event!r:.200}")
    failures = [
        failure
        for record in records
        if (failure := run_batch(config, clients, record, store=store)) is not None
    ]
    if failures:
        raise TickFailed(f"{len(failures)} of {len(records)} batch(es) failed: {failures}"[:4000])
    return {"batches": len(records)}


def run_batch(
    config: ScalerConfig,
    clients: Clients,
    record: object,
    *,
    store: HoldStore,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    out: TextIO | None = None,
    threads: int = DESCRIBE_THREADS,
) -> str | None:
    """One SQS record's batch, ticked; returns why it failed, or None. A record that is
    not a batch is refused, and a batch received after its deadline is not ticked (the
    next tick decides its tables): both are counted."""
    from .shard import parse_batch  # the batch function's alone

    body = record.get("body") if isinstance(record, Mapping) else None
    started = now()
    try:
        batch = parse_batch(body, started, config.tick_minutes)
    except BatchError as exc:
        log_event("batch-refused", level=logging.ERROR, reason=str(exc))
        _count(config, store, {"Failures": 1}, started, out)
        return str(exc)
    if started >= batch.deadline:
        reason = f"{batch.label}: received at {started:%H:%M:%SZ}, after its deadline"
        log_event("batch-late", level=logging.ERROR, reason=reason, tables=len(batch.tables))
        _count(config, store, {"Failures": 1, "LateBatches": 1}, started, out)
        return reason
    summary = tick(
        config,
        clients,
        batch.tick,  # the tick's own minute: its window, forecast slot and plans
        out,
        threads=threads,
        store=store,
        batch=batch,
        clock=lambda: now().timestamp(),
    )
    try:
        complete(summary)
    except TickFailed as exc:
        return f"{batch.label}: {exc}"
    return None


def coordinate(
    config: ScalerConfig,
    clients: Clients,
    now: datetime,
    *,
    store: HoldStore,
    queue_url: str | None,
    out: TextIO | None = None,
    threads: int = DESCRIBE_THREADS,
    deadline: float | None = None,
) -> TickSummary:
    """One tick: with a batch queue and more than ``shard_above_tables`` tables found,
    the tables in batches of ``tables_per_batch`` sent to the queue, each to be ticked by
    the batch function before the next tick (``now`` + the tick, less
    `core.deadline.MARGIN`); otherwise the tick, run here. A batch not sent
    is a shared failure of the tick (its tables wait for the next). A tick run here sends
    nothing after ``deadline`` (a POSIX time; None: none)."""

    here = partial(tick, config, clients, now, out, store=store, deadline=deadline)
    here = partial(here, threads=threads)  # a tick run here

    if queue_url is None:
        summary = here()
        if summary.tables > config.shard_above_tables:
            log_event(
                "shard-advised",
                level=logging.WARNING,
                tables=summary.tables,
                shard_above_tables=config.shard_above_tables,
                consequence="one invocation ticks every table; ThrottleAwareScaler"
                "(sharded=True) ticks them in batches",
            )
        return summary
    unsound: list[str] = []
    try:
        with RetryWithin(Deadline(deadline), clients.tagging):
            found = discovery.find_tables(clients.tagging, config, unsound)
    except Exception:  # the tick meets the failure again, and reports it as it always has
        return here()
    from .shard import send, shard  # a sharded tick's alone

    if len(found) <= config.shard_above_tables:
        # entries discovery passed over are met again by the tick's own discovery, and counted
        return here() if unsound else here(found=found)
    batches_end = now + timedelta(minutes=config.tick_minutes) - MARGIN
    quota, unread, throttles = _account_quota(config, clients, deadline)
    batches = shard(found, config.tables_per_batch, now, batches_end, quota)
    batches, unshared = _reservation_shares(config, clients, batches, deadline, threads)
    with RetryWithin(Deadline(deadline), clients.sqs):
        failed = send(clients.sqs, queue_url, batches)
    sent = len(batches) - len(failed)
    log_event("tick-sharded", tables=len(found), batches=len(batches), sent=sent)
    failed += [f"tag discovery: {entry}" for entry in unsound] + unread + unshared
    counts = {"TablesFound": len(found), "BatchesSent": sent, "SharedFailures": len(failed)}
    _count(config, store, counts | throttles, now, out)
    return TickSummary(len(found), 0, [], [], [], [], failed, config.dry_run, sent)


def _account_quota(
    config: ScalerConfig, clients: Clients, deadline: float | None
) -> tuple[tuple[int, int], list[str], dict[str, int]]:
    """The per-table read and write quotas a sharded tick's batches bound levels by, read
    once for all of them (DynamoDB throttles DescribeLimits past one call a minute); the
    failure of that read, if any (the configured quota then; logged, and counted by the
    caller); and its throttled attempts, as the tick's ``ControlPlaneThrottles`` (none: no
    count)."""
    with ThrottleCounter(clients.dynamodb) as throttles:
        with RetryWithin(Deadline(deadline), clients.dynamodb):
            quota, failure = table_calls.tick_quota(clients.dynamodb, config.table_quota)
    counted = {"ControlPlaneThrottles": throttles.count} if throttles.count else {}
    if failure is None:
        return quota, [], counted
    log_event(
        "shared-call-throttled",
        level=logging.ERROR,
        error=failure,
        consequence="every batch of this tick keeps the configured table quota",
    )
    return quota, [failure], counted


def _reservation_shares(
    config: ScalerConfig,
    clients: Clients,
    batches: list[Batch],
    deadline: float | None,
    threads: int,
) -> tuple[list[Batch], list[str]]:
    """``batches``, each with its share of the reservation (`shard.reserved_shares`: in
    proportion to the units of its tables that reserved capacity covers, read with one
    DescribeTable each), and the failure that left every batch the whole reservation
    instead: a table that could not be described (its units unknown)."""
    from .shard import reserved_shares

    reservation = config.reservation
    if not reservation:
        return batches, []
    try:
        with RetryWithin(Deadline(deadline), clients.dynamodb):
            with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
                covered = partial(_covered_units, clients.dynamodb, config)
                units = [list(pool.map(covered, b.tables)) for b in batches]
    except Exception as exc:
        failure = f"reservation shares: {describe_error(exc)}; every batch keeps the whole"
        log_event("shared-call-failed", level=logging.ERROR, error=failure)
        return batches, [failure]
    shares = {
        d: reserved_shares(reservation.units(d), [sum(t[d] for t in u) for u in units])
        for d in DIMENSIONS
    }
    return [
        replace(b, reserved=(shares["read"][n], shares["write"][n])) for n, b in enumerate(batches)
    ], []


def _covered_units(dynamodb: Any, config: ScalerConfig, name: str) -> dict[str, int]:
    """The read and write units of the table ``name`` and its GSIs that reserved capacity
    covers (`reservation.not_covered`), from its DescribeTable answer (untrusted: a
    capacity not sound raises, as in a tick)."""
    table = table_calls.describe(dynamodb, name)
    uncovered, _ = not_covered(table, bool(config.replica_regions(name)))
    gsis = named_gsis(f"DescribeTable {name}", table.get("GlobalSecondaryIndexes") or [])
    units = [provisioned_units(name, i, spec)[1] for i, spec in [(None, table), *gsis]]
    return {d: 0 if d in uncovered else sum(u[d] for u in units) for d in DIMENSIONS}


def _count(
    config: ScalerConfig, store: HoldStore, values: Mapping[str, float], at: datetime, out: Any
) -> None:
    """The scheduled invocation's (or a batch's) own record, for the deployment of its state
    store (`emf_record`)."""
    emit_metrics(emf_record(config.namespace, values, at.timestamp(), store=store.name), out)


def _store(clients: Clients) -> HoldStore:
    if not os.environ.get(STORE_ENV):
        raise CapacityRequestError(
            f"{STORE_ENV}: not set; the scaler keeps its state in the state store that "
            "ThrottleAwareScaler deploys (or CapacityRequests, once connected)"
        )
    return open_store(None, clients)


def complete(summary: TickSummary) -> None:
    """Log the tick's summary; raise `TickFailed` when anything in it failed."""
    log_event(
        "tick-done",
        tables=summary.tables,
        dimensions=summary.dimensions,
        batches=summary.batches,
        changes=summary.changes,
        failed=summary.failed,
        skipped=summary.skipped,
        dry_run=summary.dry_run,
        failures=summary.failures,
        shared_failures=summary.shared_failures,
    )
    if summary.failures or summary.shared_failures:
        failures: list[Any] = [*summary.failures, *summary.shared_failures]
        raise TickFailed(
            f"{len(summary.failures)} table(s) failed, {len(summary.shared_failures)} "
            f"shared call(s) failed: {failures}"[:4000]
        )
