"""A tick reading more delivery witnesses than one GetMetricData call holds (500 queries),
against a moto server.

On its own module, so on a moto server emptied for it (`tests.conftest.empty_moto`): moto's
GetMetricData looks through every datapoint in the server for each query and each of its
36 periods, so after the metric data of the delivery-witness module's other tests its 500
queries took 15 s on a quiet machine, and on a busy one ran past botocore's 60-second read
timeout. Here they look through this test's 501 datapoints alone."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from ddb_capacity_runtime.aws.metrics import fetch_witness
from ddb_capacity_runtime.core.series import Key
from tests.support.delivery_witness import newest_of


def test_more_witnesses_than_a_call_holds_are_read_500_a_call(aws_client: Any) -> None:
    # GIVEN 501 tables, each with one provisioned-capacity datapoint
    cw, now = aws_client("cloudwatch"), datetime.now(UTC).replace(second=0, microsecond=0)
    run = uuid.uuid4().hex[:8]
    keys: list[Key] = [(f"many-{run}-{i}", None, "write") for i in range(501)]
    stamps = {key: newest_of(now) - timedelta(minutes=5 * (i % 3)) for i, key in enumerate(keys)}
    data = [
        {
            "MetricName": "ProvisionedWriteCapacityUnits",
            "Dimensions": [{"Name": "TableName", "Value": key[0]}],
            "Timestamp": stamp,
            "Value": 10.0,
        }
        for key, stamp in stamps.items()
    ]
    for i in range(0, len(data), 500):
        cw.put_metric_data(Namespace="AWS/DynamoDB", MetricData=data[i : i + 500])
    calls: list[int] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        calls.append(len(params["MetricDataQueries"]))

    cw.meta.events.register("provide-client-params.cloudwatch.GetMetricData", record)
    # WHEN their witnesses are read
    errors: dict[Key, str] = {}
    read = fetch_witness(cw, keys, now, errors=errors)
    # THEN every one is read, in two calls of at most 500 queries
    assert errors == {}
    assert read == stamps
    assert calls == [500, 1]
