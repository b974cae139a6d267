"""Scaling schedules declared in code: validation at build time (exact messages), the
scheduled actions in the template, capacity windows, and the preview."""

from __future__ import annotations

import re
from calendar import monthrange
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import aws_cdk as cdk
import botocore.session
import pytest
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Annotations, Match, Template
from hypothesis import given
from hypothesis import strategies as st

from constructs_pkg import EVERY_DAY, Capacity, CapacityConfigError, ProvisionedTable
from ddb_capacity_runtime.schedule.entries import ScheduleEntry, ScheduleError
from ddb_capacity_runtime.schedule.expressions import parse
from tests.support.capacity_requests_construct import synth_errors

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
GK = dynamodb.Attribute(name="gk", type=dynamodb.AttributeType.STRING)
WHERE = "ProvisionedTable Test/Orders"
MONDAY = datetime(2026, 11, 23, tzinfo=UTC)


def warned(stack: cdk.Stack, pattern: str) -> None:
    """The stack synthesized, its table warned of ``pattern`` (a regular expression)."""
    Template.from_stack(stack)
    Annotations.from_stack(stack).has_warning("/Test/Orders", Match.string_like_regexp(pattern))


def make(stack: cdk.Stack) -> ProvisionedTable:
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=PK,
        read=Capacity(min_capacity=5, max_capacity=1000),
        write=Capacity(min_capacity=5, max_capacity=500),
    )
    table.add_global_secondary_index(
        index_name="byCustomer",
        partition_key=GK,
        read=Capacity(min_capacity=2, max_capacity=100),
        write=Capacity(min_capacity=2, max_capacity=100),
    )
    return table


def error_of(fn: Any) -> str:
    with pytest.raises(ScheduleError) as caught:
        fn()
    return str(caught.value)


def actions_of(
    stack: cdk.Stack, table: ProvisionedTable, kind: str, dimension: str, index: str | None = None
) -> list[dict[str, Any]]:
    parts: list[Any] = ["table/", stack.resolve(table.table.table_name)]
    if index:
        parts.append(f"/index/{index}")
    found = Template.from_stack(stack).find_resources(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "Properties": {
                "ResourceId": {"Fn::Join": ["", parts]},
                "ScalableDimension": f"dynamodb:{kind}:{dimension}CapacityUnits",
            }
        },
    )
    (target,) = found.values()
    actions: list[dict[str, Any]] = target["Properties"].get("ScheduledActions", [])
    return actions


# ------------------------------------------------------------------ expressions


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "cron(0 5 * * MON *)",
            "X: schedule 'cron(0 5 * * MON *)': exactly one of day-of-month ('*') and day-of-week "
            "('MON') must be ?",
        ),
        (
            "cron(0 5 ? * MON)",
            "X: schedule 'cron(0 5 ? * MON)' has 5 fields; a cron expression has 6: minutes hours "
            "day-of-month month day-of-week year",
        ),
        (
            "cron(0 25 ? * MON *)",
            "X: schedule 'cron(0 25 ? * MON *)': hours field '25' is out of range; expected "
            "0-23 (a value, a range a-b, a list a,b, a step a/n, or *)",
        ),
        (
            "cron(0 5 ? * 0 *)",
            "X: schedule 'cron(0 5 ? * 0 *)': day-of-week must be 1-7 (SUN-SAT) or SUN-SAT; got 0",
        ),
        (
            "cron(0 5 1 * ? 1969)",
            "X: schedule 'cron(0 5 1 * ? 1969)': years must be from 1970 to 2199; got '1969'",
        ),
        (
            "rate(1 hours)",
            "X: schedule 'rate(1 hours)': a rate is a positive whole number with a singular unit for "
            "1 (rate(1 hour)) and plural otherwise (rate(2 hours))",
        ),
        (
            "at(2026-02-30T05:00:00)",
            "X: schedule 'at(2026-02-30T05:00:00)' is not a real date and time",
        ),
        (
            "0 5 * * *",
            "X: schedule '0 5 * * *' is not an Application Auto Scaling expression; expected "
            "cron(minutes hours day-of-month month day-of-week year) with ? in day-of-month or "
            "day-of-week, at(yyyy-mm-ddThh:mm:ss) or rate(N minutes|hours|days)",
        ),
    ],
)
def test_malformed_expressions(text: str, message: str) -> None:
    assert error_of(lambda: parse(text, "X")) == message


def test_aas_day_numbers_start_on_sunday() -> None:
    # GIVEN day-of-week 2 (Monday in Application Auto Scaling), and 6#1 (first Friday)
    monday = parse("cron(30 4 ? * 2 *)", "X")
    first_friday = parse("cron(0 12 ? * 6#1 *)", "X")
    tz = ZoneInfo("UTC")
    # THEN the next firings fall on a Monday and on the first Friday of the month
    (when,) = list(monday.occurrences(tz, MONDAY, MONDAY + timedelta(days=7)))
    assert when == datetime(2026, 11, 23, 4, 30, tzinfo=UTC)
    (friday,) = list(
        first_friday.occurrences(
            tz, datetime(2026, 12, 1, tzinfo=UTC), datetime(2026, 12, 31, tzinfo=UTC)
        )
    )
    assert friday.day == 4 and friday.weekday() == 4


def firings(text: str, start: datetime, end: datetime) -> list[datetime]:
    return list(parse(text, "X").occurrences(ZoneInfo("UTC"), start, end))


@given(day=st.integers(1, 31), year=st.integers(2026, 2040))
def test_nearest_weekday_fires_on_the_weekday_nearest_its_day_in_the_same_month(
    day: int, year: int
) -> None:
    # GIVEN day-of-month nW, for any n and any year
    found = firings(
        f"cron(0 12 {day}W * ? *)",
        datetime(year, 1, 1, tzinfo=UTC),
        datetime(year + 1, 1, 1, tzinfo=UTC),
    )
    # THEN it fires once in each month that has day n, never in one that has not
    months_with_day = [m for m in range(1, 13) if day <= monthrange(year, m)[1]]
    assert [f.month for f in found] == months_with_day
    for fired in found:
        # on a weekday, at the hour the cron says
        assert fired.weekday() < 5 and fired.hour == 12
        target = fired.replace(day=day)
        weekdays = [
            target + timedelta(days=k)
            for k in range(-3, 4)
            if (target + timedelta(days=k)).month == target.month
            and (target + timedelta(days=k)).weekday() < 5
        ]
        # the nearest weekday of the month (after the day when two are as near: none is)
        assert abs((fired - target).days) == min(abs((w - target).days) for w in weekdays)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Saturday Aug 1: Monday the 3rd; Sunday Feb 15: Monday the 16th; Saturday Jan 31
        # (the last day): Friday the 30th; Sunday May 31 (the last day): Friday the 29th
        ("cron(0 12 1W 8 ? 2026)", ["2026-08-03"]),
        ("cron(0 12 15W 2 ? 2026)", ["2026-02-16"]),
        ("cron(0 12 31W 1 ? 2026)", ["2026-01-30"]),
        ("cron(0 12 31W 4-5 ? 2026)", ["2026-05-29"]),
        ("cron(0 12 LW 1-3 ? 2026)", ["2026-01-30", "2026-02-27", "2026-03-31"]),
        ("cron(0 12 ? 1-2 FRIL 2026)", ["2026-01-30", "2026-02-27"]),
        ("cron(0 12 ? 1-2 6L 2026)", ["2026-01-30", "2026-02-27"]),
        ("cron(0 12 ? 3 MON#2 2026)", ["2026-03-09"]),
        (
            "cron(0 12 ? 1 L 2026)",
            ["2026-01-03", "2026-01-10", "2026-01-17", "2026-01-24", "2026-01-31"],
        ),
        ("cron(0 12 1 1 ? 2026/3)", ["2026-01-01", "2029-01-01", "2032-01-01"]),
        ("cron(0 12 1 1 ? 2026-2030/2)", ["2026-01-01", "2028-01-01", "2030-01-01"]),
        # a day-of-week step runs to Saturday, never wrapping to Sunday
        (
            "cron(0 12 ? 3 MON/2 2026)",
            [f"2026-03-{d:02}" for d in (2, 4, 6, 9, 11, 13, 16, 18, 20, 23, 25, 27, 30)],
        ),
        ("cron(0 12 1 1 ? */30)", ["2030-01-01"]),
    ],
)
def test_the_services_day_and_year_forms_fire_when_the_service_would(
    text: str, expected: list[str]
) -> None:
    # GIVEN Application Auto Scaling's W, LW, nL, L, # and year steps
    found = firings(text, datetime(2026, 1, 1, tzinfo=UTC), datetime(2033, 1, 1, tzinfo=UTC))
    # THEN the days it fires on are the days the service's dialect names
    assert [f.strftime("%Y-%m-%d") for f in found] == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "cron(0 12 1W,15W * ? *)",
            "day-of-month field '1W,15W': W takes one day (15W, the weekday nearest the 15th) "
            "or L (LW), not a list, range or step",
        ),
        ("cron(0 12 30W 2 ? *)", "never fires: no month of '2' has a day '30W'"),
        ("cron(0 12 1 1 ? 2026/0)", "a year step must be at least 1; got '2026/0'"),
        ("cron(0 12 1 1 ? 2026/x)", "year field '2026/x' must be *, a year, a range"),
        ("cron(0 12 1 1 ? 202²)", "year field '202²' must be *, a year, a range"),
        (
            "cron(0 9 ? * MONTUE *)",
            "day-of-week must be 1-7 (SUN-SAT) or SUN-SAT; got 23 in 'MONTUE'",
        ),
        ("cron(0 12 ? * 8L *)", "day-of-week must be 1-7 (SUN-SAT) or SUN-SAT; got 8"),
    ],
)
def test_the_services_forms_misused_are_refused_by_name(text: str, message: str) -> None:
    assert message in error_of(lambda: parse(text, "X"))


def test_a_nearest_weekday_entry_deploys_as_written_and_previews_its_days(
    stack: cdk.Stack,
) -> None:
    # GIVEN an entry on the weekday nearest the 1st, in a year to come
    year = datetime.now(UTC).year + 1
    table = make(stack)
    entry = ScheduleEntry(name="month-start", schedule=f"cron(0 6 1W * ? {year})", min_capacity=300)
    table.add_schedule(entry, dimension="read")
    # THEN the scheduled action carries the expression as written (the service reads it)
    (action,) = actions_of(stack, table, "table", "Read")
    assert action["Schedule"] == f"cron(0 6 1W * ? {year})"
    # AND its first firing is the first weekday of the year on or after January 1
    first = parse(entry.schedule, "X").first_from(ZoneInfo("UTC"), datetime(year, 1, 1, tzinfo=UTC))
    assert first is not None and first.weekday() < 5 and first.day <= 3 and first.month == 1


def test_year_field_limits_occurrences() -> None:
    expr = parse("cron(0 0 1 1 ? 2027)", "X")
    found = list(
        expr.occurrences(
            ZoneInfo("UTC"), datetime(2026, 1, 1, tzinfo=UTC), datetime(2029, 1, 1, tzinfo=UTC)
        )
    )
    assert found == [datetime(2027, 1, 1, tzinfo=UTC)]


def test_rate_counts_from_its_start_time() -> None:
    expr = parse("rate(6 hours)", "X")
    anchor = datetime(2026, 11, 23, 1, 0, tzinfo=UTC)
    found = list(expr.occurrences(ZoneInfo("UTC"), MONDAY, MONDAY + timedelta(days=1), anchor))
    assert [w.hour for w in found] == [1, 7, 13, 19]


# ------------------------------------------------------------------ entry validation


def test_unknown_time_zone(stack: cdk.Stack) -> None:
    entry = ScheduleEntry(
        name="peak", schedule="cron(0 18 ? * * *)", min_capacity=50, time_zone="Europe/Pariss"
    )
    assert error_of(lambda: make(stack).add_schedule(entry, dimension="read")) == (
        f"{WHERE} table read schedule 'peak': time_zone must be an IANA time zone name such as "
        f"'UTC' or 'Europe/Paris'; got 'Europe/Pariss'"
    )


@pytest.mark.parametrize("name", ["peak:up", "peak/down", "a|b", "", "x" * 201])
def test_a_name_application_auto_scaling_refuses_is_refused_at_build_time(
    stack: cdk.Stack, name: str
) -> None:
    """A scheduled action's name may not hold ':', '/' or '|' (botocore's model of
    PutScheduledAction; cfn-lint's schema has no pattern for it): the deploy would fail."""
    entry = ScheduleEntry(name=name, schedule="cron(0 18 ? * * *)", min_capacity=50)
    assert error_of(lambda: make(stack).add_schedule(entry, dimension="read")) == (
        f"{WHERE} table read: schedule name must be 1 to 200 letters, digits "
        "or _ . # - (Application Auto Scaling refuses ':', '/' and '|' in a scheduled action's "
        f"name); got {name!r}"
    )


def test_a_window_named_with_a_colon_is_refused_and_a_name_with_the_rest_is_taken(
    stack: cdk.Stack,
) -> None:
    table = make(stack)
    window: dict[str, Any] = {"dimension": "write", "capacity": 100, "start": "05:00"}
    with pytest.raises(ScheduleError) as refused:
        table.add_capacity_window("sale:2025/11", duration=cdk.Duration.hours(1), **window)
    assert str(refused.value) == (
        f"{WHERE} table write window 'sale:2025/11': name must be 1 to 192 letters, digits or "
        "_ . # - (its actions are named NAME-raise and NAME-restore, and Application Auto "
        "Scaling refuses ':', '/' and '|' in a scheduled action's name); got 'sale:2025/11'"
    )
    table.add_capacity_window("sale_2025.11#a-b", duration=cdk.Duration.hours(1), **window)
    names = [a["ScheduledActionName"] for a in actions_of(stack, table, "table", "Write")]
    assert names == ["sale_2025.11#a-b-raise", "sale_2025.11#a-b-restore"]
    # botocore's own model of the name refuses none of them
    model = botocore.session.get_session().get_service_model("application-autoscaling")
    request = model.operation_model("PutScheduledAction").input_shape
    assert request is not None
    pattern = request.members["ScheduledActionName"].metadata["pattern"]
    assert all(re.fullmatch(pattern, n) for n in names)
    assert not re.fullmatch(pattern, "peak:up") and not re.fullmatch(pattern, "peak/down")


def test_duplicate_name_on_one_dimension(stack: cdk.Stack) -> None:
    table = make(stack)
    table.add_schedule(
        ScheduleEntry(name="peak", schedule="cron(0 18 ? * * *)", min_capacity=50), dimension="read"
    )
    table.add_schedule(
        ScheduleEntry(name="peak", schedule="cron(0 18 ? * * *)", min_capacity=50),
        dimension="write",
    )  # another scalable target: allowed
    again = ScheduleEntry(name="peak", schedule="cron(0 19 ? * * *)", min_capacity=60)
    assert error_of(lambda: table.add_schedule(again, dimension="read")) == (
        f"{WHERE} table read schedule 'peak': the name is already used on this dimension; "
        f"names must be unique per scalable target"
    )


def test_entry_min_above_max(stack: cdk.Stack) -> None:
    entry = ScheduleEntry(
        name="peak", schedule="cron(0 18 ? * * *)", min_capacity=90, max_capacity=80
    )
    assert error_of(lambda: make(stack).add_schedule(entry, dimension="read")) == (
        f"{WHERE} table read schedule 'peak': min_capacity (90) must be lower than or equal "
        f"to max_capacity (80)"
    )


def test_entry_without_min_or_max(stack: cdk.Stack) -> None:
    entry = ScheduleEntry(name="peak", schedule="cron(0 18 ? * * *)")
    assert error_of(lambda: make(stack).add_schedule(entry, dimension="write")) == (
        f"{WHERE} table write schedule 'peak': set min_capacity, max_capacity or both; got neither"
    )


def test_entry_on_an_unknown_index(stack: cdk.Stack) -> None:
    entry = ScheduleEntry(name="peak", schedule="cron(0 18 ? * * *)", min_capacity=5)
    with pytest.raises(ValueError) as caught:
        make(stack).add_schedule(entry, dimension="read", index_name="byCustomr")
    assert str(caught.value) == (
        f"{WHERE}: unknown global secondary index 'byCustomr'; the table's indexes are: "
        f"'byCustomer'"
    )


RANGE = "(a value, a range a-b, a list a,b, a step a/n, or *)"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cron(0 25 * * * *)", "hours field '25' is out of range; expected 0-23"),
        ("cron(60 5 * * * *)", "minutes field '60' is out of range; expected 0-59"),
        (
            "cron(0 5 32 * * *)",
            "day-of-month field '32' is out of range; expected 1-31, L, LW, nW (the weekday "
            "nearest day n) or ?",
        ),
        ("cron(0 5 * 13 * *)", "month field '13' is out of range; expected 1-12 or JAN-DEC"),
        ("cron(0 5 * * 8 *)", "day-of-week must be 1-7 (SUN-SAT) or SUN-SAT; got 8"),
        ("cron(0 5 * * * 1969)", "years must be from 1970 to 2199; got '1969'"),
    ],
    ids=["hours", "minutes", "day-of-month", "month", "day-of-week", "year"],
)
def test_a_field_out_of_range_is_named_before_the_question_mark_rule(
    text: str, message: str
) -> None:
    # GIVEN an expression with both day fields * (the ? rule) and one field out of range
    # WHEN it is parsed
    with pytest.raises(ScheduleError) as refused:
        parse(text, "X")
    # THEN the field out of range is named, with what it allows
    assert str(refused.value).startswith(f"X: schedule {text!r}: {message}")
    if "field" in message:
        assert str(refused.value).endswith(RANGE)


def test_entry_with_a_malformed_expression_names_the_entry(stack: cdk.Stack) -> None:
    entry = ScheduleEntry(name="peak", schedule="cron(0 18 * * * *)", min_capacity=5)
    assert error_of(lambda: make(stack).add_schedule(entry, dimension="read")) == (
        f"{WHERE} table read schedule 'peak': schedule 'cron(0 18 * * * *)': exactly one of "
        f"day-of-month ('*') and day-of-week ('*') must be ?"
    )


def test_naive_start_time(stack: cdk.Stack) -> None:
    entry = ScheduleEntry(
        name="sale", schedule="cron(0 8 ? * * *)", min_capacity=50, start_time=datetime(2026, 12, 1)
    )
    assert error_of(lambda: make(stack).add_schedule(entry, dimension="read")) == (
        f"{WHERE} table read schedule 'sale': start_time must be a timezone-aware datetime; "
        f"got datetime.datetime(2026, 12, 1, 0, 0)"
    )


def test_min_above_max_over_time_is_an_error_at_synth(stack: cdk.Stack) -> None:
    # GIVEN a minimum raised to 800 every evening while the write max stays 500
    table = make(stack)
    table.add_schedule(
        ScheduleEntry(name="evening", schedule="cron(0 18 ? * * *)", min_capacity=800),
        dimension="write",
    )
    # THEN the whole-table check reports it once, at its first firing
    (message,) = table.node.validate()
    assert message.startswith("table write: after 'evening' at ")
    assert message.endswith(" 18:00 UTC, min (800) would be above max (500)")


def test_a_raise_no_entry_sets_back_is_a_warning(stack: cdk.Stack) -> None:
    """A scheduled action stays in force until another changes it: a minimum raised every
    morning with nothing to lower it stays raised for good. The check says so; an entry
    that sets the configured minimum back silences it."""
    table = make(stack)
    table.add_schedule(
        ScheduleEntry(name="morning", schedule="cron(0 8 ? * * *)", min_capacity=50),
        dimension="read",
    )
    warned(stack, "table read: 'morning' raises the minimum above 5 and no entry sets it back")
    table.add_schedule(
        ScheduleEntry(name="evening", schedule="cron(0 18 ? * * *)", min_capacity=5),
        dimension="read",
    )
    errors, warnings = table._schedule.check()
    assert errors == [] and not [w for w in warnings if "sets it back" in w]


def test_an_entry_with_no_firing_left_is_not_also_a_raise_never_set_back(
    stack: cdk.Stack,
) -> None:
    # GIVEN a raise that fired once, last year, and nothing else on the dimension
    table = make(stack)
    last_year = datetime.now(UTC).year - 1
    table.add_schedule(
        ScheduleEntry(name="once", schedule=f"at({last_year}-06-01T08:00:00)", min_capacity=50),
        dimension="read",
    )
    _, warnings = table._schedule.check()
    # THEN it is warned of once, for what it is (no firing left), not as a raise kept for good
    assert [w for w in warnings if "'once'" in w] == [
        w for w in warnings if "has no firing left" in w
    ]
    assert len([w for w in warnings if "'once'" in w]) == 1


@pytest.mark.parametrize(
    ("window", "message"),
    [
        (
            {"capacity": 5},
            "table read window 'low': capacity: got 5; a window raises the minimum, which is 5 "
            "already: give more than 5, or lower the configured minimum",
        ),
        (
            {"capacity": 50, "week_days": "MON-FRI"},
            "window 'low': week_days: got 'MON-FRI', one string; expected a list of day names: "
            "WEEKDAYS, EVERY_DAY or a list such as ['MON', 'WED']",
        ),
    ],
)
def test_a_window_that_cannot_raise_is_refused_by_name(
    stack: cdk.Stack, window: dict[str, Any], message: str
) -> None:
    table = make(stack)
    with pytest.raises(Exception) as refused:
        table.add_capacity_window(
            "low", dimension="read", start="09:00", duration=cdk.Duration.hours(1), **window
        )
    assert str(refused.value).endswith(message)


def test_a_schedule_on_a_dimension_whose_minimum_is_a_token_is_refused(
    stack: cdk.Stack,
) -> None:
    """A window's restore sets the configured minimum back: one known at deploy time only
    cannot be replayed at synth, and its restore rendered as MinCapacity 0. Refused by
    name, on that dimension only."""
    token: Any = cdk.CfnParameter(stack, "Floor", type="Number").value_as_number
    table = ProvisionedTable(
        stack,
        "Orders",
        partition_key=PK,
        read=Capacity(min_capacity=token, max_capacity=100),
        write=Capacity(min_capacity=5, max_capacity=100),
    )

    def window() -> None:
        table.add_capacity_window(
            "w", dimension="read", capacity=50, start="09:00", duration=cdk.Duration.hours(1)
        )

    def entry() -> None:
        table.add_schedule(
            ScheduleEntry(name="e", schedule="cron(0 8 ? * * *)", min_capacity=20),
            dimension="read",
        )

    for add in (window, entry):
        with pytest.raises(ScheduleError, match="configured min_capacity must be a whole"):
            add()
    table.add_capacity_window(
        "w", dimension="write", capacity=50, start="09:00", duration=cdk.Duration.hours(1)
    )
    restores = [a["ScalableTargetAction"] for a in actions_of(stack, table, "table", "Write")]
    assert {"MinCapacity": 5} in restores and all(r.get("MinCapacity") for r in restores)


def test_a_token_capacity_in_a_schedule_is_refused_by_name(stack: cdk.Stack) -> None:
    """A schedule is checked over its next 28 days as the app is built: a capacity known
    at deploy time only (a CfnParameter's) cannot be, and is refused by name, not shown as
    the number CDK encodes a token as."""
    token: Any = cdk.CfnParameter(stack, "Units", type="Number").value_as_number
    table = make(stack)

    def window() -> None:
        table.add_capacity_window(
            "w", dimension="read", capacity=token, start="09:00", duration=cdk.Duration.hours(1)
        )

    def entry() -> None:
        table.add_schedule(
            ScheduleEntry(name="e", schedule="cron(0 8 ? * * *)", min_capacity=token),
            dimension="read",
        )

    for add in (window, entry):
        with pytest.raises(Exception) as refused:
            add()
        said = str(refused.value)
        assert "must be known when the app is built" in said and "got a token" in said
        assert "e+" not in said


def test_a_seasonal_ceiling_makes_it_valid(stack: cdk.Stack) -> None:
    table = make(stack)
    table.add_schedule(
        ScheduleEntry(
            name="evening", schedule="cron(0 18 ? * * *)", min_capacity=800, max_capacity=2000
        ),
        dimension="write",
    )
    assert table.node.validate() == []


def test_two_entries_firing_together_with_different_values(stack: cdk.Stack) -> None:
    table = make(stack)
    table.add_schedule(
        ScheduleEntry(name="a", schedule="cron(0 18 ? * * *)", min_capacity=50), dimension="read"
    )
    table.add_schedule(
        ScheduleEntry(name="b", schedule="cron(0 18 ? * MON *)", min_capacity=80), dimension="read"
    )
    (message,) = table.node.validate()
    assert "table read: 'a' and 'b' both fire at " in message
    assert message.endswith("with different capacities; the order between them is not defined")


# ------------------------------------------------------------------ template


def test_scheduled_actions_in_the_template(stack: cdk.Stack) -> None:
    table = make(stack)
    year = datetime.now(UTC).year + 1  # to come, whenever the test runs
    start = datetime(year, 12, 1, 8, 0, tzinfo=UTC)
    end = datetime(year, 12, 24, 20, 0, tzinfo=UTC)
    table.add_schedule(
        ScheduleEntry(
            name="holiday-peak",
            schedule="cron(0 8 ? * * *)",
            min_capacity=200,
            max_capacity=4000,
            time_zone="America/New_York",
            start_time=start,
            end_time=end,
        ),
        dimension="read",
        index_name="byCustomer",
    )
    table.add_schedule(
        ScheduleEntry(name="launch", schedule=f"at({year}-12-01T09:00:00)", min_capacity=300),
        dimension="write",
    )
    assert actions_of(stack, table, "index", "Read", "byCustomer") == [
        {
            "ScheduledActionName": "holiday-peak",
            "Schedule": "cron(0 8 ? * * *)",
            "ScalableTargetAction": {"MinCapacity": 200, "MaxCapacity": 4000},
            "Timezone": "America/New_York",
            "StartTime": f"{year}-12-01T08:00:00Z",
            "EndTime": f"{year}-12-24T20:00:00Z",
        }
    ]
    assert actions_of(stack, table, "table", "Write") == [
        {
            "ScheduledActionName": "launch",
            "Schedule": f"at({year}-12-01T09:00:00)",
            "ScalableTargetAction": {"MinCapacity": 300},
            "Timezone": "UTC",
        }
    ]
    assert actions_of(stack, table, "table", "Read") == []


# ------------------------------------------------------------------ windows


def test_window_raises_before_and_restores_after(stack: cdk.Stack) -> None:
    # GIVEN a bulk load at 05:00 Paris time on weekdays, 2 hours, needing 400 writes
    table = make(stack)
    table.add_capacity_window(
        "bulk-load",
        dimension="write",
        capacity=400,
        start="05:00",
        duration=cdk.Duration.hours(2),
        time_zone="Europe/Paris",
    )
    # THEN the minimum is raised 15 minutes before and restored at 07:00
    assert actions_of(stack, table, "table", "Write") == [
        {
            "ScheduledActionName": "bulk-load-raise",
            "Schedule": "cron(45 4 ? * MON,TUE,WED,THU,FRI *)",
            "ScalableTargetAction": {"MinCapacity": 400},
            "Timezone": "Europe/Paris",
        },
        {
            "ScheduledActionName": "bulk-load-restore",
            "Schedule": "cron(0 7 ? * MON,TUE,WED,THU,FRI *)",
            "ScalableTargetAction": {"MinCapacity": 5},
            "Timezone": "Europe/Paris",
        },
    ]


def test_window_lead_across_midnight_shifts_the_week_days(stack: cdk.Stack) -> None:
    table = make(stack)
    table.add_capacity_window(
        "early",
        dimension="read",
        capacity=300,
        start="00:10",
        duration=cdk.Duration.minutes(50),
        lead=cdk.Duration.minutes(30),
        week_days=["MON"],
    )
    raise_, restore = actions_of(stack, table, "table", "Read")
    assert raise_["Schedule"] == "cron(40 23 ? * SUN *)"
    assert restore["Schedule"] == "cron(0 1 ? * MON *)"


def test_window_above_max_brings_a_ceiling_and_takes_it_back(stack: cdk.Stack) -> None:
    table = make(stack)
    table.add_capacity_window(
        "sale",
        dimension="write",
        capacity=3000,
        start="09:00",
        duration=cdk.Duration.hours(3),
        week_days=["SAT"],
    )
    raise_, restore = actions_of(stack, table, "table", "Write")
    assert raise_["ScalableTargetAction"] == {"MinCapacity": 3000, "MaxCapacity": 3000}
    assert restore["ScalableTargetAction"] == {"MinCapacity": 5, "MaxCapacity": 500}


def test_a_window_never_lowers_what_another_active_window_needs(stack: cdk.Stack) -> None:
    # GIVEN a long window and a smaller one that starts and ends inside it
    table = make(stack)
    table.add_capacity_window(
        "batch", dimension="read", capacity=900, start="01:00", duration=cdk.Duration.hours(4)
    )
    table.add_capacity_window(
        "report", dimension="read", capacity=300, start="02:00", duration=cdk.Duration.hours(1)
    )
    by_name = {
        a["ScheduledActionName"]: a["ScalableTargetAction"]["MinCapacity"]
        for a in actions_of(stack, table, "table", "Read")
    }
    # THEN the inner window holds the outer's 900 at both ends; the outer restores the min
    assert by_name == {
        "batch-raise": 900,
        "batch-restore": 5,
        "report-raise": 900,
        "report-restore": 900,
    }
    # AND the inner window is flagged as having no effect
    Template.from_stack(stack)
    Annotations.from_stack(stack).has_warning(
        "/Test/Orders",
        Match.string_like_regexp(
            "window 'report' is always inside window 'batch' with no more capacity"
        ),
    )


def test_windows_that_overlap_on_some_days_only_contradict(stack: cdk.Stack) -> None:
    table = make(stack)
    table.add_capacity_window(
        "weekday", dimension="write", capacity=400, start="05:00", duration=cdk.Duration.hours(2)
    )
    table.add_capacity_window(
        "monday",
        dimension="write",
        capacity=450,
        start="06:30",
        duration=cdk.Duration.hours(1),
        week_days=["MON"],
    )
    assert table.node.validate() == [
        f"{WHERE} window 'weekday': its end falls inside other windows on some days and not "
        f"others (it would set [5, 450] on different days); align the windows or split them "
        f"by week day"
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start": "5:00"}, "start must be HH:MM (24-hour); got '5:00'"),
        (
            {"duration": cdk.Duration.days(7)},
            "duration must be from 1 minute to 6 days; got 7 days, 0:00:00",
        ),
        (
            {"duration": cdk.Duration.seconds(30)},
            "duration must be from 1 minute to 6 days; got 0:00:30",
        ),
        (
            {"week_days": ["MONDAY"]},
            "week_days must be names from SUN, MON, TUE, WED, THU, FRI, SAT; got ['MONDAY']",
        ),
        ({"capacity": 0}, "capacity must be a whole number from 1 to 40000; got 0"),
    ],
)
def test_window_validation(stack: cdk.Stack, kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {
        "dimension": "write",
        "capacity": 100,
        "start": "05:00",
        "duration": cdk.Duration.hours(1),
        **kwargs,
    }
    assert error_of(lambda: make(stack).add_capacity_window("w", **args)) == (
        f"{WHERE} table write window 'w': {message}"
    )


def test_a_window_lead_that_is_not_a_duration_is_refused_by_name(stack: cdk.Stack) -> None:
    table = make(stack)
    with pytest.raises(CapacityConfigError) as caught:
        table.add_capacity_window(
            "w",
            dimension="write",
            capacity=100,
            start="05:00",
            duration=cdk.Duration.hours(1),
            lead=30,  # type: ignore[arg-type]
        )
    assert str(caught.value).startswith(f"{WHERE} window 'w': lead: got 30 (int); expected a")


def test_too_many_lowerings_warn_about_the_decrease_quota(stack: cdk.Stack) -> None:
    # GIVEN a minimum raised and dropped twice an hour: 48 lowerings a day, where DynamoDB
    # allows 4, then one an hour
    table = make(stack)
    table.add_schedule(
        ScheduleEntry(name="up", schedule="cron(0,30 * ? * * *)", min_capacity=100),
        dimension="read",
    )
    table.add_schedule(
        ScheduleEntry(name="down", schedule="cron(15,45 * ? * * *)", min_capacity=5),
        dimension="read",
    )
    warned(stack, "'down' lowers capacity more often than the decrease quota allows")


# ------------------------------------------------------------------ preview


def test_preview_lists_firings_with_the_effective_range(stack: cdk.Stack) -> None:
    table = make(stack)
    table.add_capacity_window(
        "bulk-load",
        dimension="write",
        capacity=400,
        start="05:00",
        duration=cdk.Duration.hours(2),
        time_zone="Europe/Paris",
    )
    table.add_schedule(
        ScheduleEntry(name="evening", schedule="cron(0 18 ? * * *)", min_capacity=50),
        dimension="read",
    )
    events = table.schedule_preview(count=4, start=MONDAY)
    rows = [
        (
            e.when.isoformat(),
            e.placed.entry.name,
            e.placed.dimension,
            e.min_capacity,
            e.max_capacity,
        )
        for e in events
    ]
    assert rows == [
        ("2026-11-23T03:45:00+00:00", "bulk-load-raise", "write", 400, 500),
        ("2026-11-23T06:00:00+00:00", "bulk-load-restore", "write", 5, 500),
        ("2026-11-23T18:00:00+00:00", "evening", "read", 50, 1000),
        ("2026-11-24T03:45:00+00:00", "bulk-load-raise", "write", 400, 500),
    ]
    assert events[0].when.astimezone(events[0].placed.tz).strftime("%H:%M %Z") == "04:45 CET"


@pytest.mark.parametrize("count", [0, -1, 2.5, True, "3"])
def test_a_preview_of_no_whole_positive_count_is_refused_naming_count(
    stack: cdk.Stack, count: object
) -> None:
    # GIVEN a table with a schedule that fires
    table = make(stack)
    table.add_schedule(
        ScheduleEntry(name="evening", schedule="cron(0 18 ? * * *)", min_capacity=50),
        dimension="read",
    )
    # WHEN its preview is asked for a count of firings that is not 1 or more
    with pytest.raises(CapacityConfigError) as caught:
        table.schedule_preview(count=count, start=MONDAY)  # type: ignore[arg-type]
    # THEN it is refused, naming count and the value, not answered with no firings
    assert str(caught.value) == (
        "ProvisionedTable Test/Orders: schedule_preview: count must be a whole number of 1 or "
        f"more (the firings to list); got {count!r}"
    )
    assert len(table.schedule_preview(count=1, start=MONDAY)) == 1


def test_hourly_lowerings_fit_the_quota(stack: cdk.Stack) -> None:
    table = make(stack)
    table.add_schedule(
        ScheduleEntry(name="up", schedule="cron(0 * ? * * *)", min_capacity=100), dimension="read"
    )
    table.add_schedule(
        ScheduleEntry(name="down", schedule="cron(30 * ? * * *)", min_capacity=5), dimension="read"
    )
    Template.from_stack(stack)
    Annotations.from_stack(stack).has_no_warning("/Test/Orders", Match.any_value())


def test_cron_from_fields_places_the_question_mark() -> None:
    from constructs_pkg import cron

    assert cron(hour=5, week_day="MON-FRI") == "cron(0 5 ? * MON-FRI *)"
    assert cron(minute=30, hour=2, day=1) == "cron(30 2 1 * ? *)"
    assert parse(cron(hour=5, week_day="MON-FRI"), "X").cron5 == "0 5 * * 1-5"  # standard cron
    assert error_of(lambda: cron(day=1, week_day="MON")) == (
        "cron: set day (1) or week_day ('MON'), not both; Application Auto Scaling takes one "
        "of them"
    )
    # a field out of range is refused where the expression is made, not where it is used
    assert error_of(lambda: cron(hour=25)) == (
        "cron: schedule 'cron(0 25 * * ? *)': hours field '25' is out of range; expected 0-23 "
        "(a value, a range a-b, a list a,b, a step a/n, or *)"
    )
    assert "day-of-week" in error_of(lambda: cron(week_day="MON-FRX"))


def test_a_cdk_schedule_object_is_accepted(stack: cdk.Stack) -> None:
    from aws_cdk import aws_applicationautoscaling as appscaling

    table = make(stack)
    table.add_schedule(
        ScheduleEntry(
            name="cdk",
            schedule=appscaling.Schedule.cron(hour="6", minute="0", week_day="SAT"),  # type: ignore[arg-type]
            min_capacity=40,
        ),
        dimension="read",
    )
    (action,) = actions_of(stack, table, "table", "Read")
    assert action["Schedule"] == "cron(0 6 ? * SAT *)"


# ------------------------------------------------------------------ regressions


def test_one_window_name_on_read_and_write_keeps_each_capacity(stack: cdk.Stack) -> None:
    table = make(stack)
    for dimension, capacity in (("read", 800), ("write", 300)):
        table.add_capacity_window(
            "tournament",
            dimension=dimension,
            capacity=capacity,
            start="18:00",
            duration=cdk.Duration.hours(3),
        )
    read = actions_of(stack, table, "table", "Read")
    write = actions_of(stack, table, "table", "Write")
    assert read[0]["ScalableTargetAction"] == {"MinCapacity": 800}
    assert write[0]["ScalableTargetAction"] == {"MinCapacity": 300}


def test_a_window_longer_than_the_gap_between_its_raises_is_refused(stack: cdk.Stack) -> None:
    message = error_of(
        lambda: make(stack).add_capacity_window(
            "long",
            dimension="write",
            capacity=100,
            start="09:00",
            duration=cdk.Duration.hours(30),
            week_days=EVERY_DAY,
        )
    )
    assert message == (
        f"{WHERE} table write window 'long': lead + duration (1 day, 6:15:00) is not shorter "
        f"than the 1 day, 0:00:00 between two of its raises (SUN and MON 09:00); the next "
        f"raise would come at or before the restore. Shorten it, or give fewer week_days"
    )
    # the same length is fine when the raises are a week apart
    make(cdk.Stack(cdk.App(), "Weekly")).add_capacity_window(
        "long",
        dimension="write",
        capacity=100,
        start="09:00",
        duration=cdk.Duration.hours(30),
        week_days=["SAT"],
    )


def test_a_window_exactly_as_long_as_the_gap_between_its_raises_is_refused(
    stack: cdk.Stack,
) -> None:
    # (its restore and the next raise would fire at the same minute, in no defined order:
    # refused at synth inside jsii, with no word of the window)
    message = error_of(
        lambda: make(stack).add_capacity_window(
            "w",
            dimension="write",
            capacity=500,
            start="09:00",
            duration=cdk.Duration.hours(1),
            lead=cdk.Duration.hours(23),
        )
    )
    assert message == (
        f"{WHERE} table write window 'w': lead + duration (1 day, 0:00:00) is not shorter "
        f"than the 1 day, 0:00:00 between two of its raises (MON and TUE 09:00); the next "
        f"raise would come at or before the restore. Shorten it, or give fewer week_days"
    )
    # a minute less is fine
    make(cdk.Stack(cdk.App(), "Shorter")).add_capacity_window(
        "w",
        dimension="write",
        capacity=500,
        start="09:00",
        duration=cdk.Duration.minutes(59),
        lead=cdk.Duration.hours(23),
    )


def test_the_users_own_scheduled_actions_stay_beside_the_librarys(stack: cdk.Stack) -> None:
    # GIVEN a scheduled action of the user's own on the read target
    table = make(stack)
    table.scalable_attribute("read").scale_on_schedule(
        "mine",
        schedule=appscaling.Schedule.cron(hour="6", minute="0"),
        min_capacity=50,
        time_zone=cdk.TimeZone.EUROPE_PARIS,
        start_time=datetime(2027, 1, 1, tzinfo=UTC),
    )
    # WHEN the library's schedule is used on the same dimension
    table.add_schedule(
        ScheduleEntry(name="peak", schedule="cron(0 18 ? * * *)", min_capacity=200),
        dimension="read",
    )
    # THEN both are rendered
    assert actions_of(stack, table, "table", "Read") == [
        {
            "ScheduledActionName": "mine",
            "Schedule": "cron(0 6 * * ? *)",
            "ScalableTargetAction": {"MinCapacity": 50},
            "Timezone": "Europe/Paris",
            "StartTime": "2027-01-01T00:00:00Z",
        },
        {
            "ScheduledActionName": "peak",
            "Schedule": "cron(0 18 ? * * *)",
            "ScalableTargetAction": {"MinCapacity": 200},
            "Timezone": "UTC",
        },
    ]


def test_a_cdk_time_zone_is_taken_wherever_a_time_zone_is(stack: cdk.Stack) -> None:
    table = make(stack)
    table.add_capacity_window(
        "load",
        dimension="write",
        capacity=100,
        start="05:00",
        duration=cdk.Duration.hours(1),
        time_zone=cdk.TimeZone.EUROPE_PARIS,
    )
    entry = ScheduleEntry(
        name="peak",
        schedule="cron(0 18 ? * * *)",
        min_capacity=50,
        time_zone=cdk.TimeZone.AMERICA_NEW_YORK,  # type: ignore[arg-type]
    )
    table.add_schedule(entry, dimension="read")
    assert {a["Timezone"] for a in actions_of(stack, table, "table", "Write")} == {"Europe/Paris"}
    assert actions_of(stack, table, "table", "Read")[0]["Timezone"] == "America/New_York"


def test_capacity_and_schedule_entries_take_keywords_only() -> None:
    with pytest.raises(TypeError):
        ScheduleEntry("peak", "cron(0 18 ? * * *)")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Capacity(5, 10)  # type: ignore[call-arg]


def _daily(table: ProvisionedTable, count: int) -> None:
    """``count`` daily entries on the table's read target, a minute apart."""
    for n in range(count):
        table.add_schedule(
            ScheduleEntry(
                name=f"e{n}", schedule=f"cron({n % 60} {n // 60} ? * * *)", min_capacity=10
            ),
            dimension="read",
        )


def _too_many(table: ProvisionedTable) -> list[str]:
    return [m for m in table.node.validate() if "scheduled actions" in m]


def test_a_target_takes_two_hundred_scheduled_actions_and_no_more(stack: cdk.Stack) -> None:
    # GIVEN 200 entries on one target THEN nothing is said
    table = make(stack)
    _daily(table, 200)
    assert _too_many(table) == []
    # GIVEN 201 THEN synth fails naming the target and AAS's limit
    other = make(cdk.Stack(cdk.App(), "More"))
    _daily(other, 201)
    assert _too_many(other) == [
        "ProvisionedTable More/Orders table read: 201 scheduled actions (a window counts 2: "
        "its raise and its restore); Application Auto Scaling keeps at most 200 a scalable target"
    ]


def test_the_users_own_scheduled_actions_count_toward_the_two_hundred(stack: cdk.Stack) -> None:
    # GIVEN 200 entries of the library's and one of the user's own on the same target
    table = make(stack)
    _daily(table, 200)
    table.scalable_attribute("read").scale_on_schedule(
        "mine", schedule=appscaling.Schedule.cron(hour="6", minute="30"), min_capacity=50
    )
    # THEN synth fails, counting both
    assert _too_many(table) == [
        "ProvisionedTable Test/Orders table read: 200 scheduled actions (a window counts 2: "
        "its raise and its restore) and 1 of scale_on_schedule; Application Auto Scaling keeps "
        "at most 200 a scalable target"
    ]


def test_a_schedule_longer_than_application_auto_scaling_takes_is_refused(stack: cdk.Stack) -> None:
    minutes = ",".join(str(n % 60) for n in range(600))
    schedule = f"cron({minutes} 6 ? * * *)"
    message = error_of(
        lambda: make(stack).add_schedule(
            ScheduleEntry(name="long", schedule=schedule, min_capacity=10),
            dimension="read",
        )
    )
    assert message == (
        f"ProvisionedTable Test/Orders table read schedule 'long': schedule is "
        f"{len(schedule):,} characters; Application Auto Scaling takes at most 1,600"
    )


def _tagged(name: str, tags: int) -> cdk.Stack:
    """A stack of ``tags`` tags, 10 of them the stack's own (CloudFormation's, on every
    resource) and the rest applied to its resources, and a table with a high-water mark
    (the library's tag)."""
    stack = cdk.Stack(cdk.App(), name, tags={f"stack-{n}": "x" for n in range(10)})
    for n in range(tags - 10):
        cdk.Tags.of(stack).add(f"team-{n}", "x")
    ProvisionedTable(
        stack,
        "Orders",
        partition_key=PK,
        read=Capacity(min_capacity=5, max_capacity=1000, high_water_mark=800),
        write=Capacity(min_capacity=5, max_capacity=500),
    )
    return stack


def test_a_table_past_dynamodbs_fifty_tags_fails_synth_naming_the_librarys() -> None:
    # GIVEN 49 tags of the stack's and the library's THEN 50 pass
    assert [e for e in synth_errors(_tagged("Tagged", 49)) if "tags" in e] == []
    # GIVEN one more THEN synthesis fails naming the count and the library's tag
    assert [e for e in synth_errors(_tagged("More", 50)) if "tags" in e] == [
        "[More/Orders] ProvisionedTable More/Orders: the table has 51 tags once deployed (its "
        "stack's included), the library's 'ddb-capacity:prewarm' among them; DynamoDB takes at "
        "most 50 a table"
    ]


def _cron_of(length: int) -> str:
    """A valid cron expression of ``length`` characters (a minutes field of repeats)."""
    head, tail = "cron(", " 6 ? * * *)"
    body = length - len(head) - len(tail)
    minutes = ",".join(["0"] * ((body + 1) // 2))
    if len(minutes) < body:  # an even body: one value of two digits
        minutes = "10," + ",".join(["0"] * ((body + 1) // 2 - 1))
    return head + minutes + tail


def test_a_schedule_of_application_auto_scalings_longest_is_taken() -> None:
    assert parse(_cron_of(1_600), "x").text == _cron_of(1_600)
    with pytest.raises(ScheduleError, match="schedule is 1,601 characters; Application Auto"):
        parse(_cron_of(1_601), "x")
