"""What moto never answers: control-plane errors, through botocore's Stubber. And the
scaler's configuration, validated with messages that say what is wrong."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.aws.actuator import apply, update_table_request
from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.decreases import DecreaseLedger
from ddb_capacity_runtime.core.memory import Memory
from ddb_capacity_runtime.core.plan import SCALABLE_TARGET, UPDATE_TABLE, Change, Via
from ddb_capacity_runtime.core.policy import DECREASE, INCREASE
from ddb_capacity_runtime.core.settings import SETTINGS, ConfigError, OverrideError, ScalerConfig
from ddb_capacity_runtime.core.table_limits import Limits
from ddb_capacity_runtime.core.tables import Dimension, ManagedTable, ScalableTarget
from ddb_capacity_runtime.core.tags import IgnoredTag, parse_tags
from ddb_capacity_tools.local_aws import create_store_table
from tests.support.scaler_errors import UNITS_REASON

ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/orders"
LIMITS = Limits(5, 1000, 0.7)


def client(service: str) -> Any:
    return boto3.client(  # type: ignore[call-overload]
        service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def dim(
    index: str | None, dimension: str, provisioned: int, target: ScalableTarget | None = None
) -> Dimension:
    return Dimension(
        "orders", index, dimension, provisioned, DecreaseLedger(), None, LIMITS, target
    )


def orders() -> ManagedTable:
    table = ManagedTable("orders", ARN, {})
    table.dimensions = [
        dim(None, "read", 100),
        dim(None, "write", 100),
        dim("byUser", "read", 50),
        dim("byUser", "write", 50),
    ]
    return table


def change(d: Dimension, new: int, via: Via = UPDATE_TABLE) -> Change:
    return Change(d, d.provisioned, new, "test", INCREASE if new > d.provisioned else DECREASE, via)


def current(table: ManagedTable) -> dict[tuple[str | None, str], int]:
    return {(d.index, d.dimension): d.provisioned for d in table.dimensions}


def described(table: ManagedTable, **moved: int) -> dict[str, object]:
    """A DescribeTable answer for ``table`` as planned, with ``moved`` values changed since
    (``read=400`` for the table's read, ``byUser_write=7`` for a GSI's)."""
    now = current(table)
    for key, value in moved.items():
        index, _, dimension = key.rpartition("_")
        now[(index or None, dimension)] = value

    def throughput(index: str | None) -> dict[str, int]:
        return {
            "ReadCapacityUnits": now[(index, "read")],
            "WriteCapacityUnits": now[(index, "write")],
        }

    return {
        "Table": {
            "TableName": table.name,
            "TableStatus": "ACTIVE",
            "TableArn": table.arn,
            "ProvisionedThroughput": throughput(None),
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "byUser",
                    "IndexStatus": "ACTIVE",
                    "ProvisionedThroughput": throughput("byUser"),
                }
            ],
        }
    }


def test_one_update_table_carries_table_and_gsi_changes() -> None:
    table = orders()
    request = update_table_request(
        table.name,
        [change(table.dimensions[1], 200), change(table.dimensions[2], 10)],
        current(table),
    )
    assert request == {
        "TableName": "orders",
        "ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": 200},
        "GlobalSecondaryIndexUpdates": [
            {
                "Update": {
                    "IndexName": "byUser",
                    "ProvisionedThroughput": {"ReadCapacityUnits": 10, "WriteCapacityUnits": 50},
                }
            }
        ],
    }


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ResourceInUseException", "retry-next-tick"),
        ("ValidationException", "invalid"),
        ("AccessDeniedException", "access-denied"),
        ("InternalServerError", "failed"),
    ],
)
def test_update_table_errors_stay_with_their_table(code: str, status: str) -> None:
    ddb, table = client("dynamodb"), orders()
    changes = [change(table.dimensions[1], 200)]
    with Stubber(ddb) as stubber:
        stubber.add_response("describe_table", described(table), {"TableName": "orders"})
        stubber.add_client_error(
            "update_table",
            service_error_code=code,
            service_message="no",
            expected_params=update_table_request(table.name, changes, current(table)),
        )
        (outcome,) = apply(ddb, client("application-autoscaling"), table, changes, dry_run=False)
        stubber.assert_no_pending_responses()
    assert (outcome.status, outcome.error) == (status, f"{code}: no")


def test_a_refused_decrease_does_not_hold_back_the_increase() -> None:
    # GIVEN a write increase and a GSI decrease in one UpdateTable, refused for the quota
    ddb, table = client("dynamodb"), orders()
    up, down = change(table.dimensions[1], 300), change(table.dimensions[2], 10)
    with Stubber(ddb) as stubber:
        stubber.add_response("describe_table", described(table), {"TableName": "orders"})
        stubber.add_client_error(
            "update_table",
            service_error_code="LimitExceededException",
            service_message="Subscriber limit exceeded",
            expected_params=update_table_request(table.name, [up, down], current(table)),
        )
        stubber.add_response(
            "update_table", {}, update_table_request(table.name, [up], current(table))
        )
        outcomes = apply(ddb, client("application-autoscaling"), table, [up, down], dry_run=False)
        stubber.assert_no_pending_responses()
    # THEN the increase is retried alone and applied; the decrease is recorded as refused
    by_change = {o.change.new: o.status for o in outcomes}
    assert by_change == {300: "applied", 10: "quota-exceeded"}


def test_access_denied_on_a_scalable_target_leaves_the_memory_as_it_was(aws_client: Any) -> None:
    # GIVEN a raise of a target's minimum from 10 to 200, a state store, and an
    # Application Auto Scaling that refuses it
    store = HoldStore(aws_client("dynamodb"), f"state-{uuid.uuid4().hex[:8]}")
    create_store_table(store.dynamodb, store.name)
    aas = client("application-autoscaling")
    target = ScalableTarget("table/orders", "dynamodb:table:ReadCapacityUnits", 10, 1000, True)
    read = replace(dim(None, "read", 100, target), memory=Memory(10))
    table = ManagedTable("orders", ARN, {}, [read])
    raise_min = Change(read, 10, 200, "test", INCREASE, SCALABLE_TARGET)
    with Stubber(aas) as s_aas:
        s_aas.add_response(  # read again under the lease: still the minimum it was
            "describe_scalable_targets",
            {
                "ScalableTargets": [
                    {
                        "ServiceNamespace": "dynamodb",
                        "ResourceId": "table/orders",
                        "ScalableDimension": "dynamodb:table:ReadCapacityUnits",
                        "MinCapacity": 10,
                        "MaxCapacity": 1000,
                        "RoleARN": "arn:aws:iam::123456789012:role/x",
                        "CreationTime": datetime.now(UTC),
                    }
                ]
            },
            {
                "ServiceNamespace": "dynamodb",
                "ResourceIds": ["table/orders"],
                "ScalableDimension": "dynamodb:table:ReadCapacityUnits",
            },
        )
        s_aas.add_client_error(
            "register_scalable_target",
            service_error_code="AccessDeniedException",
            service_message="nope",
        )
        (outcome,) = apply(client("dynamodb"), aas, table, [raise_min], dry_run=False, store=store)
        s_aas.assert_no_pending_responses()
    # THEN it is reported, and the store remembers nothing (no intent left behind)
    assert outcome.status == "access-denied"
    assert not any(s.holding for s in store.table("orders"))


def test_a_minimum_is_never_moved_without_a_state_store() -> None:
    target = ScalableTarget("table/orders", "dynamodb:table:ReadCapacityUnits", 10, 1000, True)
    read = replace(dim(None, "read", 100, target), memory=Memory(10))
    table = ManagedTable("orders", ARN, {}, [read])
    raise_min = Change(read, 10, 200, "test", INCREASE, SCALABLE_TARGET)
    aas = client("application-autoscaling")
    with Stubber(aas):  # nothing may be called
        (outcome,) = apply(client("dynamodb"), aas, table, [raise_min], dry_run=False)
    assert (outcome.status, outcome.error) == (
        "failed",
        "no state store: a minimum is never moved unremembered",
    )


def test_update_table_sends_the_other_dimension_as_it_is_now_not_as_it_was_read() -> None:
    # GIVEN a write raise planned while read was 100, and read raised to 400 by someone since
    ddb, table = client("dynamodb"), orders()
    up = change(table.dimensions[1], 300)
    with Stubber(ddb) as stubber:
        stubber.add_response("describe_table", described(table, read=400), {"TableName": "orders"})
        stubber.add_response(
            "update_table",
            {},
            {
                "TableName": "orders",
                "ProvisionedThroughput": {"ReadCapacityUnits": 400, "WriteCapacityUnits": 300},
            },
        )
        (outcome,) = apply(ddb, client("application-autoscaling"), table, [up], dry_run=False)
        stubber.assert_no_pending_responses()
    # THEN the write went up and read was sent at 400, never back to 100
    assert outcome.status == "applied"


def test_a_change_whose_dimension_moved_since_it_was_read_is_left_for_the_next_tick() -> None:
    ddb, table = client("dynamodb"), orders()
    down = change(table.dimensions[0], 10)
    with Stubber(ddb) as stubber:
        stubber.add_response("describe_table", described(table, read=400), {"TableName": "orders"})
        (outcome,) = apply(ddb, client("application-autoscaling"), table, [down], dry_run=False)
        stubber.assert_no_pending_responses()  # no UpdateTable was sent
    assert outcome.status == "retry-next-tick"
    assert outcome.error == "capacity moved from 100 to 400 since it was read"


def test_every_decrease_is_checked_against_the_ledger_as_dynamodb_reports_it_now() -> None:
    # GIVEN a planned decrease, and a counter DynamoDB now reports as spent for the day
    ddb, table = client("dynamodb"), orders()
    down = change(table.dimensions[0], 10)
    answer = described(table)
    answer["Table"]["ProvisionedThroughput"]["NumberOfDecreasesToday"] = 27  # type: ignore[index]
    answer["Table"]["ProvisionedThroughput"]["LastDecreaseDateTime"] = datetime.now(UTC)  # type: ignore[index]
    with Stubber(ddb) as stubber:
        stubber.add_response("describe_table", answer, {"TableName": "orders"})
        (outcome,) = apply(ddb, client("application-autoscaling"), table, [down], dry_run=False)
        stubber.assert_no_pending_responses()  # nothing sent
    assert outcome.status == "quota-exceeded"


def test_control_plane_calls_are_retried_and_bounded_inside_a_lease() -> None:
    from ddb_capacity_runtime.aws.clients import call_bound, make_clients
    from ddb_capacity_runtime.aws.store import LEASE

    clients = make_clients(
        region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )

    def retries_of(client: Any) -> dict[str, Any]:
        """The client's retry settings (botocore's stubs leave them out of its Config)."""
        settings: dict[str, Any] = client.meta.config.retries
        return settings

    # the calls made under a state-store lease: retried, and bounded well inside it
    for client in (clients.dynamodb, clients.autoscaling):
        retries = retries_of(client)
        assert retries["mode"] == "standard" and retries["total_max_attempts"] == 3
        assert call_bound(client) == 3 * (2 + 8) + 1 + 2 <= LEASE.total_seconds() * 0.6
    # the reads of a tick: adaptive retries (throttled calls back off)
    retries = retries_of(clients.cloudwatch)
    assert retries["mode"] == "adaptive" and retries["total_max_attempts"] == 11


# ------------------------------------------------------------------ configuration


#: The least a scaler needs: one table to manage.
ONE_TABLE = {"SCALER_TABLES": "t"}


def test_defaults() -> None:
    config = ScalerConfig.from_env(ONE_TABLE)
    # no tag discovery unless a tag key is set: the construct's default too
    assert config.tag_key is None and config.tag_value == "true"
    # one tick default for the Lambda, the construct and the simulator
    assert (config.window_minutes, config.metric_lag_minutes, config.tick_minutes) == (5, 2, 2)
    # the autopilot by default: 4 low minutes (2 ticks); the reactive mode's 16 (8 ticks)
    assert config.policy.autopilot and config.policy.scale_down_minutes == 4
    assert config.dry_run is False
    five = ScalerConfig.from_env({**ONE_TABLE, "SCALER_TICK_MINUTES": "5"})
    assert five.policy.scale_down_minutes == 5
    reactive = ScalerConfig.from_env({**ONE_TABLE, "SCALER_MODE": "reactive"}).policy
    assert not reactive.autopilot and reactive.scale_down_minutes == 16


def test_one_tick_default_everywhere() -> None:
    from constructs_pkg.scaler._scaler_props import DEFAULT_TICK
    from ddb_capacity_tools.simulator.policies import DEFAULT_TICK_MINUTES

    assert ScalerConfig.from_env(ONE_TABLE).tick_minutes == ScalerConfig().tick_minutes == 2
    assert DEFAULT_TICK.to_minutes() == DEFAULT_TICK_MINUTES == 2


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SCALER_TARGET_PERCENT": "95"}, "SCALER_TARGET_PERCENT must be from 20 to 90; got '95'"),
        (
            {"SCALER_WINDOW_MINUTES": "five"},
            "SCALER_WINDOW_MINUTES must be a whole number from 1 to 60; got 'five'",
        ),
        ({"SCALER_DRY_RUN": "maybe"}, "SCALER_DRY_RUN must be true or false; got 'maybe'"),
        (
            {},
            "no tables to manage: set SCALER_TABLES (comma-separated names) or SCALER_TAG_KEY "
            "(tag discovery)",
        ),
        (
            {"SCALER_OVERRIDES": "{not json"},
            "SCALER_OVERRIDES must be a JSON object of table name to {min, max, target}; got invalid "
            "JSON (Expecting property name enclosed in double quotes)",
        ),
        (
            {"SCALER_DEFAULT_MIN": "50", "SCALER_DEFAULT_MAX": "10"},
            "SCALER_DEFAULT_MIN (50) must not be above SCALER_DEFAULT_MAX (10)",
        ),
        (
            {"SCALER_BUFFER_PERCENT": "40", "SCALER_TARGET_PERCENT": "30"},
            "SCALER_BUFFER_PERCENT (40) must be below SCALER_TARGET_PERCENT (30)",
        ),
    ],
)
def test_bad_configuration_says_what_is_wrong(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ScalerConfig.from_env({**ONE_TABLE, **env} if env else env)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("name", "raw", "allowed"),
    [
        ("SCALER_RESERVED_READ_UNITS", "+100", "from 0 to 1e+07"),
        ("SCALER_RESERVED_WRITE_UNITS", "100_000", "from 0 to 1e+07"),
        ("SCALER_TICK_MINUTES", "\uff15", "from 1 to 60"),  # a full-width 5
        ("SCALER_DEFAULT_MAX", " 100", "from 1 to 1e+06"),
        ("SCALER_HYSTERESIS_MINUTES", "-0", "from 0 to 1440"),
    ],
)
def test_a_whole_number_setting_takes_ascii_digits_alone(name: str, raw: str, allowed: str) -> None:
    # what Python's int() also reads (a sign, underscores, other scripts' digits, spaces)
    # is not a whole number as the construct writes one
    with pytest.raises(ConfigError) as caught:
        ScalerConfig.from_env({**ONE_TABLE, name: raw})
    assert str(caught.value) == f"{name} must be a whole number {allowed}; got {raw!r}"
    # the same number in ASCII digits is read
    plain = str(int(raw.replace("_", "")))
    key = next(s.key for s in SETTINGS if s.name == name)
    assert ScalerConfig.from_env({**ONE_TABLE, name: plain}).to_env([key]) == {name: plain}


def test_limits_come_from_configuration_then_tags_then_defaults() -> None:
    config = ScalerConfig.from_env(
        {**ONE_TABLE, "SCALER_OVERRIDES": '{"orders": {"max": 900, "write": {"min": 20}}}'}
    )
    tags = {"ddb-capacity:min": "7", "ddb-capacity:read-max": "400", "ddb-capacity:target": "50"}
    limits = config.limits("orders", parse_tags(tags).limits)
    assert limits["read"] == Limits(7, 900, 0.5)
    assert limits["write"] == Limits(20, 900, 0.5)
    assert config.limits("other", {}) == {
        "read": Limits(5, 1000, 0.7),
        "write": Limits(5, 1000, 0.7),
    }


@pytest.mark.parametrize(
    ("tags", "reason"),
    [
        ({"ddb-capacity:target": "95"}, "expected a percentage from 20 to 90"),
        ({"ddb-capacity:target": "nan"}, "expected a percentage from 20 to 90"),
        (
            {"ddb-capacity:write-min": "2.5"},
            "expected a whole number of capacity units from 1 to 40000",
        ),
        ({"ddb-capacity:max": "-5"}, "expected a whole number of capacity units from 1 to 40000"),
        (
            {"ddb-capacity:max": "99999999"},
            "expected a whole number of capacity units from 1 to 40000",
        ),
        ({"ddb-capacity:mn": "5"}, "not a tag this library reads"),
        (
            {"ddb-capacity:base-min:table:read": "-5"},
            "expected <base>:<set>, each a whole number of units from 1 to 40000",
        ),
        (
            {"ddb-capacity:base-min:table:read": "10:abc"},
            "expected <base>:<set>, each a whole number of units from 1 to 40000",
        ),
    ],
)
def test_malformed_tags_are_ignored_with_their_reason(tags: dict[str, str], reason: str) -> None:
    parsed = parse_tags(tags)
    assert parsed.limits == {} and parsed.base_mins == {}
    ((key, value),) = tags.items()
    assert parsed.ignored == [IgnoredTag(key, value, reason)]
    # and the limits are the defaults, as if the tag were not there
    assert ScalerConfig.from_env(ONE_TABLE).limits("t", parsed.limits)["read"] == Limits(
        5, 1000, 0.7
    )


BASE_REASON = "expected <base>:<set>, each a whole number of units from 1 to 40000"


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("ddb-capacity:write-min", "\u0661\u0662", UNITS_REASON),  # Arabic-Indic 12
        ("ddb-capacity:max", "\u00b2", UNITS_REASON),  # superscript 2
        ("ddb-capacity:read-max", "\u0968\u0966\u0966", UNITS_REASON),  # Devanagari 200
        ("ddb-capacity:min", "\uff15", UNITS_REASON),  # fullwidth 5
        ("ddb-capacity:max", "\u20035\u2003", UNITS_REASON),  # 5 between em spaces
        ("ddb-capacity:target", "\u0667\u0660", "expected a percentage from 20 to 90"),
        ("ddb-capacity:target", "7_0", "expected a percentage from 20 to 90"),
        ("ddb-capacity:target", "inf", "expected a percentage from 20 to 90"),
        ("ddb-capacity:base-min:table:read", "\u0661\u0660:20", BASE_REASON),
        ("ddb-capacity:base-min:table:read", "10:\u00b2", BASE_REASON),
    ],
)
def test_only_ascii_digits_are_numbers_in_tags(key: str, value: str, reason: str) -> None:
    # str.isdigit, int() and float() take other scripts' digits; a tag is read in ASCII only
    parsed = parse_tags({key: value})
    assert parsed.limits == {} and parsed.base_mins == {}
    assert parsed.ignored == [IgnoredTag(key, value, reason)]


@pytest.mark.parametrize("start", ["\u00b2", "\u0661\u0665"])  # superscript 2; Arabic-Indic 15
def test_a_plan_tag_in_other_digits_is_ignored_not_raised(start: str) -> None:
    key = "ddb-capacity:forecast:table:write"
    parsed = parse_tags({key: f"{start}:70:0:0:50"})
    assert parsed.plans == {} and [i.key for i in parsed.ignored] == [key]


@pytest.mark.parametrize(
    ("key", "value", "number"),
    [
        ("ddb-capacity:max", " 150 ", 150.0),
        ("ddb-capacity:target", "62.5", 62.5),
        ("ddb-capacity:target", "70", 70.0),
    ],
)
def test_ascii_numbers_still_read(key: str, value: str, number: float) -> None:
    parsed = parse_tags({key: value})
    assert parsed.ignored == [] and parsed.limits == {key.split(":")[1]: number}


def test_an_ignored_tag_shows_at_most_200_characters_of_its_value() -> None:
    (ignored,) = parse_tags({"ddb-capacity:max": "9" * 300}).ignored
    assert ignored.value == "9" * 200


@pytest.mark.parametrize(
    ("overrides", "tags", "message"),
    [
        (
            '{"t": {"target": 95}}',
            {},
            "table t read: override target must be a percentage from 20 to 90; got 95",
        ),
        (
            '{"t": {"write": {"min": 2.5}}}',
            {},
            "table t write: override write.min must be a whole number of capacity units from "
            "1 to 40000 (the table quota, CAPACITY_TABLE_QUOTA); got 2.5",
        ),
        (  # JSON's true, which float() reads as 1
            '{"t": {"min": true, "max": 10}}',
            {},
            "table t read: override min must be a whole number of capacity units from "
            "1 to 40000 (the table quota, CAPACITY_TABLE_QUOTA); got True",
        ),
        (
            "{}",
            {"ddb-capacity:min": "500", "ddb-capacity:max": "50"},
            "table t read: min (500) must not be above max (50)",
        ),
    ],
)
def test_bad_overrides_name_the_table_and_the_setting(
    overrides: str, tags: dict[str, str], message: str
) -> None:
    with pytest.raises(OverrideError) as caught:
        ScalerConfig.from_env({**ONE_TABLE, "SCALER_OVERRIDES": overrides}).limits(
            "t", parse_tags(tags).limits
        )
    assert str(caught.value) == message


# ------------------------------------------------------------------ states moto never shows


def _described(
    status: str, billing: str = "PROVISIONED", gsi_status: str = "ACTIVE"
) -> dict[str, Any]:
    pt = {"ReadCapacityUnits": 10, "WriteCapacityUnits": 10}  # DynamoDB omits a zero count
    return {
        "Table": {
            "TableName": "orders",
            "TableArn": ARN,
            "TableStatus": status,
            "BillingModeSummary": {"BillingMode": billing},
            "ProvisionedThroughput": pt,
            "GlobalSecondaryIndexes": [
                {"IndexName": "byUser", "IndexStatus": gsi_status, "ProvisionedThroughput": pt}
            ],
        }
    }


@pytest.mark.parametrize(
    ("described", "reason"),
    [
        (_described("UPDATING"), "status UPDATING"),
        (_described("ACTIVE", billing="PAY_PER_REQUEST"), "on-demand billing"),
    ],
)
def test_tables_not_active_or_on_demand_are_skipped(described: dict[str, Any], reason: str) -> None:
    from datetime import UTC, datetime

    from ddb_capacity_runtime.aws.discovery import NotManaged, describe_table

    ddb = client("dynamodb")
    with Stubber(ddb) as stubber:
        stubber.add_response("describe_table", described, {"TableName": "orders"})
        with pytest.raises(NotManaged, match=reason):
            describe_table(
                ddb, "orders", {}, ScalerConfig.from_env(ONE_TABLE), {}, datetime.now(UTC)
            )
        stubber.assert_no_pending_responses()


def test_a_backfilling_gsi_is_left_out_of_the_tick() -> None:
    from datetime import UTC, datetime

    from ddb_capacity_runtime.aws.discovery import describe_table

    ddb = client("dynamodb")
    with Stubber(ddb) as stubber:
        stubber.add_response(
            "describe_table", _described("ACTIVE", gsi_status="CREATING"), {"TableName": "orders"}
        )
        table = describe_table(
            ddb, "orders", {}, ScalerConfig.from_env(ONE_TABLE), {}, datetime.now(UTC)
        )
    assert [(d.index, d.dimension) for d in table.dimensions] == [(None, "read"), (None, "write")]


# ------------------------------------------------------------------ tags against the load


@pytest.mark.parametrize(
    ("tags", "overrides", "need", "limits", "refused"),
    [
        # a max below the load is refused; one at or above it is obeyed
        ({"write-max": "10"}, "{}", 715, Limits(5, 1000, 0.7), ["write-max"]),
        ({"write-max": "715"}, "{}", 715, Limits(5, 715, 0.7), []),
        # the generic max, refused for the dimension it would cut
        ({"max": "10"}, "{}", 715, Limits(5, 1000, 0.7), ["max"]),
        # refused in turn: without write-max the generic max would cut it too
        ({"write-max": "10", "max": "20"}, "{}", 715, Limits(5, 1000, 0.7), ["write-max", "max"]),
        ({"write-max": "10", "max": "900"}, "{}", 715, Limits(5, 900, 0.7), ["write-max"]),
        # an override wins over the tag: the tag lowers nothing, so nothing is refused
        ({"write-max": "10"}, '{"t": {"max": 10}}', 715, Limits(5, 10, 0.7), []),
        # a tag that raises a limit is never refused
        ({"min": "100", "max": "2000"}, "{}", 715, Limits(100, 2000, 0.7), []),
        # a min lowered below the load, as a max
        ({"write-min": "2"}, "{}", 715, Limits(5, 1000, 0.7), ["write-min"]),
        ({"write-min": "2"}, "{}", 1, Limits(2, 1000, 0.7), []),
        # the load unknown: no tag may lower a limit
        ({"write-max": "900", "min": "1"}, "{}", None, Limits(5, 1000, 0.7), ["write-max", "min"]),
        ({"write-max": "2000", "min": "50"}, "{}", None, Limits(50, 2000, 0.7), []),
    ],
)
def test_min_and_max_tags_that_would_lower_a_limit_below_the_load_are_refused(
    tags: dict[str, str],
    overrides: str,
    need: int | None,
    limits: Limits,
    refused: list[str],
) -> None:
    config = ScalerConfig.from_env({**ONE_TABLE, "SCALER_OVERRIDES": overrides})
    parsed = parse_tags({f"ddb-capacity:{k}": v for k, v in tags.items()}).limits
    kept, out = config.refuse_lowering_tags("t", parsed, "write", need)
    assert kept == limits
    assert [r.key for r in out] == [f"ddb-capacity:{k}" for k in refused]


def test_a_refused_tag_names_its_value_and_limit() -> None:
    from ddb_capacity_runtime.core.table_limits import RefusedTag

    parsed = parse_tags({"ddb-capacity:read-max": "30", "ddb-capacity:read-min": "3"}).limits
    _, out = ScalerConfig.from_env(ONE_TABLE).refuse_lowering_tags("t", parsed, "read", 50)
    assert out == [
        RefusedTag("ddb-capacity:read-max", 30, "max"),
        RefusedTag("ddb-capacity:read-min", 3, "min"),
    ]
    # the other dimension's limits are not the read tags' business
    _, other = ScalerConfig.from_env(ONE_TABLE).refuse_lowering_tags("t", parsed, "write", 50)
    assert other == []
