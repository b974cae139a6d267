"""Runs in: workstation (the `ddb-capacity` command).

The command line's parser (`build_parser`): every command, its options, their defaults and
help. What the options mean when run is `cli`.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable
from dataclasses import Field, fields
from typing import Any

from ddb_capacity_runtime.core.names import STORE_ENV
from ddb_capacity_runtime.requests.broker import BROKER_ENV

from . import flags_command, reserve_command
from .simulator import candidates as candidate_names
from .simulator import tune_options, tune_scored
from .simulator.backtest import MAX_DAYS
from .simulator.billing import BILLING_HELP
from .simulator.ensemble import ENSEMBLES
from .simulator.params import BOUNDS, FRACTIONAL, HUNDREDS, OFF, OPTIONAL, ModelParams, bound_text
from .simulator.policies import DEFAULT_TICK_MINUTES, SPEC_HELP
from .simulator.prices import Prices
from .simulator.progress import add_progress_option
from .simulator.run import DEFAULT_POLICIES
from .simulator.scenarios import SCENARIOS
from .tool_errors import OptionError as OptionError
from .tool_errors import RequestInputError as RequestInputError
from .tool_errors import whole

NOT_TUNE = ("--policy", "--schedule", "--chart")
"""simulate's and backtest's options that tune refuses (it tries --candidate policies)."""


PARAM = re.compile(r":param ([\w, ]+):(.*?)(?=:param |$)", re.DOTALL)
"""A ``:param name:`` (or ``:param a, b:``) of a docstring and its words."""
CODE_ONLY = re.compile(r" ?\(`[^`]+`\)| ?\(``[^`]+``\)")
"""A parenthesis that holds only a reference to the code (`` (`model`)``)."""
UNITS = {
    "minutes": "minutes",
    "seconds": "seconds",
    "gb": "GB",
    "units": "capacity units",
    "capacity": "capacity units",
}
"""A model field's unit, by the last word of its name (``update_minutes``)."""


def model_meanings() -> dict[str, str]:
    """Each model field's meaning in one line: the first sentence of its ``:param`` in
    `ModelParams`' docstring (the one description of the model, which the docs show too),
    without references to the code."""
    found: dict[str, str] = {}
    for names, words in PARAM.findall(ModelParams.__doc__ or ""):
        line = " ".join(words.split())
        first = re.match(r"(.+?)\.(?:\s|$)", line)
        meaning = CODE_ONLY.sub("", first.group(1) if first else line).replace("`", "")
        found.update((name.strip(), meaning) for name in names.split(","))
    return found


def model_help(f: Field[Any], meaning: str) -> str:
    """A model option's help: ``meaning`` (`model_meanings`), the field's range with its
    unit, its default (and what None means)."""
    lo, hi = BOUNDS[f.name]
    unit = UNITS.get(f.name.rsplit("_", 1)[-1], "")
    span = f"{bound_text(lo)} to {bound_text(hi)}"
    shown = meaning if span in meaning else "; ".join(filter(None, (meaning, span)))
    shown += f" {unit}" if unit and span not in meaning else ""
    if f.name in HUNDREDS:
        return (
            f"the Region's reserved {f.name.split('_')[1]} units, whole hundreds: "
            "capacity below them is charged nothing, and a +reserved policy never lowers "
            "the total below them; default 0, none (docs: Simulator, 'Reserved capacity')"
        )
    if f.name in OFF:
        return f"{shown}; default {f.default}; off: {OPTIONAL[f.name]}"
    if f.name in OPTIONAL:
        return f"{shown}; default: {OPTIONAL[f.name]}"
    return f"{shown}; default {f.default}"


def _model_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model (docs: Simulator, 'The model')")
    meanings = model_meanings()
    for f in fields(ModelParams):
        if f.name == "billing":  # the one field that is a word (checked by validate)
            group.add_argument(
                "--billing",
                dest="billing",
                default=f.default,
                metavar="hourly-max|per-minute",
                help=BILLING_HELP,
            )
            continue
        number = float if f.name in FRACTIONAL else whole
        group.add_argument(
            "--" + f.name.replace("_", "-"),
            dest=f.name,
            type=_or_off(number) if f.name in OFF else number,
            default=f.default,
            help=_literal(model_help(f, meanings.get(f.name, ""))),
        )


def _or_off(number: Callable[[str], Any]) -> Any:
    """An option's type that also takes ``off`` (None: see ``params.OPTIONAL``)."""

    def convert(text: str) -> Any:
        return None if text.strip().lower() == "off" else number(text)

    convert.__name__ = number.__name__  # argparse names it in "invalid float value"
    return convert


def _policy_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``simulate`` and ``backtest`` that ``tune`` has no use for."""
    parser.add_argument(
        "--policy",
        action="append",
        metavar="P",
        help=f"{SPEC_HELP}; repeatable. Default: "
        f"{', '.join(DEFAULT_POLICIES)} (+ scheduled with a schedule)",
    )
    parser.add_argument(
        "--schedule",
        metavar="FILE.json",
        help="schedule entries for the scheduled policy (docs: Simulator)",
    )
    parser.add_argument("--chart", metavar="FILE.png", help="write a PNG chart")


def _run_options(
    parser: argparse.ArgumentParser, json_shape: str = '{"policies": [...]}', long: bool = False
) -> None:
    """The options of the commands that run policies; ``long`` (tune, advise): with
    ``--progress``."""
    parser.add_argument(
        "--tick",
        type=whole,
        default=DEFAULT_TICK_MINUTES,
        metavar="MINUTES",
        help=f"the throttle-aware scaler's tick (default {DEFAULT_TICK_MINUTES})",
    )
    parser.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a list price: " + ", ".join(f.name for f in fields(Prices)),
    )
    parser.add_argument("--json", action="store_true", help=f"print one JSON object, {json_shape}")
    parser.add_argument(
        "--ensemble",
        metavar="NAME",
        help="also run every policy under each model setting of this set ("
        + ", ".join(ENSEMBLES)
        + ") and report min / median / max (docs: Simulator, 'Robustness')",
    )
    if long:
        add_progress_option(parser)
    else:
        parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--html",
        metavar="FILE.html",
        help="also write the answer as one self-contained page: charts, the frontier, the "
        "advice (with advise --all-tables: the fleet page, each table's page in tables/ "
        "beside it) (docs: Report pages)",
    )
    parser.add_argument(
        "--workers",
        type=whole,
        default=os.cpu_count() or 1,
        metavar="N",
        help="processes running policies (and ensemble settings) at once; default: the CPU "
        "count. On a terminal, simulate and backtest show a progress bar with 1 only; tune "
        "and advise show their progress (runs done, tables done) whatever the count",
    )
    _model_options(parser)


TUNE_DAYS = 14
"""Days of history ``tune --table`` reads unless told."""


def _history_options(parser: argparse.ArgumentParser, days: dict[str, Any]) -> None:
    """Where a table's CloudWatch history comes from (``--table`` is the caller's)."""
    parser.add_argument("--index", metavar="NAME", help="a global secondary index of the table")
    parser.add_argument(
        "--region",
        metavar="REGION",
        help="the Region whose history is read (a global table's replica: that replica's "
        "metrics and settings); default: the environment's (AWS_DEFAULT_REGION, else the "
        "profile's)",
    )
    parser.add_argument("--days", type=whole, metavar="N", **days)
    parser.add_argument(
        "--end",
        metavar="ISO-8601",
        help="end of the history, UTC unless an offset is given (default: now)",
    )


def _simulate_parsers(sub: Any) -> None:
    sim = sub.add_parser("simulate", help="replay a scenario or a CSV trace")
    source = sim.add_mutually_exclusive_group(required=True)
    source.add_argument("--scenario", metavar="NAME", help=", ".join(SCENARIOS))
    source.add_argument(
        "--trace",
        metavar="FILE.csv",
        help="timestamp,read,write rows: ISO-8601 UTC, 1 a minute, units/s",
    )
    sim.add_argument("--seed", type=whole, default=1, help="jitter seed of a scenario")
    bt = sub.add_parser("backtest", help="replay a table's CloudWatch history")
    bt.add_argument("--table", required=True, metavar="NAME")
    _history_options(bt, {"required": True, "help": "1 to 15"})
    for p in (sim, bt):
        p.add_argument(
            "--score-from",
            metavar="ISO-8601",
            help="count refusals and cost from this time on (a minute of the trace; UTC "
            "unless an offset is given); policies still run over every minute",
        )
        _policy_options(p)
        _run_options(p)


def _tune_parser(sub: Any) -> None:
    tn = sub.add_parser(
        "tune", help="find the settings that suit a table's traffic, under an ensemble"
    )
    where = tn.add_mutually_exclusive_group(required=True)
    where.add_argument("--trace", metavar="FILE.csv", help="a trace (as for simulate)")
    where.add_argument("--table", metavar="NAME", help="a table's CloudWatch history")
    _history_options(tn, {"help": f"1 to {MAX_DAYS} (default {TUNE_DAYS}; with --table)"})
    _choice_options(tn)
    tn.add_argument(
        "--score-from",
        metavar="ISO-8601",
        help="choose on the minutes before this time only (at least "
        f"{tune_scored.MIN_CHOICE_MINUTES:,} of them), then score the pick, every stock "
        "setting and on-demand on the minutes from it on (at least "
        f"{tune_scored.MIN_SCORED_MINUTES}), each run over the whole trace; say whether the "
        "pick held its "
        "rule there (UTC unless an offset is given; docs: Tune, 'Scoring the pick on the "
        "days after')",
    )
    tn.add_argument(
        "--no-prune",
        dest="prune",
        action="store_false",
        help="run every candidate under every model setting; by default a library candidate "
        "that another beats on both refusals and dollars in the first setting's run is not "
        "run under the others, and is shown as pruned (docs: Tune, 'Pruning')",
    )
    for option in NOT_TUNE:  # refused with a message naming --candidate, never ignored
        tn.add_argument(option, action="append", help=argparse.SUPPRESS)
    _run_options(
        tn,
        '{"ensemble", "candidates", "frontier", "recommended", "reason", "rule", '
        '"on_demand", "code", "summary", "validation", "warnings", "table_class", "scored", '
        '"billing_basis"}',
        long=True,
    )
    # the model's --table-size-gb also asks tune for the table class: read by _tune
    size = next(a for a in tn._actions if a.dest == "table_size_gb")
    size.type, size.default, size.metavar = None, None, "N"
    size.help = _literal(f"{tune_options.SIZE_HELP} (docs: Tune, 'Table class')")


def _choice_options(parser: argparse.ArgumentParser) -> None:
    """What tune and advise choose among, and by which rule."""
    parser.add_argument(
        "--candidate",
        action="append",
        metavar="P",
        help="a policy to try (repeatable); default: " + ", ".join(candidate_names.CANDIDATES),
    )
    parser.add_argument(
        "--refusal-tolerance",
        default=None,
        metavar="F",
        help=_literal(f"{tune_options.TOLERANCE_HELP}; default 0 (docs: Tune, 'The rule')"),
    )
    parser.add_argument(
        "--refusal-floor",
        default=None,
        metavar="F",
        help=_literal(
            f"{tune_options.FLOOR_HELP}; default {candidate_names.REFUSAL_FLOOR:.2%} "
            "(docs: Tune, 'The rule')"
        ),
    )
    parser.add_argument(
        "--refusal-price",
        default=None,
        metavar="USD",
        help=_literal(
            f"{tune_options.PRICE_HELP}; replaces the limit on refusals, so it takes neither "
            "--refusal-tolerance nor --refusal-floor (docs: Tune, 'The rule')"
        ),
    )


def _literal(text: str) -> str:
    """``text`` as argparse help: argparse formats help with %, so a % sign is doubled."""
    return text.replace("%", "%%")


def _advise_parser(sub: Any) -> None:
    ad = sub.add_parser(
        "advise",
        help="recommend one option (provisioned settings or on-demand) for a table or every "
        "table, from their CloudWatch history",
    )
    which = ad.add_mutually_exclusive_group(required=True)
    which.add_argument("--table", metavar="NAME", help="one table (or, with --index, a GSI)")
    which.add_argument(
        "--all-tables", action="store_true", help="every table of the account and Region"
    )
    _history_options(ad, {"help": f"1 to {MAX_DAYS} (default {TUNE_DAYS})"})
    _choice_options(ad)
    _run_options(
        ad,
        '{"ensemble", "days", "end", "billing_basis", "month_hours", "tables", "failed"}',
        long=True,
    )
    ad.add_argument(
        "--processes",
        type=whole,
        metavar="N",
        help=f"with --all-tables: tables advised at once, each in its own process, 1 to "
        f"{MAX_PROCESSES}; default: the CPU count. Each table then runs its policies in one "
        f"process unless --workers is given (docs: Advise, 'Many tables at once')",
    )
    ad.add_argument(
        "--report",
        metavar="DIR | s3://BUCKET/PREFIX",
        help="also write the fleet report (report.csv, report.json, report.html: each "
        "table's recommendation, its savings against the current settings and the refusals "
        "avoided) to a directory or an S3 prefix (docs: Fleet report)",
    )
    ad.set_defaults(workers=None)  # told apart from the default: see _advise_processes


def _request_parsers(sub: Any) -> None:
    rq = sub.add_parser(
        "request", help="raise a table's capacity for work about to start, and hold it"
    )
    rq.add_argument("--table", required=True, metavar="NAME")
    rq.add_argument("--index", metavar="NAME", help="a global secondary index of the table")
    for dim in ("read", "write"):
        rq.add_argument(
            f"--{dim}",
            type=whole,
            default=0,
            metavar="N",
            help=f"{dim} units per second on top of the current traffic",
        )
    rq.add_argument(
        "--hold",
        type=whole,
        default=15,
        metavar="MINUTES",
        help="how long the raise is held, 1 to 1440 (default 15)",
    )
    rq.add_argument(
        "--timeout",
        type=whole,
        default=10,
        metavar="MINUTES",
        help="how long to wait for the table to be ready (default 10)",
    )
    rq.add_argument("--json", action="store_true", help="print the hold as one JSON object")
    rl = sub.add_parser("release", help="end a capacity hold now, or every expired one")
    rl.add_argument("--table", required=True, metavar="NAME")
    for p in (rq, rl):
        via = p.add_mutually_exclusive_group()
        via.add_argument(
            "--broker",
            metavar="NAME",
            help=f"the broker function CapacityRequests made (default ${BROKER_ENV})",
        )
        via.add_argument(
            "--store",
            metavar="NAME",
            help="direct mode: the hold store table CapacityRequests made (default "
            f"${STORE_ENV} when no broker is named)",
        )
    which = rl.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", metavar="ID", help="the hold's id, as request printed it")
    rl.add_argument(
        "--token",
        metavar="TOKEN",
        help="the hold's release token, as request printed it: --token=TOKEN (needed "
        "through a broker)",
    )
    which.add_argument(
        "--expired", action="store_true", help="end every expired hold (what the restorer does)"
    )
    rl.add_argument("--json", action="store_true", help="print the changes as JSON")


def _local_parser(sub: Any) -> None:
    lc = sub.add_parser(
        "local",
        help="deploy your CDK app to a local moto server and run one scaler tick",
        description="Synthesize your CDK app with the pinned CDK CLI, deploy it to a moto "
        "server on 127.0.0.1 (stopped at the end), run one tick of each ThrottleAwareScaler "
        "with its deployed environment, and print the decisions.",
    )
    lc.add_argument(
        "--app",
        metavar="COMMAND",
        help='the command that runs your CDK app: ".venv/bin/python app.py" (default: the "app" of '
        "cdk.json in the current folder)",
    )
    lc.add_argument(
        "--stack",
        metavar="NAME",
        action="append",
        help="deploy this stack (and the stacks it depends on); repeatable (default: every one)",
    )
    lc.add_argument(
        "--out", metavar="DIR", help="write the cloud assembly here (default: a temporary folder)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ddb-capacity",
        description="DynamoDB provisioned capacity: backtest policies on a traffic trace, "
        "tune and advise a table's settings, plan reserved capacity, request capacity for "
        "work about to start, and try a CDK app's scaler locally.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sc = sub.add_parser("scenarios", help="list the built-in scenarios")
    sc.add_argument("--json", action="store_true")
    _simulate_parsers(sub)
    _tune_parser(sub)
    _advise_parser(sub)
    reserve_command.add_parser(sub)
    _request_parsers(sub)
    _local_parser(sub)
    flags_command.add_parser(sub)
    for command in sub.choices.values():  # an argument it does not know shows its own usage
        command.set_defaults(command_parser=command)
    return parser


MAX_PROCESSES = 64
"""``advise --processes``'s largest value."""
MAX_WORKERS = 64
"""``--workers``' largest value (simulate, backtest, tune and advise)."""
