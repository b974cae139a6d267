"""Runs in: scaler Lambda, workstation (examples, benchmarks).

One table as a tick will decide it (`prepare`): described with the state store's
memory of each minimum, 0.4's state tags moved into the store once, minimums someone else
set adopted as the configured ones, expired holds ended and active holds applied. No
lease is waited for and no control-plane call made once the tick's deadline has passed
(DeadlinePassed: the table is left for the next tick).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from typing import Any

from ..aws import discovery, table_calls
from ..aws.clients import Clients
from ..aws.error_codes import describe_error
from ..aws.store import HoldStore, Lease
from ..core import holds
from ..core.deadline import NONE, Deadline
from ..core.errors import TargetsUnknown as TargetsUnknown
from ..core.holds import HeldDimension
from ..core.memory import reconcile
from ..core.names import BASE_MIN_TAG, scope_label
from ..core.outcomes import Status
from ..core.settings import ScalerConfig
from ..core.tables import ManagedTable, ScalableTarget
from ..core.tags import parse_tags
from ..events import log_event


def own_targets(
    clients: Clients, name: str, description: Mapping[str, Any]
) -> dict[tuple[str, str], ScalableTarget]:
    """The scalable targets of one table and its GSIs, read for it alone (the account's
    listing failed). Raises TargetsUnknown when they cannot be read: nothing of the table
    may change then, since under a target the scaler must move the target's minimum, never
    the table itself."""
    try:
        return discovery.table_targets(clients.autoscaling, name, description)
    except Exception as exc:
        raise TargetsUnknown(
            f"scalable targets not read ({describe_error(exc)}): whether its dimensions are "
            "under auto scaling is not known, so none of them is changed this tick"
        ) from exc


def prepare(
    name: str,
    tags: dict[str, str] | None,
    config: ScalerConfig,
    clients: Clients,
    targets: Mapping[tuple[str, str], ScalableTarget] | None,
    now: datetime,
    store: HoldStore,
    held: list[HeldDimension],
    marked: bool | None,
    description: Mapping[str, Any] | None = None,
    deadline: Deadline = NONE,
) -> ManagedTable:
    """One table as the tick will decide it: described with the state store's memory of
    each minimum, 0.4's state tags moved into the store, minimums set by someone else made
    the configured ones, expired holds ended, active holds applied. ``targets`` None: the
    account's scalable targets could not be read, and the table's own are read for it.
    ``description``: its DescribeTable answer, when read already (checked managed).
    Raises NotManaged (skipped) or anything else (a failure of this table: TargetsUnknown
    when its targets cannot be read either; DeadlinePassed once ``deadline`` has passed
    before a lease wait or a control-plane call that changes or re-reads it)."""
    if targets is None:
        if description is None:
            description = table_calls.describe(clients.dynamodb, name)
            discovery.check_managed(description)
        targets = own_targets(clients, name, description)
    table = discovery.describe_table(
        clients.dynamodb, name, tags, config, targets, now, description=description, held=held
    )
    ignored = table.ignored_tags + sum(len(s.malformed) for s in held)
    for state in held:  # counted as the malformed holds are: the store is untrusted too
        if state.base_unread:
            ignored += 1
            _log_base_unread(state)
    if not config.dry_run:
        moved, legacy_ignored = move_legacy_state(
            clients, store, table, held, marked, config, now, deadline
        )
        ignored += legacy_ignored
        if moved:
            held = store.table(name)
            table = discovery.describe_table(
                clients.dynamodb, name, None, config, targets, now, held=held
            )
        changed = adopt_minimums_set_elsewhere(clients, store, table, deadline)
        if any(s.needs_restore(now) for s in held):
            targets = _end_expired(name, clients, store, held, now, deadline)
            changed = True
        if changed:
            held = store.table(name)
            table = discovery.describe_table(
                clients.dynamodb, name, None, config, targets, now, held=held
            )
    lifted = holds.lift(table, held, now, config.quota)
    return replace(lifted, ignored_tags=ignored)


def _end_expired(
    name: str,
    clients: Clients,
    store: HoldStore,
    held: list[HeldDimension],
    now: datetime,
    deadline: Deadline,
) -> Mapping[tuple[str, str], ScalableTarget]:
    """End the table's expired holds; returns its scalable targets read again (ending
    holds moved minimums: the account's listing is stale for this table). A tick imports
    the code that ends holds only when one has expired."""
    from ..aws.counts import dropped
    from ..aws.hold_table import restore_expired

    rows = restore_expired(
        name,
        store=store,
        clients=clients,
        clock=now.timestamp,
        lower_direct=False,
        held=held,
        stop=deadline,
    )
    for ended in rows:  # a busy row ended nothing: its holds stay for a later tick
        log_event("hold-kept" if ended.get("status") == Status.BUSY else "hold-ended", **ended)
    dropped(rows)  # counted as the broker's restore counts them: HoldsDropped
    deadline.check(f"DescribeTable of {name}")
    fresh = table_calls.describe(clients.dynamodb, name)
    return own_targets(clients, name, fresh)


LEASE_WAIT_SECONDS = 5
"""How long a change of the store here waits for its dimension's lease."""


def _lease(
    store: HoldStore, table: str, index: str | None, dim: str, deadline: Deadline
) -> AbstractContextManager[Lease]:
    """The dimension's lease, waited for `LEASE_WAIT_SECONDS` and no later than
    ``deadline`` (DeadlinePassed when it has passed already)."""
    deadline.check(f"the lease of {table} {index or 'table'} {dim}")
    until = deadline.wait_until(store.clock(), LEASE_WAIT_SECONDS)
    return store.lease(table, index, dim, deadline=until)


STATE_MARKER = "state-in-store"
"""The marker of a table whose state a 0.5 tick has taken in hand (`HoldStore.mark`)."""


def move_legacy_state(
    clients: Clients,
    store: HoldStore,
    table: ManagedTable,
    held: list[HeldDimension],
    marked: bool | None,
    config: ScalerConfig,
    now: datetime,
    deadline: Deadline = NONE,
) -> tuple[bool, int]:
    """The first time a tick sees a table (``marked`` False), move 0.4's state tags into
    the state store, within an upgrade's window only (``config.read_legacy_state_until``,
    on ``now``'s UTC day: `ScalerConfig.legacy_state_refused`): a remembered
    minimum becomes the dimension's memory unless the store has one already, its base
    never below the dimension's configured minimum (`legacy_floor`: a tag never
    lowers a minimum); plans are made anew each hour, so an old plan tag is only removed.
    The tags go (one UntagResource), then the table is marked, so a failure on the way
    makes the next tick try again. State tags found outside the window, or on a marked
    table, are not state (tags are configuration, and anyone allowed to tag could write
    them): removed unread, and counted as ignored. ``marked`` None (the store could not be
    read): nothing is done. Returns whether the store changed, and how many tags were
    ignored."""
    if marked is None or (marked and not table.legacy_tags):
        return False, 0
    moved: list[dict[str, Any]] = []
    refused = (
        "a state tag on a table whose state is in the state store already"
        if marked
        else config.legacy_state_refused(now)
    )
    if refused is None:
        unplaced = _move_memories(store, table, held, config, deadline, moved)
    else:
        unread = _well_formed(table)
        _log_unread(table, refused, unread)
    if table.legacy_tags:
        deadline.check(f"UntagResource of {table.name}")
        table_calls.untag(clients.dynamodb, table.arn, table.legacy_tags)
        log_event("state-moved-from-tags", table=table.name, moved=moved, removed=table.legacy_tags)
    if not marked:
        store.mark(table.name, STATE_MARKER)
    return bool(moved), unplaced if refused is None else len(unread)


def _move_memories(
    store: HoldStore,
    table: ManagedTable,
    held: list[HeldDimension],
    config: ScalerConfig,
    deadline: Deadline,
    moved: list[dict[str, Any]],
) -> int:
    """Move each remembered minimum of 0.4's tags that the store has none of into it, its
    base never below `legacy_floor` (each added to ``moved``); returns how many
    named no dimension of the table."""
    unplaced = 0
    in_store = {h.scope for h in held if h.base is not None}
    for scope, memory in sorted(table.legacy_memories.items(), key=str):
        if scope in in_store:
            continue
        index, dim = scope
        floor = legacy_floor(table, scope, config)
        if floor is None:
            unplaced += 1
            key = f"{BASE_MIN_TAG}{scope_label(index)}:{dim}"
            _log_unread(table, "it names no dimension of the table", [key])
            continue
        base = max(memory.base, floor)
        with _lease(store, table.name, index, dim, deadline) as lease:
            fresh = store.get(table.name, index, dim)
            if fresh is not None and fresh.base is not None:
                continue
            raised = memory.set_to if memory.set_to and memory.set_to > base else None
            if raised is not None:  # a base alone says nothing the target does not
                lease.write(base, set_to=raised)
            moved.append({"index": index, "dimension": dim, "base": base, "set": raised})
    return unplaced


def legacy_floor(
    table: ManagedTable, scope: tuple[str | None, str], config: ScalerConfig
) -> int | None:
    """The lowest base a 0.4 memory of ``scope`` (index, dimension) may give: the minimum
    the deployment states for the dimension (`ScalerConfig.configured_min`), else
    the minimum its scalable target has now (or, without a target, its limits' minimum).
    None: the table has no such dimension now (the memory is not moved)."""
    for d in table.dimensions:
        if (d.index, d.dimension) == scope:
            configured = config.configured_min(table.name, d.dimension)
            if configured is not None:
                return configured
            return d.target.min_capacity if d.target else d.limits.min_capacity
    return None


def _well_formed(table: ManagedTable) -> list[str]:
    """The table's state tags that discovery did not count as ignored already (malformed
    ones are counted, and logged, where they are parsed)."""
    state = {k: table.tags[k] for k in table.legacy_tags if k in table.tags}
    malformed = {tag.key for tag in parse_tags(state).ignored}
    return [k for k in table.legacy_tags if k not in malformed]


def _log_base_unread(state: HeldDimension) -> None:
    """One ``base-unread`` warning: the dimension's stored base is not one (counted as
    ``IgnoredTags``); the target's minimum now stands for it, never lower."""
    log_event(
        "base-unread",
        level=logging.WARNING,
        table=state.table,
        index=state.index,
        dimension=state.dimension,
        reason="the state store's base (the configured minimum) is not a whole number within "
        "its bounds: the minimum the dimension has now stands for it",
    )


def _log_unread(table: ManagedTable, why: str, keys: list[str]) -> None:
    """One ``tag-ignored`` event a state tag removed unread, as discovery logs the others."""
    for key in keys:
        log_event(
            "tag-ignored",
            level=logging.WARNING,
            table=table.name,
            key=key,
            reason=f"{why}: not read, and removed",
        )


def adopt_minimums_set_elsewhere(
    clients: Clients, store: HoldStore, table: ManagedTable, deadline: Deadline = NONE
) -> bool:
    """Record, for each dimension whose minimum someone else set (its memory says
    ``changed_elsewhere``), that minimum as its configured one: the library forgets what
    it had set, so it never undoes the change nor reads it as its own later. Under the
    dimension's lease, the item and the target's minimum are read again first: what the
    tick listed may be stale. Returns whether anything changed."""
    changed = False
    for d in table.dimensions:
        if d.target is None or d.memory is None or not d.memory.changed_elsewhere:
            continue
        with _lease(store, d.table, d.index, d.dimension, deadline) as lease:
            fresh = store.get(d.table, d.index, d.dimension)
            deadline.check(f"DescribeScalableTargets of {d.target.resource_id}")
            # an answer not to be trusted (UnsoundListing) fails the table, counted: its
            # minimum is not known, and deciding on it could undo the change made elsewhere
            minimum = discovery.current_minimum(clients.autoscaling, d.target)
            if fresh is None or minimum is None:
                continue
            memory = reconcile(fresh, minimum)
            if memory.changed_elsewhere:
                lease.write(memory.base, set_to=None, intent=None)
                changed = True
    return changed


def without_bad_targets(table: ManagedTable) -> ManagedTable:
    """``table`` without the dimensions whose scalable target reports a minimum above its
    maximum (counted in ``table.bad_targets``): they are held, neither decided nor acted on,
    until the target is fixed."""
    if not table.bad_targets:
        return table
    kept = [d for d in table.dimensions if d.target is None or not d.target.inverted]
    return replace(table, dimensions=kept)
