"""Runs in: settle Lambda.

The capacity holds of the dimensions a settle step would lower, read from the hold store of
the ``CapacityRequests`` that serves the table (the step's ``HoldStore`` property).

A capacity request's hold raises a dimension for a batch job: its scalable target's
MinCapacity where it has one, else its provisioned capacity itself (an UpdateTable). The step
reads an auto-scaled dimension's MinCapacity (`minimums.live_minimums`); but a dimension with
no scalable target (a fixed capacity) has no minimum to read, and a new table's (a Create)
may have its holds before its scalable targets are registered. So those are lowered no
further than the level of their active holds (`core.holds.level`, the one rule every
component follows); where the holds are not known (the store could not be read, or holds a
hold no component could have written), the dimension is not lowered at all: it stays at its
mark. Once the step has lowered, it reads the holds of what it lowered again
(`floors.read_floors`). Unknown data never lowers capacity, and never fails the deploy
either.

An error that may pass (`passing`: a throttle, a server's error or timeout, or a denial
while IAM applies the ``ReadHolds`` statement the same deploy added) is no reason to leave a
dimension at its mark for good: within `settle_plan.PERMISSION_WAIT_S` of the step's first
call the step waits and reads again at the provider's next call (`HoldsUnread`), and only
after that leaves its dimensions at their mark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from botocore import exceptions as botocore_errors

from ..aws.error_codes import describe_error, error_code, http_status, is_throttle
from ..aws.hold_bounds import WIDEST
from ..aws.store import HoldStore
from ..core.errors import HoldsUnread, shown_text
from ..core.holds import level
from ..core.names import MAX_TABLE_QUOTA, scope_label
from .minimums import Minimums
from .settle_plan import SettleTarget
from .traffic import REASON_CHARS

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

MAX_HOLD_PAGES = 2
"""The most pages (of 1 MB) of the hold store's Query the step reads, each within the store
client's `aws.clients.call_bound` (11 s): a table's holds fill far less (a dimension's item
keeps 2,000 holds at most, some 240 KB), and one whose items take more is left at its mark."""


def passing(exc: BaseException) -> bool:
    """Whether ``exc`` may pass by the next call: `outlasting_retries`, or a denial (IAM
    applies a statement added in the same deploy within seconds)."""
    return outlasting_retries(exc) or error_code(exc) in ("AccessDeniedException", "AccessDenied")


def outlasting_retries(exc: BaseException) -> bool:
    """Whether ``exc`` is an error that may pass, which outlasted the client's retries: a
    throttle, a server's error (5xx), a connection or a read that timed out."""
    if is_throttle(exc):
        return True
    if isinstance(exc, botocore_errors.HTTPClientError | botocore_errors.ConnectionError):
        return True
    status = http_status(exc)
    return status is not None and status >= 500


def held_levels(
    dynamodb: Callable[[], DynamoDBClient],
    store: str,
    table: str,
    targets: Sequence[SettleTarget],
    now: datetime,
    *,
    patient: bool = False,
) -> Minimums:
    """The level of the active holds on each of ``targets`` of ``table`` (``held``: none
    for a dimension not held), from one paginated Query of the table's partition of the
    hold store ``store`` (``dynamodb`` makes the client; `MAX_HOLD_PAGES` pages at most).
    A read that fails leaves every target at its mark (``left``), and so do malformed holds
    on a target; but while ``patient``, an error that may pass (`passing`) raises
    `HoldsUnread`, to read again at the next call."""
    if not targets:
        return Minimums()
    try:
        holds = HoldStore(dynamodb(), store, WIDEST, clock=now.timestamp)
        dimensions = holds.table(table, MAX_HOLD_PAGES)
    except Exception as exc:  # a client not made, denied, throttled, no such store, too long
        if patient and passing(exc):
            raise HoldsUnread(f"hold store {store}: {describe_error(exc)}") from exc
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
