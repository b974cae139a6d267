"""Names the tools print from the user's files and arguments (a trace's file name, a
schedule's, a page's, an app's cdk.json) reach a terminal with their control characters
escaped: a file named with an escape sequence neither colours nor clears the screen, nor
starts a line of its own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ddb_capacity_tools.tool_errors import printable
from tests.support.cli import run

RED = "\x1b[31m"
"""An escape sequence a terminal acts on (red text), as a file's name may hold it."""
SHOWN = "\\x1b[31m"
"""The same, as the tools print it."""


def trace(path: Path, minutes: int = 2 * 1440) -> Path:
    start = datetime(2026, 1, 5, tzinfo=UTC)
    rows = [f"{start + timedelta(minutes=m):%Y-%m-%dT%H:%M:%SZ},100,20" for m in range(minutes)]
    path.write_text("timestamp,read,write\n" + "\n".join(rows) + "\n")
    return path


def test_control_characters_are_escaped_and_the_rest_kept() -> None:
    assert printable(f"or{RED}ders\n\t.csv") == f"or{SHOWN}ders\\n\\t.csv"
    assert printable("tâches/app.json") == "tâches/app.json"  # printable letters as they are
    assert printable("\udcff.csv") == "\\udcff.csv"  # a byte that was not UTF-8


def test_reserve_names_a_trace_file_escaped_in_its_words(tmp_path: Path) -> None:
    path = trace(tmp_path / f"or{RED}ders.csv")
    code, out, err = run("reserve", "--trace", str(path), "--policy", "stock:80", "--quiet")
    assert code == 0, err
    assert "\x1b" not in out and f"or{SHOWN}ders  stock:80" in out


def test_simulate_names_a_trace_file_escaped_in_its_words(tmp_path: Path) -> None:
    path = trace(tmp_path / f"{RED}.csv", 60)
    code, out, err = run("simulate", "--trace", str(path), "--policy", "stock:70", "--quiet")
    assert code == 0, err
    assert "\x1b" not in out and f"{SHOWN}.csv: " in out


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--policy", "stock:70", "--quiet", "--trace"],
        ["simulate", "--scenario", "spike", "--quiet", "--schedule"],
        ["reserve", "--quiet", "--trace"],
        ["flags", "--cdk-json"],
    ],
    ids=["trace", "schedule", "reserve", "flags"],
)
def test_an_error_names_a_file_escaped(tmp_path: Path, argv: list[str]) -> None:
    path = tmp_path / f"{RED}\n.json"
    path.write_text("{")
    code, out, err = run(*argv, str(path))
    assert code == 2 and not out
    assert "\x1b" not in err and err.count("\n") == 1
    assert f"{SHOWN}\\n.json" in err


def test_a_page_written_is_named_escaped(tmp_path: Path) -> None:
    page = tmp_path / f"{RED}.html"
    code, _, err = run("simulate", "--scenario", "spike", "--quiet", "--html", str(page))
    assert code == 0 and page.exists()
    assert "\x1b" not in err and f"page written to {tmp_path}/{SHOWN}.html" in err
