"""The settle step's hold store (a DynamoDB client and a store table), a Lambda-like
environment, a hold in the store, a Create event and the counts the step printed."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest

from ddb_capacity_runtime.settle.handler import on_event
from ddb_capacity_tools.local_aws import create_store_table
from tests.conftest import cfn_event
from tests.support.settle_live import targets

FUNCTION = "Stack-CapacitySettleProviderIsComplete-abc123"
"""The settle function's name, as Lambda sets it (``AWS_LAMBDA_FUNCTION_NAME``)."""


@pytest.fixture
def dynamodb(aws_client: Any) -> Any:
    return aws_client("dynamodb")


@pytest.fixture
def store(dynamodb: Any) -> str:
    """A hold store of its own, as ``CapacityRequests`` makes it."""
    name = f"holds-{uuid.uuid4().hex[:8]}"
    create_store_table(dynamodb, name)
    return name


@pytest.fixture
def in_lambda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", FUNCTION)


def hold(
    dynamodb: Any,
    store: str,
    table: str,
    sk: str,
    units: int,
    *,
    baseline: int = 100,
    expires_in: float = 900,
) -> None:
    """One hold of ``units`` over ``baseline`` on the dimension ``sk`` of ``table``, as the
    broker writes it (its level: ``baseline + units``)."""
    fields = {
        "units": {"N": str(units)},
        "expires": {"N": str(int(time.time() + expires_in))},
        "baseline": {"N": str(baseline)},
    }
    dynamodb.put_item(
        TableName=store,
        Item={
            "pk": {"S": table},
            "sk": {"S": sk},
            "base": {"N": "100"},
            "holds": {"M": {uuid.uuid4().hex: {"M": fields}}},
        },
    )


def create_event(name: str, store: str | None) -> dict[str, Any]:
    """The Create of a step on the new table ``name``, its targets auto-scaled."""
    props: dict[str, Any] = {"TableName": name, "Targets": targets(2000, 500)}
    if store is not None:
        props["HoldStore"] = store
    event = cfn_event("Create", props)
    return {**event, **on_event(event, None)}


def counts(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """The EMF records written to standard output."""
    out = capsys.readouterr().out
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]
