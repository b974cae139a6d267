"""Application Auto Scaling's answers are untrusted input: a target's capacities, a policy's
type, target value and fields are read only when they are what the API documents, and
anything else is either not taken (a policy the scaler would not write back as it is) or
an `UnsoundListing` (the table's targets not known, counted by the tick)."""

from __future__ import annotations

from typing import Any

import pytest

from ddb_capacity_runtime.aws.discovery import _active_specs, _listed, _policy, _tracked
from ddb_capacity_runtime.core.errors import UnsoundListing
from ddb_capacity_runtime.core.tables import ManagedTable

READS = "dynamodb:table:ReadCapacityUnits"
METRIC = {"PredefinedMetricType": "DynamoDBReadCapacityUtilization"}


def policy(**changes: Any) -> dict[str, Any]:
    """One target-tracking policy of table/Orders' reads, as DescribeScalingPolicies lists
    it, with ``changes``."""
    entry = {
        "PolicyName": "OrdersReads",
        "ResourceId": "table/Orders",
        "ScalableDimension": READS,
        "PolicyType": "TargetTrackingScaling",
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": 70.0,
            "PredefinedMetricSpecification": METRIC,
        },
    }
    return {**entry, **changes}


def config(target: object) -> dict[str, Any]:
    return {"TargetValue": target, "PredefinedMetricSpecification": METRIC}


@pytest.mark.parametrize("target", [20, 20.0, 55.5, 90])
def test_a_target_value_from_20_to_90_is_the_dimensions_target(target: float) -> None:
    tracked = _tracked(
        [
            {
                "ScalingPolicies": [
                    policy(**{"TargetTrackingScalingPolicyConfiguration": config(target)})
                ]
            }
        ]
    )
    assert tracked[("table/Orders", READS)][0] == float(target)


@pytest.mark.parametrize("target", [19.9, 90.5, 100, 0, -70, True, "70", None])
def test_a_target_value_outside_20_to_90_is_tracking_without_a_known_target(
    target: object,
) -> None:
    # the dimension is under target tracking (its policy is there), but the scaler does not
    # aim at a target the API would never have taken
    tracked = _tracked(
        [
            {
                "ScalingPolicies": [
                    policy(**{"TargetTrackingScalingPolicyConfiguration": config(target)})
                ]
            }
        ]
    )
    assert tracked[("table/Orders", READS)][0] is None


@pytest.mark.parametrize("kind", ["StepScaling", "PredictiveScaling", "", None, 7])
def test_only_a_target_tracking_policy_makes_a_dimension_tracked(kind: object) -> None:
    entry = policy(PolicyType=kind)
    if kind is None:
        del entry["PolicyType"]
    assert _tracked([{"ScalingPolicies": [entry]}]) == {}


def test_a_policy_with_a_field_the_scaler_does_not_know_is_never_written_back() -> None:
    # a write-back would drop the field: the policy is read, never taken as the scaler's
    known = {**config(70.0), "ScaleInCooldown": 60}
    assert _policy("p", known) is not None
    assert _policy("p", {**known, "SomethingNew": {"Value": 1}}) is None


@pytest.mark.parametrize(
    ("low", "high"), [(5, None), (5, -1), (5, 2.5), (5, "100"), (None, 100), (-1, 100)]
)
def test_a_target_whose_capacities_are_not_whole_numbers_is_an_unsound_listing(
    low: object, high: object
) -> None:
    target = {
        "ResourceId": "table/Orders",
        "ScalableDimension": READS,
        "MinCapacity": low,
        "MaxCapacity": high,
    }
    with pytest.raises(UnsoundListing, match="table/Orders"):
        _listed([{"ScalableTargets": [target]}])
    sound = _listed([{"ScalableTargets": [{**target, "MinCapacity": 5, "MaxCapacity": 100}]}])
    assert (
        sound[("table/Orders", READS)].min_capacity,
        sound[("table/Orders", READS)].max_capacity,
    ) == (5, 100)


@pytest.mark.parametrize("gsis", [[{"IndexStatus": "ACTIVE"}], [{"IndexName": ""}], ["byUser"]])
def test_a_gsi_without_its_name_is_refused_by_name_when_the_table_is_read(gsis: Any) -> None:
    # GIVEN a DescribeTable answer with a GSI that names no index (which would be taken for
    # the table itself)
    managed = ManagedTable("Orders", "arn:aws:dynamodb:us-east-1:1:table/Orders", {})
    # WHEN its GSIs are listed for the tick THEN the answer is refused, naming the field
    with pytest.raises(ValueError, match="DescribeTable Orders: GlobalSecondaryIndexes is"):
        _active_specs(managed, {"TableName": "Orders", "GlobalSecondaryIndexes": gsis})
    assert managed.indexes == []
