"""Inputs read with a bound: a trace or a schedule file that never ends (a device such as
/dev/zero), a schedule nested deeper than Python can parse, and ``local --out`` naming a
file: each refused in one line naming the option or file, nothing read without bound."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ddb_capacity_tools.cli import main
from ddb_capacity_tools.json_files import MAX_FILE_DEPTH
from ddb_capacity_tools.simulator.schedules import MAX_SCHEDULE_BYTES
from ddb_capacity_tools.simulator.trace import MAX_LINE_CHARS

ZERO = Path("/dev/zero")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.skipif(not ZERO.exists(), reason="no /dev/zero on this system")
def test_a_trace_that_never_ends_is_refused_at_its_first_long_line() -> None:
    code, out, err = run("simulate", "--trace", str(ZERO), "--policy", "stock:70", "--quiet")
    assert code == 2 and not out
    assert err == (
        f"ddb-capacity: error: --trace: {ZERO} line 1: longer than {MAX_LINE_CHARS:,} characters; "
        "expected rows of timestamp,read,write\n"
    )


def test_a_long_line_after_good_rows_is_named_by_its_number(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "timestamp,read,write\n2026-01-05T00:00:00Z,1,1\n" + "," * (MAX_LINE_CHARS + 5) + "\n"
    )
    code, _, err = run("simulate", "--trace", str(path), "--quiet")
    assert code == 2 and f"{path} line 3: longer than" in err


@pytest.mark.skipif(not ZERO.exists(), reason="no /dev/zero on this system")
def test_a_schedule_that_never_ends_is_refused_by_its_size() -> None:
    code, _, err = run("simulate", "--scenario", "spike", "--schedule", str(ZERO), "--quiet")
    assert code == 2
    assert f"{ZERO}: larger than {MAX_SCHEDULE_BYTES // 2**20} MiB" in err


def test_a_schedule_nested_too_deep_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = run("simulate", "--scenario", "spike", "--schedule", str(path), "--quiet")
    assert code == 2
    assert err == (
        f"ddb-capacity: error: --schedule: {path}: nested 100,000 levels deep; expected at most "
        f"{MAX_FILE_DEPTH} (a JSON list of schedule entries)\n"
    )


def deep(path: Path, levels: int = 100_000) -> str:
    """A JSON file nested ``levels`` deep, far deeper than Python's decoder follows."""
    path.write_text("[" * levels + "]" * levels)
    return str(path)


def test_a_recommended_report_nested_too_deep_is_refused(tmp_path: Path) -> None:
    trace = tmp_path / "orders.csv"
    rows = [f"2026-01-05T{m // 60:02}:{m % 60:02}:00Z,10,2" for m in range(120)]
    trace.write_text("timestamp,read,write\n" + "\n".join(rows) + "\n")
    report = deep(tmp_path / "report.json")
    code, out, err = run("reserve", "--trace", str(trace), "--recommended", report, "--quiet")
    assert code == 2 and not out
    assert err == (
        f"ddb-capacity: error: --recommended: {report!r}: nested 100,000 levels deep; expected "
        f"at most {MAX_FILE_DEPTH} (a report.json with a list of tables)\n"
    )


def test_a_cdk_json_nested_too_deep_is_refused_by_flags(tmp_path: Path) -> None:
    path = deep(tmp_path / "cdk.json")
    code, out, err = run("flags", "--cdk-json", path)
    assert code == 2 and not out
    assert err == (
        f"ddb-capacity: error: {path}: nested 100,000 levels deep; expected at most "
        f"{MAX_FILE_DEPTH} (a cdk.json)\n"
    )


def test_a_json_file_nested_to_the_bound_is_read(tmp_path: Path) -> None:
    path = deep(tmp_path / "cdk.json", MAX_FILE_DEPTH)
    code, _, err = run("flags", "--cdk-json", path, "--check")
    assert code == 2 and "got a JSON list; expected a JSON object" in err


def test_a_schedule_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin.json"
    path.write_bytes(b'[{"name": "caf\xe9"}]')
    code, _, err = run("simulate", "--scenario", "spike", "--schedule", str(path), "--quiet")
    assert code == 2 and f"{path}: not UTF-8 (byte 14)" in err


def test_local_out_naming_a_file_blames_out_not_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken").write_text("a file")
    code, _, err = run("local", "--app", "python app.py", "--out", "taken")
    assert code == 2
    assert err == (
        "ddb-capacity: error: --out: got 'taken'; it names a file: expected a folder for the "
        "cloud assembly (made if missing)\n"
    )


def test_local_out_that_cannot_be_made_blames_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken").write_text("a file")
    code, _, err = run("local", "--app", "python app.py", "--out", "taken/sub")
    assert code == 2
    assert err.startswith("ddb-capacity: error: --out: got 'taken/sub'; it cannot be made (")
    assert "expected a folder for the cloud assembly" in err
