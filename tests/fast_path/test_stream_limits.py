"""The stream reader's bounds hold for every record Lambda can deliver: a legal item of
400 KB whose record is 3.3 MB of JSON is measured, a record with an unreadable time costs
only itself, a record as old as the event source keeps one still finds its window, and a
GSI the construct does not serve is answered as such (tables in moto, the state store in
dynalite)."""

from __future__ import annotations

import json
import math
import time
from typing import Any

import pytest

from ddb_capacity_runtime.aws import stream_counts
from ddb_capacity_runtime.aws.stream_counts import Added
from ddb_capacity_runtime.core.stream import WINDOW_SECONDS
from ddb_capacity_runtime.fast_path.stream_reader import read_stream
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
from tests.support.surge_server import SETTINGS, counted, served
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (fixture)
from tests.support.surge_server import world as world  # noqa: F401 (fixture)

FLAGS = 200_000


def record_of(arn: str, at: float, image: dict[str, Any], n: int = 0) -> dict[str, Any]:
    """A stream record of a put of ``image``, as Lambda hands it to a function."""
    return {
        "eventID": f"e{n}",
        "eventName": "INSERT",
        "eventSourceARN": arn,
        "dynamodb": {
            "ApproximateCreationDateTime": at,
            "Keys": {"pk": image["pk"]},
            "NewImage": image,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
            "SizeBytes": 1,
        },
    }


def test_a_legal_item_of_400_kb_is_measured_whatever_its_json(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN an item of 200,000 booleans (DynamoDB counts 2 bytes each in a list): 400 KB, a
    # legal item, whose record is some 3.3 MB of JSON
    name = streamed_table(world, "Booleans", write=1_000)
    arn, _ = stream_records(world, name)
    start, at = settled(time.time())
    image = {"pk": {"S": "k1"}, "flags": {"L": [{"BOOL": True}] * FLAGS}}
    event = {"Records": [record_of(arn, at, image)]}
    assert len(json.dumps(event)) > 3_000_000
    # WHEN the reader takes it
    read(world, event, served(name))
    # THEN its units are counted (DynamoDB's size: names, 3 for a list, 1 + 1 a boolean)
    size = len("pk") + len("k1") + len("flags") + 3 + FLAGS * (1 + 1)
    assert size <= 400 * 1024
    assert window_sum(world, name, "table:write", start) == math.ceil(size / 1024)
    assert counted(capsys.readouterr().out, "StreamRecordsMalformed") == 0


def test_an_unreadable_time_costs_only_its_record(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a batch of 12 puts, one of them with a 400-digit ApproximateCreationDateTime
    name = streamed_table(world, "Digits", write=1_000)
    put_items(world, name, 12, user=False)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    event = lambda_event(arn, records, at)
    event["Records"][5]["dynamodb"]["ApproximateCreationDateTime"] = int("9" * 400)
    # WHEN the reader takes it
    answer = read(world, event, served(name))
    # THEN nothing fails: the record is counted at the batch's latest time, with the rest
    assert {r["status"] for r in answer["dimensions"]} == {"none"}
    assert window_sum(world, name, "table:write", start) == 12 * 2
    assert counted(capsys.readouterr().out, "StreamFailed") == 0


def test_a_record_as_old_as_the_event_source_keeps_one_is_counted(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a window other shards are counting (its first second), and a lagging shard's
    # records 58 s old: their window is six windows back
    name = streamed_table(world, "Lagging", write=1_000)
    put_items(world, name, 3, user=False)
    arn, records = stream_records(world, name)
    newest = int(time.time()) // WINDOW_SECONDS * WINDOW_SECONDS
    store, ddb = world.store.name, world.store_ddb
    assert stream_counts.add(ddb, store, name, "table:write", newest, 50) == Added(50)
    old = newest + 1.0 - 58.0
    # WHEN the reader takes them, a second into the newest window
    read_stream(
        lambda_event(arn, records, old),
        served(name),
        SETTINGS,
        clients=world.clients,
        store=world.store,
        clock=lambda: newest + 1.0,
    )
    # THEN they are counted in their own window, and the newest window keeps its sum
    assert window_sum(world, name, "table:write", newest - 6 * WINDOW_SECONDS) == 3 * 2
    assert window_sum(world, name, "table:write", newest) == 50
    assert counted(capsys.readouterr().out, "StreamRecordsLate") == 0


def test_an_index_not_served_is_answered_so_and_never_counted_or_raised(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a table whose GSI byUser takes every put, the construct serving the table alone
    name = streamed_table(world, "IndexNotServed", gsi_write=10)
    put_items(world, name, 30)
    arn, records = stream_records(world, name)
    start, at = settled(time.time())
    # WHEN the reader takes the puts
    answer = read(world, lambda_event(arn, records, at), served(name))
    # THEN the index is answered as not served, with its units, and left alone
    (row,) = [r for r in answer["dimensions"] if r.get("index") == "byUser"]
    assert (row["status"], row["units"]) == ("not served", 60.0)
    assert window_sum(world, name, "index/byUser:write", start) is None
    assert world.throughput(name, "byUser")[1] == 10
