"""The table's stream as a write signal: the write units a batch of stream records stands
for, per table and GSI, by DynamoDB's sizing rules; TTL deletions left out; malformed
records never counted as more than one unit; and real records read from moto's DynamoDB
Streams API through a real boto3 client."""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ddb_capacity_runtime.core.stream import (
    Index,
    Shape,
    batch_rates,
    item_size,
    record_time,
    record_units,
    seen_shape,
    shape_of,
    value_size,
    window_rate,
)
from ddb_capacity_runtime.fast_path.stream_reader import _view
from tests.support.signals_hook import ddb

SHAPE = Shape(
    keys=("pk",),
    indexes=(
        Index("by-g", ("g",), "ALL"),
        Index("by-h", ("h",), "KEYS_ONLY"),
        Index("by-c", ("c",), "INCLUDE", ("note",)),
    ),
)


def s(text: str) -> dict[str, str]:
    return {"S": text}


def record(
    old: dict[str, Any] | None = None, new: dict[str, Any] | None = None, at: float = 100.0
) -> dict[str, Any]:
    body: dict[str, Any] = {"ApproximateCreationDateTime": at, "Keys": {"pk": s("a")}}
    if old is not None:
        body["OldImage"] = old
    if new is not None:
        body["NewImage"] = new
    name = "INSERT" if old is None else "REMOVE" if new is None else "MODIFY"
    return {"eventName": name, "dynamodb": body}


def test_sizes_follow_dynamodbs_rules() -> None:
    assert value_size(s("héllo")) == 6  # UTF-8 bytes
    assert value_size({"N": "123"}) == 3  # 1 + ceil(3 digits / 2)
    assert value_size({"N": "1.500"}) == 2  # trailing zeros trimmed
    assert value_size({"B": "AAEC"}) == 3  # base64 of 3 bytes
    assert value_size({"BOOL": True}) == value_size({"NULL": True}) == 1
    assert value_size({"L": [s("ab"), {"N": "1"}]}) == 3 + (1 + 2) + (1 + 2)
    assert value_size({"M": {"k": s("v")}}) == 3 + 2 + 1
    assert value_size({"SS": ["a", "bc"]}) == 3
    assert item_size({"pk": s("a"), "v": s("x" * 100)}) == (2 + 1) + (1 + 100)


def test_a_put_an_update_and_a_delete_are_billed_by_their_items() -> None:
    small, big = {"pk": s("a")}, {"pk": s("a"), "v": s("x" * 2_500)}
    assert record_units(record(new=big), Shape(("pk",)))[None] == 3
    assert record_units(record(old=small, new=big), Shape(("pk",)))[None] == 3  # the larger
    assert record_units(record(old=big, new=small), Shape(("pk",)))[None] == 3
    assert record_units(record(old=big), Shape(("pk",)))[None] == 3
    assert record_units(record(), Shape(("pk",)))[None] == 1  # KEYS_ONLY: the least


def test_ttl_deletions_consume_nothing() -> None:
    ttl = record(old={"pk": s("a")})
    ttl["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    assert record_units(ttl, SHAPE) == {}
    rates = batch_rates([ttl, record(new={"pk": s("a")})], SHAPE)
    assert rates.ttl == 1 and rates.units == {None: 1.0}


def test_each_gsi_is_written_as_its_projection_allows() -> None:
    base = {"pk": s("a"), "g": s("1"), "note": s("n" * 1_500)}
    # enters by-g (ALL: the whole item, 2 units); by-h and by-c are not in its keys
    assert record_units(record(new=base), SHAPE) == {None: 2, "by-g": 2}
    # by-g's key moves: the old entry removed, the new one put
    moved = {**base, "g": s("2")}
    assert record_units(record(old=base, new=moved), SHAPE)["by-g"] == 4
    # a change by-h does not project writes nothing there; by-c's INCLUDE sees its note
    withkeys = {**base, "h": s("x"), "c": s("y")}
    changed = {**withkeys, "note": s("m" * 1_500)}
    units = record_units(record(old=withkeys, new=changed), SHAPE)
    assert "by-h" not in units and units["by-c"] == 2 and units["by-g"] == 2
    # leaves by-g: one write, sized by what it held
    assert record_units(record(old=base, new={"pk": s("a")}), SHAPE)["by-g"] == 2


def test_a_batch_is_a_rate_over_the_seconds_its_records_span() -> None:
    records = [record(new={"pk": s(str(i))}, at=100.0 + i % 5) for i in range(50)]
    rates = batch_rates(records, Shape(("pk",)))
    assert rates.seconds == 5.0
    assert rates.units == {None: 10.0}
    assert batch_rates([record(new={"pk": s("a")})], SHAPE).seconds == 1.0


@pytest.mark.parametrize(
    "bad",
    [
        "not a record",
        {"dynamodb": "no body"},
        {"dynamodb": {"NewImage": {"pk": {"S": 5}}}},
        {"dynamodb": {"NewImage": {"pk": {"X": "?"}}}},
        {"dynamodb": {"NewImage": {"n": {"N": "NaN"}}}},
        {"dynamodb": {"NewImage": {"b": {"B": "!!not base64"}}}},
        {"dynamodb": {"NewImage": {"v": {"SS": [5]}}}},
    ],
)
def test_a_malformed_record_counts_one_unit_at_most(bad: object) -> None:
    rates = batch_rates([bad], SHAPE)
    assert rates.units.get(None, 0.0) <= 1.0
    assert all(math.isfinite(v) for v in rates.units.values())


def test_nesting_deeper_than_dynamodb_allows_is_malformed() -> None:
    value: dict[str, Any] = {"S": "x"}
    for _ in range(40):
        value = {"L": [value]}
    assert value_size(value) is None
    assert record_units(record(new={"pk": s("a"), "v": value}), SHAPE) == {None: 1}


values = st.recursive(
    st.one_of(
        st.text(max_size=50).map(lambda t: {"S": t}),
        st.integers(-(10**30), 10**30).map(lambda n: {"N": str(n)}),
        st.booleans().map(lambda b: {"BOOL": b}),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda v: {"L": v}),
        st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4).map(lambda v: {"M": v}),
    ),
    max_leaves=20,
)
images = st.dictionaries(st.sampled_from(["pk", "g", "h", "c", "note", "v"]), values)


@given(old=st.none() | images, new=st.none() | images)
def test_every_write_is_at_least_one_unit_and_never_negative(
    old: dict[str, Any] | None, new: dict[str, Any] | None
) -> None:
    units = record_units(record(old, new), SHAPE)
    assert units[None] >= 1
    assert all(isinstance(u, int) and u >= 1 for u in units.values())


# ---------------------------------------------------------------- real records (moto)


def test_records_from_moto_streams_are_estimated(moto_endpoint: str) -> None:
    import boto3

    client = ddb(moto_endpoint)
    name = f"events-{uuid.uuid4().hex[:8]}"
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    for i in range(6):
        client.put_item(TableName=name, Item={"pk": s(str(i)), "v": s("x" * 1_500)})
    client.update_item(
        TableName=name,
        Key={"pk": s("0")},
        UpdateExpression="SET v = :v",
        ExpressionAttributeValues={":v": s("y" * 3_000)},
    )
    client.delete_item(TableName=name, Key={"pk": s("1")})
    streams = boto3.client(
        "dynamodbstreams",
        endpoint_url=moto_endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (moto takes any key)
    )
    arn = client.describe_table(TableName=name)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    records = streams.get_records(ShardIterator=iterator)["Records"]
    assert len(records) == 8
    rates = batch_rates(records, Shape(("pk",)))
    # 6 puts of 2 units, an update to 3 units, a delete of 2 units, over the seconds spanned
    assert rates.units[None] * rates.seconds == pytest.approx(6 * 2 + 3 + 2)


# ---------------------------------------------------------------- what the reader needs


def test_gsis_are_seen_only_where_the_view_type_shows_them() -> None:
    base = {"pk": s("a"), "g": s("1"), "note": s("n" * 1_500)}
    update = record(old=base)  # an OLD_IMAGE update: the new image is not in the record
    assert record_units(update, seen_shape(SHAPE, "OLD_IMAGE")) == {None: 2}
    assert record_units(update, seen_shape(SHAPE, "KEYS_ONLY")) == {None: 2}
    assert record_units(update, seen_shape(SHAPE, None)) == {None: 2}
    assert "by-g" in record_units(update, seen_shape(SHAPE, "NEW_AND_OLD_IMAGES"))
    assert seen_shape(SHAPE, "NEW_IMAGE") == SHAPE


def test_a_stream_view_type_that_is_not_one_name_is_not_known() -> None:
    """The view type the batch's records agree on (untrusted): a list or a map where a name
    should be is no view type, as several are; the batch's GSIs are then not seen (never
    an error that drops the table's whole batch)."""

    def rec(view: object) -> dict[str, Any]:
        return {"dynamodb": {"StreamViewType": view}}

    assert _view([rec("NEW_IMAGE"), rec("NEW_IMAGE")]) == "NEW_IMAGE"
    assert _view([rec("NEW_IMAGE"), rec("OLD_IMAGE")]) is None
    assert _view([rec(["NEW_IMAGE"]), rec("NEW_IMAGE")]) is None
    assert _view([rec({"NEW_IMAGE": 1})]) is None
    assert _view([rec(None), rec("NEW_IMAGE")]) is None
    assert _view([]) is None


def test_a_tables_shape_is_read_from_its_description_and_bad_gsis_left_out() -> None:
    description = {
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "by-c",
                "KeySchema": [{"AttributeName": "c", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["note"]},
            },
            {"IndexName": "no-keys", "Projection": {"ProjectionType": "ALL"}},
            {"IndexName": "odd", "KeySchema": [{"AttributeName": "o"}], "Projection": "ALL"},
            "not an index",
        ],
    }
    assert shape_of(description) == Shape(("pk",), (Index("by-c", ("c",), "INCLUDE", ("note",)),))
    assert shape_of({"KeySchema": "?"}) == Shape(())


@pytest.mark.parametrize(
    ("units", "latest", "previous", "rate"),
    [
        (60, 104.0, 0, 12.0),  # 60 units over the 5 seconds the window has run
        (60, 104.9, 0, 12.0),  # a record's time counts by its whole second
        (60, 100.0, 0, 60.0),  # its first second: 1 second at least
        (60, 130.0, 0, 6.0),  # a whole window at most
        (10, 101.0, 200, 20.0),  # the last whole window's rate, when it is more
    ],
)
def test_the_served_rate_of_the_counting_windows(
    units: float, latest: float, previous: float, rate: float
) -> None:
    assert window_rate(units, 100, latest, previous) == rate


def test_the_batch_keeps_its_units_beside_its_rates() -> None:
    records = [record(new={"pk": s(str(i)), "v": s("x" * 1_500)}, at=100.0 + i) for i in range(3)]
    rates = batch_rates(records, Shape(("pk",)))
    assert rates.totals == {None: 6.0} and rates.units == {None: 2.0}
    assert record_time(records[2]) == 102.0 and record_time("?") is None
