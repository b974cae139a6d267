"""Summary alarms, the library's default: a construct's checks folded into a few metric-math
alarms, no check lost, every alarm with an action; the footprint of the README's quick start
and of a five-construct stack (synthesized)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk.assertions import Template

from benchmarks.footprint import five_constructs, orders, quick_start
from constructs_pkg.common._alarm_summary import ALARMS_CONTEXT, Check
from constructs_pkg.common._alarms import AlarmOptions
from constructs_pkg.requests._capacity_requests import CapacityRequests
from constructs_pkg.scaler._scaler import ThrottleAwareScaler
from ddb_capacity_runtime.core.errors import CapacityConfigError
from tests.support.alarm_style import summary_app

Cmp = cloudwatch.ComparisonOperator


def quick_start_in(app: cdk.App, gsi: bool = True) -> cdk.Stack:
    stack = cdk.Stack(app, "Shop")
    quick_start(stack, gsi)
    return stack


def five_constructs_in(app: cdk.App) -> cdk.Stack:
    stack = cdk.Stack(app, "Five")
    five_constructs(stack)
    return stack


def resources(stack: cdk.Stack) -> dict[str, Any]:
    return dict(Template.from_stack(stack).to_json()["Resources"])


def kinds(stack: cdk.Stack) -> Counter[str]:
    return Counter(r["Type"] for r in resources(stack).values())


def alarms(stack: cdk.Stack) -> dict[str, dict[str, Any]]:
    return {
        k: r["Properties"]
        for k, r in resources(stack).items()
        if r["Type"] == "AWS::CloudWatch::Alarm"
    }


@pytest.mark.parametrize(("gsi", "most"), [(False, 18), (True, 20)])
def test_the_quick_start_is_at_most_20_resources_and_4_alarms(gsi: bool, most: int) -> None:
    stack = quick_start_in(summary_app(), gsi)
    counted = kinds(stack)
    assert sum(counted.values()) <= most
    assert counted["AWS::CloudWatch::Alarm"] <= 4
    assert counted["AWS::SQS::Queue"] == counted["AWS::SNS::Topic"] == counted["AWS::KMS::Key"] == 0
    assert all(a["AlarmActions"] for a in alarms(stack).values())


def test_the_five_construct_stack_is_at_most_70_resources_and_12_alarms() -> None:
    stack = five_constructs_in(summary_app())
    counted = kinds(stack)
    assert counted["AWS::CloudWatch::Alarm"] <= 12
    assert sum(counted.values()) <= 70
    # the advisor is one function; the restorer is a rule on the broker
    assert counted["AWS::Lambda::Function"] == 6
    assert all(a["AlarmActions"] for a in alarms(stack).values())


def signatures(stack: cdk.Stack) -> Counter[str]:
    """Every metric the stack's alarms watch (namespace, name, dimensions), as a count."""
    seen: Counter[str] = Counter()
    for props in alarms(stack).values():
        if "MetricName" in props:
            stats = [{k: props.get(k) for k in ("Namespace", "MetricName", "Dimensions")}]
        else:
            stats = [q["MetricStat"]["Metric"] for q in props["Metrics"] if "MetricStat" in q]
        for stat in stats:
            dims = sorted(stack.resolve(stat.get("Dimensions") or []), key=json.dumps)
            seen[json.dumps([stat["Namespace"], stat["MetricName"], dims])] += 1
    return seen


def test_no_check_is_lost_in_the_summary() -> None:
    """Every metric a detailed alarm watches is watched by a summary alarm (as often: the
    per-table checks are not merged), and each construct keeps the same checks by id."""
    detailed = five_constructs_in(cdk.App())
    summary = five_constructs_in(summary_app())
    assert signatures(detailed) == signatures(summary)
    assert len(alarms(summary)) < len(alarms(detailed)) / 3
    for path in ("Scaler", "Requests", "Advisor", "Tuning"):
        one, two = detailed.node.find_child(path), summary.node.find_child(path)
        assert set(one.alarms) == set(two.alarms)  # type: ignore[attr-defined]


def test_each_check_is_a_term_that_breaches_as_its_alarm_would() -> None:
    metric = cloudwatch.Metric(namespace="N", metric_name="M")

    def term(comparison: cloudwatch.ComparisonOperator, missing: bool, threshold: float) -> str:
        return Check("A", "A", "A", metric, threshold, comparison, missing, 60).term("m0")

    # a count: any one breaches, no data does not
    assert term(Cmp.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, False, 1) == "IF(FILL(m0, 0) >= 1, 1, 0)"
    # not running: fewer than 1 invocation, and no data breaches too
    assert term(Cmp.LESS_THAN_THRESHOLD, True, 1) == "IF(FILL(m0, 0) < 1, 1, 0)"
    # an age above a threshold whose missing data breaches: filled with a breaching value
    assert term(Cmp.GREATER_THAN_THRESHOLD, True, 300) == "IF(FILL(m0, 301) > 300, 1, 0)"
    # a floor whose missing data does not breach: filled at the floor
    assert term(Cmp.LESS_THAN_THRESHOLD, False, 5) == "IF(FILL(m0, 5) < 5, 1, 0)"


def test_a_summary_alarm_sums_its_checks_over_the_longest_window() -> None:
    stack = quick_start_in(summary_app())
    found = alarms(stack)
    (stuck,) = (p for k, p in found.items() if k.startswith("ScalerStuck"))
    # PinnedAtMax (30 minutes of 2-minute ticks) and Updating (5 ticks): the longer window
    assert (stuck["EvaluationPeriods"], stuck["DatapointsToAlarm"]) == (15, 15)
    expression = next(q["Expression"] for q in stuck["Metrics"] if q.get("ReturnData"))
    assert expression.count("IF(FILL(") == 2
    labels = [q["Label"] for q in stuck["Metrics"] if "MetricStat" in q]
    assert labels == ["PinnedAtMax", "Updating"]
    assert {q["MetricStat"]["Period"] for q in stuck["Metrics"] if "MetricStat" in q} == {120}
    (throttled,) = (p for k, p in found.items() if k.startswith("ScalerThrottled"))
    # 4 dimensions' throttle events (1-minute) and the hot key (a tick): read over a tick
    assert len([q for q in throttled["Metrics"] if "MetricStat" in q]) == 5
    assert {q["MetricStat"]["Period"] for q in throttled["Metrics"] if "MetricStat" in q} == {120}
    assert throttled["EvaluationPeriods"] == 5  # 10 minutes


def test_a_check_given_options_is_an_alarm_of_its_own() -> None:
    stack = cdk.Stack(summary_app(), "S")
    scaler = ThrottleAwareScaler(
        stack,
        "Scaler",
        tables=[orders(stack, gsi=False)],
        alarm_options={
            "Errors": AlarmOptions(threshold=3),
            "IgnoredTags": AlarmOptions(enabled=False),
        },
    )
    own = scaler.alarms["Errors"]
    assert own is not scaler.alarms["NotRunning"]
    assert "IgnoredTags" not in scaler.alarms
    labels = [
        q.get("Label")
        for p in alarms(stack).values()
        for q in p.get("Metrics", [])
        if "MetricStat" in q
    ]
    assert "Errors" not in labels and "IgnoredTags" not in labels and "NotRunning" in labels
    errors = [p for p in alarms(stack).values() if p.get("MetricName") == "Errors"]
    assert [p["Threshold"] for p in errors] == [3]


def test_a_group_of_more_than_10_checks_gets_a_second_alarm() -> None:
    stack = cdk.Stack(summary_app(), "S")
    scaler = ThrottleAwareScaler(stack, "Scaler")
    for n in range(3):  # 3 tables of 4 dimensions: 12 throttle checks and 3 hot keys
        orders(stack, name=f"T{n}").enable_throttle_aware_scaling(scaler)
    throttled = sorted(k for k in alarms(stack) if k.startswith("ScalerThrottled"))
    assert [k[: len("ScalerThrottled2")] for k in throttled] == [
        "ScalerThrottled2",
        "ScalerThrottledA",
    ]
    counts = sorted(
        len([q for q in alarms(stack)[k]["Metrics"] if "MetricStat" in q]) for k in throttled
    )
    assert counts == [5, 10]


def test_a_check_removed_leaves_its_summary_alarm() -> None:
    """A connected CapacityRequests alarms on the scaler's dropped holds: the scaler's check
    leaves its Failing alarm."""
    stack = cdk.Stack(summary_app(), "S")
    table = orders(stack, gsi=False)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[table])
    before = scaler.alarms["HoldsDropped"]
    CapacityRequests(stack, "Requests", tables=[table]).connect(scaler)
    assert "HoldsDropped" not in scaler.alarms and before is scaler.alarms["Errors"]
    (failing,) = (p for k, p in alarms(stack).items() if k.startswith("ScalerFailing"))
    assert "HoldsDropped" not in [q.get("Label") for q in failing["Metrics"]]


def test_an_unknown_alarm_style_is_refused() -> None:
    app = cdk.App()
    app.node.set_context(ALARMS_CONTEXT, "some")
    stack = cdk.Stack(app, "S")
    with pytest.raises(
        CapacityConfigError,
        match=r"context ddb-capacity:alarms: got 'some'; expected one of: summary, detailed",
    ):
        ThrottleAwareScaler(stack, "Scaler", tag_key="capacity")
