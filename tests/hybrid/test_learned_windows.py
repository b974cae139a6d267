"""Learned on-demand windows at synth: the stack's switch runs the table's learned windows at
:55 and :00 of every hour with its settings, may read metrics (GetMetricData, which has no
resource-level permissions) and update only its tables; each bad setting is refused naming
the field, and a table's windows are declared or learned, not both."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk.assertions import Match, Template

from ddb_capacity_runtime.core.errors import CapacityConfigError
from tests.support.windowed_table import orders


def _statements(template: Template) -> list[dict[str, Any]]:
    return [
        s
        for p in template.find_resources("AWS::IAM::ManagedPolicy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def test_learned_windows_run_every_hour_at_55_and_00_with_the_tables_settings(
    stack: cdk.Stack,
) -> None:
    # GIVEN two tables learning their windows, one with its own target and maximums
    orders(stack).learn_on_demand_windows()
    orders(stack, "Customers").learn_on_demand_windows(
        target_utilization=60, max_read_request_units=300, max_write_request_units=100
    )
    template = Template.from_stack(stack)
    # THEN one switch serves both: one hourly run of the learned tables, one check
    template.resource_count_is("AWS::Lambda::Function", 1)
    template.resource_count_is("AWS::Scheduler::Schedule", 2)
    (learned,) = template.find_resources(
        "AWS::Scheduler::Schedule", {"Properties": {"ScheduleExpression": "cron(0,55 * * * ? *)"}}
    ).values()
    assert "ScheduleExpressionTimezone" not in learned["Properties"]  # UTC
    text = json.dumps(learned["Properties"]["Target"]["Input"])
    assert '\\"Action\\":\\"learned\\"' in text
    assert '\\"TargetUtilization\\":60,\\"MaxReadRequestUnits\\":300' in text
    assert '\\"TargetUtilization\\":70,\\"MaxReadRequestUnits\\":1000' in text
    assert 'MaxWriteRequestUnits\\":500' in text and 'MaxWriteRequestUnits\\":100' in text
    template.has_resource_properties(
        "AWS::Scheduler::Schedule",
        {"ScheduleExpression": "cron(7/15 * * * ? *)", "Target": Match.any_value()},
    )


def test_the_switch_reads_metrics_and_updates_only_its_learned_tables(stack: cdk.Stack) -> None:
    orders(stack).learn_on_demand_windows()
    orders(stack, "Other")
    statements = _statements(Template.from_stack(stack))
    reading = [s for s in statements if "cloudwatch:GetMetricData" in json.dumps(s["Action"])]
    assert [s["Resource"] for s in reading] == ["*"]
    (updating,) = [s for s in statements if "dynamodb:UpdateTable" in json.dumps(s["Action"])]
    resources = json.dumps(updating["Resource"])
    assert "Orders" in resources and "Other" not in resources and '"*"' not in resources


def test_declared_windows_read_metrics_too(stack: cdk.Stack) -> None:
    # a window's end reads what its table served, declared or learned
    orders(stack).add_on_demand_window("Evening", start="18:00", duration=Duration.hours(3))
    statements = _statements(Template.from_stack(stack))
    reading = [s for s in statements if "GetMetricData" in json.dumps(s["Action"])]
    assert [s["Resource"] for s in reading] == ["*"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"target_utilization": 95},
            "Orders learned on-demand windows: target_utilization must be a whole percent "
            "from 20 to 90 (the target an on-demand hour is costed at as provisioned); got 95",
        ),
        (
            {"target_utilization": 70.5},
            "target_utilization must be a whole percent from 20 to 90",
        ),
        (
            {"max_write_request_units": 0},
            "Orders learned on-demand windows: max_write_request_units must be a whole number "
            "of request units a second from 1 to 40,000 (the table's quota)",
        ),
    ],
)
def test_a_bad_setting_is_refused_naming_the_field(
    stack: cdk.Stack, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(CapacityConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        orders(stack).learn_on_demand_windows(**kwargs)
    assert stack.node.try_find_child("OnDemandSwitch") is None


def test_a_tables_windows_are_declared_or_learned_not_both(stack: cdk.Stack) -> None:
    declared = orders(stack)
    declared.add_on_demand_window("Evening", start="18:00", duration=Duration.hours(3))
    with pytest.raises(CapacityConfigError, match="has declared on-demand windows"):
        declared.learn_on_demand_windows()
    learned = orders(stack, "Learned")
    learned.learn_on_demand_windows()
    with pytest.raises(CapacityConfigError, match="windows are learned"):
        learned.add_on_demand_window("Evening", start="18:00", duration=Duration.hours(3))
    with pytest.raises(CapacityConfigError, match="has learned windows already"):
        learned.learn_on_demand_windows()
    assert learned.on_demand_preview() == []
