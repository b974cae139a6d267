"""One retry policy: botocore's, as `aws.clients` configures the clients, with no retry
wrapper of the library's on top; inside a tick, no retry that could end after the tick's
deadline (`aws.retry.RetryWithin`). Against the local moto server, with AWS's throttling
answers (which moto never gives) put in place of the HTTP response by a ``before-send``
hook, so botocore's own retry handler sees them as it would AWS's."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.exceptions import ClientError, EndpointConnectionError

from ddb_capacity_runtime.aws.clients import (
    CONNECT_TIMEOUT_SECONDS,
    CONTROL_PLANE_ATTEMPTS,
    READ_TIMEOUT_SECONDS,
    Clients,
    make_clients,
    retry_bound,
)
from ddb_capacity_runtime.aws.error_codes import error_code
from ddb_capacity_runtime.aws.retry import RetryWithin, ThrottleCounter
from ddb_capacity_runtime.core.deadline import Deadline
from ddb_capacity_tools.local_aws import REGION, free_port
from tests.support.moto_world import World
from tests.support.retry_policy import _Raw

THROTTLE_BODY = (
    b'{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException",'
    b'"message":"Rate of requests exceeds the allowed throughput."}'
)


class Throttler:
    """Answers the first ``times`` attempts of ``operation`` (every one: None) with AWS's
    ThrottlingException, and counts every attempt sent; ``on_send`` runs on each."""

    def __init__(
        self,
        client: Any,
        operation: str,
        times: int | None,
        on_send: Callable[[], None] = lambda: None,
    ) -> None:
        self.left, self.sent, self.on_send = times, 0, on_send
        self.event = f"before-send.{client.meta.service_model.service_id.hyphenize()}.{operation}"
        self.client = client
        client.meta.events.register(self.event, self.answer)

    def answer(self, request: Any, **_: Any) -> AWSResponse | None:
        self.sent += 1
        self.on_send()
        if self.left is not None:
            if self.left == 0:
                return None
            self.left -= 1
        headers = HTTPHeaders.from_dict({"Content-Type": "application/x-amz-json-1.0"})
        return AWSResponse(request.url, 400, headers, _Raw(THROTTLE_BODY))

    def close(self) -> None:
        self.client.meta.events.unregister(self.event, self.answer)


def _clients(endpoint: str) -> Clients:
    """The library's own clients (`make_clients`), of the local server at ``endpoint``."""
    return make_clients(
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (moto takes any key)
    )


@pytest.fixture
def clients(aws_env: dict[str, str]) -> Clients:
    return _clients(aws_env["AWS_ENDPOINT_URL"])


@pytest.fixture
def table(clients: Clients) -> Iterator[str]:
    name = f"retry-{uuid.uuid4().hex[:8]}"
    clients.dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    yield name
    clients.dynamodb.delete_table(TableName=name)


def test_a_throttled_call_is_retried_by_botocore(clients: Clients, table: str) -> None:
    # GIVEN DynamoDB throttles the first two attempts of a DescribeTable
    throttler = Throttler(clients.dynamodb, "DescribeTable", 2)
    # WHEN the library calls it once, inside a tick's far deadline
    with (
        ThrottleCounter(clients.dynamodb) as counted,
        RetryWithin(Deadline(time.time() + 600), clients.dynamodb) as bounded,
    ):
        answer = clients.dynamodb.describe_table(TableName=table)
    throttler.close()
    # THEN botocore retried it: three attempts, the two throttled ones counted, none refused
    assert answer["Table"]["TableName"] == table
    assert (throttler.sent, counted.count, bounded.refused) == (3, 2, 0)


def test_a_shared_call_throttled_on_every_attempt_is_tried_as_its_client_says(
    aws_client: Any, aws_env: dict[str, str]
) -> None:
    # GIVEN a tick with the library's own clients (`make_clients`), and Application Auto
    # Scaling throttling every attempt of DescribeScalableTargets, a call the tick shares
    world = World(aws_client)
    world.clients = _clients(aws_env["AWS_ENDPOINT_URL"])
    try:
        idle = world.table("idle", 200, 200)
        throttler = Throttler(world.clients.autoscaling, "DescribeScalableTargets", None)
        calls = []

        def count(params: dict[str, Any], **_: Any) -> None:
            calls.append("table" if "ResourceIds" in params else "account")

        events = world.clients.autoscaling.meta.events
        events.register(
            "before-parameter-build.application-autoscaling.DescribeScalableTargets", count
        )
        # WHEN the tick runs
        summary, _ = world.tick(SCALER_TABLES=idle)
        throttler.close()
        # THEN the account's listing was called once, and the table's own targets once
        # after it failed; each call tried exactly as often as the client's retry mode says
        # (no wrapper tried a whole call again), and the listing failed the shared reads
        assert calls == ["account", "table"]
        assert throttler.sent == 2 * CONTROL_PLANE_ATTEMPTS == 6
        print(summary["shared_failures"])
        (failure,) = summary["shared_failures"]
        assert failure.startswith("scalable targets") and "ThrottlingException" in failure
        assert world.throughput(idle) == (200, 200)
    finally:
        world.close()


def test_no_retry_would_end_past_the_deadline(clients: Clients, table: str) -> None:
    # GIVEN a clock that moves 4 s on every attempt, and a deadline 17 s away: after the
    # first attempt a retry (at most 1 s of backoff and a 10 s attempt) still fits; after
    # the second (2 s of backoff) it does not
    now = [0.0]
    throttler = Throttler(
        clients.dynamodb, "DescribeTable", None, on_send=lambda: now.__setitem__(0, now[0] + 4)
    )
    deadline = Deadline(17.0, clock=lambda: now[0])
    assert retry_bound(clients.dynamodb, 1) == 1 + CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS
    # WHEN the call is made inside the deadline
    with RetryWithin(deadline, clients.dynamodb) as bounded, pytest.raises(ClientError) as caught:
        clients.dynamodb.describe_table(TableName=table)
    throttler.close()
    # THEN botocore retried it once, the next retry was refused, and the call failed with
    # the error botocore raises after its last attempt
    assert (throttler.sent, bounded.refused) == (2, 1)
    assert error_code(caught.value) == "ThrottlingException"
    assert type(caught.value).__name__ == "ClientError" or isinstance(caught.value, ClientError)


def test_a_connection_error_is_not_retried_past_the_deadline() -> None:
    # GIVEN an endpoint nobody listens on, and a deadline closer than one attempt's timeouts
    down = _clients(f"http://127.0.0.1:{free_port()}")
    attempts = [0]

    def count(**_: Any) -> None:
        attempts[0] += 1

    down.dynamodb.meta.events.register("before-send.dynamodb.DescribeTable", count)
    deadline = Deadline(time.time() + 5)
    # WHEN the call is made
    with RetryWithin(deadline, down.dynamodb) as bounded, pytest.raises(EndpointConnectionError):
        down.dynamodb.describe_table(TableName="anything")
    # THEN the connection error was raised after the first attempt, not retried
    assert (attempts[0], bounded.refused) == (1, 1)


@pytest.mark.parametrize("counter_first", [True, False])
def test_a_refused_retry_is_still_counted_as_a_throttle(
    clients: Clients, table: str, counter_first: bool
) -> None:
    # GIVEN a deadline that already passed, and a throttled call
    throttler = Throttler(clients.dynamodb, "DescribeTable", None)
    counter = ThrottleCounter(clients.dynamodb)
    bounded = RetryWithin(Deadline(time.time() - 1), clients.dynamodb)
    first, second = (counter, bounded) if counter_first else (bounded, counter)
    # WHEN it is made, whichever of the two hooks was set first
    with first, second, pytest.raises(ClientError):
        clients.dynamodb.describe_table(TableName=table)
    throttler.close()
    # THEN its one attempt was counted as throttled, and its retry refused
    assert (throttler.sent, counter.count, bounded.refused) == (1, 1, 1)


def test_an_answer_past_the_deadline_is_an_answer(clients: Clients, table: str) -> None:
    # GIVEN a deadline that passed; WHEN a call succeeds
    with RetryWithin(Deadline(time.time() - 1), clients.dynamodb) as bounded:
        answer = clients.dynamodb.describe_table(TableName=table)
    # THEN it is returned as it is, and no retry was refused
    assert answer["Table"]["TableName"] == table and bounded.refused == 0


def test_a_tick_retries_nothing_past_its_deadline(aws_client: Any) -> None:
    # GIVEN a tick whose deadline is 60 s away, and CloudWatch throttling every attempt of
    # GetMetricData (a retry of the world's CloudWatch client, botocore's defaults, may
    # take 121 s: 1 s of backoff, then 60 s to connect and 60 s to read)
    world = World(aws_client)
    try:
        idle = world.table("idle", 200, 200)
        throttler = Throttler(world.cw, "GetMetricData", None)
        calls = [0]

        def count(**_: Any) -> None:
            calls[0] += 1

        world.cw.meta.events.register("before-call.cloudwatch.GetMetricData", count)
        started = time.monotonic()
        # WHEN the tick runs
        summary, _ = world.tick(None, time.time() + 60, SCALER_TABLES=idle)  # now, deadline
        throttler.close()
        # THEN each GetMetricData call was sent once (botocore's retries refused at the
        # deadline, no backoff slept), the failures are shared ones, and nothing was lowered
        assert calls[0] >= 1 and throttler.sent == calls[0]
        assert time.monotonic() - started < 30
        # (one shared call, or two when the tick also fetches the forecast's history)
        failures = summary["shared_failures"]
        assert failures and all("ThrottlingException" in f for f in failures), failures
        assert world.throughput(idle) == (200, 200)
    finally:
        world.close()
