"""Min and max tags that contradict the limits they merge with (a ``min`` above the default
max, a ``max`` below the default min, a min tag above a max tag). Tags are untrusted input:
such a tag is refused for the dimension whose min it would put above its max (logged as
``tag-refused`` and counted as ``RefusedTags``, as a tag below the load is), never the cause
of an exception. The scaler manages the table with the limits it would have without it; a
dimension under a scalable target, whose min and max are the target's, does not report it;
and the paths that read a table without the scaler's configuration (a restore, a request
through the broker) go on with it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws import discovery
from ddb_capacity_runtime.core.errors import OverrideError
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.core.table_limits import Limits, RefusedTag
from ddb_capacity_runtime.core.tags import parse_tags
from ddb_capacity_runtime.requests import request_capacity, restore_expired
from ddb_capacity_runtime.requests.broker import BrokerConfig, serve
from tests.support.capacity_requests import later
from tests.support.capacity_requests import world as world  # noqa: F401 (fixture)
from tests.support.moto_world import World

ONE_TABLE = {"SCALER_TABLES": "t"}


def _tags(**tags: str) -> dict[str, float]:
    return parse_tags({f"ddb-capacity:{k.replace('_', '-')}": v for k, v in tags.items()}).limits


@pytest.mark.parametrize(
    ("tags", "overrides", "limits", "refused"),
    [
        # a min above the default max (1,000), a max below the default min (5)
        (_tags(min="1500"), "{}", Limits(5, 1000, 0.7), [("min", 1500, "min")]),
        (_tags(max="3"), "{}", Limits(5, 1000, 0.7), [("max", 3, "max")]),
        # a min tag and a max tag that contradict each other: both refused
        (
            _tags(min="50", max="10"),
            "{}",
            Limits(5, 1000, 0.7),
            [("min", 50, "min"), ("max", 10, "max")],
        ),
        # the dimension's own tag refused, then the table's, which conflicts too
        (
            _tags(write_min="1500", min="1200"),
            "{}",
            Limits(5, 1000, 0.7),
            [("write-min", 1500, "min"), ("min", 1200, "min")],
        ),
        # refused, the table's own tag then obeyed where it fits
        (
            _tags(write_min="1500", min="20"),
            "{}",
            Limits(20, 1000, 0.7),
            [("write-min", 1500, "min")],
        ),
        # a max tag that makes room for the min: nothing refused
        (_tags(min="1500", write_max="40000"), "{}", Limits(1500, 40000, 0.7), []),
        # the configuration's max wins over a max tag, which is not in play
        (
            _tags(min="1500", max="2000"),
            '{"t": {"max": 1200}}',
            Limits(5, 1200, 0.7),
            [("min", 1500, "min")],
        ),
        # a target tag is not a min or a max: it stays
        (_tags(min="1500", target="50"), "{}", Limits(5, 1000, 0.5), [("min", 1500, "min")]),
    ],
)
def test_tags_that_put_a_min_above_its_max_are_refused_for_that_dimension(
    tags: dict[str, float],
    overrides: str,
    limits: Limits,
    refused: list[tuple[str, int, str]],
) -> None:
    config = ScalerConfig.from_env({**ONE_TABLE, "SCALER_OVERRIDES": overrides})
    kept, out = config.conflicting_tags("t", tags, "write")
    assert config.limits("t", kept, ("write",))["write"] == limits
    assert out == [RefusedTag(f"ddb-capacity:{k}", v, limit) for k, v, limit in refused]


def test_a_tag_for_one_dimension_leaves_the_other_alone() -> None:
    config = ScalerConfig.from_env(ONE_TABLE)
    tags = _tags(min="1500", write_max="40000")
    assert config.conflicting_tags("t", tags, "write") == (tags, [])
    kept, out = config.conflicting_tags("t", tags, "read")
    assert kept == {"write-max": 40000.0} and [r.key for r in out] == ["ddb-capacity:min"]


def test_the_configurations_own_error_still_raises() -> None:
    config = ScalerConfig.from_env({**ONE_TABLE, "SCALER_OVERRIDES": '{"t": {"min": 2000}}'})
    with pytest.raises(OverrideError, match=r"table t write: min \(2000\) must not be above"):
        config.conflicting_tags("t", _tags(min="10"), "write")


def test_tags_below_the_load_are_checked_after_the_conflicting_ones_are_refused() -> None:
    # a min above the default max (the read's, and the write's once its own min tag, below
    # the load, is refused): no exception, the write's min refused
    config = ScalerConfig.from_env(ONE_TABLE)
    kept, out = config.refuse_lowering_tags("t", _tags(min="1500", write_min="2"), "write", 715)
    assert kept == Limits(5, 1000, 0.7)
    assert [r.key for r in out] == ["ddb-capacity:write-min"]
    # and a max below the load beside a min above the default max on the other dimension
    kept, out = config.refuse_lowering_tags("t", _tags(read_min="1500", max="10"), "write", 715)
    assert kept == Limits(5, 1000, 0.7)
    assert [r.key for r in out] == ["ddb-capacity:max"]


DESCRIBED = {
    "TableName": "t",
    "TableStatus": "ACTIVE",
    "TableArn": "arn:aws:dynamodb:us-east-1:123456789012:table/t",
    "ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": 100},
}


@pytest.mark.parametrize("tag", [{"ddb-capacity:min": "1500"}, {"ddb-capacity:max": "3"}])
def test_a_table_with_a_conflicting_tag_is_described_with_the_limits_it_has_without(
    tag: dict[str, str],
) -> None:
    config = ScalerConfig.from_env(ONE_TABLE)
    # no DynamoDB call: the description and the tags are given
    nothing: Any = None
    now = datetime.now(UTC)
    managed = discovery.describe_table(nothing, "t", tag, config, {}, now, description=DESCRIBED)
    assert [d.limits for d in managed.dimensions] == [Limits(5, 1000, 0.7)] * 2
    assert managed.refused_tags == 2  # refused for the read and for the write


# ------------------------------------------------------------------ the scaler's tick


@pytest.fixture
def tick_world(aws_client: Any) -> Iterator[World]:
    made = World(aws_client)
    yield made
    made.close()


def test_a_tick_manages_a_table_whose_min_tag_is_above_the_max_and_counts_the_refusal(
    tick_world: World,
) -> None:
    world = tick_world
    # GIVEN a table tagged min=1500 under the default max of 1,000, its writes throttled;
    # and one whose dimensions both have scalable targets, tagged the same
    loose = world.table("loose", 100, 100, tags={"ddb-capacity:min": "1500"})
    targeted = world.table("targeted", 100, 100, tags={"ddb-capacity:min": "1500"})
    for dim in ("read", "write"):
        world.target(targeted, dim, 100, 10_000)
    for name in (loose, targeted):
        world.traffic(name, "read", 50)
        world.traffic(name, "write", 100)
        world.traffic(name, "write", 0, throttles=30_000, minutes=range(1, 2))
    # WHEN a tick runs
    summary, events = world.tick()
    # THEN neither table fails, and the throttled writes are raised, within the default max
    assert summary["failures"] == []
    assert 100 < world.throughput(loose)[1] <= 1000
    # AND the tag is refused on the table without targets, once a dimension, counted there
    counted = {e["TableName"]: e.get("RefusedTags") for e in events if "Decisions" in e}
    assert counted == {loose: 2, targeted: None}
    refused = [e for e in events if e.get("event") == "tag-refused"]
    assert [(e["table"], e["dimension"], e["key"], e["value"]) for e in refused] == [
        (loose, "read", "ddb-capacity:min", 1500),
        (loose, "write", "ddb-capacity:min", 1500),
    ]
    assert refused[0]["reason"] == (
        "ddb-capacity:min=1500 would put the read min above its max, with the "
        "configuration's limits and the other tags: not obeyed for that dimension, whose "
        "min and max stay 5 and 1000"
    )


# ------------------------------------------------------------------ the request paths


def test_a_min_tag_above_the_default_max_neither_stops_a_restore_nor_fails_a_request(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a hold that raised a write minimum from 10 to 2,000
    name = world.table("TaggedMin", 10, 10, tagged=False)
    world.target(name, "write", 10, 20_000)
    hold = request_capacity(
        name, write=2000, hold=timedelta(minutes=1), clients=world.clients, store=world.store
    )
    assert hold.levels == {"write": 2000}
    # AND the table tagged min=1500 (meant for a scaler whose max is 40,000)
    arn = world.ddb.describe_table(TableName=name)["Table"]["TableArn"]
    world.ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": "ddb-capacity:min", "Value": "1500"}])
    # WHEN the hold has expired and a restore runs THEN the minimum is back at its base
    rows = restore_expired(name, store=world.store, clients=world.clients, clock=later(2))
    assert [(r["from"], r["to"], r["status"]) for r in rows] == [(2000, 10, "applied")]
    assert world.target_min(name, "write") == 10
    # AND a request through the broker is served
    event = {"action": "request", "table": name, "write": 10, "hold_minutes": 1}
    answer = serve(
        {**event, "timeout_seconds": 5},
        BrokerConfig({name: frozenset()}),
        clients=world.clients,
        store=world.store,
    )
    assert answer["ok"] is True
