"""Reserved capacity: the floor the scaler and the simulator's ``+reserved`` policies share, the
simulator's cost rule under a reservation, the construct's ``reserved`` prop, and the tick
against a moto server."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb

from constructs_pkg import CapacityConfigError, ReservedCapacity, ThrottleAwareScaler
from ddb_capacity_runtime.core.decreases import DecreaseLedger
from ddb_capacity_runtime.core.plan import (
    SCALABLE_TARGET,
    UPDATE_TABLE,
    Change,
    Held,
    floor_planned,
)
from ddb_capacity_runtime.core.policy import DECREASE, HOLD, INCREASE, Decision
from ddb_capacity_runtime.core.reservation import Floor, Reservation
from ddb_capacity_runtime.core.settings import ConfigError, ScalerConfig
from ddb_capacity_runtime.core.table_limits import Limits
from ddb_capacity_runtime.core.tables import Dimension, ScalableTarget
from ddb_capacity_tools.cli import main
from ddb_capacity_tools.simulator import (
    ModelError,
    ModelParams,
    PolicyError,
    Prices,
    Trace,
    parse,
    scenario,
    simulate,
)
from tests.support.moto_world import World, idle

START = datetime(2026, 1, 5, tzinfo=UTC)

# ---------------------------------------------------------------------- the floor


def test_the_floor_cuts_decreases_at_the_reservation_and_spends_its_headroom() -> None:
    floor = Floor.over(Reservation(read_units=500), [("read", 300), ("read", 400), ("write", 9)])
    assert floor.cut("read", 400, 100) == 200  # 700 - 500: 200 may fall
    assert floor.cut("read", 300, 5) == 300  # nothing left
    assert floor.cut("read", 300, 900) == 900  # a raise is never limited
    assert floor.cut("write", 9, 1) == 1  # no write reservation


def test_a_capacity_not_counted_allows_no_decrease() -> None:
    # the total below the reservation already: nothing may fall, whatever is asked
    floor = Floor.over(Reservation(write_units=1000), [("write", 600)])
    assert floor.cut("write", 600, 1) == 600


def test_a_capacity_below_zero_counts_as_none() -> None:
    # GIVEN 400 read units counted beside a capacity told as -50, and 100 reserved
    floor = Floor.over(Reservation(read_units=100), [("read", -50), ("read", 400)])
    # THEN the total is 400 (not 350): 300 may fall
    assert floor.cut("read", 400, 0) == 100


def test_a_raise_adds_no_headroom_for_a_later_decrease() -> None:
    # GIVEN 1,000 read units counted, 1,000 reserved: no headroom
    floor = Floor.over(Reservation(read_units=1000), [("read", 600), ("read", 400)])
    # WHEN one table is raised from 600 to 900 (the raise may still fail)
    assert floor.cut("read", 600, 900) == 900
    # THEN the other still may not fall
    assert floor.cut("read", 400, 100) == 400


def test_a_dimension_with_nothing_reserved_falls_as_asked_even_when_not_counted() -> None:
    # GIVEN read units reserved, and no write capacity among those counted
    floor = Floor.over(Reservation(read_units=500), [("read", 900)])
    # THEN a write decrease is not the reservation's to cut: made as asked
    assert floor.cut("write", 50, 10) == 10


def test_a_raise_of_a_targets_minimum_below_its_capacity_is_never_cut() -> None:
    # GIVEN writes at 500 under a target whose minimum goes from 10 up to a floor of 50,
    # with 400 of the 500 reserved (a fall from 500 to 50 would be cut: this is no fall)
    target = ScalableTarget("table/T", "dynamodb:table:WriteCapacityUnits", 10, 1000, True)
    d = Dimension("T", None, "write", 500, DecreaseLedger(), None, Limits(50, 1000, 0.7), target)
    raise_min = Decision(50, "raise min to floor 50", INCREASE)
    change = Change(d, 10, 50, raise_min.reason, INCREASE, SCALABLE_TARGET)
    floor = Floor.over(Reservation(write_units=400), [("write", 500)])
    # THEN the raise is made as asked, and spends none of the 100 units that may fall
    assert floor_planned([(change, raise_min)], floor) == ([(change, raise_min)], [])
    assert floor.cut("write", 500, 0) == 400


def test_a_decrease_cut_at_the_reservation_is_told_as_the_decision_too() -> None:
    # GIVEN reads at 500 asked down to 100, with 300 reserved: 200 may fall
    d = Dimension("T", None, "read", 500, DecreaseLedger(), None, Limits(5, 1000, 0.7))
    lower = Decision(100, "sustained low", DECREASE)
    change = Change(d, 500, 100, lower.reason, DECREASE, UPDATE_TABLE)
    floor = Floor.over(Reservation(read_units=300), [("read", 500)])
    # THEN the decrease is made to 300, and its decision says the same
    [(cut, decision)], held = floor_planned([(change, lower)], floor)
    assert (cut.new, cut.action) == (300, DECREASE) and held == [Held(cut, 100)]
    assert (decision.capacity, decision.action, decision.reason) == (300, DECREASE, cut.reason)
    # and asked again with nothing left to fall: held at 500, change and decision alike
    [(cut, decision)], _ = floor_planned([(change, lower)], floor)
    assert (cut.new, cut.action) == (500, HOLD)
    assert (decision.capacity, decision.action) == (500, HOLD)


# ---------------------------------------------------------------------- the cost rule


def flat(read: float, write: float, minutes: int = 120, gsi: bool = False) -> Trace:
    demand: dict[tuple[str | None, str], list[float]] = {
        (None, "read"): [read] * minutes,
        (None, "write"): [write] * minutes,
    }
    if gsi:
        demand[("byUser", "write")] = [write] * minutes
    return Trace("flat", START, demand)


def costs(trace: Trace, policy: str, **reserved: Any) -> dict[Any, float]:
    params = ModelParams(warmup_minutes=0, **reserved)
    return {r.key: r.cost_usd for r in simulate(trace, [parse(policy)], params, progress=None)}


def test_capacity_below_the_reservation_costs_nothing_and_above_costs_list_price() -> None:
    trace, prices = flat(10, 10), Prices()
    hours = trace.minutes / 60
    for reserved, charged in ((0, 300), (200, 100), (300, 0), (500, 0)):
        got = costs(trace, "fixed:300", reserved_write_units=reserved)
        assert got[(None, "write")] == pytest.approx(charged * hours * prices.unit_hour("write"))
        # reads are not covered by a write reservation
        assert got[(None, "read")] == pytest.approx(300 * hours * prices.unit_hour("read"))


def test_a_dimensions_keys_share_its_charged_part_and_add_up_to_it() -> None:
    # GIVEN a table and a GSI at 300 write units each (600), 400 reserved
    trace, prices = flat(10, 10, gsi=True), Prices()
    got = costs(trace, "fixed:300", reserved_write_units=400)
    hours = trace.minutes / 60
    # THEN 200 units are charged, shared in proportion (100 each)
    total = got[(None, "write")] + got[("byUser", "write")]
    assert total == pytest.approx(200 * hours * prices.unit_hour("write"))
    assert got[(None, "write")] == pytest.approx(got[("byUser", "write")])


def test_on_demand_is_not_covered_and_unit_hours_stay_provisioned() -> None:
    trace = flat(10, 10)
    assert costs(trace, "on-demand", reserved_write_units=1000) == costs(trace, "on-demand")
    (row,) = [
        r
        for r in simulate(
            trace, [parse("fixed:300")], ModelParams(reserved_write_units=300), progress=None
        )
        if r.key == (None, "write")
    ]
    assert row.cost_usd == 0 and row.provisioned_unit_hours == pytest.approx(300 * 2)


# ---------------------------------------------------------------------- the +reserved policies


@pytest.mark.parametrize("policy", ["stock:70", "stock:90", "throttle-aware"])
def test_the_aware_policy_refuses_no_more_and_costs_no_more(policy: str) -> None:
    # GIVEN a day of diurnal traffic, reserved at about the unaware policy's median total
    day = scenario("diurnal")
    trace = replace(day, demand={k: v[:1440] for k, v in day.demand.items()})
    params = ModelParams(reserved_read_units=4900, reserved_write_units=1200)
    unaware, aware = (
        {r.key: r for r in simulate(trace, [parse(p)], params, progress=None)}
        for p in (policy, policy + "+reserved")
    )
    # THEN the aware one refuses no more and costs no more, under the same cost rule; but
    # for the throttle-aware policy's decreases the reservation cuts below its minimum
    # saving, which it holds (not worth one of the day's few decreases): 2.0 % more here
    refused = [sum(r.throttled_requests for r in x.values()) for x in (unaware, aware)]
    cost = [sum(r.cost_usd for r in x.values()) for x in (unaware, aware)]
    more = 1.025 if policy == "throttle-aware" else 1.0
    assert refused[1] <= refused[0] and cost[1] <= cost[0] * more + 1e-9
    # AND it never lowered a dimension's total below the reservation
    for key, r in aware.items():
        units = params.reservation.units(key[1])
        before = r.recorded.provisioned
        lowered = [b for a, b in zip(before, before[1:], strict=False) if b < a]
        assert all(level >= units for level in lowered)
    # AND capacity was held higher somewhere: the floor is what made the difference
    assert any(
        sum(aware[k].recorded.provisioned) > sum(unaware[k].recorded.provisioned) for k in aware
    )


def test_reserved_applies_to_policies_that_lower_capacity_only() -> None:
    assert parse("autopilot+stock:70+reserved").reserved
    assert parse("stock:70+reserved").value == 70
    for text in ("fixed:5+reserved", "on-demand+reserved", "oracle+reserved"):
        with pytest.raises(PolicyError, match=r"'\+reserved' applies to stock, scheduled"):
            parse(text)


def test_the_hybrid_with_a_reservation_is_refused_by_name() -> None:
    with pytest.raises(PolicyError, match="the hybrid does not model reserved capacity"):
        simulate(flat(1, 1), [parse("hybrid")], ModelParams(reserved_read_units=100))


@pytest.mark.parametrize("value", [150, -100, 10_000_100, 99.5])
def test_reserved_units_that_are_not_whole_hundreds_are_refused(value: Any) -> None:
    with pytest.raises(
        ModelError, match=rf"^--reserved-write-units: got {value!r}; expected a whole"
    ):
        ModelParams(reserved_write_units=value).validate(flags=True)


@pytest.mark.parametrize("value", [0, 100, 10_000_000])
def test_reserved_units_from_none_to_the_most_taken_are_accepted(value: int) -> None:
    # GIVEN whole hundreds from 0 (no reservation) to MAX_RESERVED_UNITS
    params = ModelParams(reserved_read_units=value, reserved_write_units=value)
    # THEN the simulator takes them as the reservation
    params.validate(flags=True)
    assert params.reservation == Reservation(value, value)


def test_the_command_line_takes_the_reservation_and_refuses_a_bad_one(capsys: Any) -> None:
    code = main(["simulate", "--scenario", "spike", "--reserved-read-units", "550"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--reserved-read-units: got 550; expected a whole number of hundreds" in err
    args = ["simulate", "--scenario", "spike", "--policy", "stock:70+reserved", "--json"]
    assert main([*args, "--reserved-write-units", "8000"]) == 0
    assert '"stock:70+reserved"' in capsys.readouterr().out


# ---------------------------------------------------------------------- settings and construct


def test_the_lambda_refuses_reserved_units_that_are_not_hundreds() -> None:
    with pytest.raises(ConfigError, match="SCALER_RESERVED_READ_UNITS must be a multiple of 100"):
        ScalerConfig.from_env({"SCALER_TABLES": "t", "SCALER_RESERVED_READ_UNITS": "150"})
    config = ScalerConfig.from_env({"SCALER_TABLES": "t", "SCALER_RESERVED_WRITE_UNITS": "300"})
    assert config.reservation == Reservation(0, 300)


def _scaler(**props: Any) -> dict[str, Any]:
    app = cdk.App()
    stack = cdk.Stack(app, "Reserved")
    table = dynamodb.Table(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PROVISIONED,
    )
    ThrottleAwareScaler(stack, "Scaler", tables=[table], **props)
    template = cdk.assertions.Template.from_stack(stack)
    (function,) = [
        f
        for f in template.find_resources("AWS::Lambda::Function").values()
        if f["Properties"]["Handler"].endswith("scaler.handler.lambda_handler")
    ]
    env: dict[str, Any] = function["Properties"]["Environment"]["Variables"]
    return env


def test_the_template_carries_the_reservation() -> None:
    env = _scaler(reserved=ReservedCapacity(read_units=500, write_units=1200))
    assert env["SCALER_RESERVED_READ_UNITS"] == "500"
    assert env["SCALER_RESERVED_WRITE_UNITS"] == "1200"
    assert ScalerConfig.from_env(
        {k: v for k, v in env.items() if isinstance(v, str)} | {"SCALER_TABLES": "t"}
    ).reservation == Reservation(500, 1200)
    assert "SCALER_RESERVED_READ_UNITS" not in _scaler()


def test_the_reserved_prop_reads_as_the_run_times_reservation_dimension_by_dimension() -> None:
    reserved = ReservedCapacity(read_units=500, write_units=1200)
    # THEN each dimension's units are that dimension's in the run-time's reservation
    assert reserved.reservation == Reservation(read_units=500, write_units=1200)
    assert (reserved.reservation.units("read"), reserved.reservation.units("write")) == (500, 1200)


@pytest.mark.parametrize(
    ("field", "value"), [("read_units", 150), ("write_units", -100), ("read_units", True)]
)
def test_bad_reserved_props_are_refused_naming_them(field: str, value: Any) -> None:
    with pytest.raises(
        CapacityConfigError,
        match=rf"ReservedCapacity: {field}: got {value!r}; expected a whole number of hundreds",
    ):
        ReservedCapacity(**{field: value})
    with pytest.raises(CapacityConfigError, match=r"reserved: got 500; expected ReservedCapacity"):
        _scaler(reserved=500)


# ---------------------------------------------------------------------- the tick, on moto


@pytest.fixture
def world(aws_client: Any) -> Iterator[World]:
    made = World(aws_client)
    yield made
    made.close()


def test_a_decrease_is_cut_back_at_the_reservation(world: World) -> None:
    # GIVEN two idle tables: 400 and 300 write units, 400 reserved
    big = idle(world, "big", 200, 400)
    small = idle(world, "small", 200, 300)
    # WHEN one tick runs
    summary, lines = world.tick(SCALER_RESERVED_WRITE_UNITS="400")
    # THEN the writes fall by 300 in all (700 -> 400), in the order the tables are decided;
    # the reads, not reserved, fall to the minimum
    writes = world.throughput(big)[1] + world.throughput(small)[1]
    assert writes == 400
    assert world.throughput(big)[0] == world.throughput(small)[0] == 5
    assert summary["failures"] == []
    held = [line for line in lines if line.get("event") == "held-by-reservation"]
    assert held and all(h["reserved"] == 400 and h["new"] > h["asked"] for h in held)
    counted = sum(line.get("HeldByReservation", 0) for line in lines if "_aws" in line)
    assert counted == len(held)


def test_a_decrease_the_reservation_holds_carries_no_small_one_along(world: World) -> None:
    # GIVEN an idle table's 400 read units, all reserved, and its writes 40 units/s at 100:
    # 58 would do, a saving under the 50 % a decrease must save alone here
    name = world.table("reserved", 400, 100)
    world.traffic(name, "read", 1, minutes=range(0, 40))
    world.traffic(name, "write", 40, minutes=range(0, 40))
    settings = {"SCALER_MIN_SAVING_PERCENT": "50"}
    # WHEN one tick runs
    summary, _ = world.tick(SCALER_RESERVED_READ_UNITS="400", **settings)
    # THEN the reads stay at the reservation, and the writes with them: a small decrease
    # rides along only with a decrease that is made
    assert world.throughput(name) == (400, 100)
    assert summary["failures"] == []
    # AND without the reservation, the reads fall and the writes ride along
    world.tick(**settings)
    assert world.throughput(name) == (5, 58)


def test_a_decrease_the_reservation_cuts_below_the_minimum_saving_is_held(world: World) -> None:
    # GIVEN two idle tables of 1,000 write units, 1,900 reserved: 100 units may fall
    tables = [idle(world, f"worth{n}", 100, 1000) for n in range(2)]
    # WHEN one tick runs (a decrease must save 20 % by default)
    summary, lines = world.tick(SCALER_RESERVED_WRITE_UNITS="1900")
    # THEN no table falls 1,000 -> 900 (10 %): the reservation left too little to be worth
    # one of the table's few decreases a day
    assert [world.throughput(t)[1] for t in tables] == [1000, 1000]
    assert summary["failures"] == []
    # AND with 1,600 reserved, one falls by the 400 left (40 %: worth it)
    world.tick(SCALER_RESERVED_WRITE_UNITS="1600")
    assert sorted(world.throughput(t)[1] for t in tables) == [600, 1000]


def test_the_floor_spends_nothing_on_a_fall_not_worth_making() -> None:
    floor = Floor.over(Reservation(write_units=1900), [("write", 1000), ("write", 1000)])
    assert floor.cut("write", 1000, 5, worth=0.2) == 1000  # 100 of 1,000 left: not worth it
    assert floor.cut("write", 1000, 5) == 900  # the 100 were not spent
    # a fall the floor does not cut is not its to judge
    assert (
        Floor.over(Reservation(write_units=100), [("write", 1000)]).cut(
            "write", 1000, 950, worth=0.2
        )
        == 950
    )


def test_a_table_whose_description_fails_counts_as_zero(world: World) -> None:
    # GIVEN an idle table of 400 write units and one of 300 whose DescribeTable fails
    quiet = idle(world, "idle", 200, 400)
    broken = idle(world, "broken", 200, 300)

    def fail(params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") == broken:
            raise RuntimeError("injected: DescribeTable failed")

    world.ddb.meta.events.register("before-parameter-build.dynamodb.DescribeTable", fail)
    try:
        summary, _ = world.tick(SCALER_RESERVED_WRITE_UNITS="300")
    finally:
        world.ddb.meta.events.unregister("before-parameter-build.dynamodb.DescribeTable", fail)
    # THEN the idle table keeps the whole reservation (400 - 300 may fall, no more): the
    # broken table's 300 units were not counted
    assert world.throughput(quiet)[1] == 300
    assert world.throughput(broken) == (200, 300)
    assert [f["table"] for f in summary["failures"]] == [broken]


@pytest.mark.parametrize("told", [10**15, 1_000_001, -300, 300.5, "300", None])
def test_a_table_whose_capacity_is_not_sound_counts_as_zero(world: World, told: Any) -> None:
    # GIVEN an idle table of 400 write units and one of 300 whose DescribeTable, as the
    # tick reads it, tells a write capacity no table has (the re-read before an UpdateTable
    # tells the truth)
    quiet = idle(world, "idle", 200, 400)
    liar = idle(world, "liar", 200, 300)
    reads = []

    def forge(parsed: dict[str, Any], **_: Any) -> None:
        table = parsed.get("Table", {})
        if table.get("TableName") == liar:
            reads.append(1)
            if len(reads) == 1:
                table["ProvisionedThroughput"]["WriteCapacityUnits"] = told

    event = "after-call.dynamodb.DescribeTable"
    world.ddb.meta.events.register(event, forge)
    try:
        summary, lines = world.tick(SCALER_RESERVED_WRITE_UNITS="400")
    finally:
        world.ddb.meta.events.unregister(event, forge)
    # THEN that table fails alone, counted, and is changed in nothing; the idle one keeps
    # the whole reservation: the forged units were not counted as headroom
    assert world.throughput(quiet)[1] == 400
    assert world.throughput(liar) == (200, 300)
    (failure,) = summary["failures"]
    assert failure["table"] == liar
    assert f"DescribeTable {liar} table: WriteCapacityUnits is" in failure["reason"]
    assert failure["reason"].endswith("expected a whole number from 0 to 1,000,000")
    counted = next(line for line in lines if "_aws" in line and line.get("TableName") == liar)
    assert counted["Failures"] == 1


def test_the_reservation_benchmark_runs_in_its_quick_mode(capsys: Any) -> None:
    from benchmarks import reservation_aware

    assert reservation_aware.main(["--quick", "--processes", "1"]) == 0
    printed = capsys.readouterr().out
    rows = [line for line in printed.splitlines() if " stock:70 " in line]
    assert len(rows) == 4  # two scenarios, two levels
    assert all(line.endswith("holds") for line in rows)
    assert "real traces: not read in --quick" in printed


def test_the_reservation_benchmark_cuts_a_trace_s_key_range_refusals_with_its_demand(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    # GIVEN a scenario whose history refused part of its demand as key-range throttles
    from benchmarks import reservation_aware
    from ddb_capacity_tools.simulator import scenario

    whole = scenario("diurnal")
    refused = {key: [1.0] * len(minutes) for key, minutes in whole.demand.items()}
    monkeypatch.setattr(reservation_aware, "scenario", lambda _: replace(whole, key_range=refused))
    # WHEN the quick benchmark cuts it to two days: THEN its refusals are cut alike
    (trace, _) = reservation_aware.traces(tmp_path, quick=True)
    assert trace.key_range is not None
    assert (
        {len(v) for v in trace.key_range.values()}
        == {2 * 1440}
        == {len(v) for v in trace.demand.values()}
    )
