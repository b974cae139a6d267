"""The tools' speed benchmark runs in its quick mode and prints its table: each measurement's
CPU seconds, its units (of the loop timed beside it) and its goal."""

from __future__ import annotations

import re
from pathlib import Path

import pytest


def test_the_tool_speed_benchmark_runs_in_its_quick_mode(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import tool_speed

    assert tool_speed.main(["--quick"]) == 0
    printed = capsys.readouterr().out
    rows = re.findall(
        r"^(tune|simulate|reserve), .*?\s+([\d.,]+)\s+([\d.,]+)\s+([\d.]+)\s+", printed, re.M
    )
    assert [r[0] for r in rows] == ["tune", "simulate", "reserve"], printed
    for _, cpu_text, units_text, unit_text in rows:
        # the units are the CPU seconds over the loop's: within what the printed roundings
        # allow (CPU seconds to 0.01, the loop's to 0.001, the units to 0.1)
        cpu, units, unit = (float(t.replace(",", "")) for t in (cpu_text, units_text, unit_text))
        assert unit > 0
        least = (cpu - 0.005) / (unit + 0.0005) - 0.05
        most = (cpu + 0.005) / (unit - 0.0005) + 0.05
        assert least <= units <= most, (cpu, units, unit)
    assert "<= 20 units" in printed and "<= 2 units" in printed
    assert "1,000 tables <= 30 min on 2 cores" in printed
    assert re.search(r"1,000 tables on 2 cores: about [\d,]+ minutes", printed)


def test_only_measures_the_parts_named_and_by_policy_adds_each_policy_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import tool_speed
    from ddb_capacity_tools.simulator.run import DEFAULT_POLICIES

    assert tool_speed.main(["--quick", "--only", "simulate", "--by-policy"]) == 0
    printed = capsys.readouterr().out
    parts = re.findall(r"^(tune|simulate|reserve), ", printed, re.M)
    assert parts == ["simulate"], printed
    alone = re.findall(r"^simulate (\S+), 1,440 minutes\s+[\d.,]+\s+[\d.,]+\s", printed, re.M)
    assert alone == list(DEFAULT_POLICIES), printed
    assert "reserve:" not in printed  # the fleet estimate only follows a reserve measurement


def test_a_baseline_is_measured_by_its_own_tools_and_printed_beside(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from benchmarks import tool_speed

    root = Path(__file__).resolve().parents[2]
    assert tool_speed.main(["--quick", "--only", "simulate", "--baseline", str(root)]) == 0
    printed = capsys.readouterr().out
    assert f"before: the tools of {root}" in printed
    assert "CPU s before" in printed and "units before" in printed and "x faster" in printed
    row = re.search(
        r"^simulate, .*?\s+([\d.,]+)\s+([\d.,]+)\s+([\d.]+)\s+([\d.,]+)\s+([\d.,]+)"
        r"\s+([\d.,]+)\s+<= 2",
        printed,
        re.M,
    )
    assert row is not None, printed
    now, before, faster = (float(row[i].replace(",", "")) for i in (2, 5, 6))
    assert before > 0 and now > 0
    # the speed-up is the units before over the units now, within the printed roundings
    assert (before - 0.05) / (now + 0.05) - 0.05 <= faster <= (before + 0.05) / (now - 0.05) + 0.05

    with pytest.raises(SystemExit, match=r"--baseline: got '.*nowhere'; expected a checkout"):
        tool_speed.main(["--quick", "--only", "simulate", "--baseline", str(tmp_path / "nowhere")])


def test_the_plain_modules_are_measured_first_and_printed_beside(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--plain`` measures the plain modules in a process of their own (the compiled builds
    turned off there) and prints both; here, imported, the benchmark runs the plain ones."""
    from benchmarks import tool_speed

    assert tool_speed.main(["--quick", "--only", "simulate", "--plain"]) == 0
    printed = capsys.readouterr().out
    assert "before: the plain modules; now: the plain modules (no compiled build" in printed
    assert re.search(r"^simulate, .*\s[\d.]+\s+<= 2 units", printed, re.M), printed
    with pytest.raises(SystemExit):
        tool_speed.main(["--quick", "--plain", "--baseline", "."])
