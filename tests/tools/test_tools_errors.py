"""``ddb-capacity``: bad input gets one clear error naming the option, the value received
and what is allowed, before any work is done."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ddb_capacity_runtime import requests
from ddb_capacity_tools.simulator import ModelParams, PolicyError, parse, tune_code
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.cli import run
from tests.support.tune import trace_file

START = datetime(2026, 1, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fixed:-5", "--policy 'fixed:-5': fixed capacity -5 is outside 1 to 40000"),
        ("stock:-70", "--policy 'stock:-70': target utilization -70 is outside 20 to 90"),
        ("autopilot+stock:5", "--policy 'autopilot+stock:5': target utilization 5 is outside"),
    ],
)
def test_a_negative_or_out_of_range_number_is_told_its_range(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as raised:
        parse(text)
    assert str(raised.value).startswith(message)
    code, _, err = run("simulate", "--scenario", "spike", "--policy", text, "--quiet")
    assert code == 2 and err == f"ddb-capacity: error: {raised.value}\n"


@pytest.mark.parametrize("suffix", ["+stream", "+prewarm", "+prewarm+stream"])
def test_a_tune_candidates_suffix_given_to_simulate_says_how_to_run_it(suffix: str) -> None:
    code, _, err = run("simulate", "--scenario", "spike", "--policy", f"autopilot+stock:70{suffix}")
    assert code == 2
    assert err.startswith(f"ddb-capacity: error: --policy: got 'autopilot+stock:70{suffix}'")
    assert err.endswith(
        "; a tune candidate's suffixes are the model's here: run the policy without them, with "
        "--stream-seconds 5 for '+stream', and --warm-read-units/--warm-write-units at the "
        "high-water marks of the code tune printed for '+prewarm'\n"
    )
    # while a policy that is no candidate's is refused as before
    code, _, err = run("simulate", "--scenario", "spike", "--policy", "autopilot+stock:70+x")
    assert code == 2 and "tune candidate" not in err


def test_chart_without_matplotlib_fails_before_simulating(tmp_path: Path) -> None:
    """matplotlib made unimportable in a fresh process: the error comes first, with nothing
    simulated (no table on stdout, no progress bar on stderr)."""
    chart = tmp_path / "out.png"
    prelude = (
        "import sys; sys.modules['matplotlib'] = None; "
        "from ddb_capacity_tools.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    argv = ["simulate", "--scenario", "diurnal", "--workers", "1", "--chart", str(chart)]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", prelude, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    took = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "\r" not in done.stderr  # no table, no progress bar
    assert done.stderr == (
        f"ddb-capacity: error: --chart: got {str(chart)!r}; a chart needs matplotlib, which "
        "is not installed: pip install 'matplotlib>=3.8,<4' (what the package's [charts] extra "
        "installs)\n"
    )
    assert took < 30  # imports only: a week of every default policy is not run
    assert not chart.exists()


@pytest.mark.parametrize("policy", ["stok:70", "stock:70"])
def test_tune_refuses_policy_and_points_to_candidate(tmp_path: Path, policy: str) -> None:
    code, out, err = run("tune", "--trace", str(trace_file(tmp_path)), "--policy", policy)
    assert code == 2 and out == ""
    assert err == (
        f"ddb-capacity: error: --policy: got {policy!r}; tune takes none: it tries the "
        "policies given with --candidate P (stock:T, autopilot, autopilot:T, "
        "autopilot+stock:T, autopilot+stock:T+owned; any of these with +prewarm (a "
        "pre-warmed table); any of them but stock:T with +stream (the table's stream as a "
        "write signal); on-demand; windows / windows:T (autopilot+stock:T with declared "
        "on-demand windows at hours learned on the part fitted on); or hybrid / hybrid:T "
        "(autopilot+stock:T with on-demand windows the stack's switch learns each day from the "
        "table's last 7 days); repeatable)\n"
    )


@pytest.mark.parametrize(("option", "value"), [("--chart", "x.png"), ("--schedule", "s.json")])
def test_tune_refuses_the_options_it_would_ignore(tmp_path: Path, option: str, value: str) -> None:
    code, _, err = run("tune", "--trace", str(trace_file(tmp_path)), option, value)
    assert code == 2
    assert err.startswith(f"ddb-capacity: error: {option}: got {value!r}; tune takes none")


@pytest.mark.parametrize(
    ("candidate", "message"),
    [
        ("stock:95", "--candidate 'stock:95': target utilization 95 is outside 20 to 90"),
        ("fixed:-5", "--candidate 'fixed:-5': fixed capacity -5 is outside 1 to 40000"),
        # a name no policy has, one tune never recommends and the variants only simulate
        # compares: refused with the list of what tune tries, not simulate's
        ("stok:70", "--candidate: got 'stok:70'; expected stock:T, autopilot, autopilot:T"),
        ("fixed:100", "--candidate: got 'fixed:100'; expected stock:T, autopilot, autopilot:T"),
        ("oracle", "--candidate: got 'oracle'; expected stock:T, autopilot, autopilot:T"),
        (
            "autopilot+stock:70+lumped",
            "--candidate: got 'autopilot+stock:70+lumped'; expected stock:T, autopilot,",
        ),
        ("stock:70+reserved", "--candidate: got 'stock:70+reserved'; expected stock:T, autopilot,"),
    ],
)
@pytest.mark.parametrize("command", ["tune", "reserve"])
def test_tune_candidate_errors_name_candidate(
    tmp_path: Path, command: str, candidate: str, message: str
) -> None:
    code, _, err = run(command, "--trace", str(trace_file(tmp_path)), "--candidate", candidate)
    assert code == 2 and "--policy" not in err
    assert err.startswith(f"ddb-capacity: error: {message}")
    assert "fixed:N" not in err and "oracle or bound" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["request", "--table", "Orders", "--write", "5"],
            "--broker/--store: got neither, and neither CAPACITY_BROKER nor "
            "CAPACITY_HOLDS_TABLE is set; expected --broker NAME (the broker function "
            "CapacityRequests made) or --store NAME (its hold store table, direct mode)",
        ),
        (
            ["release", "--table", "Orders", "--id", "h1", "--token", "t"],
            "--broker/--store: got neither, and neither CAPACITY_BROKER nor",
        ),
        (
            ["release", "--table", "Orders", "--expired"],
            "--store: got none, and CAPACITY_HOLDS_TABLE is not set; --expired ends holds "
            "directly: expected --store NAME",
        ),
    ],
)
def test_request_without_broker_or_store_names_both(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], message: str
) -> None:
    monkeypatch.delenv("CAPACITY_BROKER", raising=False)
    monkeypatch.delenv("CAPACITY_HOLDS_TABLE", raising=False)
    code, _, err = run(*argv)
    assert code == 2
    assert err.startswith(f"ddb-capacity: error: {message}")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--write", "-5"],
            "--write: got -5; expected a whole number of capacity units from 0 to 40,000",
        ),
        (
            ["--write", "5", "--table", "S"],
            "--table: got 'S'; expected a table's name: 3 to 255 characters of a-z, A-Z, 0-9, "
            "'_', '.' and '-'",
        ),
        (
            [],
            "--read and --write: got 0 and 0; ask for at least one unit of read or write capacity",
        ),
    ],
)
def test_a_request_refused_by_the_api_names_the_option(extra: list[str], message: str) -> None:
    """The requests' API names its fields (``write``); on the command line they are
    options (``--write``)."""
    code, _, err = run("request", "--table", "Orders", "--store", "Holds", *extra)
    assert (code, err) == (2, f"ddb-capacity: error: {message}\n")


@pytest.mark.parametrize("named", [True, False], ids=["--broker", "CAPACITY_BROKER"])
def test_a_release_through_a_broker_without_its_token_is_refused_before_any_aws_call(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, named: bool
) -> None:
    # GIVEN no AWS Region anywhere, and a broker named by the option or the environment
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "CAPACITY_HOLDS_TABLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("CAPACITY_BROKER", "EnvBroker")
    via = ["--broker", "CapacityBroker"] if named else []
    # WHEN a hold is released by id without its token
    code, out, err = run("release", "--table", "Orders", "--id", "h1", *via)
    # THEN the missing option is named (not the Region the broker's invocation would need)
    assert (code, out) == (2, "")
    assert err == (
        "ddb-capacity: error: --token: got none; a release through a broker (--broker, or "
        "$CAPACITY_BROKER) ends a hold only with its release token: expected --token=TOKEN, "
        "as request printed it (or end it directly on the hold store with --store NAME)\n"
    )
    # AND the requests' API refuses it alike, naming its field, before invoking the broker
    with pytest.raises(requests.CapacityRequestError, match=r"^token: got None; a broker ends"):
        requests.release_hold("Orders", "h1", broker="CapacityBroker" if named else None)


def test_a_timeout_through_a_broker_is_told_the_brokers_longest_wait_in_minutes() -> None:
    code, _, err = run(
        "request", "--table", "Orders", "--broker", "B", "--write", "5", "--timeout", "20"
    )
    assert (code, err) == (
        2,
        "ddb-capacity: error: --timeout: got 20; expected whole minutes from 0 to 13 (a "
        "broker's request waits that long at most)\n",
    )


@pytest.mark.parametrize(
    "argv",
    [
        *(["request", "--table", "Orders", o, "2.5"] for o in ("--read", "--write", "--hold")),
        ["request", "--table", "Orders", "--timeout", "2.5"],
        ["reserve", "--table", "Orders", "--days", "2.5"],
        ["reserve", "--table", "Orders", "--processes", "2.5"],
        ["backtest", "--table", "Orders", "--days", "2.5"],
        ["simulate", "--scenario", "spike", "--seed", "2.5"],
    ],
)
def test_a_number_option_that_is_no_whole_number_is_told_so(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        run(*argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"ddb-capacity {argv[0]}: error: argument {argv[-2]}: got '2.5'; expected a whole number"
    )


@pytest.mark.parametrize("call", ["request", "release"])
def test_the_requests_api_without_broker_or_store_names_both(
    monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    monkeypatch.delenv("CAPACITY_BROKER", raising=False)
    monkeypatch.delenv("CAPACITY_HOLDS_TABLE", raising=False)
    with pytest.raises(requests.CapacityRequestError) as refused:
        if call == "request":
            requests.request_capacity("Orders", write=5)
        else:
            requests.release_hold("Orders", "h1", token="t")
    assert str(refused.value) == (
        "broker and store: got neither, and neither CAPACITY_BROKER nor CAPACITY_HOLDS_TABLE "
        "is set; expected broker=NAME (the broker function CapacityRequests made, its "
        "broker.function_name; a Lambda function given grant_request has CAPACITY_BROKER "
        "set) or store=NAME (its hold store table, hold_store.table_name: direct mode)"
    )
    # AND a blank broker names no broker, whatever CAPACITY_BROKER holds
    monkeypatch.setenv("CAPACITY_BROKER", "Broker")
    with pytest.raises(requests.CapacityRequestError) as refused:
        if call == "request":
            requests.request_capacity("Orders", write=5, broker="")
        else:
            requests.release_hold("Orders", "h1", token="t", broker=" ")
    blank = "''" if call == "request" else "' '"
    assert str(refused.value) == (
        f"broker: got {blank}; expected the broker function's name (CapacityRequests' "
        "broker.function_name), or store=NAME (its hold store table: direct mode)"
    )


@pytest.mark.parametrize("call", ["request", "release"])
def test_the_requests_api_refuses_a_broker_and_a_store_given_together(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, call: str
) -> None:
    # GIVEN no Region (so nothing the call could reach, were it made)
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    # WHEN a request or a release names both a broker and a hold store
    with pytest.raises(requests.CapacityRequestError) as refused:
        if call == "request":
            requests.request_capacity("Orders", write=5, store="holds", broker="Broker")
        else:
            requests.release_hold("Orders", "h1", token="t", store="holds", broker="Broker")
    # THEN it is refused, naming both, as the command line refuses --broker with --store
    assert str(refused.value) == (
        "broker and store: got broker 'Broker' and store 'holds'; expected one of them: "
        "broker=NAME (through the broker function) or store=NAME (its hold store table: "
        "direct mode)"
    )


@pytest.mark.parametrize("via", ["broker", "store", "restore"])
def test_the_requests_api_without_a_region_says_how_to_set_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, via: str
) -> None:
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    with pytest.raises(requests.CapacityRequestError) as refused:
        if via == "restore":
            requests.restore_expired("Orders", store="Holds")
        else:
            requests.request_capacity("Orders", write=5, **{via: "Holds"})  # type: ignore[arg-type]
    assert str(refused.value) == (
        "no AWS Region: set AWS_DEFAULT_REGION, or a region in your AWS profile"
    )


@pytest.mark.parametrize(
    "end",
    [
        "0001-01-01",
        "9999-12-31T23:59:59+00:00",
        (datetime.now(UTC) - timedelta(days=20)).isoformat(),
        (datetime.now(UTC) + timedelta(days=1)).isoformat(),
    ],
    ids=["year-1", "year-9999", "20-days-ago", "tomorrow"],  # the same in every process
)
@pytest.mark.parametrize("command", ["backtest", "tune"])
def test_an_end_outside_cloudwatchs_retention_is_refused(command: str, end: str) -> None:
    """No AWS is needed: the time is checked before any client is made."""
    code, _, err = run(command, "--table", "Orders", "--days", "1", "--end", end)
    assert code == 2, err
    assert err.startswith("ddb-capacity: error: --end: got '")
    assert "; expected an ISO-8601 time from " in err and "to now (" in err
    assert err.rstrip().endswith("CloudWatch keeps 1-minute datapoints for 15 days")
    assert err.count("\n") == 1


@pytest.mark.parametrize("command", ["backtest", "tune"])
def test_a_window_that_starts_before_cloudwatchs_retention_is_refused(command: str) -> None:
    # GIVEN an end 10 days ago and 10 days of history: the window starts 20 days ago
    end = (datetime.now(UTC) - timedelta(days=10)).isoformat()
    code, _, err = run(command, "--table", "Orders", "--days", "10", "--end", end)
    # THEN it is refused before any AWS client is made, naming --days and --end
    assert code == 2, err
    assert err.startswith(f"ddb-capacity: error: --days: got 10 with --end {end}; ")
    assert "before the 15 days CloudWatch keeps 1-minute datapoints" in err
    # while 4 days ending then fit (and go on to need AWS, which these tests do not have); 5
    # would start 15 days before the test's clock, a minute early by the command's, read later
    code, _, err = run(command, "--table", "Orders", "--days", "4", "--end", end)
    assert "--days" not in err


@pytest.mark.parametrize("command", ["backtest", "tune", "advise"])
def test_a_region_that_is_no_regions_name_is_refused(command: str) -> None:
    # WHEN a table's history is asked of a Region whose name is no Region's
    code, _, err = run(command, "--table", "Orders", "--days", "1", "--region", "eu-west-1; x")
    # THEN it is refused before any AWS client is made, naming --region
    assert code == 2, err
    assert "--region: got 'eu-west-1; x'; expected a Region's name, such as eu-west-1" in err


NO_REGION = (
    "ddb-capacity: error: --region: got 'moon-1'; expected a Region's name, such as eu-west-1\n"
)
"""advise's answer to ``--region moon-1``: checked after every other option, before any AWS
client is made."""


@pytest.mark.parametrize(
    ("option", "most", "past", "message"),
    [
        ("--processes", "64", "65", "--processes: got 65; expected a whole number from 1 to 64"),
        (
            "--refusal-price",
            "1000000",
            "1000001",
            "--refusal-price: got '1000001'; expected dollars per million refused units, more "
            "than 0 and at most 1,000,000 (1.5)",
        ),
        (
            "--table-size-gb",
            "1000000",
            "1000001",
            "--table-size-gb: got 1000001.0; expected a number from 0 to 1,000,000",
        ),
    ],
    ids=["processes", "refusal-price", "table-size-gb"],
)
def test_advise_takes_an_option_at_its_most_and_refuses_one_more(
    option: str, most: str, past: str, message: str
) -> None:
    # WHEN advise is given the option at its most, with a Region that is no Region's
    code, out, err = run("advise", "--all-tables", option, most, "--region", "moon-1")
    # THEN only the Region is refused: the option was taken
    assert (code, out, err) == (2, "", NO_REGION)
    # WHEN given one more THEN the option is refused first, naming what is allowed
    code, out, err = run("advise", "--all-tables", option, past, "--region", "moon-1")
    assert (code, out) == (2, "")
    assert err.startswith(f"ddb-capacity: error: {message}")


@pytest.mark.parametrize(
    ("option", "value"),
    [("--index", "byDay"), ("--days", "3"), ("--end", "2026-01-01"), ("--region", "eu-west-1")],
)
def test_tune_on_a_trace_refuses_the_history_options(
    tmp_path: Path, option: str, value: str
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,read,write\n2026-01-05T00:00:00Z,1,2\n")
    code, _, err = run("tune", "--trace", str(trace), option, value)
    assert code == 2
    assert err.startswith(f"ddb-capacity: error: {option}: got '{value}'; it applies to --table")


def _trace() -> Trace:
    """Reads 100 to 900 units/s, writes 50 with one minute of 3,000."""
    reads = [500 + 400 * math.sin(2 * math.pi * m / 1440) for m in range(1440)]
    writes = [3_000.0 if m == 600 else 50.0 for m in range(1440)]
    return Trace("t", START, {(None, "read"): reads, (None, "write"): writes})


def test_the_pasted_code_takes_its_range_from_the_traffic() -> None:
    bounds = tune_code.bounds_for(_trace(), ModelParams(), 70)
    # min: the quietest minute at 70 %; max: twice the busiest minute at 70 %
    assert bounds == {
        "read": (math.ceil(100 / 0.7), math.ceil(2 * 900 / 0.7)),
        "write": (math.ceil(50 / 0.7), math.ceil(2 * 3_000 / 0.7)),
    }
    code = tune_code.code_for(parse("stock:70"), _trace(), ModelParams())
    ast.parse(code)
    assert "read=Capacity(min_capacity=143, max_capacity=2572, target_utilization_percent=70)" in (
        code
    )
    assert "write=Capacity(min_capacity=72, max_capacity=8572, target_utilization_percent=70)" in (
        code
    )
    auto = tune_code.code_for(parse("autopilot:60"), _trace(), ModelParams())
    ast.parse(auto)
    assert "'read': {'min': 167, 'max': 3000}" in auto and "read_capacity=167" in auto
    assert "'write': {'min': 84, 'max': 10000}" in auto and "'target': 60" in auto


def test_the_pasted_range_stays_within_1_and_the_maximum_capacity() -> None:
    idle = Trace("idle", START, {(None, "read"): [0.0] * 60, (None, "write"): [39_000.0] * 60})
    assert tune_code.bounds_for(idle, ModelParams(), 50) == {
        "read": (1, 1),
        "write": (40_000, 40_000),
    }
    small = ModelParams(min_capacity=5, max_capacity=1_000)
    assert tune_code.bounds_for(idle, small, 50) == {"read": (5, 5), "write": (1_000, 1_000)}


@pytest.mark.parametrize("command", ["simulate", "tune"])
@pytest.mark.parametrize("workers", ["0", "-1", "65"])
def test_workers_outside_1_to_64_are_refused_before_any_run(
    command: str, workers: str, tmp_path: Path
) -> None:
    # WHEN simulate or tune is given a count of processes it cannot run with
    trace = trace_file(tmp_path)
    code, out, err = run(command, "--trace", str(trace), f"--workers={workers}")
    # THEN it is refused as simulate always refused it, naming the option, the value and the range
    assert code == 2, err
    assert out == ""
    assert f"--workers: got {workers}; expected a whole number from 1 to 64" in err
