"""Runs in: broker Lambda, workers (the user's own jobs), workstation (``ddb-capacity
request``).

Making a capacity request: record the hold, raise, wait until ACTIVE."""

from __future__ import annotations

import functools
import logging
import math
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ..aws import actuator, table_calls
from ..aws.clients import Clients, make_clients, regional
from ..aws.counts import dropped
from ..aws.discovery import table_targets
from ..aws.error_codes import describe_error
from ..aws.hold_table import Context, base_of, end_holds, read_table, set_min
from ..aws.raise_counts import malformed_dropped
from ..aws.store import MAX_HOLDS, HoldStore, Lease, open_store, store_quota
from ..core.errors import HoldStoreMissing, LevelUnconfirmed, shown
from ..core.hold_requests import DEFAULT_HOLD, DEFAULT_TIMEOUT, held_raise, new_token
from ..core.holds import (
    CapacityRequestError,
    CapacityRequestFailed,
    CapacityRequestTimeout,
    HeldDimension,
    Hold,
    OnDemandForNow,
    level,
    token_digest,
)
from ..core.memory import reconcile
from ..core.names import (
    DIMENSIONS,
    MAX_TABLE_QUOTA,
    is_table_name,
    resource_id,
    scalable_dimension,
    scope_label,
)
from ..core.outcomes import Status, reasons, result_row
from ..core.plan import Change, Via
from ..core.policy import Action
from ..core.tables import Dimension, ManagedTable, ScalableTarget
from ..core.validators import is_whole
from ..events import log_event
from .client import BROKER_MAX_WAIT, broker_name, direct_store, invoke_broker, one_way
from .context import current_traffic, provisioned_of, still_has
from .ending import KEPT, check_released, release_rows
from .validate import validate_request


@dataclass
class CapacityHold:
    """What [`request_capacity`][ddb_capacity_runtime.requests.request_capacity] returns: the hold,
    the capacity now guaranteed per dimension (``levels``), and what was changed. Release it early
    with [`release`][ddb_capacity_runtime.requests.CapacityHold.release], or use it as a context
    manager; otherwise it ends at ``expires``. ``token`` is the hold's release token: only its
    holder can end the hold early."""

    table: str
    index: str | None
    id: str
    expires: datetime
    holds: list[Hold]
    token: str = field(default="", repr=False)
    levels: dict[str, int] = field(default_factory=dict)
    changes: list[dict[str, Any]] = field(default_factory=list)
    released: bool = False
    _ctx: Context | None = field(default=None, repr=False)
    _store: HoldStore | None = field(default=None, repr=False)
    _broker: str | None = field(default=None, repr=False)

    def release(self) -> list[dict[str, Any]]:
        """End the hold now: lower to what the other holds need. Idempotent once it
        succeeded. A table or index being updated is waited for (two minutes at most) and
        tried once more; a dimension still not lowered after that (the table still being
        updated, the day's decreases spent) raises
        [`CapacityRequestFailed`][ddb_capacity_runtime.requests.CapacityRequestFailed]: the
        hold then stays, with its capacity, until its expiry or a later ``release()``."""
        if self.released:
            return []
        if self._broker is not None:
            answer = invoke_broker(
                self._broker,
                {"action": "release", "table": self.table, "id": self.id, "token": self.token},
            )
            self.released = True
            return list(answer.get("changes", []))
        if self._ctx is None or self._store is None:
            return []
        rows = self._ended(wait=True)
        check_released(rows, self.table, self.id)
        self.released = True
        return rows

    def _ended(self, *, wait: bool) -> list[dict[str, Any]]:
        """Direct mode: end the hold in its store and return the rows; ``wait``: as a
        release does (`ending.release_rows`), else tried once (a withdrawal: its request's
        caller waited long enough)."""
        assert self._ctx is not None and self._store is not None
        ctx, store, ident = self._ctx, self._store, self.id
        deadline = store.clock() + DEFAULT_TIMEOUT.total_seconds()
        if wait:
            return release_rows(ctx, store, self.table, ident, deadline=deadline)
        return end_holds(ctx, store, self.table, lambda h: h.id == ident, deadline=deadline)

    def as_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "index": self.index,
            "id": self.id,
            "token": self.token,
            "expires": self.expires.isoformat(),
            "levels": self.levels,
            "holds": {h.dimension: {"units": h.units, "baseline": h.baseline} for h in self.holds},
            "changes": self.changes,
            "released": self.released,
        }

    @classmethod
    def from_json(cls, data: object, broker: str) -> CapacityHold:
        """The hold a broker made, from its answer (`as_json`; untrusted: each field is
        checked, and an answer that is not a hold is a CapacityRequestError naming it)."""
        try:
            return cls._parsed(data, broker)
        except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
            raise CapacityRequestError(
                f"broker {broker}: an answer that is not a hold ({shown(str(exc))}): {shown(data)}"
            ) from None

    @classmethod
    def _parsed(cls, data: object, broker: str) -> CapacityHold:
        if not isinstance(data, Mapping):
            raise TypeError("not an object")
        expires = datetime.fromisoformat(str(data["expires"]))
        index, holds, levels = data.get("index"), data["holds"], data["levels"]
        if expires.tzinfo is None:
            raise ValueError(f"expires {data['expires']!r} names no time zone")
        if not (is_table_name(data["table"]) and (index is None or is_table_name(index))):
            raise ValueError("table or index is not a table or index name")
        if not (isinstance(holds, Mapping) and isinstance(levels, Mapping)):
            raise TypeError("holds and levels are not objects")
        made = [
            Hold(str(data["id"]), index, dim, h["units"], expires, h["baseline"])
            for dim, h in holds.items()
        ]
        for h in made:
            if h.dimension not in DIMENSIONS or not (
                is_whole(h.units, 0, MAX_TABLE_QUOTA) and is_whole(h.baseline, 0, MAX_TABLE_QUOTA)
            ):
                raise ValueError(f"the {h.dimension!r} hold is not whole units within the quota")
        if not all(k in DIMENSIONS and is_whole(v, 0, MAX_TABLE_QUOTA) for k, v in levels.items()):
            raise ValueError("levels are not whole units within the quota")
        changes = data.get("changes", [])
        return cls(
            table=data["table"],
            index=index,
            id=str(data["id"]),
            token=str(data["token"]),
            expires=expires,
            holds=made,
            levels=dict(levels),
            changes=list(changes) if isinstance(changes, list) else [],
            _broker=broker,
        )

    def __enter__(self) -> CapacityHold:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        """Release the hold. When the work itself raised, a release that fails too is
        logged (``hold-release-failed``; through a broker, its failed invocation is counted
        and alarmed there) and the work's own error is the one raised: a failed release
        never stands in for it."""
        if exc_type is None:
            self.release()
            return
        try:
            self.release()
        except Exception:
            log_event(
                "hold-release-failed",
                level=logging.ERROR,
                exc_info=True,
                table=self.table,
                hold_id=self.id,
            )


def request_capacity(
    table: str,
    *,
    read: int = 0,
    write: int = 0,
    index: str | None = None,
    hold: timedelta = DEFAULT_HOLD,
    timeout: timedelta = DEFAULT_TIMEOUT,
    store: str | HoldStore | None = None,
    broker: str | None = None,
    clients: Clients | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    poll_seconds: float = 5.0,
) -> CapacityHold:
    """Raise ``table`` (or its GSI ``index``) by ``read`` / ``write`` units per second over
    the current traffic, wait until it is ACTIVE with that capacity, and hold it for
    ``hold``. Returns a [`CapacityHold`][ddb_capacity_runtime.requests.CapacityHold].

    Through a broker (``broker``, a function name; default ``$CAPACITY_BROKER``), the
    request is one Lambda invocation, which is all a worker granted with
    ``CapacityRequests.grant_request`` may do. Without one (direct mode, for an
    administrator with the rights the broker has), the hold is recorded in the hold store
    ``store`` (a table name; default ``$CAPACITY_HOLDS_TABLE``) and the table raised here.
    ``store`` given overrides ``$CAPACITY_BROKER``; ``broker`` and ``store`` both given is
    refused. On a table on-demand for a window, it is served at once, its hold recorded and
    nothing raised (`_hold_for_window`).

    Raises [`CapacityRequestError`][ddb_capacity_runtime.requests.CapacityRequestError] for bad
    input or a table that cannot take the request, and
    [`CapacityRequestTimeout`][ddb_capacity_runtime.requests.CapacityRequestTimeout] when
    ``timeout`` passes first; in both cases the hold is withdrawn again (when that fails
    too, or AWS failed a call the request needed: `CapacityRequestFailed`), but for a
    timeout once the hold is recorded at a level the table, still being updated or not
    read, did not confirm: that hold is kept until it expires (the message says so).
    """
    one_way(store, broker)
    via = broker_name(broker) if store is None else None
    # direct: up to the hold store's table quota; through a broker: the broker checks it
    quota = store_quota(store) if via is None else MAX_TABLE_QUOTA
    wanted = validate_request(table, read, write, index, hold, timeout, quota)
    if via is not None:
        return _through_broker(via, table, index, read, write, hold, timeout)
    store = direct_store(store, broker)
    ctx = Context(clients or regional(make_clients), clock, sleep, poll_seconds)
    holds_store = open_store(store, ctx.clients, clock)
    _check_bounds(holds_store, hold, wanted)
    deadline = clock() + timeout.total_seconds()
    expires = datetime.fromtimestamp(math.ceil((ctx.now() + hold).timestamp()), UTC)
    ident, token = uuid.uuid4().hex[:12], new_token()
    handle = CapacityHold(table, index, ident, expires, [], token, _ctx=ctx, _store=holds_store)
    try:  # the table and index exist, and are ACTIVE; the traffic on them now
        managed = read_table(ctx, table, index, deadline)
    except OnDemandForNow:  # served at once: its holds kept for when it is provisioned again
        _hold_for_window(ctx, holds_store, handle, wanted, deadline)
        return handle
    traffic = current_traffic(ctx, table, index, wanted, provisioned_of(managed, index))
    _make_holds(ctx, holds_store, handle, wanted, traffic, deadline)
    return handle


def _hold_for_window(
    ctx: Context,
    store: HoldStore,
    handle: CapacityHold,
    wanted: Mapping[str, int],
    deadline: float,
) -> None:
    """A request on a table on-demand for a window: its hold recorded on each dimension
    ``wanted`` that has a scalable target, over the traffic now (where CloudWatch is not
    trusted, over the target's minimum at least), and nothing raised (`_hold_unraised`)."""
    targets = _window_targets(ctx, handle.table, handle.index, wanted)
    floors = {dim: t.min_capacity for dim, t in targets.items()}
    traffic = current_traffic(ctx, handle.table, handle.index, targets, floors)
    held = {dim: wanted[dim] for dim in targets}
    unraised = functools.partial(_hold_unraised, targets=targets)
    _make_holds(ctx, store, handle, held, traffic, deadline, unraised)


def _window_targets(
    ctx: Context, table: str, index: str | None, wanted: Mapping[str, int]
) -> dict[str, ScalableTarget]:
    """The scalable target of each dimension ``wanted`` of a table on-demand for a window
    that has one (a dimension without one is served, and held, by nothing: no hold)."""
    raw = table_calls.describe(ctx.clients.dynamodb, table)
    targets = table_targets(ctx.clients.autoscaling, table, raw)
    found = {
        dim: targets.get((resource_id(table, index), scalable_dimension(index, dim)))
        for dim in wanted
    }
    return {dim: t for dim, t in found.items() if t is not None}


def _hold_unraised(
    ctx: Context,
    store: HoldStore,
    table: str,
    new: Hold,
    deadline: float,
    *,
    targets: Mapping[str, ScalableTarget],
) -> tuple[int, list[dict[str, Any]], Hold]:
    """Record ``new`` on a table on-demand for a window, under its dimension's lease, and
    raise nothing: the window's end brings the table back no lower than its holds' level,
    and sets the target's minimum to it (`hybrid.held`). Returns that level, no changes, and
    the hold as recorded."""
    index, dim = new.scope
    target = targets[dim]
    with store.lease(table, index, dim, deadline=deadline, sleep=ctx.sleep) as lease:
        state = store.get(table, index, dim)
        recorded = _recorded(store, list(state.holds) if state else [], new, ctx.now())
        memory = reconcile(state, target.min_capacity)
        held = level(h for h in recorded if h.active(ctx.now()))
        want = held_raise(memory.base, held, 0, target.min_capacity, target.max_capacity)
        if want.over_max:
            raise _over_max(dim, want.want, index, target.max_capacity)
        malformed_dropped(state, "capacity request")
        lease.write(memory.base, recorded, set_to=memory.set_to, intent=None)
    return want.want, [], next(h for h in recorded if h.id == new.id)


def _make_holds(
    ctx: Context,
    store: HoldStore,
    handle: CapacityHold,
    wanted: Mapping[str, int],
    traffic: Mapping[str, int],
    deadline: float,
    hold: Callable[..., tuple[int, list[dict[str, Any]], Hold]] | None = None,
) -> None:
    """Record ``handle``'s hold on each dimension ``wanted`` and raise it (``hold``, default
    `_hold`; `_hold_unraised` on a table on-demand for a window); on any
    failure, withdraw it again, but where the level reached could not be confirmed by the
    timeout (`core.errors.LevelUnconfirmed`: a timeout, the holds kept). A failure that leaves
    a hold behind, withdrawing it having failed too, is a `CapacityRequestFailed` that says
    so (never the refusal or the timeout alone: the capacity stays raised until the hold's
    expiry)."""
    try:
        for dim, units in wanted.items():
            new = Hold(
                handle.id,
                handle.index,
                dim,
                units,
                handle.expires,
                traffic[dim],
                token_digest(handle.token),
            )
            handle.levels[dim], rows, recorded = (hold or _hold)(
                ctx, store, handle.table, new, deadline
            )
            handle.holds.append(recorded)
            handle.changes += rows
    except HoldStoreMissing:
        raise  # no such store: no hold was recorded in it, nothing raised under one
    except LevelUnconfirmed as exc:  # the level may stand, or be landing: the holds stay
        raise LevelUnconfirmed(
            f"{exc}; its hold {handle.id} is kept until it expires "
            f"({handle.expires:%Y-%m-%d %H:%M:%S} UTC), not withdrawn"
        ) from None
    except BaseException as exc:
        left = _withdraw(handle)
        if left is not None and isinstance(exc, CapacityRequestError):
            raise CapacityRequestFailed(f"{exc}; {left}") from exc  # a hold left: alarmed
        raise


def _through_broker(
    via: str,
    table: str,
    index: str | None,
    read: int,
    write: int,
    hold: timedelta,
    timeout: timedelta,
) -> CapacityHold:
    """The request made by the broker ``via``: one invocation."""
    if timeout > BROKER_MAX_WAIT:
        raise CapacityRequestError(
            f"timeout: got {timeout}; through a broker a request waits at most {BROKER_MAX_WAIT}"
        )
    answer = invoke_broker(
        via,
        {
            "action": "request",
            "table": table,
            "index": index,
            "read": read,
            "write": write,
            "hold_minutes": math.ceil(hold.total_seconds() / 60),  # never shorter than asked
            "timeout_seconds": int(timeout.total_seconds()),
        },
    )
    return CapacityHold.from_json(answer.get("hold") or {}, via)


def _check_bounds(store: HoldStore, hold: timedelta, wanted: Mapping[str, int]) -> None:
    """Refuse a hold longer, or larger, than the hold store allows."""
    if hold > store.limits.max_hold:
        raise CapacityRequestError(
            f"hold: got {hold}; the hold store allows at most {store.limits.max_hold}"
        )
    for dim, units in wanted.items():
        if units > store.limits.max_units:
            raise CapacityRequestError(
                f"{dim}: got {units:,}; the hold store allows at most "
                f"{store.limits.max_units:,} units per hold"
            )


def _withdraw(handle: CapacityHold) -> str | None:
    """Withdraw a hold whose request failed; if that fails too (logged), what is left, for
    the error to say: the restorer ends the hold at its expiry, and until then it keeps
    the capacity raised. The request's failure then is a `CapacityRequestFailed` (a
    refusal or a timeout the caller was told otherwise leaves nothing behind)."""
    until = f"{handle.expires:%Y-%m-%d %H:%M:%S} UTC"
    try:
        rows = handle._ended(wait=False)
    except Exception as exc:
        log_event(
            "hold-withdraw-failed",
            level=logging.ERROR,
            exc_info=True,
            table=handle.table,
            hold_id=handle.id,
        )
        return (
            f"withdrawing its hold {handle.id} failed ({describe_error(exc)}): it keeps the "
            f"capacity raised until its expiry, {until}"
        )
    dropped(rows, in_lambda_only=True)
    kept = [r for r in rows if r.get("status") in KEPT]
    if not kept:
        handle.released = True
        return None
    why = reasons(kept)
    log_event("hold-withdraw-failed", level=logging.ERROR, table=handle.table, hold_id=handle.id)
    return (
        f"its hold {handle.id} could not be withdrawn yet ({shown(why, 300)}): it keeps the "
        f"capacity raised until a restore ends it, at its expiry ({until}) at the latest"
    )


def _hold(
    ctx: Context, store: HoldStore, table: str, new: Hold, deadline: float
) -> tuple[int, list[dict[str, Any]], Hold]:
    """Record ``new`` and raise its dimension to the level of its active holds, under the
    dimension's lease; then wait until the table is ACTIVE with it. Returns the level, the
    changes made and the hold as recorded. The table is read once more after the hold is
    recorded (`context.still_has`): a decrease sent after the read that found the level,
    by a writer that read the holds before the record, is raised again."""
    index, dim = new.scope
    done: list[dict[str, Any]] = []
    while True:
        with store.lease(table, index, dim, deadline=deadline, sleep=ctx.sleep) as lease:
            try:
                managed = read_table(ctx, table, index, None)
            except CapacityRequestTimeout:
                managed = None  # being updated: wait outside the lease
            step = True if managed is None else _raise(ctx, store, lease, managed, new, done)
        if not isinstance(step, bool):
            want, recorded = step
            if still_has(ctx, table, index, dim, want, deadline):
                return want, done, recorded
            step = True  # lowered since it was read: as below
        # Another update in flight: wait a poll interval. Then wait until ACTIVE, and look
        # again (a hold recorded meanwhile by another requester is added too).
        if step:
            if ctx.clock() >= deadline:
                raise CapacityRequestTimeout(
                    f"table {table}: capacity not reached before the timeout; wanted {dim} at "
                    f"{new.units:,} over the traffic"
                )
            ctx.sleep(ctx.poll_seconds)
        read_table(ctx, table, index, deadline)


def _raise(
    ctx: Context,
    store: HoldStore,
    lease: Lease,
    managed: ManagedTable,
    new: Hold,
    done: list[dict[str, Any]],
) -> tuple[int, Hold] | bool:
    """Under the dimension's lease: record ``new`` with the dimension's other holds, move
    the target's minimum to their level, and raise the table to it (the changes made go to
    ``done``). Returns the level and the hold as recorded once the table has it; else
    whether another update is in flight (True) or the raise was sent (False)."""
    table, (index, dim) = managed.name, new.scope
    if not new.active(ctx.now()):  # the wait outlasted the hold: the work has no capacity
        raise CapacityRequestTimeout(
            f"table {table}: the hold ran out ({new.expires:%Y-%m-%d %H:%M:%S} UTC) before "
            f"{scope_label(index)} had {dim} at {new.units:,} over the traffic; ask for a "
            "longer hold"
        )
    state = store.get(table, index, dim)
    recorded = _recorded(store, list(state.holds) if state else [], new, ctx.now())
    step = raise_held(ctx, lease, managed, dimension_of(managed, index, dim), state, recorded, done)
    if isinstance(step, bool):
        return step
    return step, next(h for h in recorded if h.id == new.id)


def dimension_of(managed: ManagedTable, index: str | None, dim: str) -> Dimension:
    """The dimension ``dim`` of the table (``index`` None) or of its GSI ``index``."""
    return next(x for x in managed.dimensions if (x.index, x.dimension) == (index, dim))


def raise_held(
    ctx: Context,
    lease: Lease,
    managed: ManagedTable,
    d: Dimension,
    state: HeldDimension | None,
    recorded: list[Hold],
    done: list[dict[str, Any]],
    why: str = "capacity request",
) -> int | bool:
    """Under the dimension's lease, with ``state`` its item read under it: record
    ``recorded`` as the dimension's holds (exactly those), move the target's minimum to
    their level, and raise the table to it (the changes made go to ``done``), as
    `core.hold_requests.held_raise` decides on what was read. Returns the level once the table
    has it; else whether another update is in flight (True) or the raise was sent
    (False). Never lowers anything."""
    table, index, dim = managed.name, d.index, d.dimension
    now = ctx.now()
    memory, base = base_of(d, state)
    target = d.target
    plan = held_raise(
        base,
        level(h for h in recorded if h.active(now)),
        d.provisioned,
        target.min_capacity if target is not None else None,
        target.max_capacity if target is not None else None,
    )
    want = plan.want
    if plan.over_max and target is not None:
        raise _over_max(dim, want, index, target.max_capacity)
    malformed_dropped(state, why)  # every branch below writes ``recorded``, and only those
    if plan.set_min and target is not None:
        set_min(ctx, lease, target, base, want, holds=recorded)
        done.append(_raise_row(d, Via.SCALABLE_TARGET, target.min_capacity, want))
    elif memory is not None:
        lease.write(base, recorded, set_to=memory.set_to, intent=None)
    else:
        lease.write(base, recorded)
    if not plan.update_table:
        return want
    change = Change(d, d.provisioned, want, why, Action.INCREASE, Via.UPDATE_TABLE)
    (outcome,) = actuator.apply(
        ctx.clients.dynamodb, ctx.clients.autoscaling, managed, [change], dry_run=False, now=now
    )
    if outcome.status == Status.APPLIED:
        via = Via.UPDATE_TABLE
        done.append(_raise_row(d, via, d.provisioned, want))
        return False
    if outcome.status == Status.RETRY_NEXT_TICK:
        return True
    raise CapacityRequestFailed(
        f"table {table} {scope_label(index)} {dim}: raising to {want:,} failed: {outcome.error}"
    )


def _over_max(dim: str, want: int, index: str | None, high: int) -> CapacityRequestError:
    """The refusal of a request whose holds need a minimum above the target's max."""
    return CapacityRequestError(
        f"{dim}: the request needs a minimum of {want:,} but the scalable "
        f"target of {scope_label(index)} has a max of "
        f"{high:,}; raise the max or ask for less"
    )


def _raise_row(d: Dimension, via: str, old: int, new: int) -> dict[str, Any]:
    """The row of a raise of ``d`` (its scalable target's minimum, or the table), with
    ``within_warm``: whether the table's raise to ``new`` lands at once, within the
    dimension's warm throughput (its partitions already serve it: no split, no minutes of
    UPDATING); False when that throughput is not known."""
    row = result_row(d.table, d.index, d.dimension, via, old, new, Status.APPLIED)
    return {**row, "within_warm": d.within_warm(new)}


def _recorded(store: HoldStore, recorded: list[Hold], new: Hold, now: datetime) -> list[Hold]:
    """The dimension's holds with ``new`` among them (once: it may be recorded already),
    its baseline the earliest of the active holds'. Refuses holds that would add up to
    more than the hold store allows per dimension, and a hold past `MAX_HOLDS`."""
    if any(h.id == new.id for h in recorded):
        return recorded
    if len(recorded) >= MAX_HOLDS:
        raise CapacityRequestError(
            f"{new.dimension}: {scope_label(new.index)} has {len(recorded):,} holds recorded "
            f"(active, or ended and not yet removed by a restore), and the hold store keeps "
            f"at most {MAX_HOLDS:,} per dimension; release the holds no longer needed, or "
            "share one hold among the workers of one piece of work"
        )
    others = [h for h in recorded if h.active(now)]
    total = new.units + sum(h.units for h in others)
    if total > store.limits.max_total_units:
        raise CapacityRequestError(
            f"{new.dimension}: got {new.units:,} units; with the {len(others)} active "
            f"hold(s) on {scope_label(new.index)} the holds would add up to "
            f"{total:,}, and the hold store allows at most "
            f"{store.limits.max_total_units:,} units held per dimension"
        )
    baseline = min([new.baseline, *(h.baseline for h in others)])
    return [*recorded, replace(new, baseline=baseline)]
