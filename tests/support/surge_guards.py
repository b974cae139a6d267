"""A CloudWatch client that answers with untrusted values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from botocore.stub import Stubber


def untrusted_cloudwatch(status: str) -> tuple[Any, Stubber]:
    """A CloudWatch client whose one GetMetricData answer (botocore's Stubber: moto always
    answers ``Complete``) gives both of a dimension's queries ``status`` and 200 units/s
    served in each of the window's minutes."""
    client = boto3.client(
        "cloudwatch",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (never sent)
    )
    minutes = [datetime.now(UTC) - timedelta(minutes=m) for m in range(9, 0, -1)]
    stub = Stubber(client)
    results = [
        {"Id": qid, "StatusCode": status, "Timestamps": minutes, "Values": [value] * 9}
        for qid, value in (("c0", 200 * 60.0), ("t0", 0.0))
    ]
    stub.add_response("get_metric_data", {"MetricDataResults": results, "Messages": []})
    stub.activate()
    return client, stub
