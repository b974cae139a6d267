"""Runs in: workstation (the ``ddb-capacity`` command, the benchmarks).

The simulator's hot modules compiled to C with mypyc (the compiler of mypy, which type
checks this package), from this very source: ``tune``, ``simulate``, ``advise`` and
``reserve`` run about twice as fast with them, with the same answers.

- `build` compiles `MODULES` into a folder named by the source's `fingerprint`, under
  ``$DDB_CAPACITY_COMPILED`` or, by default, ``share/ddb-capacity/compiled`` in the
  Python environment (`root`). It needs mypy and a C compiler; ``make install`` runs it,
  and ``python -m ddb_capacity_tools.compiled build`` again after the source changes.
- `activate` makes the modules of a build that matches the source the ones imported. The
  ``ddb-capacity`` command calls it before anything else (`launch`); a program of the
  user's may too, before it imports the simulator. With no matching build (never built,
  the source changed since, no C compiler), it does nothing and the plain modules run:
  same answers, slower. ``DDB_CAPACITY_COMPILED=0`` turns it off.
- ``python -m ddb_capacity_tools.compiled status`` says which build matches, if any.

A compiled module is the same code: ``tests/simulator/test_compiled.py`` runs random
traces through both and compares every figure.
"""

from __future__ import annotations

import argparse
import copyreg
import dataclasses
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from .tool_errors import CompileError as CompileError

MODULES = (
    "ddb_capacity_runtime.core.bucket",
    "ddb_capacity_runtime.core.decreases",
    "ddb_capacity_runtime.core.delivery",
    "ddb_capacity_runtime.core.floorplan",
    "ddb_capacity_runtime.core.forecast",
    "ddb_capacity_runtime.core.holds",
    "ddb_capacity_runtime.core.ownership",
    "ddb_capacity_runtime.core.periods",
    "ddb_capacity_runtime.core.plan",
    "ddb_capacity_runtime.core.policy",
    "ddb_capacity_runtime.core.reservation",
    "ddb_capacity_runtime.core.series",
    "ddb_capacity_runtime.core.table_limits",
    "ddb_capacity_tools.simulator.fast_path_model",
    "ddb_capacity_tools.simulator.model",
    "ddb_capacity_tools.simulator.oracle",
    "ddb_capacity_tools.simulator.partitions",
    "ddb_capacity_tools.simulator.policies",
    "ddb_capacity_tools.simulator.run",
    "ddb_capacity_tools.simulator.stock",
)
"""The modules compiled: those a simulated minute runs (the model, stock target tracking,
the scaler's decisions and forecasts). The rest stay plain Python."""

ENV = "DDB_CAPACITY_COMPILED"
"""The environment variable naming the builds' folder (`root`); ``0`` turns them off."""
ACTIVE = "DDB_CAPACITY_COMPILED_ACTIVE"
"""Set by `activate` to the builds' folder it took, for the process's children: a worker
process started afresh (the ``spawn`` and ``forkserver`` start methods: macOS, Python 3.14)
activates the same build as it imports the tools (``ddb_capacity_tools/__init__``), so
that what the workers send back is what the parent's classes read."""
OFF = ("0", "off", "false", "no")
BUILT = "BUILT"
"""The file a finished build writes last (what it compiled, and with what)."""
SOURCE_ROOT = Path(__file__).resolve().parent.parent
"""The folder holding both packages (``ddb_capacity_runtime`` and ``ddb_capacity_tools``)."""
PACKAGES = ("ddb_capacity_runtime", "ddb_capacity_tools")
SIMULATING = frozenset({"simulate", "backtest", "tune", "advise", "reserve"})
"""The commands that run the compiled modules (`launch`): those that simulate. The others
(a capacity request, ``local``'s tick) run the plain modules, as the Lambda functions do."""
KEPT_BUILDS = 3
"""The most builds kept in a folder (the newest): a build for each of a few checkouts
sharing one environment, not every build ever made."""


def fingerprint(tree: Path = SOURCE_ROOT) -> str:
    """What a build must match: the interpreter's tag, the machine and the source of both
    packages under ``tree`` (every module, compiled or not: mypyc compiles against the
    types and constants of the modules the compiled ones import), as 16 hexadecimal
    digits."""
    digest = hashlib.sha256(f"{sys.implementation.cache_tag} {platform.machine()}".encode())
    for package in PACKAGES:
        for path in sorted((tree / package).rglob("*.py")):
            name = path.relative_to(tree).as_posix()
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def root(environ: dict[str, str] | None = None) -> Path | None:
    """The builds' folder: ``$DDB_CAPACITY_COMPILED`` when set (None when it is ``0``,
    ``off``, ``false`` or ``no``), else ``share/ddb-capacity/compiled`` under the Python
    environment's prefix."""
    value = (os.environ if environ is None else environ).get(ENV, "").strip()
    if value.lower() in OFF:
        return None
    return Path(value) if value else Path(sys.prefix, "share", "ddb-capacity", "compiled")


SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)
"""The endings of an extension module's file name on this interpreter."""


def _files(folder: Path) -> dict[str, Path]:
    """Each extension module in ``folder`` by its module name."""
    found = {}
    for path in folder.rglob("*"):
        if path.is_file() and path.name.endswith(SUFFIXES):
            relative = path.relative_to(folder)
            name = relative.name.split(".", 1)[0]
            found[".".join([*relative.parent.parts, name])] = path
    return found


def _rebuild(cls: type, given: dict[str, object], later: dict[str, object]) -> object:
    """An instance of the compiled dataclass ``cls`` made again from its fields (`_reduce`)."""
    made = cls(**given)
    for name, value in later.items():
        object.__setattr__(made, name, value)
    return made


def _reduce(obj: Any) -> Any:
    """How pickle sends an instance of a compiled dataclass to a worker process: its
    constructor and its fields (a compiled frozen dataclass refuses the field-by-field
    restore pickle would make otherwise)."""
    given: dict[str, object] = {}
    later: dict[str, object] = {}
    for f in dataclasses.fields(obj):
        (given if f.init else later)[f.name] = getattr(obj, f.name)
    return _rebuild, (type(obj), given, later)


class _Loader(importlib.machinery.ExtensionFileLoader):
    """Loads a compiled module, then has pickle send its dataclasses by their fields."""

    def exec_module(self, module: ModuleType) -> None:
        super().exec_module(module)
        for value in list(vars(module).values()):
            if (
                isinstance(value, type)
                and value.__module__ == module.__name__
                and dataclasses.is_dataclass(value)
            ):
                copyreg.pickle(value, _reduce)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the compiled modules (and mypyc's shared library) in a build's folder."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        found = self.files.get(fullname)
        if found is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, found, loader=_Loader(fullname, str(found))
        )


def activate(folder: Path | None = None) -> bool:
    """Import `MODULES` from the build matching the source under ``folder`` (default:
    `root`) from now on; whether they will be (or already are). Nothing changes, and the
    answer is False, when there is no such build or one of them is imported already (a
    module is never mixed with its compiled twin)."""
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return True
    where = root() if folder is None else folder
    if where is None or not _imported_from_here():
        return False
    build = where / fingerprint()
    if not (build / BUILT).is_file() or any(m in sys.modules for m in MODULES):
        return False
    files = _files(build)
    if not set(MODULES) <= set(files):
        return False
    sys.meta_path.insert(0, _Finder(files))
    os.environ[ACTIVE] = str(where)
    return True


def _imported_from_here() -> bool:
    """Whether the packages imported (or to be) are those `fingerprint` reads: not where
    another copy of them comes first on the path (an earlier checkout's tools, measured
    beside these), this module then found in these."""
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        origin = None if spec is None or spec.origin is None else Path(spec.origin).resolve()
        if origin is None or origin.parent != SOURCE_ROOT / package:
            return False
    return True


def activate_inherited() -> bool:
    """`activate` the build the parent process took (``$DDB_CAPACITY_COMPILED_ACTIVE``): in a
    worker process started afresh, as the tools are first imported. Not where the builds
    are turned off (``DDB_CAPACITY_COMPILED=0``: a process started to run the plain
    modules)."""
    if root() is None:
        return False
    return activate(Path(os.environ[ACTIVE]))


def active() -> bool:
    """Whether every module of `MODULES` imported so far is compiled (and one is)."""
    loaded = [sys.modules[m] for m in MODULES if m in sys.modules]
    return bool(loaded) and all(str(getattr(m, "__file__", "")).endswith(SUFFIXES) for m in loaded)


def build(folder: Path, out: TextIO) -> Path:
    """Compile `MODULES` into ``folder``/`fingerprint` (made whole or not at all: a build
    is moved into place once finished) and remove older builds there; the build's folder.
    Raises `CompileError`."""
    target = folder / fingerprint()
    if (target / BUILT).is_file():
        out.write(f"compiled modules: up to date in {target}\n")
        return target
    folder.mkdir(parents=True, exist_ok=True)
    _clear_unfinished(folder)
    with tempfile.TemporaryDirectory(dir=folder, prefix=UNFINISHED) as tmp:
        work = Path(tmp, "source")
        for package in PACKAGES:
            shutil.copytree(
                SOURCE_ROOT / package, work / package, ignore=shutil.ignore_patterns("__pycache__")
            )
        target = folder / fingerprint(work)  # the source compiled, whatever changes meanwhile
        out.write(f"compiled modules: compiling {len(MODULES)} modules with mypyc\n")
        _mypyc(work)
        staged = Path(tmp, "built")
        for name, path in _files(work).items():
            if not name.startswith("build."):
                dest = staged.joinpath(*name.split(".")[:-1], path.name)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
        missing = set(MODULES) - set(_files(staged))
        if missing:
            raise CompileError(f"mypyc built no module for {', '.join(sorted(missing))}")
        (staged / BUILT).write_text(json.dumps(_stamp(target.name), indent=1) + "\n")
        try:
            staged.rename(target)
        except OSError:
            if not (target / BUILT).is_file():  # else another build of the same source won
                raise
    stamped = ((_built_at(b), b) for b in folder.iterdir() if b.is_dir())
    finished = sorted((at, b) for at, b in stamped if at is not None)
    for _, old in finished[:-KEPT_BUILDS]:
        if old != target:
            shutil.rmtree(old, ignore_errors=True)
    out.write(f"compiled modules: built in {target}\n")
    return target


def _built_at(build: Path) -> float | None:
    """When ``build`` was finished (None: not a finished build, or removed meanwhile by
    another build's clearing)."""
    try:
        return (build / BUILT).stat().st_mtime
    except OSError:
        return None


UNFINISHED = "unfinished-"
"""The prefix of a build's working folder, removed when its build ends."""
STALE_SECONDS = 3600
"""How old a working folder must be for the next build to remove it: one left behind by a
build that was killed (a build takes about a minute)."""


def _clear_unfinished(folder: Path) -> None:
    """Remove the working folders of killed builds in ``folder``."""
    now = time.time()
    for old in folder.glob(f"{UNFINISHED}*"):
        if old.is_dir() and now - old.stat().st_mtime > STALE_SECONDS:
            shutil.rmtree(old, ignore_errors=True)


def _mypyc(work: Path) -> None:
    """Run mypyc on `MODULES`' copies in ``work``."""
    files = [str(Path(*m.split(".")).with_suffix(".py")) for m in MODULES]
    env = {**os.environ, "MYPYPATH": str(work)}
    try:
        done = subprocess.run(  # noqa: S603 (this interpreter's mypyc, on the package's own files)
            [sys.executable, "-m", "mypyc", *files],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
    except OSError as exc:
        raise CompileError(f"mypyc could not start: {exc}") from None
    if done.returncode != 0:
        tail = "\n".join(done.stdout.strip().splitlines()[-15:])
        raise CompileError(f"mypyc failed (exit {done.returncode}):\n{tail}")


def _stamp(name: str) -> dict[str, object]:
    """What a build records of itself."""
    try:
        from mypy.version import __version__ as mypy_version
    except ImportError:  # pragma: no cover - mypyc ran, so mypy is there
        mypy_version = "unknown"
    return {
        "fingerprint": name,
        "modules": list(MODULES),
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "mypy": mypy_version,
    }


def status() -> str:
    """One line: where the builds are looked for and whether one matches the source."""
    where = root()
    if where is None:
        return f"compiled modules: off (${ENV} is {os.environ.get(ENV)!r})"
    build_folder = where / fingerprint()
    if (build_folder / BUILT).is_file():
        return f"compiled modules: built for this source in {build_folder}"
    return (
        f"compiled modules: none built for this source in {where}; the plain modules run "
        "(python -m ddb_capacity_tools.compiled build)"
    )


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(
        prog="python -m ddb_capacity_tools.compiled",
        description="Compile the simulator's hot modules with mypyc, or say whether they are.",
    )
    parser.add_argument("action", choices=("build", "status"))
    parser.add_argument(
        "--folder",
        type=Path,
        help=f"the builds' folder (default: ${ENV}, else share/ddb-capacity/compiled "
        "under the Python environment)",
    )
    args = parser.parse_args(argv)
    if args.action == "status":
        out.write(status() + "\n")
        return 0
    folder = args.folder or root()
    if folder is None:
        parser.error(f"--folder: none given, and ${ENV} turns the builds off")
    try:
        build(folder, out)
    except (CompileError, OSError) as exc:
        out.write(f"compiled modules: not built, the plain modules run: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
