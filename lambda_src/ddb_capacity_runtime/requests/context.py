"""Runs in: broker Lambda, scaler Lambda, workers (the user's own jobs, in direct mode),
workstation (``ddb-capacity`` in direct mode).

What capacity requests read and write on one table: its state (waiting while it is
being updated), its current traffic, a dimension's base, and scalable-target minimums (their
rows: `core.outcomes.result_row`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from ..aws import metrics, table_calls
from ..aws.clients import Clients
from ..aws.discovery import (
    NotManaged,
    OnDemand,
    TableUnavailable,
    describe_table,
    table_targets,
)
from ..aws.error_codes import describe_error, error_code, meaning
from ..aws.minimum import set_minimum
from ..core.deadline import NONE, Deadline
from ..core.errors import LevelUnconfirmed, shown
from ..core.holds import (
    CapacityRequestError,
    CapacityRequestFailed,
    CapacityRequestTimeout,
    TableGone,
)
from ..core.memory import Memory, reconcile
from ..core.names import DEFAULT_TABLE_QUOTA, scope_label
from ..core.policy import capacity_units
from ..core.series import window
from ..core.settings import ScalerConfig
from ..core.tables import Dimension, ManagedTable, ScalableTarget, spec_of, units_of
from ..events import log_event

TRAFFIC_MINUTES = 5
"""Minutes of CloudWatch history whose peak is "the current traffic"."""
TRAFFIC_LAG_MINUTES = 2

if TYPE_CHECKING:
    from ..aws.store import Lease
    from ..core.holds import HeldDimension, Hold


@dataclass
class Context:
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


def still_has(
    ctx: Context, table: str, index: str | None, dimension: str, level: int, deadline: float
) -> bool:
    """Whether ``table`` (or its GSI ``index``), read again once a hold is recorded on a table
    read to have ``level``, still has ``dimension`` there. False where it reads below it (a
    decrease sent between that read and the record, by a writer that read the hold store
    before it: the settle step) or fails for good: the request looks again, and raises it.
    Being updated at the level (DynamoDB serves the capacity from before an update until it
    lands), or a read that may pass, is read again each poll interval until ``deadline``;
    past it the level is not claimed: logged, and a `LevelUnconfirmed` (a timeout: counted
    ``TimedOut`` by a broker, and alarmed), its hold kept."""
    while (seen := _seen(ctx, table, index, dimension, level)) is None:
        if ctx.clock() >= deadline:
            log_event("hold-level-unconfirmed", level=logging.WARNING, table=table, units=level)
            raise LevelUnconfirmed(
                f"table {table}: {scope_label(index)} {dimension} at {level:,} not confirmed "
                "before the timeout (the table still being updated, or not read)"
            )
        ctx.sleep(ctx.poll_seconds)
    return seen


def _seen(ctx: Context, table: str, index: str | None, dimension: str, level: int) -> bool | None:
    try:
        raw = table_calls.describe(ctx.clients.dynamodb, table)
    except Exception as exc:
        return False if meaning(exc).final else None
    try:
        status = (raw.get("TableStatus"), spec_of(raw, index).get("IndexStatus", "ACTIVE"))
        if units_of(raw, index)[dimension] < level:
            return False
    except (KeyError, ValueError):
        return False
    return True if status == ("ACTIVE", "ACTIVE") else None


def current_traffic(
    ctx: Context, managed: ManagedTable, index: str | None, dims: Iterable[str]
) -> dict[str, int]:
    """Peak consumed units per second of each dimension over the last few minutes. Where
    CloudWatch answered minutes not to be trusted (`core.series.Series.untrusted`: the
    peak may be among them), at least the dimension's provisioned capacity (``managed``'s,
    as `read_table` read it), what the table serves now at most, logged
    (``traffic-unknown``): a baseline read too low would raise the table too little for the
    work on top of it."""
    table = managed.name
    provisioned = {d.dimension: d.provisioned for d in managed.dimensions if d.index == index}
    keys = [(table, index, d) for d in dims]
    start, end = window(ctx.now(), TRAFFIC_MINUTES, TRAFFIC_LAG_MINUTES)
    series = metrics.fetch(ctx.clients.cloudwatch, keys, start, end)
    out = {}
    for key in keys:
        seen = capacity_units(max(series[key].consumed, default=0.0))
        untrusted = series[key].untrusted
        out[key[2]] = max(seen, provisioned.get(key[2], 0)) if untrusted else seen
        if untrusted:
            log_event(
                "traffic-unknown",
                level=logging.WARNING,
                table=table,
                index=index,
                dimension=key[2],
                unknown_minutes=untrusted,
                seen=seen,
                baseline=out[key[2]],
            )
    return out


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
