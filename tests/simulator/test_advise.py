"""``ddb-capacity advise``: every table of a Region or one table, against a moto server fed
with put-metric-data; each table its own fault domain (access denied, deleted meanwhile,
no traffic), the exit status, the monthly figures, and untrusted answers from AWS."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ddb_capacity_tools import advise as advise_module
from ddb_capacity_tools import fleet
from ddb_capacity_tools.advise import Advice, AdviseError, Failure, Replication, list_tables, text
from ddb_capacity_tools.fleet_current import Current
from ddb_capacity_tools.local_aws import put_traffic
from ddb_capacity_tools.page.fleet_page import _reservation as reservation_html
from ddb_capacity_tools.reserve import Setup as ReserveSetup
from ddb_capacity_tools.reserve import plan_fleet, summary
from ddb_capacity_tools.reserve_sizing import fleet_bill
from ddb_capacity_tools.simulator import ModelParams
from ddb_capacity_tools.simulator.backtest import history
from ddb_capacity_tools.simulator.candidates import STOCK
from ddb_capacity_tools.simulator.prices import Prices
from ddb_capacity_tools.simulator.trace import TraceError
from tests.support.advise import (
    REGION,
    busy,
    create,
    day,
    moto_client,
    reserving,
    run,
    two_settings,
)
from tests.support.advise import region as region  # noqa: F401 (fixture)


def test_every_table_is_advised_or_failed_on_its_own(
    region: dict[str, Any], monkeypatch: pytest.MonkeyPatch, pair: list[str]
) -> None:
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    small = busy(region, f"AdviseSmall{stamp}", 100)
    large = busy(region, f"AdviseLarge{stamp}", 800)
    denied = busy(region, f"AdviseDenied{stamp}", 100)
    idle = create(region["ddb"], f"AdviseIdle{stamp}")
    region["denied"].add(denied)
    gone = create(region["ddb"], f"AdviseGone{stamp}")
    listed = list_tables

    def deleted_meanwhile(dynamodb: Any) -> list[str]:
        names = listed(dynamodb)
        region["ddb"].delete_table(TableName=gone)
        return names

    monkeypatch.setattr(advise_module, "list_tables", deleted_meanwhile)
    code, out, err = run(
        "advise", "--all-tables", *day(region), "--candidate", "on-demand", "--json", *pair
    )
    assert code == 1, err  # some failed: non-zero, the others still advised
    doc = json.loads(out)
    assert (doc["days"], doc["end"]) == (1, f"{region['end']:%Y-%m-%dT%H:%M}Z")  # one window
    by = {t["table"]: t for t in doc["tables"]}
    assert set(by) == {small, large, denied, idle, gone}
    assert doc["failed"] == 3
    assert "AccessDeniedException" in by[denied]["reason"]
    assert "no such table" in by[gone]["reason"]
    assert "no consumed capacity" in by[idle]["reason"]
    for name in (small, large):
        t = by[name]
        assert t["status"] == "advised"
        options = {o["policy"]: o for o in t["options"]}
        assert set(options) == {*STOCK, "on-demand"}
        assert t["recommended"] in options and options[t["recommended"]]["recommended"]
        assert t["recommended"] in t["reason"]
        costs = [o["usd_per_month"] for o in t["options"]]
        assert costs == sorted(costs)  # cheapest first
    # eight times the writes: on-demand, billed per request, costs about eight times more
    od = {
        n: next(o for o in by[n]["options"] if o["policy"] == "on-demand") for n in (small, large)
    }
    assert od[large]["usd_per_month"] > 5 * od[small]["usd_per_month"]
    # stderr is no terminal here (a CI log, a file): no progress bar redrawn in it
    assert "advise [" not in err and "\r" not in err


def test_the_text_output_labels_every_column_and_prints_the_code(
    region: dict[str, Any], pair: list[str]
) -> None:
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    name = busy(region, f"AdviseLabels{stamp}", 300)
    code, out, err = run(
        "advise", "--table", name, *day(region), "--candidate", "on-demand", *pair, terminal=True
    )
    assert code == 0, err
    lines = out.splitlines()
    [header] = [line for line in lines if line.startswith("table ")]
    assert header.split() == [
        "table",
        "option",
        "$",
        "/",
        "month",
        "refused",
        "units",
        "/",
        "month",
        "note",
    ]
    # the recommendation in one sentence, why, and its code to paste, per table
    assert any(line.startswith(f"{name}: Use ") for line in lines)
    assert f"  code to paste (CDK, Python) for {name}:" in lines
    code_lines = out.split(f"code to paste (CDK, Python) for {name}:")[1].splitlines()[1]
    assert "ProvisionedTable(" in code_lines or "PAY_PER_REQUEST" in code_lines
    # a line for each term shown, and the plain warning: one day is too short to judge
    assert "what the terms mean:" in out and "- on-demand: PAY_PER_REQUEST" in out
    assert "warning: " in out and "at least 2 days" in out
    # the progress bar on stderr, a terminal's: one table, so its runs (8 policies, 2 settings)
    assert "advise [" in err and "0/16 runs" in err and "16/16 runs" in err


def test_the_text_output_names_the_failed_and_exit_status_follows_them(
    region: dict[str, Any], pair: list[str]
) -> None:
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    ok = busy(region, f"AdviseText{stamp}", 300)
    code, out, err = run(
        "advise", "--table", ok, *day(region), "--candidate", "on-demand", "--quiet", *pair
    )
    assert code == 0, err
    assert "<- recommended" in out and "advised 1 of 1; failed 0" in out and err == ""
    region["denied"].add(ok)
    code, out, err = run("advise", "--table", ok, *day(region), "--quiet")
    assert code == 1
    assert f"failed: {ok}: AccessDeniedException: not authorized" in out
    assert "advised 0 of 1; failed 1" in out


def test_advise_and_tune_give_the_same_figures_a_month_from_the_later_half(
    region: dict[str, Any],
) -> None:
    name = busy(region, f"AdviseMonth{datetime.now(UTC):%H%M%S%f}", 400)
    args = ["--table", name, *day(region), "--candidate", "on-demand", "--json", "--quiet"]
    code, out, err = run("advise", *args)
    assert code == 0, err
    advised = json.loads(out)["tables"][0]
    code, out, err = run("tune", *args)
    assert code == 0, err
    tuned = json.loads(out)
    assert advised["history_minutes"] == 1440
    # both chose on the later half (from minute 720) and scaled it to a month of 730 hours
    assert tuned["validation"]["split_minute"] == 720
    assert tuned["validation"]["choose_minutes"] == 720
    assert tuned["validation"]["month_hours"] == 730
    for c in tuned["candidates"]:
        o = next(o for o in advised["options"] if o["policy"] == c["policy"])
        assert o["usd_per_month"] == pytest.approx(c["cost_usd"]["median"], abs=0.01)
        assert o["refused_per_month"] == pytest.approx(c["throttled_requests"]["median"], abs=1)
    assert advised["recommended"] == tuned["recommended"]
    # the one day is too short to judge: both say so, plainly
    assert tuned["warnings"] and tuned["warnings"] == advised["warnings"]
    assert "at least 2 days (2,880 minutes) are needed" in tuned["warnings"][0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--all-tables", "--index", "ByGroup"],
            "--index: got 'ByGroup'; it applies to --table only",
        ),
        (
            ["--table", "T1x", "--days", "16"],
            "--days: got 16; expected a whole number from 1 to 15",
        ),
        (["--table", "T1x", "--refusal-tolerance", "5"], "--refusal-tolerance: got '5'; expected"),
        (["--table", "T1x", "--candidate", "oracle"], "--candidate: got 'oracle'; expected"),
        (
            ["--all-tables", "--processes", "0"],
            "--processes: got 0; expected a whole number from 1 to 64",
        ),
        (
            ["--table", "T1x", "--processes", "2"],
            "--processes: got 2; it applies to --all-tables only",
        ),
        (
            ["--all-tables", "--workers", "65"],
            "--workers: got 65; expected a whole number from 1 to 64",
        ),
        (["--all-tables", "--report", "s3://NO/x"], "--report: got 's3://NO/x'; expected"),
        (["--table", "T1x", "--region", "moon-1"], "--region: got 'moon-1'; expected a Region"),
    ],
)
def test_advise_bad_input(argv: list[str], message: str) -> None:
    code, _, err = run("advise", *argv)
    assert code == 2 and message in err


NO_CREDENTIALS = (
    "ddb-capacity: error: no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY\n"
)


@pytest.mark.parametrize(
    "argv",
    [
        ["backtest", "--table", "Orders", "--days", "1", "--policy", "stock:70"],
        ["tune", "--table", "Orders", "--days", "1", "--candidate", "stock:70"],
        ["advise", "--all-tables", "--days", "1"],
        ["advise", "--table", "Orders", "--days", "1"],
        ["advise", "--table", "Orders", "--index", "byCustomer", "--days", "1", "--json"],
    ],
    ids=["backtest", "tune-table", "advise-all-tables", "advise-table", "advise-index"],
)
def test_no_credentials_is_one_line_for_every_command_reading_aws(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str]
) -> None:
    # GIVEN a Region but no credentials anywhere boto3 looks (no AWS_* variable, empty
    # credentials and config files, no instance metadata), and no AWS reachable
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # no credentials cached by others
    empty = tmp_path / "empty"
    empty.write_text("")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    # WHEN the command runs on a terminal (with its progress bar: no --quiet)
    code, out, err = run(*argv, terminal=True)
    # THEN it is the one line every command gives, exit status 2, and nothing else
    assert (code, out, err) == (2, "", NO_CREDENTIALS)


class Pages:
    """A DynamoDB client stand-in answering ListTables with the given pages in turn."""

    def __init__(self, *pages: dict[str, Any]) -> None:
        self.pages = list(pages)

    def list_tables(self, **_: Any) -> dict[str, Any]:
        return self.pages.pop(0) if len(self.pages) > 1 else self.pages[0]


def test_list_tables_reads_every_page_and_refuses_a_token_that_does_not_move() -> None:
    pages = Pages(
        {"TableNames": ["Aaa", "Bbb"], "LastEvaluatedTableName": "Bbb"},
        {"TableNames": ["Bbb", "Ccc"]},
    )
    assert list_tables(pages) == ["Aaa", "Bbb", "Ccc"]
    stuck = Pages({"TableNames": ["Aaa"], "LastEvaluatedTableName": "Aaa"})
    with pytest.raises(AdviseError, match="does not move on"):
        list_tables(stuck)
    with pytest.raises(AdviseError, match="no list of TableNames"):
        list_tables(Pages({"TableNames": "Aaa"}))


def test_names_from_aws_are_checked_and_shown_escaped() -> None:
    setup = advise_module.Setup(1, None, lambda trace: [], ModelParams())
    hostile = "Orders\x1b[2J\nrm"
    result = advise_module.advise_one(None, None, hostile, None, setup)
    assert isinstance(result, Failure) and "not a DynamoDB table name" in result.reason
    shown = text([result, Failure("x" * 3, None, "Boom\x1b[31m" + "y" * 1000)], "heading")
    assert "\x1b" not in shown and "\\x1b[2J\\nrm" in shown
    assert max(len(line) for line in shown.splitlines()) < 400  # a long message is cut


def test_a_tables_bill_counts_its_gsis_and_an_index_alone_is_its_own(
    region: dict[str, Any], pair: list[str]
) -> None:
    """Billing mode is the table's: on-demand is weighed against the table and its GSIs
    together; --index advises one GSI alone."""
    name = f"AdviseGsi{datetime.now(UTC):%H%M%S%f}"
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
    traffic = {(None, "write"): 400, (None, "read"): 50, ("ByG", "write"): 200}
    for (index, dim), level in traffic.items():
        put_traffic(
            region["cloudwatch"],
            name,
            dim,
            level,
            end=region["end"],
            minutes=range(1, 181),
            index=index,
        )
    # the traffic's 180 minutes are all in the later half of the day, which is scaled to a month
    factor = 730 * 60 / 720
    per_unit = {"write": 0.625e-6, "read": 0.125e-6}

    def on_demand(doc: dict[str, Any]) -> dict[str, Any]:
        advised = doc["tables"][0]
        return next(o for o in advised["options"] if o["policy"] == "on-demand")

    base = ["--candidate", "on-demand", *day(region), "--json", "--quiet", *pair]
    for argv in (["--table", name], ["--all-tables"]):
        code, out, err = run("advise", *argv, *base)
        assert code == 0, err
        doc = json.loads(out)
        [advised] = [t for t in doc["tables"] if t["table"] == name]
        expected = sum(v * 180 * 60 * per_unit[d] for (_, d), v in traffic.items()) * factor
        option = next(o for o in advised["options"] if o["policy"] == "on-demand")
        assert option["usd_per_month"] == pytest.approx(expected, abs=0.01)
        assert not option["compared_only"]
        assert "its GSIs' (ByG) together" in advised["notes"]
    code, out, err = run("advise", "--table", name, "--index", "ByG", *base)
    assert code == 0, err
    alone = on_demand(json.loads(out))
    assert "GSIs'" not in json.loads(out)["tables"][0]["notes"]  # one GSI alone: no such note
    assert alone["usd_per_month"] == pytest.approx(
        200 * 180 * 60 * per_unit["write"] * factor, abs=0.01
    )


def test_a_rounding_residue_below_zero_refused_units_is_shown_as_0() -> None:
    from ddb_capacity_tools.simulator.candidates import Candidate
    from ddb_capacity_tools.simulator.ensemble import Spread

    hybrid = Candidate("hybrid:70", Spread(-5e-10, -5e-10, 98_344.0), Spread(1.0, 2.0, 3.0))
    assert advise_module._figures(hybrid) == ("2.00 (1.00-3.00)", "0 (0-98,344)")


def test_the_hybrid_is_an_option_like_any_other(region: dict[str, Any], pair: list[str]) -> None:
    name = busy(region, f"AdviseHybrid{datetime.now(UTC):%H%M%S%f}", 400)
    base = ["--table", name, *day(region), "--candidate", "hybrid:70", "--quiet", *pair]
    code, out, err = run("advise", *base, "--json")
    assert code == 0, err
    advised = json.loads(out)["tables"][0]
    by = {o["policy"]: o for o in advised["options"]}
    assert not by["hybrid:70"]["compared_only"]
    # a day of history: the hybrid is autopilot+stock:70 alone there, cheaper than stock
    # target tracking and on-demand, and recommended; its code (a ProvisionedTable, whose
    # method learns the windows) learns them from days to come
    assert advised["recommended"] == "hybrid:70" and by["hybrid:70"]["recommended"]
    assert advised["code"].startswith("table = ProvisionedTable(")
    assert "target_utilization_percent=70" in advised["code"]
    assert advised["code"].endswith("table.learn_on_demand_windows(target_utilization=70)\n")
    code, out, err = run("advise", *base)
    assert code == 0, err
    [row] = [line for line in out.splitlines() if "hybrid:70  " in line]  # the table's
    assert row.rstrip().endswith("<- recommended")
    assert "- hybrid:T: autopilot+stock:T (a ProvisionedTable with the scaler), with the " in out


def test_tables_in_parallel_give_the_sequential_result_and_a_failure_stays_one_tables(
    region: dict[str, Any], pair: list[str]
) -> None:
    """--processes 2: a denied table is reported failed with its reason, the others advised,
    in the same order and with the same figures as one process at a time."""
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    names = [busy(region, f"AdvisePar{n}{stamp}", level) for n, level in enumerate((100, 800))]
    denied = busy(region, f"AdviseParDenied{stamp}", 200)
    region["denied"].add(denied)
    base = ["advise", "--all-tables", *day(region)[:4], "--candidate", "on-demand", "--json"]
    code, out, err = run(*base, *pair, "--processes", "2", terminal=True)
    assert code == 1, err
    assert "advise [" in err and "3/3 tables" in err  # the bar counts tables done
    parallel = json.loads(out)
    by = {t["table"]: t for t in parallel["tables"]}
    assert "AccessDeniedException" in by[denied]["reason"] and parallel["failed"] == 1
    assert all(by[n]["status"] == "advised" for n in names)
    assert [t["table"] for t in parallel["tables"]] == sorted(by)  # ListTables' order
    code, out, _ = run(*base, *pair, "--processes", "1", "--workers", "1", "--quiet")
    assert code == 1
    assert json.loads(out) == parallel


def test_a_process_that_dies_fails_its_table_alone(
    region: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN four tables for two processes, one of which kills the process advising it
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    live = [busy(region, f"AdviseLive{i}{stamp}", 100) for i in range(3)]
    doomed = busy(region, f"AdviseDies{stamp}", 100)
    real = advise_module.advise_one

    # runs in the pool's (forked) process
    def dies(cloudwatch: Any, dynamodb: Any, table: str, *args: Any) -> Advice | Failure:
        if table == doomed:
            import os

            os._exit(3)
        return real(cloudwatch, dynamodb, table, *args)

    monkeypatch.setattr(advise_module, "advise_one", dies)
    setup = advise_module.Setup(
        1, region["end"], two_settings, ModelParams(), ["on-demand"], workers=1
    )
    tables = [(live[0], None), (doomed, None), (live[1], None), (live[2], None)]
    # WHEN they are advised in parallel
    results = advise_module.advise(advise_module.boto3_clients, tables, setup, None, processes=2)
    # THEN the one whose process died failed, alone; the others were advised, in order
    assert [r.table for r in results] == [t for t, _ in tables]
    assert isinstance(results[1], Failure) and "its process died" in results[1].reason
    assert [type(r).__name__ for r in results] == ["Advice", "Failure", "Advice", "Advice"]


def test_the_report_weighs_each_tables_current_settings(
    region: dict[str, Any], tmp_path: Path, pair: list[str]
) -> None:
    """--report DIR and s3://: stock:70 from a scalable target with target tracking, fixed
    units without one, on-demand from the billing mode, unknown when auto scaling is read
    but has no target tracking; the files in the directory and under the S3 prefix are the
    same."""
    stamp = f"{datetime.now(UTC):%H%M%S%f}"
    tracked, fixed, untracked = (
        busy(region, f"Report{kind}{stamp}", 300) for kind in ("Tracked", "Fixed", "Untracked")
    )
    on_demand = f"ReportOnDemand{stamp}"
    region["ddb"].create_table(
        TableName=on_demand,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    for dim, level in (("write", 300), ("read", 50)):
        put_traffic(
            region["cloudwatch"], on_demand, dim, level, end=region["end"], minutes=range(1, 181)
        )
    aas: Any = boto3.client("application-autoscaling")  # its dimensions built from names
    for name in (tracked, untracked):
        for dim in ("Read", "Write"):
            aas.register_scalable_target(
                ServiceNamespace="dynamodb",
                ResourceId=f"table/{name}",
                ScalableDimension=f"dynamodb:table:{dim}CapacityUnits",
                MinCapacity=5,
                MaxCapacity=4000,
            )
            if name == tracked:
                aas.put_scaling_policy(
                    PolicyName=f"{dim}70",
                    ServiceNamespace="dynamodb",
                    ResourceId=f"table/{name}",
                    ScalableDimension=f"dynamodb:table:{dim}CapacityUnits",
                    PolicyType="TargetTrackingScaling",
                    TargetTrackingScalingPolicyConfiguration={
                        "TargetValue": 70.0,
                        "PredefinedMetricSpecification": {
                            "PredefinedMetricType": f"DynamoDB{dim}CapacityUtilization"
                        },
                    },
                )
    s3 = boto3.client("s3")
    bucket = f"fleet-{stamp}"
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
    base = [
        "advise",
        "--all-tables",
        *day(region)[:4],
        "--candidate",
        "on-demand",
        "--quiet",
        *pair,
    ]
    html = tmp_path / "fleet.html"
    code, out, err = run(*base, "--json", "--report", str(tmp_path / "report"), "--html", str(html))
    assert code == 0, err
    advised = {t["table"]: t for t in json.loads(out)["tables"]}
    rows = {r["table"]: r for r in csv.DictReader((tmp_path / "report" / "report.csv").open())}
    assert {n: rows[n]["current"] for n in rows} == {
        tracked: "stock:70 [5..4000]",  # within its targets' own minimum and maximum
        fixed: "fixed:10",
        on_demand: "on-demand",
        untracked: "unknown",
    }
    # a candidate itself: its own figures
    option = next(o for o in advised[on_demand]["options"] if o["policy"] == "on-demand")
    assert float(rows[on_demand]["usd_per_month_current"]) == pytest.approx(
        option["usd_per_month"], abs=0.01
    )
    # stock:70 run within the target's minimum of 5: never cheaper than the candidate, which
    # may scale down to 1
    stock = next(o for o in advised[tracked]["options"] if o["policy"] == "stock:70")
    assert float(rows[tracked]["usd_per_month_current"]) >= stock["usd_per_month"] - 0.01
    picked = next(o for o in advised[fixed]["options"] if o["recommended"])
    saved = float(rows[fixed]["usd_per_month_current"]) - picked["usd_per_month"]
    assert float(rows[fixed]["usd_saved_per_month"]) == pytest.approx(saved, abs=0.02)
    # ten units against 300 WCU/s for three hours: the fixed table refuses, the advice less
    assert float(rows[fixed]["refusals_avoided_per_month"]) > 0
    assert rows[untracked]["usd_saved_per_month"] == ""
    assert "without a target-tracking target" in rows[untracked]["reason"]
    # the fleet page links each table's page, written beside it in tables/
    fleet_page = (tmp_path / "report" / "report.html").read_text()
    for name in rows:
        assert f'href="tables/{name}.html"' in fleet_page
        page = (tmp_path / "report" / "tables" / f"{name}.html").read_text()
        assert "What to paste" in page
        # its header says how the figures were made, as tune's does
        assert "; fitted on " in page and "figures a month (730 h)" in page
        # --html beside --report: the same table pages, and the same fleet page
        assert (tmp_path / "tables" / f"{name}.html").read_text() == page
    assert html.read_text() == fleet_page
    one = [
        "advise",
        "--table",
        fixed,
        *day(region)[:4],
        "--candidate",
        "on-demand",
        "--quiet",
        *pair,
    ]
    # --html on one table (beside its report to S3): its page, with the dollars a month of
    # its current settings
    code, _, err = run(
        *one, "--report", f"s3://{bucket}/nightly/", "--html", str(tmp_path / "t.html")
    )
    assert code == 0, err
    assert "current settings (fixed:10) a month" in (tmp_path / "t.html").read_text()
    # a bucket that does not exist is named with the option before anything is advised
    code, out, err = run(
        *one, "--report", "s3://no-such-bucket/x", "--html", str(tmp_path / "u.html")
    )
    assert code == 2 and out == "" and not (tmp_path / "u.html").exists(), err
    assert err.splitlines()[-1] == (
        "ddb-capacity: error: --report: s3://no-such-bucket/x: no such bucket (404: Not "
        "Found): create it, or give another"
    )
    (tmp_path / "one").mkdir()
    code, _, err = run(*one, "--report", str(tmp_path / "one"))
    assert code == 0, err
    for name in fleet.FILES:  # the same three files, in S3 and in the directory
        body = s3.get_object(Bucket=bucket, Key=f"nightly/{name}")["Body"].read().decode()
        assert body == (tmp_path / "one" / name).read_text()
    [row] = csv.DictReader((tmp_path / "one" / "report.csv").open())
    assert row == rows[fixed]


#: A replica's own Region, beside the fixture's.
REPLICA_REGION = "ap-northeast-3"


def test_a_replica_is_advised_from_its_own_region(
    region: dict[str, Any], aws_env: dict[str, str], pair: list[str]
) -> None:
    """``--region`` reads the table (a global table's replica, here one table of another
    Region) where it is: without it the command looks in the environment's Region."""
    elsewhere = {
        "ddb": moto_client(aws_env, "dynamodb", REPLICA_REGION),
        "cloudwatch": moto_client(aws_env, "cloudwatch", REPLICA_REGION),
        "end": region["end"],
    }
    busy(elsewhere, "Replica", 40)
    few = ["--json", *day(region), "--candidate", "on-demand", *pair]
    code, out, _ = run("advise", "--table", "Replica", "--region", REPLICA_REGION, *few)
    assert code == 0
    (advised,) = json.loads(out)["tables"]
    assert advised["table"] == "Replica" and advised["recommended"]
    code, out, _ = run("advise", "--table", "Replica", *few)
    assert code == 1  # not in the environment's Region
    doc = json.loads(out)
    assert doc["failed"] == 1 and doc["tables"][0]["table"] == "Replica"
    assert "reason" in doc["tables"][0]


@pytest.mark.parametrize(
    ("replicas", "regions", "unknown"),
    [
        (
            [{"RegionName": "us-east-1"}, {"RegionName": "eu-west-1"}],
            ("eu-west-1", "us-east-1"),
            "",
        ),
        (
            [{"RegionName": "eu-west-1"}, {"RegionName": "moon; rm -rf"}, "x", {}],
            ("eu-west-1",),
            "3 of its 4 Replicas without a Region's name",
        ),
        ([{"RegionName": "eusc-de-east-1"}], ("eusc-de-east-1",), ""),
        ([{"RegionName": None}], (), "1 of its 1 Replicas without a Region's name"),
        ("not a list", (), "DescribeTable's Replicas is 'not a list': expected a list"),
        ([], (), ""),
        (None, (), ""),
    ],
)
def test_a_global_tables_replicas_are_read_as_untrusted_input(
    replicas: Any, regions: tuple[str, ...], unknown: str
) -> None:
    """A table of one Region has no Replicas; any other answer is a global table's, and
    what of it cannot be read makes the table taken for a replica, saying what."""
    description: dict[str, Any] = {"TableName": "G", "TableSizeBytes": 0}
    if replicas is not None:
        description["Replicas"] = replicas
    found = advise_module.replication(description)
    assert (found.regions, found.unknown) == (regions, unknown)
    assert found.replicated == (replicas not in (None, []))


def test_a_replicas_advice_says_how_its_writes_are_billed(region: dict[str, Any]) -> None:
    """moto keeps no replicas, so the replica's size is given as DescribeTable would give
    it for a global table; the advice of the same history without replicas says nothing.
    A replica's write units are replicated writes: billed the same, never reservable."""
    busy(region, "Global", 40)
    # by the minute, stock:70 beats on-demand on these three busy hours (by each hour's
    # highest level on-demand wins, and a table on on-demand reserves nothing)
    setup = reserving(region["end"], "per-minute")
    plain = advise_module.advise_one(region["cloudwatch"], region["ddb"], "Global", None, setup)
    assert not isinstance(plain, Failure) and "replicated" not in plain.notes
    trace = history(region["cloudwatch"], region["ddb"], "Global", None, 1, region["end"])
    size = advise_module.Size(0.0, replication=Replication(("eu-west-1", "us-east-1")))
    advice = advise_module.advise_trace(trace, "Global", None, setup, lambda _: Current({}), size)
    assert not isinstance(advice, Failure)
    assert "a global table replicated in eu-west-1, us-east-1" in advice.notes
    assert "replicated write capacity, which reserved capacity does not cover" in advice.notes
    assert plain.hours is not None and advice.hours is not None
    alone, replica = plain.hours.listed.plan, advice.hours.listed.plan
    assert sum(alone.write) > 0 and sum(replica.write) == 0
    assert replica.read == alone.read
    prices = Prices()
    assert fleet_bill(replica, {}, None, prices) == pytest.approx(
        fleet_bill(alone, {}, None, prices)
    )
    # a reservation of every write unit saves the table alone money, the replica none
    blocks = {"write": 100}
    assert fleet_bill(alone, blocks, "1y", prices) != fleet_bill(alone, {}, "1y", prices)
    assert fleet_bill(replica, blocks, "1y", prices) > fleet_bill(replica, {}, "1y", prices)
    # the fleet's summary shows the replica's writes as replicated, not as a table that
    # writes nothing
    plan = plan_fleet([plain.hours, replace(advice.hours, name="Replica")], ["1y"], ReserveSetup())
    units = summary(plan)["median_hourly_units"]
    assert units["Global"]["write"] > 0 and "replicated_writes" not in units["Global"]
    assert units["Replica"] == {
        "read": units["Global"]["read"],
        "write": 0.0,
        "replicated_writes": True,
    }
    shown = reservation_html(summary(plan))
    assert shown.count(">replicated<") == 1


def test_a_table_whose_replicas_cannot_be_read_has_no_writes_reserved(
    region: dict[str, Any],
) -> None:
    """DescribeTable's Replicas there but not a list (untrusted input): whether the table is
    a global table's replica is not known, so its advice stands but its write units are
    left out of the fleet's reservation, as a replica's are, and its notes say why."""
    busy(region, "Unread", 40)
    setup = reserving(region["end"], "per-minute")  # stock:70 beats on-demand, as above
    size = advise_module.size_of({"TableName": "Unread", "Replicas": "eu-west-1"}, None)
    assert size.replication.replicated and not size.replication.regions
    trace = history(region["cloudwatch"], region["ddb"], "Unread", None, 1, region["end"])
    advice = advise_module.advise_trace(trace, "Unread", None, setup, lambda _: Current({}), size)
    assert not isinstance(advice, Failure) and advice.hours is not None
    assert "whether it is a global table's replica is not known (DescribeTable's Replicas" in (
        advice.notes
    )
    assert sum(advice.hours.listed.plan.write) == 0 and sum(advice.hours.listed.plan.read) > 0


def test_a_table_is_described_once_and_a_refused_description_fails_that_table_alone(
    region: dict[str, Any],
) -> None:
    """advise reads a table's GSIs, size and replicas from one DescribeTable (counted on the
    client, against the moto server); refused (botocore's Stubber: moto never throttles
    it), that table fails with the AWS error code, a Failure the fleet goes on past."""
    busy(region, "Counted", 40)
    setup = reserving(region["end"])
    calls: list[str] = []
    region["ddb"].meta.events.register(
        "before-parameter-build.dynamodb.DescribeTable",
        lambda params, **_: calls.append(params["TableName"]),
    )
    advice = advise_module.advise_one(region["cloudwatch"], region["ddb"], "Counted", None, setup)
    assert not isinstance(advice, Failure) and calls == ["Counted"]
    # with the current settings read too (advise --html/--report, the fleet function)
    calls.clear()
    autoscaling = moto_client(region["aws_env"], "application-autoscaling")
    advice = advise_module.advise_one(
        region["cloudwatch"], region["ddb"], "Counted", None, replace(setup, current=True),
        autoscaling,
    )  # fmt: skip
    assert not isinstance(advice, Failure) and advice.current is not None
    assert calls == ["Counted"]
    client = boto3.client(
        "dynamodb", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(client)
    stub.add_client_error("describe_table", "ThrottlingException", "Rate exceeded")
    with stub:
        failed = advise_module.advise_one(region["cloudwatch"], client, "Counted", None, setup)
    assert isinstance(failed, Failure) and "ThrottlingException" in failed.reason


def odd_answer(how: str) -> Callable[..., None]:
    """A GetMetricData hook making its answer one not to be trusted, ``how``: every result's
    status ``InternalError`` (no minute known), one result ``InternalError``, one value NaN,
    or one value larger than any table is sent."""

    def hook(parsed: dict[str, Any], **_: Any) -> None:
        results = parsed.get("MetricDataResults", [])
        with_values = [r for r in results if r.get("Values")]
        if how == "all":
            for r in results:
                r["StatusCode"] = "InternalError"
        elif how == "one":
            with_values[0]["StatusCode"] = "InternalError"
        else:
            with_values[0]["Values"][0] = {"nan": float("nan"), "huge": 1e306}[how]

    return hook


@pytest.mark.parametrize("how", ["all", "one", "nan", "huge"])
def test_a_history_cloudwatch_answers_untrusted_fails_its_table_and_is_never_idle(
    region: dict[str, Any], how: str
) -> None:
    """CloudWatch's answer not to be trusted (a status other than Complete, a NaN, a value
    no table is sent) is no history to judge: the table fails, naming why, rather than
    being advised on minutes read as idle or as any demand (the nightly tuning would move
    its targets on them), or counted idle (which no alarm watches)."""
    busy(region, "Doubted", 40)
    setup = reserving(region["end"])
    region["cloudwatch"].meta.events.register(
        "after-call.cloudwatch.GetMetricData", odd_answer(how)
    )
    advice = advise_module.advise_one(region["cloudwatch"], region["ddb"], "Doubted", None, setup)
    assert isinstance(advice, Failure), advice
    # the message alone: no class name of the code's (TraceError) in what the user reads
    assert advice.reason.startswith("Doubted: CloudWatch's answer for its ")
    expected = "more than any table is sent" if how == "huge" else "not to be trusted"
    assert expected in advice.reason and "no consumed capacity" not in advice.reason
    # AND the command line's tune --table refuses it in the same words
    with pytest.raises(TraceError, match=expected):
        history(region["cloudwatch"], region["ddb"], "Doubted", None, 1, region["end"])
