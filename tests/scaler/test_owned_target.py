"""Owning target tracking's target value (``own_target``): the rule the scaler and the
simulator share (``core.ownership.retargets``), the settings contract, and the simulated
``autopilot+stock:T+owned``."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from ddb_capacity_runtime.core.decreases import DecreaseLedger
from ddb_capacity_runtime.core.floorplan import FloorPlan
from ddb_capacity_runtime.core.forecast import apply_plans
from ddb_capacity_runtime.core.ownership import retargets
from ddb_capacity_runtime.core.settings import ConfigError, ScalerConfig
from ddb_capacity_runtime.core.table_limits import Limits
from ddb_capacity_runtime.core.tables import (
    Dimension,
    ManagedTable,
    ScalableTarget,
    TrackingPolicy,
)
from ddb_capacity_tools.simulator import ModelParams, PolicyError, Prices, parse, run_policy
from ddb_capacity_tools.simulator.scenarios import scenario
from ddb_capacity_tools.simulator.tune_code import code_for

NOW = datetime(2026, 1, 5, 12, tzinfo=UTC)
POLICY = TrackingPolicy("p", "DynamoDBWriteCapacityUtilization")


def _dimension(
    now_percent: float | None, owned: float | None, policy: TrackingPolicy | None = POLICY
) -> Dimension:
    target = ScalableTarget(
        "table/t",
        "dynamodb:table:WriteCapacityUnits",
        10,
        5000,
        True,
        target_percent=now_percent,
        policy=policy,
    )
    return Dimension(
        "t",
        None,
        "write",
        100,
        DecreaseLedger(0, None),
        None,
        Limits(10, 5000, owned or 0.7),  # discovery aims an owned one at its configured
        target,
        owned_target=owned,
    )


def _table(*dims: Dimension) -> ManagedTable:
    return ManagedTable("t", "arn", {}, list(dims))


def test_an_owned_policy_aims_at_the_plans_aim_while_its_floor_is_in_force() -> None:
    d = _dimension(70, 0.7)
    minute = int(NOW.timestamp() // 60)
    start = minute - minute % 5
    plan = FloorPlan(start, (500, 500), 88, 0, 0)
    planned = apply_plans(_table(d), {d.key: plan}, minute)
    (r,) = retargets(planned)
    assert (r.old, r.new) == (70, 88)
    # after the plan, back to the configured 70 (from the 88 the policy has now)
    after = _dimension(88, 0.7)
    (back,) = retargets(apply_plans(_table(after), {after.key: plan}, minute + 60))
    assert (back.old, back.new) == (88, 70)
    # nothing to write when the policy already says it
    assert retargets(_table(_dimension(70, 0.7))) == []


def test_a_policy_not_owned_or_not_readable_is_never_written() -> None:
    assert retargets(_table(_dimension(50, None))) == []  # not owned
    assert retargets(_table(_dimension(50, 0.7, policy=None))) == []  # not written back
    (r,) = retargets(_table(_dimension(None, 0.6)))  # a value it cannot read: set it
    assert (r.old, r.new) == (None, 60)


def test_the_target_value_written_is_the_aim_in_whole_percent_from_20_to_90() -> None:
    # 0.29 * 100 is 28.999...: the aim is 29 %; the ends of the range are written as they are
    for aim, percent in ((0.29, 29), (0.2, 20), (0.9, 90)):
        (r,) = retargets(_table(_dimension(50, aim)))
        assert (r.old, r.new) == (50, percent)


def test_a_policy_half_a_percent_or_more_off_its_aim_is_written() -> None:
    # a policy within half a percent of the aim already says it: nothing is written
    assert retargets(_table(_dimension(70.4, 0.7))) == []
    (r,) = retargets(_table(_dimension(70.5, 0.7)))
    assert (r.old, r.new) == (70.5, 70)


def test_the_owned_targets_setting_is_checked_and_read_per_dimension() -> None:
    owned = {"T": {"read": 60, "write": 70, "indexes": {"G": {"write": 50}}}}
    env = {
        "SCALER_TABLES": "T",
        "SCALER_MODE": "autopilot",
        "SCALER_OWNED_TARGETS": json.dumps(owned),
    }
    config = ScalerConfig.from_env(env)
    assert config.owned_target("T", None, "read") == pytest.approx(0.6)
    assert config.owned_target("T", "G", "write") == pytest.approx(0.5)
    assert config.owned_target("T", "G", "read") is None
    assert config.owned_target("Other", None, "read") is None
    assert ScalerConfig.from_env(config.to_env()) == config
    bad = {"T": {"write": 95}}
    with pytest.raises(ConfigError, match=r"table T write must be a target value from 20 to 90"):
        ScalerConfig.from_env({**env, "SCALER_OWNED_TARGETS": json.dumps(bad)})
    with pytest.raises(ConfigError, match=r"SCALER_OWNED_TARGETS needs SCALER_MODE autopilot"):
        ScalerConfig.from_env({**env, "SCALER_MODE": "reactive"})


def test_owning_the_target_value_makes_the_autopilot_on_stock_cheaper_than_stock() -> None:
    trace = scenario("diurnal")
    params, prices = ModelParams().validate(), Prices()

    def run(name: str) -> tuple[float, float]:
        results = run_policy(parse(name), trace, params, prices)
        return sum(r.cost_usd for r in results), sum(r.throttled_requests for r in results)

    owned, stock_on, stock = (
        run("autopilot+stock:70+owned"),
        run("autopilot+stock:70"),
        run("stock:70"),
    )
    # on stock alone the autopilot only adds floors: never cheaper than stock:70
    assert stock_on[0] >= stock[0] * 0.999
    # owning the target value, it scales in as far as its plans allow
    assert owned[0] < 0.95 * stock[0]
    assert owned[1] <= stock_on[1]


def test_owned_is_for_the_autopilot_on_stock_only_and_its_code_says_so() -> None:
    spec = parse("autopilot+stock:70+owned")
    assert (spec.kind, spec.with_stock, spec.owned, spec.value) == ("autopilot", True, True, 70)
    for bad in ("stock:70+owned", "autopilot:70+owned", "throttle-aware+stock:70+owned"):
        with pytest.raises(PolicyError, match=r"'\+owned' applies to autopilot\+stock:T only"):
            parse(bad)
    code = code_for(spec, scenario("diurnal"), ModelParams())
    assert "ThrottleAwareScaler(stack, 'Scaler', tables=[table], own_target=True)" in code
    assert "own_target" not in code_for(
        parse("autopilot+stock:70"), scenario("diurnal"), ModelParams()
    )


def test_only_a_policy_that_can_be_written_back_whole_is_taken() -> None:
    from ddb_capacity_runtime.aws.discovery import _policy

    metric = {"PredefinedMetricType": "DynamoDBReadCapacityUtilization"}
    full = {
        "TargetValue": 70.0,
        "PredefinedMetricSpecification": metric,
        "ScaleInCooldown": 60,
        "ScaleOutCooldown": 0,
        "DisableScaleIn": False,
    }
    assert _policy("p", full) == TrackingPolicy(
        "p", "DynamoDBReadCapacityUtilization", 60, 0, False
    )
    assert _policy("p", {"TargetValue": 70.0, "PredefinedMetricSpecification": metric}) == (
        TrackingPolicy("p", "DynamoDBReadCapacityUtilization")
    )
    # what a write-back would lose, or cannot name, is never taken
    custom = {"TargetValue": 70.0, "CustomizedMetricSpecification": {"MetricName": "x"}}
    labelled = {**full, "PredefinedMetricSpecification": {**metric, "ResourceLabel": "x"}}
    for name, config in (("p", custom), ("p", labelled), ("", full), (None, full)):
        assert _policy(name, config) is None
    # untrusted shapes: a value it could not send back as it is makes the policy not its own
    for odd in ({"ScaleInCooldown": "60"}, {"ScaleOutCooldown": True}, {"DisableScaleIn": 1}):
        assert _policy("p", {**full, **odd}) is None
