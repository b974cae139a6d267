"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (``ddb-capacity`` in direct mode, examples).

Carries out a tick's decisions for one table; the only module here that changes AWS.

- A dimension with a scalable target: its MinCapacity is moved (RegisterScalableTarget), so
  auto scaling performs the change and knows it. The configured minimum is remembered in
  the state store until it is restored (`minimum`), so a restart of the scaler, or a
  capacity request meanwhile, loses nothing.
- Every other dimension: one UpdateTable carrying the table's and its GSIs' changes.

Errors stay with their table: the caller goes on with the others. Nothing is sent once the
tick's deadline has passed (no lease waited for, no control-plane call made, a lease wait
cut at it): such a change is ``deadline-passed``, and the next tick decides it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ..core.deadline import NONE, Deadline, DeadlinePassed
from ..core.decreases import DecreaseLedger
from ..core.errors import LeasesNotGivenBack, TableBusy
from ..core.holds import CapacityRequestError, CapacityRequestTimeout, level
from ..core.memory import why_wait
from ..core.names import UNITS
from ..core.outcomes import Status
from ..core.plan import Change, Via
from ..core.policy import Action
from ..core.tables import ManagedTable, named_gsis, provisioned_units
from . import table_calls
from .discovery import UnsoundListing, current_minimum
from .error_codes import describe_error, meaning
from .minimum import set_minimum

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_dynamodb import DynamoDBClient

    from .store import HoldStore


LEASE_WAIT_SECONDS = 5
"""How long a move of a minimum waits for its dimension's lease (a request holding it)."""


@dataclass(frozen=True, eq=False)
class Outcome:
    """What became of a change sent: its status, and the error, if any."""

    change: Change
    status: Status
    error: str | None = None


def _status(exc: Exception) -> tuple[Status, str]:
    if not isinstance(exc, ClientError):
        return Status.FAILED, describe_error(exc)
    return meaning(exc).status, describe_error(exc)


def update_table_request(
    table: str, changes: Sequence[Change], current: Mapping[tuple[str | None, str], int]
) -> dict[str, Any]:
    """One UpdateTable for ``changes``. DynamoDB takes both values of a touched table or GSI;
    the one that does not change is sent as ``current`` (read just before) says it is."""
    new = {(c.dimension.index, c.dimension.dimension): c.new for c in changes}
    touched = sorted({c.dimension.index for c in changes}, key=lambda i: (i is not None, i or ""))

    def throughput(index: str | None) -> dict[str, int]:
        return {units: new.get((index, dim), current[(index, dim)]) for dim, units in UNITS.items()}

    request: dict[str, Any] = {"TableName": table}
    if None in touched:
        request["ProvisionedThroughput"] = throughput(None)
    updates = [
        {"Update": {"IndexName": i, "ProvisionedThroughput": throughput(i)}}
        for i in touched
        if i is not None
    ]
    if updates:
        request["GlobalSecondaryIndexUpdates"] = updates
    return request


def _fresh(
    dynamodb: DynamoDBClient, table: ManagedTable, now: datetime
) -> tuple[dict[tuple[str | None, str], int], dict[str | None, DecreaseLedger]]:
    """The table's provisioned capacity and decrease ledgers as DynamoDB says now. Raises
    TableBusy when the table is not ACTIVE, and ValueError when the answer is not sound (a
    GSI without its name, a capacity that is not a whole number)."""
    described = table_calls.describe(dynamodb, table.name)
    status = described.get("TableStatus")
    if status != "ACTIVE":
        raise TableBusy(f"table status {status!r:.60}")
    gsis = named_gsis(f"DescribeTable {table.name}", described.get("GlobalSecondaryIndexes", []))
    specs: list[tuple[str | None, Mapping[str, Any]]] = [(None, described)]
    # a GSI going away may be told without its capacity
    specs += [(name, g) for name, g in gsis if g.get("IndexStatus") != "DELETING"]
    current: dict[tuple[str | None, str], int] = {}
    ledgers: dict[str | None, DecreaseLedger] = {}
    for index, spec in specs:
        throughput, units = provisioned_units(table.name, index, spec)
        for dim, value in units.items():
            current[(index, dim)] = value
        ledgers[index] = DecreaseLedger.from_throughput(throughput, now)
    return current, ledgers


def _update_table(
    dynamodb: DynamoDBClient,
    table: ManagedTable,
    changes: list[Change],
    now: datetime,
    deadline: Deadline = NONE,
    store: HoldStore | None = None,
) -> list[Outcome]:
    """Send ``changes`` in one UpdateTable (`_send_fresh`); with the state store
    ``store``, the decreases under their dimensions' leases, each checked against the
    holds read again under it: a capacity request that recorded a hold after the tick read
    the store (and found the capacity enough, so raised nothing) is never cut under. A
    decrease whose lease cannot be had, or whose store fails, is not sent (the next tick
    decides again); the increases go on without it."""
    decreases = [c for c in changes if c.new < c.old]
    if store is None or not decreases:
        return _send_fresh(dynamodb, table, changes, now, deadline)
    leases = ExitStack()
    try:
        held = _held_under_leases(store, table.name, decreases, now, deadline, leases)
    except DeadlinePassed as exc:
        outcomes = [Outcome(c, Status.DEADLINE, str(exc)) for c in decreases]
    else:
        outcomes = [o for o in (_left(c, held[_key(c)], deadline) for c in decreases) if o]
    send = [c for c in changes if all(o.change is not c for o in outcomes)]
    try:
        outcomes += _send_fresh(dynamodb, table, send, now, deadline) if send else []
    finally:
        try:
            leases.close()
        except Exception as exc:  # what was sent stands: told with it, and counted
            raise LeasesNotGivenBack(outcomes, describe_error(exc)) from None
    return outcomes


def _held_under_leases(
    store: HoldStore,
    table: str,
    decreases: list[Change],
    now: datetime,
    deadline: Deadline,
    leases: ExitStack,
) -> dict[tuple[str | None, str], int | CapacityRequestError]:
    """Take the lease of each dimension ``decreases`` lower (in one order, kept in
    ``leases``) and read its active holds' level again under it; for a dimension whose
    lease was not had in time, or whose store failed, that error instead. Raises
    DeadlinePassed once ``deadline`` has passed."""
    held: dict[tuple[str | None, str], int | CapacityRequestError] = {}
    for key in sorted({_key(c) for c in decreases}, key=lambda k: (k[0] or "", k[1])):
        index, dim = key
        deadline.check(f"the lease of {table} {index or 'table'} {dim}")
        try:
            wait_until = deadline.wait_until(store.clock(), LEASE_WAIT_SECONDS)
            leases.enter_context(store.lease(table, index, dim, deadline=wait_until))
            fresh = store.get(table, index, dim)
        except CapacityRequestError as exc:  # not had in time, or the store failed
            held[key] = exc
            continue
        except (ClientError, BotoCoreError) as exc:  # the store's read failed
            held[key] = CapacityRequestError(f"the state store: {describe_error(exc)}")
            continue
        held[key] = level(fresh.active(now)) if fresh else 0
    return held


def _left(change: Change, held: int | CapacityRequestError, deadline: Deadline) -> Outcome | None:
    """The outcome of a decrease not to be sent: below the level its holds need now, or
    without its lease; None: it may be sent."""
    if isinstance(held, CapacityRequestError):
        return Outcome(change, _unleased(held, deadline), str(held))
    if change.new < held:
        return Outcome(change, Status.RETRY_NEXT_TICK, f"a hold since it was read needs {held:,}")
    return None


def _unleased(exc: CapacityRequestError, deadline: Deadline) -> Status:
    """The status of a decrease not sent for ``exc``: a lease not had in time (the next
    tick decides again), or the state store's failure."""
    if isinstance(exc, CapacityRequestTimeout):  # a lease wait cut at the deadline, or not
        return Status.DEADLINE if deadline.left() <= 0 else Status.RETRY_NEXT_TICK
    return Status.FAILED


def _key(change: Change) -> tuple[str | None, str]:
    return (change.dimension.index, change.dimension.dimension)


def _send_fresh(
    dynamodb: DynamoDBClient,
    table: ManagedTable,
    changes: list[Change],
    now: datetime,
    deadline: Deadline = NONE,
) -> list[Outcome]:
    """Re-read the table, then send what still applies: a change whose dimension moved since
    it was planned is left for the next tick, and a decrease the quota ledger refuses now is
    not sent (nor anything once ``deadline`` has passed)."""
    try:
        deadline.check(f"DescribeTable of {table.name}")
        current, ledgers = _fresh(dynamodb, table, now)
    except DeadlinePassed as exc:
        return [Outcome(c, Status.DEADLINE, str(exc)) for c in changes]
    except TableBusy as exc:
        return [Outcome(c, Status.RETRY_NEXT_TICK, str(exc)) for c in changes]
    except (ClientError, BotoCoreError) as exc:
        status, message = _status(exc)
        return [Outcome(c, status, message) for c in changes]
    except ValueError as exc:  # an answer not to be trusted: nothing is sent on it
        return [Outcome(c, Status.FAILED, str(exc)) for c in changes]
    outcomes, send = [], []
    for c in changes:
        key = (c.dimension.index, c.dimension.dimension)
        if key not in current:
            outcomes.append(Outcome(c, Status.NOT_FOUND, f"{key} is gone from the table"))
        elif current[key] != c.old:
            outcomes.append(
                Outcome(
                    c,
                    Status.RETRY_NEXT_TICK,
                    f"capacity moved from {c.old} to {current[key]} since it was read",
                )
            )
        elif c.new < c.old and not ledgers[c.dimension.index].can_decrease(now):
            outcomes.append(Outcome(c, Status.QUOTA_EXCEEDED, "the decrease quota allows none now"))
        else:
            send.append(c)
    return outcomes + (_send(dynamodb, table, send, current, deadline) if send else [])


def _send(
    dynamodb: DynamoDBClient,
    table: ManagedTable,
    changes: list[Change],
    current: Mapping[tuple[str | None, str], int],
    deadline: Deadline,
) -> list[Outcome]:
    try:
        deadline.check(f"UpdateTable of {table.name}")
        table_calls.update(dynamodb, update_table_request(table.name, changes, current))
        return [Outcome(c, Status.APPLIED) for c in changes]
    except DeadlinePassed as exc:
        return [Outcome(c, Status.DEADLINE, str(exc)) for c in changes]
    except (ClientError, BotoCoreError) as exc:
        status, message = _status(exc)
        increases = [c for c in changes if c.action == Action.INCREASE]
        if status != Status.QUOTA_EXCEEDED or not increases or len(increases) == len(changes):
            return [Outcome(c, status, message) for c in changes]
        # The decreases were refused: the increases must not wait for them.
        refused = [Outcome(c, status, message) for c in changes if c.action != Action.INCREASE]
        return refused + _send(dynamodb, table, increases, current, deadline)


def _move_min(
    store: HoldStore | None,
    aas: ApplicationAutoScalingClient,
    change: Change,
    now: datetime,
    deadline: Deadline = NONE,
) -> Outcome:
    """Move a scalable target's minimum under its dimension's lease in the state store,
    which remembers the configured minimum while the library holds it above
    (`minimum.set_minimum`). Under the lease the item and the target's minimum are
    read again: a dimension whose memory or minimum moved since the tick read them (a
    capacity request meanwhile, a stale listing), or that a hold recorded since needs
    above the change, is left for the next tick. The lease is waited for until
    ``deadline`` at most, and no call is made after it."""
    d = change.dimension
    assert d.target is not None and d.memory is not None
    if store is None:
        why = "no state store: a minimum is never moved unremembered"
        return Outcome(change, Status.FAILED, why)
    try:
        deadline.check(f"the lease of {d.table} {d.index or 'table'} {d.dimension}")
        wait_until = deadline.wait_until(store.clock(), LEASE_WAIT_SECONDS)
        with store.lease(d.table, d.index, d.dimension, deadline=wait_until) as lease:
            fresh = store.get(d.table, d.index, d.dimension)
            now_seen = (fresh.base, fresh.set_to, fresh.intent) if fresh else (None, None, None)
            deadline.check(f"DescribeScalableTargets of {d.target.resource_id}")
            minimum = current_minimum(aas, d.target)
            held = level(fresh.active(now)) if fresh else 0
            wait = why_wait(d.seen, now_seen, d.target.min_capacity, minimum, held, change.new)
            if wait is not None:
                return Outcome(change, Status.RETRY_NEXT_TICK, wait)
            set_minimum(lease, aas, d.target, d.memory.base, change.new, deadline=deadline)
        return Outcome(change, Status.APPLIED)
    except DeadlinePassed as exc:
        return Outcome(change, Status.DEADLINE, str(exc))
    except CapacityRequestTimeout as exc:
        late = deadline.left() <= 0  # the wait was cut at the deadline
        return Outcome(change, Status.DEADLINE if late else Status.RETRY_NEXT_TICK, str(exc))
    except CapacityRequestError as exc:  # the state store failed
        return Outcome(change, Status.FAILED, str(exc))
    except UnsoundListing as exc:  # the target's minimum not known: counted, nothing moved
        return Outcome(change, Status.FAILED, str(exc))
    except (ClientError, BotoCoreError) as exc:
        status, message = _status(exc)
        return Outcome(change, status, message)


def apply(
    dynamodb: DynamoDBClient,
    aas: ApplicationAutoScalingClient,
    table: ManagedTable,
    changes: Sequence[Change],
    dry_run: bool,
    now: datetime | None = None,
    store: HoldStore | None = None,
    deadline: Deadline = NONE,
) -> list[Outcome]:
    """Apply one table's changes (or only report them, in dry-run mode). ``store``: the
    state store, which a change of a scalable target's minimum needs; ``deadline``: after
    it nothing is sent (the changes left are ``deadline-passed``)."""
    now = now or datetime.now(UTC)
    if dry_run:
        return [Outcome(c, Status.DRY_RUN) for c in changes]
    outcomes = [
        _move_min(store, aas, c, now, deadline) for c in changes if c.via == Via.SCALABLE_TARGET
    ]
    direct = [c for c in changes if c.via == Via.UPDATE_TABLE]
    if direct:
        try:
            outcomes += _update_table(dynamodb, table, direct, now, deadline, store)
        except LeasesNotGivenBack as exc:  # with every outcome of the table
            exc.outcomes = [*outcomes, *exc.outcomes]
            raise
    return outcomes
