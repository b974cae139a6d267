"""Declared on-demand windows at synth: each checked as it is added (the exact message of
each refusal), DynamoDB's four switches to on-demand a day refused across a table's windows,
the preview, and the template: the window's two schedules, the stack's one switch and its
grants, nothing of it without a window, and the five nag packs and cfn-lint passing."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk.assertions import Match, Template

from constructs_pkg import (
    CapacityRequests,
    FunctionOptions,
    acknowledge,
    apply_nag_packs,
)
from constructs_pkg.common._iam_statements import HOLD_STORE_ACTIONS
from ddb_capacity_runtime.core.errors import CapacityConfigError, ScheduleError
from tests.support.windowed_table import orders

MONDAY = datetime(2026, 11, 30, tzinfo=UTC)


def test_a_window_is_previewed_as_its_switches_in_its_time_zone(stack: cdk.Stack) -> None:
    table = orders(stack)
    table.add_on_demand_window(
        "Lunch", start="11:30", duration=Duration.hours(2), time_zone="Europe/Paris"
    )
    switches = table.on_demand_preview(count=3, start=MONDAY)
    assert [(s.when, s.window.name, s.billing_mode) for s in switches] == [
        (MONDAY + timedelta(hours=10, minutes=30), "Lunch", "PAY_PER_REQUEST"),
        (MONDAY + timedelta(hours=12, minutes=30), "Lunch", "PROVISIONED"),
        (MONDAY + timedelta(days=1, hours=10, minutes=30), "Lunch", "PAY_PER_REQUEST"),
    ]


def test_a_table_without_windows_deploys_nothing_of_the_switch(stack: cdk.Stack) -> None:
    orders(stack)
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::Scheduler::Schedule", 0)
    template.resource_count_is("AWS::Lambda::Function", 0)
    assert stack.node.try_find_child("OnDemandSwitch") is None


def test_a_window_renders_its_two_schedules_and_the_stacks_one_switch(stack: cdk.Stack) -> None:
    # GIVEN two tables, each with a window
    first, second = orders(stack), orders(stack, "Customers")
    first.add_on_demand_window(
        "Evening", start="18:00", duration=Duration.hours(3), max_read_request_units=800
    )
    second.add_on_demand_window("Morning", start="08:00", duration=Duration.hours(1))
    template = Template.from_stack(stack)
    # THEN one switch function serves both, with a start and an end schedule for each window
    # and one check every 15 minutes
    template.resource_count_is("AWS::Lambda::Function", 1)
    template.resource_count_is("AWS::Scheduler::Schedule", 5)
    template.has_resource_properties(
        "AWS::Scheduler::Schedule",
        {
            "ScheduleExpression": "cron(0 18 ? * MON,TUE,WED,THU,FRI *)",
            "ScheduleExpressionTimezone": "UTC",
            "Target": Match.object_like(
                {
                    "Input": {
                        "Fn::Join": [
                            "",
                            [
                                '{"Action":"start","Table":"',
                                {"Ref": Match.string_like_regexp("Orders")},
                                '","Window":"Evening","DurationSeconds":10800,'
                                '"MaxReadRequestUnits":800,"MaxWriteRequestUnits":500}',
                            ],
                        ]
                    }
                }
            ),
        },
    )
    template.has_resource_properties(
        "AWS::Scheduler::Schedule",
        {"ScheduleExpression": "cron(0 21 ? * MON,TUE,WED,THU,FRI *)"},
    )
    template.has_resource_properties(
        "AWS::Scheduler::Schedule", {"ScheduleExpression": "cron(7/15 * * * ? *)"}
    )


def test_only_the_switch_may_update_its_tables_and_their_indexes(stack: cdk.Stack) -> None:
    orders(stack).add_on_demand_window("Evening", start="18:00", duration=Duration.hours(3))
    policies = Template.from_stack(stack).find_resources("AWS::IAM::ManagedPolicy")
    updating = [
        s
        for p in policies.values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if "dynamodb:UpdateTable" in json.dumps(s["Action"])
    ]
    assert len(updating) == 1
    (statement,) = updating
    resources = json.dumps(statement["Resource"])
    assert "Orders" in resources and "/index/*" in resources and '"*"' not in resources


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"start": "25:00", "duration": Duration.hours(1)},
            "on-demand window 'W': start must be HH:MM (24-hour); got '25:00'",
        ),
        (
            {"start": "10:00", "duration": Duration.hours(24)},
            "on-demand window 'W': duration must be from 1 minute to less than 24 hours (a "
            "table is switched to on-demand at most 4 times a day); got 1 day, 0:00:00",
        ),
        (
            {"start": "10:00", "duration": Duration.hours(1), "week_days": "MON"},
            "on-demand window 'W': week_days: got 'MON', one string; expected a list of day "
            "names: WEEKDAYS, EVERY_DAY or a list such as ['MON', 'WED']",
        ),
        (
            {"start": "10:00", "duration": Duration.hours(1), "max_read_request_units": 0},
            "on-demand window 'W': max_read_request_units must be a whole number of request "
            "units a second from 1 to 40,000 (the table's quota), the on-demand maximum that "
            "caps its cost; got 0",
        ),
        (
            {"start": "10:00", "duration": Duration.hours(1), "time_zone": "Mars/Olympus"},
            "on-demand window 'W'",
        ),
    ],
)
def test_a_bad_window_is_refused_naming_the_field(
    stack: cdk.Stack, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(
        CapacityConfigError,
        match=message.replace("(", r"\(")
        .replace(")", r"\)")
        .replace("[", r"\[")
        .replace("]", r"\]"),
    ):
        orders(stack).add_on_demand_window("W", **kwargs)  # type: ignore[arg-type]


def test_overlapping_windows_are_refused(stack: cdk.Stack) -> None:
    table = orders(stack)
    table.add_on_demand_window("A", start="10:00", duration=Duration.hours(2))
    with pytest.raises(CapacityConfigError, match="on-demand windows 'A' and 'B' overlap"):
        table.add_on_demand_window("B", start="11:00", duration=Duration.hours(2))


def test_a_fifth_switch_in_24_hours_is_refused_at_synth(stack: cdk.Stack) -> None:
    # GIVEN four windows a day, five hours apart: the fourth of the day is allowed
    table = orders(stack)
    for hour in (0, 5, 10, 15):
        table.add_on_demand_window(f"At{hour}", start=f"{hour:02}:00", duration=Duration.hours(1))
    # WHEN a fifth would come within 24 hours of the first, THEN it is refused
    with pytest.raises(
        CapacityConfigError,
        match=r"on-demand windows: 5 switches to on-demand within 24 hours \(.*\); DynamoDB "
        r"allows at most 4 in any rolling 24 hours: give fewer windows or fewer week_days",
    ):
        table.add_on_demand_window("At20", start="20:00", duration=Duration.hours(1))
    # AND the refused window left nothing behind
    assert [s.window.name for s in table.on_demand_preview(count=8, start=MONDAY)] == [
        "At0",
        "At0",
        "At5",
        "At5",
        "At10",
        "At10",
        "At15",
        "At15",
    ]


@pytest.mark.parametrize(
    ("requests", "learned"),
    [(False, False), (True, False), (True, True)],
    ids=["window", "window-and-requests", "learned-and-requests"],
)
def test_the_five_nag_packs_and_cfn_lint_pass_with_a_window(
    tmp_path: Path, requests: bool, learned: bool
) -> None:
    app = cdk.App(outdir=str(tmp_path))
    apply_nag_packs(app)
    name = "Learned" if learned else "Held" if requests else "Windowed"
    stack = cdk.Stack(app, name)
    table = orders(stack)
    for pack in ("HIPAA.Security", "NIST.800.53.R5"):
        acknowledge(table.table, f"{pack}-DynamoDBInBackupPlan", "A test table of this test only.")
    if learned:
        table.learn_on_demand_windows()
    else:
        table.add_on_demand_window("Evening", start="18:00", duration=Duration.hours(3))
    if requests:
        CapacityRequests(stack, "Requests", tables=[table])
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert len(report["pluginReports"]) == 5
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), str(tmp_path / f"{name}.template.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode in (0, 4), result.stdout


def _switch_reads(template: Template) -> tuple[Any, list[dict[str, Any]]]:
    """The switch function's hold stores setting, and its statements on a hold store."""
    (function,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "ddb_capacity_runtime.hybrid.handler.lambda_handler"}},
    ).values()
    variables = function["Properties"]["Environment"]["Variables"]
    statements = [
        s
        for p in template.find_resources("AWS::IAM::ManagedPolicy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if str(s.get("Sid", "")).startswith("Holds")
    ]
    return variables.get("CAPACITY_WINDOW_HOLD_STORES"), statements


@pytest.mark.parametrize("requests_first", [True, False])
@pytest.mark.parametrize("as_plain_table", [True, False])
def test_the_switch_reads_the_holds_of_its_tables_served_by_capacity_requests(
    stack: cdk.Stack, requests_first: bool, as_plain_table: bool
) -> None:
    # GIVEN a table with a window, served by CapacityRequests made before or after the window
    table = orders(stack)
    served = [table.table if as_plain_table else table]
    if requests_first:
        requests = CapacityRequests(stack, "Requests", tables=served)
    table.add_on_demand_window("Evening", start="18:00", duration=Duration.hours(3))
    if not requests_first:
        requests = CapacityRequests(stack, "Requests", tables=served)
    template = Template.from_stack(stack)
    # THEN the switch function is told the table's hold store
    setting, statements = _switch_reads(template)
    store = stack.resolve(requests.hold_store.table_name)
    assert json.dumps(stack.resolve(table.table.table_name)) in json.dumps(setting)
    assert json.dumps(store) in json.dumps(setting)
    # AND may lease the table's own items in it, and nothing else
    (statement,) = statements
    assert sorted(statement["Action"]) == sorted(HOLD_STORE_ACTIONS)
    assert "dynamodb:DeleteItem" not in statement["Action"]
    assert statement["Resource"] == stack.resolve(requests.hold_store.table_arn)
    assert statement["Condition"]["ForAllValues:StringEquals"]["dynamodb:LeadingKeys"] == [
        stack.resolve(table.table.table_name)
    ]


def test_a_window_without_capacity_requests_reads_no_holds(stack: cdk.Stack) -> None:
    orders(stack).add_on_demand_window("Evening", start="18:00", duration=Duration.hours(3))
    assert _switch_reads(Template.from_stack(stack)) == (None, [])


def _switch_function(template: Template) -> dict[str, Any]:
    (function,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "ddb_capacity_runtime.hybrid.handler.lambda_handler"}},
    ).values()
    return dict(function["Properties"])


def test_the_switch_function_takes_function_options(stack: cdk.Stack) -> None:
    # GIVEN two windows of two tables, the first giving the switch's function options
    options = {"Switch": FunctionOptions(memory_size=512, timeout=Duration.minutes(5))}
    orders(stack).add_on_demand_window(
        "Evening", start="18:00", duration=Duration.hours(3), function_options=options
    )
    orders(stack, "Customers").add_on_demand_window(
        "Morning", start="08:00", duration=Duration.hours(1)
    )
    # THEN the stack's one switch function has them
    properties = _switch_function(Template.from_stack(stack))
    assert (properties["MemorySize"], properties["Timeout"]) == (512, 300)


def test_the_switch_function_keeps_its_defaults_without_options(stack: cdk.Stack) -> None:
    orders(stack).add_on_demand_window("Evening", start="18:00", duration=Duration.hours(3))
    properties = _switch_function(Template.from_stack(stack))
    assert (properties["MemorySize"], properties["Timeout"]) == (256, 120)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"Switch": FunctionOptions(timeout=Duration.seconds(30))},
            r"Orders on-demand window 'W': function_options\['Switch'\]: timeout",
        ),
        (
            {"Settle": FunctionOptions(memory_size=512)},
            r"function_options: unknown function 'Settle'; expected one of: Switch",
        ),
        (
            {"Switch": FunctionOptions(memory_size=64)},
            r"function_options\['Switch'\]: memory_size",
        ),
    ],
)
def test_bad_switch_function_options_are_refused_naming_the_field(
    stack: cdk.Stack, options: dict[str, FunctionOptions], message: str
) -> None:
    with pytest.raises(CapacityConfigError, match=message):
        orders(stack).add_on_demand_window(
            "W", start="10:00", duration=Duration.hours(1), function_options=options
        )


def test_a_window_giving_other_switch_options_is_refused_and_left_out(stack: cdk.Stack) -> None:
    # GIVEN a window that made the switch with its defaults
    table = orders(stack)
    table.add_on_demand_window("A", start="08:00", duration=Duration.hours(1))
    # WHEN another window gives other options, THEN it is refused, saying what the switch has
    with pytest.raises(
        CapacityConfigError,
        match=r"on-demand window 'B': function_options: got 1024 MB, a timeout of 2 minutes.* "
        r"which has 256 MB, a timeout of 2 minutes.* already \(one switch a stack\)",
    ):
        table.add_on_demand_window(
            "B",
            start="18:00",
            duration=Duration.hours(1),
            function_options={"Switch": FunctionOptions(memory_size=1024)},
        )
    # AND the refused window left nothing behind
    assert {s.window.name for s in table.on_demand_preview(count=8, start=MONDAY)} == {"A"}


@pytest.mark.parametrize("kind", ["on-demand", "capacity"])
def test_week_days_given_as_one_string_is_a_schedule_error_as_other_bad_days_are(
    stack: cdk.Stack, kind: str
) -> None:
    table = orders(stack)
    for week_days in ("MON", ["MOON"]):  # one string, then a list holding no day's name
        with pytest.raises(ScheduleError, match="week_days|MOON"):
            if kind == "on-demand":
                table.add_on_demand_window(
                    "W", start="10:00", duration=Duration.hours(1), week_days=week_days
                )
            else:
                table.add_capacity_window(
                    "W",
                    dimension="read",
                    capacity=50,
                    start="10:00",
                    duration=Duration.hours(1),
                    week_days=week_days,
                )
