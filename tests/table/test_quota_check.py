"""The scalable-target quota as a synth-time check: a warning on the stacks of an account and
Region whose DynamoDB scalable targets pass a share of Application Auto Scaling's quota."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Annotations, Match

from constructs_pkg import (
    DEFAULT_SCALABLE_TARGET_QUOTA,
    Capacity,
    CapacityConfigError,
    ProvisionedTable,
    ScalableTargetQuota,
)
from constructs_pkg.table._quota import WARNING_ID

KEY = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)


def _tables(stack: cdk.Stack, count: int, gsi: bool = False) -> None:
    """``count`` tables, 2 scalable targets each (4 with a GSI)."""
    for n in range(count):
        t = ProvisionedTable(
            stack,
            f"T{n}",
            partition_key=KEY,
            read=Capacity(min_capacity=1, max_capacity=10),
            write=Capacity(min_capacity=1, max_capacity=10),
        )
        if gsi:
            t.add_global_secondary_index(
                index_name="ByG",
                partition_key=KEY,
                read=Capacity(min_capacity=1, max_capacity=10),
                write=Capacity(min_capacity=1, max_capacity=10),
            )


def _warnings(stack: cdk.Stack) -> list[str]:
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(".*"))
    return [str(w.entry.data) for w in found if WARNING_ID in str(w.entry.data)]


def test_a_warning_past_the_share_on_every_stack_of_that_account_and_region() -> None:
    app = cdk.App()
    env = cdk.Environment(account="111111111111", region="eu-west-1")
    a, b = cdk.Stack(app, "A", env=env), cdk.Stack(app, "B", env=env)
    other = cdk.Stack(app, "C", env=cdk.Environment(account="111111111111", region="us-east-1"))
    _tables(a, 2, gsi=True)  # 8 targets
    _tables(b, 1)  # 2 more: 10 in eu-west-1
    _tables(other, 3)  # 6 in us-east-1
    ScalableTargetQuota.check(app, quota=12, warn_at=0.75)  # warns past 9
    check = ScalableTargetQuota.check(b)  # the app's one check, as set
    assert (check.quota, check.warn_at) == (12, 0.75)
    counts = {k: len(v) for k, v in check.counts().items()}
    assert counts == {("111111111111", "eu-west-1"): 10, ("111111111111", "us-east-1"): 6}
    [warning] = _warnings(a)
    assert warning.startswith(
        "10 DynamoDB scalable targets in account 111111111111, Region eu-west-1 from this "
        "app: 83% of the quota of 12 (the warning starts past 75%, 9)"
    )
    assert "ScalableTargetQuota.check(app, quota=N)" in warning
    assert _warnings(b) == [warning]
    assert _warnings(other) == []  # 6 of 12 is under the share


def test_no_warning_at_the_share_and_the_defaults_need_thousands() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "S")
    _tables(stack, 3)  # 6 targets, environment-agnostic
    ScalableTargetQuota.check(app, quota=10, warn_at=0.6)  # warns past 6: exactly 6 is fine
    assert _warnings(stack) == []
    app2 = cdk.App()
    stack2 = cdk.Stack(app2, "S")
    _tables(stack2, 4)  # 8 targets against the default quota
    check = ScalableTargetQuota.check(stack2)
    assert (check.quota, check.warn_at) == (DEFAULT_SCALABLE_TARGET_QUOTA, 0.8)
    assert _warnings(stack2) == []


def test_environment_agnostic_stacks_count_together() -> None:
    app = cdk.App()
    s1, s2 = cdk.Stack(app, "S1"), cdk.Stack(app, "S2")
    _tables(s1, 2)
    _tables(s2, 2)
    ScalableTargetQuota.check(app, quota=10, warn_at=0.5)  # 8 targets, past 5
    assert _warnings(s1) and _warnings(s1) == _warnings(s2)
    assert "8 DynamoDB scalable targets in environment-agnostic stacks" in _warnings(s1)[0]


def test_a_later_table_keeps_the_quota_it_was_given() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "S")
    ScalableTargetQuota.check(app, quota=4)
    _tables(stack, 2)  # each table's own check call keeps quota 4
    check = ScalableTargetQuota.check(stack)
    assert check.quota == 4 and check.warn_at == 0.8
    assert len(_warnings(stack)) == 1  # 4 targets, past 3


def test_a_later_call_setting_one_setting_keeps_the_other() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "S")
    # GIVEN the share set first, then the quota alone
    ScalableTargetQuota.check(app, warn_at=0.5)
    ScalableTargetQuota.check(app, quota=6)
    _tables(stack, 2)  # 4 targets: past half of 6 (3), not past 0.8 of it (4)
    # THEN the share given first still warns
    assert len(_warnings(stack)) == 1
    # AND a call giving the share alone keeps the quota
    check = ScalableTargetQuota.check(app, warn_at=0.6)
    assert (check.quota, check.warn_at) == (6, 0.6)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"quota": 0}, "ScalableTargetQuota quota: got 0; expected a whole number"),
        ({"quota": 2.5}, "ScalableTargetQuota quota: got 2.5; expected a whole number"),
        ({"quota": True}, "ScalableTargetQuota quota: got True"),
        ({"warn_at": 0}, "ScalableTargetQuota warn_at: got 0; expected a share of the quota"),
        ({"warn_at": 1.5}, "ScalableTargetQuota warn_at: got 1.5; expected a share"),
        ({"warn_at": float("nan")}, "ScalableTargetQuota warn_at: got nan"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(given: dict[str, Any], message: str) -> None:
    app = cdk.App()
    with pytest.raises(CapacityConfigError, match=message.replace("(", r"\(")):
        ScalableTargetQuota.check(app, **given)


@pytest.mark.parametrize(
    "env",
    [cdk.Environment(region="eu-west-1"), cdk.Environment(account="111111111111")],
    ids=["account-unknown", "region-unknown"],
)
def test_a_stack_with_its_account_or_its_region_unknown_counts_as_environment_agnostic(
    env: cdk.Environment,
) -> None:
    # GIVEN an environment-agnostic stack (4 targets) and one with only half its environment
    # known at synth (2 targets)
    app = cdk.App()
    agnostic, partial = cdk.Stack(app, "Agnostic"), cdk.Stack(app, "Partial", env=env)
    _tables(agnostic, 2)
    _tables(partial, 1)
    check = ScalableTargetQuota.check(app, quota=10, warn_at=0.5)  # warns past 5
    # THEN the two count together, as environment-agnostic stacks
    counts = {k: len(v) for k, v in check.counts().items()}
    agnostic_key = ("environment-agnostic stacks", "environment-agnostic stacks")
    assert counts == {agnostic_key: 6}
    # AND both stacks carry the one warning, 6 past 5
    [warning] = _warnings(partial)
    assert warning.startswith("6 DynamoDB scalable targets in environment-agnostic stacks")
    assert _warnings(agnostic) == [warning]


def test_scalable_targets_of_other_services_are_not_counted() -> None:
    # GIVEN 4 DynamoDB scalable targets, and an ECS service's and a Lambda alias's in the
    # same stack
    app = cdk.App()
    stack = cdk.Stack(app, "S", env=cdk.Environment(account="111111111111", region="eu-west-1"))
    _tables(stack, 2)
    appscaling.ScalableTarget(
        stack,
        "Service",
        service_namespace=appscaling.ServiceNamespace.ECS,
        resource_id="service/cluster/orders",
        scalable_dimension="ecs:service:DesiredCount",
        min_capacity=1,
        max_capacity=4,
    )
    appscaling.ScalableTarget(
        stack,
        "Alias",
        service_namespace=appscaling.ServiceNamespace.LAMBDA,
        resource_id="function:orders:live",
        scalable_dimension="lambda:function:ProvisionedConcurrency",
        min_capacity=1,
        max_capacity=4,
    )
    check = ScalableTargetQuota.check(app, quota=5, warn_at=0.8)  # warns past 4
    # THEN only the DynamoDB targets count: 4, at the share, so no warning
    counts = {k: len(v) for k, v in check.counts().items()}
    assert counts == {("111111111111", "eu-west-1"): 4}
    assert _warnings(stack) == []
