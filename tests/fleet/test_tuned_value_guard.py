"""The tuned target values under bad input and overlap (the tables, targets, S3 and the
state store in a moto server): a stored value the loop never writes is counted by the
scaler and replaced by the loop, not a failure every night; two loops of one run count no
failure; a run pointer from the future is not applied."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ddb_capacity_runtime.aws.store import TUNED
from ddb_capacity_tools.tuning_lambda import tune_run
from tests.support.moto_world import World
from tests.support.nightly_tuning import (
    AUTOPILOT,
    advised,
    policy_target,
    put_result,
    settings,
    start_run,
    tune,
    tuned,
)
from tests.support.nightly_tuning import world as world  # noqa: F401 (the fixture)


def store_tuned(world: World, name: str, value: dict[str, Any]) -> None:
    """Write ``value`` (an attribute value) as the write dimension's tuned target."""
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key={"pk": {"S": name}, "sk": {"S": "table:write"}},
        UpdateExpression="SET #t = :t",
        ExpressionAttributeNames={"#t": TUNED},
        ExpressionAttributeValues={":t": {"M": {"target": value, "run": {"S": "forged"}}}},
    )


def test_a_value_the_loop_never_writes_is_counted_and_then_replaced(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a table whose write target the autopilot owns at 70 %, with a stored tuned value
    # of 95 (outside 20 to 90: the loop never writes one)
    name = world.table("Forged", 10, 400, tagged=False)
    world.target(name, "write", 10, 20_000)
    store_tuned(world, name, {"N": "95"})
    owned = {name: {"write": 70}}
    env = {
        **AUTOPILOT,
        "SCALER_TABLES": name,
        "SCALER_OWNED_TARGETS": json.dumps(owned),
        "SCALER_TUNED_TARGETS": "true",
    }
    # WHEN the scaler ticks
    _, events = world.tick(**env)
    # THEN it aims at the configured 70, and the value is logged and counted
    assert policy_target(world, name, "write") == 70
    (refused,) = [e for e in events if e.get("event") == "tuned-target-refused"]
    assert refused["table"] == name
    (record,) = [e for e in events if "_aws" in e and e.get("TableName") == name]
    assert record["RefusedTunedTargets"] == 1
    # WHEN the loop runs on a recommendation of stock:90
    run_id = start_run(world)
    put_result(world, run_id, name, advised(name, "stock:90"))
    counts, _ = tune(world, settings(world, owned))
    # THEN it replaces the value, counted as unreadable, and no table failed
    assert tuned(world, name, "write") == 80
    assert (counts["Unreadable"], counts["TablesFailed"], counts["TargetsChanged"]) == (1, 0, 1)


@pytest.mark.parametrize(
    "stored",
    [
        {"M": {"target": {"S": "eighty"}, "run": {"S": "forged"}}},
        {"M": {"run": {"S": "forged"}}},  # no target
        {"S": "eighty"},  # not a map
        {"L": [{"N": "80"}]},
    ],
)
def test_a_malformed_value_is_replaced_not_a_failure_every_night(
    world: World,  # noqa: F811 (the fixture)
    stored: dict[str, Any],
) -> None:
    name = world.table("Malformed", 10, 10, tagged=False)
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key={"pk": {"S": name}, "sk": {"S": "table:write"}},
        UpdateExpression="SET #t = :t",
        ExpressionAttributeNames={"#t": TUNED},
        ExpressionAttributeValues={":t": stored},
    )
    run_id = start_run(world)
    put_result(world, run_id, name, advised(name, "stock:90"))
    counts, _ = tune(world, settings(world, {name: {"write": 70}}))
    assert tuned(world, name, "write") == 80
    assert (counts["TablesFailed"], counts["Unreadable"]) == (0, 1)


def test_two_loops_of_one_run_count_no_failure(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    # GIVEN a run, and a second loop that read the dimension before the first one wrote it
    name = world.table("Twice", 10, 10, tagged=False)
    run_id = start_run(world)
    put_result(world, run_id, name, advised(name, "stock:90"))
    config = settings(world, {name: {"write": 70}})
    reads: list[Any] = []
    real_get = world.ddb.get_item

    def late_get(**kw: Any) -> Any:
        """The second loop's read, as it stood before the first loop's write."""
        answer = real_get(**kw)
        if kw.get("ProjectionExpression") and not reads:
            reads.append(answer)
            tune_run(world.s3, world.ddb, config, world.now)  # type: ignore[attr-defined]
        return answer

    world.ddb.get_item = late_get
    try:
        counts = tune_run(world.s3, world.ddb, config, world.now)  # type: ignore[attr-defined]
    finally:
        world.ddb.get_item = real_get
    # THEN the value is the run's, and the second loop kept it: no failure counted
    assert tuned(world, name, "write") == 80
    assert (counts["TablesFailed"], counts["TargetsKept"], counts["TargetsChanged"]) == (0, 1, 0)


def test_a_run_pointer_from_the_future_is_not_applied(
    world: World,  # noqa: F811 (the fixture)
) -> None:
    name = world.table("Future", 10, 10, tagged=False)
    run_id = start_run(world, minutes_ago=-60)
    put_result(world, run_id, name, advised(name, "stock:90"))
    counts, _ = tune(world, settings(world, {name: {"write": 70}}))
    assert counts["Failures"] == 1 and tuned(world, name, "write") is None
