"""``ddb-capacity``: every subcommand, the JSON contract, charts, progress, and every
bad-input error; the backtest against a moto server fed with put-metric-data."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from ddb_capacity_tools.cli import main
from ddb_capacity_tools.cli_options import build_parser, model_meanings
from ddb_capacity_tools.local_aws import create_store_table
from ddb_capacity_tools.simulator.backtest import history
from ddb_capacity_tools.simulator.candidates import STOCK
from ddb_capacity_tools.simulator.params import HUNDREDS, ModelParams
from ddb_capacity_tools.simulator.prices import Prices
from ddb_capacity_tools.simulator.scenarios import SCENARIOS
from ddb_capacity_tools.simulator.trace import TraceError, read_csv
from tests.support.cli import HistoryTable, Terminal, a_day_of, run
from tests.support.cli import history_table as history_table  # noqa: F401 (fixture)

CONTRACT = {
    "policy",
    "dimension",
    "throttled_requests",
    "throttled_minutes",
    "first_throttle_minute",
    "provisioned_unit_hours",
    "cost_usd",
    "decreases",
    "peak_provisioned",
}


def csv_file(tmp_path: Path, rows: list[str], header: str = "timestamp,read,write") -> Path:
    path = tmp_path / "trace.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def minutes(
    n: int, read: float = 10, write: float = 20, start: str = "2026-03-01T00:00:00Z"
) -> list[str]:
    t0 = datetime.fromisoformat(start)
    return [
        f"{(t0 + timedelta(minutes=i)).isoformat().replace('+00:00', 'Z')},{read},{write}"
        for i in range(n)
    ]


def test_scenarios_lists_every_builtin() -> None:
    code, out, _ = run("scenarios")
    assert code == 0
    for name in SCENARIOS:
        assert name in out
    code, out, _ = run("scenarios", "--json")
    listed = json.loads(out)["scenarios"]
    assert [s["name"] for s in listed] == list(SCENARIOS)
    assert next(s for s in listed if s["name"] == "spike")["minutes"] == 180


def test_simulate_json_follows_the_contract_and_runs_the_default_set() -> None:
    code, out, err = run("simulate", "--scenario", "spike", "--json")
    assert code == 0, err
    doc = json.loads(out)
    rows = doc["policies"]
    assert {r["policy"] for r in rows} == {
        "stock:70",
        "autopilot+stock:70",  # what ProvisionedTable + ThrottleAwareScaler deploys
        "on-demand",
        "oracle",
        "bound",
        "scheduled",
    }
    for r in rows:
        assert CONTRACT <= set(r)
        assert r["dimension"] in ("read", "write")
    # the bound is reported beside the oracle, with the gap between them
    assert set(doc["oracle_over_bound"]) == {"read", "write"}
    assert all(gap >= 1 for gap in doc["oracle_over_bound"].values())
    stock = next(r for r in rows if r["policy"] == "stock:70" and r["dimension"] == "write")
    assert stock["throttled_minutes"] > 0 and stock["first_throttle_minute"] >= 60
    assert doc["trace"]["minutes"] == 180
    assert err == ""  # three hours: no progress bar


def test_simulate_prints_a_readable_table(tmp_path: Path) -> None:
    code, out, _ = run(
        "simulate", "--scenario", "spike", "--policy", "stock:70", "--policy", "oracle"
    )
    assert code == 0
    assert "policy" in out and "x oracle" in out
    line = next(x for x in out.splitlines() if x.startswith("stock:70") and "write" in x)
    assert "26,405" in line  # peak provisioned, as in the JSON
    # the bound was not run: its column is "-", and the footnote says what the columns are
    # and why one is empty
    assert line.split()[8] == "-"
    assert (
        "x oracle, x bound: the cost against the oracle's and the bound's (- when they were "
        "not run or cost nothing)" in out
    )


def test_a_csv_trace_runs_with_overridden_prices_and_model(tmp_path: Path) -> None:
    path = csv_file(tmp_path, minutes(30))
    code, out, err = run(
        "simulate",
        "--trace",
        str(path),
        "--policy",
        "fixed:100",
        "--json",
        "--price",
        "wcu_hour=1",
        "--warmup-minutes",
        "0",
    )
    assert code == 0, err
    write = next(r for r in json.loads(out)["policies"] if r["dimension"] == "write")
    assert write["provisioned_unit_hours"] == 50 and write["cost_usd"] == 50
    assert json.loads(out)["model"]["warmup_minutes"] == 0


def test_chart_is_a_png(tmp_path: Path) -> None:
    target = tmp_path / "out" / "spike.png"
    target.parent.mkdir()
    code, _, err = run(
        "simulate",
        "--scenario",
        "spike",
        "--policy",
        "stock:70",
        "--policy",
        "oracle",
        "--chart",
        str(target),
    )
    assert code == 0, err
    assert f"chart written to {target}" in err
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_progress_bar_on_traces_longer_than_a_day(tmp_path: Path) -> None:
    argv = ["simulate", "--scenario", "nightly-batch", "--policy", "fixed:9000", "--json"]
    # GIVEN stderr on a terminal: a trace longer than a day shows its progress bar
    err = Terminal()
    assert main(argv, io.StringIO(), err) == 0
    assert "fixed:9000" in err.getvalue() and "100%" in err.getvalue()
    # AND --quiet hides it
    err = Terminal()
    assert main([*argv, "--quiet"], io.StringIO(), err) == 0 and err.getvalue() == ""


def test_no_progress_bar_where_stderr_is_no_terminal() -> None:
    # GIVEN stderr into a pipe (a CI log, a file) WHEN a trace longer than a day is simulated
    script = Path(sys.executable).parent / "ddb-capacity"
    argv = ["simulate", "--scenario", "nightly-batch", "--policy", "fixed:9000", "--json"]
    done = subprocess.run(
        [str(script), *argv], capture_output=True, text=True, check=False, timeout=120
    )
    # THEN it prints no progress bar there: no line redrawn in place
    assert done.returncode == 0 and json.loads(done.stdout)["policies"]
    assert done.stderr == ""


def test_the_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "ddb-capacity"
    done = subprocess.run(
        [
            str(script),
            "simulate",
            "--scenario",
            "flash-crowd",
            "--policy",
            "throttle-aware",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["policies"][0]["policy"] == "throttle-aware"


def test_a_schedule_file_drives_the_scheduled_policy(tmp_path: Path) -> None:
    schedule = tmp_path / "s.json"
    schedule.write_text(
        json.dumps(
            [
                {
                    "name": "crowd",
                    "schedule": "at(2026-01-05T14:57:00)",
                    "dimension": "write",
                    "min_capacity": 15000,
                },
                {
                    "name": "calm",
                    "schedule": "at(2026-01-05T15:25:00)",
                    "dimension": "write",
                    "min_capacity": 1,
                },
            ]
        )
    )
    code, out, err = run(
        "simulate",
        "--scenario",
        "flash-crowd",
        "--policy",
        "scheduled",
        "--policy",
        "stock:70",
        "--schedule",
        str(schedule),
        "--json",
    )
    assert code == 0, err
    rows = {(r["policy"], r["dimension"]): r for r in json.loads(out)["policies"]}
    assert rows[("scheduled", "write")]["throttled_minutes"] == 0
    assert rows[("stock:70", "write")]["throttled_minutes"] > 0


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("rows", "header", "message"),
    [
        (
            [],
            "timestamp,write,read",
            "line 1: got header 'timestamp,write,read'; expected 'timestamp,read,write'",
        ),
        ([], "timestamp,read,write", "line 2: no data rows"),
        (
            ["2026-03-01T00:00:00Z,1,2", "yesterday,1,2"],
            None,
            "line 3, column timestamp: got 'yesterday'; expected an ISO-8601 UTC timestamp",
        ),
        (
            ["2026-03-01T00:00:00+02:00,1,2"],
            None,
            "line 2, column timestamp: got '2026-03-01T00:00:00+02:00'; expected a UTC timestamp",
        ),
        (["2026-03-01T00:00:30Z,1,2"], None, "expected a timestamp on a whole minute"),
        (["2026-03-01T00:00:00.5Z,1,2"], None, "expected a timestamp on a whole minute"),
        (
            ["2026-03-01T00:00:00Z,1,2", "2026-03-01T00:02:00Z,1,2"],
            None,
            "line 3, column timestamp: got '2026-03-01T00:02:00Z'; expected 2026-03-01T00:01:00Z",
        ),
        (
            ["2026-03-01T00:00:00Z,1,-2"],
            None,
            "line 2, column write: got '-2'; expected a number of capacity units per second >= 0",
        ),
        (["2026-03-01T00:00:00Z,lots,2"], None, "line 2, column read: got 'lots'"),
        (["2026-03-01T00:00:00Z,1"], None, "line 2: got 2 columns; expected 3"),
    ],
)
def test_bad_csv_names_line_and_column(
    tmp_path: Path, rows: list[str], header: str | None, message: str
) -> None:
    path = csv_file(tmp_path, rows, header or "timestamp,read,write")
    code, out, err = run("simulate", "--trace", str(path), "--policy", "fixed:1")
    assert code == 2 and out == ""
    assert f"ddb-capacity: error: --trace: {path}" in err and message in err
    with pytest.raises(TraceError):
        read_csv(path)


def test_rows_of_blank_fields_are_passed_over(tmp_path: Path) -> None:
    rows = ["2026-03-01T00:00:00Z,1,2", ",,", " , , ", "2026-03-01T00:01:00Z,3,4"]
    trace = read_csv(csv_file(tmp_path, rows, "timestamp,read,write"))
    assert trace.demand[(None, "read")] == [1.0, 3.0]


def test_an_empty_or_missing_csv(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert "line 1: the file is empty" in run("simulate", "--trace", str(empty))[2]
    # a file that cannot be read: the option, the file, why, and what is expected
    missing = tmp_path / "none.csv"
    for command in ("simulate", "tune", "reserve"):
        code, out, err = run(command, "--trace", str(missing))
        assert (code, out, err) == (
            2,
            "",
            f"ddb-capacity: error: --trace: {missing}: cannot be read (No such file or "
            "directory); expected a CSV file of timestamp,read,write rows\n",
        ), command
    code, _, err = run("simulate", "--scenario", "spike", "--schedule", str(tmp_path / "s.json"))
    assert (code, err) == (
        2,
        f"ddb-capacity: error: --schedule: {tmp_path / 's.json'}: cannot be read (No such file "
        "or directory); expected a JSON file of schedule entries\n",
    )


ROW = b"2026-03-01T00:00:00Z,1,2\n"
LONG = 131_073  # one character over csv's field size limit
UNITS = "a number of capacity units per second"
SPAN = "expected a timestamp from 1970-01-01T00:00:00Z to 2999-12-31T23:59:00Z"


@pytest.mark.parametrize(
    ("content", "options", "message"),
    [
        (
            b"2026-03-01T00:00:00Z,1\xff,2\n",
            [],
            rf"line 2, column read: got b'1\xff'; expected UTF-8 text ({UNITS})",
        ),
        (
            ROW + b"2026-03-01T00:01:00\xe9,1,2\n",
            [],
            r"line 3, column timestamp: got b'2026-03-01T00:01:00\xe9'; expected UTF-8 text "
            "(an ISO-8601 UTC timestamp such as 2026-01-05T13:00:00Z)",
        ),
        (
            ROW + b"2026-03-01T00:01:00Z," + b"9" * LONG + b",2\n",
            [],
            f"line 3, column read: got '{'9' * 198}'... (131,073 characters); expected at most "
            f"131,072 characters ({UNITS})",
        ),
        (
            b'2026-03-01T00:00:00Z,1,"' + b"7" * LONG + b'"\n',
            [],
            f"line 2, column write: got '{'7' * 198}'... (131,073 characters); expected at "
            f"most 131,072 characters ({UNITS})",
        ),
        (
            b"2026-03-01T00:00:00Z,1,1.7e308\n",
            [],
            "line 2, column write: got '1.7e308'; expected at most --max-capacity (40000) "
            "capacity units per second",
        ),
        (
            b"2026-03-01T00:00:00Z,inf,2\n",
            [],
            "line 2, column read: got 'inf'; expected at most --max-capacity (40000) "
            "capacity units per second",
        ),
        (
            ROW + b"2026-03-01T00:01:00Z,150.5,2\n",
            ["--max-capacity", "150"],
            "line 3, column read: got '150.5'; expected at most --max-capacity (150) "
            "capacity units per second",
        ),
        (
            b"9999-12-31T23:59:00Z,1,2\n",
            [],
            f"line 2, column timestamp: got '9999-12-31T23:59:00Z'; {SPAN}",
        ),
        (
            b"0001-01-01T00:00:00Z,1,2\n",
            [],
            f"line 2, column timestamp: got '0001-01-01T00:00:00Z'; {SPAN}",
        ),
        (
            b"2026-03-01T00:00:00Z," + b"5" * 300 + b",2\n",
            [],
            f"line 2, column read: got '{'5' * 198}'... (300 characters); expected at most "
            "--max-capacity (40000) capacity units per second",
        ),
    ],
)
def test_every_malformed_trace_is_one_line_with_exit_2(
    tmp_path: Path, content: bytes, options: list[str], message: str
) -> None:
    path = tmp_path / "trace.csv"
    path.write_bytes(b"timestamp,read,write\n" + content)
    for command in ("simulate", "tune"):
        code, out, err = run(command, "--trace", str(path), *options, "--workers", "1")
        assert (code, out, err) == (2, "", f"ddb-capacity: error: --trace: {path} {message}\n")


def test_a_header_that_is_not_utf8_is_shown_as_bytes(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_bytes(b"timestamp,r\xe9ad,write\n" + ROW)
    assert run("simulate", "--trace", str(path)) == (
        2,
        "",
        f"ddb-capacity: error: --trace: {path} line 1: got header b'timestamp,r\\xe9ad,write'; "
        "expected 'timestamp,read,write'\n",
    )


def test_read_csv_bounds_demand_without_a_max_capacity(tmp_path: Path) -> None:
    path = csv_file(tmp_path, ["2026-03-01T00:00:00Z,1000000,1.7e308"])
    with pytest.raises(TraceError) as refused:
        read_csv(path)
    assert str(refused.value) == (
        f"{path} line 2, column write: got '1.7e308'; expected at most 1,000,000 capacity "
        "units per second (the largest --max-capacity)"
    )


def test_demand_up_to_max_capacity_and_the_span_of_timestamps_are_accepted(tmp_path: Path) -> None:
    path = csv_file(tmp_path, minutes(3, read=150, write=0, start="2999-12-31T23:57:00Z"))
    code, out, err = run(
        "simulate", "--trace", str(path), "--max-capacity", "150", "--policy", "fixed:10", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["trace"]["minutes"] == 3
    early = csv_file(tmp_path, minutes(3, start="1970-01-01T00:00:00Z"))
    assert run("simulate", "--trace", str(early), "--policy", "stock:70", "--quiet")[0] == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--scenario", "tsunami"],
            "--scenario: got 'tsunami'; expected one of spike, spike-14000, slow-start, diurnal",
        ),
        (["--scenario", "spike", "--policy", "stok:70"], "--policy: got 'stok:70'"),
        (["--scenario", "spike", "--policy", "stock:95"], "target utilization 95 is outside"),
        (["--scenario", "spike", "--price", "gold=1"], "--price: got 'gold=1'"),
        (
            ["--scenario", "spike", "--chart", "out.jpg"],
            "--chart: got 'out.jpg'; expected a file name ending in .png",
        ),
        (
            ["--scenario", "spike", "--metric-delay-minutes", "99"],
            "--metric-delay-minutes: got 99; expected a whole number from 0 to 15",
        ),
        (
            ["--scenario", "spike", "--min-capacity", "50", "--max-capacity", "10"],
            "--min-capacity: got 50; expected at most --max-capacity (10)",
        ),
        (["--scenario", "spike", "--tick", "0"], "--tick: got 0; expected whole minutes from 1"),
        (
            ["--scenario", "flash-crowd", "--policy", "scheduled"],
            "--policy 'scheduled': flash-crowd has no schedule of its own; pass --schedule",
        ),
    ],
)
def test_bad_options_name_the_option_and_value(argv: list[str], message: str) -> None:
    code, out, err = run("simulate", *argv)
    assert code == 2 and out == ""
    assert message in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{}", "got a JSON dict; expected a list of schedule entries"),
        ("[1", "line 1, column 3: not JSON"),
        (
            '[{"name": "x", "schedule": "at(2026-01-05T13:00:00)", "dimension": "write", '
            '"min": 5}]',
            "schedule entry 1: unknown field 'min'",
        ),
        (
            '[{"name": "x", "dimension": "write", "min_capacity": 5}]',
            "schedule entry 1: missing field 'schedule'",
        ),
        (
            '[{"name": "x", "schedule": "at(2026-01-05T13:00:00)", "dimension": "writes", '
            '"min_capacity": 5}]',
            "schedule entry 1 field dimension/index: got 'writes'; the trace has read, write",
        ),
        (
            '[{"name": "x", "schedule": "cron(0 25 * * ? *)", "dimension": "write", '
            '"min_capacity": 5}]',
            "schedule entry 1: schedule table write schedule 'x'",
        ),
    ],
)
def test_bad_schedule_files_name_the_entry_and_field(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "s.json"
    path.write_text(content)
    code, _, err = run(
        "simulate", "--scenario", "spike", "--policy", "scheduled", "--schedule", str(path)
    )
    assert code == 2
    # the option and the file first, whether the file or one of its entries is bad
    assert err.startswith(f"ddb-capacity: error: --schedule: {path}") and message in err, err


def test_argparse_rejects_missing_and_conflicting_sources(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "--policy", "oracle"])
    assert exit_info.value.code == 2
    assert "one of the arguments --scenario --trace is required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["simulate", "--scenario", "spike", "--trace", "x.csv"])
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["local", "--stak", "Shop"], "usage: ddb-capacity local "),
        (["simulate", "--scenario", "spike", "--polcy", "oracle"], "usage: ddb-capacity simulate "),
    ],
)
def test_an_unknown_argument_shows_its_commands_usage(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str
) -> None:
    # (argparse showed the top-level usage, which names no command's options)
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.startswith(usage), err
    assert err.rstrip().endswith(f"error: unrecognized arguments: {' '.join(argv[-2:])}")


# ---------------------------------------------------------------- backtest on moto


def test_backtest_history_rebuilds_demand_from_consumed_and_throttles(
    history_table: HistoryTable,
) -> None:
    name, end, ddb, cloudwatch = history_table
    trace = history(cloudwatch, ddb, name, None, 1, end)
    assert trace.minutes == 1440 and trace.start == end - timedelta(days=1)
    write = trace.demand[(None, "write")]
    assert write[-1] == pytest.approx(100)  # a minute before the end
    assert write[-150] == pytest.approx(900 + 100)  # consumed + 6,000 events / 60
    assert write[-200] == 0  # before any traffic
    gsi = history(cloudwatch, ddb, name, "ByGroup", 1, end)
    assert list(gsi.demand) == [("ByGroup", "read"), ("ByGroup", "write")]
    assert gsi.demand[("ByGroup", "read")][-10] == pytest.approx(40)
    # the whole bill: the table's series and the GSI's, each under its own key
    both = history(cloudwatch, ddb, name, None, 1, end, with_indexes=True)
    assert list(both.demand) == [
        (None, "read"),
        (None, "write"),
        ("ByGroup", "read"),
        ("ByGroup", "write"),
    ]
    assert both.demand[(None, "write")] == write
    assert both.demand[("ByGroup", "read")] == gsi.demand[("ByGroup", "read")]
    assert both.demand[(None, "read")] == trace.demand[(None, "read")]
    assert both.name == f"{name} (+1 GSI)"


def test_backtest_subcommand_replays_the_history(history_table: HistoryTable) -> None:
    name, end, *_ = history_table
    code, out, err = run(
        "backtest",
        *a_day_of(name, end),
        "--policy",
        "stock:70",
        "--policy",
        "oracle",
        "--json",
        "--quiet",
    )
    assert code == 0, err
    rows = {(r["policy"], r["dimension"]): r for r in json.loads(out)["policies"]}
    oracle = rows[("oracle", "write")]
    assert oracle["peak_provisioned"] == 1000 and oracle["throttled_minutes"] == 0
    assert rows[("stock:70", "write")]["throttled_minutes"] > 0
    assert rows[("oracle", "write")]["demand_unit_hours"] == pytest.approx(
        (120 * 100 + 60 * 1000) / 60
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--days", "16"], "--days: got 16; expected a whole number from 1 to 15"),
        (["--days", "1", "--index", "Nope"], "--index: got 'Nope'; table"),
        (["--days", "1", "--end", "noon"], "--end: got 'noon'; expected an ISO-8601 time"),
    ],
)
def test_backtest_bad_input(history_table: HistoryTable, argv: list[str], message: str) -> None:
    name, *_ = history_table
    code, _, err = run("backtest", "--table", name, *argv)
    assert code == 2 and message in err


def test_backtest_unknown_table(history_table: HistoryTable) -> None:
    code, _, err = run("backtest", "--table", "NoSuchTable", "--days", "1")
    assert code == 2
    assert "--table: got 'NoSuchTable'; no such table in this account and Region" in err


# ---------------------------------------------------------------- request / release on moto


#: The table's name and the DynamoDB client.
RequestTable = tuple[str, Any]


@pytest.fixture
def request_table(
    aws_client: Any, aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> RequestTable:
    for name, value in aws_env.items():
        monkeypatch.setenv(name, value)
    ddb = aws_client("dynamodb")
    name = f"Request{datetime.now(UTC):%H%M%S%f}"
    ddb.create_table(
        TableName=name,
        BillingMode="PROVISIONED",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
    )
    create_store_table(ddb, f"{name}-holds")
    monkeypatch.setenv("CAPACITY_HOLDS_TABLE", f"{name}-holds")  # as CapacityRequests sets it
    return name, ddb


def test_request_and_release_by_id(request_table: RequestTable) -> None:
    name, ddb = request_table
    code, out, err = run("request", "--table", name, "--write", "250", "--hold", "30", "--json")
    assert code == 0, err
    made = json.loads(out)
    assert made["levels"] == {"write": 250} and made["holds"]["write"]["units"] == 250
    expires = datetime.fromisoformat(made["expires"])
    assert timedelta(minutes=29) < expires - datetime.now(UTC) <= timedelta(minutes=30, seconds=1)
    throughput = ddb.describe_table(TableName=name)["Table"]["ProvisionedThroughput"]
    assert throughput["WriteCapacityUnits"] == 250
    code, out, err = run("release", "--table", name, "--id", made["id"])
    assert code == 0, err
    assert out == f"{name} table write via update-table: 250 -> 10 (applied)\n"
    code, out, _ = run("release", "--table", name, "--expired")
    assert (code, out) == (0, "nothing to end\n")


def test_request_prints_how_to_end_it(request_table: RequestTable) -> None:
    name, _ = request_table
    code, out, err = run("request", "--table", name, "--read", "40")
    assert code == 0, err
    first, second = out.splitlines()
    hold_id = first.split()[1]
    assert first.startswith(f"hold {hold_id} on {name}: read >= 40 until ")
    token = second.split("--token=")[1]
    assert second == (
        f"end it early with: ddb-capacity release --table {name} --id {hold_id} --token={token}"
    )
    # the command as printed (a token may begin with '-': '--token=' keeps it a value)
    wrong = run("release", "--table", name, "--id", hold_id, f"--token={token}x")
    assert wrong[0] == 2
    assert run(*second.split("ddb-capacity ")[1].split())[0] == 0


def test_the_printed_command_ends_a_hold_whose_token_begins_with_a_dash(
    request_table: RequestTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a hold whose token begins with '-' (one token in 64 does)
    import ddb_capacity_runtime.requests.request as request_module

    monkeypatch.setattr(request_module, "new_token", lambda: "-" + "a" * 31)
    name, _ = request_table
    code, out, err = run("request", "--table", name, "--read", "40")
    assert code == 0, err
    # WHEN the command it printed is run as printed
    printed = out.splitlines()[1].split("ddb-capacity ")[1]
    # THEN the token is read as the token, and the hold ends
    assert run(*printed.split())[0] == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--write", "5", "--hold", "0"], "--hold: got 0; expected whole minutes from 1 to 1440"),
        (["--write", "5", "--timeout", "-1"], "--timeout: got -1; expected whole minutes from 0"),
        (
            ["--write", "50000"],
            "--write: got 50000; expected a whole number of capacity units from 0 to 40,000",
        ),
        ([], "--read and --write: got 0 and 0"),
        (["--write", "5", "--index", "Nope"], "--index: got 'Nope'; table"),
    ],
)
def test_request_bad_input(request_table: RequestTable, argv: list[str], message: str) -> None:
    name, _ = request_table
    code, _, err = run("request", "--table", name, *argv)
    assert code == 2 and message in err, err


def test_release_of_an_unknown_hold(request_table: RequestTable) -> None:
    name, _ = request_table
    code, _, err = run("release", "--table", name, "--id", "nope")
    assert code == 2
    assert (
        f"ddb-capacity: error: id and token: table '{name}' has no hold 'nope' with that token"
        in err
    )


def test_request_names_its_store_or_says_it_has_none(
    request_table: RequestTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, _ = request_table
    store = f"{name}-holds"
    monkeypatch.delenv("CAPACITY_HOLDS_TABLE")
    code, _, err = run("request", "--table", name, "--write", "20")
    assert code == 2
    assert "--broker/--store: got neither, and neither CAPACITY_BROKER nor CAPACITY_HOLDS" in err
    code, out, err = run("request", "--table", name, "--write", "20", "--store", store)
    assert code == 0, err
    assert out.splitlines()[1].endswith(f" --store {store}")


def test_a_store_that_is_not_there_is_one_line_and_leaves_nothing_held(
    request_table: RequestTable, caplog: pytest.LogCaptureFixture
) -> None:
    name, ddb = request_table
    code, _, err = run("request", "--table", name, "--write", "200", "--store", "nostore")
    # THEN one line names the store and what to give; nothing was held, so nothing is said
    # to stay raised, and nothing was raised
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--store: got 'nostore'; no such table in this account and Region" in err
    assert "hold_store" in err and "raised" not in err
    assert "hold-withdraw-failed" not in caplog.text and "Traceback" not in caplog.text
    throughput = ddb.describe_table(TableName=name)["Table"]["ProvisionedThroughput"]
    assert throughput["WriteCapacityUnits"] == 10


@pytest.mark.parametrize(
    "ended", [["--id", "h1", "--token=t"], ["--expired"]], ids=["id", "expired"]
)
@pytest.mark.parametrize("named", [True, False], ids=["--store", "CAPACITY_HOLDS_TABLE"])
def test_a_release_on_a_store_that_is_not_there_names_where_it_came_from(
    request_table: RequestTable, monkeypatch: pytest.MonkeyPatch, ended: list[str], named: bool
) -> None:
    # GIVEN a hold store named (by --store, or by the environment) that is no table
    name, _ = request_table
    monkeypatch.setenv("CAPACITY_HOLDS_TABLE", "nostore")
    store = ["--store", "nostore"] if named else []
    # WHEN a hold is released on it
    code, out, err = run("release", "--table", name, *ended, *store)
    # THEN one line names the option (or the variable), the store and what to give
    option = "--store" if named else "CAPACITY_HOLDS_TABLE"
    assert (code, out) == (2, "")
    assert err == (
        f"ddb-capacity: error: {option}: got 'nostore'; no such table in this account and Region "
        "(ResourceNotFoundException: Requested resource not found): name the state store the "
        "constructs made (CapacityRequests' hold_store)\n"
    )


# ------------------------------------------------------------------ one-line errors


def test_a_chart_in_a_missing_folder_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    target = tmp_path / "nowhere" / "spike.png"
    code, _, err = run(
        "simulate", "--scenario", "spike", "--policy", "stock:70", "--chart", str(target)
    )
    assert code == 2
    assert err == (
        f"ddb-capacity: error: --chart: got {str(target)!r}; the folder "
        f"{str(target.parent)!r} does not exist (create it first)\n"
    )
    assert not target.parent.exists()


def test_an_unwritable_chart_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "spike.png").mkdir()  # a folder where the file should go
    code, _, err = run(
        "simulate",
        "--scenario",
        "spike",
        "--policy",
        "stock:70",
        "--chart",
        str(folder / "spike.png"),
    )
    assert code == 2 and err.startswith("ddb-capacity: error: --chart: cannot write ")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"},
            "ddb-capacity: error: no AWS Region: set AWS_DEFAULT_REGION",
        ),
        (
            {
                "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_ACCESS_KEY_ID": "x",
                "AWS_SECRET_ACCESS_KEY": "x",
                "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
            },
            "ddb-capacity: error: EndpointConnectionError: Could not connect to the endpoint URL",
        ),
        (
            {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": "http://127.0.0.1:9"},
            "ddb-capacity: error: no AWS credentials",
        ),
    ],
    ids=["no-region", "endpoint-down", "no-credentials"],
)
def test_aws_configuration_errors_are_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str], message: str
) -> None:
    for name in (
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # no credentials cached by others
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, _, err = run("backtest", "--table", "Orders", "--days", "1", "--policy", "stock:70")
    assert code == 2, err
    assert err.startswith(message) and err.count("\n") == 1


def test_tune_reads_a_tables_history(history_table: HistoryTable) -> None:
    """``tune --table`` places the candidates on the table's own CloudWatch history."""
    name, end, *_ = history_table
    code, out, err = run(
        "tune",
        *a_day_of(name, end),
        "--candidate",
        "stock:70",
        "--candidate",
        "on-demand",
        "--json",
        "--quiet",
        "--workers",
        "1",
    )
    assert code == 0, err
    doc = json.loads(out)
    by = {c["policy"]: c for c in doc["candidates"]}
    assert set(by) == {*STOCK, "on-demand"}  # stock at 30-90 % and on-demand: always run
    assert by["on-demand"]["throttled_requests"]["median"] == 0
    assert by["stock:70"]["throttled_requests"]["median"] > 0  # the 1,000/s hour throttles
    assert doc["recommended"] in by
    assert ("PAY_PER_REQUEST" if doc["recommended"] == "on-demand" else "ProvisionedTable") in (
        doc["code"]
    )


def test_tune_scores_from_a_time_in_a_tables_history(history_table: HistoryTable) -> None:
    """``tune --table --score-from``: the history read from CloudWatch is the trace, chosen
    on before the time and scored from it on."""
    name, end, *_ = history_table
    args = ["tune", "--table", name, "--days", "2", "--end", end.isoformat(), "--quiet"]
    args += ["--candidate", "stock:70", "--workers", "1", "--json"]
    since = end - timedelta(hours=2)  # the last two hours: the 900/s hour scored
    code, out, err = run(*args, "--score-from", since.isoformat())
    assert code == 0, err
    scored = json.loads(out)["scored"]
    assert scored["score_from"] == f"{since:%Y-%m-%dT%H:%M}Z"
    assert (scored["chosen_minutes"], scored["scored_minutes"]) == (2 * 1440 - 120, 120)
    # a time that leaves less than a day before it: refused, with the history's bounds
    code, out, err = run(*args, "--score-from", (end - timedelta(days=1, hours=1)).isoformat())
    first, last = end - timedelta(days=1), end - timedelta(hours=1)
    assert (code, out) == (2, "")
    assert (
        f"; expected an ISO-8601 time from {first:%Y-%m-%dT%H:%M}Z to {last:%Y-%m-%dT%H:%M}Z" in err
    )


def test_tune_refuses_a_table_without_traffic_before_its_score_from(
    history_table: HistoryTable,
) -> None:
    """``tune --table --score-from T`` whose history has traffic only from ``T`` on: the
    choice is made on the minutes before ``T``, which show nothing to tune on; refused
    before simulating, as a table without traffic is."""
    name, end, *_ = history_table
    args = ["tune", "--table", name, "--days", "2", "--end", end.isoformat(), "--quiet"]
    since = end - timedelta(hours=3)  # the table's traffic: its last three hours
    code, out, err = run(*args, "--candidate", "stock:70", "--score-from", since.isoformat())
    assert code == 2 and out == ""
    assert err == (
        f"ddb-capacity: error: --table: {name}: no consumed capacity or throttles in 2 days "
        f"of CloudWatch history before --score-from {since:%Y-%m-%dT%H:%M}Z, the minutes the "
        "choice is made on: idle, on-demand without traffic, or its metrics are not "
        "readable; nothing to tune\n"
    )


def test_tune_refuses_a_table_without_traffic_before_simulating(
    history_table: HistoryTable,
) -> None:
    """``tune --table`` on a day of history with no consumed capacity nor throttles says so
    at once, as ``advise`` does, instead of tuning on nothing."""
    name, end, *_ = history_table
    code, out, err = run("tune", *a_day_of(name, end - timedelta(days=3)), "--quiet")
    assert code == 2 and out == ""
    assert err == (
        f"ddb-capacity: error: --table: {name}: no consumed capacity or throttles in 1 day "
        "of CloudWatch history: idle, on-demand without traffic, or its metrics are not "
        "readable; nothing to tune\n"
    )


# ---------------------------------------------------------------- simulate --score-from


def test_score_from_counts_refusals_and_cost_from_that_time_on(tmp_path: Path) -> None:
    """An hour at 20 WCU/s, then an hour at 40: scored from the second hour, on-demand pays
    for the second hour only, and every policy's results say where they count from."""
    rows = minutes(60, write=20) + minutes(60, write=40, start="2026-03-01T01:00:00Z")
    path = csv_file(tmp_path, rows)
    args = ["simulate", "--trace", str(path), "--policy", "on-demand", "--policy", "stock:70"]
    code, out, err = run(*args, "--json", "--quiet")
    assert code == 0, err
    whole = {(r["policy"], r["dimension"]): r for r in json.loads(out)["policies"]}
    code, out, err = run(*args, "--json", "--quiet", "--score-from", "2026-03-01T01:00:00Z")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["score_from"] == {"minute": 60, "time": "2026-03-01T01:00Z"}
    scored = {(r["policy"], r["dimension"]): r for r in doc["policies"]}
    assert {r["score_from"] for r in scored.values()} == {60}
    price = Prices().request_unit("write")
    assert scored[("on-demand", "write")]["cost_usd"] == pytest.approx(60 * 40 * 60 * price)
    assert whole[("on-demand", "write")]["cost_usd"] == pytest.approx(60 * (20 + 40) * 60 * price)
    for key, r in scored.items():  # an hour of two: less unit-hours, no more refusals
        assert r["provisioned_unit_hours"] < whole[key]["provisioned_unit_hours"] or (
            key[0] == "on-demand"
        )
        assert r["throttled_requests"] <= whole[key]["throttled_requests"]
    # an offset is honoured; a time without one is UTC; text output says where it counts from
    code, out, err = run(*args, "--quiet", "--score-from", "2026-03-01T02:30:00+01:00")
    assert code == 0, err
    assert out.startswith("scored from 2026-03-01T01:30Z (minute 90): refusals and cost")


@pytest.mark.parametrize(
    ("given", "extra"),
    [
        ("2026-02-28T23:59:00Z", []),
        ("2026-03-01T02:00:00Z", []),
        ("noon", []),
    ],
    ids=["before", "after", "not-a-time"],
)
def test_score_from_outside_the_trace_is_refused(
    tmp_path: Path, given: str, extra: list[str]
) -> None:
    path = csv_file(tmp_path, minutes(120))
    code, out, err = run(
        "simulate", "--trace", str(path), "--policy", "stock:70", "--score-from", given, *extra
    )
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"--score-from: got {given!r}" in err
    assert "expected an ISO-8601 time from 2026-03-01T00:00Z to 2026-03-01T01:59Z" in err


def test_score_from_applies_to_the_ensemble_too(tmp_path: Path) -> None:
    path = csv_file(tmp_path, minutes(120))
    base = ["simulate", "--trace", str(path), "--policy", "stock:70", "--quiet", "--json"]
    base += ["--ensemble", "plausible", "--workers", "1"]
    code, out, err = run(*base, "--score-from", "2026-03-01T01:00:00Z")
    assert code == 0, err
    scored = json.loads(out)
    code, out, err = run(*base)
    assert code == 0, err
    whole = json.loads(out)
    assert scored["score_from"]["minute"] == 60

    def cost(doc: dict[str, Any]) -> float:
        return float(sum(p["cost_usd"]["median"] for p in doc["ensemble"]["policies"]))

    assert 0 < cost(scored) < cost(whole)


@pytest.mark.parametrize(
    "command",
    [[], ["scenarios"], ["simulate"], ["backtest"], ["tune"], ["advise"], ["request"], ["release"]],
)
def test_every_commands_help_prints(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """argparse formats help with %: a help text with a % sign of its own must double it."""
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--help"], io.StringIO(), io.StringIO())
    assert exit_.value.code == 0
    assert "usage: ddb-capacity" in capsys.readouterr().out


UNIT_WORDS = {
    "minutes": "minutes",
    "seconds": "seconds",
    "gb": "GB",
    "units": "units",
    "capacity": "units",
}
"""The unit a model option's help names, by the last word of its name."""


def test_every_model_options_help_says_what_it_is_in_what_unit() -> None:
    """``simulate --help``: each model option is said in words (the first sentence of its
    field's ``:param`` in ModelParams' docstring, the one description of the model), with
    its range and unit, then its default; never its default alone."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    simulate = sub.choices["simulate"]
    [group] = [g for g in simulate._action_groups if (g.title or "").startswith("model")]
    helps = {a.dest: (a.help or "").replace("%%", "%") for a in group._group_actions}
    meanings = model_meanings()
    assert set(helps) == {f.name for f in fields(ModelParams)} and set(meanings) >= set(helps)
    for name, words in helps.items():
        said = words.split("; default")[0]
        assert len(said.split()) >= 5 and not words.startswith("default"), (name, words)
        assert name in HUNDREDS or meanings[name] in said, (name, words)
        unit = UNIT_WORDS.get(name.rsplit("_", 1)[-1])
        assert unit is None or unit in said, (name, words)
