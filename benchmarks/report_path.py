"""A fast-path report's way through the signals function: modules entered, phases, calls.

Starts a moto server (the table and its scalable target) and dynalite (the state store,
whose conditional writes are atomic), both on 127.0.0.1 on free ports, and sends two
reports through `ddb_capacity_runtime.fast_path.surge_raise.take_report` (what the signals
handler runs): the first raises a surge, the second renews it. While each is taken, a
profile hook follows the run-time package, and prints:

- ``entries``: each change of the innermost package frame's module (by a call or a
  return), how many modules, how many entries into a module entered before;
- ``calls``: the calls from one package module into another, counted the same way;
- ``phases``: the report's AWS calls as ``read`` or ``write`` and the signals function's
  calls into the decision's module (`core.surge`) as ``decide``, in order, consecutive
  ones of a kind once (``-v``: each call, and the whole way);
- the AWS calls by operation.

Both servers are stopped at the end.

Usage:
    .venv/bin/python -m benchmarks.report_path [-v]
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from types import FrameType
from typing import Any

from ddb_capacity_runtime.aws.clients import Clients
from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.names import resource_id, scalable_dimension
from ddb_capacity_runtime.core.surge import UNBOUNDED
from ddb_capacity_runtime.core.surge_report import DimensionReport, Report
from ddb_capacity_runtime.fast_path.surge_raise import take_report
from ddb_capacity_runtime.fast_path.surge_settings import SurgeSettings
from ddb_capacity_runtime.requests.broker import BrokerConfig
from ddb_capacity_tools.local_aws import client, create_store_table, dynalite_server, moto_server

PACKAGE = "ddb_capacity_runtime."
TABLE = "report-path"
STORE = "report-path-store"


#: The module that decides, and the one whose calls into it are the decision's.
DECIDES, SIGNALS = PACKAGE + "core.surge", PACKAGE + "fast_path.surge_raise"
#: The AWS operations that only read.
READS = ("Get", "Describe", "List", "Query", "Scan", "BatchGet")


@dataclass
class Way:
    """The modules of the run-time package entered, in order (``entries``: each change of
    the innermost package frame's module, by a call or a return; ``calls``: the calls from
    one package module into another), and the report's phases: ``read`` and ``write`` (its
    AWS calls), ``decide`` (the signals function's calls into the decision's module),
    consecutive ones of a kind counted once."""

    entries: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)

    def phase(self, kind: str, what: str) -> None:
        if not self.phases or self.phases[-1] != kind:
            self.phases.append(kind)
        self.steps.append(what)

    def aws_call(self, model: Any, **_: Any) -> None:
        self.phase("read" if model.name.startswith(READS) else "write", model.name)

    def hook(self, frame: FrameType, event: str, _arg: object) -> None:
        if event not in ("call", "return"):
            return
        if event == "call":
            self._call(frame)
        if event == "return":
            frame = frame.f_back  # type: ignore[assignment]
        while frame is not None and not frame.f_globals.get("__name__", "").startswith(PACKAGE):
            frame = frame.f_back  # type: ignore[assignment]
        if frame is None:
            return
        module = frame.f_globals["__name__"][len(PACKAGE) :]
        if not self.entries or self.entries[-1] != module:
            self.entries.append(module)

    def _call(self, frame: FrameType) -> None:
        callee = frame.f_globals.get("__name__", "")
        caller = frame.f_back
        if not callee.startswith(PACKAGE) or caller is None:
            return
        calling = caller.f_globals.get("__name__", "")
        if calling != callee:
            self.calls.append(callee[len(PACKAGE) :])
        if callee == DECIDES and calling == SIGNALS:
            self.phase("decide", frame.f_code.co_name)

    def summary(self) -> dict[str, Any]:
        return {"entries": _tally(self.entries), "calls": _tally(self.calls)}


def _tally(modules: list[str]) -> dict[str, Any]:
    """How many entries, into how many modules, how many of them into one entered before."""
    seen: set[str] = set()
    again = 0
    for module in modules:
        again += module in seen
        seen.add(module)
    return {
        "entries": len(modules),
        "modules": len(seen),
        "again": again,
        "per_module": Counter(modules).most_common(),
    }


def counted(clients: list[Any], ways: list[Way]) -> Counter[str]:
    """Count the ``clients``' calls by operation, and mark each as a phase of the last of
    ``ways``."""
    calls: Counter[str] = Counter()

    def seen(model: Any, **kw: Any) -> None:
        calls.update([model.name])
        if ways:
            ways[-1].aws_call(model)

    for c in clients:
        c.meta.events.register("before-call.*.*", seen)
    return calls


def traced(call: Callable[[], Any], ways: list[Way]) -> tuple[Any, Way]:
    way = Way()
    ways.append(way)
    sys.setprofile(way.hook)
    try:
        answer = call()
    finally:
        sys.setprofile(None)
    return answer, way


def world(moto: str, dynalite: str) -> tuple[Clients, HoldStore]:
    ddb = client(moto, "dynamodb")
    aas = client(moto, "application-autoscaling")
    clients = Clients(
        ddb, aas, client(moto, "cloudwatch"), client(moto, "resourcegroupstaggingapi")
    )
    ddb.create_table(
        TableName=TABLE,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 50, "WriteCapacityUnits": 100},
    )
    aas.register_scalable_target(
        ServiceNamespace="dynamodb",
        ResourceId=resource_id(TABLE, None),
        ScalableDimension=scalable_dimension(None, "write"),
        MinCapacity=100,
        MaxCapacity=10_000,
    )
    store_ddb = client(dynalite, "dynamodb")
    create_store_table(store_ddb, STORE)
    return clients, HoldStore(store_ddb, STORE)


def main() -> None:
    with moto_server() as moto, dynalite_server() as dynalite:
        clients, store = world(moto, dynalite)
        ways: list[Way] = []
        calls = counted([clients.dynamodb, clients.autoscaling, store.dynamodb], ways)
        scopes = BrokerConfig({TABLE: frozenset()})
        settings = SurgeSettings(scale=None, budget=UNBOUNDED)
        for name in ("raise", "renew"):
            calls.clear()
            dim = DimensionReport(None, "write", 3000.0, 3000, {})
            event = Report(TABLE, "p1", 10.0, time.time(), (dim,)).as_json()
            with contextlib.redirect_stdout(io.StringIO()):  # the EMF lines
                answer, way = traced(
                    partial(take_report, event, scopes, settings, clients=clients, store=store),
                    ways,
                )
            (row,) = answer["dimensions"]
            print(f"{name}: status {row['status']}")
            for kind, s in way.summary().items():
                print(
                    f"  {kind}: {s['entries']} module entries, {s['modules']} modules, "
                    f"{s['again']} into a module entered before"
                )
                print("    per module: " + ", ".join(f"{m} {n}" for m, n in s["per_module"]))
            if "-v" in sys.argv:
                print("  way: " + " > ".join(way.entries))
                print("  steps: " + " > ".join(way.steps))
            print(f"  phases: {len(way.phases)}: " + " > ".join(way.phases))
            print("  AWS calls: " + ", ".join(f"{k} {v}" for k, v in sorted(calls.items())))


if __name__ == "__main__":
    main()
