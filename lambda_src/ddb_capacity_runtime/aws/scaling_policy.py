"""Runs in: scaler Lambda.

Setting an owned target-tracking policy's target value (`core.ownership`):
PutScalingPolicy with the policy as it was read, its target value changed and nothing
else."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_application_autoscaling.literals import ScalableDimensionType

    from ..core.tables import ScalableTarget

__all__ = ["put_target_value"]


def put_target_value(
    autoscaling: ApplicationAutoScalingClient, target: ScalableTarget, value: int
) -> None:
    """Write ``target``'s target-tracking policy back with target value ``value``
    (percent). Raises ValueError when the target has no policy the scaler can write back,
    and PutScalingPolicy's ClientError."""
    policy = target.policy
    if policy is None:
        raise ValueError(f"{target.resource_id}: no target-tracking policy to write back")
    config: dict[str, Any] = {
        "TargetValue": float(value),
        "PredefinedMetricSpecification": {"PredefinedMetricType": policy.metric},
    }
    if policy.scale_in_cooldown is not None:
        config["ScaleInCooldown"] = policy.scale_in_cooldown
    if policy.scale_out_cooldown is not None:
        config["ScaleOutCooldown"] = policy.scale_out_cooldown
    if policy.disable_scale_in is not None:
        config["DisableScaleIn"] = policy.disable_scale_in
    autoscaling.put_scaling_policy(
        PolicyName=policy.name,
        ServiceNamespace="dynamodb",
        ResourceId=target.resource_id,
        ScalableDimension=cast("ScalableDimensionType", target.scalable_dimension),
        PolicyType="TargetTrackingScaling",
        TargetTrackingScalingPolicyConfiguration=cast(Any, config),
    )
