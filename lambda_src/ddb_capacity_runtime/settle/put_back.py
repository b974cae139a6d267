"""Runs in: settle Lambda.

What the settle step does once it has lowered its table: the floors of what it lowered read
again at a later call, a dimension whose floor rose put back at its mark, and every dimension
the step leaves at its mark logged and counted.

The provider passes each call the same event, and a call that is not done may return nothing
to the next one; so a call knows the step has lowered from the table itself: DescribeTable's
``LastDecreaseDateTime`` of the table or of a GSI the deploy provisioned, at or after the
step's first call (`decreased_since`). Once it shows one, the step lowers nothing more (one
decrease, one UpdateTable), and later calls look only at the dimensions the step lowered: those
below their mark on a table or GSI decreased since it began (a dimension that was below its
mark before, a replaced step's or auto scaling's, is not the step's to put back).

Those floors are read once the table is ACTIVE again, a provider's interval (10 s) or more
after the decrease, so what a capacity request recorded while DescribeTable still showed it
the table from before the decrease has landed by then. One whose floor (its scalable target's
MinCapacity, its holds' level) now stands above its capacity, or that cannot be read, is put
back at its high-water mark: what the table held minutes before, within the account's
quotas, whatever a hold says (a request, or auto scaling, raises it further).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from ..aws import table_calls
from ..aws.error_codes import error_code, is_throttle
from ..core.names import METRICS_NAMESPACE
from ..core.tables import spec_of, units_of
from ..events import LAMBDA_ENV, count_in_lambda, log_event
from .floors import Readers, read_floors, risen, why_risen
from .settle_plan import (
    FINISH_S,
    SETTLE_FUNCTION_DIMENSION,
    SETTLE_LEFT,
    SettleTarget,
    at_mark,
    settle_levels,
    update_request,
)
from .traffic import Dim, Needs

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Waiting = tuple[str, float]
"""A call's answer while the step is not done: the status it logs, and the time (seconds since
the epoch) past which a call answered so fails the step instead (``math.inf``: none)."""


def is_active(description: Mapping[str, Any]) -> bool:
    """Whether the table and all its GSIs are ACTIVE (``description``: DescribeTable's
    ``Table``)."""
    return description["TableStatus"] == "ACTIVE" and all(
        gsi.get("IndexStatus", "ACTIVE") == "ACTIVE"
        for gsi in description.get("GlobalSecondaryIndexes", [])
    )


def _decreased(description: Mapping[str, Any], index: str | None, since: float) -> bool:
    """Whether DescribeTable (``description``) dates a decrease of the table (``index``
    None) or of its GSI ``index`` at or after ``since`` (untrusted: a date that is not one is
    taken for a decrease, and lowers nothing more)."""
    throughput = spec_of(description, index).get("ProvisionedThroughput")
    last = throughput.get("LastDecreaseDateTime") if isinstance(throughput, Mapping) else None
    if last is None:
        return False
    return not isinstance(last, datetime) or last.timestamp() >= since


def decreased_since(
    description: Mapping[str, Any], provisioned: Sequence[SettleTarget], since: float
) -> set[str | None]:
    """The table (None) and GSIs of the ``provisioned`` dimensions whose decrease DescribeTable
    (``description``) dates at or after ``since``, the step's first call: none while the step
    has not lowered."""
    return {t.index for t in provisioned if _decreased(description, t.index, since)}


@dataclass(frozen=True)
class Window:
    """The step's time: its ``clock``, its first call (``began``) and ``settle_by``, by when
    its table must be ACTIVE (seconds since the epoch). A step that has lowered waits for the
    table to be ACTIVE again until `end`."""

    clock: Callable[[], float]
    began: float
    settle_by: float

    @property
    def end(self) -> float:
        """The last time a call still waits, `settle_plan.FINISH_S` past ``settle_by``: the
        provider asks for some 20 s more, so the step's own answer comes first."""
        return self.settle_by + FINISH_S


LOWERED = (
    "lowered: the floors of what it lowered are read again at a later call, once the table "
    "is ACTIVE again"
)
"""The status of the call that lowered (its floors read again later: `after_lowering`)."""


def after_lowering(
    dynamodb: DynamoDBClient,
    description: Mapping[str, Any],
    lowered: tuple[Sequence[SettleTarget], set[str | None]],
    readers: Readers,
    window: Window,
) -> bool | Waiting:
    """A call after the step lowered (``lowered``: the dimensions this deploy provisioned,
    and those of their table and GSIs decreased since the step began, `decreased_since`):
    once the table is ACTIVE again, the floors of the dimensions the step lowered (those
    below their mark) and of those still at their mark read in one pass
    (`floors.read_floors`; an error that may pass is no reason to wait: what cannot be read
    is put back), and each lowered one whose floor is above its capacity, or unknown, put
    back at its mark in one UpdateTable (`put_back`). This call decides for good: every
    dimension left at its mark, or put back there, is logged and counted once
    (`report_left`; one still at its mark that its floors do not hold there says the step
    did not lower it: `NOT_LOWERED`). True: the step is done. A table not ACTIVE again, or
    another update in flight, is waited for until `Window.end`; then the step is done all
    the same, each dimension it could not check or put back logged and counted, saying
    why."""
    name, now = description["TableName"], window.clock()
    provisioned, decreased = lowered
    if not is_active(description):
        return still_updating(description, lowered, window)
    capacity = {t.key: units_of(description, t.index)[t.dimension] for t in provisioned}
    mine = [t for t in provisioned if t.index in decreased and capacity[t.key] < t.high_water_mark]
    marked = at_mark(description, provisioned)
    needs, floors = read_floors(readers, marked, mine, (now, False))
    left = unlowered(description, marked, needs)
    back = risen(capacity, mine, floors)
    if not back:
        log_event("settle-floors-held", table=name, checked=[[t.index, t.dimension] for t in mine])
        report_left(name, marked, Needs(left=left), window.clock())
        return True
    failed = _put_back(dynamodb, description, back)
    if failed is not None and window.clock() <= window.end:
        return f"{LOWERED}: a floor rose, put back once the table takes it ({failed})", math.inf
    done, consequence = (
        ("put back", None)
        if failed is None
        else (f"not put back: another update of the table ({failed})", RAISE_IT)
    )
    reasons = {t.key: why_risen(t, capacity[t.key], floors, done) for t in mine if t.key in back}
    for t in (t for t in mine if t.key in back):
        log_event(
            "settle-floor-risen",
            level=logging.WARNING,
            table=name,
            index=t.index,
            dimension=t.dimension,
            reason=reasons[t.key],
        )
    ways = dict.fromkeys(reasons, consequence) if consequence else None
    report_left(name, [*mine, *marked], Needs(left={**left, **reasons}), window.clock(), ways)
    return True


NOT_LOWERED = (
    "still at its mark, its floors below it: the step did not lower it (its floors were not "
    "known when it lowered, or another writer, auto scaling or the scaler, decreased the "
    "table or a GSI first, which the step took for its own decrease)"
)
"""Why a dimension still at its mark once the step is done stays there, where its floors now
do not hold it there."""


def unlowered(
    description: Mapping[str, Any], marked: Sequence[SettleTarget], needs: Needs
) -> dict[Dim, str]:
    """Why each of the dimensions ``marked`` (still at their mark once the step has lowered)
    stays there: its floor unknown (``needs.left``), or nothing that holds it there
    (`NOT_LOWERED`); one whose floor now (``needs``: its traffic's need, its MinCapacity,
    its holds) is at or above its mark is where it belongs, and not here."""
    lowerable = settle_levels(description, marked, needs.lowest)
    return {
        t.key: needs.left.get(t.key, NOT_LOWERED)
        for t in marked
        if t.key in needs.left or t.key in lowerable
    }


def still_updating(
    description: Mapping[str, Any],
    lowered: tuple[Sequence[SettleTarget], set[str | None]],
    window: Window,
    waiting: str = LOWERED,
) -> bool | Waiting:
    """A table not ACTIVE again once the step may have lowered it (``lowered``: the
    dimensions this deploy provisioned, and the table and GSIs it may have decreased):
    waited for until `Window.end` (``waiting``, the status logged); then the step is done
    all the same, each dimension still at its mark and each one below it of a table or GSI
    it may have decreased logged and counted once, as not checked."""
    now, status = window.clock(), str(description["TableStatus"])
    if now <= window.end:
        return f"{waiting} (status {status})", math.inf
    provisioned, decreased = lowered
    marked = at_mark(description, provisioned)
    keys = {t.key for t in marked}
    unchecked = [  # below their mark, as a decrease leaves them: above it is none of the step's
        t
        for t in provisioned
        if t.index in decreased
        and t.key not in keys
        and units_of(description, t.index)[t.dimension] < t.high_water_mark
    ]
    why = dict.fromkeys([t.key for t in unchecked], UNCHECKED.format(status=status))
    why.update(dict.fromkeys(keys, STILL_AT_MARK.format(status=status)))
    ways = dict.fromkeys([t.key for t in unchecked], CHECK_IT)
    report_left(description["TableName"], [*unchecked, *marked], Needs(left=why), now, ways)
    return True


def _put_back(
    dynamodb: DynamoDBClient, description: Mapping[str, Any], back: Mapping[Dim, int]
) -> str | None:
    """`put_back`: None once sent, or the error where another update of the table is in
    flight or the call is throttled (the next call tries again, until `Window.end`)."""
    try:
        put_back(dynamodb, description, back)
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException" and not is_throttle(exc):
            raise
        return str(exc)
    return None


UNCHECKED = (
    "lowered, its floors not read again: the table is still {status} at the step's end (its "
    "decrease outlasted the step)"
)
STILL_AT_MARK = (
    "still at its mark at the step's end, the table {status}: the step did not lower it, "
    "or its decrease had not taken effect"
)
"""Why a dimension of a table or GSI the step decreased goes unchecked, or one still at its
mark at the step's end stays there unread."""
CHECK_IT = (
    "its capacity holds and MinCapacity not checked against what it was lowered to: raise it "
    "where they are above it (aws dynamodb update-table; docs/operations/alarms.md, Settle left)"
)
RAISE_IT = (
    "below its floor: raise it to its high-water mark (aws dynamodb update-table; "
    "docs/operations/alarms.md, Settle left)"
)
"""What becomes of a dimension the step could not check, or put back (``settle-left``'s
consequence): until someone raises it, a capacity request's second look or auto scaling
(for its MinCapacity) does."""


def put_back(
    dynamodb: DynamoDBClient, description: Mapping[str, Any], back: Mapping[Dim, int]
) -> None:
    """Set each dimension of ``back`` to its level (its high-water mark: `floors.risen`), all
    in one UpdateTable, logged (``settle-raise-back``)."""
    update = update_request(description, back)
    if update is None:
        return
    log_event("settle-raise-back", table=description["TableName"], update=update)
    table_calls.update(dynamodb, update)


LEFT_FOR_AUTO_SCALING = "left at its high-water mark: auto scaling lowers it"
LEFT_FIXED = (
    "left at its high-water mark: a fixed capacity (no scalable target), it stays there until "
    "someone lowers it (aws dynamodb update-table; docs/operations/alarms.md, Settle left)"
)
"""What becomes of a dimension left at its mark, by kind (``settle-left``'s consequence)."""


def report_left(
    name: str,
    targets: Sequence[SettleTarget],
    needs: Needs,
    now: float,
    consequence: str | Mapping[Dim, str] | None = None,
) -> None:
    """Each of ``targets`` left at its mark (``needs.left``) logged (``settle-left``, with
    what becomes of it: auto scaling lowers an auto-scaled one, a fixed one stays) and, in
    a Lambda function, counted at ``now`` (`SETTLE_LEFT`, for the table and for the settle
    function; a count that cannot be written fails nothing): the deploy goes on. Called
    once for each dimension, by the call that decides it for good; ``consequence``, what
    becomes of them (or of each one it names) where it is not that."""
    left = [t for t in targets if t.key in needs.left]
    for t in left:
        log_event(
            "settle-left",
            level=logging.WARNING,
            table=name,
            index=t.index,
            dimension=t.dimension,
            high_water_mark=t.high_water_mark,
            reason=needs.left[t.key],
            consequence=(
                consequence.get(t.key) if isinstance(consequence, Mapping) else consequence
            )
            or (LEFT_FIXED if t.target_utilization is None else LEFT_FOR_AUTO_SCALING),
        )
    if left:
        count_in_lambda(
            METRICS_NAMESPACE,
            SETTLE_LEFT,
            len(left),
            store=os.environ.get(LAMBDA_ENV, "").strip() or None,
            dimension=SETTLE_FUNCTION_DIMENSION,
            table=name,
            at=now,
        )
