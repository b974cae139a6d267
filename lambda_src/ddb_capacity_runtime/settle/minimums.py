"""Runs in: settle Lambda.

The minimum now of each auto-scaled dimension a settle step would lower, read before it
lowers it (on a Create and on an Update alike), and again once it has lowered it.

The template's minimum is not the only one: a capacity request's hold raises a dimension's
scalable target's MinCapacity for a batch job, and so does a scheduled action (or the scaler,
or a ``CapacityRequests`` of another stack, on a table new or not). Auto scaling only acts on
that minimum at its next scaling activity, so a settle below it would throttle the job until
then. So each auto-scaled dimension (a target with a ``TargetUtilization``) is lowered no
further than its scalable target's MinCapacity now; where that minimum is not known (the read
failed, or its MinCapacity is not a whole number of units DynamoDB takes), the dimension is
not lowered at all: it stays at its mark, for auto scaling to lower. A live table's target
that is not listed is not known either; but a new table's (a Create's) may not be registered
yet, since CloudFormation registers it beside the step: it has no minimum (once registered,
Application Auto Scaling brings the table within its range itself). The read is retried as
the settle function's client retries (a throttle, a server's error). Unknown data never
lowers capacity, and never fails the deploy either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..aws.discovery import listed_targets
from ..aws.error_codes import describe_error
from ..core.errors import shown, shown_text
from ..core.names import MAX_TABLE_QUOTA, resource_id, scalable_dimension, whole_units
from .settle_plan import SettleTarget
from .traffic import REASON_CHARS, Dim

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient


@dataclass(frozen=True)
class Minimums:
    """What the scalable targets read say: ``held``, each dimension's MinCapacity now;
    ``left``, why each other one must stay at its mark."""

    held: dict[Dim, int] = field(default_factory=dict)
    left: dict[Dim, str] = field(default_factory=dict)


def live_minimums(
    autoscaling: Callable[[], ApplicationAutoScalingClient],
    table: str,
    targets: Sequence[SettleTarget],
    *,
    new_table: bool = False,
) -> Minimums:
    """The MinCapacity now of the scalable target of each auto-scaled ``targets`` of
    ``table`` (those with a target utilization; the others have none, and are not read),
    from one DescribeScalableTargets listing of the table's and its GSIs' resources
    (``autoscaling`` makes the client). Never raises: a read that fails leaves every
    dimension it read at its mark. A target not listed leaves its dimension at its mark
    too, but that of a ``new_table`` (a Create's, maybe not registered yet) has no
    minimum."""
    read = [t for t in targets if t.target_utilization is not None]
    if not read:
        return Minimums()
    keys = [(resource_id(table, t.index), scalable_dimension(t.index, t.dimension)) for t in read]
    try:
        listed = listed_targets(autoscaling(), sorted({rid for rid, _ in keys}))
    except Exception as exc:  # a client not made, denied, throttled, an unsound answer
        reason = (
            "its scalable target's minimum now could not be read "
            f"(DescribeScalableTargets: {describe_error(exc)})"
        )
        return Minimums(left={t.key: shown_text(reason, REASON_CHARS) for t in read})
    found = Minimums()
    for t, key in zip(read, keys, strict=True):
        target = listed.get(key)
        minimum = whole_units(target.min_capacity) if target is not None else None
        if minimum is not None:
            found.held[t.key] = minimum
        elif target is None and new_table:
            continue  # not registered yet: no minimum holds it
        elif target is None:
            found.left[t.key] = (
                f"Application Auto Scaling lists no scalable target of {key[0]} ({key[1]}): "
                "the minimum it holds is not known"
            )
        else:
            found.left[t.key] = (
                f"its scalable target's MinCapacity is {shown(target.min_capacity, 100)}, not "
                f"a whole number of units from 1 to {MAX_TABLE_QUOTA:,}"
            )
    return found
