"""Runs in: scaler Lambda, broker Lambda, restorer Lambda, signals Lambda, stream reader
Lambda, workers (the user's own jobs, in direct mode), workstation (``ddb-capacity`` in
direct mode).

What the functions that make, end and raise holds read and write on one table: its state
(waiting while it is being updated), a dimension's base, and scalable-target minimums (their
rows: `core.outcomes.result_row`). Below the functions' packages, so that the scaler's tick
ends expired holds (`aws.hold_ending`) without importing `requests`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from ..core.deadline import NONE, Deadline
from ..core.errors import shown
from ..core.holds import (
    CapacityRequestError,
    CapacityRequestFailed,
    CapacityRequestTimeout,
    TableGone,
)
from ..core.memory import Memory, reconcile
from ..core.names import DEFAULT_TABLE_QUOTA
from ..core.settings import ScalerConfig
from ..core.tables import Dimension, ManagedTable, ScalableTarget
from . import table_calls
from .clients import Clients
from .discovery import (
    NotManaged,
    OnDemand,
    TableUnavailable,
    describe_table,
    table_targets,
)
from .error_codes import describe_error, error_code
from .minimum import set_minimum

if TYPE_CHECKING:
    from ..core.holds import HeldDimension, Hold
    from .store import Lease


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
