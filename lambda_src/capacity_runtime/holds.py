"""Capacity requests: "get ready, here I come" (seed 001, design 7).

A worker about to start heavy work asks for capacity on top of the current traffic. The
request raises the minimum now, waits until the table is ACTIVE with it, and holds it for a
while; the worker's own traffic then keeps capacity up for as long as the work runs.

Several requesters add up (coordinator semantics): the level of a dimension is the traffic
seen when its first active hold was made plus the units of every active hold, so two
workers asking for +5,000 each get +10,000 over the traffic.

State lives in tags on the table, one per dimension of a request::

    ddb-capacity:hold:<id>:<read|write> = <table|index/NAME>:<units>:<expires>:<baseline>

(``expires`` in epoch seconds, ``baseline`` the traffic in units per second). Tags are
durable, free, need no infrastructure, travel with the table, and are what the scaler
already reads. The minimum a hold replaced is kept in the ``ddb-capacity:base-min:`` tag
the scaler uses for its own raises, so either can restore it.

- Where the dimension has a scalable target, its MinCapacity is raised, so auto scaling
  knows and will not undo the raise; the table is also raised at once with UpdateTable
  instead of waiting for auto scaling's scaling activity.
- Elsewhere the provisioned capacity is raised with UpdateTable.

A hold ends when it is released (the handle) or when it expires (:func:`restore_expired`,
run by the scaler's tick and by the ``CapacityRequests`` restorer, so a worker that dies
leaves nothing behind). Ending lowers the minimum to what the remaining holds need, never
below the base, and never cuts capacity that someone else raised beyond the holds' level.
Without a scalable target that lowering is an UpdateTable decrease, made only when the
decrease quota allows; otherwise the hold's tag stays and the next restore tries again.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from . import actuator, metrics
from .actuator import UPDATE_TABLE, Change
from .clients import Clients, make_clients
from .config import DIMENSIONS, TABLE_QUOTA, Limits, ScalerConfig
from .discovery import (
    ManagedTable,
    NotManaged,
    base_min_tag,
    describe_table,
    resource_id,
    scalable_targets,
    scope_label,
)
from .policy import DECREASE, INCREASE

LOG = logging.getLogger(__name__)

HOLD_TAG = "ddb-capacity:hold:"
DEFAULT_HOLD = timedelta(minutes=15)
MAX_HOLD = timedelta(hours=24)
DEFAULT_TIMEOUT = timedelta(minutes=10)
#: Minutes of CloudWatch history whose peak is "the current traffic".
TRAFFIC_MINUTES = 5
TRAFFIC_LAG_MINUTES = 2
MAX_TAG_KEY, MAX_TAG_VALUE = 128, 256


class CapacityRequestError(ValueError):
    """A request that cannot be made or completed; the message says why."""


class CapacityRequestTimeout(CapacityRequestError, TimeoutError):
    """The table did not reach the requested capacity in time (the hold was withdrawn)."""


@dataclass(frozen=True)
class Hold:
    """One dimension of one capacity request, as stored in its table tag."""

    id: str
    index: str | None
    dimension: str
    units: int
    expires: datetime
    baseline: int

    @property
    def key(self) -> str:
        return f"{HOLD_TAG}{self.id}:{self.dimension}"

    @property
    def value(self) -> str:
        return (f"{scope_label(self.index)}:{self.units}:{int(self.expires.timestamp())}:"
                f"{self.baseline}")

    @property
    def scope(self) -> tuple[str | None, str]:
        return (self.index, self.dimension)

    def active(self, now: datetime) -> bool:
        return now < self.expires

    @classmethod
    def from_tag(cls, key: str, value: str) -> Hold | None:
        """The hold a tag describes, or None when the tag is not a well-formed hold."""
        ident, _, dimension = key[len(HOLD_TAG):].rpartition(":")
        scope, *numbers = value.rsplit(":", 3)
        if not ident or dimension not in DIMENSIONS or len(numbers) != 3:
            return None
        if scope == "table":
            index = None
        elif scope.startswith("index/") and len(scope) > len("index/"):
            index = scope[len("index/"):]
        else:
            return None
        try:
            units, expires, baseline = (int(n) for n in numbers)
        except ValueError:
            return None
        if units < 1 or baseline < 0:
            return None
        return cls(ident, index, dimension, units, datetime.fromtimestamp(expires, UTC),
                   baseline)


def holds_in(tags: Mapping[str, str]) -> tuple[list[Hold], list[str]]:
    """The holds among a table's tags, and the keys of hold tags that are malformed."""
    holds, malformed = [], []
    for key, value in tags.items():
        if key.startswith(HOLD_TAG):
            hold = Hold.from_tag(key, value)
            if hold is None:
                malformed.append(key)
            else:
                holds.append(hold)
    return holds, malformed


def level(holds: Iterable[Hold]) -> int:
    """The capacity a set of holds of one dimension asks for: the earliest traffic they saw
    plus all their units (0 for none)."""
    held = list(holds)
    if not held:
        return 0
    return min(h.baseline for h in held) + sum(h.units for h in held)


def lift(table: ManagedTable, now: datetime) -> ManagedTable:
    """``table`` with every dimension's limits lifted to its active holds' level, so the
    scaler neither lowers a held dimension nor caps it below the hold."""
    holds, _ = holds_in(table.tags)
    dims = []
    for d in table.dimensions:
        floor = level(h for h in holds if h.scope == (d.index, d.dimension) and h.active(now))
        if floor > d.limits.min_capacity:
            d = replace(d, limits=Limits(floor, max(floor, d.limits.max_capacity),
                                         d.limits.target_utilization))
        dims.append(d)
    return replace(table, dimensions=dims)


def needs_restore(tags: Mapping[str, str], now: datetime) -> bool:
    """Whether the table carries an expired or malformed hold."""
    holds, malformed = holds_in(tags)
    return bool(malformed) or any(not h.active(now) for h in holds)


# --------------------------------------------------------------------------- requests


def _validate(table: Any, read: Any, write: Any, index: Any, hold: Any,
              timeout: Any) -> dict[str, int]:
    if not isinstance(table, str) or not 3 <= len(table) <= 255:
        raise CapacityRequestError(f"table: got {table!r}; expected a table name (3 to 255 "
                                   f"characters)")
    if index is not None and (not isinstance(index, str) or not 3 <= len(index) <= 255):
        raise CapacityRequestError(f"index: got {index!r}; expected None or a global "
                                   f"secondary index name (3 to 255 characters)")
    wanted = {}
    for name, units in (("read", read), ("write", write)):
        if isinstance(units, bool) or not isinstance(units, int) or not \
                0 <= units <= TABLE_QUOTA:
            raise CapacityRequestError(f"{name}: got {units!r}; expected a whole number of "
                                       f"capacity units from 0 to {TABLE_QUOTA:,}")
        if units:
            wanted[name] = units
    if not wanted:
        raise CapacityRequestError("read and write: got 0 and 0; ask for at least one unit "
                                   "of read or write capacity")
    if not isinstance(hold, timedelta) or not timedelta(minutes=1) <= hold <= MAX_HOLD:
        raise CapacityRequestError(f"hold: got {hold!r}; expected a timedelta from 1 minute "
                                   f"to {MAX_HOLD}")
    if not isinstance(timeout, timedelta) or timeout < timedelta(0):
        raise CapacityRequestError(f"timeout: got {timeout!r}; expected a timedelta of 0 or "
                                   f"more")
    sample = Hold("0" * 12, index, "write", TABLE_QUOTA, datetime(2100, 1, 1, tzinfo=UTC),
                  TABLE_QUOTA)
    if len(sample.value) > MAX_TAG_VALUE or len(base_min_tag(index, "write")) > MAX_TAG_KEY:
        raise CapacityRequestError(f"index: got a name of {len(index or '')} characters; "
                                   f"hold tags can name indexes of up to "
                                   f"{MAX_TAG_KEY - len(base_min_tag('', 'write'))} characters")
    return wanted


@dataclass
class _Context:
    clients: Clients
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    poll_seconds: float

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)


def _describe(ctx: _Context, table: str, index: str | None,
              deadline: float | None) -> ManagedTable:
    """The table's current state, waiting (until ``deadline``; None: not at all) while it or
    the index is being updated. Raises CapacityRequestError for what no wait can fix."""
    config = ScalerConfig(tables=(table,))
    while True:
        now = ctx.now()
        try:
            # Every GSI's targets, not only the named index's: ending holds may touch any.
            raw = ctx.clients.dynamodb.describe_table(TableName=table)["Table"]
            ids = [resource_id(table, None), *(resource_id(table, g["IndexName"])
                                               for g in raw.get("GlobalSecondaryIndexes", []))]
            targets = scalable_targets(ctx.clients.autoscaling, ids)
            managed = describe_table(ctx.clients.dynamodb, table, None, config, targets, now,
                                     description=raw)
            if index is not None and index not in managed.indexes:
                names = ", ".join(managed.indexes) or "no global secondary indexes"
                raise CapacityRequestError(f"index: got {index!r}; table {table} has {names}")
            if index is None or any(d.index == index for d in managed.dimensions):
                return managed
            busy = f"index {index} is not ACTIVE"
        except NotManaged as exc:
            if "on-demand" in str(exc):
                raise CapacityRequestError(f"table: {table} is on-demand; capacity requests "
                                           f"apply to provisioned tables") from None
            busy = str(exc)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            if error.get("Code") == "ResourceNotFoundException":
                raise CapacityRequestError(f"table: got {table!r}; no such table in this "
                                           f"account and Region") from None
            raise CapacityRequestError(f"table {table}: {error.get('Code')}: "
                                       f"{error.get('Message')}") from None
        if deadline is None or ctx.clock() >= deadline:
            raise CapacityRequestTimeout(f"table {table}: still busy ({busy})")
        ctx.sleep(ctx.poll_seconds)


def _traffic(ctx: _Context, table: str, index: str | None, dims: Iterable[str]
             ) -> dict[str, int]:
    """Peak consumed units per second of each dimension over the last few minutes."""
    keys = [(table, index, d) for d in dims]
    start, end = metrics.window(ctx.now(), TRAFFIC_MINUTES, TRAFFIC_LAG_MINUTES)
    series = metrics.fetch(ctx.clients.cloudwatch, keys, start, end)
    return {k[2]: math.ceil(round(max(series[k].consumed, default=0.0), 6)) for k in keys}


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
    _ctx: _Context | None = field(default=None, repr=False)

    def release(self) -> list[dict[str, Any]]:
        """End the hold now: lower to what the other holds need. Idempotent."""
        if self.released or self._ctx is None:
            return []
        ctx = self._ctx
        ids = {self.id}
        deadline = ctx.clock() + DEFAULT_TIMEOUT.total_seconds()
        managed = _describe(ctx, self.table, self.index, deadline)
        rows = _end(ctx, managed, lambda h: h.id in ids)
        self.released = True
        return rows

    def as_json(self) -> dict[str, Any]:
        return {"table": self.table, "index": self.index, "id": self.id,
                "expires": self.expires.isoformat(), "levels": self.levels,
                "holds": {h.dimension: {"units": h.units, "baseline": h.baseline}
                          for h in self.holds},
                "changes": self.changes, "released": self.released}

    def __enter__(self) -> CapacityHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def request_capacity(table: str, *, read: int = 0, write: int = 0, index: str | None = None,
                     hold: timedelta = DEFAULT_HOLD, timeout: timedelta = DEFAULT_TIMEOUT,
                     clients: Clients | None = None, clock: Callable[[], float] = time.time,
                     sleep: Callable[[float], None] = time.sleep,
                     poll_seconds: float = 5.0) -> CapacityHold:
    """Raise ``table`` (or its GSI ``index``) by ``read`` / ``write`` units per second over
    the current traffic, wait until it is ACTIVE with that capacity, and hold it for
    ``hold``. Returns a :class:`CapacityHold`.

    Raises :class:`CapacityRequestError` for bad input or a table that cannot take the
    request, and :class:`CapacityRequestTimeout` when ``timeout`` passes first; in both
    cases the hold is withdrawn again.
    """
    wanted = _validate(table, read, write, index, hold, timeout)
    ctx = _Context(clients or make_clients(), clock, sleep, poll_seconds)
    deadline = clock() + timeout.total_seconds()
    managed = _describe(ctx, table, index, deadline)
    traffic = _traffic(ctx, table, index, wanted)
    now = ctx.now()
    existing, _ = holds_in(managed.tags)
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
            tags[key] = str(d.target.min_capacity if d.target else d.provisioned)
    try:
        ctx.clients.dynamodb.tag_resource(
            ResourceArn=managed.arn, Tags=[{"Key": k, "Value": v} for k, v in tags.items()])
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise CapacityRequestError(f"table {table}: could not record the hold: "
                                   f"{error.get('Code')}: {error.get('Message')}") from None
    handle = CapacityHold(table, index, ident, expires, holds, _ctx=ctx)
    try:
        handle.levels, handle.changes = _raise(ctx, table, index, list(wanted), deadline)
    except BaseException:
        try:
            handle.release()
        except Exception:  # the restorer ends the hold at expiry
            LOG.exception("table %s: withdrawing hold %s failed", table, ident)
        raise
    return handle


def _raise(ctx: _Context, table: str, index: str | None, dims: list[str],
           deadline: float) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Raise until a fresh look at the table finds nothing left to raise. Every round reads
    the tags again, so a hold recorded meanwhile by another requester is added too."""
    done: list[dict[str, Any]] = []
    while True:
        managed = _describe(ctx, table, index, deadline)
        holds, _ = holds_in(managed.tags)
        now = ctx.now()
        levels, raises = {}, []
        for d in managed.dimensions:
            if d.index != index or d.dimension not in dims:
                continue
            base = _base(managed.tags, d.index, d.dimension, 0)
            want = max(base, level(h for h in holds if h.scope == (index, d.dimension)
                                   and h.active(now)))
            levels[d.dimension] = want
            if d.target is not None:
                if want > d.target.max_capacity:
                    raise CapacityRequestError(
                        f"{d.dimension}: the request needs a minimum of {want:,} but the "
                        f"scalable target of {scope_label(index)} has a max of "
                        f"{d.target.max_capacity:,}; raise the max or ask for less")
                if d.target.min_capacity < want:
                    _register_min(ctx, d.target.resource_id, d.target.scalable_dimension, want)
                    done.append(_row(table, index, d.dimension, "scalable-target",
                                     d.target.min_capacity, want, "applied"))
            if d.provisioned < want:
                raises.append(Change(d, d.provisioned, want, "capacity request", INCREASE,
                                     UPDATE_TABLE))
        if not raises:
            return levels, done
        busy = False
        for outcome in actuator.apply(ctx.clients.dynamodb, ctx.clients.autoscaling, managed,
                                      raises, dry_run=False):
            c = outcome.change
            if outcome.status == "applied":
                done.append(_row(table, index, c.dimension.dimension, UPDATE_TABLE, c.old,
                                 c.new, "applied"))
            elif outcome.status == "retry-next-tick":  # another update is in flight
                busy = True
            else:
                raise CapacityRequestError(f"table {table} {scope_label(index)} "
                                           f"{c.dimension.dimension}: raising to {c.new:,} "
                                           f"failed: {outcome.error}")
        if busy:
            if ctx.clock() >= deadline:
                raise CapacityRequestTimeout(f"table {table}: capacity not reached before "
                                             f"the timeout; wanted {levels}")
            ctx.sleep(ctx.poll_seconds)


def _base(tags: Mapping[str, str], index: str | None, dimension: str, default: int) -> int:
    """The base minimum remembered in the dimension's tag; ``default`` without a usable one."""
    raw = tags.get(base_min_tag(index, dimension))
    if raw is not None and raw.isdigit():
        return int(raw)
    if raw is not None:
        LOG.warning("tag %s is not a whole number (%r); ignored",
                    base_min_tag(index, dimension), raw)
    return default


def _register_min(ctx: _Context, resource: str, dimension: str, minimum: int) -> None:
    try:
        ctx.clients.autoscaling.register_scalable_target(
            ServiceNamespace="dynamodb", ResourceId=resource, ScalableDimension=dimension,
            MinCapacity=minimum)
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise CapacityRequestError(f"{resource} {dimension}: setting MinCapacity {minimum:,} "
                                   f"failed: {error.get('Code')}: {error.get('Message')}"
                                   ) from None


def _row(table: str, index: str | None, dimension: str, via: str, old: int, new: int,
         status: str, note: str | None = None) -> dict[str, Any]:
    return {"table": table, "index": index, "dimension": dimension, "via": via, "from": old,
            "to": new, "status": status, **({"note": note} if note else {})}


# --------------------------------------------------------------------------- ending holds


def _end(ctx: _Context, managed: ManagedTable, ending: Callable[[Hold], bool],
         lower_direct: bool = True) -> list[dict[str, Any]]:
    """End the holds ``ending`` selects (and remove malformed hold tags): lower each
    dimension they touched to what its remaining holds need. Tags are removed only for
    holds whose dimension was restored, so a refused decrease is tried again later.

    ``lower_direct`` False leaves dimensions without a scalable target where they are (the
    scaler's policy lowers them with the traffic, spending one decrease, not two)."""
    now = ctx.now()
    tags = managed.tags
    holds, malformed = holds_in(tags)
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
        keys = [h.key for h in gone] + ([base_key] if not remaining and base_key in tags
                                        else [])
        d = dims.get(scope)
        if d is None:  # an index that is gone (forget its holds) or not ACTIVE (later)
            if index not in managed.indexes:
                untag += keys
            continue
        current = d.target.min_capacity if d.target else d.provisioned
        base = _base(tags, index, dim, current)
        held = max(base, level([*remaining, *gone]))
        to = max(base, level(remaining))
        via = "scalable-target" if d.target else UPDATE_TABLE
        if current > held:
            # Raised beyond the holds since: that capacity is someone else's to lower. A
            # target's base tag stays for the scaler, which restores it when calm.
            rows.append(_row(d.table, index, dim, via, current, current, "kept",
                             "raised beyond the holds since"))
            untag += [h.key for h in gone]
            if not remaining and d.target is None and base_key in tags:
                untag.append(base_key)
        elif current <= to:
            rows.append(_row(d.table, index, dim, via, current, current, "unchanged"))
            untag += keys
        elif d.target is not None:
            _register_min(ctx, d.target.resource_id, d.target.scalable_dimension, to)
            rows.append(_row(d.table, index, dim, via, current, to, "applied"))
            untag += keys
        elif not lower_direct:
            rows.append(_row(d.table, index, dim, via, current, current, "left-to-policy",
                             "the scaler lowers it as the traffic allows"))
            untag += keys
        elif d.ledger.can_decrease(now):
            decreases.append(Change(d, current, to, "capacity hold ended", DECREASE,
                                    UPDATE_TABLE))
            untag += [h.key for h in gone]
            if not remaining and base_key in tags:
                untag.append(base_key)
        else:
            rows.append(_row(d.table, index, dim, via, current, to, "quota-exceeded",
                             "no decrease allowed now; tried again at the next restore"))
    for outcome in actuator.apply(ctx.clients.dynamodb, ctx.clients.autoscaling, managed,
                                  decreases, dry_run=False):
        c = outcome.change
        rows.append(_row(c.dimension.table, c.dimension.index, c.dimension.dimension,
                         UPDATE_TABLE, c.old, c.new, outcome.status, outcome.error))
        if outcome.status != "applied":
            scope = (c.dimension.index, c.dimension.dimension)
            keep = {h.key for h in by_scope[scope]} | {base_min_tag(*scope)}
            untag = [k for k in untag if k not in keep]
    if untag:
        ctx.clients.dynamodb.untag_resource(ResourceArn=managed.arn,
                                            TagKeys=sorted(set(untag)))
    return rows


def restore_expired(table: str, *, clients: Clients | None = None,
                    clock: Callable[[], float] = time.time,
                    lower_direct: bool = True) -> list[dict[str, Any]]:
    """End every expired (or malformed) hold on ``table``: what the scaler's tick (with
    ``lower_direct`` False) and the ``CapacityRequests`` restorer run. A table being
    updated is left for the next run."""
    ctx = _Context(clients or make_clients(), clock, time.sleep, 0)
    try:
        managed = _describe(ctx, table, None, None)
    except CapacityRequestTimeout:
        return []
    now = ctx.now()
    if not needs_restore(managed.tags, now):
        return []
    return _end(ctx, managed, lambda h: not h.active(now), lower_direct)


def release_hold(table: str, hold_id: str, *, clients: Clients | None = None,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> list[dict[str, Any]]:
    """End the hold ``hold_id`` on ``table`` (as :meth:`CapacityHold.release` does, for a
    process that no longer has the handle). Raises CapacityRequestError if there is none."""
    ctx = _Context(clients or make_clients(), clock, sleep, 5.0)
    managed = _describe(ctx, table, None, clock() + DEFAULT_TIMEOUT.total_seconds())
    holds, _ = holds_in(managed.tags)
    ids = sorted({h.id for h in holds})
    if hold_id not in ids:
        raise CapacityRequestError(f"id: got {hold_id!r}; table {table} holds "
                                   f"{', '.join(ids) if ids else 'nothing'}")
    return _end(ctx, managed, lambda h: h.id == hold_id)


def restorer_handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """AWS Lambda entry point of the ``CapacityRequests`` restorer: ``CAPACITY_TABLES`` is
    a comma-separated list of table names."""
    clients = make_clients()
    tables = [t.strip() for t in os.environ.get("CAPACITY_TABLES", "").split(",") if t.strip()]
    out: dict[str, Any] = {"restored": [], "failed": []}
    for name in tables:
        try:
            out["restored"] += restore_expired(name, clients=clients)
        except (CapacityRequestError, ClientError) as exc:
            out["failed"].append({"table": name, "error": str(exc)})
    print(json.dumps({"event": "holds-restored", **out}, default=str))
    if out["failed"]:
        raise RuntimeError(f"restoring holds failed on {len(out['failed'])} table(s): "
                           f"{out['failed']}")
    return out
