"""The stream reader serves its own partition, Region and account only: a record whose
``eventSourceARN`` names a served table's name in another account, Region or partition is
another table's, counted as not served and never raised on."""

from __future__ import annotations

import time

import pytest

from ddb_capacity_runtime.fast_path.stream_reader import home_of
from tests.support.moto_world import World
from tests.support.stream_reader import (
    lambda_event,
    put_items,
    read,
    settled,
    stream_records,
    streamed_table,
    window_sum,
)
from tests.support.surge_server import counted, served, surge_of
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)

HOME = ("aws", "us-east-1", "123456789012")


def test_the_home_is_the_functions_own_arn() -> None:
    arn = "arn:aws:lambda:eu-west-1:210987654321:function:Stack-Reader-abc"
    assert home_of(arn) == ("aws", "eu-west-1", "210987654321")
    assert home_of("arn:aws-cn:lambda:cn-north-1:210987654321:function:r") == (
        "aws-cn",
        "cn-north-1",
        "210987654321",
    )
    for junk in (None, 7, "", "arn:aws:s3:::bucket", "arn:aws:lambda:eu-west-1:1234:function:r"):
        assert home_of(junk) is None


@pytest.mark.parametrize(
    ("where", "elsewhere"),
    [
        ("another account", (":123456789012:", ":999999999999:")),
        ("another Region", (":us-east-1:", ":eu-west-1:")),
        ("another partition", ("arn:aws:", "arn:aws-cn:")),
    ],
)
def test_a_served_tables_name_elsewhere_is_not_served(
    world: World, capsys: pytest.CaptureFixture[str], where: str, elsewhere: tuple[str, str]
) -> None:
    # GIVEN a served table at 10 write units, and 60 units of records in one window
    name = streamed_table(world, "Home")
    put_items(world, name, 30, user=False)
    arn, records = stream_records(world, name)
    assert arn.startswith("arn:aws:dynamodb:us-east-1:123456789012:table/")
    start, at = settled(time.time())
    # WHEN they come from a stream of the same name elsewhere
    forged = arn.replace(*elsewhere)
    answer = read(world, lambda_event(forged, records, at), served(name), home=HOME)
    # THEN nothing is counted for the table nor raised, and every record is not served
    assert answer == {"ok": True, "dimensions": []}, where
    assert counted(capsys.readouterr().out, "StreamRecordsNotServed") == 30
    assert window_sum(world, name, "table:write", start) is None
    assert world.target_min(name, "write") == 10 and surge_of(world, name) is None
    # AND the same records from the home stream raise it
    home = read(world, lambda_event(arn, records, at), served(name), home=HOME)
    assert [(r["status"], r.get("to")) for r in home["dimensions"]] == [("applied", 18)]


def test_a_batch_delivered_again_is_counted_once(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a table at 10 write units and a batch of 60 units in one window (12/s: due)
    name = streamed_table(world, "Replay")
    put_items(world, name, 30, user=False)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    event = lambda_event(arn, records, at)
    first = read(world, event, served(name))
    assert [(r["status"], r.get("to")) for r in first["dimensions"]] == [("applied", 18)]
    assert window_sum(world, name, "table:write", start) == 60
    # WHEN Lambda delivers the same batch again (a timeout: at least once)
    again = read(world, event, served(name))
    # THEN its units are not added again, and nothing is raised further
    assert window_sum(world, name, "table:write", start) == 60
    assert counted(capsys.readouterr().out, "StreamUnitsReplayed") == 60
    assert [r.get("to") for r in again["dimensions"]] == [None]
    assert world.target_min(name, "write") == 18
    # AND another batch of the same window still adds: the first half alone is a new one
    half = lambda_event(arn, records[:15], at)
    read(world, half, served(name))
    assert window_sum(world, name, "table:write", start) == 90


def test_forged_records_in_a_batch_leave_the_home_records_beside_them_counted(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN one batch with two served tables' records from home, and records naming the
    # first table from another account
    first, second = streamed_table(world, "MixedA"), streamed_table(world, "MixedB")
    put_items(world, first, 30, user=False)
    put_items(world, second, 30, user=False)
    _, at = settled(time.time())
    events = [lambda_event(*stream_records(world, name), at) for name in (first, second)]
    forged = [
        {**r, "eventSourceARN": r["eventSourceARN"].replace(":123456789012:", ":999999999999:")}
        for r in events[0]["Records"][:10]
    ]
    batch = {"Records": events[0]["Records"] + forged + events[1]["Records"]}
    # WHEN the reader takes it
    answer = read(world, batch, served(first, second), home=HOME)
    # THEN both tables are raised on their own records alone, and only the forged ones are
    # not served
    rows = {r["table"]: (r["status"], r.get("to")) for r in answer["dimensions"]}
    assert rows == {first: ("applied", 18), second: ("applied", 18)}
    assert counted(capsys.readouterr().out, "StreamRecordsNotServed") == 10
