"""Ending capacity holds: on release, by id, or at expiry."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..aws import actuator
from ..aws.clients import Clients, make_clients
from ..core.names import base_min_tag
from ..core.plan import UPDATE_TABLE, Change
from ..core.policy import DECREASE
from ..core.tables import ManagedTable
from .context import (
    Context,
    base_minimum,
    read_table,
    register_min,
    remember_min,
    result_row,
)
from .holds import (
    DEFAULT_TIMEOUT,
    CapacityRequestError,
    CapacityRequestTimeout,
    Hold,
    holds_in,
    level,
    needs_restore,
)


def end_holds(
    ctx: Context, managed: ManagedTable, ending: Callable[[Hold], bool], lower_direct: bool = True
) -> list[dict[str, Any]]:
    """End the holds ``ending`` selects (and remove malformed hold tags): lower each
    dimension they touched to what its remaining holds need. Tags are removed only for
    holds whose dimension was restored, so a refused decrease is tried again later.

    ``lower_direct`` False leaves dimensions without a scalable target where they are (the
    scaler's policy lowers them with the traffic, spending one decrease, not two)."""
    now = ctx.now()
    tags = managed.tags
    holds, malformed = holds_in(tags, now)
    ends = [h for h in holds if ending(h)]
    untag = list(malformed)
    rows: list[dict[str, Any]] = []
    decreases: list[Change] = []
    by_scope: dict[tuple[str | None, str], list[Hold]] = {}
    for h in ends:
        by_scope.setdefault(h.scope, []).append(h)
    dims = {(d.index, d.dimension): d for d in managed.dimensions}
    for scope, gone in by_scope.items():
        index, dim = scope
        remaining = [h for h in holds if h.scope == scope and h.active(now) and not ending(h)]
        base_key = base_min_tag(index, dim)
        keys = [h.key for h in gone] + ([base_key] if not remaining and base_key in tags else [])
        d = dims.get(scope)
        if d is None:  # an index that is gone (forget its holds) or not ACTIVE (later)
            if index not in managed.indexes:
                untag += keys
            continue
        current = d.target.min_capacity if d.target else d.provisioned
        base = base_minimum(tags, index, dim, current)
        held = max(base, level([*remaining, *gone]))
        to = max(base, level(remaining))
        via = "scalable-target" if d.target else UPDATE_TABLE
        if current > held:
            # Raised beyond the holds since: that capacity is someone else's to lower. A
            # target's base tag stays for the scaler, which restores it when calm.
            rows.append(
                result_row(
                    d.table,
                    index,
                    dim,
                    via,
                    current,
                    current,
                    "kept",
                    "raised beyond the holds since",
                )
            )
            untag += [h.key for h in gone]
            if not remaining and d.target is None and base_key in tags:
                untag.append(base_key)
        elif current <= to:
            rows.append(result_row(d.table, index, dim, via, current, current, "unchanged"))
            untag += keys
        elif d.target is not None:
            if remaining:  # still raised for the other holds: the memory follows the minimum
                remember_min(ctx, managed.arn, index, dim, base, to)
            register_min(ctx, d.target.resource_id, d.target.scalable_dimension, to)
            rows.append(result_row(d.table, index, dim, via, current, to, "applied"))
            untag += keys
        elif not lower_direct:
            rows.append(
                result_row(
                    d.table,
                    index,
                    dim,
                    via,
                    current,
                    current,
                    "left-to-policy",
                    "the scaler lowers it as the traffic allows",
                )
            )
            untag += keys
        elif d.ledger.can_decrease(now):
            decreases.append(Change(d, current, to, "capacity hold ended", DECREASE, UPDATE_TABLE))
            untag += [h.key for h in gone]
            if not remaining and base_key in tags:
                untag.append(base_key)
        else:
            rows.append(
                result_row(
                    d.table,
                    index,
                    dim,
                    via,
                    current,
                    to,
                    "quota-exceeded",
                    "no decrease allowed now; tried again at the next restore",
                )
            )
    for outcome in actuator.apply(
        ctx.clients.dynamodb, ctx.clients.autoscaling, managed, decreases, dry_run=False
    ):
        c = outcome.change
        rows.append(
            result_row(
                c.dimension.table,
                c.dimension.index,
                c.dimension.dimension,
                UPDATE_TABLE,
                c.old,
                c.new,
                outcome.status,
                outcome.error,
            )
        )
        if outcome.status != "applied":
            scope = (c.dimension.index, c.dimension.dimension)
            keep = {h.key for h in by_scope[scope]} | {base_min_tag(*scope)}
            untag = [k for k in untag if k not in keep]
    if untag:
        ctx.clients.dynamodb.untag_resource(ResourceArn=managed.arn, TagKeys=sorted(set(untag)))
    return rows


def restore_expired(
    table: str,
    *,
    clients: Clients | None = None,
    clock: Callable[[], float] = time.time,
    lower_direct: bool = True,
) -> list[dict[str, Any]]:
    """End every expired (or malformed) hold on ``table``: what the scaler's tick (with
    ``lower_direct`` False) and the ``CapacityRequests`` restorer run. A table being
    updated is left for the next run."""
    ctx = Context(clients or make_clients(), clock, time.sleep, 0)
    try:
        managed = read_table(ctx, table, None, None)
    except CapacityRequestTimeout:
        return []
    now = ctx.now()
    if not needs_restore(managed.tags, now):
        return []
    return end_holds(ctx, managed, lambda h: not h.active(now), lower_direct)


def release_hold(
    table: str,
    hold_id: str,
    *,
    clients: Clients | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> list[dict[str, Any]]:
    """End the hold ``hold_id`` on ``table`` (as :meth:`CapacityHold.release` does, for a
    process that no longer has the handle). Raises CapacityRequestError if there is none."""
    ctx = Context(clients or make_clients(), clock, sleep, 5.0)
    managed = read_table(ctx, table, None, clock() + DEFAULT_TIMEOUT.total_seconds())
    holds, _ = holds_in(managed.tags, ctx.now())
    ids = sorted({h.id for h in holds})
    if hold_id not in ids:
        raise CapacityRequestError(
            f"id: got {hold_id!r}; table {table} holds {', '.join(ids) if ids else 'nothing'}"
        )
    return end_holds(ctx, managed, lambda h: h.id == hold_id)
