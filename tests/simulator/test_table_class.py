"""The table class (Standard or Standard-Infrequent Access) that ``tune --table-size-gb`` and
``advise`` advise: storage plus the recommendation's throughput in each class, the boundary
and how a price override moves it, the pasted code that sets the class (synthesized), the
refused sizes, and advise on a moto server with the table's size from DescribeTable (moto
reports 0 bytes, so larger and untrusted sizes are put into its answer by a botocore
after-call handler)."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from constructs_pkg.fast_path._stream_signal import VIEW_TYPE
from ddb_capacity_tools.advise import Size, table_size
from ddb_capacity_tools.simulator import ModelParams
from ddb_capacity_tools.simulator.candidates import CANDIDATES, spec_of, split_prewarm
from ddb_capacity_tools.simulator.prices import Prices
from ddb_capacity_tools.simulator.scenarios import scenario
from ddb_capacity_tools.simulator.table_class import STANDARD, STANDARD_IA, class_advice
from ddb_capacity_tools.simulator.tune import code_of
from ddb_capacity_tools.simulator.tune_code import STREAM_VIEW, code_for
from ddb_capacity_tools.simulator.tune_runs import warm_levels
from tests.support.advise import busy, day, run
from tests.support.advise import region as advise_region  # noqa: F401 (a fixture)
from tests.support.pasted import synthesized_stack
from tests.support.tune import trace_file

GB = 2**30


def quiet_file(tmp_path: Path) -> Path:
    """Two days of a quiet table: 3 reads and 1 write a second, every minute."""
    start = datetime(2026, 1, 5, tzinfo=UTC)
    rows = ["timestamp,read,write"]
    rows += [f"{(start + timedelta(minutes=m)).isoformat()},3,1" for m in range(2 * 1440)]
    path = tmp_path / "quiet.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def tune_json(path: Path, pair: list[str], *options: str) -> dict[str, Any]:
    """tune's answer on the trace ``path`` under the ensemble of ``pair``."""
    code, out, err = run(
        "tune", "--trace", str(path), "--candidate", "on-demand", "--json", "--quiet", *pair,
        *options,
    )  # fmt: skip
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def picked_cost(doc: dict[str, Any]) -> float:
    """The recommended candidate's dollars a month (median)."""
    [c] = [c for c in doc["candidates"] if c["policy"] == doc["recommended"]]
    return float(c["cost_usd"]["median"])


# ---------------------------------------------------------------- the advice itself


def test_a_big_quiet_table_is_cheaper_in_standard_ia_and_a_busy_small_one_in_standard() -> None:
    quiet = class_advice(500, 20.0, Prices())
    assert quiet.recommended == STANDARD_IA
    assert (quiet.standard.storage_usd, quiet.infrequent.storage_usd) == (125.0, 50.0)
    assert quiet.infrequent.throughput_usd == pytest.approx(25.0)  # 25 % more
    assert quiet.infrequent.total_usd == pytest.approx(75.0)
    busy_small = class_advice(2, 300.0, Prices())
    assert busy_small.recommended == STANDARD
    assert busy_small.standard.total_usd == pytest.approx(300.5)
    assert busy_small.infrequent.total_usd == pytest.approx(375.2)


def test_the_boundary_is_where_the_storage_saved_pays_for_the_dearer_throughput() -> None:
    # 0.15 $/GB-month saved against 25 % of $30: 50 GB
    advice = class_advice(10, 30.0, Prices())
    assert advice.break_even_gb == pytest.approx(50.0)
    assert class_advice(49.9, 30.0, Prices()).recommended == STANDARD
    assert class_advice(50.1, 30.0, Prices()).recommended == STANDARD_IA
    assert class_advice(50.0, 30.0, Prices()).recommended == STANDARD  # as cheap: no move
    # a price override moves it: Standard-IA's storage at $0.20 saves a third as much
    dear = Prices().overridden(["ia_storage_gb_month=0.20"])
    assert class_advice(10, 30.0, dear).break_even_gb == pytest.approx(150.0)
    assert class_advice(100, 30.0, dear).recommended == STANDARD
    assert class_advice(151, 30.0, dear).recommended == STANDARD_IA
    # no storage saving at all: Standard-IA is never cheaper, whatever the size
    same = Prices().overridden(["ia_storage_gb_month=0.25"])
    assert class_advice(1e6, 30.0, same).recommended == STANDARD
    assert class_advice(1e6, 30.0, same).break_even_gb is None


# ---------------------------------------------------------------- tune


def test_tune_advises_standard_ia_for_a_big_quiet_table_and_its_code_sets_it(
    tmp_path: Path, pair: list[str]
) -> None:
    path = quiet_file(tmp_path)
    plain = tune_json(path, pair)
    assert plain["table_class"] is None and "table_class" not in plain["code"]
    doc = tune_json(path, pair, "--table-size-gb", "800")
    assert doc["recommended"] == plain["recommended"]  # the class changes no choice
    advice = doc["table_class"]
    assert advice["recommended"] == STANDARD_IA and advice["size_gb"] == 800
    cost = picked_cost(doc)
    assert advice["standard"] == pytest.approx(
        {"storage_usd": 200.0, "throughput_usd": cost, "total_usd": 200.0 + cost}
    )
    assert advice["standard_infrequent_access"] == pytest.approx(
        {"storage_usd": 80.0, "throughput_usd": 1.25 * cost, "total_usd": 80.0 + 1.25 * cost}
    )
    assert "table_class=dynamodb.TableClass.STANDARD_INFREQUENT_ACCESS" in doc["code"]
    # the text output: both classes' dollars, the recommendation with why, the caveats
    code, out, err = run(
        "tune",
        "--trace",
        str(path),
        "--candidate",
        "on-demand",
        "--quiet",
        "--table-size-gb",
        "800",
        *pair,
    )
    assert code == 0, err
    block = out.split("table class (dollars a month; 800 GB stored")[1].split("what the terms")[0]
    [ia_row] = [line for line in block.splitlines() if line.split()[:1] == [STANDARD_IA]]
    assert ia_row.split()[1:] == [
        "80.00",
        f"{1.25 * cost:,.2f}",
        f"{80 + 1.25 * cost:,.2f}",
        "<-",
        "recommended",
    ]
    assert f"{STANDARD_IA}: at 800 GB, Standard-IA stores the table for $120.00 a month less" in (
        block
    )
    assert "Reserved capacity applies to the Standard class only" in block
    assert "at most two table class updates per table in any 30 days" in block


def test_tune_keeps_a_busy_small_table_in_standard_and_a_price_moves_the_boundary(
    tmp_path: Path, pair: list[str]
) -> None:
    busy_trace = trace_file(tmp_path)
    doc = tune_json(busy_trace, pair, "--table-size-gb", "5")
    assert doc["table_class"]["recommended"] == STANDARD
    assert "table_class" not in doc["code"]  # Standard is the default class
    # on the quiet table, just above the boundary at the default prices...
    quiet = quiet_file(tmp_path)
    cost = picked_cost(tune_json(quiet, pair))
    boundary = cost * 0.25 / 0.15
    above = f"{boundary * 1.2:.3f}"
    doc = tune_json(quiet, pair, "--table-size-gb", above)
    assert doc["table_class"]["recommended"] == STANDARD_IA
    # ...and below it once Standard-IA's throughput is dearer (the boundary doubles)
    dearer = tune_json(quiet, pair, "--table-size-gb", above, "--price", "ia_throughput_factor=1.5")
    assert dearer["table_class"]["recommended"] == STANDARD
    assert dearer["table_class"]["standard_infrequent_access"]["throughput_usd"] == (
        pytest.approx(1.5 * cost)
    )


@pytest.mark.parametrize("given", ["-1", "abc", "nan", "inf", "1e3", "", "1000001", "12 GB"])
def test_a_bad_table_size_is_refused_naming_the_option_the_value_and_what_is_allowed(
    tmp_path: Path, given: str
) -> None:
    code, out, err = run(
        "tune", "--trace", str(tmp_path / "never-read.csv"), "--table-size-gb", given
    )
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err == (
        f"ddb-capacity: error: --table-size-gb: got {given!r}; expected the table's size in "
        "GB, a number from 0 to 1,000,000 (digits and a decimal point: 120 or 0.5)\n"
    )


# ---------------------------------------------------------------- the pasted code


def synthesized(code: str) -> dict[str, Any]:
    """The properties of the table a stack made by running ``code`` as pasted has
    (`synthesized_stack`)."""
    tables = synthesized_stack(code).find_resources("AWS::DynamoDB::Table")
    [pasted] = [t for logical_id, t in tables.items() if logical_id.startswith("Table")]
    return pasted["Properties"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "policy",
    ["stock:70", "autopilot:60", "autopilot+stock:70+owned", "autopilot:70+prewarm", "on-demand"],
)
def test_the_pasted_code_deploys_the_class_advised(policy: str) -> None:
    trace = scenario("diurnal")
    spec = spec_of(policy)
    warm = warm_levels(trace, 60, 70, ModelParams()) if split_prewarm(policy)[1] else None

    def code(table_class: str | None = None) -> str:
        return code_for(spec, trace, ModelParams(), warm, table_class)

    assert synthesized(code(STANDARD_IA))["TableClass"] == STANDARD_IA
    assert "TableClass" not in synthesized(code(STANDARD))  # the default, as without advice
    assert code(STANDARD) == code()


PASTED = (
    *CANDIDATES,
    "autopilot:60+stream",
    "autopilot+stock:80+stream+prewarm",
    "on-demand",
)
"""Every default candidate (each may be recommended), and the fast path's code with each kind
of scaler."""


@pytest.mark.parametrize("policy", PASTED)
def test_every_candidates_pasted_code_synthesizes_as_printed(policy: str) -> None:
    """The code printed with any candidate runs as pasted, whole app checks included (a
    scaler and requests serving one table are connected without a call)."""
    trace = scenario("diurnal")
    code = code_of(policy, trace, ModelParams(), Prices())
    assert "connect(" not in code
    assert synthesized(code)  # app.synth() runs every check
    assert STREAM_VIEW == VIEW_TYPE.value  # the stream the pasted table has is the library's


# ---------------------------------------------------------------- advise


@pytest.fixture
def region(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """advise's empty Region of the moto server (`tests.support.advise.region`), with
    ``sizes``: per table name, what the command's DescribeTable answers say of its size
    instead of moto's 0 (``table``: ``TableSizeBytes``, None to leave it out; ``gsi``: each
    GSI's ``IndexSizeBytes``)."""
    made_by_advise = request.getfixturevalue("advise_region")  # it wraps boto3.client first
    given: dict[str, dict[str, Any]] = {}
    made: Callable[..., Any] = boto3.client

    def answer(parsed: dict[str, Any], **_: Any) -> None:
        table = parsed.get("Table", {})
        size = given.get(table.get("TableName"))
        if size is None:
            return
        if size.get("table", 0) is None:
            table.pop("TableSizeBytes", None)
        else:
            table["TableSizeBytes"] = size.get("table", 0)
        for g in table.get("GlobalSecondaryIndexes", []) if "gsi" in size else []:
            g["IndexSizeBytes"] = size["gsi"]

    def client(service: str, *args: Any, **kwargs: Any) -> Any:
        c = made(service, *args, **kwargs)
        if service == "dynamodb":
            c.meta.events.register("after-call.dynamodb.DescribeTable", answer)
        return c

    monkeypatch.setattr(boto3, "client", client)
    return {**made_by_advise, "sizes": given}


def advised(*argv: str) -> dict[str, dict[str, Any]]:
    """advise's tables by name (each with the one candidate on-demand beside the stock ones)."""
    code, out, err = run("advise", *argv, "--candidate", "on-demand", "--json", "--quiet")
    assert code == 0, err
    return {t["table"]: t for t in json.loads(out)["tables"]}


def test_advise_reads_the_size_from_describe_table(
    region: dict[str, Any], tmp_path: Path, pair: list[str]
) -> None:
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    quiet = busy(region, f"ClassQuiet{stamp}", 2)
    moto = busy(region, f"ClassMoto{stamp}", 2)
    region["sizes"][quiet] = {"table": 3_000 * GB}
    by = advised("--all-tables", *day(region), "--report", str(tmp_path), *pair)
    advice = by[quiet]["table_class"]
    assert advice["recommended"] == STANDARD_IA and advice["size_gb"] == pytest.approx(3_000)
    cost = next(o for o in by[quiet]["options"] if o["recommended"])["usd_per_month"]
    assert advice["standard"]["throughput_usd"] == pytest.approx(cost, abs=0.01)
    assert advice["standard"]["storage_usd"] == pytest.approx(750.0)
    assert "STANDARD_INFREQUENT_ACCESS" in by[quiet]["code"]
    # moto's own answer: 0 bytes, a size like any other: Standard, throughput being dearer
    assert by[moto]["table_class"]["recommended"] == STANDARD
    assert by[moto]["table_class"]["size_gb"] == 0
    # the fleet report shows each table's class
    rows = {r["table"]: r for r in csv.DictReader((tmp_path / "report.csv").open())}
    assert (rows[quiet]["table_class"], rows[moto]["table_class"]) == (STANDARD_IA, STANDARD)
    # the text output: the block, per table
    code, out, err = run(
        "advise", "--table", quiet, *day(region), "--candidate", "on-demand", *pair
    )
    assert code == 0, err
    assert "  table class (dollars a month; 3,000 GB stored" in out
    assert "  Reserved capacity applies to the Standard class only" in out


@pytest.mark.parametrize(
    ("size", "said"),
    [
        (-5, "TableSizeBytes is -5: expected a number of bytes >= 0"),
        ("123", "TableSizeBytes is '123': expected a number of bytes >= 0"),
        (None, "TableSizeBytes is missing: expected a number of bytes >= 0"),
        (True, "TableSizeBytes is True: expected a number of bytes >= 0"),
        (math.inf, "TableSizeBytes is inf: expected a number of bytes >= 0"),
        (10**400, "TableSizeBytes is 1000000000000000000000000000000000000000"),
        (2**30 * 2_000_000, "above 1,000,000 GB"),
    ],
)
def test_an_untrusted_size_is_not_used_and_the_advice_says_so(size: object, said: str) -> None:
    unknown = table_size({"TableName": "T", "TableSizeBytes": size})
    assert unknown.gb is None and said in unknown.unknown
    assert table_size({"TableSizeBytes": 3 * GB}) == Size(3.0)


def test_an_unknown_size_on_a_real_answer_leaves_the_class_unadvised_plainly(
    region: dict[str, Any], pair: list[str]
) -> None:
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    negative = busy(region, f"ClassNegative{stamp}", 2)
    region["sizes"][negative] = {"table": -1_000}
    by = advised("--table", negative, *day(region), *pair)
    t = by[negative]
    assert t["table_class"] is None and t["status"] == "advised"  # the rest stands
    assert "no table class advised: DescribeTable's TableSizeBytes is -1000" in t["notes"]
    assert "table_class" not in t["code"]
    code, out, err = run(
        "advise", "--table", negative, *day(region), "--candidate", "on-demand", *pair
    )
    assert code == 0, err
    assert "  table class: not advised: DescribeTable's TableSizeBytes is -1000: expected" in out


def test_a_tables_gsis_count_in_its_size_and_one_gsi_alone_gets_no_class(
    region: dict[str, Any], pair: list[str]
) -> None:
    name = f"ClassGsi{datetime.now(UTC):%H%M%S%f}"
    region["ddb"].create_table(
        TableName=name,
        BillingMode="PROVISIONED",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
        GlobalSecondaryIndexes=[
            {
                "IndexName": "ByG",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
            }
        ],
    )
    from ddb_capacity_tools.local_aws import put_traffic

    for index in (None, "ByG"):
        put_traffic(
            region["cloudwatch"],
            name,
            "write",
            2,
            end=region["end"],
            minutes=range(1, 181),
            index=index,
        )
    # moto gives a GSI no IndexSizeBytes: the size is unknown, and said so
    assert (
        "IndexSizeBytes of GSI ByG is missing"
        in advised("--table", name, *day(region), *pair)[name]["notes"]
    )
    region["sizes"][name] = {"table": 100 * GB, "gsi": 900 * GB}
    advice = advised("--table", name, *day(region), *pair)[name]["table_class"]
    assert advice["size_gb"] == pytest.approx(1_000)
    assert advice["standard"]["storage_usd"] == pytest.approx(250.0)
    alone = advised("--table", name, "--index", "ByG", *day(region), *pair)[name]
    assert alone["table_class"] is None
    assert (
        "the table class is the whole table's: advise the table without --index" in (alone["notes"])
    )
