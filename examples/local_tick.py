"""Deploy the throttle-aware example to a local moto server, write traffic (and each
table's provisioned capacity) into its CloudWatch, run one scaler tick in-process with the
deployed function's environment and its deployed state store, and print the decisions
(``make demo``). The server is stopped at the end.

The tick runs at the first minute at which each deployed table has a provisioned-capacity
datapoint of its own (`witnessed_from`; now, if later): before it a table's newest one
began before the table did, is no delivery witness of it, and its idle dimensions are held
as a new table's. So what the tick decides follows from when the tables were created, not
from how long the deploy took or where in a minute it ended."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ddb_capacity_runtime.core.delivery import WITNESS_PERIOD_MINUTES
from ddb_capacity_runtime.core.series import MINUTE, step_start
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_tools.local import decision_report, tick_once
from ddb_capacity_tools.local_aws import (
    aws_env,
    client,
    deploy,
    function_environment,
    moto_server,
    physical_ids,
    put_traffic,
    put_witness,
    register_skipped_targets,
)

STACK = "ThrottleAware"


def witnessed_from(created: datetime) -> datetime:
    """The first minute at which a table created at ``created`` has a delivery witness:
    `put_witness` up to that minute publishes the 5-minute periods before the one it is in,
    and the newest of them then begins after ``created`` (one begun before it would be of
    no provisioning of this table)."""
    period = WITNESS_PERIOD_MINUTES * MINUTE
    return step_start(created, WITNESS_PERIOD_MINUTES) + 2 * period


def tick_minute(endpoint: str, tables: Iterable[str]) -> datetime:
    """The minute the tick runs at: the current one, or the first at which every one of
    ``tables`` has a delivery witness (`witnessed_from`), whichever is later."""
    dynamodb = client(endpoint, "dynamodb")
    created = [dynamodb.describe_table(TableName=t)["Table"]["CreationDateTime"] for t in tables]
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    return max([now, *(witnessed_from(c) for c in created)])


def tick_against_deployment(
    endpoint: str, assembly: Path, *, deploy_first: bool = True
) -> dict[str, Any]:
    """(Deploy,) write traffic, tick once with the deployed state store. Returns the
    summary, the logged events, the deployed table names and the function's environment."""
    if deploy_first:
        deploy(assembly, aws_env(endpoint), STACK)
    register_skipped_targets(endpoint, assembly, STACK)
    ids = physical_ids(endpoint, STACK)
    tables = {
        name: next(v for k, v in ids.items() if k.startswith(name))
        for name in ("Feed", "Clicks", "Accounts")
    }
    now = tick_minute(endpoint, tables.values())
    env = function_environment(endpoint, STACK, "ScalerFunction")
    config = ScalerConfig.from_env(env)
    end = now - timedelta(minutes=config.metric_lag_minutes)
    cw = client(endpoint, "cloudwatch")
    # Feed: reads at its 50 provisioned, 1,800 refused requests a minute for 2 minutes
    put_traffic(cw, tables["Feed"], "read", 50, end=end, minutes=range(1, 16))
    put_traffic(cw, tables["Feed"], "read", 0, throttles=1_800, end=end, minutes=range(1, 3))
    # Clicks: writes throttled at their 100 provisioned
    put_traffic(cw, tables["Clicks"], "write", 100, end=end, minutes=range(1, 16))
    put_traffic(cw, tables["Clicks"], "write", 0, throttles=3_000, end=end, minutes=range(1, 3))
    # Accounts: busy and throttled too, but not the scaler's: stock target tracking only
    put_traffic(cw, tables["Accounts"], "read", 5, throttles=600, end=end, minutes=range(1, 3))
    # each table's provisioned capacity, as DynamoDB publishes it every 5 minutes whatever the
    # traffic: the delivery witness a tick reads before lowering on minutes without a datapoint
    for name in tables.values():
        put_witness(cw, name, end=now)
    put_witness(cw, tables["Feed"], end=now, index="byTopic")
    summary, lines = tick_once(endpoint, env, now, f"{STACK}-local-state")
    return {"summary": summary, "lines": lines, "tables": tables, "environment": env}


def main() -> int:
    assembly = Path(sys.argv[1] if len(sys.argv) > 1 else "cdk.out")
    with moto_server() as endpoint:
        print(f"deploying {STACK} to a local moto server ({endpoint}) ...")
        result = tick_against_deployment(endpoint, assembly)
    names = {v: k for k, v in result["tables"].items()}
    print(decision_report(result["summary"], result["lines"], names), end="")
    print("\nAccounts is not the scaler's: stock target tracking handles it. Server stopped.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
