"""No failure signal lost, end to end: a failure made to happen in a real tick against moto
sends the very series (namespace, name, dimensions) that the summary alarm covering its check
watches in the synthesized scaler, and a steady tick sends none of them."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from constructs_pkg.scaler._scaler import ThrottleAwareScaler
from tests.support.alarm_style import summary_app
from tests.support.faults import world as world  # noqa: F401 (fixture)
from tests.support.moto_world import World
from tests.support.scaler_construct import feed

Series = tuple[str, str, tuple[str, ...]]


def sent(events: list[dict[str, Any]]) -> dict[Series, list[dict[str, Any]]]:
    """Every series the tick's EMF records make a metric of, with the records that do."""
    out: dict[Series, list[dict[str, Any]]] = {}
    for record in (e for e in events if "_aws" in e):
        for group in record["_aws"]["CloudWatchMetrics"]:
            for dims in group["Dimensions"]:
                for metric in group["Metrics"]:
                    key = (group["Namespace"], metric["Name"], tuple(sorted(dims)))
                    out.setdefault(key, []).append(record)
    return out


def watched(alarm_id: str) -> set[Series]:
    """The series the summary alarm covering the scaler's check ``alarm_id`` watches."""
    stack = cdk.Stack(summary_app(), "Watched")
    table = feed(stack)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[table])
    covering = scaler.alarms[alarm_id]
    template = Template.from_stack(stack).to_json()["Resources"]
    (props,) = [
        r["Properties"]
        for k, r in template.items()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and stack.resolve(covering.alarm_arn) == {"Fn::GetAtt": [k, "Arn"]}
    ]
    return {
        (
            q["MetricStat"]["Metric"]["Namespace"],
            q["MetricStat"]["Metric"]["MetricName"],
            tuple(sorted(d["Name"] for d in q["MetricStat"]["Metric"]["Dimensions"])),
        )
        for q in props["Metrics"]
        if "MetricStat" in q
    }


def test_a_target_held_moves_the_series_its_summary_alarm_watches(world: World) -> None:
    # GIVEN a table whose write target reports min 500 > max 100, throttled
    inverted = world.table("inverted", 100, 100)
    world.target(inverted, "write", 500, 100)
    world.traffic(inverted, "write", 100)
    world.traffic(inverted, "write", 0, throttles=3000, minutes=range(1, 3))
    # WHEN a tick runs
    _, events = world.tick()
    moved = sent(events)
    # THEN it sends BadTargets for the deployment (its state store's name), the series the
    # scaler's Failing alarm watches for that check
    series = ("DynamoDBCapacity", "BadTargets", ("StateStore",))
    assert series in moved
    assert all(r["StateStore"] == world.store.name and r["BadTargets"] >= 1 for r in moved[series])
    assert series in watched("BadTargets")


def test_a_steady_tick_moves_no_series_a_summary_alarm_watches(world: World) -> None:
    # GIVEN a steady table, nothing wrong with it
    steady = world.table("steady", 100, 100)
    world.traffic(steady, "read", 60)
    world.traffic(steady, "write", 55)
    # WHEN a tick runs THEN none of the series the scaler's summary alarms watch moved
    _, events = world.tick()
    alarmed = set().union(*(watched(a) for a in ("Errors", "PinnedAtMax")))
    assert {s for s in sent(events) if s[0] == "DynamoDBCapacity"} & alarmed == set()
