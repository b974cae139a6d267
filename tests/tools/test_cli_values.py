"""Values argparse lets through that no option of ``ddb-capacity`` takes: ``--opt=--``
(argparse drops the lone ``--`` and stores nothing), a NUL byte, an empty scenario, and
bad options given beside a missing AWS Region. Each is one line naming the option and the
value, exit status 2, never a traceback. The options are read from the parser itself, so
an option added later is walked too."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import boto3
import pytest

from ddb_capacity_runtime.core.errors import shown
from ddb_capacity_tools.cli import main
from ddb_capacity_tools.cli_options import build_parser
from ddb_capacity_tools.simulator.text import counted, span


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def takes_value(action: argparse.Action) -> bool:
    return bool(action.option_strings) and action.nargs != 0


def given(action: argparse.Action) -> list[str]:
    """``action`` given with a value every option's type parses."""
    return [action.option_strings[-1], *(["1"] if takes_value(action) else [])]


def argv_with(command: argparse.ArgumentParser, tested: argparse.Action, value: str) -> list[str]:
    """The fewest options ``command`` parses with, ``tested`` given as ``--opt=value``: each
    required option, and one option of each required group ``tested`` is not in."""
    groups = command._mutually_exclusive_groups
    grouped = {a for g in groups for a in g._group_actions}
    argv = [f"{tested.option_strings[-1]}={value}"]
    for action in command._actions:
        if action.required and action is not tested and action not in grouped:
            argv += given(action)
    for group in groups:
        if group.required and tested not in group._group_actions:
            argv += given(group._group_actions[0])
    return argv


COMMANDS = commands()
WALKED = [
    (name, action)
    for name, command in COMMANDS.items()
    for action in command._actions
    if takes_value(action)
]


def one_line_error(code: int, out: str, err: str, option: str, shown: str) -> None:
    assert code == 2, err
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"ddb-capacity: error: {option}: got {shown}; expected "), err


def test_the_walk_covers_every_command_and_the_options_known_to_take_a_value() -> None:
    names = {(n, a.option_strings[-1]) for n, a in WALKED}
    assert {n for n, _ in names} == set(COMMANDS) - {"scenarios"}
    for known in ("--schedule", "--trace", "--tick", "--price", "--candidate", "--refusal-price"):
        assert any(option == known for _, option in names), known
    assert len(WALKED) >= 19


@pytest.mark.parametrize(
    ("name", "action"), WALKED, ids=[f"{n}{a.option_strings[-1]}" for n, a in WALKED]
)
def test_a_lone_double_dash_as_a_value_is_named(name: str, action: argparse.Action) -> None:
    # GIVEN any option of any command that takes a value, given as --opt=--
    argv = [name, *argv_with(COMMANDS[name], action, "--")]
    # WHEN the command runs
    code, out, err = run(*argv)
    # THEN one line names the option, the '--' received and what it takes; exit status 2
    one_line_error(code, out, err, action.option_strings[-1], "'--'")
    assert "never a lone '--'" in err


STRINGS = [(n, a) for n, a in WALKED if a.type is None and a.choices is None]
"""The free-text options: an option of choices (``--progress``) refuses any other value,
a NUL byte's included, with argparse's usage error naming the choices."""


@pytest.mark.parametrize(
    ("name", "action"), STRINGS, ids=[f"{n}{a.option_strings[-1]}" for n, a in STRINGS]
)
def test_a_nul_byte_in_any_text_option_is_named(name: str, action: argparse.Action) -> None:
    # GIVEN a text option (a file name, a table name, a time, ...) holding a NUL byte
    argv = [name, *argv_with(COMMANDS[name], action, "in\0put")]
    # WHEN the command runs
    code, out, err = run(*argv)
    # THEN one line names the option and the value; exit status 2
    one_line_error(code, out, err, action.option_strings[-1], repr("in\0put"))
    assert "without a NUL byte" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--scenario", "spike", "--schedule", "a\0.json"],
        ["simulate", "--trace", "t\0.csv"],
        ["advise", "--table", "Orders", "--report", "out\0dir"],
    ],
    ids=["schedule", "trace", "report"],
)
def test_a_nul_byte_in_a_file_name_is_refused_before_it_is_opened(argv: list[str]) -> None:
    code, out, err = run(*argv)
    one_line_error(code, out, err, argv[-2], repr(argv[-1]))


def test_an_empty_scenario_is_named_with_the_scenarios_allowed() -> None:
    code, out, err = run("simulate", "--scenario", "")
    one_line_error(code, out, err, "--scenario", "''")
    assert "expected one of spike" in err


@pytest.fixture
def no_region(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))


@pytest.mark.parametrize(
    ("options", "option", "shown"),
    [
        (["--days", "0"], "--days", "0"),
        (["--days", "16"], "--days", "16"),
        (["--days", "1", "--workers", "0"], "--workers", "0"),
        (["--days", "1", "--tick", "0"], "--tick", "0"),
        (["--days", "1", "--policy", "nonsense"], "--policy", "'nonsense'"),
        (["--days", "1", "--ensemble", "nonsense"], "--ensemble", "'nonsense'"),
        (["--days", "1", "--score-from", "noon"], "--score-from", "'noon'"),
        (["--days", "1", "--end", "noon"], "--end", "'noon'"),
    ],
)
def test_backtest_names_a_bad_option_before_the_missing_region(
    no_region: None, options: list[str], option: str, shown: str
) -> None:
    # GIVEN no AWS Region anywhere, and one bad option
    # WHEN backtest runs
    code, out, err = run("backtest", "--table", "Orders", *options)
    # THEN the bad option is named (not the Region): a second run is not needed to see it
    one_line_error(code, out, err, option, shown)
    # and with the option fixed, the missing Region is what is named
    assert "Region" in run("backtest", "--table", "Orders", "--days", "1")[2]


@pytest.mark.parametrize(
    ("argv", "option", "value"),
    [
        (["backtest", "--table", "", "--days", "1"], "--table", ""),
        (["backtest", "--table", "Orders", "--index", "by customer", "--days", "1"], "--index", "by customer"),
        (["tune", "--table", "ab"], "--table", "ab"),
        (["advise", "--table", "Orders!"], "--table", "Orders!"),
        (["advise", "--table", "Orders", "--index", "x"], "--index", "x"),
        (["request", "--table", "", "--write", "5", "--store", "Holds"], "--table", ""),
        (["release", "--table", "Orders", "--id", "h1", "--store", "no store"], "--store", "no store"),
        (["release", "--table", "O" * 256, "--expired", "--store", "Holds"], "--table", "O" * 256),
    ],
    ids=["backtest-empty", "backtest-index", "tune", "advise", "advise-index", "request", "release-store", "release-long"],
)  # fmt: skip
def test_a_name_dynamodb_refuses_is_named_before_any_aws_call(
    no_region: None, argv: list[str], option: str, value: str
) -> None:
    # GIVEN no AWS Region anywhere, and a table, index or hold store named as DynamoDB
    # never names one
    # WHEN the command runs
    code, out, err = run(*argv)
    # THEN the option, the value (a long one cut short) and what a name is are said, not
    # the missing Region
    one_line_error(code, out, err, option, shown(value))
    assert err.rstrip().endswith("3 to 255 characters of a-z, A-Z, 0-9, '_', '.' and '-'")


# ----------------------------------------------------------------------- CSV traces

HEADER = b"timestamp,read,write\r\n"


def test_a_trace_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    # GIVEN a trace as a spreadsheet saves it: a UTF-8 byte-order mark, CRLF line ends
    path = tmp_path / "saved.csv"
    path.write_bytes(
        b"\xef\xbb\xbf" + HEADER + b"2026-03-01T00:00:00Z,5,7\r\n2026-03-01T00:01:00Z,6,8\r\n"
    )
    # WHEN it is simulated
    code, out, err = run("simulate", "--trace", str(path), "--policy", "fixed:10", "--json")
    # THEN it runs on its two minutes, from the first row's time
    assert code == 0, err
    doc = json.loads(out)
    assert doc["trace"]["minutes"] == 2 and doc["trace"]["start"].startswith("2026-03-01T00:00")


def test_a_trace_of_one_minute_is_said_to_hold_one_minute(tmp_path: Path) -> None:
    path = tmp_path / "one.csv"
    path.write_bytes(HEADER + b"2026-03-01T00:00:00Z,5,7\r\n")
    code, out, err = run("simulate", "--trace", str(path), "--policy", "fixed:10")
    assert code == 0, err
    assert out.startswith("one.csv: 1 minute from 2026-03-01 00:00 UTC\n")
    assert "over the trace's 1 minute, not a month" in out


def test_counts_are_said_as_words_say_them() -> None:
    """The one place the tools' words make a plural."""
    assert [counted(n, "block") for n in (0, 1, 2, 1_500)] == [
        "0 blocks",
        "1 block",
        "2 blocks",
        "1,500 blocks",
    ]
    assert counted(1, "policy", "policies") == "1 policy"
    assert counted(3, "policy", "policies") == "3 policies"
    assert [span(m) for m in (1, 90, 1_440, 2_160)] == [
        "1 minute",
        "90 minutes",
        "1 day (1,440 minutes)",
        "1.5 days (2,160 minutes)",
    ]


@pytest.mark.parametrize(
    ("rows", "line", "value"),
    [
        (b"2026-03-01T00:00:00,5,7\r\n", 2, "2026-03-01T00:00:00"),
        (b"2026-03-01T00:00:00Z,5,7\r\n2026-03-01 00:01,5,7\r\n", 3, "2026-03-01 00:01"),
    ],
)
def test_a_timestamp_without_a_time_zone_is_refused_naming_its_row(
    tmp_path: Path, rows: bytes, line: int, value: str
) -> None:
    # GIVEN a trace with a timestamp that has no UTC offset (local time? UTC?)
    path = tmp_path / "naive.csv"
    path.write_bytes(HEADER + rows)
    # WHEN it is simulated
    code, out, err = run("simulate", "--trace", str(path), "--policy", "fixed:10")
    # THEN it is refused: the line, the column, the value and what is allowed
    assert (code, out) == (2, "")
    assert err == (
        f"ddb-capacity: error: --trace: {path} line {line}, column timestamp: got {value!r}; expected a "
        "timestamp with its UTC offset (Z or +00:00): one without could be any time zone's\n"
    )


def test_a_fixed_policy_above_the_default_maximum_is_taken_up_to_max_capacity(
    tmp_path: Path,
) -> None:
    # the page's candidates are read again after the run: they were checked against the
    # default 40,000 units, not --max-capacity, and a run the parser took failed there
    page = tmp_path / "page.html"
    argv = ("simulate", "--scenario", "spike", "--max-capacity", "60000", "--html", str(page))
    code, _, err = run(*argv, "--policy", "fixed:50000")
    assert (code, err) == (0, f"page written to {page}\n")
    assert "fixed:50000" in page.read_text()
    code, _, err = run(*argv, "--policy", "fixed:70000")
    assert code == 2
    assert "fixed capacity 70000 is outside 1 to 60000 (capacity units)" in err
