"""A dimension's configured minimum (``base``) read back from the hold store that is not a
number: the broker's release finds the item unreadable. It must neither lower the table on
it nor lose the configured minimum without a count an alarm watches (tables in moto, the
hold store in dynalite)."""

from __future__ import annotations

import json

import pytest

from ddb_capacity_runtime.aws.store import HoldStore
from tests.support.broker import call, request
from tests.support.broker import served as served  # noqa: F401 (fixture)
from tests.support.broker import world as world  # noqa: F401 (fixture)
from tests.support.moto_world import World


@pytest.mark.parametrize("bad", [{"S": "100"}, {"N": "0"}, {"N": "-5"}])
def test_a_stored_base_that_is_no_number_is_told_and_counted_and_never_lowers_the_table(
    world: World,  # noqa: F811 (the fixture)
    served: str,  # noqa: F811 (the fixture)
    bad: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "broker")  # EMF counts go out
    # GIVEN a hold raising the write minimum from its configured 100 to 550
    hold = request(world, served, write=500)["hold"]
    assert world.target_min(served, "write") == 550
    # AND the item's base then reads back as something that is not a whole number
    key = {"pk": {"S": served}, "sk": {"S": HoldStore.sort_key(None, "write")}}
    world.store_ddb.update_item(
        TableName=world.store.name,
        Key=key,
        UpdateExpression="SET #b = :b",
        ExpressionAttributeNames={"#b": "base"},
        ExpressionAttributeValues={":b": bad},
    )
    capsys.readouterr()
    # WHEN the hold is released
    answer = call(
        world, {"action": "release", "table": served, "id": hold["id"], "token": hold["token"]}
    )
    out = capsys.readouterr().out
    assert answer["ok"] is True, answer
    # THEN the minimum is not lowered on it (the configured minimum is not known)...
    assert world.target_min(served, "write") == 550
    # ...and the loss is told once, where the level the dimension has is recorded as its
    # base: one warning, and one HoldsDropped count (alarmed)
    warned = [r for r in caplog.records if r.getMessage().startswith("base-replaced")]
    assert len(warned) == 1, warned
    counts = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [c["HoldsDropped"] for c in counts if "HoldsDropped" in c] == [1], counts
    (write,) = [s for s in world.store.table(served) if s.dimension == "write"]
    assert (write.base, write.base_unread) == (550, False)
