"""Mistakes a new user makes with the constructs: each is refused at once with a message
naming the construct, the field, the value received and what is allowed."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk.assertions import Annotations, Match

from constructs_pkg import (
    Capacity,
    CapacityConfigError,
    CapacityRequests,
    GlobalTableCapacity,
    HighWaterMark,
    ProvisionedTable,
    ScheduleEntry,
    ScheduleError,
    TableCapacity,
    ThrottleAwareScaler,
)
from ddb_capacity_runtime.schedule.entries import TableSchedule

PK = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
SMALL = Capacity(min_capacity=1, max_capacity=10)


def provisioned(stack: cdk.Stack, id: str = "Orders") -> ProvisionedTable:
    return ProvisionedTable(stack, id, partition_key=PK, read=SMALL, write=SMALL)


def plain_table_with_gsi(stack: cdk.Stack) -> dynamodb.Table:
    table = dynamodb.Table(
        stack, "Plain", partition_key=PK, billing_mode=dynamodb.BillingMode.PROVISIONED
    )
    table.add_global_secondary_index(index_name="byCustomer", partition_key=PK)
    return table


def adopt_with_indexes(stack: cdk.Stack, indexes: dict[str, tuple[Capacity, Capacity]]) -> None:
    table = plain_table_with_gsi(stack)
    TableCapacity(stack, "Capacity", table=table, read=SMALL, write=SMALL, indexes=indexes)


# ---------------------------------------------------------------------- TableCapacity


def test_a_typo_in_the_keys_of_indexes_names_the_key_and_the_allowed_ones(
    stack: cdk.Stack,
) -> None:
    with pytest.raises(CapacityConfigError) as caught:
        adopt_with_indexes(stack, {"byCustomr": (SMALL, SMALL)})
    assert str(caught.value) == (
        "TableCapacity Test/Capacity: indexes has the key 'byCustomr', which is not a global "
        "secondary index of the table (did you mean 'byCustomer'?); the allowed keys are the "
        "table's GSIs ['byCustomer'], each one needed"
    )


def test_a_key_of_indexes_is_shown_cut_to_200_characters(stack: cdk.Stack) -> None:
    with pytest.raises(CapacityConfigError) as caught:
        adopt_with_indexes(stack, {"x" * 5000: (SMALL, SMALL)})
    assert f"'{'x' * 199}... (5,002 characters)" in str(caught.value)
    assert len(str(caught.value)) < 500


def test_adopting_a_table_twice_names_both_constructs(stack: cdk.Stack) -> None:
    table = plain_table_with_gsi(stack)
    both = {"byCustomer": (SMALL, SMALL)}
    TableCapacity(stack, "First", table=table, read=SMALL, write=SMALL, indexes=both)
    with pytest.raises(CapacityConfigError) as caught:
        TableCapacity(stack, "Second", table=table, read=SMALL, write=SMALL, indexes=both)
    assert str(caught.value) == (
        "TableCapacity Test/Second: table Test/Plain is managed already by TableCapacity "
        "Test/First; a table takes one TableCapacity (a ProvisionedTable is one): give all "
        "of its capacity there, and remove this one"
    )


def test_a_global_table_takes_one_global_table_capacity(stack: cdk.Stack) -> None:
    # GIVEN a provisioned TableV2 with a GlobalTableCapacity
    scaled = dynamodb.Capacity.autoscaled(max_capacity=100)
    table = dynamodb.TableV2(
        stack,
        "Global",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        billing=dynamodb.Billing.provisioned(read_capacity=scaled, write_capacity=scaled),
    )
    GlobalTableCapacity(stack, "First", table=table, high_water_mark=HighWaterMark(read=500))
    # WHEN a second one is given the same table (its warm throughput would replace the
    # first's, and both would schedule the same targets) THEN it is refused, naming both
    with pytest.raises(CapacityConfigError) as caught:
        GlobalTableCapacity(stack, "Second", table=table, high_water_mark=HighWaterMark(read=900))
    assert str(caught.value) == (
        "GlobalTableCapacity Test/Second: global table Test/Global is managed already by "
        "GlobalTableCapacity Test/First; a table takes one GlobalTableCapacity: give all of "
        "its high-water marks and schedules there, and remove this one"
    )


def test_adopting_the_table_of_a_provisioned_table_names_both_constructs(
    stack: cdk.Stack,
) -> None:
    orders = provisioned(stack)
    with pytest.raises(CapacityConfigError, match=r"^TableCapacity Test/Again: table ") as caught:
        TableCapacity(stack, "Again", table=orders.table, read=SMALL, write=SMALL)
    assert "is managed already by ProvisionedTable Test/Orders;" in str(caught.value)


def test_a_table_imported_by_name_twice_in_one_app_is_refused() -> None:
    # GIVEN two stacks of one app in one account and Region, each importing "orders"
    app = cdk.App()
    env = cdk.Environment(account="123456789012", region="eu-west-1")
    first, second = cdk.Stack(app, "First", env=env), cdk.Stack(app, "Second", env=env)
    TableCapacity(
        first,
        "Capacity",
        table=dynamodb.Table.from_table_name(first, "Orders", "orders"),
        read=SMALL,
        write=SMALL,
    )
    with pytest.raises(CapacityConfigError) as caught:
        TableCapacity(
            second,
            "Capacity",
            table=dynamodb.Table.from_table_name(second, "Orders", "orders"),
            read=SMALL,
            write=SMALL,
        )
    assert str(caught.value) == (
        "TableCapacity Second/Capacity: table Second/Orders ('orders') is managed already by "
        "TableCapacity First/Capacity; a table takes one TableCapacity (a ProvisionedTable is "
        "one): give all of its capacity there, and remove this one"
    )


def test_one_name_imported_by_env_agnostic_stacks_may_be_two_tables() -> None:
    # env-agnostic stacks may be deployed to different accounts: only one stack is checked
    app = cdk.App()
    for id in ("First", "Second"):
        stack = cdk.Stack(app, id)
        TableCapacity(
            stack,
            "Capacity",
            table=dynamodb.Table.from_table_name(stack, "Orders", "orders"),
            read=SMALL,
            write=SMALL,
        )


# ---------------------------------------------------------------------- CapacityRequests


def requests_on(stack: cdk.Stack, *tables: dynamodb.ITable | TableCapacity) -> CapacityRequests:
    return CapacityRequests(stack, "Requests", tables=list(tables), restore_every=None)


def test_requests_on_one_table_alone_asks_for_a_list(stack: cdk.Stack) -> None:
    orders = provisioned(stack)
    with pytest.raises(CapacityConfigError) as caught:
        CapacityRequests(stack, "Requests", tables=orders)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "CapacityRequests Test/Requests: tables must be a list (sequence) of tables, such as "
        "tables=[orders]; got one table alone, Test/Orders: write tables=[...] around it"
    )


def test_grant_request_of_a_string_asks_for_a_grantable(stack: cdk.Stack) -> None:
    requests = requests_on(stack, provisioned(stack))
    with pytest.raises(CapacityConfigError) as caught:
        requests.grant_request("a string")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "CapacityRequests Test/Requests: grant_request needs the grantee (an iam.IGrantable): "
        "a role, a user, a group or something with a role (a function, a task definition); "
        "got 'a string'"
    )


def test_allow_index_of_an_unknown_index_names_it_and_the_known_ones(stack: cdk.Stack) -> None:
    plain = plain_table_with_gsi(stack)
    requests = requests_on(stack, plain)
    with pytest.raises(CapacityConfigError) as caught:
        requests.allow_index(plain, "byCustomr")
    assert str(caught.value) == (
        "CapacityRequests Test/Requests: allow_index: index_name 'byCustomr' is not a global "
        "secondary index of table Test/Plain; its indexes are ['byCustomer'] (add an index "
        "to the table before allowing it)"
    )
    requests.allow_index(plain, "byCustomer")  # the real one is allowed
    assert requests.scopes()[0]["indexes"] == ["byCustomer"]


def test_allow_index_on_a_provisioned_table_knows_its_indexes(stack: cdk.Stack) -> None:
    orders = provisioned(stack)
    requests = requests_on(stack, orders)
    with pytest.raises(CapacityConfigError, match=r"table Test/Orders; it has none \("):
        requests.allow_index(orders, "byDay")


def test_allow_index_of_a_table_owned_elsewhere_is_taken_on_trust(stack: cdk.Stack) -> None:
    # its indexes are not known at synth
    imported = dynamodb.Table.from_table_name(stack, "Imported", "orders")
    requests = requests_on(stack, imported)
    requests.allow_index(imported, "byDay")
    assert requests.scopes() == [{"table": "orders", "indexes": ["byDay"]}]


# ---------------------------------------------------------------------- ThrottleAwareScaler


def test_a_scaler_of_one_table_alone_asks_for_a_list(stack: cdk.Stack) -> None:
    orders = provisioned(stack)
    with pytest.raises(CapacityConfigError) as caught:
        ThrottleAwareScaler(stack, "Scaler", tables=orders)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "ThrottleAwareScaler Test/Scaler: tables must be a list (sequence) of tables, such as "
        "tables=[orders]; got one table alone, Test/Orders: write tables=[...] around it"
    )


@pytest.mark.parametrize("tables", ["orders", 5])
def test_a_scaler_of_something_else_asks_for_a_list(stack: cdk.Stack, tables: object) -> None:
    with pytest.raises(CapacityConfigError) as caught:
        ThrottleAwareScaler(stack, "Scaler", tables=tables)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "ThrottleAwareScaler Test/Scaler: tables must be a list (sequence) of tables "
        "(ProvisionedTable, TableCapacity or aws_dynamodb.ITable), such as tables=[orders]; "
        f"got {tables!r}"
    )


def test_a_scaler_takes_any_iterable_of_tables(stack: cdk.Stack) -> None:
    by_name = {"orders": provisioned(stack)}
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=by_name.values())  # type: ignore[arg-type]
    assert scaler.tables == (by_name["orders"].table,)


def _scaler_of(stack: cdk.Stack, table: dynamodb.ITable) -> None:
    ThrottleAwareScaler(stack, "Made", tables=[table])


def _scaler_adding(stack: cdk.Stack, table: dynamodb.ITable) -> None:
    ThrottleAwareScaler(stack, "Made").add_table(table)


def _requests_on(stack: cdk.Stack, table: dynamodb.ITable) -> None:
    CapacityRequests(stack, "Made", tables=[table])


@pytest.mark.parametrize(
    ("construct", "give"),
    [
        ("ThrottleAwareScaler", _scaler_of),
        ("ThrottleAwareScaler", _scaler_adding),
        ("CapacityRequests", _requests_on),
    ],
    ids=["scaler-tables", "scaler-add_table", "requests-tables"],
)
def test_an_on_demand_table_is_refused_where_its_billing_is_known(
    construct: str, give: Callable[[cdk.Stack, dynamodb.ITable], None]
) -> None:
    # GIVEN a table of this app billed PAY_PER_REQUEST
    stack = cdk.Stack(cdk.App(), "Test")
    table = dynamodb.Table(
        stack, "OnDemand", partition_key=PK, billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST
    )
    # WHEN it is given to the scaler or to capacity requests THEN it is refused at once
    with pytest.raises(CapacityConfigError) as caught:
        give(stack, table)
    assert str(caught.value) == (
        f"{construct} Test/Made: tables: got <aws_cdk.aws_dynamodb.Table Test/OnDemand>, billed "
        "PAY_PER_REQUEST (on-demand): it has no provisioned capacity to manage; give a "
        "provisioned table (billing_mode=BillingMode.PROVISIONED, or a ProvisionedTable)"
    )
    # AND a provisioned table, or one imported by name (its billing known at run time
    # only), is taken
    other = cdk.Stack(cdk.App(), "Other")
    give(other, dynamodb.Table(other, "Provisioned", partition_key=PK))
    other = cdk.Stack(cdk.App(), "Other")
    give(other, dynamodb.Table.from_table_name(other, "Imported", "Imported"))


# ---------------------------------------------------------------------- schedules

#: How a schedule entry with no firing left is told: the clock it was judged by.
BY_THE_CLOCK = (
    r"\(now is \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d UTC by the clock of the machine running the "
    r"synth\); its scheduled action is deployed and never runs: remove the entry"
)


def schedule_on(stack: cdk.Stack, expression: str, **entry: object) -> None:
    provisioned(stack).add_schedule(
        ScheduleEntry(name="peak", schedule=expression, min_capacity=5, **entry),  # type: ignore[arg-type]
        dimension="read",
    )


def _schedule_warnings(stack: cdk.Stack) -> list[str]:
    stack.node.root.synth()  # type: ignore[attr-defined]
    return [
        str(w.entry.data)
        for w in Annotations.from_stack(stack).find_warning("*", Match.any_value())
        if "has no firing left" in str(w.entry.data)
    ]


def test_an_at_in_the_past_is_a_warning_by_the_synths_clock(stack: cdk.Stack) -> None:
    # GIVEN a one-off entry whose time has passed (an app that deployed it once)
    schedule_on(stack, "at(1999-01-01T00:00:00)")
    # THEN the app still synthesizes, with a warning that says to remove it
    (warning,) = _schedule_warnings(stack)
    assert warning.startswith(
        "ProvisionedTable Test/Orders table read schedule 'peak': schedule "
        "'at(1999-01-01T00:00:00)' has no firing left: at(1999-01-01T00:00:00) in UTC is in "
        "the past (now is "
    )
    assert re.search(BY_THE_CLOCK, warning)


def test_february_31_never_comes(stack: cdk.Stack) -> None:
    with pytest.raises(ScheduleError) as caught:
        schedule_on(stack, "cron(0 0 31 2 ? *)")
    assert str(caught.value) == (
        "ProvisionedTable Test/Orders table read schedule 'peak': schedule "
        "'cron(0 0 31 2 ? *)' never fires: no month of '2' has a day '31' (February has 29 "
        "days at most; April, June, September and November 30)"
    )


def test_a_cron_whose_years_have_passed_is_a_warning(stack: cdk.Stack) -> None:
    schedule_on(stack, "cron(0 0 1 1 ? 2020)")
    (warning,) = _schedule_warnings(stack)
    assert "'cron(0 0 1 1 ? 2020)' has no firing left: its year field holds no firing from " in (
        warning
    )
    assert re.search(BY_THE_CLOCK, warning)


def test_a_cron_whose_years_hold_no_firing_at_all_is_refused(stack: cdk.Stack) -> None:
    with pytest.raises(ScheduleError) as caught:
        schedule_on(stack, "cron(0 0 29 2 ? 2027)")  # 2027 is no leap year
    assert str(caught.value) == (
        "ProvisionedTable Test/Orders table read schedule 'peak': schedule "
        "'cron(0 0 29 2 ? 2027)' never fires: its year field holds no firing; give a time "
        "that comes, or remove the entry"
    )


def test_an_entry_that_ends_before_it_fires_is_refused(stack: cdk.Stack) -> None:
    soon = datetime.now(UTC) + timedelta(days=400)
    with pytest.raises(ScheduleError, match="never fires: its end_time .* comes before its "):
        schedule_on(
            stack,
            f"at({soon:%Y-%m-%dT%H:%M:%S})",
            end_time=soon - timedelta(days=1),
        )


@pytest.mark.parametrize(
    "expression",
    [
        f"at({datetime.now(UTC).year + 1}-01-01T00:00:00)",
        "cron(0 0 29 2 ? *)",  # leap years
        f"cron(0 0 1 1 ? {datetime.now(UTC).year + 1}-2199)",
        "rate(1 hour)",
    ],
)
def test_schedules_that_fire_are_taken(stack: cdk.Stack, expression: str) -> None:
    schedule_on(stack, expression)


def test_a_simulation_of_the_past_is_not_judged_by_the_clock() -> None:
    # the simulator replays a trace's own dates: a TableSchedule with no clock takes them
    schedule = TableSchedule("sim", {(None, "read"): (1, 10)}, 40_000)
    entry = ScheduleEntry(name="x", schedule="at(2020-01-05T14:57:00)", min_capacity=5)
    assert schedule.add_entry(entry, None, "read").expression.at == datetime(2020, 1, 5, 14, 57)


def test_a_table_whose_name_is_unknown_at_synth_is_named_by_its_path(stack: cdk.Stack) -> None:
    imported = dynamodb.Table.from_table_name(stack, "Imported", cdk.Fn.import_value("Name"))
    with pytest.raises(CapacityConfigError) as caught:
        TableCapacity(stack, "Capacity", table=imported, read=SMALL, write=SMALL)
    assert str(caught.value) == (
        "TableCapacity Test/Capacity: table must be an aws_dynamodb.Table of this app, or one "
        "imported by name (Table.from_table_name); got table Test/Imported, whose name is "
        "known at deploy time only"
    )
