"""Runs in: workstation (the `ddb-capacity` command).

``ddb-capacity advise``: the right bill for one table (or GSI) or every table of an account
and Region.

For each table it reads the CloudWatch history of the table and every GSI it has
(`simulator.backtest.history`, with the throttles by cause): billing mode is the
table's, so on-demand is weighed against the whole bill, GSIs included (with ``--index``,
one GSI alone). It chooses as ``tune`` does, by validation: ``tune``'s candidates and
on-demand placed on the history under an ensemble (`simulator.tune.place_split`),
each family fitted on the earlier half and the fitted candidates compared on the later half
(`simulator.tune.validate`) by tune's rule, with every option's dollars and refused
units from the later half scaled to a month of 730 hours, the reason and the code. The
table class is advised on the table's size (`size_of`: DescribeTable's ``TableSizeBytes``
and each GSI's ``IndexSizeBytes``, untrusted: a value missing, negative or not a number
leaves the size unknown, and then no class is advised, and the advice says why) and the
recommendation's dollars (`simulator.tune.class_advice`).

With ``processes`` above 1, tables are advised in that many processes at once (each
process makes its own clients, [`boto3_clients`][]), the progress counting the tables
done and the results in the order the tables were given. With ``Setup.current``, each
table's current settings are read and placed as well ([`fleet_current`][]), for the
fleet report's savings.

Every table is its own fault domain: a table whose history cannot be read (access denied,
throttled, deleted meanwhile, no traffic recorded, a malformed answer) is reported as failed
with the reason, and the others go on. What AWS returns is untrusted: table names are
checked before use and shown with control characters escaped, error messages are cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ddb_capacity_runtime.core.names import is_table_name
from ddb_capacity_runtime.core.tables import table_class as table_class
from ddb_capacity_runtime.core.validators import is_number, is_region

from .fleet_current import Current, current_figures, read_current
from .reserve import Setup as ReserveSetup
from .reserve import TableHours, left_out, plan_table
from .simulator.backtest import describe, history
from .simulator.candidates import (
    CANDIDATES,
    MONTH_HOURS,
    MONTH_MINUTES,
    Candidate,
    Rule,
    Tuning,
    compared_only,
    scaled,
    tried,
)
from .simulator.params import ModelParams
from .simulator.policies import DEFAULT_TICK_MINUTES
from .simulator.prices import Prices
from .simulator.progress import Progress, step
from .simulator.table_class import STANDARD, class_lines
from .simulator.text import counted, fixed_width
from .simulator.trace import Key, Trace
from .simulator.tune import validate, validation_split
from .simulator.tune_options import MAX_SIZE_GB
from .simulator.tune_runs import place_split
from .simulator.tune_words import terms
from .tool_errors import AdviseError as AdviseError
from .tool_errors import printable, reason_of

__all__ = [
    "MONTH_HOURS",
    "AdviseError",
    "Advice",
    "Clients",
    "Failure",
    "Replication",
    "Setup",
    "Size",
    "advise",
    "advise_one",
    "advise_trace",
    "boto3_clients",
    "as_json",
    "list_tables",
    "size_of",
    "replication",
    "table_size",
    "text",
]

MAX_PAGES = 1_000
"""ListTables pages read at most (100 names each): far beyond any account's table quota."""
MAX_REPLICAS = 50
"""Replica Regions kept at most from one DescribeTable answer (more than AWS has)."""
IDLE = "no consumed capacity or throttles"
"""How the reason of a table without traffic begins (it is idle, not broken)."""
SHOWN = 300
"""An error message from AWS is cut to this many characters."""
BYTES_PER_GB = 2**30
"""A GB of storage, in bytes."""


@dataclass(frozen=True)
class Setup:
    """What every table is advised with: the window, the ensemble's settings on top of
    ``params``, the candidates, the prices and the rule that chooses."""

    days: int
    end: datetime | None
    settings_of: Callable[[Trace], list[ModelParams]]
    params: ModelParams
    candidates: Sequence[str] = CANDIDATES
    prices: Prices | None = None
    tick: int = DEFAULT_TICK_MINUTES
    workers: int | None = None
    rule: Rule = Rule()
    current: bool = False
    """also read each table's current settings and place them (`fleet_current`)"""
    reserve_hours: bool = False
    """also run each table's recommendation over its whole history for the fleet's
    reservation plan (`reserve.plan_table`)"""


Source = Callable[[str, "str | None", Setup], tuple[Trace, Current]]
"""Where a table's history and current settings come from in place of CloudWatch, DynamoDB and
Application Auto Scaling: ``source(table, index, setup)`` (the fleet benchmark's synthetic
tables)."""


@dataclass(frozen=True)
class Clients:
    """The clients one process advises with (or a `Source` of histories)."""

    cloudwatch: Any
    dynamodb: Any
    autoscaling: Any = None
    source: Source | None = None


def boto3_clients(region: str | None = None) -> Clients:
    """CloudWatch, DynamoDB and Application Auto Scaling clients, from the environment's
    credentials, of ``region`` (default: the environment's) (module level, so that a process
    of the pool can make its own)."""
    import boto3

    return Clients(
        boto3.client("cloudwatch", region_name=region),
        boto3.client("dynamodb", region_name=region),
        boto3.client("application-autoscaling", region_name=region),
    )


@dataclass(frozen=True)
class Advice:
    """One table's advice: the tuning of its history with every option scaled to a month."""

    table: str
    index: str | None
    minutes: int
    tuning: Tuning
    notes: str = ""
    current: Current | None = None
    """the current settings (None: not read) and their figures a month (None: unknown)"""
    current_figures: Candidate | None = None
    hours: TableHours | None = None
    """the table's hours under its recommendation, for the reservation plan (None: not
    asked for)"""
    unsized: str = ""
    """why no table class is advised (the table's size is unknown); empty when one is"""

    def as_json(self) -> dict[str, Any]:
        t = self.tuning
        return {
            "table": self.table,
            "index": self.index,
            "status": "advised",
            "history_minutes": self.minutes,
            "recommended": t.recommended.policy,
            "summary": t.summary,
            "reason": t.reason,
            "warnings": list(t.warnings),
            "validation": t.validation,
            "options": [
                {
                    "policy": c.policy,
                    "usd_per_month": round(c.cost, 2),
                    "refused_per_month": round(c.refused),
                    "usd_per_month_spread": c.cost_usd.as_json(),
                    "refused_per_month_spread": c.throttled_requests.as_json(),
                    "one_time_usd": None if c.once_usd is None else round(c.once_usd, 2),
                    "functions_usd_per_month": round(c.running_usd, 2),
                    "frontier": c.frontier,
                    "recommended": c is t.recommended,
                    "compared_only": compared_only(c),
                    "on_demand_windows": c.as_json()["on_demand_windows"],
                }
                for c in _by_cost(t.candidates)
            ],
            "on_demand": t.on_demand,
            "code": t.code,
            "notes": self.notes,
            "table_class": None if t.table_class is None else t.table_class.as_json(),
            **({} if self.current is None else {"current": self.current_json()}),
        }

    def current_json(self) -> dict[str, Any]:
        """The current settings: their label and figures a month, or why they are unknown."""
        assert self.current is not None
        figures = self.current_figures
        return {
            "policy": self.current.label,
            "usd_per_month": None if figures is None else round(figures.cost, 2),
            "refused_per_month": None if figures is None else round(figures.refused),
            "reason": shown(self.current.reason),
        }


@dataclass(frozen=True)
class Failure:
    """A table that could not be advised, and why."""

    table: str
    index: str | None
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {"table": self.table, "index": self.index, "status": "failed", "reason": self.reason}


def shown(text: str, limit: int = SHOWN) -> str:
    """``text`` safe to print: control characters escaped, cut to ``limit`` characters."""
    safe = printable(text)
    return safe if len(safe) <= limit else safe[:limit] + "..."


def list_tables(dynamodb: Any) -> list[str]:
    """Every table name of the account and Region (ListTables, every page). A page that
    repeats its token or an answer not shaped as documented raises [`AdviseError`][]; names
    are returned as given (each is checked when advised)."""
    names: list[Any] = []
    token: str | None = None
    for _ in range(MAX_PAGES):
        page = dynamodb.list_tables(**({"ExclusiveStartTableName": token} if token else {}))
        listed = page.get("TableNames", []) if isinstance(page, dict) else None
        if not isinstance(listed, list):
            raise AdviseError("ListTables: the answer has no list of TableNames")
        names += listed
        following = page.get("LastEvaluatedTableName")
        if not following:
            return list(dict.fromkeys(n if isinstance(n, str) else repr(n) for n in names))
        if following == token or not isinstance(following, str):
            raise AdviseError(
                f"ListTables: the page token {shown(repr(following))} does not move on"
            )
        token = following
    raise AdviseError(f"ListTables: more than {MAX_PAGES} pages")


@dataclass(frozen=True)
class Replication:
    """What DescribeTable says of a table's replicas: a global table's replica ``regions``
    (this one's among them), and ``unknown`` saying why it could not all be read. A table
    whose answer could not be read is taken for a replica (`replicated`): its write units are
    never reserved on a guess."""

    regions: tuple[str, ...] = ()
    unknown: str = ""

    @property
    def replicated(self) -> bool:
        """A global table's replica, or possibly one: its writes are not reservable."""
        return bool(self.regions or self.unknown)


@dataclass(frozen=True)
class Size:
    """A table's stored size: ``gb``, or None and ``unknown`` saying why."""

    gb: float | None
    unknown: str = ""
    replication: Replication = Replication()
    """Whether it is a global table's replica (`replication`)."""
    table_class: str | None = STANDARD
    """Its table class (`table_class`): None when DescribeTable's answer does not say
    soundly."""


def table_size(description: Any) -> Size:
    """The size DescribeTable's answer gives a table: its ``TableSizeBytes`` plus each GSI's
    ``IndexSizeBytes`` (stored, and billed, in the table's class), in GB. Untrusted: a value
    missing, not a number (text, a bool, NaN, infinity) or negative, or a total above
    `simulator.tune.MAX_SIZE_GB`, leaves the size unknown, saying which."""
    table = description if isinstance(description, dict) else {}
    gsis = table.get("GlobalSecondaryIndexes", [])
    if not isinstance(gsis, list):
        return Size(None, "DescribeTable's GlobalSecondaryIndexes is not a list")
    parts = [("TableSizeBytes", table.get("TableSizeBytes"))]
    for gsi in (g if isinstance(g, dict) else {} for g in gsis):
        name = shown(str(gsi.get("IndexName")), 60)
        parts.append((f"IndexSizeBytes of GSI {name}", gsi.get("IndexSizeBytes")))
    total = 0.0
    for name, value in parts:
        size = _bytes(value)
        if size is None:
            got = "missing" if value is None else shown(repr(value), 40)
            return Size(None, f"DescribeTable's {name} is {got}: expected a number of bytes >= 0")
        total += size
    if total / BYTES_PER_GB > MAX_SIZE_GB:
        return Size(None, f"DescribeTable gives {total:,.0f} bytes, above {MAX_SIZE_GB:,.0f} GB")
    return Size(total / BYTES_PER_GB)


def _bytes(value: object) -> float | None:
    """``value`` as a number of bytes: a finite number >= 0 (not a bool), else None."""
    return float(value) if is_number(value, 0) else None


def replication(description: Any) -> Replication:
    """Whether DescribeTable's answer (untrusted) is a global table's replica's: a table of
    one Region has no ``Replicas``, or none in it. Any other ``Replicas`` is a global
    table's: its Regions are those named as a Region is (at most `MAX_REPLICAS`), and what
    cannot be read (not a list, an entry without a Region's name, not an answer at all) is
    ``unknown``, saying what."""
    if not isinstance(description, dict):
        return Replication(unknown="DescribeTable's answer is not an object")
    replicas = description.get("Replicas")
    if replicas is None or replicas == []:
        return Replication()
    if not isinstance(replicas, list):
        return Replication(
            unknown=f"DescribeTable's Replicas is {shown(repr(replicas), 40)}: expected a list"
        )
    found = [r.get("RegionName") if isinstance(r, dict) else None for r in replicas]
    named = [r for r in found if is_region(r)]
    regions = tuple(sorted(set(named)))[:MAX_REPLICAS]
    unnamed = len(found) - len(named)
    unknown = f"{unnamed} of its {len(found)} Replicas without a Region's name" if unnamed else ""
    return Replication(regions, unknown)


def class_note(named: str | None) -> str:
    """What a table's notes say of its class where reserved capacity does not cover it
    (nothing for the Standard class)."""
    if named == STANDARD:
        return ""
    note = (
        "a Standard-Infrequent Access table: reserved capacity covers the Standard class "
        "only, so the reservation is planned on none of its units, billed at that class's price"
    )
    if named is None:
        return f"{note}; taken for one as DescribeTable's TableClassSummary could not be read"
    return note


WHOLE_TABLE_CLASS = "the table class is the whole table's: advise the table without --index"
"""Why one GSI advised alone gets no table class."""


def size_of(description: Any, index: str | None) -> Size:
    """The size (`table_size`) and `replication` DescribeTable's answer gives; the size
    unknown for one GSI alone (``index``: the class is the whole table's)."""
    if index is not None:
        return Size(None, WHOLE_TABLE_CLASS)
    return replace(
        table_size(description),
        replication=replication(description),
        table_class=table_class(description),
    )


def advise_one(
    cloudwatch: Any,
    dynamodb: Any,
    table: str,
    index: str | None,
    setup: Setup,
    autoscaling: Any = None,
    progress: Progress | None = None,
) -> Advice | Failure:
    """One table (or GSI): its history and size (`size_of`, from the one DescribeTable
    the history reads its GSIs from), the candidates on it and the recommendation (and,
    with ``setup.current``, its current settings' figures); a [`Failure`][] with the
    reason when any of it fails (its size aside: unknown, it only leaves the table class
    unadvised). Progress on ``progress``, a step a run (`tune_runs.place`)."""
    if not is_table_name(table):
        return Failure(table, index, "not a DynamoDB table name (3-255 of a-z A-Z 0-9 _ . -)")
    try:
        description = describe(dynamodb, table)
        trace = history(
            cloudwatch,
            dynamodb,
            table,
            index,
            setup.days,
            setup.end,
            setup.params.units_per_request,
            with_indexes=index is None,
            description=description,
        )
    except Exception as exc:  # a fault domain: whatever went wrong, the others go on
        return Failure(table, index, shown(reason_of(exc)))
    max_capacity = setup.params.max_capacity
    return advise_trace(
        trace,
        table,
        index,
        setup,
        lambda keys: read_current(autoscaling, table, description, keys, max_capacity),
        size_of(description, index),
        progress,
    )


def idle(trace: Trace) -> bool:
    """Whether ``trace`` shows no demand at all: nothing a policy could be judged on."""
    return not any(v > 0 for series in trace.demand.values() for v in series)


def idle_reason(days: int, what: str, before: str | None = None) -> str:
    """Why a table whose history is `idle` over ``days`` days (with ``before``, a time given
    to ``--score-from``: over its minutes before it, those a choice is made on) gets nothing
    to ``what``."""
    part = (
        ""
        if before is None
        else f" before --score-from {before}, the minutes the choice is made on"
    )
    return (
        f"{IDLE} in {counted(days, 'day')} of CloudWatch history{part}: idle, on-demand without "
        f"traffic, or its metrics are not readable; nothing to {what}"
    )


def advise_trace(
    trace: Trace,
    table: str,
    index: str | None,
    setup: Setup,
    current: Callable[[list[Key]], Current],
    size: Size = Size(None, "its size was not read"),
    progress: Progress | None = None,
) -> Advice | Failure:
    """The candidates on ``trace`` (the history of ``table``) and the recommendation, and
    the table class for its ``size`` (none when the size is unknown: the notes say why);
    with ``setup.current``, the figures of the settings ``current(keys)`` says the table
    has. Progress on ``progress``, a step a run."""
    if idle(trace):
        return Failure(table, index, idle_reason(setup.days, "compare"))
    settings = setup.settings_of(trace)
    names = tried(setup.candidates, settings[0])
    split = validation_split(trace)
    early, later = place_split(
        trace, names, settings, setup.prices, setup.tick, setup.workers, split, progress, "advise"
    )
    tuning = validate(early, later, setup.rule, trace, settings[0], split, size.gb, setup.prices)
    scale = MONTH_MINUTES / (trace.minutes - split)
    unsized = "" if size.gb is not None else size.unknown
    unadvised = f"no table class advised: {unsized}" if unsized else ""
    classed = class_note(size.table_class) if index is None else ""
    said = (_notes(trace), unadvised, replicated(size.replication), classed)
    notes = "; ".join(n for n in said if n)
    advice = Advice(table, index, trace.minutes, tuning, notes, unsized=unsized)
    if setup.reserve_hours:
        hours = left_out(
            _hours(trace, table, tuning.recommended, setup),
            setup.prices or Prices(),
            infrequent=bool(classed),
            replicated=size.replication.replicated,
        )
        advice = replace(advice, hours=hours)
    if not setup.current:
        return advice
    now = current(list(trace.demand))
    try:
        figures = current_figures(
            now, trace, later, settings, setup.prices, setup.tick, setup.workers, split or None
        )
    except Exception as exc:  # settings the simulator cannot run are unknown, not a failure
        now, figures = Current({}, f"{now.label}: {reason_of(exc)}"), None
    return replace(
        advice, current=now, current_figures=None if figures is None else scaled(figures, scale)
    )


def _hours(trace: Trace, table: str, pick: Candidate, setup: Setup) -> TableHours:
    """``trace``'s hours under ``pick``'s policy over the whole history (the reservation
    plan's input; the policy is its own ``current``, so it runs once), declared windows at
    the pick's hours."""
    policy = pick.policy
    recommended = ReserveSetup(
        current=policy,
        policy=policy,
        params=setup.params,
        prices=setup.prices or Prices(),
        tick=setup.tick,
        hours={policy: pick.hours} if pick.hours else {},
    )
    return replace(plan_table(trace, trace.minutes, recommended), name=table)


def replicated(replicas: Replication) -> str:
    """How a global table's writes are billed, for its notes (nothing for other tables), and
    what of its replicas could not be read."""
    known = (
        f"a global table replicated in {', '.join(replicas.regions)}: these figures are this "
        "Region's replica (advise each replica with --region); every write is replicated to "
        "each replica, whose write capacity is billed in its own Region as replicated write "
        "capacity, which reserved capacity does not cover"
        if replicas.regions
        else ""
    )
    unknown = (
        f"whether it is a global table's replica is not known ({replicas.unknown}): its write "
        "units are left out of the reservation, as a replica's are"
        if replicas.unknown
        else ""
    )
    return "; ".join(n for n in (known, unknown) if n)


def _notes(trace: Trace) -> str:
    """The trace's notes, and, when it holds GSIs, what their figures and the code cover."""
    gsis = sorted({k[0] for k in trace.demand if k[0] is not None})
    if not gsis or not any(k[0] is None for k in trace.demand):  # no GSI, or one alone
        return trace.notes
    return (
        f"{trace.notes}; the figures are the table's and its GSIs' ({', '.join(gsis)}) "
        "together, the code sets the table's own range: advise each GSI with --index for its own"
    )


def advise(
    clients: Callable[[], Clients],
    tables: Sequence[tuple[str, str | None]],
    setup: Setup,
    progress: Progress | None = None,
    processes: int = 1,
) -> list[Advice | Failure]:
    """Each ``(table, index)`` ([`advise_one`][]), in turn or in ``processes`` processes,
    each with the clients ``clients()`` makes; progress on ``progress``, a step a table (a
    run, for one table); results in the order of ``tables``. A table whose advice raises,
    or whose process dies, is a [`Failure`][] with the reason; the others go on."""
    if processes > 1 and len(tables) > 1:
        return _in_parallel(clients, tables, setup, progress, min(processes, len(tables)))
    made = clients()
    if len(tables) == 1:
        return [_guarded(made, *tables[0], setup, progress)]
    out: list[Advice | Failure] = []
    for n, (table, index) in enumerate(tables):
        _bar(progress, n, len(tables), table)
        out.append(_guarded(made, table, index, setup))
    _bar(progress, len(tables), len(tables), "")
    return out


def _guarded(
    made: Clients, table: str, index: str | None, setup: Setup, progress: Progress | None = None
) -> Advice | Failure:
    try:
        if made.source is not None:
            trace, now = made.source(table, index, setup)
            return advise_trace(trace, table, index, setup, lambda keys: now, progress=progress)
        return advise_one(
            made.cloudwatch, made.dynamodb, table, index, setup, made.autoscaling, progress
        )
    except Exception as exc:  # a fault domain: whatever went wrong, the others go on
        return Failure(table, index, shown(reason_of(exc)))


_made: list[Clients] = []
"""The clients of this process of the pool (set by `_start`)."""


def _start(clients: Callable[[], Clients]) -> None:
    _made[:] = [clients()]


def _advise_in_pool(table: str, index: str | None, setup: Setup) -> Advice | Failure:
    return _guarded(_made[0], table, index, setup)


def _in_parallel(
    clients: Callable[[], Clients],
    tables: Sequence[tuple[str, str | None]],
    setup: Setup,
    progress: Progress | None,
    processes: int,
) -> list[Advice | Failure]:
    """The tables in a pool of ``processes``. A process that dies breaks the pool and every
    job in it: the tables not done yet go to a new pool of the same size, once; after a
    second death, each goes to a pool of its own, so a table that kills its process fails
    alone."""
    out: dict[int, Advice | Failure] = {}
    _bar(progress, 0, len(tables), "")
    pending = list(range(len(tables)))
    for size in (processes, processes, 1):
        if not pending:
            break
        groups = [pending] if size > 1 else [[n] for n in pending]
        pending = [n for g in groups for n in _pool(clients, tables, setup, g, size, out, progress)]
    return [out[n] for n in range(len(tables))]


def _pool(
    clients: Callable[[], Clients],
    tables: Sequence[tuple[str, str | None]],
    setup: Setup,
    which: list[int],
    processes: int,
    out: dict[int, Advice | Failure],
    progress: Progress | None,
) -> list[int]:
    """The tables ``which`` in one pool, into ``out``; returns those a broken pool ended
    (a pool of one: none, its table fails with the reason)."""
    broken: list[int] = []
    with ProcessPoolExecutor(processes, initializer=_start, initargs=(clients,)) as pool:
        jobs = {pool.submit(_advise_in_pool, *tables[n], setup): n for n in which}
        for job in as_completed(jobs):
            n = jobs[job]
            try:
                out[n] = job.result()
            except BrokenProcessPool as exc:
                if processes > 1:
                    broken.append(n)
                else:
                    out[n] = Failure(*tables[n], shown(f"its process died: {exc}"))
            except Exception as exc:  # could not start: this one fails
                out[n] = Failure(*tables[n], shown(reason_of(exc)))
            _bar(progress, len(out), len(tables), tables[n][0])
    return sorted(broken)


def _bar(progress: Progress | None, done: int, total: int, table: str) -> None:
    """Progress after ``done`` of ``total`` tables; ``table`` the one begun or done."""
    step(progress, "advise", done, total, "tables", shown(table, 40))


def _by_cost(candidates: Sequence[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (c.cost, c.refused))


def _where(r: Advice | Failure) -> str:
    return shown(r.table) + (f" / {shown(r.index)}" if r.index else "")


def text(results: Sequence[Advice | Failure], heading: str) -> str:
    """The options of every table advised (cheapest first, the recommendation marked,
    every column labelled), then per table its warnings, the recommendation in one
    sentence, the reason and the code to paste; a line for each term shown; then the
    tables that failed and why."""
    rows = [("table", "option", "$ / month", "refused units / month", "note")]
    per_table = []
    for r in results:
        if isinstance(r, Failure):
            continue
        t = r.tuning
        for n, c in enumerate(_by_cost(t.candidates)):
            rows.append((_where(r) if n == 0 else "", c.policy, *_figures(c), _mark(c, t)))
        per_table += [
            "",
            *t.warnings,
            f"{_where(r)}: {t.summary}",
            f"  why: {t.reason}",
            *(f"  {line}" for line in _class_lines(r)),
            f"  code to paste (CDK, Python) for {_where(r)}:",
            *(f"    {line}" for line in t.code.splitlines()),
        ]
    failed = [r for r in results if isinstance(r, Failure)]
    lines = [heading, ""]
    if len(rows) > 1:
        advised = [r for r in results if isinstance(r, Advice)]
        lines += [*fixed_width(rows), *per_table, "", "what the terms mean:"]
        lines += terms(advised[0].tuning)
    lines.append("")
    lines.append(f"advised {len(results) - len(failed)} of {len(results)}; failed {len(failed)}")
    lines += [f"  failed: {_where(f)}: {shown(f.reason)}" for f in failed]
    return "\n".join(lines)


def _class_lines(r: Advice) -> list[str]:
    """The table-class block (`simulator.tune.class_lines`), or why there is none."""
    if r.tuning.table_class is None:
        return [f"table class: not advised: {r.unsized or 'the table size is unknown'}"]
    return class_lines(r.tuning.table_class)


def _figures(c: Candidate) -> tuple[str, str]:
    """A candidate's cost and refused units a month: median, and the ensemble's range (a
    negative rounding residue of refused units shown as 0)."""
    cost, refused = c.cost_usd, c.throttled_requests
    low, median = max(refused.min, 0.0), max(refused.median, 0.0)
    return (
        f"{cost.median:,.2f} ({cost.min:,.2f}-{cost.max:,.2f})",
        f"{median:,.0f} ({low:,.0f}-{refused.max:,.0f})",
    )


def _mark(c: Candidate, t: Tuning) -> str:
    if c is t.recommended:
        return "<- recommended"
    if c.once_usd is None:
        return "unpriced pre-warming"
    return "compared only" if compared_only(c) else ""


def as_json(results: Sequence[Advice | Failure], **about: Any) -> dict[str, Any]:
    """``{**about, "month_hours", "tables": [...], "failed"}``."""
    return {
        **about,
        "month_hours": MONTH_HOURS,
        "tables": [r.as_json() for r in results],
        "failed": sum(isinstance(r, Failure) for r in results),
    }
