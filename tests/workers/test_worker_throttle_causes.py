"""The workers read why DynamoDB throttled them (``ThrottlingReasons``): a hot key is retried on
its own without slowing the job, every other cause (and no reasons at all) slows it as before.
moto never sends reasons, so the errors come from botocore's Stubber, or from a raw HTTP body
through botocore's own parser (what a real endpoint's answer goes through)."""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.workers import throttle_cause
from ddb_capacity_runtime.workers.pacing import (
    CAUSES,
    MAX_REASONS,
    REASONS,
    PacingError,
    jittered,
    reasons_cause,
    strongest,
)
from ddb_capacity_runtime.workers.scan import RateLimitedScan, ScanError, ScanResult
from ddb_capacity_runtime.workers.writer import SlowStartWriter
from tests.support.hypothesis_profiles import examples
from tests.support.worker_throttle_causes import (
    ARN,
    FIELD,
    FakeClock,
    add_throttle,
    backoffs,
    batch,
    events,
    expected,
    ok,
    page,
    reasons,
    stubbed,
    write,
)

#: Every reason DynamoDB documents, spelled out here (not derived as the code derives them).
DOCUMENTED = {
    "TableReadProvisionedThroughputExceeded": "provisioned",
    "TableWriteProvisionedThroughputExceeded": "provisioned",
    "IndexReadProvisionedThroughputExceeded": "provisioned",
    "IndexWriteProvisionedThroughputExceeded": "provisioned",
    "TableReadKeyRangeThroughputExceeded": "key-range",
    "TableWriteKeyRangeThroughputExceeded": "key-range",
    "IndexReadKeyRangeThroughputExceeded": "key-range",
    "IndexWriteKeyRangeThroughputExceeded": "key-range",
    "TableReadAccountLimitExceeded": "account-limit",
    "TableWriteAccountLimitExceeded": "account-limit",
    "IndexReadAccountLimitExceeded": "account-limit",
    "IndexWriteAccountLimitExceeded": "account-limit",
    "TableReadMaxOnDemandThroughputExceeded": "max-on-demand",
    "TableWriteMaxOnDemandThroughputExceeded": "max-on-demand",
    "IndexReadMaxOnDemandThroughputExceeded": "max-on-demand",
    "IndexWriteMaxOnDemandThroughputExceeded": "max-on-demand",
}


def client_error(response: dict[str, Any], operation: str) -> ClientError:
    """botocore's error, of a response its stubs do not describe (DynamoDB's reasons)."""
    return ClientError(response, operation)  # type: ignore[arg-type]


def parsed(error: ClientError) -> dict[str, Any]:
    """``error``'s response, with the keys botocore's stubs do not describe."""
    return dict(error.response)


def raw_client(body: dict[str, Any]) -> Any:
    """A client whose every call gets ``body`` as a 400 answer, parsed by botocore itself."""
    client = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}),
    )
    data = json.dumps(body).encode()

    class Raw:
        def stream(self, **_: Any) -> Iterator[bytes]:
            yield data

    def send(request: Any, **_: Any) -> AWSResponse:
        headers = HTTPHeaders.from_dict({"Content-Type": "application/x-amz-json-1.0"})
        return AWSResponse(request.url, 400, headers, Raw())

    # a before-send handler's answer is the response (botocore's stubs say it returns None)
    client.meta.events.register("before-send.dynamodb", send)  # type: ignore[arg-type]
    return client


def caught(client: Any, call: Callable[[Any], object]) -> ClientError:
    try:
        call(client)
    except ClientError as exc:
        return exc
    raise AssertionError("no error")


def counts(**by_cause: int) -> dict[str, int]:
    return {**dict.fromkeys(CAUSES, 0), **by_cause}


# ---------------------------------------------------------------- the classifier


def test_every_documented_reason_has_its_cause() -> None:
    assert dict(REASONS) == DOCUMENTED
    for name, cause in DOCUMENTED.items():
        assert reasons_cause(reasons(name)) == cause


@pytest.mark.parametrize("code", sorted(FIELD))
def test_botocore_puts_the_reasons_where_the_classifier_reads_them(code: str) -> None:
    client, stub = stubbed()
    add_throttle(stub, "scan", ["TableReadKeyRangeThroughputExceeded"], code=code)
    with stub:
        exc = caught(client, lambda c: c.scan(TableName="tbl"))
    assert parsed(exc)[FIELD[code]][0]["reason"] == "TableReadKeyRangeThroughputExceeded"
    assert throttle_cause(exc) == "key-range"


def test_a_real_answers_reasons_are_read_through_botocores_own_parser() -> None:
    body = {
        "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        "message": "throttled",
        "ThrottlingReasons": reasons("IndexWriteKeyRangeThroughputExceeded"),
    }
    exc = caught(raw_client(body), lambda c: c.scan(TableName="tbl"))
    assert parsed(exc)["ThrottlingReasons"][0]["resource"] == ARN
    assert throttle_cause(exc) == "key-range"


def test_without_reasons_a_throttle_is_unknown_and_other_errors_are_not_throttles() -> None:
    client, stub = stubbed()
    for code in sorted(FIELD):
        add_throttle(stub, "scan", None, code=code)
    stub.add_client_error("scan", "ValidationException", "bad")
    with stub:
        for _ in FIELD:
            assert throttle_cause(caught(client, lambda c: c.scan(TableName="tbl"))) == "unknown"
        assert throttle_cause(caught(client, lambda c: c.scan(TableName="tbl"))) is None


@pytest.mark.parametrize(
    ("names", "cause"),
    [
        (
            ["TableReadKeyRangeThroughputExceeded", "IndexReadProvisionedThroughputExceeded"],
            "provisioned",
        ),
        (
            ["TableWriteKeyRangeThroughputExceeded", "TableWriteAccountLimitExceeded"],
            "account-limit",
        ),
        (
            ["IndexWriteKeyRangeThroughputExceeded", "IndexWriteMaxOnDemandThroughputExceeded"],
            "max-on-demand",
        ),
        (
            ["TableReadKeyRangeThroughputExceeded", "IndexReadKeyRangeThroughputExceeded"],
            "key-range",
        ),
        # a reason this version does not know: it may need slowing, so it is not a hot key
        (["TableReadKeyRangeThroughputExceeded", "TableReadSomethingNewExceeded"], "unknown"),
        (
            ["TableReadSomethingNewExceeded", "TableReadProvisionedThroughputExceeded"],
            "provisioned",
        ),
    ],
)
def test_of_several_reasons_provisioned_wins_and_a_hot_key_needs_them_all(
    names: list[str], cause: str
) -> None:
    assert reasons_cause(reasons(*names)) == cause


@pytest.mark.parametrize(
    "value",
    [
        None,
        "TableReadKeyRangeThroughputExceeded",
        {"reason": "TableReadKeyRangeThroughputExceeded"},
        7,
        [],
        [None],
        [{}],
        [{"reason": 5}],
        [{"reason": ["TableReadKeyRangeThroughputExceeded"]}],
        [{"reason": None, "resource": ARN}],
        [{"resource": ARN}],
        ["TableReadKeyRangeThroughputExceeded"],
        [{"reason": "tablereadkeyrangethroughputexceeded"}],
        [{"reason": " TableReadKeyRangeThroughputExceeded"}],
        reasons(*["TableReadKeyRangeThroughputExceeded"] * (MAX_REASONS + 1)),
    ],
)
def test_malformed_reasons_are_unknown(value: object) -> None:
    assert reasons_cause(value) == "unknown"
    response = {"Error": {"Code": "ThrottlingException"}, "throttlingReasons": value}
    assert throttle_cause(client_error(response, "Scan")) == "unknown"


@pytest.mark.parametrize(
    "response",
    [
        {},
        {"Error": "ThrottlingException"},
        {"Error": {"Code": ["ThrottlingException"]}},
        {"Error": None},
    ],
)
def test_a_malformed_error_is_not_a_throttle(response: dict[str, object]) -> None:
    error = ClientError({"Error": {"Code": "ThrottlingException"}}, "Scan")
    error.response = response  # type: ignore[assignment]  # ClientError refuses to be built from these
    assert throttle_cause(error) is None


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=50)
    | st.sampled_from(sorted(DOCUMENTED)),
    lambda inner: (
        st.lists(inner, max_size=8)
        | st.dictionaries(
            st.sampled_from(["reason", "resource", "x"]) | st.text(max_size=8), inner, max_size=4
        )
    ),
    max_leaves=30,
)
ENTRY = st.fixed_dictionaries(
    {"reason": st.sampled_from(sorted(DOCUMENTED)) | JSONISH}, optional={"resource": JSONISH}
)


@settings(max_examples=examples(300), deadline=None)
@given(value=JSONISH | st.lists(ENTRY | JSONISH, max_size=80))
def test_the_classifier_never_raises_and_says_hot_key_only_when_every_reason_does(
    value: object,
) -> None:
    cause = reasons_cause(value)
    assert cause in CAUSES
    entries = value if isinstance(value, list) else []
    said = [e.get("reason") if isinstance(e, dict) else None for e in entries]
    fits = 0 < len(entries) <= MAX_REASONS
    all_key_range = fits and all(
        isinstance(r, str) and DOCUMENTED.get(r) == "key-range" for r in said
    )
    assert (cause == "key-range") == all_key_range
    if fits and any(isinstance(r, str) and DOCUMENTED.get(r) == "provisioned" for r in said):
        assert cause == "provisioned"
    response = {
        "Error": {"Code": "ProvisionedThroughputExceededException"},
        "ThrottlingReasons": value,
    }
    assert throttle_cause(client_error(response, "Scan")) == cause


def test_the_strongest_cause_follows_the_documented_order() -> None:
    assert strongest([]) == "unknown"
    assert strongest(["key-range", "max-on-demand", "account-limit"]) == "account-limit"
    assert strongest(list(reversed(CAUSES))) == "provisioned"


@settings(max_examples=examples(50), deadline=None)
@given(delay=st.floats(0, 100), seed=st.integers(0, 2**32))
def test_a_jittered_wait_is_between_half_and_all_of_the_backoff(delay: float, seed: int) -> None:
    assert delay / 2 <= jittered(delay, random.Random(seed)) <= delay


# ---------------------------------------------------------------- the scan


def run_scan(
    throttles: Sequence[list[str] | None], **kw: Any
) -> tuple[RateLimitedScan, ScanResult, list[dict[str, Any]], list[float]]:
    """A one-segment scan of two pages, after one throttle per entry of ``throttles`` (reason
    names, or None for none): the scan, its result, the items seen and the backoffs slept."""
    client, stub = stubbed()
    for names in throttles:
        add_throttle(stub, "scan", names)
    stub.add_response("scan", page(["a", "b"], 1.0, last="b"))
    stub.add_response("scan", page(["c"], 0.5))
    seen: list[dict[str, Any]] = []
    sleeps: list[float] = []
    scan = RateLimitedScan(client, "tbl", rate=100, segments=1, sleep=sleeps.append, **kw)
    with stub:
        result = scan.run(lambda segment, items: seen.extend(items))
    stub.assert_no_pending_responses()
    return scan, result, seen, sleeps


def test_a_scan_retries_a_hot_key_with_jitter_and_a_provisioned_throttle_as_before(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="ddb_capacity_runtime")
    hot, result, seen, sleeps = run_scan(
        [["TableReadKeyRangeThroughputExceeded"]] * 3, rng=random.Random(7)
    )
    assert len(seen) == 3 and hot.bucket.rate == 100
    assert result.throttled == 3 and result.throttled_by_cause == counts(**{"key-range": 3})
    assert sleeps != [0.1, 0.2, 0.4]  # jittered, each between half and all of the backoff
    assert all(b / 2 <= s <= b for s, b in zip(sleeps, [0.1, 0.2, 0.4], strict=True))
    assert [e["cause"] for e in events(caplog, "scan-throttled")] == ["key-range"] * 3

    caplog.clear()
    cold, result, seen, sleeps = run_scan(
        [["TableReadProvisionedThroughputExceeded"]] * 3, rng=random.Random(7)
    )
    assert len(seen) == 3 and sleeps == [0.1, 0.2, 0.4]  # today's backoff, exactly
    assert cold.bucket.rate == 100  # the scan's rate is fixed, whatever the cause
    assert result.throttled_by_cause == counts(provisioned=3)
    assert [e["cause"] for e in events(caplog, "scan-throttled")] == ["provisioned"] * 3


def test_a_scan_without_reasons_behaves_as_it_always_did() -> None:
    _, result, seen, sleeps = run_scan([None, None])
    assert len(seen) == 3 and sleeps == [0.1, 0.2]
    assert result.throttled == 2 and result.throttled_by_cause == counts(unknown=2)


def test_a_scan_with_malformed_reasons_from_a_real_answer_behaves_as_it_always_did() -> None:
    body = {
        "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        "message": "throttled",
        "ThrottlingReasons": [{"reason": 5}, None],
    }
    sleeps: list[float] = []
    scan = RateLimitedScan(
        raw_client(body), "tbl", rate=100, segments=1, max_throttle_retries=2, sleep=sleeps.append
    )
    with pytest.raises(ClientError, match="ProvisionedThroughputExceeded"):
        scan.run(lambda segment, items: None)
    assert sleeps == [0.1, 0.2] and scan._result.throttled_by_cause == counts(unknown=2)


def test_a_scan_gives_up_on_a_hot_key_after_its_retries() -> None:
    client, stub = stubbed()
    for _ in range(3):
        add_throttle(stub, "scan", ["TableReadKeyRangeThroughputExceeded"])
    with stub, pytest.raises(ClientError, match="ProvisionedThroughputExceeded"):
        RateLimitedScan(
            client, "tbl", rate=10, segments=1, max_throttle_retries=2, sleep=lambda s: None
        ).run(lambda s, i: None)
    stub.assert_no_pending_responses()


class SegmentClient:
    """Scan answers per segment: segment 0's first page is a hot-key throttle; segment 1
    has three pages."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def scan(self, **request: Any) -> dict[str, Any]:
        segment = request["Segment"]
        self.calls.append(segment)
        if segment == 0 and self.calls.count(0) == 1:
            response = {
                "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "hot"},
                "ThrottlingReasons": reasons("TableReadKeyRangeThroughputExceeded"),
            }
            raise client_error(response, "Scan")
        n = self.calls.count(segment)
        last = None if segment == 0 or n == 3 else f"s{segment}-{n}"
        return page([f"s{segment}-{n}"], 1.0, last=last)


def test_a_hot_key_in_one_segment_holds_neither_the_others_nor_the_rate() -> None:
    client: Any = SegmentClient()  # stands in for the DynamoDB client: its scan only
    seen: list[str] = []
    lock = threading.Lock()
    others_done = threading.Event()

    def handle(segment: int, items: list[dict[str, Any]]) -> None:
        with lock:
            seen.extend(i["pk"]["S"] for i in items)
            if sum(k.startswith("s1-") for k in seen) == 3:
                others_done.set()

    def sleep(seconds: float) -> None:  # segment 0 backs off until segment 1 has finished
        assert others_done.wait(timeout=10), "segment 1 waited for segment 0's backoff"

    scan = RateLimitedScan(client, "tbl", rate=1_000, segments=2, sleep=sleep)
    result = scan.run(handle)
    assert sorted(seen) == ["s0-2", "s1-1", "s1-2", "s1-3"]
    assert scan.bucket.rate == 1_000 and result.segments_done == [0, 1]
    assert result.throttled_by_cause == counts(**{"key-range": 1})


# ---------------------------------------------------------------- the writer


KEYS = [f"k{i}" for i in range(30)]


def throttled_then_written(
    names: list[str] | None, code: str = "ProvisionedThroughputExceededException"
) -> Callable[[Stubber], None]:
    def calls(stub: Stubber) -> None:
        add_throttle(
            stub, "batch_write_item", names, code=code, expected_params=expected(KEYS[:25])
        )
        stub.add_response("batch_write_item", ok(25.0), expected_params=expected(KEYS[:25]))
        stub.add_response("batch_write_item", ok(5.0), expected_params=expected(KEYS[25:]))

    return calls


def test_a_hot_key_does_not_slow_the_writer_and_its_batch_goes_first() -> None:
    result, writer, events = write(
        throttled_then_written(["TableWriteKeyRangeThroughputExceeded"]),
        KEYS,
        rng=random.Random(3),
    )
    # the throttled batch is sent again before the items after it (expected_params above)
    assert result.written == 30 and result.failed == []
    assert result.rates == [40] and writer.bucket.rate == 40
    assert result.throttled == 1 and result.throttled_by_cause == counts(**{"key-range": 1})
    [event] = events
    assert 0.05 <= event["retry_in_seconds"] <= 0.1 and event["retry_in_seconds"] != 0.1
    assert event["cause"] == "key-range" and event["items"] == 25 and event["rate"] == 40


@pytest.mark.parametrize(
    ("names", "code", "cause"),
    [
        (
            ["TableWriteProvisionedThroughputExceeded"],
            "ProvisionedThroughputExceededException",
            "provisioned",
        ),
        (
            ["IndexWriteProvisionedThroughputExceeded", "TableWriteKeyRangeThroughputExceeded"],
            "ProvisionedThroughputExceededException",
            "provisioned",
        ),
        (["TableWriteAccountLimitExceeded"], "RequestLimitExceeded", "account-limit"),
        (["TableWriteMaxOnDemandThroughputExceeded"], "ThrottlingException", "max-on-demand"),
        (None, "ProvisionedThroughputExceededException", "unknown"),
    ],
)
def test_every_other_cause_halves_the_writers_rate_as_before(
    names: list[str] | None, code: str, cause: str
) -> None:
    result, writer, events = write(throttled_then_written(names, code), KEYS)
    assert result.written == 30 and result.rates == [40, 20.0] and writer.bucket.rate == 20
    assert backoffs(events) == [0.1]  # today's backoff, not jittered
    assert [e["cause"] for e in events] == [cause]
    assert result.throttled_by_cause == counts(**{cause: 1})


def test_unprocessed_items_carry_no_reasons_and_slow_the_writer_as_before() -> None:
    def calls(stub: Stubber) -> None:
        stub.add_response(
            "batch_write_item",
            {"UnprocessedItems": batch(["k1"]), "ConsumedCapacity": []},
            expected_params=expected(["k0", "k1"]),
        )
        stub.add_response("batch_write_item", ok(1.0), expected_params=expected(["k1"]))

    result, _, events = write(calls, ["k0", "k1"])
    assert result.written == 2 and result.rates == [40, 20.0] and backoffs(events) == [0.1]
    assert result.throttled_by_cause == counts(unknown=1)


def test_a_hot_key_leaves_the_writers_growth_on_schedule() -> None:
    """Each backoff lasts 40 s here and a step is 60 s: after two throttles at 0 s and 40 s,
    the writer grows at 80 s unless a throttle made growth wait."""

    def calls(names: list[str]) -> Callable[[Stubber], None]:
        def fill(stub: Stubber) -> None:
            for _ in range(2):
                add_throttle(stub, "batch_write_item", names, expected_params=expected(["k0"]))
            stub.add_response("batch_write_item", ok(1.0), expected_params=expected(["k0"]))

        return fill

    hot, *_ = write(
        calls(["TableWriteKeyRangeThroughputExceeded"]),
        ["k0"],
        clock=FakeClock(40),
        step_seconds=60,
    )
    cold, *_ = write(
        calls(["TableWriteProvisionedThroughputExceeded"]),
        ["k0"],
        clock=FakeClock(40),
        step_seconds=60,
    )
    assert hot.rates == [40, 80.0]
    assert cold.rates == [40, 20.0, 10.0]


def test_a_hot_key_never_loses_an_item_and_its_retries_are_limited() -> None:
    def calls(stub: Stubber) -> None:
        for _ in range(3):
            add_throttle(
                stub,
                "batch_write_item",
                ["TableWriteKeyRangeThroughputExceeded"],
                expected_params=expected(KEYS[:25]),
            )
        stub.add_response("batch_write_item", ok(5.0), expected_params=expected(KEYS[25:]))

    result, _, _ = write(calls, KEYS, max_attempts=3)
    assert result.written == 5
    assert [f.item["pk"] for f in result.failed] == KEYS[:25]
    assert {f.reason for f in result.failed} == {"still unprocessed after 3 attempts"}
    assert result.throttled_by_cause == counts(**{"key-range": 3}) and result.rates == [40]


def test_a_writer_with_malformed_reasons_from_a_real_answer_slows_down_as_before() -> None:
    body = {
        "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        "message": "throttled",
        "ThrottlingReasons": [{"reason": 5}],
    }
    clock = FakeClock()
    writer = SlowStartWriter(
        raw_client(body),
        "tbl",
        start_rate=10,
        max_rate=100,
        max_attempts=2,
        clock=clock,
        sleep=clock.sleep,
    )
    writer.bucket.set_rate(40)
    result = writer.write([{"pk": "k0"}])
    assert result.rates == [40, 20.0, 10.0] and [f.item for f in result.failed] == [{"pk": "k0"}]
    assert result.throttled_by_cause == counts(unknown=2)


def test_a_jitter_source_that_is_not_a_random_is_refused() -> None:
    client, _ = stubbed()
    with pytest.raises(ScanError, match=r"rng: got 7; expected a random.Random, or None"):
        RateLimitedScan(client, "tbl", rate=10, rng=7)  # type: ignore[arg-type]
    with pytest.raises(PacingError, match=r"rng: got 'seed'; expected a random.Random, or None"):
        SlowStartWriter(client, "tbl", start_rate=1, max_rate=1, rng="seed")  # type: ignore[arg-type]
