"""Runs in: on-demand switch Lambda.

The capacity holds of a table its window's end brings back to provisioned, read from the hold
store of the ``CapacityRequests`` that serves it (`HOLD_STORES_ENV`): a request made while the
table was on-demand recorded its hold and raised nothing. The table returns no lower than the
level of its active holds (`held_levels`), and once its scalable targets are restored, each
held target's minimum is set to that level as a capacity request sets it
(`aws.minimum.set_minimum`, remembered in the hold store under the dimension's lease), so that
the holds' expiry lowers it again as it lowers any hold's raise. Holds that cannot be read (the
store failing, a malformed hold) are not known: the end fails (counted, alarmed) and the table
stays on-demand, serving, until the check finds them readable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..aws.error_codes import describe_error
from ..aws.minimum import set_minimum
from ..aws.store import HoldStore
from ..core.errors import SwitchError, shown
from ..core.holds import level
from ..core.memory import reconcile
from ..core.names import MAX_TABLE_QUOTA, is_table_name, resource_id, scalable_dimension
from ..core.tables import ScalableTarget
from .billing_plan import Target

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient

HOLD_STORES_ENV = "CAPACITY_WINDOW_HOLD_STORES"
"""The switch function's hold stores: a JSON list of ``[table, hold store]`` pairs, the
tables served by a ``CapacityRequests`` of the stack."""
MAX_PAGES = 2
"""The most pages (of 1 MB) of a table's partition of the hold store read (a dimension's item
keeps 2,000 holds at most, some 240 KB)."""
LEASE_WAIT_S = 20.0
"""How long the end waits for a held dimension's lease (a request or a restore holds it for
seconds)."""


def hold_stores(text: str | None) -> dict[str, str]:
    """The tables' hold stores from `HOLD_STORES_ENV`'s value (none: no table is served);
    SwitchError naming the variable for anything else than a list of pairs of names."""
    try:
        pairs = json.loads(text or "[]")
        found = {str(t): str(s) for t, s in pairs if is_table_name(t) and is_table_name(s)}
        if len(found) != len(pairs):
            raise ValueError("not a pair of table names")
    except (TypeError, ValueError) as exc:
        raise SwitchError(f"{HOLD_STORES_ENV}: got {shown(text, 200)} ({exc})") from None
    return found


def held_levels(store: HoldStore, table: str) -> dict[str, int]:
    """The level of the active holds of each held dimension of ``table`` (``"<index or
    ''>|read"`` to units, at most the largest table quota); SwitchError when they are not
    known: the store not read, or a malformed hold on a dimension."""
    now = datetime.fromtimestamp(store.clock(), UTC)
    try:
        dimensions = store.table(table, MAX_PAGES)
    except Exception as exc:
        raise SwitchError(
            f"table {table}: its capacity holds in {store.name} could not be read "
            f"({describe_error(exc)}); it stays on-demand until they are"
        ) from None
    levels = {}
    for d in dimensions:
        if d.malformed:
            raise SwitchError(
                f"table {table}: {len(d.malformed)} malformed capacity hold(s) in {store.name} "
                f"on {d.index or 'the table'} {d.dimension}; it stays on-demand until a restore "
                "drops them"
            )
        active = d.active(now)
        if active:
            levels[f"{d.index or ''}|{d.dimension}"] = min(level(active), MAX_TABLE_QUOTA)
    return levels


def hold_minimums(
    store: HoldStore,
    aas: ApplicationAutoScalingClient,
    table: str,
    targets: Sequence[Target],
    held: Mapping[str, int],
) -> None:
    """Under each held dimension's lease, the minimum of its restored target (in
    ``targets``) set to the level of its active holds read again (at most its maximum),
    remembered as a request's raise over the dimension's base; a minimum already there, or
    higher, is left as it is."""
    now = datetime.fromtimestamp(store.clock(), UTC)
    by_key = {(t.resource_id, t.dimension): t for t in targets}
    for key in held:
        index, dim = (key.split("|")[0] or None), key.split("|")[1]
        t = by_key.get((resource_id(table, index), scalable_dimension(index, dim)))
        if t is None:  # no target: the table's level alone holds it
            continue
        low, high = t.bounds
        deadline = store.clock() + LEASE_WAIT_S
        with store.lease(table, index, dim, deadline=deadline) as lease:
            fresh = store.get(table, index, dim)
            memory = reconcile(fresh, low)
            want = min(max(memory.base, level(fresh.active(now)) if fresh else 0), high)
            if want > low:
                target = ScalableTarget(t.resource_id, t.dimension, low, high, False)
                set_minimum(lease, aas, target, memory.base, want)
