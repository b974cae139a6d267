"""One exception family: every exception class of the three packages derives from
``CapacityError`` (and keeps the built-in its callers catch), no two share a name, and AWS's
errors are read at one place (`aws.error_codes`): their codes, from real botocore errors of the
local moto server, and what each code means."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

import constructs_pkg
import ddb_capacity_runtime
import ddb_capacity_tools
from ddb_capacity_runtime.aws import error_codes as errors
from ddb_capacity_runtime.aws.error_codes import describe_error, error_code, is_throttle, meaning
from ddb_capacity_runtime.core.errors import CapacityConfigError, CapacityError
from ddb_capacity_runtime.core.holds import CapacityRequestError, CapacityRequestTimeout
from ddb_capacity_runtime.core.outcomes import Status
from ddb_capacity_runtime.scaler.tick import TickFailed

PACKAGES = (constructs_pkg, ddb_capacity_runtime, ddb_capacity_tools)


def _exception_classes() -> Iterator[type[BaseException]]:
    """Every exception class defined in a module of the three packages."""
    for package in PACKAGES:
        modules = [package.__name__] + [
            m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
        ]
        for name in modules:
            module = importlib.import_module(name)
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if issubclass(cls, BaseException) and cls.__module__ == name:
                    yield cls


EXCEPTIONS = sorted(set(_exception_classes()), key=lambda c: f"{c.__module__}.{c.__name__}")


def test_the_walk_finds_the_packages_exceptions() -> None:
    names = {c.__name__ for c in EXCEPTIONS}
    assert {"CapacityError", "CapacityRequestError", "TickFailed", "AdviseError"} <= names
    assert len(EXCEPTIONS) >= 35


@pytest.mark.parametrize("cls", EXCEPTIONS, ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_every_exception_derives_from_the_root(cls: type[BaseException]) -> None:
    assert issubclass(cls, CapacityError), f"{cls.__module__}.{cls.__name__}: {cls.__mro__}"


def test_no_two_exceptions_share_a_name() -> None:
    by_name: dict[str, list[str]] = {}
    for cls in EXCEPTIONS:
        by_name.setdefault(cls.__name__, []).append(cls.__module__)
    assert {n: m for n, m in by_name.items() if len(m) > 1} == {}


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (CapacityConfigError, ValueError),
        (CapacityRequestError, ValueError),
        (CapacityRequestTimeout, TimeoutError),
        (TickFailed, RuntimeError),
    ],
)
def test_the_root_keeps_the_builtins_callers_catch(
    cls: type[BaseException], builtin: type[BaseException]
) -> None:
    assert issubclass(cls, builtin) and issubclass(cls, CapacityError)
    with pytest.raises(builtin):
        raise cls("refused")


# ---------------------------------------------------------------- AWS's errors, from moto


def _caught(call: Any, **kwargs: Any) -> ClientError:
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    return caught.value


def test_error_code_reads_real_client_errors(aws_client: Any) -> None:
    dynamodb = aws_client("dynamodb")
    missing = _caught(dynamodb.describe_table, TableName=f"missing-{uuid.uuid4().hex[:8]}")
    assert error_code(missing) == "ResourceNotFoundException"
    assert meaning(missing).status is Status.NOT_FOUND and meaning(missing).final
    assert not is_throttle(missing)
    assert describe_error(missing).startswith("ResourceNotFoundException: ")

    name = f"errors-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    item = {"pk": {"S": "a"}}
    dynamodb.put_item(TableName=name, Item=item)
    lost = _caught(
        dynamodb.put_item, TableName=name, Item=item, ConditionExpression="attribute_not_exists(pk)"
    )
    assert error_code(lost) == errors.CONDITION_FAILED
    assert meaning(lost) == errors.UNKNOWN and meaning(lost).status is Status.FAILED

    refused = _caught(dynamodb.put_item, TableName=name, Item={"pk": {"S": ""}})
    assert error_code(refused) == "ValidationException"
    assert meaning(refused).status is Status.INVALID


def test_error_code_reads_a_missing_s3_key(aws_client: Any) -> None:
    s3 = aws_client("s3")
    bucket = f"errors-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    missing = _caught(s3.get_object, Bucket=bucket, Key="none")
    assert error_code(missing) in errors.NO_SUCH_KEY


@pytest.mark.parametrize(
    "error",
    [
        None,
        ValueError("not AWS"),
        {},
        {"Error": "not a mapping"},
        {"Error": {"Code": 7}},
        {"Error": {"Code": ""}},
        ClientError({}, "DescribeTable"),
    ],
    ids=repr,
)
def test_error_code_is_none_without_a_code(error: Any) -> None:
    assert error_code(error) is None
    assert meaning(error) == errors.UNKNOWN


def test_error_code_reads_a_parsed_response_and_every_throttle_code() -> None:
    for code, what in errors.CODES.items():
        parsed = {"Error": {"Code": code, "Message": "m"}}
        assert error_code(parsed) == code
        assert is_throttle(ClientError(parsed, "UpdateTable")) is what.throttled  # type: ignore[arg-type]
    assert is_throttle({"Error": {"Code": "ProvisionedThroughputExceededException"}})
    assert describe_error(ValueError("bad")) == "ValueError: bad"


@pytest.mark.parametrize(
    ("package", "home", "at_least"),
    [
        (ddb_capacity_runtime, "ddb_capacity_runtime.core.errors", 15),
        (ddb_capacity_tools, "ddb_capacity_tools.tool_errors", 17),
    ],
    ids=["runtime", "tools"],
)
def test_each_packages_exceptions_are_one_hierarchy_in_one_module(
    package: Any, home: str, at_least: int
) -> None:
    """Every exception class of the run-time package is defined in ``core.errors``, and every
    one of the tools in ``tool_errors``; each derives from ``CapacityError`` and keeps one
    built-in callers catch: ``ValueError`` (input that breaks a rule), ``RuntimeError`` (a run
    that failed) or ``TimeoutError`` (a wait that ran out; a timeout of a request is a request
    error too)."""
    found: dict[str, type[BaseException]] = {}
    prefix = package.__name__
    for info in pkgutil.walk_packages(package.__path__, f"{prefix}."):
        if info.name.endswith("sitecustomize"):
            continue
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__.startswith(prefix):
                found[value.__qualname__] = value
    assert len(found) >= at_least
    elsewhere = sorted(n for n, c in found.items() if c.__module__ != home)
    assert elsewhere == []
    kinds = (ValueError, RuntimeError, TimeoutError)
    mixed = sorted(
        n
        for n, c in found.items()
        if c is not CapacityError
        and (
            not issubclass(c, CapacityError)
            or sum(issubclass(c, k) for k in kinds) - issubclass(c, TimeoutError) > 1
            or not any(issubclass(c, k) for k in kinds)
        )
    )
    assert mixed == []
