"""The compiled modules (`ddb_capacity_tools.compiled`) against the plain ones: random traces
and models run through every kind of policy in this process (plain) and in a child process
that imports the build matching the source (compiled); every result field and every recorded
series must be the same, value and type (``repr``), exactly. The child also runs policies in
worker processes (what it sends them and gets back crosses by pickle). And when a build is
used: only one matching the source, never beside plain modules already imported, never when
turned off.

``make test`` builds the modules first (``python -m ddb_capacity_tools.compiled build``);
without a C compiler the comparison is skipped, with one a missing build fails it."""

from __future__ import annotations

import importlib.machinery
import io
import os
import pickle
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import fields, replace
from pathlib import Path
from typing import IO, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddb_capacity_tools import compiled, launch
from ddb_capacity_tools.simulator import ModelParams, Prices, parse
from ddb_capacity_tools.simulator.billing import BASES
from ddb_capacity_tools.simulator.model import Recorded
from ddb_capacity_tools.simulator.policies import DEFAULT_TICK_MINUTES
from ddb_capacity_tools.simulator.run import run_policy
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.hypothesis_profiles import examples
from tests.support.sim_strategies import START, models, traces

ROOT = Path(__file__).resolve().parents[2]
RECORDED = tuple(f.name for f in fields(Recorded))

POLICIES = (
    "stock:70",
    "stock:50+reserved",
    "fixed:120",
    "scheduled",
    "scheduled:50",
    "throttle-aware",
    "throttle-aware+lumped",
    "throttle-aware+stock:50",
    "autopilot:60",
    "autopilot+lumped",
    "autopilot+stock:70",
    "autopilot+stock:80+owned",
    "on-demand",
    "hybrid:70",
    "windows:70",
    "oracle",
    "bound",
)
"""Every kind of policy the simulator runs."""
SCHEDULE = [
    {"name": "up", "schedule": "cron(30 * * * ? *)", "dimension": "read", "min_capacity": 300},
    {"name": "down", "schedule": "cron(0 * * * ? *)", "dimension": "read", "min_capacity": 1},
]
"""The ``scheduled`` policy's: a raised read minimum each half hour, lowered on the hour."""

CHILD = """
import multiprocessing, pickle, struct, sys
from ddb_capacity_tools import compiled
assert compiled.activate(), compiled.status()
from ddb_capacity_tools.simulator import Prices, parse
from ddb_capacity_tools.simulator.run import run_policy, simulate
assert compiled.active(), "the compiled modules were not the ones imported"
read, write = sys.stdin.buffer, sys.stdout.buffer
while head := read.read(4):
    policies, trace, params, tick, start, recorded, method = pickle.loads(
        read.read(struct.unpack(">I", head)[0])
    )
    multiprocessing.set_start_method(method, force=True)
    if len(policies) == 1:
        runs = run_policy(parse(policies[0]), trace, params, Prices(), None, tick, None, start)
    else:  # in worker processes
        specs = [parse(p) for p in policies]
        runs = simulate(trace, specs, params, Prices(), None, tick, None, 2, score_from=start)
    out = [repr((r.policy, r.as_json(), [getattr(r.recorded, f) for f in recorded])) for r in runs]
    blob = pickle.dumps(out)
    write.write(struct.pack(">I", len(blob)) + blob)
    write.flush()
"""


class Child:
    """A process running the compiled modules, asked one run at a time."""

    def __init__(self, folder: Path) -> None:
        env = {
            **os.environ,
            compiled.ENV: str(folder),
            "PYTHONPATH": os.pathsep.join([str(ROOT / "lambda_src"), str(ROOT)]),
        }
        self.process = subprocess.Popen(  # noqa: S603 (this interpreter, the script above)
            [sys.executable, "-c", CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )

    def run(
        self,
        policies: list[str],
        trace: Trace,
        params: ModelParams,
        tick: int = DEFAULT_TICK_MINUTES,
        start: int | None = None,
        method: str = "fork",
    ) -> list[str]:
        """Each result of ``policies`` (one: run here; more: in worker processes started by
        ``method``), as ``repr`` shows it: the policy, its JSON and its recorded series."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        blob = pickle.dumps((policies, trace, params, tick, start, RECORDED, method))
        stdin.write(struct.pack(">I", len(blob)) + blob)
        stdin.flush()
        size = struct.unpack(">I", _read(stdout, 4))[0]
        out: list[str] = pickle.loads(_read(stdout, size))  # noqa: S301 (our own child's)
        return out

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def _read(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise AssertionError("the compiled child process ended (its error is above)")
    return data


def _has_c_compiler() -> bool:
    return any(shutil.which(c) for c in ("cc", "gcc", "clang"))


@pytest.fixture(scope="module")
def child() -> Iterator[Child]:
    folder = compiled.root()
    if folder is None or not (folder / compiled.fingerprint() / compiled.BUILT).is_file():
        if not _has_c_compiler():
            pytest.skip("no C compiler: the compiled modules cannot be built here")
        pytest.fail(
            f"no compiled build for this source under {folder}: "
            "python -m ddb_capacity_tools.compiled build (make test runs it)",
            pytrace=False,
        )
    c = Child(folder)
    yield c
    c.close()


def _plain(
    policy: str, trace: Trace, params: ModelParams, tick: int, start: int | None
) -> list[str]:
    runs = run_policy(parse(policy), trace, params, Prices(), None, tick, None, start)
    return [repr((r.policy, r.as_json(), [getattr(r.recorded, f) for f in RECORDED])) for r in runs]


@st.composite
def features(draw: st.DrawFn) -> dict[str, Any]:
    """The model's features the policies read beside its delays: a hot key, warm
    throughput, on-demand's maximums, the table's size, the fast path's share and cap, the
    bounds, the bucket, retries, the units a request uses and the billing basis."""
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["key_skew"] = draw(st.sampled_from([0.3, 0.8]))
        out["split_minutes"] = draw(st.sampled_from([None, 5]))
        out["table_size_gb"] = draw(st.sampled_from([0.0, 25.0]))
    if draw(st.booleans()):
        out["warm_read_units"] = out["warm_write_units"] = draw(st.sampled_from([200, 2000]))
    if draw(st.booleans()):
        out["on_demand_max_read_units"] = draw(st.sampled_from([50, 500]))
    if draw(st.booleans()):
        out["fast_path_share"] = draw(st.sampled_from([0.25, 1.0]))
        out["fast_path_cap"] = draw(st.sampled_from([None, 400]))
    if draw(st.booleans()):
        out["min_capacity"] = draw(st.sampled_from([1, 20]))
        out["max_capacity"] = draw(st.sampled_from([600, 40_000]))
    if draw(st.booleans()):
        out["burst_fraction"] = draw(st.sampled_from([0.0, 0.5]))
        out["retries"] = draw(st.sampled_from([0, 2]))
        out["units_per_request"] = draw(st.sampled_from([1.0, 2.5]))
    out["billing"] = draw(st.sampled_from(BASES))
    return out


@settings(max_examples=examples(100), deadline=None)
@given(
    trace=traces(),
    params=models(),
    extra=features(),
    policy=st.sampled_from(POLICIES),
    tick=st.sampled_from([1, 2, 5]),
    start=st.sampled_from([None, 0, 29]),
)
def test_a_compiled_run_is_the_plain_run(
    child: Child,
    trace: Trace,
    params: ModelParams,
    extra: dict[str, Any],
    policy: str,
    tick: int,
    start: int | None,
) -> None:
    params = replace(params, **extra)
    if policy.endswith("+reserved"):
        params = replace(params, reserved_read_units=100)
    params = params.validate()
    if policy.startswith("scheduled"):
        trace = replace(trace, schedule=SCHEDULE)
    want = _plain(policy, trace, params, tick, start)
    assert child.run([policy], trace, params, tick, start) == want


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_policies_run_in_worker_processes_as_in_one(child: Child, method: str) -> None:
    """What crosses to and from worker processes by pickle (the policies, the model, the
    results) arrives whole: a frozen compiled dataclass refuses the field-by-field restore
    pickle makes of other classes. A worker started afresh (spawn) runs the same build, so
    that the results it sends are what the parent's compiled classes read."""
    minutes = 180
    trace = Trace(
        "steps",
        START,
        {(None, "read"): ([40.0] * 30 + [400.0] * 30) * 3, (None, "write"): [25.0] * minutes},
    )
    reserved = ModelParams(reserved_read_units=100, warm_update_seconds=None).validate()
    runs = {
        ("stock:70+reserved", "autopilot+stock:70+reserved", "oracle"): reserved,
        ("autopilot+stock:70", "hybrid:70", "on-demand", "bound"): ModelParams(),
    }
    for policies, params in runs.items():
        want = [r for p in policies for r in _plain(p, trace, params, DEFAULT_TICK_MINUTES, None)]
        got = child.run(list(policies), trace, params, method=method)
        assert sorted(got) == sorted(want)


def test_every_policy_of_the_list_parses() -> None:
    """The list above names real policies (a typo would skip a kind)."""
    assert {parse(p).text for p in POLICIES} == set(POLICIES)


def _built(folder: Path, modules: tuple[str, ...] = compiled.MODULES) -> Path:
    """A fake build in ``folder`` for this source: an empty extension file per module."""
    build = folder / compiled.fingerprint()
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for m in modules:
        path = build.joinpath(*m.split(".")[:-1], m.split(".")[-1] + suffix)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    (build / compiled.BUILT).write_text("{}\n")
    return build


def _activates(folder: Path | None, env: dict[str, str] | None = None, before: str = "") -> str:
    """What a fresh process prints: whether `activate` took ``folder`` (None: its default,
    from ``env``), after running ``before``."""
    script = (
        "from pathlib import Path\n"
        "from ddb_capacity_tools import compiled\n"
        f"{before}\n"
        f"print(compiled.activate({None if folder is None else f'Path({str(folder)!r})'}))\n"
    )
    done = subprocess.run(  # noqa: S603 (this interpreter, the script above)
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(ROOT / "lambda_src"), **(env or {})},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_a_build_is_used_only_when_it_matches_the_source_and_is_whole(tmp_path: Path) -> None:
    assert _activates(tmp_path) == "False"  # none built
    build = _built(tmp_path)
    assert _activates(tmp_path) == "True"
    (build / compiled.BUILT).unlink()  # unfinished
    assert _activates(tmp_path) == "False"
    other = tmp_path / "other"
    _built(other, compiled.MODULES[1:])  # a module missing
    assert _activates(other) == "False"
    stale = tmp_path / "stale"
    _built(stale).rename(stale / "0123456789abcdef")  # another source's
    assert _activates(stale) == "False"


def test_a_build_is_never_mixed_with_plain_modules_already_imported(tmp_path: Path) -> None:
    _built(tmp_path)
    assert _activates(tmp_path) == "True"
    assert _activates(tmp_path, before="import ddb_capacity_tools.simulator") == "False"


def test_the_environment_names_the_folder_or_turns_the_builds_off(tmp_path: Path) -> None:
    _built(tmp_path)
    assert _activates(None, env={compiled.ENV: str(tmp_path)}) == "True"
    for off in ("0", "off", "OFF", " no "):
        assert compiled.root({compiled.ENV: off}) is None
        assert _activates(None, env={compiled.ENV: off}) == "False"
    assert compiled.root({}) == Path(sys.prefix, "share", "ddb-capacity", "compiled")


def test_the_fingerprint_follows_every_module_of_both_packages(tmp_path: Path) -> None:
    """A change to any module, compiled or not, names another build: mypyc compiles against
    the types and constants of the modules the compiled ones import (a constant of the
    billing module is copied into the oracle's compiled code)."""
    copy = tmp_path / "src"
    for package in compiled.PACKAGES:
        shutil.copytree(compiled.SOURCE_ROOT / package, copy / package)
    first = compiled.fingerprint(copy)
    assert first == compiled.fingerprint()
    changed = (
        "ddb_capacity_tools/simulator/billing.py",  # not compiled
        "ddb_capacity_runtime/core/tables.py",  # not compiled
        "ddb_capacity_tools/simulator/oracle.py",  # compiled
    )
    for name in changed:
        path = copy / name
        path.write_text(path.read_text() + "\n# changed\n")
        now = compiled.fingerprint(copy)
        assert now != first, name
        first = now


def test_only_the_commands_that_simulate_run_the_compiled_modules(child: Child) -> None:
    """The ``ddb-capacity`` command (`launch.main`) uses a build for simulate, backtest,
    tune, advise and reserve; a capacity request and ``local``'s tick run the plain
    modules, as the Lambda functions do."""
    assert launch.command(["--quiet", "tune", "--trace", "x.csv"]) == "tune"
    assert launch.command([]) is None
    script = (
        "import sys\n"
        "from ddb_capacity_tools import compiled, launch\n"
        "sys.argv = ['ddb-capacity', *sys.argv[1:]]\n"
        "code = launch.main()\n"
        "print('compiled:', compiled.active(), code)\n"
    )
    runs = {
        ("simulate", "--scenario", "spike", "--policy", "stock:70", "--quiet"): True,
        ("scenarios",): False,
    }
    for argv, expected in runs.items():
        done = subprocess.run(  # noqa: S603 (this interpreter, the script above)
            [sys.executable, "-c", script, *argv],
            env={**os.environ, "PYTHONPATH": str(ROOT / "lambda_src")},
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.splitlines()[-1] == f"compiled: {expected} 0", done.stdout


def test_a_failed_build_leaves_nothing_and_says_the_plain_modules_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(work: Path) -> None:
        (work / "half-built.so").write_bytes(b"")
        raise compiled.CompileError("mypyc failed (exit 1):\nerror: something")

    monkeypatch.setattr(compiled, "_mypyc", fails)
    out = io.StringIO()
    assert compiled.main(["build", "--folder", str(tmp_path)], out) == 1
    assert (
        "compiled modules: not built, the plain modules run: mypyc failed (exit 1):\nerror: "
        in (out.getvalue())
    )
    assert list(tmp_path.iterdir()) == []
    assert not compiled.activate(tmp_path)


def test_status_says_whether_a_build_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(compiled.ENV, str(tmp_path))
    assert compiled.status().startswith(
        f"compiled modules: none built for this source in {tmp_path}"
    )
    _built(tmp_path)
    assert compiled.status() == (
        f"compiled modules: built for this source in {tmp_path / compiled.fingerprint()}"
    )
    monkeypatch.setenv(compiled.ENV, "off")
    assert compiled.status() == "compiled modules: off ($DDB_CAPACITY_COMPILED is 'off')"


def _fake_mypyc(work: Path) -> None:
    """What mypyc leaves in ``work``: an extension file beside each module's source, and its
    shared library."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for m in compiled.MODULES:
        work.joinpath(*m.split(".")[:-1], m.split(".")[-1] + suffix).write_bytes(b"")
    (work / f"abc__mypyc{suffix}").write_bytes(b"")


def test_a_build_that_loses_a_race_to_the_same_source_is_still_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def raced(work: Path) -> None:
        _fake_mypyc(work)
        _built(tmp_path)  # another process finished the same build meanwhile

    monkeypatch.setattr(compiled, "_mypyc", raced)
    out = io.StringIO()
    assert compiled.main(["build", "--folder", str(tmp_path)], out) == 0
    assert out.getvalue().endswith(f"built in {tmp_path / compiled.fingerprint()}\n")


def test_a_build_keeps_the_newest_builds_and_clears_what_killed_ones_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compiled, "_mypyc", _fake_mypyc)
    old = []
    for n in range(compiled.KEPT_BUILDS):
        build = tmp_path / f"{n:016x}"
        build.mkdir()
        (build / compiled.BUILT).write_text("{}\n")
        os.utime(build / compiled.BUILT, (1_000_000 + n, 1_000_000 + n))
        old.append(build)
    killed = tmp_path / f"{compiled.UNFINISHED}x"
    killed.mkdir()
    os.utime(killed, (1_000_000, 1_000_000))
    running = tmp_path / f"{compiled.UNFINISHED}y"  # another build's, under way
    running.mkdir()
    made = compiled.build(tmp_path, io.StringIO())
    assert made == tmp_path / compiled.fingerprint()
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == sorted([*(b.name for b in old[1:]), made.name, running.name])


def test_a_whole_number_given_as_a_float_is_taken_as_that_whole_number() -> None:
    params = ModelParams(warm_read_units=2000.0, min_capacity=1.0, burst_fraction=1.0)  # type: ignore[arg-type]
    assert (type(params.warm_read_units), params.warm_read_units) == (int, 2000)
    assert type(params.min_capacity) is int
    assert type(params.burst_fraction) is float  # a fraction stays a fraction
    with pytest.raises(ValueError, match=r"warm_read_units: got 2000.5; expected a whole number"):
        ModelParams(warm_read_units=2000.5).validate()  # type: ignore[arg-type]


def test_a_worker_started_afresh_runs_the_same_build(child: Child) -> None:
    """A worker process started afresh (spawn: macOS, and Python 3.14's forkserver) by a
    process running the compiled modules imports them too."""
    script = (
        "import multiprocessing\n"
        "from concurrent.futures import ProcessPoolExecutor\n"
        "from ddb_capacity_tools import compiled\n"
        "assert compiled.activate()\n"
        "import ddb_capacity_tools.simulator.run\n"
        "ask = ('__import__(\"ddb_capacity_tools.simulator.run\") and '\n"
        "       '__import__(\"ddb_capacity_tools.compiled\").compiled.active()')\n"
        "if __name__ == '__main__':\n"
        "    context = multiprocessing.get_context('spawn')\n"
        "    with ProcessPoolExecutor(1, mp_context=context) as pool:\n"
        "        print('worker compiled:', pool.submit(eval, ask).result())\n"
    )
    done = subprocess.run(  # noqa: S603 (this interpreter, the script above)
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(ROOT / "lambda_src")},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == "worker compiled: True", done.stdout + done.stderr


def test_a_process_started_with_the_builds_off_runs_the_plain_modules(child: Child) -> None:
    """A process told to run the plain modules (``DDB_CAPACITY_COMPILED=0``, as the speed
    benchmark's ``--plain`` starts one) does, though its parent ran a build."""
    folder = compiled.root()
    assert folder is not None
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "lambda_src"),
        compiled.ENV: "0",
        compiled.ACTIVE: str(folder),
    }
    script = (
        "from ddb_capacity_tools import compiled\n"
        "import ddb_capacity_tools.simulator.run\n"
        "print('compiled:', compiled.active())\n"
    )
    done = subprocess.run(  # noqa: S603 (this interpreter, the script above)
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "compiled: False"
    env[compiled.ENV] = str(folder)  # and the same process, builds on, takes its parent's
    done = subprocess.run(  # noqa: S603 (this interpreter, the script above)
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "compiled: True"


def test_a_build_is_not_taken_for_another_copy_of_the_packages(
    child: Child, tmp_path: Path
) -> None:
    """Where another copy of the packages comes first on the path (an earlier checkout's
    tools, as the speed benchmark's ``--baseline`` runs them) and this module is found in
    these ones, the build of these is not used for that copy."""
    for package in compiled.PACKAGES:
        shutil.copytree(
            compiled.SOURCE_ROOT / package,
            tmp_path / package,
            ignore=shutil.ignore_patterns("__pycache__", "compiled.py"),
        )
    script = (
        "import ddb_capacity_tools\n"
        "from ddb_capacity_tools import compiled\n"
        "print(ddb_capacity_tools.__file__, compiled.__file__, compiled.activate())\n"
    )
    done = subprocess.run(  # noqa: S603 (this interpreter, the script above)
        [sys.executable, "-c", script],
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "lambda_src")]),
        },
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    package, module, taken = done.stdout.split()
    assert Path(package).is_relative_to(tmp_path) and not Path(module).is_relative_to(tmp_path)
    assert taken == "False"
