"""The simulator's partition model: a hot key's partition refuses what it cannot serve
(key-range throttles) before provisioned capacity and burst meet the rest; results, the
simulated CloudWatch and the throttle-aware policy's series tell the causes apart; the
hot-key scenarios; a backtest that reads the throttles by cause from a moto server."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_runtime.core.plan import Change, Via
from ddb_capacity_runtime.core.policy import Decision
from ddb_capacity_runtime.core.series import Series
from ddb_capacity_runtime.core.tables import ManagedTable
from ddb_capacity_tools.cli import main
from ddb_capacity_tools.local_aws import put_traffic
from ddb_capacity_tools.simulator import (
    ModelError,
    ModelParams,
    PolicyError,
    Prices,
    parse,
    policies,
    run_policy,
    scenario,
    simulate,
)
from ddb_capacity_tools.simulator.backtest import history
from ddb_capacity_tools.simulator.ensemble import settings_of
from ddb_capacity_tools.simulator.model import SimulatedTable
from ddb_capacity_tools.simulator.partitions import (
    PARTITION_UNITS,
    HotPartition,
    partition_count,
    zipf_share,
)
from ddb_capacity_tools.simulator.report import table
from ddb_capacity_tools.simulator.run import DimensionResult
from ddb_capacity_tools.simulator.scenarios import START
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.hypothesis_profiles import examples

DIMS = st.sampled_from(["read", "write"])
SHARES = st.floats(0.0, 1.0)
UNITS = st.floats(0.0, 50_000.0)


def _run(text: str, trace: Trace, **model: Any) -> list[DimensionResult]:
    return run_policy(parse(text), trace, ModelParams(**model).validate(), Prices())


def _by(results: list[DimensionResult], policy: str, dimension: str = "write") -> DimensionResult:
    return next(r for r in results if r.policy == policy and r.key[1] == dimension)


# ---------------------------------------------------------------- the partition model


def test_the_partition_count_is_the_published_formula_and_the_size() -> None:
    assert partition_count(0, 0) == 1
    assert partition_count(3_000, 1_000) == 2
    assert partition_count(3_001, 0) == 2
    assert partition_count(6_000, 3_000) == 5
    assert partition_count(10, 10, size_gb=95) == 10


def test_a_zipf_distribution_maps_onto_the_hot_keys_share() -> None:
    assert zipf_share(0, 4) == pytest.approx(0.25)  # uniform
    assert zipf_share(1, 3) == pytest.approx(1 / (1 + 1 / 2 + 1 / 3))
    assert zipf_share(2, 1) == 1.0


@pytest.mark.parametrize(
    ("exponent", "keys"), [(-1, 3), (1, 0), (1, 2.5), ("1", 3), (float("nan"), 3)], ids=repr
)
def test_a_zipf_share_out_of_its_range_is_refused(exponent: Any, keys: Any) -> None:
    with pytest.raises(ModelError) as caught:
        zipf_share(exponent, keys)
    assert str(caught.value) == (
        f"zipf_share: got exponent {exponent!r} over {keys!r} keys; expected an exponent of "
        "0 or more over a whole number of keys from 1"
    )


@settings(max_examples=examples(200), deadline=None)
@given(skew=SHARES, dimension=DIMS, demand=UNITS, given_=UNITS, read=UNITS, write=UNITS)
def test_key_range_refusals_stay_within_the_demand_and_vanish_without_skew(
    skew: float, dimension: str, demand: float, given_: float, read: float, write: float
) -> None:
    part = HotPartition(skew, 15)
    part.grow("read", read)
    part.grow("write", write)
    refused = part.refuse(dimension, demand, given_)
    assert 0.0 <= refused <= demand + 1e-9
    assert refused >= min(demand, given_)  # what the history refused is refused again
    unskewed = HotPartition(0.0, 15)
    unskewed.grow(dimension, read)
    assert unskewed.refuse(dimension, demand) == 0.0


@settings(max_examples=examples(100), deadline=None)
@given(
    skew=SHARES,
    split=st.one_of(st.none(), st.integers(1, 5)),
    steps=st.lists(st.tuples(DIMS, UNITS, UNITS), min_size=1, max_size=40),
)
def test_partitions_never_merge_and_the_hot_partition_never_narrows_below_its_key(
    skew: float, split: int | None, steps: list[tuple[str, float, float]]
) -> None:
    part = HotPartition(skew, split)
    count = part.count
    for dimension, capacity, demand in steps:
        part.grow(dimension, capacity)
        part.refuse(dimension, demand)
        part.end_minute()
        assert part.count >= count
        assert part.count >= partition_count(part.peak["read"], part.peak["write"])
        assert skew - 1e-12 <= part.share <= 1.0 + 1e-12
        count = part.count


@settings(max_examples=examples(100), deadline=None)
@given(skew=st.floats(0.01, 0.99), dimension=DIMS, demand=st.floats(1.0, 40_000.0))
def test_a_split_for_heat_lowers_key_range_refusals_and_clears_them_unless_the_key_alone_exceeds(
    skew: float, dimension: str, demand: float
) -> None:
    limit = PARTITION_UNITS[dimension]
    part = HotPartition(skew, 1)
    before = part.refuse(dimension, demand)
    if before == 0:
        return
    for n in range(60):  # one split a minute while the partition is hot
        part.end_minute()
        after = part.refuse(dimension, demand)
        assert after <= before
        if n < 10:  # (later, the rest of the key space it holds is below float precision)
            assert after < before or after == 0
        before = after
    alone = skew * demand - limit
    if alone > 1e-6:
        assert before == pytest.approx(alone, rel=1e-6)  # the key's own excess stays
    else:
        assert before <= 1e-6 * demand


def _steady(minutes: int = 120, write: float = 3_000.0, read: float = 0.0) -> Trace:
    return Trace(
        "steady",
        START,
        {(None, "read"): [read] * minutes, (None, "write"): [write] * minutes},
    )


@pytest.mark.parametrize("capacity", [8_000, 20_000, 40_000])
def test_with_ample_capacity_key_range_refusals_do_not_depend_on_it(capacity: int) -> None:
    """Partitions set by the warm throughput (more than any of these capacities needs):
    provisioned capacity changes nothing a hot key meets."""
    model: dict[str, Any] = {
        "key_skew": 0.5,
        "warm_read_units": 40_000,
        "warm_write_units": 40_000,
        "split_minutes": None,
    }
    base = _by(_run("fixed:5000", _steady(), **model), "fixed:5000")
    other = _by(_run(f"fixed:{capacity}", _steady(), **model), f"fixed:{capacity}")
    assert base.throttled_by_cause["provisioned"] == other.throttled_by_cause["provisioned"] == 0
    assert base.recorded.key_range == other.recorded.key_range
    # 50 % of 3,000 WCU plus its partition's slice of the rest, beyond 1,000 WCU
    count = partition_count(40_000, 40_000)
    assert count == math.ceil(40_000 / 3_000 + 40_000 / 1_000)
    expected = 0.5 * 3_000 + 0.5 * 3_000 / count - 1_000
    assert base.recorded.key_range == pytest.approx([expected] * 120)


def test_key_range_refusals_are_served_before_provisioned_capacity_meets_the_rest() -> None:
    """1,000 WCU provisioned, no burst, 3,000 WCU asked, the key taking 60 %: its partition
    refuses what it cannot serve, and capacity refuses what it cannot serve of the rest."""
    trace = _steady(30)
    (_, write) = _run("fixed:1000", trace, key_skew=0.6, burst_seconds=0, split_minutes=None)
    count = partition_count(1_000, 1_000)  # fixed:1000 on reads and writes: 2 partitions
    hot = 0.6 * 3_000 + 0.4 * 3_000 / count - 1_000
    assert write.recorded.key_range == pytest.approx([hot] * 30)
    assert write.throttled_by_cause["provisioned"] == pytest.approx((3_000 - hot - 1_000) * 30 * 60)
    assert write.throttled_requests == pytest.approx((3_000 - 1_000) * 30 * 60)


def test_splits_for_heat_lower_what_the_hot_key_is_refused() -> None:
    trace = scenario("hot-key-surge")
    never = _by(_run("stock:70", trace, split_minutes=None), "stock:70")
    soon = _by(_run("stock:70", trace, split_minutes=5), "stock:70")
    assert 0 < soon.throttled_by_cause["key_range"] < never.throttled_by_cause["key_range"]


# ---------------------------------------------------------------- zero skew is the old model


def _plan_table() -> Callable[..., list[tuple[Change, Decision]]]:
    """The plan_table the simulator's policies call (their import of it, not an export)."""
    planner: Callable[..., list[tuple[Change, Decision]]] = vars(policies)["plan_table"]
    return planner


def _without_key_range(trace: Trace) -> Trace:
    """``trace`` with an all-zero key-range history: the partition model runs (every
    branch of it), and refuses nothing."""
    return dataclasses.replace(trace, key_range={k: [0.0] * trace.minutes for k in trace.demand})


#: A result's fields and its recorded series' fields, but the key-range series.
Fields = tuple[dict[str, Any], dict[str, Any]]


def _fields(results: list[DimensionResult]) -> list[Fields]:
    out = []
    for r in results:
        recorded = {k: v for k, v in vars(r.recorded).items() if k != "key_range"}
        out.append(({k: v for k, v in vars(r).items() if k != "recorded"}, recorded))
    return out


@pytest.mark.parametrize(
    ("name", "policy", "model"),
    [
        ("spike", "stock:70", {}),
        ("spike", "autopilot+stock:70", {}),
        ("flash-crowd", "throttle-aware", {"delay_spread_minutes": 2, "update_spread_minutes": 2}),
        ("flash-crowd", "throttle-aware+stock:70", {"retries": 2}),
        ("slow-start", "oracle", {}),
        ("nightly-batch", "on-demand", {}),
    ],
)
def test_at_zero_skew_the_partition_model_changes_no_result_and_no_decision(
    name: str, policy: str, model: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    decisions: list[list[list[tuple[int, int, Via, Decision]]]] = []
    plan_table = _plan_table()

    def recording(*args: Any, **kwargs: Any) -> list[tuple[Change, Decision]]:
        planned = plan_table(*args, **kwargs)
        decisions[-1].append([(c.old, c.new, c.via, d) for c, d in planned])
        return planned

    monkeypatch.setattr(policies, "plan_table", recording)
    trace = scenario(name)
    runs: list[list[Fields]] = []
    for t, skew in ((trace, None), (trace, 0.0), (_without_key_range(trace), 0.0)):
        decisions.append([])
        runs.append(_fields(_run(policy, t, key_skew=skew, **model)))
    assert runs[0] == runs[1] == runs[2]
    assert decisions[0] == decisions[1] == decisions[2]


def test_zero_skew_turns_a_hot_key_scenario_into_a_table_without_one() -> None:
    (read, write) = _run("stock:70", scenario("hot-key"), key_skew=0)
    assert write.throttled_requests == read.throttled_requests == 0
    assert write.recorded.key_range == ()


# ---------------------------------------------------------------- CloudWatch and the policy


@pytest.mark.parametrize("spread", [0, 3])
def test_key_range_events_are_published_with_the_lumped_throttle_events_delays(spread: int) -> None:
    trace = _steady(30, write=2_000.0)
    params = ModelParams(
        key_skew=0.8, throttle_delay_minutes=3, delay_spread_minutes=spread, split_minutes=None
    ).validate()
    sim = SimulatedTable(trace, params, {(None, "read"): 1, (None, "write"): 40_000})
    for t in range(-params.warmup_minutes, 20):
        sim.begin_minute(t)
        sim.end_minute(t)
    key = (None, "write")
    events = sim.key_range_events(key, 10, 10, 20)
    lumped, late = sim.datapoints(key, 10, 10, 20, throttles=True)
    if not spread:
        assert late == [False] * 7 + [True] * 3  # minutes 17 .. 19 not delivered at 20
    assert any(late) and not all(late)
    for event, total, unknown in zip(events, lumped, late, strict=True):
        # every throttle here is the hot key's: key-range events are the lumped ones
        assert event == (0.0 if unknown else total) and (unknown or event > 0)


def test_the_policy_reads_causes_unless_it_keeps_the_lumped_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, list[Series]] = {"causes": [], "lumped": []}
    plan_table = _plan_table()

    def recording(
        table: ManagedTable, series: Mapping[Any, Series], *args: Any, **kwargs: Any
    ) -> list[tuple[Change, Decision]]:
        label = "lumped" if current[0].endswith("+lumped") else "causes"
        seen[label].extend(s for s in series.values() if any(s.throttles))
        return plan_table(table, series, *args, **kwargs)

    monkeypatch.setattr(policies, "plan_table", recording)
    trace = scenario("hot-key")
    current = [""]
    for text in ("autopilot+stock:70", "autopilot+stock:70+lumped"):
        current[0] = text
        _run(text, dataclasses.replace(trace, demand={k: v[:300] for k, v in trace.demand.items()}))
    assert seen["causes"] and seen["lumped"]
    for s in seen["causes"]:
        assert s.unfixable == s.key_range and len(s.unfixable) == len(s.throttles)
        assert all(0 <= u <= n for u, n in zip(s.unfixable, s.throttles, strict=True))
        assert any(s.unfixable)
    assert all(s.unfixable == [] and s.key_range == [] for s in seen["lumped"])


def test_lumped_is_a_suffix_of_throttle_aware_and_autopilot_policies_only() -> None:
    spec = parse("autopilot+stock:60+lumped")
    assert (spec.kind, spec.value, spec.with_stock, spec.lumped) == ("autopilot", 60, True, True)
    assert parse("throttle-aware+lumped").lumped and not parse("autopilot").lumped
    with pytest.raises(PolicyError, match="'stock:70\\+lumped'; '\\+lumped' applies to"):
        parse("stock:70+lumped")


# ---------------------------------------------------------------- scenarios and results


def test_on_the_hot_key_scenario_the_lumped_rule_buys_capacity_that_fixes_nothing() -> None:
    trace = scenario("hot-key")
    results = simulate(
        trace,
        [parse(p) for p in ("stock:70", "autopilot+stock:70", "autopilot+stock:70+lumped")],
        progress=None,
    )
    stock, aware, lumped = (
        _by(results, p) for p in ("stock:70", "autopilot+stock:70", "autopilot+stock:70+lumped")
    )
    # the hot key alone asks for more than its partition serves: splits never clear it
    assert trace.key_skew * min(trace.demand[(None, "write")]) > PARTITION_UNITS["write"]
    for r in (stock, aware, lumped):
        assert r.throttled_by_cause["provisioned"] == 0
        assert r.throttled_by_cause["key_range"] > 0
        assert r.throttled_requests == pytest.approx(sum(r.throttled_by_cause.values()))
    assert aware.cost_usd <= 1.05 * stock.cost_usd
    assert lumped.cost_usd > 3 * stock.cost_usd
    assert lumped.throttled_by_cause["key_range"] > 0.9 * stock.throttled_by_cause["key_range"]


def test_the_hot_key_surge_throttles_for_both_causes_and_capacity_fixes_only_one() -> None:
    results = simulate(
        scenario("hot-key-surge"), [parse("stock:70"), parse("fixed:40000")], progress=None
    )
    stock, ample = _by(results, "stock:70"), _by(results, "fixed:40000")
    assert stock.throttled_by_cause["provisioned"] > 0 and stock.throttled_by_cause["key_range"] > 0
    assert (
        ample.throttled_by_cause["provisioned"] == 0 and ample.throttled_by_cause["key_range"] > 0
    )


def test_results_report_throttles_by_cause_in_json_and_text() -> None:
    trace = scenario("hot-key-surge")
    results = simulate(trace, [parse("stock:70"), parse("on-demand")], progress=None)
    for r in results:
        doc = r.as_json()["throttled_by_cause"]
        assert set(doc) == {"provisioned", "key_range", "on_demand", "max_on_demand"}
        assert sum(doc.values()) == pytest.approx(r.throttled_requests, abs=0.01)
    on_demand = _by(results, "on-demand")
    causes = on_demand.throttled_by_cause
    assert causes["key_range"] > 0 and causes["provisioned"] == causes["max_on_demand"] == 0
    assert on_demand.throttled_requests == pytest.approx(causes["key_range"] + causes["on_demand"])
    text = table(results, trace)
    assert "of which key-range" in text
    row = next(
        line for line in text.splitlines() if line.startswith("stock:70") and "write" in line
    )
    assert f"{_by(results, 'stock:70').throttled_by_cause['key_range']:,.0f}" in row
    assert "of which key-range" not in table(
        simulate(scenario("spike"), [parse("stock:70")], progress=None), trace
    )


# ---------------------------------------------------------------- parameters, CLI, ensemble


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (ModelParams(key_skew=1.5), "key_skew: got 1.5; expected a number from 0 to 1, or None"),
        (
            ModelParams(split_minutes=0),
            "split_minutes: got 0; expected a whole number from 1 to 1,440, or None (never)",
        ),
        (ModelParams(table_size_gb=-1), "table_size_gb: got -1; expected a number from 0"),
        (ModelParams(warm_write_units=2.5), "warm_write_units: got 2.5; expected a whole number"),  # type: ignore[arg-type]
    ],
)
def test_partition_parameters_are_checked_by_name(params: ModelParams, message: str) -> None:
    with pytest.raises(ModelError) as error:
        params.validate()
    assert message in str(error.value)


def _cli(*argv: str) -> tuple[int, str, str]:
    import io

    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_simulate_takes_the_skew_and_split_options_and_names_them_in_errors() -> None:
    code, out, err = _cli(
        "simulate",
        "--scenario",
        "spike",
        "--policy",
        "stock:70",
        "--key-skew",
        "0.3",
        "--split-minutes",
        "off",
        "--json",
        "--quiet",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["model"]["key_skew"] == 0.3 and doc["model"]["split_minutes"] is None
    assert doc["policies"][1]["throttled_by_cause"]["key_range"] > 0
    code, out, _ = _cli(
        "simulate", "--scenario", "hot-key", "--policy", "on-demand", "--json", "--quiet"
    )
    assert json.loads(out)["model"]["key_skew"] == scenario("hot-key").key_skew  # its own
    code, _, err = _cli("simulate", "--scenario", "spike", "--split-minutes", "0")
    assert code == 2
    assert "--split-minutes: got 0; expected a whole number from 1 to 1,440, or off (never)" in err
    code, _, err = _cli("simulate", "--scenario", "spike", "--key-skew", "2")
    assert code == 2 and "--key-skew: got 2.0; expected a number from 0 to 1" in err


def test_the_ensemble_spans_the_hot_keys_share_and_split_time() -> None:
    trace = scenario("hot-key")
    spread = settings_of("plausible", ModelParams(split_minutes=10), trace)
    skews: set[float] = set()
    for p in spread:
        assert p.key_skew is not None  # spread around the trace's own
        skews.add(p.key_skew)
    splits = {p.split_minutes for p in spread}
    assert min(skews) < trace.key_skew < max(skews) <= 1
    assert None in splits and min(s for s in splits if s) < 10 < max(s for s in splits if s)
    plain = settings_of("plausible", ModelParams(), scenario("spike"))
    assert {p.key_skew for p in plain} == {0.0}
    assert {p.split_minutes for p in plain} == {ModelParams().split_minutes}


# ---------------------------------------------------------------- backtest on moto


#: The table's name, the end of its history, and the DynamoDB and CloudWatch clients.
HotHistory = tuple[str, datetime, Any, Any]


@pytest.fixture
def hot_history(
    aws_client: Any, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> HotHistory:
    for name, value in aws_env.items():
        monkeypatch.setenv(name, value)
    ddb, cloudwatch = aws_client("dynamodb"), aws_client("cloudwatch")
    name = f"HotKey{datetime.now(UTC):%H%M%S%f}"
    ddb.create_table(
        TableName=name,
        BillingMode="PROVISIONED",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
    )
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    # writes: 2 hours at 100 WCU/s, then an hour at 900 with 6,000 throttle events a minute,
    # 4,500 of them key-range and 1,500 provisioned; reads: throttled, no causes published
    put_traffic(cloudwatch, name, "write", 100, end=end, minutes=range(1, 121))
    causes = {"KeyRangeThroughput": 4_500, "ProvisionedThroughput": 1_500}
    put_traffic(
        cloudwatch,
        name,
        "write",
        900,
        end=end,
        minutes=range(121, 181),
        throttles=6_000,
        causes=causes,
    )
    put_traffic(cloudwatch, name, "read", 50, end=end, minutes=range(1, 31), throttles=600)
    return name, end, ddb, cloudwatch


def test_a_backtest_splits_refused_demand_by_the_published_causes(hot_history: HotHistory) -> None:
    name, end, ddb, cloudwatch = hot_history
    trace = history(cloudwatch, ddb, name, None, 1, end)
    write = trace.demand[(None, "write")]
    assert write[-150] == pytest.approx(900 + 100)  # consumed + all 6,000 events / 60
    assert trace.key_range is not None and list(trace.key_range) == [(None, "write")]
    key_range = trace.key_range[(None, "write")]
    assert key_range[-150] == pytest.approx(4_500 / 60) and key_range[-10] == 0
    assert "write: 75% of throttle events key-range" in trace.notes
    assert "not published for read" in trace.notes and "lumped" in trace.notes
    # every replay refuses the key-range part again, whatever the capacity
    results = simulate(trace, [parse("fixed:40000"), parse("on-demand")], progress=None)
    for policy in ("fixed:40000", "on-demand"):
        r = _by(results, policy)
        assert r.throttled_by_cause["key_range"] == pytest.approx(4_500 * 60)
        assert r.throttled_by_cause["provisioned"] == 0
        assert _by(results, policy, "read").throttled_requests == 0
    assert math.isclose(sum(trace.demand[(None, "read")][-30:]), 30 * (50 + 10))


def test_a_backtest_without_throttles_reads_no_causes(
    hot_history: HotHistory, aws_client: Any
) -> None:
    name, end, ddb, cloudwatch = hot_history
    trace = history(cloudwatch, ddb, name, None, 1, end - timedelta(hours=4))
    assert trace.key_range is None and "key-range" not in trace.notes
