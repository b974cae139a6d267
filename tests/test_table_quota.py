"""One bound for the largest capacity: the table quota the constructs are given
(``table_quota``), carried to the functions in ``CAPACITY_TABLE_QUOTA`` and read by the
scaler's settings, the state store, the broker's checks and discovery."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import assertions
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import CapacityRequests, ThrottleAwareScaler
from ddb_capacity_runtime.aws.store import limits_from_env
from ddb_capacity_runtime.core.errors import CapacityConfigError
from ddb_capacity_runtime.core.holds import CapacityRequestError
from ddb_capacity_runtime.core.names import MAX_TABLE_QUOTA, TABLE_QUOTA_ENV
from ddb_capacity_runtime.core.settings import ConfigError, OverrideError, ScalerConfig
from ddb_capacity_runtime.requests.validate import validate_request

ONE_TABLE = {"SCALER_TABLES": "t"}


def _table(stack: cdk.Stack) -> dynamodb.Table:
    return dynamodb.Table(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PROVISIONED,
    )


def _environment(stack: cdk.Stack, name: str) -> str | None:
    functions = assertions.Template.from_stack(stack).find_resources("AWS::Lambda::Function")
    values = {
        f.get("Properties", {}).get("Environment", {}).get("Variables", {}).get(name)
        for f in functions.values()
    }
    values.discard(None)
    (value,) = values  # every function that reads it has the same
    return str(value)


def test_the_constructs_write_their_table_quota_for_the_functions(stack: cdk.Stack) -> None:
    table = _table(stack)
    requests = CapacityRequests(stack, "Requests", tables=[table], table_quota=80_000)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[table], table_quota=80_000)
    requests.connect(scaler)
    assert _environment(stack, TABLE_QUOTA_ENV) == "80000"


def test_the_default_is_dynamodbs_default_quota(stack: cdk.Stack) -> None:
    ThrottleAwareScaler(stack, "Scaler", tables=[_table(stack)])
    assert _environment(stack, TABLE_QUOTA_ENV) == "40000"


@pytest.mark.parametrize("bad", [0, MAX_TABLE_QUOTA + 1, 2.5, True, "80000"])
def test_a_bad_table_quota_is_refused_naming_the_prop(stack: cdk.Stack, bad: object) -> None:
    with pytest.raises(CapacityConfigError, match=f"table_quota must be .* 1,000,000.*{bad!r}"):
        ThrottleAwareScaler(stack, "Scaler", tables=[_table(stack)], table_quota=bad)  # type: ignore[arg-type]


def test_a_connected_scaler_must_share_the_table_quota(stack: cdk.Stack) -> None:
    table = _table(stack)
    requests = CapacityRequests(stack, "Requests", tables=[table], table_quota=80_000)
    scaler = ThrottleAwareScaler(stack, "Scaler", tables=[table])
    with pytest.raises(CapacityConfigError, match="table_quota is 80,000 but .* has 40,000"):
        requests.connect(scaler)


def test_hold_bounds_may_reach_the_table_quota_and_no_further(stack: cdk.Stack) -> None:
    table = _table(stack)
    CapacityRequests(
        stack, "Big", tables=[table], table_quota=80_000, max_units=60_000, max_total_units=80_000
    )
    with pytest.raises(CapacityConfigError, match=r"max_units .* table_quota \(40000\)"):
        CapacityRequests(stack, "Small", tables=[table], max_units=60_000)


def test_the_scalers_settings_are_bounded_by_the_quota() -> None:
    config = ScalerConfig.from_env(
        {**ONE_TABLE, TABLE_QUOTA_ENV: "80000", "SCALER_DEFAULT_MAX": "60000"}
    )
    assert config.table_quota == 80_000 and config.default_max == 60_000
    assert config.limits("t", {"min": 50_000})["read"].min_capacity == 50_000
    with pytest.raises(ConfigError, match="SCALER_DEFAULT_MAX \\(60000\\) must not be above"):
        ScalerConfig.from_env({**ONE_TABLE, "SCALER_DEFAULT_MAX": "60000"})
    with pytest.raises(OverrideError, match="from 1 to 40000 \\(the table quota"):
        ScalerConfig.from_env(ONE_TABLE).limits("t", {"min": 50_000})
    with pytest.raises(ConfigError, match=f"{TABLE_QUOTA_ENV} must be from 1 to 1e\\+06"):
        ScalerConfig.from_env({**ONE_TABLE, TABLE_QUOTA_ENV: "2000000"})


def test_the_stores_bounds_come_from_the_quota() -> None:
    limits = limits_from_env({TABLE_QUOTA_ENV: "80000"})
    assert (limits.quota, limits.max_units, limits.max_total_units) == (80_000, 80_000, 80_000)
    with pytest.raises(CapacityRequestError, match=f"{TABLE_QUOTA_ENV}: got 'lots'"):
        limits_from_env({TABLE_QUOTA_ENV: "lots"})
    with pytest.raises(CapacityRequestError, match="CAPACITY_MAX_UNITS: got '50000'"):
        limits_from_env({"CAPACITY_MAX_UNITS": "50000"})


def test_a_request_is_checked_against_the_quota_it_is_given() -> None:
    from datetime import timedelta

    hour, minute = timedelta(hours=1), timedelta(minutes=1)
    assert validate_request("Orders", 0, 50_000, None, hour, minute, 80_000) == {"write": 50_000}
    with pytest.raises(CapacityRequestError, match="write: got 50000; .* from 0 to 40,000"):
        validate_request("Orders", 0, 50_000, None, hour, minute, 40_000)
