"""Runs in: workstation (the `ddb-capacity` command).

``ddb-capacity``: the simulator, the backtester and capacity requests on the command line.

    ddb-capacity scenarios
    ddb-capacity simulate (--scenario NAME | --trace FILE.csv) [--policy P ...] [--json]
                          [--chart FILE.png] [--html FILE.html] [--score-from ISO-8601]
    ddb-capacity backtest --table NAME [--index NAME] --days N [--policy P ...] [--json]
                          [--chart FILE.png] [--html FILE.html] [--score-from ISO-8601]
    ddb-capacity request --table NAME [--index NAME] [--read N] [--write N]
                         [--hold MINUTES] [--timeout MINUTES] [--broker NAME | --store NAME]
                         [--json]
    ddb-capacity release --table NAME (--id ID [--token=TOKEN] | --expired)
                         [--broker NAME | --store NAME] [--json]
    ddb-capacity tune (--trace FILE.csv | --table NAME [--days N]) [--candidate P ...]
                      [--refusal-tolerance F] [--refusal-floor F] [--refusal-price USD]
                      [--table-size-gb N] [--ensemble NAME] [--score-from ISO-8601]
                      [--json] [--html FILE.html] [--progress auto|bar|lines|none]
    ddb-capacity advise (--table NAME [--index NAME] | --all-tables [--processes N]) [--days N]
                        [--candidate P ...] [--refusal-tolerance F] [--refusal-floor F]
                        [--refusal-price USD] [--json] [--report DIR | s3://BUCKET/PREFIX]
                        [--html FILE.html] [--progress auto|bar|lines|none]
    ddb-capacity reserve (--trace FILE.csv ... | --all-tables [--days N]) [--score-from ISO-8601]
                         [--current P] [--policy P] [--term 1y|3y|both] [--json] [--html FILE.html]
                         [--progress auto|bar|lines|none]
    ddb-capacity local [--app COMMAND] [--stack NAME ...] [--out DIR]
    ddb-capacity flags [--cdk-json PATH] [--check]

``local`` deploys your CDK app to a moto server on 127.0.0.1 and runs one scaler tick
(`ddb_capacity_tools.local`).

``tune``, ``advise`` and ``reserve`` show their progress on stderr as ``--progress`` says
(`simulator.progress`): by default a bar on a terminal, a line every 5 % elsewhere.

``flags`` merges the installed aws-cdk-lib's recommended feature flags into your app's
``cdk.json``, keeping the values you set (`flags_command`).

``tune --score-from T`` chooses on the minutes before ``T`` only, then scores the pick,
every stock setting and on-demand on the minutes from ``T`` on (`tune_scored`).

``request`` and ``release`` (through a broker, or directly on the hold store) are
`request_command`'s.

Exit status: 0 on success, 2 for bad input or a refused request (the message names the
option and the value), 1 when a request timed out (its hold is withdrawn), when advise
could not advise a table (the others are advised) or when ``flags --check`` finds a flag
missing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, fields
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TextIO

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, NoRegionError

from ddb_capacity_runtime.aws.clients import NO_REGION
from ddb_capacity_runtime.aws.error_codes import describe_error
from ddb_capacity_runtime.core.errors import CapacityRequestError, shown
from ddb_capacity_runtime.core.names import is_table_name
from ddb_capacity_runtime.core.settings import SETTINGS_BY_KEY
from ddb_capacity_runtime.core.validators import is_region

from . import advise as advise_module
from . import (
    flags_command,
    fleet,
    local,
    page,
    request_command,
    reserve,
    reserve_command,
    reserve_words,
)
from .cli_options import MAX_PROCESSES, MAX_WORKERS, NOT_TUNE, TUNE_DAYS, build_parser
from .simulator import (
    billing,
    chart,
    ensemble,
    report,
    schedules,
    tune_options,
    tune_scored,
    tune_words,
)
from .simulator import candidates as candidate_names
from .simulator import tune as tune_module
from .simulator.backtest import MAX_DAYS, check_days, history, history_end
from .simulator.chart import ChartError
from .simulator.ensemble import EnsembleError, run_ensemble, settings_of
from .simulator.params import ModelError, ModelParams
from .simulator.policies import PolicyError, Spec, parse
from .simulator.prices import PriceError, Prices
from .simulator.progress import progress_of
from .simulator.run import DEFAULT_POLICIES, simulate
from .simulator.scenarios import SCENARIOS, ScenarioError, scenario
from .simulator.schedules import ScheduleFileError
from .simulator.text import counted, span
from .simulator.trace import Trace, TraceError, cut, key_label, read_csv
from .tool_errors import OptionError as OptionError
from .tool_errors import RequestInputError as RequestInputError
from .tool_errors import option_named, printable

INPUT_ERRORS = (
    ChartError,
    EnsembleError,
    ModelError,
    PolicyError,
    PriceError,
    ScenarioError,
    ScheduleFileError,
    TraceError,
    tune_module.TuneError,
    advise_module.AdviseError,
    fleet.ReportError,
    page.HtmlError,
    reserve.ReserveError,
)


def _check_values(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse, for every option of the command that takes a value, ``--opt=--`` (argparse
    drops a lone ``--`` and stores an empty list) and a NUL byte (no file name, table name
    or time holds one), naming the option, the value and what it takes."""
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for action in subparsers.choices[args.command]._actions:
        if not action.option_strings or action.nargs == 0:
            continue
        value = getattr(args, action.dest, None)
        given = value if isinstance(action, argparse._AppendAction) else [value]
        for item in given or []:
            if item == [] or (isinstance(item, str) and "\0" in item):
                kind = getattr(action.type, "__name__", "")
                what = action.metavar or {"int": "a whole number", "float": "a number"}.get(
                    kind, "a value"
                )
                if action.help and action.help != argparse.SUPPRESS:
                    what += f" ({_literal_help(action.help)})"
                given_text = "'--'" if item == [] else repr(item)
                raise OptionError(
                    f"{action.option_strings[-1]}: got {given_text}; expected {what}"
                    + (", never a lone '--'" if item == [] else ", without a NUL byte")
                )


NAME_OPTIONS = {
    "table": "a table's name",
    "index": "a global secondary index's name",
    "store": "the hold store table's name",
}
"""The options that name a DynamoDB table or index (`_check_names`), and what each names."""


def _check_names(args: argparse.Namespace) -> None:
    """Refuse a table or index name DynamoDB would refuse (3 to 255 characters of a-z,
    A-Z, 0-9, ``_``, ``.`` and ``-``) before any AWS call, naming the option and the value:
    an AWS call would fail on something else first (a missing Region, say)."""
    for dest, what in NAME_OPTIONS.items():
        value = getattr(args, dest, None)
        if isinstance(value, str) and not is_table_name(value):
            raise OptionError(
                f"--{dest}: got {shown(value)}; expected {what}: 3 to 255 characters of "
                "a-z, A-Z, 0-9, '_', '.' and '-'"
            )


def _literal_help(text: str) -> str:
    """Help text as shown: argparse's ``%%`` is one ``%``."""
    return text.replace("%%", "%")


def _specs(args: argparse.Namespace, trace: Trace, params: ModelParams) -> list[Spec]:
    names = args.policy or [
        *DEFAULT_POLICIES,
        *(["scheduled"] if args.schedule or trace.schedule else []),
    ]
    return [_policy(n, params.max_capacity) for n in names]


def _policy(name: str, max_capacity: int) -> Spec:
    """``parse``, a tune candidate's suffix refused with how to run it here."""
    try:
        return parse(name, max_capacity)
    except PolicyError as exc:
        _, prewarmed = candidate_names.split_prewarm(name)
        if not prewarmed and not candidate_names.streamed(name):
            raise
        raise PolicyError(
            f"{exc}; a tune candidate's suffixes are the model's here: run the policy without "
            f"them, with --stream-seconds {candidate_names.STREAM_SECONDS} for "
            f"'{candidate_names.STREAM}', and --warm-read-units/--warm-write-units at the "
            f"high-water marks of the code tune printed for '{candidate_names.PREWARM}'"
        ) from None


def _trace(args: argparse.Namespace, params: ModelParams) -> Trace:
    """The scenario, the CSV trace (demand at most ``--max-capacity``) or the history."""
    if args.command == "simulate":
        if args.scenario is not None:
            return scenario(args.scenario, args.seed)
        with option_named("--trace"):
            return read_csv(args.trace, params.max_capacity)
    if args.command == "tune" and args.trace is not None:
        only_table = (
            ("--index", args.index),
            ("--days", args.days),
            ("--end", args.end),
            ("--region", args.region),
        )
        for option, value in only_table:
            if value is not None:
                raise TraceError(
                    f"{option}: got {str(value)!r}; it applies to --table only (a --trace "
                    f"brings its own times and dimensions)"
                )
        with option_named("--trace"):
            return read_csv(args.trace, params.max_capacity)
    end = _history_window(args)  # before any AWS client is made
    region = check_region(args.region)
    import boto3

    return history(
        boto3.client("cloudwatch", region_name=region),
        boto3.client("dynamodb", region_name=region),
        args.table,
        args.index,
        TUNE_DAYS if args.days is None else args.days,
        end,
        args.units_per_request,
    )


def check_region(region: str | None) -> str | None:
    """``--region`` checked: None (the environment's), or a Region's name."""
    if region is not None and not is_region(region):
        raise TraceError(
            f"--region: got {region[:60]!r}; expected a Region's name, such as eu-west-1"
        )
    return region


def _history_window(args: argparse.Namespace) -> datetime | None:
    """``--end`` as a time, checked with ``--days``: the whole window must lie within the
    days CloudWatch keeps 1-minute datapoints. None: the window ends now."""
    end = None
    if args.end:
        try:
            given = datetime.fromisoformat(args.end)
        except ValueError:
            raise TraceError(f"--end: got {args.end!r}; expected an ISO-8601 time") from None
        # a time without an offset is UTC, as every time this command prints
        end = history_end(given if given.tzinfo else given.replace(tzinfo=UTC))
    days = check_days(TUNE_DAYS if args.days is None else args.days)
    now = history_end(None)
    if end is not None:
        start = end - timedelta(days=days)
        if start < now - timedelta(days=MAX_DAYS):
            raise TraceError(
                f"--days: got {days} with --end {args.end}; that window starts at "
                f"{start:%Y-%m-%dT%H:%M}Z, before the {MAX_DAYS} days CloudWatch keeps "
                f"1-minute datapoints (from {now - timedelta(days=MAX_DAYS):%Y-%m-%dT%H:%M}Z): "
                f"give fewer --days or a later --end"
            )
    return end


def _rule(args: argparse.Namespace) -> candidate_names.Rule:
    """The rule tune and advise choose by, from ``--refusal-tolerance``,
    ``--refusal-floor`` and ``--refusal-price`` (which takes neither of the others)."""
    if args.refusal_price is not None:
        price = tune_options.refusal_price(args.refusal_price)  # a bad price is named first
        for option in ("--refusal-tolerance", "--refusal-floor"):
            given = getattr(args, option[2:].replace("-", "_"))
            if given is not None:
                raise tune_module.TuneError(
                    f"{option}: got {given!r} with --refusal-price {args.refusal_price}; the "
                    "price replaces the limit on refusals: give one or the other"
                )
        return candidate_names.Rule(price=price)
    tolerance = tune_options.refusal_tolerance(
        "0" if args.refusal_tolerance is None else args.refusal_tolerance
    )
    if args.refusal_floor is None:
        return candidate_names.Rule(tolerance)
    return candidate_names.Rule(tolerance, tune_options.refusal_floor(args.refusal_floor))


def _tuning_options(
    args: argparse.Namespace,
) -> tuple[candidate_names.Rule, ModelParams, Prices, str, list[str]]:
    """tune's and advise's options, checked before any input is read: the rule, the model,
    the prices, the ensemble's name and the candidates."""
    rule = _rule(args)
    params = ModelParams(**{f.name: getattr(args, f.name) for f in fields(ModelParams)})
    params.validate(flags=True)
    prices = Prices().overridden(args.price)
    name = args.ensemble or "plausible"
    settings_of(name, params)  # the name and its settings
    candidates = args.candidate or list(candidate_names.CANDIDATES)
    for c in candidates:
        candidate_names.check_candidate(c, params.max_capacity)
    if args.workers is not None:  # advise's default is told apart from a count given
        _check_count("--workers", args.workers, MAX_WORKERS)
    return rule, params, prices, name, candidates


def _tune(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    for option in NOT_TUNE:
        given = getattr(args, option[2:])
        if given:
            raise PolicyError(
                f"{option}: got {given[0]!r}; tune takes none: it tries the policies given "
                f"with --candidate P ({candidate_names.CANDIDATE_HELP}; repeatable)"
            )
    given = args.table_size_gb  # None when not given: no table-class advice
    size = None if given is None else tune_options.table_size_gb(given)
    args.table_size_gb = size or 0.0  # the partition model's, as for simulate
    rule, params, prices, name, candidates = _tuning_options(args)
    if args.html:
        page.check_path(args.html)  # before any work
    _check_score_from(args)  # before a table's history is read
    whole = _trace(args, params)
    with option_named("--trace" if args.trace else "--table", errors=(tune_module.TuneError,)):
        tune_module.check_length(whole)  # before any simulation
    score_from = _score_from(
        args.score_from, whole, tune_scored.MIN_CHOICE_MINUTES, tune_scored.MIN_SCORED_MINUTES
    )
    trace = whole if score_from is None else cut(whole, score_from)  # all the choice sees
    if args.table is not None and advise_module.idle(trace):  # before minutes of simulation
        days = TUNE_DAYS if args.days is None else args.days
        before = None if score_from is None else _iso(whole.time(score_from))
        why = advise_module.idle_reason(days, "tune", before)
        raise TraceError(f"--table: {args.table}: {why}")
    settings = settings_of(name, params, trace)
    progress = progress_of(args.progress, args.quiet, err)
    tuning = tune_module.tune(
        trace,
        settings,
        candidates,
        prices,
        args.tick,
        args.workers,
        rule,
        progress,
        size,
        prune=args.prune,
    )
    held = None
    if score_from is not None:
        held = tune_scored.score(
            whole, tuning, settings, score_from, prices, args.tick, args.workers, progress
        )
    if args.html:
        body = page.tune_page(tuning, trace, name, len(settings), held, params.billing)
        err.write(f"page written to {printable(page.write(args.html, body))}\n")
    if args.json:
        scored = None if held is None else held.as_json()
        doc = {"ensemble": name, **tuning.as_json(), "scored": scored}
        out.write(json.dumps({**doc, "billing_basis": params.billing}) + "\n")
    else:
        whole_minutes = None if score_from is None else whole.minutes
        out.write(tune_words.table(tuning, trace, name, len(settings), whole_minutes) + "\n")
        out.write(billing.basis_line(params.billing) + "\n")
        if held is not None:
            out.write("\n" + tune_scored.text(held, tuning) + "\n")
    return 0


def _check_count(option: str, count: int, most: int) -> None:
    """A count of processes (``--workers``, ``--processes``), refused outside 1 to ``most``."""
    if not 1 <= count <= most:
        raise PolicyError(f"{option}: got {count}; expected a whole number from 1 to {most}")


def _advise_processes(args: argparse.Namespace) -> tuple[int, int]:
    """``--processes`` and ``--workers``, checked: tables at once (1 with ``--table``) and
    each table's processes (default 1 when tables run in parallel, else the CPU count)."""
    cpus = os.cpu_count() or 1
    if args.processes is not None:
        if not args.all_tables:
            raise PolicyError(
                f"--processes: got {args.processes}; it applies to --all-tables only "
                f"(--table advises one table: --workers runs its policies in processes)"
            )
        _check_count("--processes", args.processes, MAX_PROCESSES)
    if args.workers is not None:
        _check_count("--workers", args.workers, MAX_WORKERS)
    processes = (cpus if args.processes is None else args.processes) if args.all_tables else 1
    workers = args.workers if args.workers is not None else 1 if processes > 1 else cpus
    return processes, workers


def _advise(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Exit status 1 when any table failed (the others are advised), else 0."""
    rule, params, prices, name, candidates = _tuning_options(args)
    if args.all_tables and args.index is not None:
        raise TraceError(
            f"--index: got {args.index!r}; it applies to --table only (--all-tables advises "
            f"each table itself)"
        )
    processes, workers = _advise_processes(args)
    days = check_days(TUNE_DAYS if args.days is None else args.days)
    # before any AWS client is made; one window for every table, now unless given
    end = _history_window(args) or history_end(None)
    report = fleet.destination(args.report) if args.report else None
    if args.html:
        page.check_path(args.html)  # before any AWS client is made
    clients = partial(advise_module.boto3_clients, check_region(args.region))
    made = clients()  # after every option is checked
    _check_credentials()  # before any table is begun: each would fail alike
    if report is not None:
        fleet.check_bucket(report, _s3_client)
    tables = (
        [(t, None) for t in advise_module.list_tables(made.dynamodb)]
        if args.all_tables
        else [(args.table, args.index)]
    )
    setup = advise_module.Setup(
        days,
        end,
        partial(settings_of, name, params),
        params,
        candidates,
        prices,
        args.tick,
        workers,
        rule,
        current=report is not None or args.html is not None,
        reserve_hours=args.all_tables,
    )
    progress = progress_of(args.progress, args.quiet, err)
    results = advise_module.advise(clients, tables, setup, progress, processes)
    about = {"ensemble": name, "days": days, "end": _iso(end), "billing_basis": params.billing}
    reservation = _reservation(results, prices) if args.all_tables else None
    _advise_output(args, out, results, about, reservation, len(settings_of(name, params)))
    if args.html or report is not None:
        _advise_files(args, report, results, about, reservation, out, err)
    return 1 if any(isinstance(r, advise_module.Failure) for r in results) else 0


def _check_credentials() -> None:
    """Raise botocore's ``NoCredentialsError`` (which `main` names, as for every command)
    when the default boto3 session, the one the clients were made from, has no credentials."""
    import boto3

    session = boto3.DEFAULT_SESSION or boto3.Session()
    if session.get_credentials() is None:
        raise NoCredentialsError


def _advise_output(
    args: argparse.Namespace,
    out: TextIO,
    results: Sequence[Any],
    about: dict[str, Any],
    reservation: dict[str, Any] | None,
    settings: int,
) -> None:
    """advise's answer on ``out``: one JSON object, or the words (with ``--all-tables``,
    the reservation plan after the tables)."""
    if args.json:
        doc = advise_module.as_json(results, **about)
        if args.all_tables:
            doc["reservation"] = reservation
        out.write(json.dumps(doc) + "\n")
        return
    heading = (
        f"advise: {counted(len(results), 'table')}, {counted(about['days'], 'day')} of "
        f"CloudWatch history to {about['end']}, ensemble {about['ensemble']} "
        f"({counted(settings, 'setting')}); each table's "
        f"options fitted on the earlier half of its history and chosen on the later half; "
        f"dollars and refused units per month ({advise_module.MONTH_HOURS} h) from the "
        f"later half, median (min-max over the ensemble), read + write; "
        f"{billing.basis_line(about['billing_basis'])}"
    )
    out.write(advise_module.text(results, heading) + "\n")
    if reservation is not None:
        out.write("\n" + reserve_words.summary_words(reservation) + "\n")


def _reservation(results: Sequence[Any], prices: Prices) -> dict[str, Any] | None:
    """The reservation plan (one year) on the advised tables' recommendations over their
    whole history (`reserve.summary`); None when no table was advised."""
    hours = [r.hours for r in results if getattr(r, "hours", None) is not None]
    if not hours:
        return None
    plan = reserve.plan_fleet(hours, ["1y"], reserve.Setup(prices=prices))
    return reserve.summary(plan)


def _advise_files(
    args: argparse.Namespace,
    where: fleet.Destination | None,
    results: Sequence[Any],
    about: dict[str, Any],
    reservation: dict[str, Any] | None,
    out: TextIO,
    err: TextIO,
) -> None:
    """advise's page (``--html``: one table's, or with ``--all-tables`` the fleet page and
    each table's page beside it) and report (``--report``, with those table pages). The
    fleet report is built once, and its page and the table pages rendered once, for both."""
    if args.html and not args.all_tables:
        _advise_page(args.html, page.table_page(results[0], about), {}, err)
    if not args.all_tables and where is None:
        return
    built = fleet.build(results, about, reservation=reservation)
    fleet_html = page.fleet_page(built)
    pages = page.table_pages(results, about) if args.all_tables else {}
    if args.html and args.all_tables:
        _advise_page(args.html, fleet_html, pages, err)
    if where is not None:  # last: a report that cannot be written loses nothing else
        out.flush()
        fleet.write(built, fleet_html, where, made_s3=_s3_client, pages=pages)


def _advise_page(path: str, body: str, pages: Mapping[str, str], err: TextIO) -> None:
    """The page at ``path`` (one table's, or the fleet page), and ``pages`` (each table's
    page by its name under ``tables/``) beside it."""
    written = page.write(path, body)
    for name, table_body in pages.items():
        (written.parent / name).parent.mkdir(exist_ok=True)
        page.write(written.parent / name, table_body)
    err.write(f"page written to {printable(written)}\n")


def _s3_client() -> Any:
    import boto3

    return boto3.client("s3")


def _iso(moment: datetime) -> str:
    return f"{moment:%Y-%m-%dT%H:%M}Z"


def _score_from(text: str | None, trace: Trace, before: int = 0, after: int = 1) -> int | None:
    """``--score-from`` as the trace minute it falls in (None: not given); a time without
    an offset is UTC. Refused outside the trace's minutes, and where it leaves fewer than
    ``before`` minutes before it or ``after`` from it on (tune's: what it chooses on and
    what it scores on)."""
    if text is None:
        return None
    first, last = before, trace.minutes - after
    why = (
        "the trace's minutes"
        if (before, after) == (0, 1)
        else f"at least {span(before)} before it to choose on and {counted(after, 'minute')} "
        f"from it on to score on, of the trace's {trace.minutes:,} from {_iso(trace.start)}"
    )
    allowed = f"expected an ISO-8601 time from {_iso(trace.time(first))} to "
    allowed += f"{_iso(trace.time(last))} ({why})"
    if last < first:
        allowed = f"expected an ISO-8601 time that leaves {why}: this trace is too short"
    try:
        given = datetime.fromisoformat(text.strip())
        moment = given if given.tzinfo else given.replace(tzinfo=UTC)
        minute = (moment - trace.start) // timedelta(minutes=1)
    except (ValueError, OverflowError):
        raise TraceError(f"--score-from: got {text!r}; {allowed}") from None
    if not first <= minute <= last:
        raise TraceError(f"--score-from: got {text!r}; {allowed}")
    return int(minute)


def _check_score_from(args: argparse.Namespace) -> None:
    """A history's ``--score-from`` (backtest's, ``tune --table``'s) refused before the
    history is read when it is no ISO-8601 time (its minutes are known once it is read)."""
    if args.table is None or args.score_from is None:
        return
    try:
        datetime.fromisoformat(args.score_from.strip())
    except ValueError:
        raise TraceError(
            f"--score-from: got {args.score_from!r}; expected an ISO-8601 time within the "
            f"history (--days to --end)"
        ) from None


def _check_run(args: argparse.Namespace, params: ModelParams) -> None:
    """simulate's and backtest's options that need no trace, checked before one is read
    (a backtest's needs AWS: a bad option is named before a missing Region is)."""
    low, high = SETTINGS_BY_KEY["tick_minutes"].range  # the scaler's own
    if not low <= args.tick <= high:
        raise PolicyError(
            f"--tick: got {args.tick}; expected whole minutes from {low:g} to {high:g}"
        )
    _check_count("--workers", args.workers, MAX_WORKERS)
    for name in args.policy or []:
        _policy(name, params.max_capacity)
    if args.ensemble is not None:
        settings_of(args.ensemble, params)
    if args.command == "backtest":  # a trace's: its minutes, once read
        _check_score_from(args)
    if args.chart:
        chart.check(args.chart)  # before any work: a missing matplotlib is known now
    if args.html:
        page.check_path(args.html)


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    params = ModelParams(**{f.name: getattr(args, f.name) for f in fields(ModelParams)})
    params.validate(flags=True)
    prices = Prices().overridden(args.price)
    _check_run(args, params)
    with option_named("--schedule"):
        entries = schedules.load(args.schedule) if args.schedule is not None else None
    trace = _trace(args, params)
    params = params.for_trace(trace)  # the hot key: the trace's own unless given
    specs = _specs(args, trace, params)
    settings = settings_of(args.ensemble, params) if args.ensemble else []
    score_from = _score_from(args.score_from, trace)
    # a --schedule file's entries are checked as the scheduled policy is made: an error in
    # one names the option and the file too
    with (
        option_named("--schedule", args.schedule, (ScheduleFileError,))
        if args.schedule is not None
        else nullcontext()
    ):
        results = simulate(
            trace,
            specs,
            params,
            prices,
            entries,
            args.tick,
            progress=None if args.quiet else err,
            workers=args.workers,
            score_from=score_from,
        )
        ensemble_args = (trace, specs, settings, prices, entries, args.tick, args.workers)
        spread = run_ensemble(*ensemble_args, score_from) if settings else []
    if args.json:
        doc = report.as_json(results, trace, params, prices)
        if score_from is not None:
            doc["score_from"] = {"minute": score_from, "time": _iso(trace.time(score_from))}
        if settings:
            doc["ensemble"] = {
                "name": args.ensemble,
                "settings": [asdict(p) for p in settings],
                "policies": [r.as_json() for r in spread],
            }
        out.write(json.dumps(doc) + "\n")
    else:
        if score_from is not None:
            out.write(
                f"scored from {_iso(trace.time(score_from))} (minute {score_from:,}): "
                f"refusals and cost count from then on\n\n"
            )
        out.write(report.table(results, trace) + "\n")
        out.write(billing.basis_line(params.billing) + "\n")
        if settings:
            out.write("\n" + ensemble.table(spread, args.ensemble, len(settings)) + "\n")
    about = (run_note(results, trace, params), run_title(args.command, params))
    _pictures(args, err, results, trace, score_from or 0, spread, about)
    return 0


def run_note(results: Sequence[Any], trace: Trace, params: Any) -> str:
    """What a run did, for its page's header: its policies, and the signals they saw."""
    policies = list(dict.fromkeys(str(r.policy) for r in results))
    words = [f"Policies: {', '.join(policies)}."]
    basis = getattr(params, "billing", None)
    if billing.is_basis(basis):
        words.append(billing.basis_line(basis))
    seconds = getattr(params, "stream_seconds", None)
    if seconds:
        words.append(
            f"The library's policies also read the table's stream as a signal, seen {seconds} "
            "s late (the fast path's stream reader)."
        )
    if "scheduled" in policies and trace.schedule:
        words.append(f"scheduled follows the scenario's {len(trace.schedule)} scheduled actions.")
    return " ".join(words)


def run_title(command: str, params: Any) -> str:
    """What a run's page calls it after its trace's name: a simulation or a backtest, and
    the signal its policies read beside CloudWatch, if any."""
    words = "backtest" if command == "backtest" else "simulation"
    if getattr(params, "stream_seconds", None):
        words += " with the table's stream as a signal"
    return words


def _pictures(
    args: argparse.Namespace,
    err: TextIO,
    results: Sequence[Any],
    trace: Trace,
    score_from: int,
    spread: Sequence[Any],
    about: tuple[str, str] = ("", "simulation"),
) -> None:
    """The run's ``--chart`` PNG and ``--html`` page (``about``: what the run did, and what
    its page calls it), when asked for."""
    if args.chart:
        written = (
            chart.render_ensemble(spread, trace, args.ensemble, args.chart)
            if spread
            else chart.render(results, trace, args.chart)
        )
        err.write(f"chart written to {printable(written)}\n")
    if args.html:
        note, title = about
        body = page.run_page(results, trace, score_from, spread, args.ensemble or "", note, title)
        err.write(f"page written to {printable(page.write(args.html, body))}\n")


def _scenarios(args: argparse.Namespace, out: TextIO) -> int:
    rows: list[dict[str, Any]] = []
    for s in SCENARIOS.values():
        trace = s.build(1)
        rows.append(
            {
                "name": s.name,
                "description": s.description,
                "minutes": trace.minutes,
                "dimensions": [key_label(k) for k in trace.demand],
                "has_schedule": bool(trace.schedule),
            }
        )
    if args.json:
        out.write(json.dumps({"scenarios": rows}) + "\n")
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        out.write(
            f"{r['name']:<{width}}  {r['description']} ({counted(r['minutes'], 'minute')}"
            f"{', with a schedule' if r['has_schedule'] else ''})\n"
        )
    return 0


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named by the command's own parser, which shows that command's usage
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        _check_values(parser, args)
        _check_names(args)
        if args.command == "scenarios":
            return _scenarios(args, out)
        if args.command in ("request", "release"):
            return request_command.run(args, out)
        if args.command == "tune":
            return _tune(args, out, err)
        if args.command == "advise":
            return _advise(args, out, err)
        if args.command == "reserve":
            return reserve_command.run(args, out, err, _score_from)
        if args.command == "flags":
            return flags_command.run(args, out)
        if args.command == "local":
            return local.run_local(args.app, args.stack or [], args.out, out)
        return _run(args, out, err)
    except TimeoutError as exc:
        err.write(f"ddb-capacity: timed out: {exc}\n")
        return 1
    except (
        *INPUT_ERRORS,
        RequestInputError,
        OptionError,
        local.LocalError,
        flags_command.FlagsError,
        CapacityRequestError,
    ) as exc:
        err.write(f"ddb-capacity: error: {request_command.refusal_text(exc)}\n")
        return 2
    except NoRegionError:
        err.write(f"ddb-capacity: error: {NO_REGION}\n")
        return 2
    except NoCredentialsError:
        err.write(
            "ddb-capacity: error: no AWS credentials: set AWS_PROFILE, or "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n"
        )
        return 2
    except (BotoCoreError, ClientError) as exc:
        err.write(f"ddb-capacity: error: {describe_error(exc)}\n")
        return 2
    except OSError as exc:
        err.write(f"ddb-capacity: error: {printable(exc.filename or '')}: {exc.strerror or exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
