"""A function's asset is staged once for each content of the run-time package and kept
between processes, in a cache only this user can write; a change to any module stages it
again, and a cache open to others is never used."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import pytest

from constructs_pkg.common import _assets as assets
from constructs_pkg.common._runtime import RUNTIME_PACKAGE

HANDLER = "ddb_capacity_runtime.requests.restorer.restorer_handler"


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary directory of this test's own as the system's."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def staged(into: Path) -> Path:
    folder = into / "staged"
    folder.mkdir()
    (folder / "handler.py").write_text("x = 1\n")
    return folder


def never() -> Path:
    raise AssertionError("staged again although the cache holds it")


def test_an_asset_is_staged_once_and_kept(cache_home: Path, tmp_path: Path) -> None:
    key = assets.asset_key(RUNTIME_PACKAGE, HANDLER, compiled=False)
    first = assets.cached_asset(key, lambda: staged(tmp_path))
    assert first.parent == cache_home / f"ddb-capacity-assets-{os.getuid()}"
    assert (first / "handler.py").read_text() == "x = 1\n"
    assert assets.cached_asset(key, never) == first
    assert oct(first.parent.stat().st_mode & 0o777) == oct(0o700)


def test_a_changed_module_stages_again(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    shutil.copytree(RUNTIME_PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    before = assets.asset_key(package, HANDLER, compiled=False)
    (package / "core" / "names.py").write_text(
        (package / "core" / "names.py").read_text() + "\n# changed\n"
    )
    assert assets.asset_key(package, HANDLER, compiled=False) != before
    assert assets.asset_key(package, HANDLER, compiled=True) != assets.asset_key(
        package, HANDLER, compiled=False
    )


def test_a_cache_open_to_others_is_not_used(cache_home: Path, tmp_path: Path) -> None:
    root = cache_home / f"ddb-capacity-assets-{os.getuid()}"
    root.mkdir(mode=0o777)
    root.chmod(0o777)
    key = assets.asset_key(RUNTIME_PACKAGE, HANDLER, compiled=False)
    (root / key).mkdir()  # planted by someone else
    made = assets.cached_asset(key, lambda: staged(tmp_path))
    assert made == tmp_path / "staged" and not list((root / key).iterdir())


def test_a_second_process_reuses_the_first_ones_asset(cache_home: Path) -> None:
    code = (
        "import tempfile, sys; tempfile.tempdir = sys.argv[1]; "
        "from constructs_pkg.common._runtime import staged_asset; "
        f"print(staged_asset({HANDLER!r}))"
    )

    def run() -> str:
        done = subprocess.run(  # noqa: S603 (this interpreter, this test's code)
            [sys.executable, "-c", code, str(cache_home)],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    first = run()
    assert Path(first).is_dir() and first.startswith(str(cache_home))
    assert run() == first
    files = {str(p.relative_to(first)) for p in Path(first).rglob("*.py")}
    assert "ddb_capacity_runtime/requests/restorer.py" in files


def test_the_cache_keeps_a_bounded_number_of_assets(
    cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(assets, "MAX_KEPT", 3)
    kept = []
    for i in range(5):
        into = tmp_path / str(i)
        into.mkdir()
        kept.append(assets.cached_asset(f"key{i}", partial(staged, into)))
        os.utime(kept[-1], (i, i))  # each older than the next
    assert sorted(p.name for p in kept[0].parent.iterdir()) == ["key2", "key3", "key4"]


def test_the_synth_time_benchmark_runs_the_readme_quick_start(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import synth_time

    assert "ThrottleAwareScaler" in synth_time.quick_start()
    alone = synth_time.table_alone(synth_time.quick_start())
    assert "ThrottleAwareScaler" not in alone and "ProvisionedTable(" in alone
    with pytest.raises(ValueError, match="makes no scaler"):
        synth_time.table_alone(alone)
    function = synth_time.one_function(synth_time.STOCK)
    compile(function, "one function", "exec")  # the inline code's newlines escaped
    assert function.index("lambda_.Function(") < function.index("\napp.synth()")
    assert synth_time.main(["--quick"]) == 0  # the goal is not judged in --quick
    out = capsys.readouterr().out
    assert "quick start / stock: not judged" in out
    assert "with the CDK's validation off:" in out and "the constructs add" in out
    rows = re.findall(r"^(?:stock|quick start) +(on|off) ", out, re.MULTILINE)
    # one run of each app, with the validation off only; then each one's phases, each
    # measured (a mark in the wrong place leaves a phase at nothing)
    assert rows == ["off", "off"] * 2
    split = re.findall(r"^(?:stock|quick start) +off +([\d. ]+)$", out, re.MULTILINE)[2:]
    assert len(split) == 2
    for phases in split:
        assert all(float(seconds) >= 0.02 for seconds in phases.split()), out


def test_the_synth_time_marks_split_a_run_into_its_phases() -> None:
    from benchmarks import synth_time

    # GIVEN an app, marked: it prints the clock at its App, and around its last synth
    code = "import x\napp = cdk.App()\nbuild(app)\napp.synth()\n"
    marked = synth_time.marked(code)
    lines = marked.splitlines()
    marks = [n for n, line in enumerate(lines) if synth_time.MARK in line]
    assert marks == [
        lines.index("app = cdk.App()") - 1,
        lines.index("app.synth()") - 1,
        lines.index("app.synth()") + 1,
    ]
    assert lines.index("build(app)") < marks[1]
    with pytest.raises(ValueError, match="no `app = cdk.App"):
        synth_time.marked("import x\n")
    # WHEN a run's clock readings are split
    split = synth_time.phases(10.0, [11.0, 11.5, 14.5], 15.25)
    # THEN each phase is the time between two readings
    assert split == {"start": 1.0, "construct": 0.5, "synth": 3.0, "exit": 0.75}
    # AND the report gives each app's median phases and what the validation adds to each
    parts = {
        ("stock", True): [split, {**split, "synth": 4.0}, {**split, "synth": 3.5}],
        ("stock", False): [{**split, "synth": 0.1, "exit": 0.25}] * 3,
    }
    lines = synth_time.phase_lines(parts)
    assert lines[1].split() == ["stock", "on", "1.00", "0.50", "3.50", "0.75"]
    assert lines[2].split() == ["stock", "off", "1.00", "0.50", "0.10", "0.25"]
    assert lines[3] == (
        "the validation adds to the stock: +0.00 s start, +0.00 s construct, +3.40 s synth, "
        "+0.50 s exit"
    )
    assert len(lines) == 4  # no quick start runs, no line for it


def test_the_synth_time_benchmark_judges_the_medians_and_pairs_the_runs() -> None:
    from benchmarks import synth_time

    # GIVEN three runs of each app with the CDK's validation on and off, the second quick
    # start slow (the machine busy), so the ratio of medians and the runs' ratios differ
    times = {
        ("stock", True): [5.0, 6.0, 5.5],
        ("quick start", True): [6.0, 9.0, 7.0],
        ("stock", False): [1.0, 1.2, 1.1],
        ("quick start", False): [2.0, 2.4, 2.2],
    }
    # WHEN reported
    lines, met = synth_time.report(times)
    text = "\n".join(lines)
    # THEN the ratio is of the medians (7.0 / 5.5), within 1.3x; the run-by-run ratios
    # (1.2, 1.5, 1.273) give their median and range; the shares are the medians'
    assert met is True
    assert "quick start / stock: 1.273x (goal: at most 1.3x): met;" in text
    assert "median 1.273x, 1.200x to 1.500x" in text
    assert "the constructs add 1.10 s to the stock app's 1.10 s" in text
    assert "the validation 4.80 s to the quick start and 4.40 s to the stock app" in text
    # AND a quick start whose median is 7.5 s misses the goal, by its distance
    times["quick start", True] = [7.5, 9.0, 7.2]
    lines, met = synth_time.report(times)
    assert met is False
    assert "1.364x (goal: at most 1.3x): missed by 0.064;" in "\n".join(lines)
    assert "gc.freeze()" not in "\n".join(lines)  # no frozen runs, no line for them
    # AND with the quick start's runs with gc.freeze() after app.synth(), what it saved run
    # by run (7.5-7.0, 9.0-8.9, 7.2-6.9: 0.5, 0.1, 0.3) and its median against the stock's
    times[synth_time.FROZEN, True] = [7.0, 8.9, 6.9]
    lines, _ = synth_time.report(times)
    assert (
        "gc.freeze() after app.synth() saves the quick start 0.30 s (median, run by run): "
        "7.00 s, 1.273x the stock app"
    ) in lines


def test_the_synth_time_benchmark_freezes_after_the_apps_synth() -> None:
    from benchmarks import synth_time

    code = "import x\napp = cdk.App()\nbuild(app)\napp.synth()\n"
    lines = synth_time.frozen(code).splitlines()
    assert lines[0] == "import gc"
    assert lines[lines.index("app.synth()") + 1] == "gc.freeze()"
    # marked for its phases, the freeze is in its exit
    marked = synth_time.marked(synth_time.frozen(code)).splitlines()
    assert marked.index("gc.freeze()") > max(
        n for n, line in enumerate(marked) if synth_time.MARK in line
    )
    with pytest.raises(ValueError, match="no `app.synth"):
        synth_time.frozen("app = cdk.App()\n")
