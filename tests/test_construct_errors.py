"""Mistakes a new user makes with the constructs: each is refused at once with a message
naming the construct, the field, the value received and what is allowed."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import (
    Capacity,
    CapacityConfigError,
    CapacityRequests,
    ProvisionedTable,
    TableCapacity,
    ThrottleAwareScaler,
)

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
