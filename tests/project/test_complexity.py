"""The complexity gate: no block (function, method or class) of the constructs, the
run-time package or the tools above cyclomatic complexity grade C, as xenon grades it
(``xenon --max-absolute C``: C is a complexity of 20 at most)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.shape import ROOT

XENON = Path(sys.executable).parent / "xenon"
#: What the gate checks.
CHECKED = ("constructs_pkg", "lambda_src")


def xenon(*paths: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(XENON), "--max-absolute", "C", *map(str, paths)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
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
