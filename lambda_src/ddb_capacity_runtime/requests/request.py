"""Making a capacity request: record the hold, raise, wait until ACTIVE."""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from ..aws import actuator
from ..aws.clients import Clients, make_clients
from ..core.names import base_min_tag, scope_label
from ..core.plan import UPDATE_TABLE, Change
from ..core.policy import INCREASE
from ..core.tags import BaseMin
from ..events import log_event
from .context import (
    Context,
    base_minimum,
    current_traffic,
    read_table,
    register_min,
    remember_min,
    result_row,
)
from .ending import end_holds
from .holds import (
    DEFAULT_HOLD,
    DEFAULT_TIMEOUT,
    CapacityRequestError,
    CapacityRequestTimeout,
    Hold,
    holds_in,
    level,
)
from .validate import validate_request


@dataclass
class CapacityHold:
    """What :func:`request_capacity` returns: the hold, the capacity now guaranteed per
    dimension (``levels``), and what was changed. Release it early with :meth:`release`,
    or use it as a context manager; otherwise it ends at ``expires``."""

    table: str
    index: str | None
    id: str
    expires: datetime
    holds: list[Hold]
    levels: dict[str, int] = field(default_factory=dict)
    changes: list[dict[str, Any]] = field(default_factory=list)
    released: bool = False
    _ctx: Context | None = field(default=None, repr=False)

    def release(self) -> list[dict[str, Any]]:
        """End the hold now: lower to what the other holds need. Idempotent."""
        if self.released or self._ctx is None:
            return []
        ctx = self._ctx
        ids = {self.id}
        deadline = ctx.clock() + DEFAULT_TIMEOUT.total_seconds()
        managed = read_table(ctx, self.table, self.index, deadline)
        rows = end_holds(ctx, managed, lambda h: h.id in ids)
        self.released = True
        return rows

    def as_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "index": self.index,
            "id": self.id,
            "expires": self.expires.isoformat(),
            "levels": self.levels,
            "holds": {h.dimension: {"units": h.units, "baseline": h.baseline} for h in self.holds},
            "changes": self.changes,
            "released": self.released,
        }

    def __enter__(self) -> CapacityHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def request_capacity(
    table: str,
    *,
    read: int = 0,
    write: int = 0,
    index: str | None = None,
    hold: timedelta = DEFAULT_HOLD,
    timeout: timedelta = DEFAULT_TIMEOUT,
    clients: Clients | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    poll_seconds: float = 5.0,
) -> CapacityHold:
    """Raise ``table`` (or its GSI ``index``) by ``read`` / ``write`` units per second over
    the current traffic, wait until it is ACTIVE with that capacity, and hold it for
    ``hold``. Returns a :class:`CapacityHold`.

    Raises :class:`CapacityRequestError` for bad input or a table that cannot take the
    request, and :class:`CapacityRequestTimeout` when ``timeout`` passes first; in both
    cases the hold is withdrawn again.
    """
    wanted = validate_request(table, read, write, index, hold, timeout)
    ctx = Context(clients or make_clients(), clock, sleep, poll_seconds)
    deadline = clock() + timeout.total_seconds()
    managed = read_table(ctx, table, index, deadline)
    traffic = current_traffic(ctx, table, index, wanted)
    now = ctx.now()
    existing, _ = holds_in(managed.tags, now)
    ident = uuid.uuid4().hex[:12]
    expires = datetime.fromtimestamp(math.ceil((now + hold).timestamp()), UTC)
    holds = []
    for dim, units in wanted.items():
        others = [h.baseline for h in existing if h.scope == (index, dim) and h.active(now)]
        holds.append(Hold(ident, index, dim, units, expires, min([traffic[dim], *others])))
    tags = {h.key: h.value for h in holds}
    for d in managed.dimensions:
        key = base_min_tag(d.index, d.dimension)
        if d.index == index and d.dimension in wanted and key not in managed.tags:
            current = d.target.min_capacity if d.target else d.provisioned
            tags[key] = BaseMin(current, current).value()
    try:
        ctx.clients.dynamodb.tag_resource(
            ResourceArn=managed.arn, Tags=[{"Key": k, "Value": v} for k, v in tags.items()]
        )
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise CapacityRequestError(
            f"table {table}: could not record the hold: {error.get('Code')}: {error.get('Message')}"
        ) from None
    handle = CapacityHold(table, index, ident, expires, holds, _ctx=ctx)
    try:
        handle.levels, handle.changes = _raise(ctx, table, index, list(wanted), deadline)
    except BaseException:
        try:
            handle.release()
        except Exception:  # the restorer ends the hold at expiry
            log_event(
                "hold-withdraw-failed",
                level=logging.ERROR,
                exc_info=True,
                table=table,
                hold_id=ident,
            )
        raise
    return handle


def _raise(
    ctx: Context, table: str, index: str | None, dims: list[str], deadline: float
) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Raise until a fresh look at the table finds nothing left to raise. Every round reads
    the tags again, so a hold recorded meanwhile by another requester is added too."""
    done: list[dict[str, Any]] = []
    while True:
        managed = read_table(ctx, table, index, deadline)
        now = ctx.now()
        holds, _ = holds_in(managed.tags, now)
        levels, raises = {}, []
        for d in managed.dimensions:
            if d.index != index or d.dimension not in dims:
                continue
            base = base_minimum(managed.tags, d.index, d.dimension, 0)
            want = max(
                base, level(h for h in holds if h.scope == (index, d.dimension) and h.active(now))
            )
            levels[d.dimension] = want
            if d.target is not None:
                if want > d.target.max_capacity:
                    raise CapacityRequestError(
                        f"{d.dimension}: the request needs a minimum of {want:,} but the "
                        f"scalable target of {scope_label(index)} has a max of "
                        f"{d.target.max_capacity:,}; raise the max or ask for less"
                    )
                if d.target.min_capacity < want:
                    remember_min(
                        ctx, managed.arn, index, d.dimension, base or d.target.min_capacity, want
                    )
                    register_min(ctx, d.target.resource_id, d.target.scalable_dimension, want)
                    done.append(
                        result_row(
                            table,
                            index,
                            d.dimension,
                            "scalable-target",
                            d.target.min_capacity,
                            want,
                            "applied",
                        )
                    )
            if d.provisioned < want:
                raises.append(
                    Change(d, d.provisioned, want, "capacity request", INCREASE, UPDATE_TABLE)
                )
        if not raises:
            return levels, done
        busy = False
        for outcome in actuator.apply(
            ctx.clients.dynamodb, ctx.clients.autoscaling, managed, raises, dry_run=False
        ):
            c = outcome.change
            if outcome.status == "applied":
                done.append(
                    result_row(
                        table, index, c.dimension.dimension, UPDATE_TABLE, c.old, c.new, "applied"
                    )
                )
            elif outcome.status == "retry-next-tick":  # another update is in flight
                busy = True
            else:
                raise CapacityRequestError(
                    f"table {table} {scope_label(index)} "
                    f"{c.dimension.dimension}: raising to {c.new:,} "
                    f"failed: {outcome.error}"
                )
        if busy:
            if ctx.clock() >= deadline:
                raise CapacityRequestTimeout(
                    f"table {table}: capacity not reached before the timeout; wanted {levels}"
                )
            ctx.sleep(ctx.poll_seconds)
