"""Runs in: broker Lambda, workers (the user's own jobs), workstation
(``ddb-capacity``).

Ending capacity holds on release, by id (`release_hold`), and forgetting those of a table
no longer served (`drop_holds`). Ending the holds a function selects, and those expired, is
`aws.hold_table.end_holds` (the scaler's tick runs it too, without this package)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ..aws import table_calls
from ..aws.clients import Clients, make_clients, regional
from ..aws.discovery import table_targets
from ..aws.hold_table import Context, end_holds, read_table
from ..aws.store import HoldStore, open_store
from ..core.errors import shown
from ..core.hold_requests import DEFAULT_TIMEOUT
from ..core.holds import (
    CapacityRequestError,
    CapacityRequestFailed,
    CapacityRequestTimeout,
    HeldDimension,
    Hold,
    OnDemandForNow,
    level,
)
from ..core.names import is_table_name, resource_id, scalable_dimension
from ..core.outcomes import NOT_MADE, Status, reasons, result_row
from ..core.plan import Via

RELEASE_WAIT = timedelta(minutes=2)
"""How long a release waits for its table (or index) to be ACTIVE again when the decrease
found it being updated (another request's raise, another release of the same table), before
it tries once more."""
WAITED_FOR = frozenset({Status.BUSY, Status.RETRY_NEXT_TICK})
"""Statuses of a decrease a release waits for the table and tries again: it was being
updated."""
SECOND_TRY_LEASE_S = 60
"""How long a release's second try waits for a dimension's lease at least, past the release's
own deadline (a broker's release stays within its 15 minutes)."""
KEPT = NOT_MADE | WAITED_FOR
"""Statuses of a dimension a release left raised: its hold stays, with the capacity it raised,
until a restore ends it at its expiry."""


def drop_holds(store: HoldStore, table: str, why: str, *, deadline: float) -> list[dict[str, Any]]:
    """Forget the expired holds of ``table`` (and the malformed ones) without touching the
    table (what a broker does for a table that left its scope: it may no longer change it);
    its active holds stay until they expire, and go then. Only the holds go: a scaler's
    memory of the dimension (its base, the minimum set), or its plan, stays. The rows say
    each dimension's base and the level its holds had, for whoever restores it by hand, and
    (`_dropped_note`) what the store kept."""
    now = datetime.fromtimestamp(store.clock(), UTC)
    rows = []
    for state in store.table(table):
        if not state.needs_restore(now):
            continue
        index, dim = state.scope
        with store.lease(table, index, dim, deadline=deadline) as lease:
            fresh = store.get(table, index, dim)
            if fresh is None or not fresh.needs_restore(now):
                continue
            active = fresh.active(now)
            lease.write(holds=active)
            held = level(fresh.holds)
            base = fresh.base or 0
            note = _dropped_note(why, fresh, held, bool(active))
            rows.append(
                result_row(table, index, dim, Via.NONE, held, base, Status.DROPPED, note=note)
            )
    return rows


def _dropped_note(why: str, fresh: HeldDimension, held: int, active: bool) -> str:
    """What a dimension whose expired holds were dropped is left with: nothing lowered it;
    where the store remembers the minimum the holds set over its base, a scaler connected to
    the store lowers it to the base as its own raise; active holds stay until they expire."""
    note = f"{why}: its expired holds are forgotten without lowering it (held at {held:,})"
    if fresh.base is not None and fresh.set_to is not None and fresh.set_to != fresh.base:
        note += (
            f"; the store keeps its base ({fresh.base:,}) and the minimum set ({fresh.set_to:,}): "
            "a scaler connected to this hold store lowers the minimum to its base as its own "
            "raise, and without one it stays where the holds left it"
        )
    else:
        note += "; its capacity stays where the holds left it"
    return note + ("; its active holds stay until they expire" if active else "")


def release_rows(
    ctx: Context, store: HoldStore, table: str, hold_id: str, *, deadline: float
) -> list[dict[str, Any]]:
    """End the hold ``hold_id`` on ``table`` now (`end_holds`), and where its decrease found
    the table or index being updated, wait for it to be ACTIVE (`RELEASE_WAIT` at most) and
    try once more. Returns the rows of both tries, the second's in place of the first's.
    What is still not lowered after them (`KEPT`) is for `check_released` to raise."""

    def ending(h: Hold) -> bool:
        return h.id == hold_id

    rows = end_holds(ctx, store, table, ending, deadline=deadline)
    busy = [r for r in rows if r["status"] in WAITED_FOR]
    if not busy:
        return rows
    # a dimension of a table on-demand for a window (`aws.hold_table`): no decrease tried
    waiting = any(r["status"] == Status.RETRY_NEXT_TICK and r["via"] == Via.NONE for r in busy)
    unraised = _unraised(ctx, store, table, hold_id, deadline) if waiting else None
    if unraised is not None:
        tried = {(r["index"], r["dimension"]) for r in unraised}
        return [r for r in rows if (r["index"], r["dimension"]) not in tried] + unraised
    until = ctx.clock() + RELEASE_WAIT.total_seconds()
    for index in dict.fromkeys(r["index"] for r in busy):
        try:
            read_table(ctx, table, index, until)  # ACTIVE again, or the wait is over
        except CapacityRequestError:
            pass  # still busy, gone, or failing: the second try's row says which
    try:  # its own lease wait: the first try's may have used the release's deadline up
        until = max(deadline, store.clock() + SECOND_TRY_LEASE_S)
        again = end_holds(ctx, store, table, ending, deadline=until)
    except CapacityRequestTimeout:
        return rows  # a lease not had in time: what stays is the first try's (still busy)
    tried = {(r["index"], r["dimension"]) for r in again}
    return [r for r in rows if (r["index"], r["dimension"]) not in tried] + again


def _unraised(
    ctx: Context, store: HoldStore, table: str, hold_id: str, deadline: float
) -> list[dict[str, Any]] | None:
    """A release while ``table`` is on-demand for a window (None when it is not): the hold
    goes at once from each dimension whose scalable target's minimum the library holds at
    nothing above its base (a hold recorded during the window raised nothing; the window's
    end returns the table no lower than the holds left). Where a hold made before the
    window raised the minimum, it stays (``retry-next-tick``): the window's end restores
    that minimum, and the first restore after lowers it."""
    try:
        read_table(ctx, table, None, None)
        return None
    except OnDemandForNow:
        pass
    except CapacityRequestError:
        return None
    raw = table_calls.describe(ctx.clients.dynamodb, table)
    targets = table_targets(ctx.clients.autoscaling, table, raw)
    rows = []
    for state in store.table(table):
        if not any(h.id == hold_id for h in state.holds):
            continue
        index, dim = state.scope
        targeted = (resource_id(table, index), scalable_dimension(index, dim)) in targets
        with store.lease(table, index, dim, deadline=deadline, sleep=ctx.sleep) as lease:
            fresh = store.get(table, index, dim)
            if fresh is None:
                continue
            if targeted and fresh.set_to is None and fresh.intent is None:
                lease.write(holds=[h for h in fresh.holds if h.id != hold_id])
                status, note = Status.UNCHANGED, "on-demand for a window: nothing was raised"
            else:
                status, note = (
                    Status.RETRY_NEXT_TICK,
                    (
                        f"table {table} is on-demand for a window: the minimum the holds raised "
                        "returns with it, and the first restore after the window lowers it"
                    ),
                )
            rows.append(result_row(table, index, dim, Via.NONE, 0, 0, status, note=note))
    return rows


def check_released(rows: Sequence[Mapping[str, Any]], table: str, hold_id: str) -> None:
    """Raise CapacityRequestFailed if a release's ``rows`` left a dimension raised (`KEPT`):
    its holder must not take the capacity for given back (through a broker, the
    invocation fails: counted and alarmed as the broker's errors)."""
    kept = [r for r in rows if r.get("status") in KEPT]
    if kept:
        raise CapacityRequestFailed(
            f"release of hold {hold_id} on {table}: its decrease was not made "
            f"({shown(reasons(kept), 300)}); "
            "the hold stays, and the capacity it raised, until a restore ends it at its expiry"
        )


def release_hold(
    table: str,
    hold_id: str,
    *,
    token: str | None = None,
    store: str | HoldStore | None = None,
    broker: str | None = None,
    clients: Clients | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> list[dict[str, Any]]:
    """End the hold ``hold_id`` on ``table`` with its release ``token`` (what
    [`request_capacity`][ddb_capacity_runtime.requests.request_capacity] returned in
    ``CapacityHold.token``), as
    [`CapacityHold.release`][ddb_capacity_runtime.requests.CapacityHold.release] does, for a process
    that no longer has the handle. Raises CapacityRequestError if there is no such hold, or the
    token is not its own, and CapacityRequestFailed if a dimension it raised could not be
    lowered (the decrease quota spent, the table still being updated after `RELEASE_WAIT`):
    the hold then stays, with its capacity, until its expiry.

    Through a broker (``broker``; default ``$CAPACITY_BROKER``) unless ``store`` is given
    (both given is refused); a broker needs the token (without one, the release is refused
    before the broker is invoked). In direct mode (an administrator who may write the hold
    store anyway) the token is checked when given."""
    # imported here: the scaler ends holds (at expiry) but never releases one, and its
    # cold start need not compile the broker's client
    from .client import broker_name, direct_store, invoke_broker, one_way

    one_way(store, broker)
    if not is_table_name(table):
        raise CapacityRequestError(
            f"table: got {shown(table)}; expected a table name (3 to 255 of a-z A-Z 0-9 _ . -)"
        )
    via = broker_name(broker) if store is None else None
    if via is not None:
        if token is None:  # refused before the broker is invoked: it would refuse it too
            raise CapacityRequestError(
                "token: got None; a broker ends a hold only with its release token, the "
                "token its request returned (CapacityHold.token)"
            )
        answer = invoke_broker(
            via, {"action": "release", "table": table, "id": hold_id, "token": token}
        )
        return list(answer.get("changes", []))
    rows = release_direct(
        table,
        hold_id,
        token=token,
        store=direct_store(store, broker),
        clients=clients,
        clock=clock,
        sleep=sleep,
    )
    check_released(rows, table, hold_id)
    return rows


def release_direct(
    table: str,
    hold_id: str,
    *,
    token: str | None,
    store: str | HoldStore,
    clients: Clients | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> list[dict[str, Any]]:
    """`release_hold` in the hold store ``store`` (what a broker runs): its rows, whatever
    they say (`check_released` raises for the dimensions left raised)."""
    ctx = Context(clients or regional(make_clients), clock, sleep, 5.0)
    holds_store = open_store(store, ctx.clients, clock)
    mine = [h for s in holds_store.table(table) for h in s.holds if h.id == hold_id]
    if not mine or (token is not None and not all(h.opens_with(token) for h in mine)):
        raise CapacityRequestError(
            f"id and token: table {shown(table)} has no hold {shown(hold_id)} with that token"
        )
    deadline = holds_store.clock() + DEFAULT_TIMEOUT.total_seconds()
    return release_rows(ctx, holds_store, table, hold_id, deadline=deadline)
