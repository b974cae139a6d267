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

A request records, as the base its hold's end restores, what a fixed capacity has when its
first hold is made: during the step, possibly still the mark. So before the step lowers a fixed
capacity, or leaves it to holds that keep it at or above its mark, it records the settled level
(its ``Operating``) as that base, under the dimension's lease (`record_bases`): a hold's end
then lowers it to the settled level, or to what the other holds need, never back to the mark. A
base it cannot record leaves the dimension at its mark, counted as any other.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from botocore import exceptions as botocore_errors
from botocore.exceptions import ClientError

from ..aws.error_codes import describe_error, error_code, http_status, is_throttle
from ..aws.store import HoldLimits, HoldStore
from ..core.errors import CapacityRequestTimeout, HoldsUnread, shown_text
from ..core.holds import MAX_HOLD, level
from ..core.names import MAX_TABLE_QUOTA, scope_label
from .minimums import Minimums
from .settle_plan import SettleTarget
from .traffic import REASON_CHARS, Dim

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

WIDEST = HoldLimits(MAX_TABLE_QUOTA, MAX_HOLD, MAX_TABLE_QUOTA, MAX_TABLE_QUOTA)
"""The bounds a hold is read within: the widest any ``CapacityRequests`` allows (the step
serves the tables of every one of its stack, and is not told their own). A hold within them
is obeyed, which can only keep a dimension higher; one outside them no component wrote, and
leaves its dimension at its mark."""
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


BASES_WITHIN_S = 4.0
"""How long one call goes on starting to record the settled bases (`record_bases`), waiting for
a dimension's lease another process holds included; each record is three calls of one attempt
of 2 s at most (`aws.clients.SETTLE_WRITE_TIMEOUT_SECONDS`), 10 s at most in all, so that they
fit the function's shortest timeout beside its reads (48 s), and some 40 dimensions' records
(a table and 20 GSIs) of tens of milliseconds a call are begun within it."""


def record_bases(
    dynamodb: Callable[[], DynamoDBClient],
    store: str,
    table: str,
    targets: Sequence[SettleTarget],
    clock: Callable[[], float],
    *,
    patient: bool = False,
) -> dict[Dim, str]:
    """Record each of ``targets`` (fixed capacities) of ``table`` settled at its operating
    level in the hold store ``store``: its base, what the end of its last hold restores, under
    the dimension's lease, as a request or a release writes it; none begun `BASES_WITHIN_S`
    after the first. Returns why each one not recorded was not (to leave at its mark); while
    ``patient``, a lease not had in time or an error that may pass raises `HoldsUnread`
    instead, to try again at the next call."""
    until = clock() + BASES_WITHIN_S
    try:
        holds = HoldStore(dynamodb(), store, WIDEST, clock=clock, sleep=time.sleep)
    except Exception as exc:  # a client not made
        return _unrecorded(targets, store, exc, patient)
    for i, t in enumerate(targets):
        try:
            if clock() > until:
                raise CapacityRequestTimeout(f"not begun within {BASES_WITHIN_S:.0f} s")
            with holds.lease(table, t.index, t.dimension, deadline=until) as lease:
                lease.write(base=t.operating)
        except Exception as exc:  # denied, throttled, a lease held throughout, no such store
            return _unrecorded(targets[i:], store, exc, patient)
    return {}


def _unrecorded(
    targets: Sequence[SettleTarget], store: str, exc: Exception, patient: bool
) -> dict[Dim, str]:
    """Why each of ``targets`` stays at its mark, its settled base not recorded for ``exc``;
    while ``patient``, `HoldsUnread` for a lease not had in time or an error that may pass."""
    cause = exc.__context__ if isinstance(exc.__context__, ClientError) else exc
    if patient and (isinstance(exc, CapacityRequestTimeout) or passing(cause)):
        raise HoldsUnread(f"hold store {store}: {describe_error(cause)}") from exc
    reason = (
        f"its settled level could not be recorded as its base in the hold store {store} "
        f"({describe_error(cause)}): a capacity hold's end would bring it back to its mark"
    )
    return dict.fromkeys([t.key for t in targets], shown_text(reason, REASON_CHARS))
