"""Runs in: scaler Lambda, broker Lambda, signals Lambda, stream reader
Lambda, workers (the user's own jobs), workstation (``ddb-capacity``).

Holds as the functions that make, end and raise them act on a table (the hold and its rules
are `core.holds`; the hold store `aws.store`): the table read, waiting while it is being
updated (`read_table`), a dimension's base (`base_of`), a scalable target's minimum set
(`set_min`; their rows: `core.outcomes.result_row`), the holds a function selects ended
(`end_holds`), and those expired (`restore_expired`: what the scaler's tick and the
``CapacityRequests`` restorer run). Below the functions' packages, so that the scaler's tick
ends expired holds without importing `requests`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from ..core.deadline import NONE, Deadline
from ..core.errors import shown
from ..core.holds import (
    CapacityRequestError,
    CapacityRequestFailed,
    CapacityRequestTimeout,
    HeldDimension,
    Hold,
    OnDemandForNow,
    TableGone,
    level,
)
from ..core.memory import Memory, reconcile
from ..core.names import DEFAULT_TABLE_QUOTA
from ..core.outcomes import Status, result_row
from ..core.plan import Change, Via
from ..core.policy import Action
from ..core.settings import ScalerConfig
from ..core.tables import Dimension, ManagedTable, ScalableTarget
from ..events import log_event
from . import actuator, table_calls
from .clients import Clients, lease_bound, make_clients, regional
from .counts import SHOWN_MALFORMED, malformed_ids
from .discovery import (
    NotManaged,
    OnDemand,
    TableUnavailable,
    describe_table,
    table_targets,
)
from .error_codes import describe_error, error_code
from .minimum import set_minimum
from .store import HoldStore, Lease, open_store, store_name


@dataclass(repr=False, eq=False)
class Context:
    """The clients and clock a hold's calls run with."""

    clients: Clients
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    poll_seconds: float

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)


def read_table(
    ctx: Context,
    table: str,
    index: str | None,
    deadline: float | None,
    *,
    quota: int = DEFAULT_TABLE_QUOTA,
) -> ManagedTable:
    """The table's current state, waiting (until ``deadline``; None: not at all) while it or
    the index is being updated. Raises CapacityRequestError for what no wait can fix.
    Without a scaler's configuration, a dimension without a scalable target is bounded by
    the table ``quota`` alone (its limits from 1 to it; its tags, untrusted, never fail
    the read: `table_limits.conflicting_tags`)."""
    config = ScalerConfig(tables=(table,), default_min=1, default_max=quota, table_quota=quota)
    targets: Any = None
    while True:
        now = ctx.now()
        try:
            # Every GSI's targets, not only the named index's: ending holds may touch any.
            raw = table_calls.describe(ctx.clients.dynamodb, table)
            targets = table_targets(ctx.clients.autoscaling, table, raw)
            managed = describe_table(
                ctx.clients.dynamodb, table, None, config, targets, now, description=raw
            )
            if index is not None and index not in managed.indexes:
                names = ", ".join(managed.indexes) or "no global secondary indexes"
                raise CapacityRequestError(f"index: got {shown(index)}; table {table} has {names}")
            if index is None or any(d.index == index for d in managed.dimensions):
                return managed
            busy = f"index {index} is not ACTIVE"
        except OnDemand:
            if targets:
                raise OnDemandForNow(f"table {table} is on-demand for now") from None
            raise TableGone(
                f"table: {table} is on-demand; capacity requests apply to provisioned tables"
            ) from None
        except TableUnavailable as exc:
            if deadline is not None:  # no wait ends it: a request is refused at once
                raise CapacityRequestError(f"table {table}: {exc}") from None
            busy = str(exc)  # an ending: the hold stays, counted (HoldsBusy)
        except NotManaged as exc:
            busy = str(exc)
        except ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                raise TableGone(
                    f"table: got {shown(table)}; no such table in this account and Region"
                ) from None
            raise CapacityRequestFailed(f"table {table}: {describe_error(exc)}") from None
        if deadline is None or ctx.clock() >= deadline:
            raise CapacityRequestTimeout(f"table {table}: still busy ({busy})")
        ctx.sleep(ctx.poll_seconds)


def base_of(d: Dimension, state: HeldDimension | None) -> tuple[Memory | None, int]:
    """A dimension's configured base, under a scalable target from the state store's memory
    reconciled with the target's minimum (returned too); without one, the store's base, or
    the provisioned capacity. A base the store holds that is not one is taken as none: the
    level the dimension has now, never lower (told where a write replaces it,
    `aws.store.base_replaced`)."""
    if d.target is not None:
        memory = reconcile(state, d.target.min_capacity)
        return memory, memory.base
    base = state.base if state is not None and state.base is not None else d.provisioned
    return None, base


def set_min(
    ctx: Context,
    lease: Lease,
    target: ScalableTarget,
    base: int,
    minimum: int,
    holds: list[Hold] | None = None,
    deadline: Deadline = NONE,
) -> None:
    """Set ``target``'s minimum under ``lease``, remembered in the state store
    (`aws.minimum.set_minimum`, nothing sent once ``deadline`` passed); an AWS
    refusal is a CapacityRequestFailed."""
    try:
        aas = ctx.clients.autoscaling
        set_minimum(lease, aas, target, base, minimum, holds=holds, deadline=deadline)
    except ClientError as exc:
        raise CapacityRequestFailed(
            f"{target.resource_id} {target.scalable_dimension}: setting MinCapacity "
            f"{minimum:,} failed: {describe_error(exc)}"
        ) from None


def end_holds(
    ctx: Context,
    store: HoldStore,
    table: str,
    ending: Callable[[Hold], bool],
    *,
    deadline: float,
    lower_direct: bool = True,
    held: list[HeldDimension] | None = None,
    stop: Deadline = NONE,
) -> list[dict[str, Any]]:
    """End the holds of ``table`` that ``ending`` selects (and drop malformed ones): each
    dimension they touched goes to what its remaining holds need, never below its base,
    under the dimension's lease. A hold whose dimension could not be lowered yet (a
    refused decrease, a table being updated) stays, and the next restore tries again.

    ``deadline`` is a time of the store's clock. ``lower_direct`` False leaves dimensions
    without a scalable target where they are (the scaler's policy lowers them with the
    traffic, spending one decrease, not two). On a table that was deleted or went
    on-demand every hold of the dimension is dropped (status ``dropped``): nothing is left
    to lower. ``stop``: a tick's deadline, after which no lease is waited for and no call
    made (DeadlinePassed is raised; the holds left wait for the next restore)."""
    rows: list[dict[str, Any]] = []
    for state in held if held is not None else store.table(table):
        if not state.malformed and not any(ending(h) for h in state.holds):
            continue
        index, dim = state.scope
        stop.check(f"the lease of {table} {index or 'table'} {dim}")
        until = min(deadline, store.clock() + stop.left())
        with store.lease(table, index, dim, deadline=until, sleep=ctx.sleep) as lease:
            fresh = store.get(table, index, dim)
            # read again under the lease: another ender may have ended them meanwhile
            if fresh is not None and (fresh.malformed or any(ending(h) for h in fresh.holds)):
                rows += _end_dimension(ctx, lease, table, fresh, ending, lower_direct, stop)
    return rows


def holds_level(holds: Sequence[Hold]) -> int:
    """The most the dimension's recorded ``holds`` raised it to, as far as the store tells:
    a hold recorded while others were active took their earliest baseline, so the holds
    active together share one; the highest level of those sets. (A chain of holds, each
    recorded while the one before was active, shares one baseline though its first and last
    were never active at once: its level is then more than any moment's.)"""
    sets: dict[int, list[Hold]] = {}
    for h in holds:
        sets.setdefault(h.baseline, []).append(h)
    return max((level(s) for s in sets.values()), default=0)


def _end_dimension(
    ctx: Context,
    lease: Lease,
    table: str,
    fresh: HeldDimension,
    ending: Callable[[Hold], bool],
    lower_direct: bool,
    stop: Deadline,
) -> list[dict[str, Any]]:
    """Under the dimension's lease, with ``fresh`` its item read under it: end the holds
    ``ending`` selects, and lower the dimension to what the others need. Returns its row: a
    ``busy`` one while its table or index is not ACTIVE (the holds stay; on-demand for a
    window, `OnDemandForNow.status`), a ``dropped`` one for an index gone (its holds forgotten)."""
    index, dim = fresh.scope
    stop.check(f"DescribeTable of {table}")
    try:
        managed = read_table(ctx, table, None, None)
    except CapacityRequestTimeout as exc:
        busy = getattr(exc, "status", Status.BUSY)
        return [result_row(table, index, dim, Via.NONE, 0, 0, busy, note=str(exc))]
    except TableGone as exc:
        lease.write(holds=[])
        return [result_row(table, index, dim, Via.NONE, 0, 0, Status.DROPPED, note=str(exc))]
    d = next((x for x in managed.dimensions if (x.index, x.dimension) == (index, dim)), None)
    now = ctx.now()
    gone = [h for h in fresh.holds if ending(h)]
    kept = [h for h in fresh.holds if not ending(h)]
    if d is None:  # the index is gone (forget its holds) or not ACTIVE (later)
        if index not in managed.indexes:
            lease.write(holds=[])
            note = f"index {index} is gone: its holds are forgotten"
            return [result_row(table, index, dim, Via.NONE, 0, 0, Status.DROPPED, note=note)]
        note = f"index {index} is not ACTIVE: its holds stay until it is"
        return [result_row(table, index, dim, Via.NONE, 0, 0, Status.BUSY, note=note)]
    current = d.target.min_capacity if d.target else d.provisioned
    memory, base = base_of(d, fresh)
    active = [h for h in kept if h.active(now)]
    # what the holds raised the dimension to: those expired and not yet restored included,
    # each set of them at its own earliest baseline (a raise of the scaler's on top is
    # beyond it, and kept)
    row, done = _lower(
        ctx,
        lease,
        d=d,
        base=base,
        current=current,
        held=max(base, holds_level(fresh.holds), level([*active, *gone])),
        to=max(base, level(active)),
        lower_direct=lower_direct,
        now=now,
        managed=managed,
        stop=stop,
    )
    if done and memory is not None and row["status"] != Status.APPLIED:
        # the minimum stays: what the library holds it at is what reconcile read
        lease.write(base, kept, set_to=memory.set_to, intent=None)
    elif done:
        lease.write(base, kept)
    return [row, *(_dropped_malformed(row, fresh) if done and fresh.malformed else [])]


def _dropped_malformed(row: Mapping[str, Any], fresh: HeldDimension) -> list[dict[str, Any]]:
    """The row of the malformed holds an ending's write left out (status ``dropped``,
    counted as ``HoldsDropped`` by whoever ends holds in a function: `counts.dropped`):
    what the store's bounds refuse to read (units over the largest hold, an expiry past
    the longest, a forged token) is never a level, and goes, told."""
    ids = ", ".join(malformed_ids(fresh))
    more = len(fresh.malformed) - SHOWN_MALFORMED
    more_text = f" and {more} more" if more > 0 else ""
    note = (
        f"{len(fresh.malformed)} malformed hold(s) dropped unread ({ids}{more_text}): outside "
        "the hold store's bounds (units, expiry, baseline, token)"
    )
    log_event(  # wherever it runs (a worker's release too); the functions count the row
        "holds-dropped",
        level=logging.WARNING,
        table=row["table"],
        index=row["index"],
        dimension=row["dimension"],
        note=note,
    )
    index, dim, level_now = row["index"], row["dimension"], row["to"]
    return [
        result_row(
            row["table"], index, dim, Via.NONE, level_now, level_now, Status.DROPPED, note=note
        )
    ]


def _lower(
    ctx: Context,
    lease: Lease,
    *,
    d: Dimension,
    base: int,
    current: int,
    held: int,
    to: int,
    lower_direct: bool,
    now: datetime,
    managed: ManagedTable,
    stop: Deadline,
) -> tuple[dict[str, Any], bool]:
    """Bring one dimension from ``current`` to ``to``; returns the row and whether the
    ended holds may be forgotten."""
    via = Via.SCALABLE_TARGET if d.target else Via.UPDATE_TABLE

    def row(new: int, status: Status, note: str | None = None) -> dict[str, Any]:
        return result_row(d.table, d.index, d.dimension, via, current, new, status, note=note)

    if current > held:
        # Raised beyond the holds since: that capacity is someone else's to lower (the
        # scaler remembers its own raise and restores it when calm).
        return row(current, Status.KEPT, "raised beyond the holds since"), True
    if current <= to:
        return row(current, Status.UNCHANGED), True
    if d.target is not None:
        set_min(ctx, lease, d.target, base, to, deadline=stop)
        return row(to, Status.APPLIED), True
    if not lower_direct:
        note = "the scaler lowers it as the traffic allows"
        return row(current, Status.LEFT_TO_POLICY, note), True
    if not d.ledger.can_decrease(now):
        note = "no decrease allowed now; tried again at the next restore"
        return row(to, Status.QUOTA_EXCEEDED, note), False
    # renewed right before the decrease, so still this ender's: a request that took the
    # lease while the calls above were slow may have recorded a hold they did not see; for
    # the decrease's two calls (DescribeTable, UpdateTable)
    lease.write(renew_for=2 * lease_bound(ctx.clients.dynamodb))
    change = Change(d, current, to, "capacity hold ended", Action.DECREASE, Via.UPDATE_TABLE)
    (outcome,) = actuator.apply(
        ctx.clients.dynamodb,
        ctx.clients.autoscaling,
        managed,
        [change],
        dry_run=False,
        now=now,
        deadline=stop,
    )
    return row(to, outcome.status, outcome.error), outcome.status == Status.APPLIED


def restore_expired(
    table: str,
    *,
    store: str | HoldStore | None = None,
    clients: Clients | None = None,
    clock: Callable[[], float] = time.time,
    lower_direct: bool = True,
    held: list[HeldDimension] | None = None,
    stop: Deadline = NONE,
    sleep: Callable[[float], None] = time.sleep,
) -> list[dict[str, Any]]:
    """End every expired (or malformed) hold on ``table``: what the scaler's tick (with
    ``lower_direct`` False, and its deadline ``stop``) and the ``CapacityRequests``
    restorer run. A dimension being updated is left for the next run. ``held`` is what the
    caller just read of the store; ``sleep`` waits for a dimension's lease (on ``clock``)."""
    if clients is None:  # the store named first: no Region is the next thing to say
        store = store if isinstance(store, HoldStore) else store_name(store)
        clients = regional(make_clients)
    ctx = Context(clients, clock, sleep, 0)
    holds_store = open_store(store, ctx.clients, clock)
    now = ctx.now()
    states = held if held is not None else holds_store.table(table)
    if not any(s.needs_restore(now) for s in states):
        return []
    return end_holds(
        ctx,
        holds_store,
        table,
        lambda h: not h.active(now),
        deadline=holds_store.clock() + 30,
        lower_direct=lower_direct,
        held=states,
        stop=stop,
    )
