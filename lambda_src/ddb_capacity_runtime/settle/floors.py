"""Runs in: settle Lambda.

What bounds the lowering of a table's dimensions, read before the settle step lowers them,
and read again once it has (`read_floors`: one pass, at most one read of each kind).

Before: on an Update, what a live table's traffic needs (`traffic.traffic_needs`); on a
Create and an Update alike, each auto-scaled dimension's scalable target's MinCapacity now
(`minimums.live_minimums`); with a hold store, the active holds of those no minimum bounds
(`live_holds.held_levels`).

After: what was read before is already old when the UpdateTable lands. A capacity request
records its hold first and raises the table (or its scalable target's minimum) after, and
only where the table it read lacks the capacity: one that read the table at its mark, before
the step lowered it, records its hold and raises nothing. A scheduled action, the scaler or a
request of another stack may raise a minimum at any time too. So at a later call, once the
table is ACTIVE again, the step reads the floors of what it lowered again (each auto-scaled
one's MinCapacity, and with a hold store every one's holds): one whose floor rose above its
capacity, or that can no longer be read, is put back at its mark (`risen`; `put_back`). What
a request records after that second read, it sees for itself: it reads the table again once
its hold is recorded (`requests.context.still_has`), and raises it where it was lowered
meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..core.errors import shown_text
from .live_holds import held_levels
from .minimums import Minimums, live_minimums
from .settle_plan import SettleTarget
from .traffic import REASON_CHARS, Dim, Needs, traffic_needs

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class Readers:
    """How one step reads the floors of its table ``table``: the makers of its clients (its
    traffic's, its minimums' and its hold store's), the hold store ``store`` (None: no
    ``CapacityRequests`` serves the table, no holds read), and whether the table is
    ``new`` (a Create: no traffic to read; a scalable target not listed yet has no
    minimum)."""

    table: str
    store: str | None
    new: bool
    cloudwatch: Callable[[], CloudWatchClient]
    autoscaling: Callable[[], ApplicationAutoScalingClient]
    holds: Callable[[], DynamoDBClient]


When = tuple[float, bool]
"""The time now (seconds since the epoch), and whether the step still waits for a hold read's
error that may pass (`core.errors.HoldsUnread`: within `settle_plan.PERMISSION_WAIT_S` of
its first call)."""


def read_floors(
    readers: Readers,
    chosen: Sequence[SettleTarget],
    below: Sequence[SettleTarget] = (),
    when: When = (0.0, False),
) -> tuple[Needs, Needs]:
    """What bounds the lowering of the dimensions ``chosen`` (still at their mark), and the
    floors now of those ``below`` their mark, in one pass: at most one read of each kind.

    Of the ``chosen``: on an Update, their traffic's needs; then the minimums now of the
    auto-scaled ones whose need is known (on a Create, all of them); with a hold store, the
    active holds of those no minimum bounds and not left yet (a fixed capacity, and on a
    Create every dimension). Of those ``below``: each auto-scaled one's minimum now and,
    with a hold store, every one's holds (``minimums``, ``held``). Each dimension whose
    bound is unknown is ``left``. A hold read that meets an error that may pass, while
    ``when`` (the time now, and whether the step still waits for such an error) is
    patient, raises `core.errors.HoldsUnread`."""
    now = datetime.fromtimestamp(when[0], UTC)
    needs, floors = Needs(), Needs()
    if not readers.new:
        needs = traffic_needs(readers.cloudwatch, readers.table, chosen, now)
    unbounded = [t for t in chosen if t.key not in needs.left]
    found = live_minimums(
        readers.autoscaling, readers.table, [*unbounded, *below], new_table=readers.new
    )
    _split(found, (needs.minimums, needs.left), (floors.minimums, floors.left), below)
    if readers.store is not None:
        unheld = [
            t
            for t in chosen
            if t.key not in needs.left
            and (t.target_utilization is None or t.key not in needs.floors)
        ]
        found = held_levels(
            readers.holds, readers.store, readers.table, [*unheld, *below], now, patient=when[1]
        )
        _split(found, (needs.held, needs.left), (floors.held, floors.left), below)
    return needs, floors


def _split(
    found: Minimums,
    chosen: tuple[dict[Dim, int], dict[Dim, str]],
    below: tuple[dict[Dim, int], dict[Dim, str]],
    of_below: Sequence[SettleTarget],
) -> None:
    """Sort what one read ``found`` (its ``held`` and ``left``) into the ``below``
    dimensions' (the keys of ``of_below``) and the ``chosen`` ones'."""
    keys = {t.key for t in of_below}
    for key, units in found.held.items():
        (below if key in keys else chosen)[0][key] = units
    for key, why in found.left.items():
        (below if key in keys else chosen)[1][key] = why


def risen(
    levels: Mapping[Dim, int], targets: Sequence[SettleTarget], floors: Needs
) -> dict[Dim, int]:
    """Each of ``targets`` whose floor now (``floors``: its MinCapacity, its holds' level) is
    above its level in ``levels``, or cannot be read: the level it goes back to, its
    high-water mark. Never the floor itself, where that is higher: a hold's level is
    untrusted (the widest any store allows may exceed the account's quota, and fail the
    UpdateTable), while the mark is what the table held minutes before; a request, or auto
    scaling for a MinCapacity, raises it further. Pure."""
    back: dict[Dim, int] = {}
    for t in targets:
        floor = max(floors.minimums.get(t.key, 0), floors.held.get(t.key, 0))
        if t.key in floors.left or floor > levels[t.key]:
            back[t.key] = t.high_water_mark
    return back


def why_risen(t: SettleTarget, level: int, floors: Needs, done: str = "put back") -> str:
    """Why ``t``, at ``level``, goes back to its mark (`risen`): its floor now, or why that
    cannot be read, then what was ``done`` (at most `traffic.REASON_CHARS` characters)."""
    where = f"at {level:,}, below its mark"
    if t.key in floors.left:
        why = f"{where}, and its floor could not be read ({floors.left[t.key]})"
    else:
        minimum, held = floors.minimums.get(t.key, 0), floors.held.get(t.key, 0)
        said = [
            *([f"its scalable target's MinCapacity is {minimum:,}"] if minimum > level else []),
            *([f"its active capacity holds are at {held:,}"] if held > level else []),
        ]
        why = f"{where}, while {' and '.join(said)}"
    return shown_text(f"{why}: {done}", REASON_CHARS)
