"""Properties of the settle plan over arbitrary capacities (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ddb_capacity_runtime.settle.settle_plan import SettleTarget, plan_settle

UNITS = {"read": "ReadCapacityUnits", "write": "WriteCapacityUnits"}
capacity = st.integers(min_value=1, max_value=40_000)


@st.composite
def scenario(draw: Any) -> tuple[dict[str, Any], list[SettleTarget]]:
    indexes = draw(st.lists(st.sampled_from(["byA", "byB", "byC"]), unique=True, max_size=3))
    description: dict[str, Any] = {
        "TableName": "t",
        "TableStatus": "ACTIVE",
        "ProvisionedThroughput": {u: draw(capacity) for u in UNITS.values()},
        "GlobalSecondaryIndexes": [
            {
                "IndexName": name,
                "ProvisionedThroughput": {u: draw(capacity) for u in UNITS.values()},
            }
            for name in indexes
        ],
    }
    targets = []
    for index in [None, *indexes]:
        for dimension in draw(st.lists(st.sampled_from(["read", "write"]), unique=True)):
            current = _units(description, index, dimension)
            # often exactly at the mark (as CloudFormation created it), sometimes moved
            mark = draw(st.one_of(st.just(current), capacity))

            def within(v: int, m: int = mark) -> bool:
                return v <= m

            targets.append(SettleTarget(index, dimension, mark, draw(capacity.filter(within))))
    return description, targets


def _units(description: dict[str, Any], index: str | None, dimension: str) -> int:
    if index is None:
        return int(description["ProvisionedThroughput"][UNITS[dimension]])
    (gsi,) = [g for g in description["GlobalSecondaryIndexes"] if g["IndexName"] == index]
    return int(gsi["ProvisionedThroughput"][UNITS[dimension]])


def _apply(description: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    after = {
        **description,
        "ProvisionedThroughput": dict(description["ProvisionedThroughput"]),
        "GlobalSecondaryIndexes": [dict(g) for g in description["GlobalSecondaryIndexes"]],
    }
    if "ProvisionedThroughput" in update:
        after["ProvisionedThroughput"] = update["ProvisionedThroughput"]
    for item in update.get("GlobalSecondaryIndexUpdates", []):
        for gsi in after["GlobalSecondaryIndexes"]:
            if gsi["IndexName"] == item["Update"]["IndexName"]:
                gsi["ProvisionedThroughput"] = item["Update"]["ProvisionedThroughput"]
    return after


@given(scenario())
def test_settle_only_lowers_marked_dimensions_once(case: tuple[dict[str, Any], list[Any]]) -> None:
    description, targets = case
    update = plan_settle(description, targets)
    if update is None:
        return
    after = _apply(description, update)
    indexes = [None, *(g["IndexName"] for g in description["GlobalSecondaryIndexes"])]
    for index in indexes:
        for dimension in UNITS:
            before, now = _units(description, index, dimension), _units(after, index, dimension)
            assert now <= before  # never raises anything
            marked = [t for t in targets if (t.index, t.dimension) == (index, dimension)]
            if now < before:  # lowered only from its exact mark, to its operating capacity
                assert any(t.high_water_mark == before and t.operating == now for t in marked)
    # one UpdateTable is enough: planning again on the result finds nothing to do
    assert plan_settle(after, targets) is None


@given(scenario(), st.data())
def test_settle_never_lowers_a_dimension_below_its_floor(
    case: tuple[dict[str, Any], list[Any]], data: Any
) -> None:
    # GIVEN floors (what a live table's traffic needs) for some of the targets
    description, targets = case
    floors = {
        (t.index, t.dimension): data.draw(capacity) for t in targets if data.draw(st.booleans())
    }
    update = plan_settle(description, targets, floors)
    if update is None:
        return
    after = _apply(description, update)
    for t in targets:
        before, now = _units(description, t.index, t.dimension), _units(after, t.index, t.dimension)
        if now < before:
            # THEN a dimension lowered goes from its mark to max(operating, its floor)
            floor = floors.get((t.index, t.dimension), t.operating)
            assert before == t.high_water_mark and now == max(t.operating, floor)
        else:  # AND one whose floor is at or above its mark stays at it
            assert now == before
    assert plan_settle(after, targets, floors) is None
