"""Runs in: workstation (the `ddb-capacity` command).

``ddb-capacity request`` and ``release``, run (their options are `cli_options`'s), and how
a refusal of the requests' API names the option it came from (`refusal_text`).

``--broker`` (default ``$CAPACITY_BROKER``) goes through the broker ``CapacityRequests``
deploys, which is all a worker granted with ``grant_request`` may do; ``--store`` acts
directly on the hold store and the table, for an administrator with the broker's rights.
A hold is ended early with the token its request printed; a broker needs it, direct mode
checks it when given.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from datetime import timedelta
from typing import TextIO

from ddb_capacity_runtime import requests
from ddb_capacity_runtime.aws.store import store_name
from ddb_capacity_runtime.core.errors import HoldStoreMissing, shown
from ddb_capacity_runtime.core.names import STORE_ENV
from ddb_capacity_runtime.requests.broker import BROKER_ENV
from ddb_capacity_runtime.requests.client import BROKER_MAX_WAIT, broker_name

from .tool_errors import RequestInputError

__all__ = ["REQUEST_FIELD", "refusal_text", "run"]


def _minutes(option: str, value: int, low: int, high: int, why: str = "") -> timedelta:
    if not low <= value <= high:
        raise RequestInputError(
            f"{option}: got {value}; expected whole minutes from {low} to {high}{why}"
        )
    return timedelta(minutes=value)


def _check_via(args: argparse.Namespace) -> None:
    """Refuse a request or release that names neither a broker nor a hold store, in its
    options or in the environment (the run-time reads ``$CAPACITY_BROKER``, then
    ``$CAPACITY_HOLDS_TABLE``), naming both ways."""
    expired = args.command == "release" and args.expired
    if args.store or os.environ.get(STORE_ENV):
        return
    if expired:
        raise RequestInputError(
            f"--store: got none, and {STORE_ENV} is not set; --expired ends holds directly: "
            f"expected --store NAME (the hold store table CapacityRequests made)"
        )
    if args.broker or os.environ.get(BROKER_ENV):
        return
    raise RequestInputError(
        f"--broker/--store: got neither, and neither {BROKER_ENV} nor {STORE_ENV} is set; "
        f"expected --broker NAME (the broker function CapacityRequests made) or --store NAME "
        f"(its hold store table, direct mode)"
    )


def run(args: argparse.Namespace, out: TextIO) -> int:
    """``request`` or ``release``: exit status 0; a refusal raises (`cli.main` says it), a
    hold store that is no table named by the option (or variable) that gave it."""
    try:
        return _request(args, out) if args.command == "request" else _release(args, out)
    except HoldStoreMissing as exc:
        option, name = ("--store", args.store) if args.store else (STORE_ENV, store_name(None))
        said = str(exc).removeprefix(f"hold store {name}: ")
        raise RequestInputError(f"{option}: got {shown(name)}; {said}") from None


def _request(args: argparse.Namespace, out: TextIO) -> int:
    _check_via(args)
    hold = _minutes("--hold", args.hold, 1, 1440)
    brokered = _brokered(args)
    most = int(BROKER_MAX_WAIT.total_seconds() // 60) if brokered else 1440
    why = " (a broker's request waits that long at most)" if brokered else ""
    timeout = _minutes("--timeout", args.timeout, 0, most, why)
    made = requests.request_capacity(
        args.table,
        read=args.read,
        write=args.write,
        index=args.index,
        hold=hold,
        timeout=timeout,
        store=args.store,
        broker=args.broker,
    )
    if args.json:
        out.write(json.dumps(made.as_json()) + "\n")
        return 0
    levels = ", ".join(f"{dim} >= {units:,}" for dim, units in made.levels.items())
    out.write(
        f"hold {made.id} on {made.table}{'/' + made.index if made.index else ''}: "
        f"{levels} until {made.expires:%Y-%m-%d %H:%M:%S} UTC\n"
        f"end it early with: ddb-capacity release --table {made.table} "
        # '=': a token made by an earlier version may begin with '-'
        f"--id {made.id} --token={made.token}"
        f"{' --store ' + args.store if args.store else ''}"
        f"{' --broker ' + args.broker if args.broker else ''}\n"
    )
    return 0


def _release(args: argparse.Namespace, out: TextIO) -> int:
    if args.expired and args.broker:
        raise RequestInputError(
            "--expired: got --broker too; the broker ends holds by id, and expired holds "
            "are ended by the restorer (or directly, with --store)"
        )
    _check_via(args)
    if not args.expired and args.token is None and _brokered(args):
        raise RequestInputError(
            f"--token: got none; a release through a broker (--broker, or ${BROKER_ENV}) "
            "ends a hold only with its release token: expected --token=TOKEN, as request "
            "printed it (or end it directly on the hold store with --store NAME)"
        )
    rows = (
        requests.restore_expired(args.table, store=args.store)
        if args.expired
        else requests.release_hold(
            args.table, args.id, token=args.token, store=args.store, broker=args.broker
        )
    )
    if args.json:
        out.write(json.dumps({"changes": rows}) + "\n")
        return 0
    for r in rows:
        where = "table" if r["index"] is None else f"index {r['index']}"
        out.write(
            f"{r['table']} {where} {r['dimension']} via {r['via']}: {r['from']:,} -> "
            f"{r['to']:,} ({r['status']})\n"
        )
    if not rows:
        out.write("nothing to end\n")
    return 0


def _brokered(args: argparse.Namespace) -> bool:
    """Whether the request or release goes through a broker, as the requests' API decides
    it: a broker named, or ``$CAPACITY_BROKER``, unless a store is."""
    return args.store is None and broker_name(args.broker) is not None


REQUEST_FIELD = re.compile(r"^(read and write|table|index|read|write|id|token|broker)(?=: got )")
"""A field the requests' API refuses by name, whose value is the option's as given: the
option of the same name on the command line (``write: got -5`` is ``--write: got -5``).
``hold`` and ``timeout`` are minutes here and timedeltas there: checked here first."""


def refusal_text(exc: Exception) -> str:
    """What ``exc`` says, a field of the requests' API named by its option
    (`REQUEST_FIELD`)."""
    if not isinstance(exc, requests.CapacityRequestError):
        return str(exc)
    return REQUEST_FIELD.sub(
        lambda m: "--read and --write" if m[1] == "read and write" else f"--{m[1]}",
        str(exc),
        count=1,
    )
