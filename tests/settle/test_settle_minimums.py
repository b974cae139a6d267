"""The settle step on an Update never lowers a live dimension below its scalable target's
MinCapacity now (a capacity request's hold, or a scheduled action, may have raised it above
the template's), and leaves a dimension at its mark where that minimum is not known. The
scalable targets are a moto server's Application Auto Scaling (a Stubber for the errors it
cannot produce); DynamoDB's answers are stubbed as in the other settle tests."""

from __future__ import annotations

import logging
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.aws.clients import call_bound
from ddb_capacity_runtime.aws.settle_clients import (
    settle_autoscaling_client,
    settle_cloudwatch_client,
)
from tests.support.settle_live import (
    LOWERED,
    busy,
    described,
    left_events,
    left_everywhere,
    lowered,
    register,
    settle,
    table_name,
    update_event,
)
from tests.support.settle_live import (
    autoscaling as autoscaling,  # noqa: F401 (fixture)
)
from tests.support.settle_live import (
    cloudwatch as cloudwatch,  # noqa: F401 (fixture)
)


def listings(client: Any) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.application-autoscaling.DescribeScalableTargets",
        lambda params, **_: calls.append(params),
    )
    return calls


@pytest.mark.parametrize(
    ("held", "read_after"),
    [(900, 900), (2000, 2000), (2500, 2000)],
    ids=["held-above-its-need", "held-at-its-mark", "held-above-its-mark"],
)
def test_an_update_never_lowers_a_live_dimension_below_its_minimum_now(
    cloudwatch: Any,
    autoscaling: Any,
    caplog: pytest.LogCaptureFixture,
    held: int,
    read_after: int,
) -> None:
    # GIVEN a busy live table whose read needs 800 for its traffic, but whose scalable
    # target's MinCapacity a batch job's capacity request raised to ``held`` (the template
    # says 100), its other targets at their template's minimums
    name = table_name()
    busy(cloudwatch, name)
    register(autoscaling, name, {"read": held})
    asked = listings(autoscaling)
    # WHEN the settle step's Update runs (the deploy set the read to its new mark, 2,000)
    with caplog.at_level(logging.INFO):
        answer = settle(
            update_event(name), described(name), lowered(name, read_after), cloudwatch, autoscaling
        )
    # THEN the read is lowered no further than its minimum now (at or above the mark: left
    # at its mark), the others to their needs, in one UpdateTable
    assert answer == LOWERED
    assert left_events(caplog) == []
    # AND the settle event says each dimension's need and minimum now
    (event,) = [vars(r) for r in caplog.records if r.getMessage() == "settle"]
    by_dimension = {(t["index"], t["dimension"]): t for t in event["traffic"]}
    assert by_dimension[(None, "read")]["need"] == 800
    assert by_dimension[(None, "read")]["min_capacity"] == held
    assert by_dimension[("bySku", "read")]["min_capacity"] == 1
    # AND the minimums were read in one DescribeScalableTargets of the table and its GSI
    # (those of what was lowered, and of what is still at its mark, are read again in one
    # at the later call)
    listing = {
        "ServiceNamespace": "dynamodb",
        "ResourceIds": [f"table/{name}", f"table/{name}/index/bySku"],
    }
    assert asked == [listing, listing]


def stubbed_error(code: str) -> Any:
    client = boto3.client(
        "application-autoscaling",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    stubber = Stubber(client)
    stubber.add_client_error("describe_scalable_targets", code, "no")
    stubber.activate()
    return client


def unsound_minimum(client: Any, value: object) -> Any:
    """``client``, whose DescribeScalableTargets answers carry MinCapacity ``value``."""

    def tamper(parsed: dict[str, Any], **_: Any) -> None:
        for target in parsed.get("ScalableTargets", []):
            target["MinCapacity"] = value

    client.meta.events.register(
        "after-call.application-autoscaling.DescribeScalableTargets", tamper
    )
    return client


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("denied", "DescribeScalableTargets: AccessDeniedException: no"),
        ("throttled", "DescribeScalableTargets: ThrottlingException: no"),
        ("no-target", "Application Auto Scaling lists no scalable target of table/"),
        ("min-null", "DescribeScalableTargets: UnsoundListing"),
        ("min-zero", "its scalable target's MinCapacity is 0, not a whole number"),
        ("min-above-quota", "its scalable target's MinCapacity is 2000000, not a whole number"),
    ],
)
def test_an_update_leaves_a_live_table_whose_minimum_is_unknown_at_its_mark(
    cloudwatch: Any,
    autoscaling: Any,
    caplog: pytest.LogCaptureFixture,
    case: str,
    reason: str,
) -> None:
    # GIVEN a busy live table whose scalable targets' minimums cannot be known: the
    # DescribeScalableTargets call is denied or throttled, no target is listed, or the
    # answer's MinCapacity is not a whole number of units DynamoDB takes
    name = table_name()
    busy(cloudwatch, name)
    reader = autoscaling
    if case in ("denied", "throttled"):
        reader = stubbed_error(
            "AccessDeniedException" if case == "denied" else "ThrottlingException"
        )
    elif case == "min-null":
        register(autoscaling, name)
        reader = unsound_minimum(autoscaling, None)
    elif case == "min-zero":
        register(autoscaling, name)
        reader = unsound_minimum(autoscaling, 0)
    elif case == "min-above-quota":
        register(autoscaling, name)
        reader = unsound_minimum(autoscaling, 2_000_000)
    # WHEN the settle step's Update runs
    with caplog.at_level(logging.INFO):
        answer = settle(update_event(name), described(name), None, cloudwatch, reader)
    # THEN no UpdateTable is sent, and the step completes: the deploy goes on
    assert answer == {"IsComplete": True, "Data": {"Settled": "false"}}
    # AND each dimension says it was left at its mark, and why
    left = left_everywhere(caplog)
    assert all(reason in e["reason"] for e in left), [e["reason"] for e in left]


def test_an_update_leaves_only_the_dimension_without_a_target_and_lowers_the_others(
    cloudwatch: Any, autoscaling: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a busy live table whose GSI's read has no scalable target (deregistered), its
    # table's at their template's minimums
    name = table_name()
    busy(cloudwatch, name)
    register(autoscaling, name)
    autoscaling.deregister_scalable_target(
        ServiceNamespace="dynamodb",
        ResourceId=f"table/{name}/index/bySku",
        ScalableDimension="dynamodb:index:ReadCapacityUnits",
    )
    # WHEN the settle step's Update runs
    with caplog.at_level(logging.INFO):
        answer = settle(
            update_event(name),
            described(name),
            lowered(name, 800, gsi_read=None),
            cloudwatch,
            autoscaling,
        )
    # THEN the table's dimensions are lowered to their needs; the GSI's read keeps its mark
    # (its one UpdateTable leaves the GSI out)
    assert answer == LOWERED
    (left,) = left_events(caplog)
    assert (left["index"], left["dimension"]) == ("bySku", "read")


def test_the_settle_reads_of_a_live_table_fit_the_function_s_shortest_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the traffic's read and the minimums' read, each at its worst (every attempt timing
    # out), take 15 and 11 seconds (with the hold store's, within the settle function's
    # shortest timeout: test_settle_holds)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    bounds = [call_bound(make()) for make in (settle_cloudwatch_client, settle_autoscaling_client)]
    assert bounds == [15.0, 11.0]
