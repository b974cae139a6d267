"""Runs in: workstation (the `ddb-capacity` command).

``ddb-capacity reserve``'s options and its run: the fleet's traces (``--trace`` files, or
every table's CloudWatch history with ``--all-tables``), checked before any work, planned by
[`reserve`][ddb_capacity_tools.reserve], and written as words, JSON or a page.

    ddb-capacity reserve (--trace FILE.csv [--trace FILE.csv ...] | --all-tables [--days N]
                         [--end ISO-8601]) [--score-from ISO-8601] [--current P] [--policy P]
                         [--recommended REPORT.json] [--candidate P ...] [--term 1y|3y|both]
                         [--price NAME=VALUE ...] [--no-savings-plan]
                         [--processes N] [--json] [--html FILE.html]
                         [--progress auto|bar|lines|none] [--quiet]
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from ddb_capacity_runtime.core.names import is_table_name

from . import advise as advise_module
from . import json_files, page, reserve, reserve_words
from .page.reserve_page import reserve_page
from .simulator.backtest import MAX_DAYS, check_days, describe, history, history_end
from .simulator.billing import BILLING_HELP, DEFAULT_BASIS
from .simulator.candidates import CANDIDATE_HELP, CANDIDATES, check_candidate, spec_of
from .simulator.params import ModelParams
from .simulator.policies import PolicyError, parse
from .simulator.prices import TERMS, Prices
from .simulator.progress import add_progress_option, progress_of
from .simulator.text import counted
from .simulator.trace import Trace, TraceError, read_csv
from .tool_errors import option_named, printable, reason_of, whole

__all__ = [
    "DEFAULT_DAYS",
    "REPLICA_NOTE",
    "add_parser",
    "replica_note",
    "unreservable_left_out",
    "run",
]

DEFAULT_DAYS = 14
"""Days of CloudWatch history ``--all-tables`` reads unless told."""
MAX_PROCESSES = 64
PROVISIONED = ("stock", "autopilot", "throttle-aware", "scheduled", "fixed")
"""The policy kinds ``--current`` takes: a past bill made by provisioned capacity."""


def add_parser(sub: Any) -> None:
    """``reserve``'s subcommand and its options."""
    rs = sub.add_parser(
        "reserve",
        help="plan reserved capacity for a fleet of tables, with each table's recommended "
        "policy in the loop",
    )
    _input_options(rs)
    _plan_options(rs)
    rs.add_argument("--json", action="store_true", help="print one JSON object")
    rs.add_argument(
        "--html", metavar="FILE.html", help="also write a page: the fleet's hours and the plan"
    )
    add_progress_option(rs)


def _input_options(rs: argparse.ArgumentParser) -> None:
    """Where the fleet's history comes from, and its planning and scored parts."""
    where = rs.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--trace",
        action="append",
        metavar="FILE.csv",
        help="one table's trace (as for simulate); repeatable, one per table, every one over "
        "the same minutes",
    )
    where.add_argument(
        "--all-tables",
        action="store_true",
        help="every table of the account and Region, from its CloudWatch history",
    )
    rs.add_argument(
        "--days", type=whole, metavar="N", help=f"1 to {MAX_DAYS} (default {DEFAULT_DAYS})"
    )
    rs.add_argument("--end", metavar="ISO-8601", help="end of the history (default: now)")
    rs.add_argument(
        "--score-from",
        metavar="ISO-8601",
        help="plan on the minutes before this time, score the plan on the rest (default: plan "
        "on every minute, score none)",
    )


def _plan_options(rs: argparse.ArgumentParser) -> None:
    """The policies, the term, the prices and the processes."""
    rs.add_argument(
        "--current",
        default="stock:70",
        metavar="P",
        help="the provisioned policy taken to have made the past bill, every table's (the "
        "tables' own settings are not read; default stock:70)",
    )
    rs.add_argument(
        "--policy",
        metavar="P",
        help=f"every table's policy ({CANDIDATE_HELP}); default: each table's recommendation by "
        "tune on the planning part",
    )
    rs.add_argument(
        "--recommended",
        metavar="REPORT.json",
        help="a fleet report's report.json (advise --report, FleetAdvisor): each table it "
        "advised runs its recommendation, no tune of its own; the others are tuned",
    )
    rs.add_argument(
        "--candidate",
        action="append",
        metavar="P",
        help="a policy tune tries (repeatable); default: tune's own",
    )
    rs.add_argument(
        "--term",
        default="1y",
        metavar="1y|3y|both",
        help="the reservation's term; both: the cheaper of the two (default 1y, offered in "
        "every Region)",
    )
    rs.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a price: " + ", ".join(f.name for f in fields(Prices)),
    )
    rs.add_argument(
        "--billing",
        default=DEFAULT_BASIS,
        metavar="hourly-max|per-minute",
        help=BILLING_HELP,
    )
    rs.add_argument(
        "--no-savings-plan",
        action="store_true",
        help="plan reserved capacity alone (default: a Database Savings Plan's hourly "
        "commitment is planned beside it)",
    )
    rs.add_argument(
        "--processes",
        type=whole,
        metavar="N",
        help=f"tables planned at once, 1 to {MAX_PROCESSES}; default: the CPU count",
    )


def _setup(args: argparse.Namespace) -> reserve.Setup:
    """The options that need no trace, checked."""
    params = ModelParams(billing=args.billing).validate(flags=True)
    if args.term not in (*TERMS, "both"):
        raise reserve.ReserveError(
            f"--term: got {args.term!r}; expected 1y, 3y or both (the terms AWS offers)"
        )
    prices = Prices().overridden(args.price)
    current = parse(args.current, params.max_capacity)
    if current.kind not in PROVISIONED:
        raise PolicyError(
            f"--current: got {args.current!r}; expected a provisioned policy (stock:T, "
            "autopilot..., throttle-aware..., fixed:N): a reservation covers provisioned units"
        )
    if args.policy is not None:
        check_candidate(args.policy, params.max_capacity, "--policy")
    for c in args.candidate or []:
        check_candidate(c, params.max_capacity)
    if args.processes is not None and not 1 <= args.processes <= MAX_PROCESSES:
        raise reserve.ReserveError(
            f"--processes: got {args.processes}; expected a whole number from 1 to {MAX_PROCESSES}"
        )
    return reserve.Setup(
        current=args.current,
        policy=args.policy,
        policies=_recommended(args.recommended) if args.recommended else {},
        candidates=tuple(args.candidate or CANDIDATES),
        params=params,
        prices=prices,
        savings_plan=not args.no_savings_plan,
    )


MAX_REPORT_BYTES = 64 * 1024 * 1024
"""The largest report ``--recommended`` reads."""


def _recommended(path: str) -> dict[str, str]:
    """Each advised table's recommendation in the fleet report at ``path`` (untrusted: a row
    whose name is not a table name, or whose policy the simulator cannot run, is left out,
    and its table is tuned)."""
    option = f"--recommended: {path!r}"
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_REPORT_BYTES + 1)
        doc = json_files.loads(raw.decode()) if len(raw) <= MAX_REPORT_BYTES else None
    except json_files.NestedJSONError as exc:
        raise reserve.ReserveError(
            f"{option}: {exc} (a report.json with a list of tables)"
        ) from None
    except ValueError:
        doc = None
    except OSError as exc:
        raise reserve.ReserveError(f"{option}: {exc.strerror or exc}") from None
    rows = doc.get("tables") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise reserve.ReserveError(
            f"{option}: not a fleet report; expected a report.json (at most "
            f"{MAX_REPORT_BYTES // 2**20} MiB) with a list of tables"
        )
    out: dict[str, str] = {}
    for row in rows:
        if not isinstance(row, dict) or row.get("status") != "advised" or row.get("index"):
            continue
        name, policy = row.get("table"), row.get("recommended")
        if not isinstance(name, str) or not is_table_name(name) or not isinstance(policy, str):
            continue
        try:
            spec_of(policy, ModelParams().max_capacity, "recommended")
        except PolicyError:
            continue
        out[name] = policy
    return out


def _traces(args: argparse.Namespace, err: TextIO) -> tuple[list[Trace], list[str]]:
    """The fleet's traces and their labels (file names, or table names), and the tables
    whose history could not be read (named on ``err``)."""
    if args.trace:
        if args.days is not None or args.end is not None:
            raise reserve.ReserveError(
                f"--{'days' if args.days is not None else 'end'}: applies to --all-tables "
                "only (a --trace file holds its own minutes)"
            )
        with option_named("--trace"):
            traces = [
                replace(read_csv(path), name=printable(Path(path).stem)) for path in args.trace
            ]
        if len(set(args.trace)) != len(args.trace):
            twice = next(p for p in args.trace if args.trace.count(p) > 1)
            raise reserve.ReserveError(
                f"--trace: got {twice!r} twice; expected each table's trace once"
            )
        reserve.check_fleet(traces, args.trace)
        return traces, [printable(path) for path in args.trace]
    return _cloudwatch(args, err)


def _cloudwatch(args: argparse.Namespace, err: TextIO) -> tuple[list[Trace], list[str]]:
    """Every table's history (its GSIs' with it) over one window; a table that cannot be
    read is named on ``err`` and left out (the plan then reserves for the others only)."""
    days = check_days(DEFAULT_DAYS if args.days is None else args.days)
    end = history_end(_time("--end", args.end) if args.end else None)
    made = advise_module.boto3_clients()
    traces, labels, failed = [], [], []
    for name in advise_module.list_tables(made.dynamodb):
        if not is_table_name(name):
            failed.append((name, "not a DynamoDB table name"))
            continue
        try:
            description = describe(made.dynamodb, name)
            trace = history(
                made.cloudwatch,
                made.dynamodb,
                name,
                None,
                days,
                end,
                with_indexes=True,
                description=description,
            )
            note = replica_note(advise_module.replication(description))
            if note:
                args.replicas[name] = note
            classed = advise_module.class_note(advise_module.table_class(description))
            if classed:
                args.classes[name] = classed
        except Exception as exc:  # a fault domain: the others are planned
            failed.append((name, advise_module.shown(reason_of(exc))))
            continue
        traces.append(replace(trace, name=name))
        labels.append(name)
    for name, why in failed:
        err.write(f"reserve: {advise_module.shown(name)}: left out: {why}\n")
    if not traces:
        raise reserve.ReserveError("--all-tables: no table's history could be read")
    args.failed = [name for name, _ in failed]
    return traces, labels


REPLICA_NOTE = (
    "a global table's replica: its write units are replicated writes, billed at the list "
    "price and never covered by reserved capacity, so the plan reserves none for them"
)


def replica_note(replicas: advise_module.Replication) -> str:
    """What a table's warnings say of its replicas: `REPLICA_NOTE` for a global table's
    replica, also why when its ``Replicas`` could not all be read (then it is taken for
    one); nothing for a table of one Region."""
    if not replicas.replicated:
        return ""
    if not replicas.unknown:
        return REPLICA_NOTE
    return (
        f"{REPLICA_NOTE}; taken for a replica as what DescribeTable says of its replicas "
        f"could not all be read: {replicas.unknown}"
    )


def unreservable_left_out(
    tables: list[reserve.TableHours],
    replicas: Mapping[str, str],
    prices: Prices,
    classes: Mapping[str, str] | None = None,
) -> list[reserve.TableHours]:
    """``tables``, each of ``replicas`` (a table's name, what its warnings say: `replica_note`)
    with its writes at the list price and out of the plan (`reserve.replicated_writes`),
    and each of ``classes`` (a Standard-Infrequent Access table's name, what its warnings
    say: ``advise.class_note``) with all its units out of it (`reserve.infrequent_access`)."""
    out = []
    for t in tables:
        said = [n[t.name] for n in (classes or {}, replicas) if t.name in n]
        unreserved = reserve.left_out(
            t, prices, infrequent=t.name in (classes or {}), replicated=t.name in replicas
        )
        out.append(replace(unreserved, warnings=(*t.warnings, *said)))
    return out


def _time(option: str, text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise TraceError(f"{option}: got {text!r}; expected an ISO-8601 time") from None


def run(
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    score_from: Callable[[str | None, Trace], int | None],
) -> int:
    """Plan and write; exit status 1 when a table of ``--all-tables`` was left out."""
    setup = _setup(args)
    terms = list(TERMS) if args.term == "both" else [args.term]
    if args.html:
        page.check_path(args.html)
    args.failed, args.replicas, args.classes = [], {}, {}
    traces, _ = _traces(args, err)
    given = score_from(args.score_from, traces[0])
    split = traces[0].minutes if given is None else given
    reserve.check_split(split, traces[0].minutes, given is not None)
    processes = args.processes or os.cpu_count() or 1
    progress = progress_of(args.progress, args.quiet, err)
    tables = reserve.plan_tables(traces, split, setup, processes, progress)
    tables = unreservable_left_out(tables, args.replicas, setup.prices, args.classes)
    plan = reserve.plan_fleet(tables, terms, setup)
    policies = _policies_words(setup, [t.name for t in traces], args.recommended)
    about = _about(traces[0], split, given is not None, setup, args.term, policies)
    if args.json:
        out.write(json.dumps(reserve.as_json(plan, about)) + "\n")
    else:
        out.write(reserve_words.text(plan, about) + "\n")
    if args.html:
        written = page.write(args.html, reserve_page(plan, traces[0], split, about))
        err.write(f"page written to {printable(written)}\n")
    return 1 if args.failed else 0


def _policies_words(setup: reserve.Setup, names: list[str], report: str | None) -> str:
    """Where the run's policies came from, for the heading: ``--policy``'s for every
    table, else the fleet report's recommendation (``--recommended``) for the tables it
    advised and tune's on the planning part for the others; and the past bill's."""
    tuned = "tune's recommendation on the planning part"
    if setup.policy:
        words = f"every table on {setup.policy}"
    elif report is None:
        words = f"each table on {tuned}"
    else:
        given = sum(name in setup.policies for name in names)
        others = len(names) - given
        words = (
            f"{given} of {counted(len(names), 'table')} on the "
            f"recommendation of the fleet report {printable(report)}"
            + (f", the other{'s' if others > 1 else ''} on {tuned}" if others else "")
        )
    return f"{words}; the past bill: every table on --current {setup.current}"


def _about(
    trace: Trace, split: int, scored: bool, setup: reserve.Setup, term: str, policies: str
) -> dict[str, Any]:
    def iso(minute: int) -> str:
        return f"{trace.time(minute):%Y-%m-%dT%H:%M}Z"

    heading = (
        f"reserve: planned on {iso(0)} to {iso(split - 1)} ({counted(split, 'minute')})"
        + (
            f", scored on {iso(split)} to {iso(trace.minutes - 1)} "
            f"({counted(trace.minutes - split, 'minute')})"
            if scored
            else ", not scored (no --score-from)"
        )
        + f"; {policies}; term {term}; billing basis {setup.params.billing}"
    )
    return {
        "heading": heading,
        "planning": {"from": iso(0), "minutes": split},
        "scored": {"from": iso(split), "minutes": trace.minutes - split} if scored else None,
        "current": setup.current,
        "policy": setup.policy,
        "term_asked": term,
        "billing_basis": setup.params.billing,
    }
