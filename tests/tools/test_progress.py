"""Progress of the long commands (tune, advise, reserve): a bar on a terminal, plain lines on
stderr elsewhere (the console script run with stderr into a pipe), none with ``--progress
none``; a bad ``--progress`` is refused with the command's usage."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from ddb_capacity_tools.cli import main
from ddb_capacity_tools.simulator.policies import parse
from ddb_capacity_tools.simulator.progress import PROGRESS_MODES, Progress
from ddb_capacity_tools.simulator.run import simulate
from ddb_capacity_tools.simulator.scenarios import diurnal
from ddb_capacity_tools.simulator.trace import Trace, cut
from tests.support.cli import Terminal
from tests.support.tune import short_trace

LINE = re.compile(r"^(\w+): (\d+)% \((\d+) of (\d+) (\w+), (\d+) s\)$")
SCRIPT = Path(sys.executable).parent / "ddb-capacity"


def write_csv(trace: Trace, path: Path) -> Path:
    """``trace`` as the CSV ``--trace`` reads."""
    reads, writes = trace.demand[(None, "read")], trace.demand[(None, "write")]
    rows = ["timestamp,read,write"]
    for m, (r, w) in enumerate(zip(reads, writes, strict=True)):
        rows.append(f"{(trace.start + timedelta(minutes=m)).isoformat()},{r:.1f},{w:.1f}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_tune_into_a_pipe_prints_lines_from_its_start_to_its_end(tmp_path: Path) -> None:
    # GIVEN a day of noisy diurnal traffic and tune's default candidates, stderr a pipe
    path = write_csv(cut(diurnal(3, days=2), 1440), tmp_path / "day.csv")
    argv = [str(SCRIPT), "tune", "--trace", str(path), "--workers", "1", "--json"]
    answer = tmp_path / "answer.json"
    began = time.monotonic()
    with answer.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        arrivals = [(time.monotonic() - began, line.rstrip("\n")) for line in proc.stderr]
        proc.wait(timeout=300)
    took = time.monotonic() - began
    assert proc.returncode == 0 and '"recommended"' in answer.read_text()
    # THEN every line of stderr is a progress line, the share done and the runs rising
    found = [LINE.match(text) for _, text in arrivals]
    assert all(found), arrivals
    shares = [(int(m[2]), int(m[3]), int(m[4])) for m in found if m]
    assert shares[0][:2] == (0, 0) and shares[-1][0] == 100 and shares[-1][1] == shares[-1][2]
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(shares, shares[1:], strict=False))
    assert len(shares) >= 15 and {m[1] for m in found if m} == {"tune"}
    assert {m[5] for m in found if m} == {"runs"}
    # AND the first came within the first third of the run, as it went, not all at the end
    assert arrivals[0][0] < took / 3, (arrivals[0][0], took)
    assert arrivals[-1][0] - arrivals[len(arrivals) // 2][0] > took / 10


def test_progress_none_and_quiet_print_nothing_and_a_bad_value_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["tune", "--trace", str(short_trace(tmp_path, 120)), "--candidate", "on-demand"]
    for extra in (["--progress", "none"], ["--quiet"]):
        err = Terminal()  # a terminal would show the bar
        assert main([*args, *extra], io.StringIO(), err) == 0 and err.getvalue() == ""
    # --progress bar draws the bar wherever stderr goes; lines writes lines on a terminal too
    into = io.StringIO()
    assert main([*args, "--progress", "bar"], io.StringIO(), into) == 0
    assert "\rtune [" in into.getvalue() and "64/64 runs" in into.getvalue()
    err = Terminal()
    assert main([*args, "--progress", "lines"], io.StringIO(), err) == 0
    assert err.getvalue().splitlines()[-1].startswith("tune: 100% (64 of 64 runs, ")
    # AND a value not among them is the usage error, naming the option, value and choices
    for command in (args, ["reserve", "--trace", "x.csv"], ["advise", "--table", "T"]):
        with pytest.raises(SystemExit) as exit_info:
            main([*command, "--progress", "dots"])
        said = capsys.readouterr().err
        assert exit_info.value.code == 2 and said.startswith(f"usage: ddb-capacity {command[0]} ")
        assert "argument --progress: invalid choice: 'dots'" in said
        choices = said.split("invalid choice: 'dots'")[1]
        assert all(mode in choices for mode in PROGRESS_MODES), said


def test_lines_come_every_five_percent_and_a_command_begun_again_is_timed_again() -> None:
    clock, lines = [0.0], list[str]()
    progress = Progress("lines", lines.append, lines.append, clock=lambda: clock[0])
    for done in range(0, 41):
        clock[0] = done * 1.5
        progress("tune", done, 40, "runs", "x")
    assert lines[:3] == [
        "tune: 0% (0 of 40 runs, 0 s)",
        "tune: 5% (2 of 40 runs, 3 s)",
        "tune: 10% (4 of 40 runs, 6 s)",
    ]
    assert len(lines) == 21 and lines[-1] == "tune: 100% (40 of 40 runs, 60 s)"
    # a second command beside it is timed on its own; the first begun again, from then
    progress("tune, scoring", 0, 3, "runs")
    progress("tune, scoring", 1, 3, "runs")
    progress("tune", 0, 7, "runs")
    assert lines[-3:] == [
        "tune, scoring: 0% (0 of 3 runs, 0 s)",
        "tune, scoring: 33% (1 of 3 runs, 0 s)",
        "tune: 0% (0 of 7 runs, 0 s)",
    ]
    # nothing to do shows nothing; a mode that is none of the two is refused
    progress("reserve", 0, 0, "tables")
    assert lines[-1] == "tune: 0% (0 of 7 runs, 0 s)"
    with pytest.raises(ValueError, match="got 'dots'"):
        Progress("dots", lines.append, lines.append)
    with pytest.raises(ValueError, match="--progress: got 'dots'"):
        Progress.on(io.StringIO(), "dots")


def test_runs_in_processes_are_counted_as_each_ends() -> None:
    # GIVEN three policies run in two processes over a day
    trace = cut(diurnal(5, days=2), 1440)
    specs = [parse(p) for p in ("stock:70", "on-demand", "fixed:9000")]
    ended: list[str] = []
    results = simulate(trace, specs, progress=None, workers=2, ran=lambda s: ended.append(s.text))
    # THEN each is counted once, and the results keep the policies' order
    assert sorted(ended) == sorted(s.text for s in specs)
    assert [r.policy for r in results][::2] == [s.text for s in specs]
