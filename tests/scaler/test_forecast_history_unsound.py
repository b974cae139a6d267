"""A forecast history CloudWatch cannot vouch for is no forecast: the plan in force stays
(it stages capacity ahead of a known peak), and the table fails, counted. CloudWatch's
``InternalError`` status on a query is an answer moto never gives: botocore's Stubber."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.core.decreases import DecreaseLedger
from ddb_capacity_runtime.core.floorplan import FloorPlan
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.core.table_limits import Limits
from ddb_capacity_runtime.core.tables import Dimension, ManagedTable
from ddb_capacity_runtime.scaler.plans import forecast_plans, keep_plans, minute

NOW = datetime(2026, 1, 5, 8, 45, tzinfo=UTC)


class _Clients:
    def __init__(self, cloudwatch: Any) -> None:
        self.cloudwatch = cloudwatch


class _Store:
    def __init__(self) -> None:
        self.kept: list[tuple[Any, ...]] = []

    def keep_plan(self, *args: Any) -> bool:
        self.kept.append(args)
        return True


def _shared(what: str, call: Any, default: Any, confined: bool = False) -> Any:
    return call()


@pytest.mark.parametrize("status", ["InternalError", "Forbidden", "PartialData"])
def test_an_unsound_history_keeps_the_plan_in_force_and_fails_the_table(status: str) -> None:
    # GIVEN a table whose plan in force stages 1,000 read units ahead of a peak
    now_minute = minute(NOW)
    kept = FloorPlan(now_minute - now_minute % 5, tuple([1000] * 15), 70, 0, 0)
    limits = Limits(min_capacity=5, max_capacity=4000, target_utilization=0.7)
    d = Dimension("T", None, "read", 1000, DecreaseLedger(), None, limits, plan=kept)
    table = ManagedTable("T", "arn:aws:dynamodb:us-east-1:123456789012:table/T", {}, [d])
    # AND another table of the same forecast tick, its history sound (idle)
    u = Dimension("U", None, "read", 5, DecreaseLedger(), None, limits)
    other = ManagedTable("U", "arn:aws:dynamodb:us-east-1:123456789012:table/U", {}, [u])
    # AND CloudWatch answers the first's history query with a status it cannot vouch for
    cloudwatch = boto3.client(
        "cloudwatch", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(cloudwatch)
    answer = {"Id": "h0", "Label": "h0", "Timestamps": [], "Values": [], "StatusCode": status}
    sound = {"Id": "h1", "Label": "h1", "Timestamps": [], "Values": [], "StatusCode": "Complete"}
    stub.add_response("get_metric_data", {"MetricDataResults": [answer, sound]})
    failures: list[tuple[str, str]] = []
    config = ScalerConfig.from_env({"SCALER_TABLES": "T,U"})
    clients: Any = _Clients(cloudwatch)
    # WHEN the forecast tick runs
    with stub:
        fresh = forecast_plans(
            config, clients, [table, other], NOW, _shared, lambda *f: failures.append(f)
        )
    # THEN the dimension gets no new plan: the plan in force is neither dropped this tick nor
    # deleted from the store; the other table's forecast is made as ever (idle: no plan)
    assert fresh == {u.key: None}
    store: Any = _Store()
    assert keep_plans(store, table, fresh, [], False, lambda reason: None) == 0
    assert store.kept == []
    # AND that table alone fails, saying why (counted as Failures, alarmed)
    assert failures == [
        (
            "T",
            "table read: CloudWatch did not answer its forecast history soundly; its plan in "
            "force is kept",
        )
    ]
