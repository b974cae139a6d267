"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (``ddb-capacity`` in direct mode).

Moving a scalable target's minimum, remembered in the state store: the one way the
scaler, a capacity request and the end of a hold change a minimum.

Under the dimension's lease: the minimum about to be set is written first (``intent``,
added to the recent intents too), in the same conditional write that renews the lease for
longer than the register can take (`clients.lease_bound` of the client: its own bound, at
most the library's clients'), then
RegisterScalableTarget, then it becomes ``set_to`` (forgotten when it is the base). A
crash between any two of these, or a register that lands after its lease was lost, leaves
a memory that `core.memory.reconcile` still reads as the library's, so the
configured minimum is never lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..core.deadline import NONE, Deadline
from ..core.holds import LeaseLost
from .clients import lease_bound
from .store import KEEP

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_application_autoscaling.literals import ScalableDimensionType

    from ..core.holds import Hold
    from ..core.tables import ScalableTarget
    from .store import Lease


def set_minimum(
    lease: Lease,
    autoscaling: ApplicationAutoScalingClient,
    target: ScalableTarget,
    base: int,
    new: int,
    *,
    holds: list[Hold] | None = None,
    deadline: Deadline = NONE,
) -> None:
    """Set ``target``'s minimum to ``new`` while ``lease`` is held, remembering ``base`` as
    the dimension's configured minimum (and recording ``holds`` with it, when given).
    Raises the ClientError of RegisterScalableTarget, with nothing else changed, and
    LeaseLost when the lease was lost: before the register (nothing was set), or after it
    (the minimum was set, and its intent keeps it the library's). Raises DeadlinePassed,
    with nothing written or sent, once ``deadline`` has passed."""
    deadline.check(f"RegisterScalableTarget of {target.resource_id} MinCapacity {new:,}")
    renew = lease_bound(autoscaling)
    lease.write(base, KEEP if holds is None else holds, intent=new, renew_for=renew)
    try:
        autoscaling.register_scalable_target(
            ServiceNamespace="dynamodb",
            ResourceId=target.resource_id,
            ScalableDimension=cast("ScalableDimensionType", target.scalable_dimension),
            MinCapacity=new,
        )
    except Exception:
        lease.write(base, KEEP, intent=None)
        raise
    try:
        lease.write(base, KEEP, set_to=None if new == base else new, intent=None)
    except LeaseLost:
        raise LeaseLost(
            f"{target.resource_id} {target.scalable_dimension}: MinCapacity was set to "
            f"{new:,}, but the state store's lease ran out (another process took it) before "
            "that was recorded; it stays among the library's recent intents, never read as "
            "someone else's change"
        ) from None
