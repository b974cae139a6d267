"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode),
workstation (``ddb-capacity`` in direct mode).

Moving a scalable target's minimum, remembered in the state store: the one way the
scaler, a capacity request and the end of a hold change a minimum.

Under the dimension's lease: the minimum about to be set is written first (``intent``),
then RegisterScalableTarget, then it becomes ``set_to`` (forgotten when it is the base).
A crash between any two of these leaves a memory that :func:`..core.memory.reconcile`
still reads as the library's, so the configured minimum is never lost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_application_autoscaling.literals import ScalableDimensionType

    from ..core.tables import ScalableTarget
    from ..requests.holds import Hold
    from ..requests.store import Lease


def set_minimum(
    lease: Lease,
    autoscaling: ApplicationAutoScalingClient,
    target: ScalableTarget,
    base: int,
    new: int,
    *,
    holds: list[Hold] | None = None,
) -> None:
    """Set ``target``'s minimum to ``new`` while ``lease`` is held, remembering ``base`` as
    the dimension's configured minimum (and recording ``holds`` with it, when given).
    Raises the ClientError of RegisterScalableTarget, with nothing else changed."""
    from ..requests.store import KEEP  # the store imports this layer's neighbours

    lease.write(base, KEEP if holds is None else holds, intent=new)
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
    lease.write(base, KEEP, set_to=None if new == base else new, intent=None)
