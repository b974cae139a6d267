"""The signals hook's test parts: a captured report, a table's answers injected into
botocore, and a stand-in for the Lambda client."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.config import Config

from ddb_capacity_runtime.core.report_batch import reports_of
from ddb_capacity_runtime.core.surge_report import (
    Report,
    parse_report,
)
from ddb_capacity_tools.local_aws import REGION

ACCOUNT = "123456789012"


class Capture:
    """A ``send`` that keeps every report (checked against the contract on arrival)."""

    def __init__(self) -> None:
        self.reports: list[Report] = []
        self.batches: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, payload: dict[str, Any]) -> None:
        batch = reports_of(json.loads(json.dumps(payload)))
        reports = [parse_report(raw, time.time()) for raw in batch]
        with self.lock:
            self.batches.append(len(reports))
            self.reports.extend(reports)

    def totals(self) -> dict[tuple[str, str | None, str], dict[str, Any]]:
        """Units, requests, throttles by cause and failed requests, summed per (table, index,
        dimension)."""
        out: dict[tuple[str, str | None, str], dict[str, Any]] = defaultdict(
            lambda: {"units": 0.0, "requests": 0, "throttles": defaultdict(int), "failed": 0}
        )
        for r in self.reports:
            for d in r.dims:
                row = out[(r.table, d.index, d.dimension)]
                row["units"] += d.units
                row["requests"] += d.requests
                row["failed"] += d.failed
                for cause, n in d.throttles.items():
                    row["throttles"][cause] += n
        return {
            k: {**v, "throttles": {c: n for c, n in v["throttles"].items() if n}}
            for k, v in out.items()
        }


def ddb(endpoint: str, **config: Any) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (moto takes any key)
        config=Config(**config) if config else None,
    )


def offline(**config: Any) -> Any:
    """A DynamoDB client that never reaches a network: every answer is injected."""
    return ddb("http://127.0.0.1:9", **config)


def make_table(client: Any) -> str:
    name = f"orders-{uuid.uuid4().hex[:8]}"
    client.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-g",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
            }
        ],
    )
    return name


@pytest.fixture
def table(moto_endpoint: str) -> str:
    return make_table(ddb(moto_endpoint))


def item(pk: str, g: str = "x") -> dict[str, Any]:
    return {"pk": {"S": pk}, "g": {"S": g}, "v": {"S": "value"}}


class Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


def answer(request: Any, status: int, body: dict[str, Any]) -> AWSResponse:
    data = json.dumps(body).encode()
    headers = HTTPHeaders.from_dict({"Content-Type": "application/x-amz-json-1.0"})
    response = AWSResponse(request.url, status, headers, Raw(data))
    # what botocore's own parser reads
    response._content = data  # type: ignore[attr-defined]  # noqa: SLF001
    return response


def inject(
    client: Any, bodies: Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]] | None]
) -> None:
    """Answer the client's requests with ``bodies(operation, request JSON)`` (None: send
    it on), as DynamoDB would: botocore parses and retries them as real answers."""

    def before_send(request: Any, **kwargs: Any) -> AWSResponse | None:
        operation = request.headers["X-Amz-Target"].decode().split(".")[-1]
        made = bodies(operation, json.loads(request.body))
        return None if made is None else answer(request, *made)

    client.meta.events.register("before-send.dynamodb", before_send)


def index_arn(table: str, index: str | None = None) -> str:
    base = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table}"
    return base if index is None else f"{base}/index/{index}"


def throttle(code: str, reasons: list[dict[str, str]] | None) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {
        "__type": f"com.amazonaws.dynamodb.v20120810#{code}",
        "message": "throttled",
    }
    if reasons is not None:
        body["ThrottlingReasons" if code != "ThrottlingException" else "throttlingReasons"] = (
            reasons
        )
    return 400, body


PTEE = "ProvisionedThroughputExceededException"


class FakeLambda:
    """An HTTP server on 127.0.0.1 that answers Lambda's Invoke as Lambda does for
    ``Event`` (202), or refuses it with ``status`` and ``error`` as Lambda does, and keeps
    each request."""

    def __init__(self, status: int = 202, error: str = "ResourceNotFoundException") -> None:
        requests: list[tuple[str, dict[str, str], bytes]] = []
        self.requests = requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                requests.append((self.path, dict(self.headers), body))
                self.send_response(status)
                if status >= 300:
                    self.send_header("x-amzn-ErrorType", error)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # shutdown() waits for the loop's next poll: 0.05 s, not the default 0.5 s
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def once() -> Any:
    """A client that never reaches a network and never retries: every answer is injected."""
    return offline(retries={"mode": "standard", "total_max_attempts": 1})


def cancelled_by(reasons: list[str]) -> tuple[int, dict[str, Any]]:
    return 400, {
        "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        "Message": "Transaction cancelled",
        "CancellationReasons": [{"Code": c, "Message": c} for c in reasons],
    }
