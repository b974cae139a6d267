"""Runs in: settle Lambda.

The capacity holds of the dimensions a settle step would lower, read from the hold store of
the ``CapacityRequests`` that serves the table (the step's ``HoldStore`` property).

A capacity request's hold raises a dimension for a batch job: its scalable target's
MinCapacity where it has one, else its provisioned capacity itself (an UpdateTable). The step
reads an auto-scaled dimension's MinCapacity on an Update (`minimums.live_minimums`); but a
dimension with no scalable target (a fixed capacity) has no minimum to read, and a new table's
(a Create) is read nothing at all. So those are lowered no further than the level of their
active holds (`core.holds.level`, the one rule every component follows); where the holds are
not known (the store could not be read, or holds a hold no component could have written),
the dimension is not lowered at all: it stays at its mark. Unknown data never lowers capacity,
and never fails the deploy either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..aws.error_codes import describe_error
from ..aws.store import HoldLimits, HoldStore
from ..core.errors import shown_text
from ..core.holds import MAX_HOLD, level
from ..core.names import MAX_TABLE_QUOTA, scope_label
from .minimums import Minimums
from .settle_plan import SettleTarget
from .traffic import REASON_CHARS

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

WIDEST = HoldLimits(MAX_TABLE_QUOTA, MAX_HOLD, MAX_TABLE_QUOTA, MAX_TABLE_QUOTA)
"""The bounds a hold is read within: the widest any ``CapacityRequests`` allows (the step
serves the tables of every one of its stack, and is not told their own). A hold within them
is obeyed, which can only keep a dimension higher; one outside them no component wrote, and
leaves its dimension at its mark."""


def held_levels(
    dynamodb: Callable[[], DynamoDBClient],
    store: str,
    table: str,
    targets: Sequence[SettleTarget],
    now: datetime,
) -> Minimums:
    """The level of the active holds on each of ``targets`` of ``table`` (``held``: none
    for a dimension not held), from one paginated Query of the table's partition of the
    hold store ``store`` (``dynamodb`` makes the client). Never raises: a read that fails
    leaves every target at its mark (``left``), and so do malformed holds on a target."""
    if not targets:
        return Minimums()
    try:
        dimensions = HoldStore(dynamodb(), store, WIDEST, clock=now.timestamp).table(table)
    except Exception as exc:  # a client not made, denied, throttled, no such store
        reason = f"its capacity holds could not be read (hold store {store}: {describe_error(exc)})"
        return Minimums(left={t.key: shown_text(reason, REASON_CHARS) for t in targets})
    by_scope = {d.scope: d for d in dimensions}
    found = Minimums()
    for t in targets:
        held = by_scope.get(t.key)
        if held is None:
            continue
        if held.malformed:
            found.left[t.key] = (
                f"the hold store {store} holds {len(held.malformed)} malformed hold(s) of "
                f"{scope_label(t.index)} {t.dimension}: what it holds is not known"
            )
            continue
        active = held.active(now)
        if active:
            found.held[t.key] = min(level(active), MAX_TABLE_QUOTA)
    return found
