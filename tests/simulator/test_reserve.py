"""``ddb-capacity reserve``: the hour's billed units, the bill with and without a reservation,
the sizing rule, the anchors, a fleet against its tables alone, the command's output and its
refusals, and ``--all-tables`` against a moto server."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_tools import advise as advise_module
from ddb_capacity_tools import reserve, reserve_command, reserve_sizing, reserve_words
from ddb_capacity_tools.cli import main
from ddb_capacity_tools.local_aws import put_traffic
from ddb_capacity_tools.simulator.backtest import describe
from ddb_capacity_tools.simulator.prices import Prices
from ddb_capacity_tools.simulator.scenarios import scenario
from ddb_capacity_tools.simulator.table_class import STANDARD_IA
from tests.support import browser
from tests.support.cli import Terminal
from tests.support.hypothesis_profiles import examples
from tests.support.report_page import panels, series
from tests.support.reserve import START, result, trace_of, write_trace

PRICES = Prices()
REGION = "ap-south-2"
"""A Region no other test uses, so that --all-tables sees only these tables."""


def run(*argv: str, terminal: bool = False) -> tuple[int, str, str]:
    """``main(argv)``: its exit status, stdout and stderr (a terminal's with ``terminal``)."""
    out, err = io.StringIO(), Terminal() if terminal else io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_an_hour_bills_its_highest_level_and_a_part_hour_its_minutes() -> None:
    # 00:30 to 02:29: half of hour 0, all of hour 1, half of hour 2
    levels = [100] * 30 + [100] * 59 + [500] + [50] * 10 + [70] * 20
    hours = reserve_sizing.hourly(
        [result("read", levels), result("write", [10] * 120)], trace_of(120), 0, 120, PRICES
    )
    assert hours.read == [100, 500, 70]
    assert hours.write == [10, 10, 10]
    assert hours.weights == pytest.approx([0.5, 1.0, 0.5])
    assert hours.other_usd == 0


def test_a_table_and_its_index_are_summed_and_on_demand_minutes_billed_per_request() -> None:
    table = result("write", [200] * 60)
    index = result("write", [0] * 30 + [300] * 30, served=[50.0] * 60)
    index.key = ("ByG", "write")
    hours = reserve_sizing.hourly(
        [table, index, result("read", [5] * 60)],
        trace_of(60, START.replace(minute=0)),
        0,
        60,
        PRICES,
    )
    assert hours.write == [500]
    assert hours.other_usd == pytest.approx(PRICES.on_demand("write", 30 * 50.0))


def test_reserved_units_cost_their_rate_used_or_not_and_units_above_cost_the_list_price() -> None:
    rate, listed = 0.3, 1.0
    assert reserve_sizing.bill([100, 300], [1, 1], 200, rate, listed) == pytest.approx(
        2 * 200 * rate + 100 * listed
    )
    assert reserve_sizing.bill([100, 300], [1, 0.5], 0, rate, listed) == pytest.approx(100 + 150)


def flat(units: int, hours: int = 100) -> reserve_sizing.Hours:
    return reserve_sizing.Hours([units] * hours, [units] * hours, [1.0] * hours)


def test_flat_traffic_reserves_more_for_three_years_than_one_and_never_above_its_level() -> None:
    one, three = (reserve_sizing.size(flat(1_000), term, PRICES) for term in ("1y", "3y"))
    assert three == {"read": 1_000, "write": 1_000}
    assert all(0 < one[d] < 1_000 for d in reserve_sizing.DIMENSIONS)
    assert all(v % 100 == 0 for v in (*one.values(), *three.values()))
    # with a single future, the level as it was
    assert reserve_sizing.size(flat(1_000), "1y", PRICES, futures=(1.0,))["read"] == 1_000


def test_the_plan_is_cut_to_what_still_pays_at_a_third_less_traffic() -> None:
    # busy half the hours: one year pays at the full level (50 % > 46 % of hours), but at a
    # third less traffic only up to 667 x 0.5 / 0.46 units
    half = reserve_sizing.Hours([1_000, 0] * 50, [1_000, 0] * 50, [1.0] * 100)
    assert reserve_sizing.size(half, "1y", PRICES, futures=(1.0,))["read"] == 1_000
    assert reserve_sizing.no_regret(half, "1y", PRICES) == {"read": 700, "write": 700}
    # three years pay down to 23 % of hours: no cut
    assert reserve_sizing.no_regret(half, "3y", PRICES)["read"] == 1_000
    assert reserve_sizing.no_regret(flat(1_000), "1y", PRICES) == {"read": 1_000, "write": 1_000}


def test_a_reservation_that_would_not_pay_is_not_made() -> None:
    spiky = reserve_sizing.Hours([0] * 99 + [5_000], [0] * 99 + [5_000], [1.0] * 100)
    assert reserve_sizing.size(spiky, "1y", PRICES) == {"read": 0, "write": 0}


def test_the_anchor_rules_read_the_hours_they_are_given() -> None:
    units = list(range(100, 2_100, 20))  # 100 hours, 100 to 2,080
    hours = reserve_sizing.Hours(units, units, [1.0] * 100)
    anchors = reserve_sizing.anchors(hours, "1y", PRICES)
    # met in 95 of 100 hours: the 6th lowest, 200, already a whole block
    assert anchors["nops_95"]["read"] == 200
    # the past-optimal level leaves about 46 % of hours above it
    above = sum(u > anchors["past_optimal"]["read"] for u in units)
    assert 40 <= above <= 52


def test_the_no_regret_cut_never_loses_money_at_a_third_less_traffic() -> None:
    hours = reserve_sizing.Hours([900, 1_000, 1_100] * 30, [300] * 90, [1.0] * 90)
    cut = reserve_sizing.no_regret(hours, "1y", PRICES)
    for d in reserve_sizing.DIMENSIONS:
        units = [2 / 3 * u for u in hours.units(d)]
        with_it = reserve_sizing.bill(
            units, hours.weights, cut[d], PRICES.reserved_unit_hour("1y", d), PRICES.unit_hour(d)
        )
        without = reserve_sizing.bill(units, hours.weights, 0, 0.0, PRICES.unit_hour(d))
        assert with_it <= without + 1e-9


def table_hours(name: str, read: list[int], write: list[int]) -> reserve.TableHours:
    run = reserve.Run("stock:90", reserve_sizing.Hours(read, write, [1.0] * len(read)), None, 0.0)
    return reserve.TableHours(name, run, run)


@settings(max_examples=examples(40), deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 3_000), min_size=24, max_size=24), min_size=2, max_size=4),
    st.sampled_from(["1y", "3y"]),
)
def test_a_fleet_planned_as_one_never_expects_more_than_its_tables_planned_alone(
    levels: list[list[int]], term: str
) -> None:
    setup = reserve.Setup()
    tables = [table_hours(f"t{n}", u, u[::-1]) for n, u in enumerate(levels)]
    fleet = reserve.plan_fleet(tables, [term], setup)
    alone = sum(
        reserve.plan_fleet([t], [term], setup).by_term[term]["expected_usd"] for t in tables
    )
    assert fleet.by_term[term]["expected_usd"] <= alone + 1e-6


def test_a_plan_of_one_block_says_one_block() -> None:
    # GIVEN a fleet busy at 100 read and 200 write units every hour: one block and two
    tables = [table_hours("orders", [100] * 48, [200] * 48)]
    plan = reserve.plan_fleet(tables, ["3y"], reserve.Setup())
    assert plan.units == {"read": 100, "write": 200}
    # THEN the words count them as words do
    words = reserve_words.text(plan, {"heading": "reserve"})
    assert "reserve 100 read units (1 block) and 200 write units (2 blocks) for 3y" in words


@pytest.fixture(scope="module")
def fleet_files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    folder = tmp_path_factory.mktemp("fleet")
    return [
        write_trace(folder / "orders.csv", 2 * 1440, 800),
        write_trace(folder / "carts.csv", 2 * 1440, 300),
    ]


def test_json_holds_the_plan_the_prices_and_each_part_of_hours(
    fleet_files: list[str], tmp_path: Path
) -> None:
    page = tmp_path / "plan.html"
    code, out, err = run(
        "reserve", "--trace", fleet_files[0], "--trace", fleet_files[1],
        "--score-from", "2026-01-06T00:30", "--policy", "stock:90", "--term", "both",
        "--json", "--quiet", "--processes", "1", "--html", str(page),
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    plan = doc["plan"]
    assert plan["term"] in ("1y", "3y")
    assert plan["read_units"] > 0 and plan["read_units"] % 100 == 0
    assert plan["write_units"] % 100 == 0
    reserved = doc["prices"]["reserved"]
    assert reserved["1y"]["wcu_hour_per_unit"] == pytest.approx((150 / 8760 + 0.0128) / 100)
    assert doc["prices"]["reserved_verified"] is False
    # a day from 00:30: 25 clock hours, the first and last half-hours
    assert len(doc["score_hourly"]["read"]) == len(doc["hour_weights"]["score"]) == 25
    assert sum(doc["hour_weights"]["score"]) == pytest.approx(24)
    assert len(doc["current_train_hourly"]["write"]) == 25
    # the recommended stock:90 provisions less than the past bill's stock:70, hour by hour
    assert sum(doc["plan_hourly"]["read"]) < sum(doc["current_train_hourly"]["read"])
    assert doc["refused"] is not None
    monthly = doc["monthly_usd"]
    assert monthly["with_plan"] < monthly["without_plan"]
    assert doc["fall_by_third_monthly_usd"]["without_plan"] < monthly["without_plan"]
    html = page.read_text()
    assert "Reserved capacity: 2 tables" in html and "page written" in err


def test_words_name_the_plan_the_stress_and_the_unverified_prices(fleet_files: list[str]) -> None:
    code, out, _ = run(
        "reserve", "--trace", fleet_files[0], "--score-from", "2026-01-06T00:30",
        "--policy", "stock:80", "--quiet", "--processes", "1",
    )  # fmt: skip
    assert code == 0
    assert "plan: reserve" in out and "for 1y" in out
    assert "if traffic falls by a third" in out
    assert "UNVERIFIED" in out
    assert "--price" in out


def test_the_progress_bar_counts_tables_on_a_terminal_and_lines_elsewhere(
    fleet_files: list[str],
) -> None:
    argv = ["reserve", "--trace", fleet_files[0], "--trace", fleet_files[1], "--processes", "1"]
    argv += ["--score-from", "2026-01-06T00:30", "--policy", "stock:90"]
    # GIVEN stderr on a terminal: the bar counts the tables planned, to the last
    code, out, err = run(*argv, terminal=True)
    assert code == 0, err
    assert "reserve [" in err and "0/2 tables" in err and "2/2 tables" in err
    # AND --quiet hides it
    assert run(*argv, "--quiet", terminal=True) == (0, out, "")
    # AND into a file, a pipe or a CI log (no terminal) lines, with the same answer
    code, again, err = run(*argv)
    assert (code, again) == (0, out)
    assert [line.split(" (")[0] for line in err.splitlines()] == [
        "reserve: 0%",
        "reserve: 50%",
        "reserve: 100%",
    ]
    assert run(*argv, "--progress", "none") == (0, out, "")


def test_a_reservation_that_loses_on_the_scored_part_is_told(tmp_path: Path) -> None:
    # GIVEN a table whose traffic falls to a tenth on the day the plan is scored on
    rows = ["timestamp,read,write"]
    for m in range(2 * 1440):
        read = 800.0 if m < 1440 else 80.0
        rows.append(f"{START + timedelta(minutes=m):%Y-%m-%dT%H:%M:%SZ},{read},{read / 4}")
    trace = tmp_path / "falls.csv"
    trace.write_text("\n".join(rows) + "\n")
    # WHEN a plan is made on the first day and scored on the second
    argv = ["reserve", "--trace", str(trace), "--score-from", "2026-01-06T00:30"]
    code, out, err = run(*argv, "--policy", "stock:90", "--quiet", "--processes", "1")
    assert code == 0, err
    # THEN the words say the reservation lost money there, and by how much
    code, doc, _ = run(*argv, "--policy", "stock:90", "--quiet", "--processes", "1", "--json")
    monthly = json.loads(doc)["monthly_usd"]
    assert monthly["with_plan"] > monthly["without_plan"]
    lost = f"${monthly['with_plan'] - monthly['without_plan']:,.2f}"
    assert (
        f"warning: on the scored part the reservation cost {lost} a month more than buying "
        "none: the planning part's hours did not hold there" in out
    ), out


def test_an_overridden_price_moves_the_plan(fleet_files: list[str]) -> None:
    args = ["reserve", "--trace", fleet_files[0], "--policy", "stock:90", "--json", "--quiet"]
    cheap = json.loads(run(*args)[1])
    dear = json.loads(run(*args, "--price", "reserved_1y_rcu_hour=0.012")[1])
    assert dear["plan"]["read_units"] < cheap["plan"]["read_units"]
    assert dear["prices"]["reserved_verified"] is False


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--score-from", "2027-01-01T00:00"], "--score-from: got '2027-01-01T00:00'"),
        (["--score-from", "2026-01-05T00:40"], "--score-from: got minute 10"),
        (["--processes", "0"], "--processes: got 0; expected a whole number from 1 to 64"),
        (["--current", "on-demand"], "--current: got 'on-demand'; expected a provisioned"),
        (["--policy", "sometimes"], "--policy: got 'sometimes'"),
        (["--policy", "oracle"], "--policy: got 'oracle'; expected stock:T"),
        (["--policy", "autopilot:70+lumped"], "--policy: got 'autopilot:70+lumped'; expected"),
        (["--days", "3"], "--days: applies to --all-tables only"),
        (["--price", "reserved_1y_wcu_hour=-1"], "--price reserved_1y_wcu_hour: got '-1'"),
        (
            ["--price", "wcu_hour=0"],
            "--price wcu_hour: got '0'; expected a number of dollars > 0 (the list price a "
            "reserved unit's break-even is a share of)",
        ),
        (
            ["--price", "rcu_hour=0.0"],
            "--price rcu_hour: got '0.0'; expected a number of dollars > 0",
        ),
    ],
)
def test_bad_input_is_refused_in_one_line_naming_it(
    fleet_files: list[str], extra: list[str], words: str
) -> None:
    code, out, err = run("reserve", "--trace", fleet_files[0], "--quiet", *extra)
    assert code == 2 and not out
    assert words in err and err.count("\n") == 1


def test_traces_of_different_windows_are_not_one_fleet(
    fleet_files: list[str], tmp_path: Path
) -> None:
    later = write_trace(tmp_path / "later.csv", 2 * 1440, 100, START + timedelta(hours=1))
    code, _, err = run("reserve", "--trace", fleet_files[0], "--trace", later, "--quiet")
    assert code == 2
    assert f"--trace {later}: got 2026-01-05T01:30Z + 2,880 minutes" in err
    assert "a fleet's traces cover one window" in err
    code, _, err = run("reserve", "--trace", fleet_files[0], "--trace", fleet_files[0])
    assert code == 2 and "twice" in err


def test_a_term_not_offered_is_refused(fleet_files: list[str]) -> None:
    code, out, err = run("reserve", "--trace", fleet_files[0], "--term", "2y")
    assert code == 2 and not out
    assert (
        err
        == "ddb-capacity: error: --term: got '2y'; expected 1y, 3y or both (the terms AWS offers)\n"
    )


@pytest.fixture(scope="module")
def region(aws_env: dict[str, str]) -> Iterator[datetime]:
    """Two tables of a Region no other test uses, with steady traffic (900 and 150 units/s)
    in the last 15 hours of a day, three in five of its hours (enough for a year's
    reservation to pay and to be each table's median hour): moto's GetMetricData looks
    through every datapoint of the Region, minute by minute, for each query, so each
    datapoint slows every history read; the end of that day."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in aws_env.items():
            patch.setenv(name, value)
        patch.setenv("AWS_DEFAULT_REGION", REGION)
        patch.setenv("AWS_REGION", REGION)
        ddb = boto3.client("dynamodb", region_name=REGION)
        cloudwatch = boto3.client("cloudwatch", region_name=REGION)
        for name in ddb.list_tables()["TableNames"]:
            ddb.delete_table(TableName=name)
        end = datetime.now(UTC).replace(second=0, microsecond=0)
        for name, level in (("ReserveBig", 900), ("ReserveSmall", 150)):
            ddb.create_table(
                TableName=name,
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
            )
            for dim in ("read", "write"):
                put_traffic(cloudwatch, name, dim, level, end=end, minutes=range(1, 15 * 60 + 1))
        yield end


@pytest.fixture
def in_region(aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in aws_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)


def plan_all_tables(end: datetime) -> dict[str, Any]:
    """``reserve --all-tables`` over the day before ``end``, every table on stock:90."""
    code, out, err = run(
        "reserve", "--all-tables", "--days", "1", "--end", end.isoformat(),
        "--policy", "stock:90", "--json", "--quiet", "--processes", "1",
    )  # fmt: skip
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_all_tables_plans_on_every_readable_table(
    region: datetime, in_region: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    described = counting_describe_table(monkeypatch)
    doc = plan_all_tables(region)
    # each table's GSIs and replicas read from one DescribeTable
    assert sorted(described) == ["ReserveBig", "ReserveSmall"]
    assert sorted(t["name"] for t in doc["tables"]) == ["ReserveBig", "ReserveSmall"]
    # both tables' units, summed: more than the bigger alone provisions at 90 %
    assert max(doc["plan_hourly"]["write"]) >= 900 / 0.9 + 150
    # tables of one Region (moto keeps no replicas): none is taken for a replica
    assert not any(reserve_command.REPLICA_NOTE in t["warnings"] for t in doc["tables"])


def counting_describe_table(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tables the command's own DynamoDB client describes, a name a DescribeTable."""
    made = advise_module.boto3_clients
    calls: list[str] = []

    def clients(region: str | None = None) -> advise_module.Clients:
        out = made(region)
        out.dynamodb.meta.events.register(
            "before-parameter-build.dynamodb.DescribeTable",
            lambda params, **_: calls.append(params["TableName"]),
        )
        return out

    monkeypatch.setattr(advise_module, "boto3_clients", clients)
    return calls


def answering(
    monkeypatch: pytest.MonkeyPatch, replicas: dict[str, Any], field: str = "Replicas"
) -> None:
    """DescribeTable's answer for each table of ``replicas`` carries that ``Replicas`` (or
    that ``field``: moto keeps no replicas nor table class): the command's own DynamoDB
    client, against the moto server, with its parsed answer edited as AWS would give it."""
    made = advise_module.boto3_clients

    def clients(region: str | None = None) -> advise_module.Clients:
        out = made(region)

        def edit(parsed: dict[str, Any], **_: Any) -> None:
            name = parsed.get("Table", {}).get("TableName")
            if name in replicas:
                parsed["Table"][field] = replicas[name]

        out.dynamodb.meta.events.register("after-call.dynamodb.DescribeTable", edit)
        return out

    monkeypatch.setattr(advise_module, "boto3_clients", clients)


def test_all_tables_reserves_no_write_units_for_a_replica(
    region: datetime, in_region: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same fleet, ReserveBig a global table's replica."""
    answering(monkeypatch, {"ReserveBig": [{"RegionName": "eu-west-1"}, {"RegionName": REGION}]})
    doc = plan_all_tables(region)
    notes = {t["name"]: t["warnings"] for t in doc["tables"]}
    assert notes["ReserveBig"] == [reserve_command.REPLICA_NOTE] and notes["ReserveSmall"] == []
    # only the small table's writes are planned: under what the big one alone provisions
    assert 0 < max(doc["plan_hourly"]["write"]) < 900 / 0.9


@pytest.mark.parametrize(
    "replicas",
    [
        [{"RegionName": None}],
        [{"RegionName": "Moon Base"}, "x"],
        {"RegionName": "eu-west-1"},
        "eu-west-1",
    ],
)
def test_a_table_whose_replicas_cannot_be_read_is_planned_as_a_replica(
    region: datetime, in_region: None, monkeypatch: pytest.MonkeyPatch, replicas: Any
) -> None:
    """DescribeTable's Replicas, there but unreadable (untrusted input): the table may be a
    global table's replica, so its writes are not reserved on a guess, and its warning says
    why."""
    answering(monkeypatch, {"ReserveBig": replicas})
    doc = plan_all_tables(region)
    (warning,) = {t["name"]: t["warnings"] for t in doc["tables"]}["ReserveBig"]
    assert warning.startswith(reserve_command.REPLICA_NOTE)
    assert "could not all be read" in warning
    assert 0 < max(doc["plan_hourly"]["write"]) < 900 / 0.9


IA = advise_module.class_note(STANDARD_IA)


@pytest.mark.parametrize(
    ("summary", "note"),
    [
        ({"TableClass": STANDARD_IA}, IA),
        ({"TableClass": "GLACIER"}, f"{IA}; taken for one as DescribeTable's "),
        ("STANDARD", f"{IA}; taken for one as DescribeTable's "),
    ],
    ids=["infrequent-access", "unknown-class", "not-an-object"],
)
def test_all_tables_reserves_nothing_for_a_standard_ia_table(
    region: datetime, in_region: None, monkeypatch: pytest.MonkeyPatch, summary: Any, note: str
) -> None:
    """The same fleet, ReserveBig of the Standard-Infrequent Access class (or a class not to
    be read): reserved capacity covers the Standard class only."""
    answering(monkeypatch, {"ReserveBig": summary}, field="TableClassSummary")
    doc = plan_all_tables(region)
    tables = {t["name"]: t for t in doc["tables"]}
    (warning,) = tables["ReserveBig"]["warnings"]
    assert warning.startswith(note)
    assert tables["ReserveBig"]["infrequent_access"] is True
    assert (tables["ReserveSmall"]["warnings"], tables["ReserveSmall"]["infrequent_access"]) == (
        [],
        False,
    )
    # only the small table's units are planned: under what the big one alone provisions
    for dimension in ("read", "write"):
        assert 0 < max(doc["plan_hourly"][dimension]) < 900 / 0.9


def test_a_standard_ia_table_gets_no_reserved_units_and_is_billed_at_its_class_price() -> None:
    steady = [1_000] * 48
    run = reserve.Run("stock:90", reserve_sizing.Hours(steady, steady, [1.0] * 48), None, 0.0)
    table = reserve.TableHours("archive", run, run)
    notes = {"archive": IA}
    (ia,) = reserve_command.unreservable_left_out([table], {}, PRICES, notes)
    assert (ia.listed.plan.read, ia.listed.plan.write) == ([0] * 48, [0] * 48)
    assert ia.warnings == (IA,) and ia.infrequent
    per_hour = sum(PRICES.unit_hour(d) for d in ("read", "write")) * PRICES.ia_throughput_factor
    assert ia.listed.plan.other_usd == pytest.approx(48 * 1_000 * per_hour)
    assert ia.current == ia.listed
    plan = reserve.plan_fleet([ia], ["1y"], reserve.Setup())
    assert plan.units == {"read": 0, "write": 0}


def test_a_replica_of_a_global_table_gets_no_reserved_write_units() -> None:
    """A replica's writes are replicated writes, which reserved capacity never covers: its
    write units stay in the bill at the list price and out of the plan; its reads, and
    another table's writes, are planned as before."""
    steady = [1_000] * 48
    weights = [1.0] * 48

    def table(name: str) -> reserve.TableHours:
        run = reserve.Run("stock:90", reserve_sizing.Hours(steady, steady, weights), None, 0.0)
        return reserve.TableHours(name, run, run)

    alone = reserve.plan_fleet([table("orders")], ["1y"], reserve.Setup())
    assert alone.units == {"read": 1_000, "write": 1_000}
    notes = {"carts": reserve_command.REPLICA_NOTE}
    tables = reserve_command.unreservable_left_out([table("orders"), table("carts")], notes, PRICES)
    orders, carts = tables
    assert orders == table("orders")
    assert carts.listed.plan.write == [0] * 48 and carts.listed.plan.read == steady
    assert carts.warnings == (reserve_command.REPLICA_NOTE,)
    # billed the same: the replica's write units at the list price, outside the plan
    listed = table("carts").listed.plan
    assert carts.listed.plan.other_usd == pytest.approx(48 * 1_000 * PRICES.unit_hour("write"))
    assert carts.current.plan.read == listed.read
    plan = reserve.plan_fleet(tables, ["1y"], reserve.Setup())
    assert plan.units == {"read": 2_000, "write": 1_000}


def test_a_replica_is_known_by_describe_tables_replicas_read_as_untrusted_input() -> None:
    """moto keeps no replicas: DescribeTable's answer for a global table's replica is given
    as AWS gives it (botocore's Stubber); what is not a Region's name is not a Region, and
    is said."""
    client = boto3.client(
        "dynamodb", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(client)
    replicas = [{"RegionName": "us-east-1"}, {"RegionName": "eu-west-1"}, {"RegionName": "x y"}]
    stub.add_response("describe_table", {"Table": {"TableName": "carts", "Replicas": replicas}})
    stub.add_response("describe_table", {"Table": {"TableName": "orders"}})
    with stub:
        carts = advise_module.replication(describe(client, "carts"))
        assert carts.regions == ("eu-west-1", "us-east-1") and carts.replicated
        assert carts.unknown == "1 of its 3 Replicas without a Region's name"
        assert not advise_module.replication(describe(client, "orders")).replicated


def on_demand_or_provisioned(name: str, od_usd: float, units: list[int]) -> reserve.TableHours:
    """A table tune puts on on-demand at the list price (``od_usd`` over the hours), with a
    provisioned alternative of ``units`` an hour at the reserved rate."""
    weights = [1.0] * len(units)
    listed = reserve.Run(
        "on-demand",
        reserve_sizing.Hours([0] * len(units), [0] * len(units), weights, od_usd),
        None,
        0.0,
    )
    provisioned = reserve.Run("stock:90", reserve_sizing.Hours(units, units, weights), None, 0.0)
    return reserve.TableHours(name, listed, listed, provisioned)


def test_a_table_switches_to_provisioned_where_the_reservation_makes_it_cheaper() -> None:
    steady = [1_000] * 48
    listed_usd = reserve_sizing.fleet_bill(
        reserve_sizing.Hours(steady, steady, [1.0] * 48), {}, None, PRICES
    )
    # on-demand costs 10 % less than provisioned at the list price, but a reservation of the
    # steady level costs about half: the fleet switches it and reserves for it
    table = on_demand_or_provisioned("steady", 0.9 * listed_usd, steady)
    plan = reserve.plan_fleet([table], ["1y"], reserve.Setup())
    assert plan.policies == {"steady": "stock:90"}
    assert plan.units == {"read": 1_000, "write": 1_000}
    assert plan.by_term["1y"]["switched"] == ["steady"]
    # a spike once in two days: a reservation does not pay, on-demand stays
    spike = [0] * 47 + [20_000]
    spiky = on_demand_or_provisioned("spiky", 0.5, spike)
    plan = reserve.plan_fleet([spiky], ["1y"], reserve.Setup())
    assert plan.policies == {"spiky": "on-demand"} and plan.term is None


def test_the_page_draws_the_fleet_hours_and_the_reserved_line_in_a_browser(
    fleet_files: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "plan.html"
    code, _, err = run(
        "reserve", "--trace", fleet_files[0], "--trace", fleet_files[1],
        "--score-from", "2026-01-06T00:30", "--policy", "stock:90", "--quiet",
        "--processes", "1", "--html", str(out),
    )  # fmt: skip
    assert code == 0, err
    loaded = browser.load(out, tmp_path)
    assert loaded.console == []  # no script error, nothing logged
    assert 'data-rendered="ok"' in loaded.dom
    for chart in ("reserve-0", "reserve-1"):  # read, write
        (panel,) = panels(loaded.dom, chart)
        drawn = {(name, role) for name, role, _ in series(panel)}
        assert drawn == {
            ("these policies", "demand"),
            ("stock:70", "capacity"),
            ("reserved", "bound"),
        }
        assert {points for _, _, points in series(panel)} == {2 * 1440}  # a point a minute


def test_advise_all_tables_shows_the_reservation_beside_each_tables_advice(
    region: datetime, in_region: None, tmp_path: Path, pair: list[str]
) -> None:
    end = region
    # the stock targets and on-demand, under two settings: enough for a recommendation each
    few = ["--candidate", "on-demand", *pair]
    code, out, err = run(
        "advise", "--all-tables", "--days", "1", "--end", end.isoformat(), "--quiet",
        "--processes", "1", "--workers", "1", "--report", str(tmp_path), "--json", *few,
    )  # fmt: skip
    assert code == 0, err
    plan = json.loads(out)["reservation"]
    assert plan["term"] == "1y" and plan["read_units"] > 0 and plan["read_units"] % 100 == 0
    units = plan["median_hourly_units"]
    assert set(units) == {"ReserveBig", "ReserveSmall"}
    assert units["ReserveBig"]["read"] > 900 > units["ReserveSmall"]["read"] > 150
    assert plan["monthly_usd"]["with_plan"] < plan["monthly_usd"]["without_plan"]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["reservation"] == plan
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Reserved capacity and Savings Plan</h2>" in page and 'id="reservation"' in page
    code, words, _ = run(
        "advise", "--all-tables", "--days", "1", "--end", end.isoformat(), "--quiet",
        "--processes", "1", "--workers", "1", *few,
    )  # fmt: skip
    assert "commitments, on the recommendations: reserve" in words


def test_a_fleet_reports_recommendations_replace_tune_for_the_tables_it_advised(
    fleet_files: list[str], tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    rows = [
        {"table": "orders", "index": None, "status": "advised", "recommended": "stock:80"},
        {"table": "carts", "index": None, "status": "advised", "recommended": "sometimes"},
        {"table": "o\u0000", "index": None, "status": "advised", "recommended": "stock:50"},
        "not a row",
    ]
    report.write_text(json.dumps({"tables": rows}))
    code, out, err = run(
        "reserve", "--trace", fleet_files[0], "--trace", fleet_files[1], "--quiet", "--json",
        "--recommended", str(report), "--candidate", "stock:90", "--processes", "1",
    )  # fmt: skip
    assert code == 0, err
    tables = {t["name"]: t for t in json.loads(out)["tables"]}
    assert tables["orders"]["listed_policy"] == "stock:80"
    assert tables["orders"]["reserved_policy"] is None  # given, not tuned
    # carts' recommendation is not one the simulator runs: tuned as if not in the report
    assert tables["carts"]["listed_policy"] != "sometimes"
    # AND the words say where each policy came from, and what the past bill is taken to be
    code, out, err = run(
        "reserve", "--trace", fleet_files[0], "--trace", fleet_files[1], "--quiet",
        "--recommended", str(report), "--candidate", "stock:90", "--processes", "1",
        "--score-from", "2026-01-06T00:30",
    )  # fmt: skip
    assert code == 0, err
    heading, _, _, orders, *rest = out.splitlines()
    assert heading.endswith(
        f"; 1 of 2 tables on the recommendation of the fleet report {report}, the other on "
        "tune's recommendation on the planning part; the past bill: every table on --current "
        "stock:70; term 1y; billing basis hourly-max"
    )
    assert "recommended by tune" not in heading
    assert orders == "orders  stock:80 (the fleet report's)"
    assert not any("the fleet report's" in line for line in rest)
    assert "the current policy" not in out
    assert any(
        line.startswith(
            "every table on --current stock:70 (the policy taken to have made the past bill), "
            "no reservation: $"
        )
        for line in rest
    )
    report.write_text('{"tables": 3}')
    code, _, err = run("reserve", "--trace", fleet_files[0], "--recommended", str(report))
    assert code == 2 and "--recommended" in err and "not a fleet report" in err
    missing = str(report.parent / "nosuch.json")
    code, _, err = run("reserve", "--trace", fleet_files[0], "--recommended", missing)
    assert code == 2
    assert err.strip().endswith(f"--recommended: {missing!r}: No such file or directory"), err


def test_the_reserve_benchmark_runs_in_its_quick_mode(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import reserve_plan

    assert reserve_plan.main(["--quick", "--processes", "1"]) == 0
    printed = capsys.readouterr().out
    for term in ("1y", "3y"):
        assert f"term {term}:" in printed
    assert printed.count("(c) fleet <= tables alone: PASS") == 2
    assert "hindsight" in printed and "(d) 20 tables" in printed


def test_a_candidate_with_a_suffix_is_run_as_tune_runs_it() -> None:
    # GIVEN an unannounced 10x for 20 minutes, scored from the middle of the trace
    trace = scenario("flash-crowd")
    split = trace.minutes // 2
    # WHEN the plan runs a candidate with the table's stream as its signal, and without it
    bare = reserve._run("autopilot+stock:90", trace, split, reserve.Setup())
    streamed = reserve._run("autopilot+stock:90+stream", trace, split, reserve.Setup())
    # THEN the stream is given it (it refuses less on the scored part): the plan's figures
    # are the recommended candidate's, not its bare policy's
    assert 0 < streamed.refused < bare.refused
    assert streamed.policy == "autopilot+stock:90+stream"


def test_the_billing_granularity_benchmark_runs_in_its_quick_mode(capsys: Any) -> None:
    from benchmarks import billing_granularity

    assert billing_granularity.main(["--quick"]) == 0
    rows: dict[str, list[float]] = {}
    for line in capsys.readouterr().out.splitlines():  # the first table: per-minute, hourly-max
        if line.split() and line.split()[0] in billing_granularity.QUICK:
            rows.setdefault(line.split()[0], [float(x) for x in line.split()[1:3]])
    # each clock hour at its highest level costs at least its minutes; on-demand the same
    assert set(rows) == set(billing_granularity.QUICK)
    assert all(hour >= minute > 0 for minute, hour in rows.values())
    assert rows["on-demand"][0] == rows["on-demand"][1]
    assert rows["stock:70"][1] > rows["stock:70"][0]
