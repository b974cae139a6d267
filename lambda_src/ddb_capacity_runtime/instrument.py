"""Runs in: workers (the user's own processes, started through the launcher), Lambda
functions (through the exec wrapper the constructs install).

The fast path's client hook without editing the application, in the manner of
OpenTelemetry's auto-instrumentation: ``ddb-capacity-instrument -- python app.py`` (or a
Lambda function's exec wrapper) puts this package's ``bootstrap`` folder first on
``PYTHONPATH``; Python imports its ``sitecustomize`` at start-up, before the application,
and that calls `install`. From then on every boto3 Session the process makes
(``boto3.client(...)``'s default one included) reports through one
[`Watcher`][ddb_capacity_runtime.fast_path.hook.Watcher], as
[`watch`][ddb_capacity_runtime.fast_path.hook.watch] would. A ``sitecustomize`` of the
application's own, further along the path, still runs.

Configured by the environment (the launcher's options set it):

- ``CAPACITY_SIGNALS``: the signals function's name or ARN (required; without it nothing
  is installed and one warning is logged);
- ``CAPACITY_SIGNALS_TABLES``: comma-separated table names (or ARNs), the only ones
  reported (default: every table of the account in the region);
- ``CAPACITY_SIGNALS_INTERVAL``: seconds between reports, 1 to 60 (default 5);
- ``CAPACITY_SIGNALS_PROCESS``: a label for the process id (default: the host name);
- ``CAPACITY_SIGNALS_MODE``: ``consumed`` (the default: the hook asks DynamoDB for the
  consumed capacity of the requests it counts) or ``throttles`` (it changes no request,
  for accounts whose policies condition on ``dynamodb:ReturnConsumedCapacity``).

The hook never fails the application: a setting it cannot read, or a client boto3 cannot
make, is said on one line of standard error (naming the variable, the value and what is
allowed), also logged (``signals-instrument-skipped``) where the process's logging is
configured, and nothing is installed. Python processes started by the
application inherit the environment, and so the hook. Only boto3 Sessions are hooked: a
client made from a bare botocore session is not.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .core.errors import InstrumentError as InstrumentError
from .core.names import is_table_name
from .core.surge_report import SIGNALS_ENV
from .events import LOGGER, log_event
from .fast_path.failures import count_hook_failures
from .fast_path.hook import MODES, _interval, _label, _scope

BOOTSTRAP = Path(__file__).resolve().parent / "bootstrap"
"""The folder whose ``sitecustomize`` installs the hook at start-up."""
TABLES_ENV = "CAPACITY_SIGNALS_TABLES"
INTERVAL_ENV = "CAPACITY_SIGNALS_INTERVAL"
PROCESS_ENV = "CAPACITY_SIGNALS_PROCESS"
MODE_ENV = "CAPACITY_SIGNALS_MODE"
_installed: list[Any] = []
"""The watcher `install` made, once per process."""


OPTIONS = {
    SIGNALS_ENV: "--function",
    TABLES_ENV: "--tables",
    INTERVAL_ENV: "--interval",
    PROCESS_ENV: "--process",
    MODE_ENV: "--mode",
}
"""The launcher's option that sets each variable."""


def settings(env: Mapping[str, str], given: Mapping[str, str] | None = None) -> dict[str, Any]:
    """[`watch`][ddb_capacity_runtime.fast_path.hook.watch]'s arguments from ``env``, each checked
    as the hook checks it; raises InstrumentError naming the variable (and its option, for
    a variable of ``given``: the launcher's options), the value and what is allowed."""
    function = env.get(SIGNALS_ENV, "").strip()
    if not function:
        raise InstrumentError(
            f"{SIGNALS_ENV}: not set; expected the signals function's name or ARN "
            "(CapacityRequests.grant_signals sets it on a function)"
        )
    out: dict[str, Any] = {"function": function}
    out.update(_options(env, given or {}))
    return out


def _name(variable: str, given: Mapping[str, str]) -> str:
    """How an error names ``variable``: with the option that set it when it is in ``given``."""
    return f"{OPTIONS[variable]} ({variable})" if variable in given else variable


def _options(env: Mapping[str, str], given: Mapping[str, str]) -> dict[str, Any]:
    """The settings besides the function, checked (`settings`)."""
    out: dict[str, Any] = {}
    tables = env.get(TABLES_ENV, "").strip()
    name = _name(TABLES_ENV, given)
    if tables or TABLES_ENV in given:  # an option given empty is a mistake, not "all"
        names = [t.strip() for t in tables.split(",") if t.strip()]
        allowed = "comma-separated table names (3-255 of a-z A-Z 0-9 _ . -) or table ARNs"
        if not names:
            leave = "leave --tables out" if TABLES_ENV in given else "unset it"
            raise InstrumentError(
                f"{name}: got {given.get(TABLES_ENV, tables)!r:.80}; expected at least one "
                f"table name ({leave} to report every table)"
            )
        _check(name, tables, allowed, _scope, names)
        bad = [n for n in names if not (n.startswith("arn:") or is_table_name(n))]
        if bad:
            raise InstrumentError(f"{name}: got {tables!r:.80}; expected {allowed}")
        out["tables"] = names
    interval = env.get(INTERVAL_ENV, "").strip()
    if interval:
        try:
            seconds = float(interval)
        except ValueError:
            seconds = math.nan
        out["interval"] = _check(
            _name(INTERVAL_ENV, given), interval, "seconds from 1 to 60", _interval, seconds
        )
    process = env.get(PROCESS_ENV, "").strip()
    if process:
        allowed = "a label of 1 to 40 letters, digits, '.', '_' or '-'"
        out["process"] = _check(_name(PROCESS_ENV, given), process, allowed, _label, process)
    mode = env.get(MODE_ENV, "").strip()
    if mode:
        if mode not in MODES:
            raise InstrumentError(
                f"{_name(MODE_ENV, given)}: got {mode!r:.80}; expected one of {', '.join(MODES)}"
            )
        out["mode"] = mode
    return out


def _check(name: str, given: str, allowed: str, check: Any, value: Any) -> Any:
    """``check(value)``, the hook's own check of a setting; InstrumentError naming the
    variable ``name``, the text ``given`` and what is ``allowed`` when it refuses."""
    try:
        return check(value)
    except (TypeError, ValueError):
        raise InstrumentError(f"{name}: got {given!r:.80}; expected {allowed}") from None


def install(env: Mapping[str, str] = os.environ) -> Any:
    """Hook every boto3 Session this process makes from now on (once; later calls return
    the same watcher). Returns the watcher, or None when nothing was installed: the reason
    is logged, never raised."""
    if _installed:
        return _installed[0]
    try:
        import boto3

        from .fast_path.emitters import OwnSession
        from .fast_path.hook import watch

        args = settings(env)
        watcher = watch(OwnSession(boto3.session.Session()), **args)
    except Exception as exc:  # noqa: BLE001 (the application starts whatever happens)
        if LOGGER.hasHandlers():  # else logging's last resort prints a second, bare line
            log_event("signals-instrument-skipped", level=logging.WARNING, reason=str(exc)[:300])
        print(f"ddb-capacity-instrument: hook not installed: {exc}", file=sys.stderr)
        count_hook_failures(1, env.get(SIGNALS_ENV))
        return None
    made = boto3.session.Session.__init__

    def hooked(self: Any, *a: Any, **kw: Any) -> None:
        made(self, *a, **kw)
        try:
            watcher.attach(self.events)
        except Exception as exc:  # noqa: BLE001 (never fail the application)
            log_event("signals-hook-error", level=logging.WARNING, where="attach", error=str(exc))
            count_hook_failures(1, args["function"])

    boto3.session.Session.__init__ = hooked  # type: ignore[method-assign]
    if boto3.DEFAULT_SESSION is not None:
        watcher.attach(boto3.DEFAULT_SESSION.events)
    _installed.append(watcher)
    return watcher


def environment(
    env: Mapping[str, str],
    *,
    function: str | None = None,
    tables: str | None = None,
    interval: str | None = None,
    process: str | None = None,
    mode: str | None = None,
) -> dict[str, str]:
    """``env`` with the bootstrap folder first on ``PYTHONPATH`` and the given settings set;
    raises InstrumentError for a setting the hook could not use."""
    out = dict(env)
    given = {
        name: value
        for name, value in (
            (SIGNALS_ENV, function),
            (TABLES_ENV, tables),
            (INTERVAL_ENV, interval),
            (PROCESS_ENV, process),
            (MODE_ENV, mode),
        )
        if value is not None
    }
    for name, value in given.items():
        if "\x00" in value:
            raise InstrumentError(
                f"{_name(name, given)}: got {value!r:.80}; expected no NUL character"
            )
        if not value.strip() and name != TABLES_ENV:  # --tables "" says more below
            raise InstrumentError(
                f"{_name(name, given)}: got {value!r:.80}; expected a value (leave "
                f"{OPTIONS[name]} out to use ${name} or its default)"
            )
        out[name] = value
    settings(out, given)  # the hook would refuse it: say so now, not in the application's log
    path = out.get("PYTHONPATH", "")
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(BOOTSTRAP), path) if p)
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ddb-capacity-instrument",
        description="Run a Python command with the fast path's client hook installed: "
        "every boto3 client it makes reports consumed capacity and throttles to the "
        "signals function, without a line of its code changed.",
        epilog="example: ddb-capacity-instrument --function capacity-signals -- python app.py",
    )
    parser.add_argument("--function", help=f"the signals function (default: ${SIGNALS_ENV})")
    parser.add_argument("--tables", help="comma-separated tables to report (default: all)")
    parser.add_argument("--interval", help="seconds between reports, 1 to 60 (default: 5)")
    parser.add_argument("--process", help="a label for the process id (default: host name)")
    parser.add_argument(
        "--mode",
        help="consumed (default: ask for consumed capacity) or throttles (change no request)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    return parser


def _launch_environment(given: dict[str, str | None]) -> tuple[dict[str, str], bool]:
    """The command's environment, and whether it loads the hook: with a signals function
    (``--function`` or the environment's), the hook's (`environment`); without one, every
    other setting is still checked, one warning says the program runs without the hook, and
    the environment is left as it is. InstrumentError for a setting the hook could not
    use."""
    if given["function"] is not None and not given["function"].strip():
        raise InstrumentError(
            f"--function ({SIGNALS_ENV}): got {given['function']!r:.80}; expected the signals "
            f"function's name or ARN (leave --function out to use ${SIGNALS_ENV})"
        )
    function = given["function"] if given["function"] is not None else os.environ.get(SIGNALS_ENV)
    if function is not None and function.strip():
        return environment(os.environ, **given), True
    options = {k: v for k, v in given.items() if k != "function"}
    environment({**os.environ, SIGNALS_ENV: "unset"}, **options)  # checked, then dropped
    print(
        f"ddb-capacity-instrument: warning: no signals function (--function or "
        f"{SIGNALS_ENV}): the program runs without the hook",
        file=sys.stderr,
    )
    return dict(os.environ), False


def is_python(command: Sequence[str]) -> bool:
    """Whether ``command`` runs Python, which the hook can be loaded into: a Python
    interpreter, a script whose first two lines name one (a ``#!`` line, or pip's ``/bin/sh``
    launcher for a long path), or either after ``env`` and its options. Unknown (not found,
    not readable) counts as Python: the note it saves is only advice."""
    words = list(command)
    while words and Path(words[0]).name == "env":  # env [-i] [NAME=value ...] program
        words = words[1:]
        while words and (words[0].startswith("-") or "=" in words[0]):
            words = words[1:]
    if not words:
        return True
    program = words[0]
    if Path(program).name.lower().startswith(("python", "pypy")):
        return True
    found = shutil.which(program)
    if found is None:
        return True
    try:
        with open(found, "rb") as handle:  # noqa: PTH123 (a binary's first lines)
            head = handle.readline(512) + handle.readline(512)
    except OSError:
        return True
    return head.startswith(b"#!") and b"python" in head.lower()


def main(argv: Sequence[str] | None = None) -> int:
    """The launcher: replaces itself with the command (exit status 2 for bad options, before
    the command starts); without a signals function it warns and runs the command
    unhooked."""
    parser = _parser()
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.print_usage(sys.stderr)
        print("ddb-capacity-instrument: error: no command given after --", file=sys.stderr)
        return 2
    given = {
        "function": args.function,
        "tables": args.tables,
        "interval": args.interval,
        "process": args.process,
        "mode": args.mode,
    }
    try:
        env, hooked = _launch_environment(given)
    except InstrumentError as exc:
        print(f"ddb-capacity-instrument: error: {exc}", file=sys.stderr)
        return 2
    if hooked and not is_python(command):
        print(
            f"ddb-capacity-instrument: note: {command[0]} is not Python: the hook loads only "
            "into the Python programs it starts",
            file=sys.stderr,
        )
    try:
        os.execvpe(command[0], command, env)  # noqa: S606 (the user's own command)
    except OSError as exc:
        print(f"ddb-capacity-instrument: error: {command[0]}: {exc.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
