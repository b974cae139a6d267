"""The complexity gate: no block (function, method or class) of the constructs, the
run-time package or the tools above cyclomatic complexity grade C, as xenon grades it
(``xenon --max-absolute C``: C is a complexity of 20 at most)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parent.parent
XENON = Path(sys.executable).parent / "xenon"
#: What the gate checks.
CHECKED = ("constructs_pkg", "lambda_src")

#: Blocks still graded D while they are reworked along with the modules they live in; the
#: gate below is expected to fail only for them. Empty this, and drop the mark, once they
#: are at C or better.
KNOWN_ABOVE_C = (
    "lambda_src/ddb_capacity_tools/simulator/model.py update_table",
    "lambda_src/ddb_capacity_tools/simulator/model.py end_minute",
    "lambda_src/ddb_capacity_tools/simulator/policies.py act",
    "lambda_src/ddb_capacity_runtime/requests/store.py _parse",
    "lambda_src/ddb_capacity_runtime/core/forecast.py find_period",
)


def xenon(*paths: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(XENON), "--max-absolute", "C", *map(str, paths)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.xfail(
    strict=False,
    reason="blocks graded D, reworked elsewhere: " + "; ".join(KNOWN_ABOVE_C),
)
def test_no_block_above_grade_c() -> None:
    done = xenon(*CHECKED)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_gate_fails_on_a_grade_d_block(tmp_path: Path) -> None:
    # GIVEN a function with 21 decisions (complexity 22, grade D) and one with 19 (grade C)
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(21))
    (tmp_path / "tangled.py").write_text(f"def tangled(x):\n{branches}    return -1\n")
    fine = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(19))
    (tmp_path / "fine.py").write_text(f"def fine(x):\n{fine}    return -1\n")
    # THEN the gate names the first and passes the second
    failed = xenon("tangled.py", cwd=tmp_path)
    assert failed.returncode != 0 and '"tangled.py:1 tangled" has a rank of D' in failed.stderr
    assert xenon("fine.py", cwd=tmp_path).returncode == 0


def blocks(path: Path) -> dict[str, str]:
    """Every block of ``path`` (functions, methods, classes, by qualified name) and its rank."""
    out = {}
    for block in cc_visit(path.read_text()):
        for found in [block, *getattr(block, "methods", [])]:
            owner = getattr(found, "classname", None)
            name = f"{owner}.{found.name}" if owner else found.name
            out[name] = cc_rank(found.complexity)
    return out


@pytest.mark.parametrize(
    ("module", "block"),
    [
        ("lambda_src/ddb_capacity_tools/schedule.py", "TableSchedule.add_entry"),
        ("lambda_src/ddb_capacity_tools/simulator/tune.py", "_runs"),
        ("lambda_src/ddb_capacity_tools/simulator/hybrid.py", "compose"),
        ("lambda_src/ddb_capacity_runtime/core/stream.py", "value_size"),
        ("lambda_src/ddb_capacity_runtime/core/settings.py", "Setting.parse"),
    ],
)
def test_formerly_tangled_blocks_are_at_c_or_better(module: str, block: str) -> None:
    assert blocks(ROOT / module)[block] in "ABC"


def test_no_block_above_c_beyond_the_known_ones() -> None:
    """Whatever the mark above: no block graded D or worse besides `KNOWN_ABOVE_C`."""
    done = xenon(*CHECKED)
    found = {line.split('"')[1] for line in done.stderr.splitlines() if "has a rank of" in line}
    named = {f"{where.rsplit(':', 1)[0]} {name}" for where, name in (f.split() for f in found)}
    assert named <= set(KNOWN_ABOVE_C), sorted(named - set(KNOWN_ABOVE_C))
