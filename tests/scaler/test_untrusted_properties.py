"""Properties of the rules for untrusted input: unknown data never lowers capacity, and tags
of any content neither raise nor take capacity outside the dimension's bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.aws.discovery import describe_table
from ddb_capacity_runtime.aws.store import (
    INTENT_MEMORY,
    MAX_PLAN_CHARS,
    RECENT_INTENTS,
    HoldStore,
    recent_intents,
)
from ddb_capacity_runtime.core.holds import lift
from ddb_capacity_runtime.core.names import DEFAULT_TABLE_QUOTA as TABLE_QUOTA
from ddb_capacity_runtime.core.names import MAX_TABLE_QUOTA, TAG_PREFIX
from ddb_capacity_runtime.core.plan import plan_table
from ddb_capacity_runtime.core.policy import (
    DimensionState,
    PolicyConfig,
    decide,
    decide_scalable_min,
)
from ddb_capacity_runtime.core.series import Series
from ddb_capacity_runtime.core.settings import OverrideError, ScalerConfig
from ddb_capacity_runtime.core.tables import ScalableTarget
from ddb_capacity_runtime.core.tags import parse_tags, percent, whole_units
from tests.support.hypothesis_profiles import examples

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
MINUTES = 15
values = st.floats(min_value=0, max_value=50_000, allow_nan=False)


@st.composite
def windows_with_unknown_minutes(draw: Any) -> DimensionState:
    unknown = draw(st.lists(st.booleans(), min_size=MINUTES, max_size=MINUTES))
    if not any(unknown):
        unknown[draw(st.integers(0, MINUTES - 1))] = True
    consumed = [0.0 if u else draw(values) for u in unknown]
    throttles = [0.0 if u else draw(st.sampled_from([0.0, 0.0, 10.0, 600.0])) for u in unknown]
    low = draw(st.integers(1, 1_000))
    high = draw(st.integers(low, TABLE_QUOTA))
    last_increase = draw(st.none() | st.integers(1, 600).map(lambda m: NOW - timedelta(minutes=m)))
    return DimensionState(
        provisioned=draw(st.integers(1, TABLE_QUOTA)),
        consumed=consumed,
        throttles=throttles,
        minute_starts=[NOW - timedelta(minutes=MINUTES - i) for i in range(MINUTES)],
        min_capacity=low,
        max_capacity=high,
        now=NOW,
        last_increase=last_increase,
        unknown_minutes=sum(unknown),
    )


@settings(max_examples=examples(400), deadline=None)
@given(windows_with_unknown_minutes(), st.integers(1, TABLE_QUOTA))
def test_no_decrease_on_a_window_with_unknown_data(state: DimensionState, current_min: int) -> None:
    config = PolicyConfig(scale_down_minutes=MINUTES)
    assert decide(state, config).capacity >= state.provisioned
    assert decide_scalable_min(state, current_min, config).capacity >= current_min


@settings(max_examples=examples(200), deadline=None)
@given(windows_with_unknown_minutes())
def test_no_decrease_when_a_shared_call_failed(state: DimensionState) -> None:
    known = DimensionState(**{**state.__dict__, "unknown_minutes": 0, "decreases_allowed": False})
    assert decide(known, PolicyConfig(scale_down_minutes=MINUTES)).capacity >= known.provisioned


ours = st.sampled_from(
    [
        "min",
        "max",
        "target",
        "read-min",
        "write-max",
        "read-target",
        "mn",
        "hold:x:read",
        "hold:abc:write",
        "base-min:table:read",
        "base-min:index/byUser:write",
        "base-min:index/x:read",
        "base-min:table:scan",
    ]
).map(lambda suffix: TAG_PREFIX + suffix)
tag_values = st.one_of(
    st.text(max_size=40),
    st.integers(-(10**12), 10**13).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.builds(lambda a, b: f"{a}:{b}", st.integers(-5, 10**9), st.integers(-5, 10**9)),
    st.builds(
        lambda scope, u, e, b: f"{scope}:{u}:{e}:{b}",
        st.sampled_from(["table", "index/byUser", "index/", "x"]),
        st.integers(-5, 10**8),
        st.integers(-5, 10**14),
        st.integers(-5, 10**8),
    ),
)
tag_sets = st.dictionaries(ours | st.text(max_size=20), tag_values, max_size=8)


@settings(max_examples=examples(400), deadline=None)
@given(tag_sets)
def test_tags_of_any_content_never_raise_and_never_leave_the_bounds(tags: dict[str, str]) -> None:
    # GIVEN a table of 100/100 with a GSI, its read under a target of [10, 1000]
    description = {
        "TableName": "t",
        "TableArn": "arn:aws:dynamodb:us-east-1:1:table/t",
        "TableStatus": "ACTIVE",
        "ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": 100},
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "byUser",
                "IndexStatus": "ACTIVE",
                "ProvisionedThroughput": {"ReadCapacityUnits": 50, "WriteCapacityUnits": 50},
            }
        ],
    }
    target = ScalableTarget("table/t", "dynamodb:table:ReadCapacityUnits", 10, 1000, True)
    config = ScalerConfig.from_env({"SCALER_TABLES": "t"})
    parsed = parse_tags(tags)
    assert all(1 <= v <= TABLE_QUOTA for k, v in parsed.limits.items() if "target" not in k)
    assert all(20 <= v <= 90 for k, v in parsed.limits.items() if "target" in k)
    # WHEN the tick reads it (tags as the tagging API would give them)
    try:
        table = describe_table(
            None,  # type: ignore[arg-type]  # no client: the description is given
            "t",
            tags,
            config,
            {("table/t", target.scalable_dimension): target},
            NOW,
            description=description,
        )
    except OverrideError as exc:
        assert "must not be above max" in str(exc)  # tags asked for min > max: table skipped
        return
    table = lift(table, [], NOW, TABLE_QUOTA)
    # THEN every dimension's bounds and every decision stay within [1, the table quota]
    busy = Series(
        [NOW - timedelta(minutes=MINUTES - i) for i in range(MINUTES)],
        [80.0] * MINUTES,
        [0.0] * MINUTES,
    )
    for change, _ in plan_table(table, {d.key: busy for d in table.dimensions}, config, NOW):
        d = change.dimension
        assert 1 <= d.limits.min_capacity <= d.limits.max_capacity <= TABLE_QUOTA
        assert d.limits.min_capacity <= change.new <= d.limits.max_capacity


numbers = st.one_of(
    st.integers(-10, 10**16).map(str), st.text(max_size=12), st.just("1e3"), st.just("NaN")
)
hold_items = st.fixed_dictionaries(
    {},
    optional={
        "units": st.builds(lambda n: {"N": n}, numbers),
        "expires": st.builds(lambda n: {"N": n}, numbers),
        "baseline": st.builds(lambda n: {"N": n}, numbers),
    },
).map(lambda m: {"M": m})
store_items = st.fixed_dictionaries(
    {
        "pk": st.builds(lambda t: {"S": t}, st.text(max_size=10)),
        "sk": st.builds(
            lambda t: {"S": t},
            st.sampled_from(["table:read", "index/byUser:write", "table:scan", "x", "index/:read"])
            | st.text(max_size=12),
        ),
    },
    optional={
        "base": st.builds(lambda n: {"N": n}, numbers),
        "holds": st.dictionaries(st.text(max_size=6), hold_items, max_size=4).map(
            lambda m: {"M": m}
        ),
    },
)


@settings(max_examples=examples(400), deadline=None)
@given(store_items)
def test_store_items_of_any_content_never_raise_and_stay_within_bounds(
    item: dict[str, Any],
) -> None:
    store = HoldStore(None, "holds", clock=lambda: NOW.timestamp())  # type: ignore[arg-type]
    held = store._parse(item)
    if held is None:
        return
    # a level the table had is read up to the largest quota; a hold's units within the quota
    assert held.base is None or 1 <= held.base <= MAX_TABLE_QUOTA
    for h in held.holds:
        assert 1 <= h.units <= TABLE_QUOTA and 0 <= h.baseline <= MAX_TABLE_QUOTA
        assert h.expires <= NOW + timedelta(days=1, minutes=1)


def stored(**fields: Any) -> dict[str, Any]:
    """A store item of table T's write dimension, with ``fields`` (DynamoDB's JSON)."""
    return {"pk": {"S": "T"}, "sk": {"S": "table:write"}, **fields}


def hold_entry(units: str = "100", token: str | None = "a" * 64) -> dict[str, Any]:
    fields = {
        "units": {"N": units},
        "expires": {"N": str(int((NOW + timedelta(minutes=30)).timestamp()))},
        "baseline": {"N": "50"},
    }
    return {"M": fields | ({} if token is None else {"token": {"S": token}})}


def test_each_stored_field_past_its_bound_is_read_as_unknown_or_malformed() -> None:
    store = HoldStore(None, "holds", clock=lambda: NOW.timestamp())  # type: ignore[arg-type]
    # a sound hold, with its token's digest or none (recorded before tokens)
    for token in ("a" * 64, None):
        held = store._parse(stored(holds={"M": {"h": hold_entry(token=token)}}))
        assert held is not None and [h.id for h in held.holds] == ["h"]
    # a hold of 0 units, or whose token is not a digest (short, long, not lowercase hex),
    # is malformed: never a level, always cleaned up
    for odd in (
        hold_entry(units="0"),
        hold_entry(token="a" * 63),
        hold_entry(token="a" * 65),
        hold_entry(token="A" * 64),
        hold_entry(token="g" * 64),
    ):
        held = store._parse(stored(holds={"M": {"h": odd}}))
        assert held is not None and held.holds == () and held.malformed == ("h",)
    # a memory of what the library set, without the base it set it over, means nothing
    held = store._parse(stored(set_to={"N": "300"}, intent={"N": "300"}, plan={"S": "x"}))
    assert held is not None and (held.base, held.set_to, held.intent) == (None, None, None)
    # a plan longer than any the library writes is not read
    held = store._parse(stored(base={"N": "10"}, plan={"S": "1" * (MAX_PLAN_CHARS + 1)}))
    assert held is not None and held.plan is None
    # a sort key naming an index without its name names no dimension
    assert store._parse({**stored(base={"N": "10"}), "sk": {"S": "index/:write"}}) is None
    assert store._parse({**stored(base={"N": "10"}), "sk": {"S": "index/i:write"}}) is not None


def test_a_limit_tag_is_read_up_to_its_bound_and_ignored_one_past_it() -> None:
    # capacity from 1 to the table quota; a target utilization from 20 % to 90 %
    for taken, ignored in ((1, 0), (TABLE_QUOTA, TABLE_QUOTA + 1)):
        assert whole_units(str(taken)) == taken and whole_units(str(ignored)) is None
    for value, read in (("20", 20.0), ("90", 90.0), ("19.9", None), ("90.01", None), ("19", None)):
        assert percent(value) == read
    assert percent("91") is None


def test_the_recent_intents_read_are_the_newest_within_a_day() -> None:
    now = NOW.timestamp()
    day = INTENT_MEMORY.total_seconds()

    def written(ages: dict[int, float]) -> dict[str, Any]:
        return {"M": {str(units): {"N": str(int(now - age))} for units, age in ages.items()}}

    # an intent a day and a second old, or an hour ahead of the clock, is not read
    ages = {100: 60, 200: 120, 500: day + 1, 600: -3_600}
    assert recent_intents(written(ages), TABLE_QUOTA, now) == {
        100: int(now - 60),
        200: int(now - 120),
    }
    # of more than RECENT_INTENTS within the day, the newest are read
    many = {100 + i: 60.0 * i for i in range(RECENT_INTENTS + 2)}
    newest = {u: int(now - a) for u, a in many.items() if a < 60 * RECENT_INTENTS}
    assert recent_intents(written(many), TABLE_QUOTA, now) == newest
