"""The advisor's test world: a moto server's tables in a Region, busy or idle days of
metrics, and the advise command run on them."""

from __future__ import annotations

import io
import json
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from ddb_capacity_tools import advise as advise_module
from ddb_capacity_tools.cli import main
from ddb_capacity_tools.local_aws import put_traffic
from ddb_capacity_tools.simulator import ModelParams
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.cli import Terminal

#: A Region no other test uses, so that --all-tables sees only these tables.
REGION = "eu-west-3"


def run(*argv: str, terminal: bool = False) -> tuple[int, str, str]:
    """``main(argv)``: its exit status, stdout and stderr (a terminal's with ``terminal``)."""
    out, err = io.StringIO(), Terminal() if terminal else io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


class Denied:
    """What an HTTP response needs to be for botocore to raise the parsed error."""

    status_code = 400


def moto_client(aws_env: dict[str, str], service: str, region: str = REGION) -> Any:
    """A client of ``service`` in ``region`` of the moto server."""
    return boto3.client(  # type: ignore[call-overload]
        service,
        endpoint_url=aws_env["AWS_ENDPOINT_URL"],
        region_name=region,
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (moto takes any key)
    )


def two_settings(trace: Trace) -> list[ModelParams]:
    """The `pair` ensemble's settings (tests/simulator/conftest.py) for ``trace``, as a Setup's ``settings_of`` (at module level: a
    process of the pool is given it)."""
    return settings_of("plausible", ModelParams(), trace)[:2]


def two_settings_by_the_minute(trace: Trace) -> list[ModelParams]:
    """`two_settings`, provisioned capacity billed by the minute."""
    return settings_of("plausible", ModelParams(billing="per-minute"), trace)[:2]


def reset_moto(endpoint: str) -> None:
    """Empty the moto server: its GetMetricData looks through every datapoint of the Region
    in the window, minute by minute, for each query, so the traffic of the tests before
    would slow every history this test reads."""
    reset = urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(reset, timeout=30) as answer:  # noqa: S310 (local moto)
        answer.read()


@pytest.fixture
def region(aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """An empty Region of an emptied moto server; the command's clients see DescribeTable of
    any table named in ``denied`` refused with AccessDeniedException."""
    for name, value in aws_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)

    reset_moto(aws_env["AWS_ENDPOINT_URL"])
    ddb, cloudwatch = moto_client(aws_env, "dynamodb"), moto_client(aws_env, "cloudwatch")
    denied: set[str] = set()
    real_client: Callable[..., Any] = boto3.client

    def deny(params: dict[str, Any], **_: Any) -> Any:
        if json.loads(params["body"]).get("TableName") in denied:
            error = {"Code": "AccessDeniedException", "Message": "not authorized"}
            return Denied(), {"Error": error}
        return None

    def client(service: str, *args: Any, **kwargs: Any) -> Any:
        made = real_client(service, *args, **kwargs)
        if service == "dynamodb":
            made.meta.events.register("before-call.dynamodb.DescribeTable", deny)
        return made

    monkeypatch.setattr(boto3, "client", client)
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    return {"ddb": ddb, "cloudwatch": cloudwatch, "denied": denied, "end": end, "aws_env": aws_env}


def create(ddb: Any, name: str) -> str:
    ddb.create_table(
        TableName=name,
        BillingMode="PROVISIONED",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
    )
    return name


def busy(region: dict[str, Any], name: str, write: float) -> str:
    """A table with three hours of ``write`` WCU/s and 50 RCU/s before the end."""
    create(region["ddb"], name)
    for dim, level in (("write", write), ("read", 50)):
        put_traffic(
            region["cloudwatch"], name, dim, level, end=region["end"], minutes=range(1, 181)
        )
    return name


def day(region: dict[str, Any]) -> list[str]:
    return ["--days", "1", "--end", region["end"].isoformat(), "--workers", "1"]


def reserving(end: datetime, billing: str = "hourly-max") -> advise_module.Setup:
    """A day's advice to ``end`` on stock:70 (under the `pair` ensemble), with the hours of the fleet's
    reservation plan, provisioned capacity billed by ``billing``."""
    return advise_module.Setup(
        1,
        end,
        two_settings if billing == "hourly-max" else two_settings_by_the_minute,
        ModelParams(billing=billing),
        ["stock:70"],
        workers=1,
        reserve_hours=True,
    )
