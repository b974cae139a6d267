"""The fast path's two rules at run time, against real parts (tables, targets and CloudWatch
in a moto server, the state store in dynalite): the burst-bucket rule (a new surge that no
throttle calls for starts only when the bucket would empty before a raise lands; the
estimate kept per dimension and signal in the combiner item) and the trusted demand (a
surge the default cap cuts short is decided again with what CloudWatch shows served; the
stream's own rate is trusted). botocore's Stubber only for an error moto never returns.

The expected levels are worked out here from the documented rules, not from the code's own
functions: the bucket holds at most 150 s of the capacity; at demand D on capacity P a
surge is due once it holds (D - P) x (the next look + 10 s within the warm throughput, or
+ 300 s above it) or less; the default cap is 4x the start, at least 100 units over it,
and 4x the demand DynamoDB measured served."""

from __future__ import annotations

import math
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_runtime.aws import combiner
from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.hold_table import Context
from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.bucket import Bucket
from ddb_capacity_runtime.fast_path.corroboration import Signal
from ddb_capacity_runtime.fast_path.surge_raise import keep_bucket
from ddb_capacity_runtime.fast_path.surge_settings import BUCKET_WRITE_SECONDS, HOOK, SurgeSettings
from tests.support.moto_world import World
from tests.support.surge_runtime_rules import (
    EVERY,
    Clock,
    consumed,
    hook_report,
    metric_calls,
    plain_table,
    put_bucket,
    stored,
    stored_bucket,
    stream_look,
    stream_table,
    unreachable_cloudwatch,
    warm_table,
)
from tests.support.surge_server import counted, store_reads, surge_of
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)

#: The bucket's assumed size, in seconds of the provisioned capacity (half of DynamoDB's 300).
ASSUMED_SECONDS = 150
#: How long a raise takes to land: within the warm throughput, and above it.
WARM_LANDS, COLD_LANDS = 10, 300


def untouched(world: World, name: str) -> bool:
    """No surge, no raise: the table and its target as made."""
    return (
        world.throughput(name) == (50, 100)
        and world.target_min(name, "write") == 100
        and surge_of(world, name) is None
    )


# ------------------------------------------------------------------ the bucket rule: the hook


def test_noise_the_bucket_absorbs_raises_nothing_and_sustained_demand_surges(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a table at 100 write units, pre-warmed to 1,000, whose one process reports
    # every 5 s, at 10 units/s for 200 s: the estimate fills by 90 a second to its most,
    # 150 s x 100 = 15,000
    name = warm_table(world, "Noise")
    clock = Clock(world.now.timestamp())
    for _ in range(40):
        assert hook_report(world, name, clock, 10)["status"] == "none"
        clock.tick(EVERY)
    full = ASSUMED_SECONDS * 100
    kept = stored_bucket(world, name, clock())
    assert kept is not None and kept.level == full  # stored, not only carried
    # WHEN bursts at 1.2x and 1.5x come, 5 s each, with quiet reports between: within the
    # warm throughput a raise lands 15 s after a look (5 + 10), and the bucket holds far
    # more than (150 - 100) x 15 = 750
    for burst in (120, 150, 130, 150, 120):
        assert hook_report(world, name, clock, burst)["status"] == "none"
        clock.tick(EVERY)
        assert hook_report(world, name, clock, 10)["status"] == "none"
        clock.tick(EVERY)
    # THEN nothing is raised, and the estimate is stored, lower by what the bursts took
    assert untouched(world, name)
    drained = stored_bucket(world, name, clock())
    assert drained is not None and 10_000 < drained.level < full
    # WHEN the quiet reports refill it, and then 300 units/s comes and stays: each look
    # takes (300 - 100) x 5 = 1,000, and a surge is due once the bucket holds
    # (300 - 100) x (5 + 10) = 3,000 or less: at the 12th report (15,000 - 12 x 1,000)
    for _ in range(12):
        hook_report(world, name, clock, 10)
        clock.tick(EVERY)
    assert stored_bucket(world, name, clock()).level == full  # type: ignore[union-attr]
    rows = []
    for _ in range(12):
        rows.append(hook_report(world, name, clock, 300))
        clock.tick(EVERY)
    # THEN the first 11 absorb it, and the 12th surges, to 300 / 0.7
    assert [r["status"] for r in rows[:11]] == ["none"] * 11
    assert (rows[11]["status"], rows[11]["to"]) == ("applied", math.ceil(300 / 0.7))
    assert world.target_min(name, "write") == math.ceil(300 / 0.7)
    out = capsys.readouterr().out
    assert counted(out, "SurgesApplied") == 1
    assert counted(out, "BucketFailed") == 0


@pytest.mark.parametrize(
    "kept",
    [None, {"S": "garbage"}, {"S": "999999999:1:100:5.0:0:0"}, {"N": "15000"}],
    ids=["none", "malformed", "over-its-bounds", "not-a-string"],
)
def test_with_no_estimate_a_demand_over_the_capacity_surges_at_once(
    world: World, kept: dict[str, Any] | None, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a table at 100 write units whose estimate is not known: none stored, or a
    # stored value that is not one (untrusted: it reads as empty)
    name = warm_table(world, "Unknown")
    if kept is not None:
        put_bucket(world, name, kept)
    clock = Clock(world.now.timestamp())
    # WHEN one report says 150 units/s
    row = hook_report(world, name, clock, 150)
    # THEN it surges at once, as without the rule, to 150 / 0.7
    assert (row["status"], row["to"]) == ("applied", math.ceil(150 / 0.7))
    # AND the value that was not one is counted, and replaced with the estimate: empty
    assert counted(capsys.readouterr().out, "BucketFailed") == (0 if kept is None else 1)
    now = stored_bucket(world, name, clock())
    assert now is not None and (now.level, now.at, now.provisioned) == (0, clock(), 100)


@pytest.mark.parametrize("cause", ["provisioned", "unknown"])
def test_throttles_reported_surge_at_once_whatever_the_estimate(world: World, cause: str) -> None:
    # GIVEN a table at 100 write units whose stored estimate is full (15,000)
    name = warm_table(world, "Throttled")
    clock = Clock(world.now.timestamp())
    put_bucket(world, name, {"S": Bucket(15_000, clock() - EVERY, 100, 10.0).text()})
    # WHEN a report says 50 units/s consumed with provisioned-throughput throttles, or
    # throttles of no known cause (which may be the capacity's: never taken for less)
    row = hook_report(world, name, clock, 50, throttles={cause: 30})
    # THEN it surges at once: its consumption (50 of 100) says it makes half the traffic,
    # so its demand of 50 is taken as 100, and the surge is 100 / 0.7 (and a unit more
    # than provisioned at least)
    # (throttles of no known cause: a unit more, their demand not known)
    surge = max(math.ceil(100 / 0.7), 101) if cause == "provisioned" else 101
    assert (row["status"], row["to"]) == ("applied", surge)
    # AND the estimate is emptied, and set aside for a day: it held 10 s of the capacity
    # or more when throttles came, so it was wrong
    kept = stored_bucket(world, name, clock())
    assert kept is not None and kept.level == 0 and kept.until >= clock() + 24 * 3600 - 1


def test_the_estimate_is_written_at_most_every_few_seconds(world: World) -> None:
    # GIVEN a table whose process reports at 50 units/s
    name = warm_table(world, "Cadence")
    clock = Clock(world.now.timestamp())
    start = clock()
    hook_report(world, name, clock, 50)
    assert stored_bucket(world, name, clock()).at == start  # type: ignore[union-attr]
    # WHEN reports come 1 s apart: the estimate is advanced at each, written at most once
    # within BUCKET_WRITE_SECONDS
    for seconds in range(1, int(BUCKET_WRITE_SECONDS)):
        clock.t = start + seconds
        hook_report(world, name, clock, 50)
        assert stored_bucket(world, name, clock()).at == start  # type: ignore[union-attr]
    clock.t = start + BUCKET_WRITE_SECONDS
    hook_report(world, name, clock, 50)
    # THEN the write after the interval carries the estimate from the one stored: 50 a
    # second for 5 s
    kept = stored_bucket(world, name, clock())
    assert kept is not None and (kept.at, kept.level) == (clock(), 50 * BUCKET_WRITE_SECONDS)


def test_a_lost_write_of_the_estimate_is_skipped_and_a_failed_one_counted(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a dimension's item as one look read it, and a later estimate another look
    # wrote meanwhile
    name = warm_table(world, "Race")
    clock = Clock(world.now.timestamp())
    key = combiner.combiner_key(name, "table:write")
    read = Bucket(1_000, clock() - 10, 100, 50.0).text()
    put_bucket(world, name, {"S": read})
    found = combiner.read(world.store_ddb, world.store.name, key, clock())
    later = Bucket(2_000, clock() - 2, 100, 50.0).text()
    put_bucket(world, name, {"S": later})
    ctx = Context(world.clients, clock, lambda _: None, 0)
    # WHEN the first look writes its own
    bucket = keep_bucket(ctx, world.store, key, found, Signal(HOOK, EVERY), (100, 50.0, False))
    # THEN it is skipped: the later one stays, nothing is counted, and the look still has
    # its estimate (1,000 + 10 s x 50)
    assert stored(world, name) == {"S": later}
    assert bucket.level == 1_500
    assert counted(capsys.readouterr().out, "BucketFailed") == 0
    # WHEN the state store fails the write (an error moto never returns)
    failing = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (never sent)
    )
    store = HoldStore(failing, world.store.name)
    with Stubber(failing) as stub:
        stub.add_client_error("update_item", "InternalServerError", http_status_code=500)
        unknown = combiner.Entries()
        bucket = keep_bucket(ctx, store, key, unknown, Signal(HOOK, EVERY), (100, 150.0, False))
        stub.assert_no_pending_responses()
    # THEN it is counted, and the look goes on with the estimate: unknown, so empty
    assert counted(capsys.readouterr().out, "BucketFailed") == 1
    assert (bucket.level, bucket.at) == (0, clock())


# ------------------------------------------------------------------ the bucket rule: the stream


def test_a_noisy_stream_raises_nothing_once_its_estimate_fills(world: World) -> None:
    # GIVEN a table at 100 write units whose stream shows 50 units/s for 310 s: its
    # estimate, empty at the first window, fills by 50 a second to 15,000 (the stream's
    # own, beside the hook's)
    name, arn = stream_table(world, "StreamNoise")
    clock = Clock(world.now.timestamp() // 10 * 10)
    for _ in range(31):
        assert stream_look(world, name, arn, clock, 50)["status"] == "none"
    kept = stored_bucket(world, name, clock(), "stream")
    assert kept is not None and kept.level == ASSUMED_SECONDS * 100
    assert stored(world, name, "hook") is None
    # WHEN windows at 1.2x and 1.15x come: above the warm throughput (100) a raise lands
    # 310 s after a look (10 + 300), and the bucket holds more than (120 - 100) x 310 = 6,200
    rows = [stream_look(world, name, arn, clock, n) for n in (120, 50, 50, 115, 50)]
    # THEN nothing is raised
    assert [r["status"] for r in rows] == ["none"] * 5
    assert [r["rate"] for r in rows] == [120.0, 50.0, 50.0, 115.0, 50.0]
    assert untouched(world, name)


def test_a_stream_pinned_at_the_capacity_surges_whatever_its_estimate(world: World) -> None:
    # GIVEN a table at 100 write units whose stream's estimate is full
    name, arn = stream_table(world, "StreamPinned")
    clock = Clock(world.now.timestamp() // 10 * 10)
    full = Bucket(ASSUMED_SECONDS * 100, clock() - 10, 100, 50.0).text()
    put_bucket(world, name, {"S": full}, "stream")
    # WHEN it serves 101 units/s (within 2 % of what is provisioned: an empty bucket serves
    # what is provisioned and refuses the rest, which the stream cannot see)
    first = stream_look(world, name, arn, clock, 101)
    # THEN the first such window is absorbed (1 x 310 is far below the estimate), the next,
    # 10 s later, reads as refusals and surges, to 101 / 0.7
    assert first["status"] == "none"
    second = stream_look(world, name, arn, clock, 101)
    assert (second["status"], second["to"]) == ("applied", math.ceil(101 / 0.7))
    assert world.target_min(name, "write") == math.ceil(101 / 0.7)


# ------------------------------------------------------------------ corroboration


def test_a_crowd_cloudwatch_saw_served_gets_past_four_times_its_start(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a table at 100 write units (warm throughput 100) that CloudWatch shows served
    # 400 units/s in one of its last minutes (its bucket, and a raise under way)
    name = plain_table(world, "Crowd")
    consumed(world, name, 150, 4)
    consumed(world, name, 400, 2)
    calls = metric_calls(world)
    clock = Clock(world.now.timestamp() + 30)
    # WHEN a report asks for 2,000 units/s (2,000 / 0.7 = 2,858 at the target)
    row = hook_report(world, name, clock, 2_000)
    # THEN the cap counts from 400: 4 x 400 = 1,600 (1,500 units over the start), within
    # the default budget (twice that: 3,000 units)
    assert (row["status"], row["to"]) == ("applied", 1_600)
    assert world.target_min(name, "write") == 1_600
    hold = surge_of(world, name)
    assert hold is not None and (hold.baseline, hold.units) == (100, 1_500)
    out = capsys.readouterr().out
    assert (counted(out, "SurgesCorroborated"), counted(out, "CorroborationFailed")) == (1, 0)
    assert calls() == 1
    # WHEN reports keep asking within the minute: the surge is renewed, CloudWatch is not
    # read again (its sums are a minute's)
    for _ in range(3):
        clock.tick(EVERY)
        assert hook_report(world, name, clock, 2_000)["status"] == "renewed"
    assert calls() == 1
    # AND a minute on it is read again: the same 400 widens nothing more
    clock.tick(60)
    again = hook_report(world, name, clock, 2_000)
    assert (again["status"], again["to"], calls()) == ("renewed", 1_600, 2)
    assert counted(capsys.readouterr().out, "SurgesCorroborated") == 0


@pytest.mark.parametrize(("write", "bound"), [(100, 4 * 100), (20, 20 + 100)])
def test_a_lone_report_keeps_todays_bound(
    world: World, write: int, bound: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a quiet table: CloudWatch shows nothing served in the minutes it delivered
    name = plain_table(world, f"Liar{write}", write)
    store_reads(world, range(-8, 5))
    clock = Clock(world.now.timestamp() + 30)
    # WHEN one process says 2,000 units/s
    row = hook_report(world, name, clock, 2_000)
    # THEN the surge stops at today's bound: 4x the start, or 100 units over it
    assert (row["status"], row["to"]) == ("applied", bound)
    out = capsys.readouterr().out
    assert (counted(out, "SurgesCorroborated"), counted(out, "CorroborationFailed")) == (0, 0)


def test_a_gsi_is_corroborated_by_its_own_metric(world: World) -> None:
    # GIVEN a table whose GSI is at 100 write units under a 70 % target: CloudWatch shows
    # the GSI served 300 units/s, and the table itself 1,000
    name = world.table("Indexed", 50, 100, gsi=(50, 100), tagged=False)
    world.target(name, "write", 100, 10_000, index="byUser")
    consumed(world, name, 300, 2, index="byUser")
    consumed(world, name, 1_000, 2)
    clock = Clock(world.now.timestamp() + 30)
    # WHEN a report asks 2,000 units/s of the GSI
    row = hook_report(world, name, clock, 2_000, index="byUser")
    # THEN the cap counts from the GSI's own 300: 4 x 300
    assert (row["status"], row["to"]) == ("applied", 1_200)
    assert world.target_min(name, "write", index="byUser") == 1_200


def test_a_cloudwatch_that_fails_is_counted_and_the_capped_surge_stands(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN CloudWatch out of reach (no server where its endpoint points)
    name = plain_table(world, "NoCloudWatch")
    world.clients = Clients(world.ddb, world.aas, unreachable_cloudwatch(), world.clients.tagging)
    clock = Clock(world.now.timestamp() + 30)
    # WHEN a report asks for 2,000 units/s
    row = hook_report(world, name, clock, 2_000)
    # THEN the capped surge is applied, and the failure counted
    assert (row["status"], row["to"]) == ("applied", 400)
    out = capsys.readouterr().out
    assert (counted(out, "CorroborationFailed"), counted(out, "SurgesCorroborated")) == (1, 0)
    assert counted(out, "SurgesApplied") == 1


def test_an_absolute_cap_is_never_widened_nor_cloudwatch_read(world: World) -> None:
    name = plain_table(world, "Absolute")
    consumed(world, name, 400, 2)
    calls = metric_calls(world)
    clock = Clock(world.now.timestamp() + 30)
    row = hook_report(world, name, clock, 2_000, settings=SurgeSettings(cap=200))
    assert (row["status"], row["to"], calls()) == ("applied", 300, 0)


def test_a_widened_surge_is_never_cut_by_a_later_read_that_fails(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a surge CloudWatch widened to 1,600 (4 x the 400 units/s it showed served)
    name = plain_table(world, "KeptWide")
    consumed(world, name, 400, 2)
    clock = Clock(world.now.timestamp() + 30)
    assert hook_report(world, name, clock, 2_000)["to"] == 1_600
    # WHEN, a minute on, CloudWatch is out of reach while the reports still ask for more
    world.clients = Clients(world.ddb, world.aas, unreachable_cloudwatch(), world.clients.tagging)
    clock.tick(65)
    row = hook_report(world, name, clock, 2_000)
    # THEN the surge is renewed at its level: the cap without the trusted demand (400)
    # never cuts what it holds
    assert (row["status"], row["to"]) == ("renewed", 1_600)
    hold = surge_of(world, name)
    assert hold is not None and hold.units == 1_500
    assert world.target_min(name, "write") == 1_600
    assert counted(capsys.readouterr().out, "CorroborationFailed") == 1


def test_the_streams_own_rate_widens_the_cap_with_no_cloudwatch_call(world: World) -> None:
    # GIVEN a table at 100 write units whose stream shows 400 units/s served (its first
    # window: the estimate is not known, so empty)
    name, arn = stream_table(world, "StreamCrowd")
    calls = metric_calls(world)
    clock = Clock(world.now.timestamp() // 10 * 10)
    row = stream_look(world, name, arn, clock, 400)
    # THEN the surge reaches the rule's level, 400 / 0.7 = 572, past 4 x 100: the cap
    # counts from the 400 the stream saw served (4 x 400), and CloudWatch is not read
    assert (row["status"], row["to"], row["rate"]) == ("applied", math.ceil(400 / 0.7), 400.0)
    assert calls() == 0
