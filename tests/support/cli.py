"""The tools' command line run in-process, a stderr that is a terminal, and a table in moto
with days of history for the backtest."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

import pytest

from ddb_capacity_tools.cli import main
from ddb_capacity_tools.local_aws import put_traffic


def run(*argv: str, terminal: bool = False) -> tuple[int, str, str]:
    """``main(argv)``: its exit status, stdout and stderr (a terminal's with ``terminal``)."""
    out, err = io.StringIO(), Terminal() if terminal else io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


class Terminal(io.StringIO):
    """A stderr that is a terminal."""

    def isatty(self) -> bool:
        return True


#: The table's name, the end of its history, and the DynamoDB and CloudWatch clients.
HistoryTable = tuple[str, datetime, Any, Any]


@pytest.fixture
def history_table(
    aws_client: Any, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> HistoryTable:
    for name, value in aws_env.items():
        monkeypatch.setenv(name, value)
    ddb, cloudwatch = aws_client("dynamodb"), aws_client("cloudwatch")
    name = f"Backtest{datetime.now(UTC):%H%M%S%f}"
    ddb.create_table(
        TableName=name,
        BillingMode="PROVISIONED",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "gk", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
        GlobalSecondaryIndexes=[
            {
                "IndexName": "ByGroup",
                "KeySchema": [{"AttributeName": "gk", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
            }
        ],
    )
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    # Three hours: 100 WCU/s, with 60 minutes of 900 WCU/s of which 6,000 events a minute
    # were throttled; the GSI reads 40/s.
    put_traffic(cloudwatch, name, "write", 100, end=end, minutes=range(1, 121))
    put_traffic(cloudwatch, name, "write", 900, end=end, minutes=range(121, 181), throttles=6_000)
    put_traffic(cloudwatch, name, "read", 40, end=end, minutes=range(1, 181), index="ByGroup")
    return name, end, ddb, cloudwatch


def a_day_of(name: str, end: datetime) -> list[str]:
    """The options that read the day of ``name``'s history before ``end``."""
    return ["--table", name, "--days", "1", "--end", end.isoformat()]
