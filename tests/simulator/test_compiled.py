"""The compiled modules (`ddb_capacity_tools.compiled`) against the plain ones: random traces
and models run through every kind of policy in this process (plain) and in a child process
that imports the build matching the source (compiled); every result field and every recorded
series must be the same, exactly. And when a build is used: only one matching the source,
never beside plain modules already imported, never when turned off.

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

from ddb_capacity_tools import compiled
from ddb_capacity_tools.simulator import ModelParams, Prices, parse
from ddb_capacity_tools.simulator.model import Recorded
from ddb_capacity_tools.simulator.run import run_policy
from ddb_capacity_tools.simulator.trace import Trace
from tests.support.hypothesis_profiles import examples
from tests.support.sim_strategies import models, traces

ROOT = Path(__file__).resolve().parents[2]
RECORDED = tuple(f.name for f in fields(Recorded))

POLICIES = (
    "stock:70",
    "stock:50+reserved",
    "fixed:120",
    "scheduled",
    "throttle-aware",
    "throttle-aware+stock:50",
    "autopilot:60",
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
import pickle, struct, sys
from ddb_capacity_tools import compiled
assert compiled.activate(), compiled.status()
from ddb_capacity_tools.simulator import Prices, parse
from ddb_capacity_tools.simulator.run import run_policy
assert compiled.active(), "the compiled modules were not the ones imported"
read, write = sys.stdin.buffer, sys.stdout.buffer
while head := read.read(4):
    policy, trace, params, recorded = pickle.loads(read.read(struct.unpack(">I", head)[0]))
    runs = run_policy(parse(policy), trace, params, Prices())
    out = [(r.as_json(), {f: list(getattr(r.recorded, f)) for f in recorded}) for r in runs]
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

    def run(self, policy: str, trace: Trace, params: ModelParams) -> list[Any]:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        blob = pickle.dumps((policy, trace, params, RECORDED))
        stdin.write(struct.pack(">I", len(blob)) + blob)
        stdin.flush()
        size = struct.unpack(">I", _read(stdout, 4))[0]
        out: list[Any] = pickle.loads(_read(stdout, size))  # noqa: S301 (our own child's)
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


def _plain(policy: str, trace: Trace, params: ModelParams) -> list[Any]:
    runs = run_policy(parse(policy), trace, params, Prices())
    return [(r.as_json(), {f: list(getattr(r.recorded, f)) for f in RECORDED}) for r in runs]


@st.composite
def features(draw: st.DrawFn) -> dict[str, Any]:
    """The model's features the policies read beside its delays: a hot key, warm
    throughput, on-demand's maximums and a reservation."""
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["key_skew"] = draw(st.sampled_from([0.3, 0.8]))
        out["split_minutes"] = draw(st.sampled_from([None, 5]))
    if draw(st.booleans()):
        out["warm_read_units"] = out["warm_write_units"] = draw(st.sampled_from([200, 2000]))
    if draw(st.booleans()):
        out["on_demand_max_read_units"] = draw(st.sampled_from([50, 500]))
    return out


@settings(max_examples=examples(100), deadline=None)
@given(trace=traces(), params=models(), extra=features(), policy=st.sampled_from(POLICIES))
def test_a_compiled_run_is_the_plain_run(
    child: Child, trace: Trace, params: ModelParams, extra: dict[str, Any], policy: str
) -> None:
    params = replace(params, **extra)
    if policy.endswith("+reserved"):
        params = replace(params, reserved_read_units=100)
    params = params.validate()
    if policy == "scheduled":
        trace = replace(trace, schedule=SCHEDULE)
    assert child.run(policy, trace, params) == _plain(policy, trace, params)


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


def test_the_fingerprint_follows_every_compiled_source(tmp_path: Path) -> None:
    """A change to any compiled module's source names another build."""
    copy = tmp_path / "src"
    for package in ("ddb_capacity_runtime", "ddb_capacity_tools"):
        shutil.copytree(compiled.SOURCE_ROOT / package, copy / package)
    script = "from ddb_capacity_tools import compiled; print(compiled.fingerprint())"

    def printed() -> str:
        return subprocess.run(  # noqa: S603 (this interpreter, the script above)
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONPATH": str(copy)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    first = printed()
    assert first == compiled.fingerprint()
    for module in (compiled.MODULES[0], compiled.MODULES[-1]):
        path = copy.joinpath(*module.split(".")).with_suffix(".py")
        path.write_text(path.read_text() + "\n# changed\n")
        now = printed()
        assert now != first
        first = now


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
