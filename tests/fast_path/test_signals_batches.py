"""Reports travel in batches at a bounded rate, whatever the number of tables: the client
hook's rounds (an injected client, every answer made up) and the signals function taking a
batch (tables and targets in moto, the state store in dynalite)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest

from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.report_batch import (
    MAX_BATCH_CHARS,
    MAX_BATCH_REPORTS,
    MAX_BATCHES_PER_ROUND,
    batch_json,
    batches,
    reports_of,
)
from ddb_capacity_runtime.core.surge import SurgeReportError
from ddb_capacity_runtime.core.surge_report import DimensionReport
from ddb_capacity_runtime.fast_path.hook import MAX_REPORTS_PER_ROUND, watch
from ddb_capacity_runtime.fast_path.signals_function import RESERVE_MS, take_reports
from ddb_capacity_runtime.fast_path.surge_settings import LEASE_WAIT_SECONDS, OUT_OF_TIME
from tests.support.moto_world import World
from tests.support.signals_batches import Clock
from tests.support.signals_hook import Capture, inject, once
from tests.support.surge_server import SETTINGS, a_table, counted, report, served, write
from tests.support.surge_server import prompt_store as prompt_store  # noqa: F401 (a fixture)
from tests.support.surge_server import world as world  # noqa: F401 (a fixture)


def busy(tables: int, *, throttled: set[int] | None = None) -> Any:
    """A client answering GetItem on any table with 1,000 units (each table's report due at
    once), and throttling, with a provisioned-throughput reason, the tables in
    ``throttled``."""
    client = once()
    names = {f"t{i}" for i in throttled or set()}

    def answer(_op: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if body["TableName"] in names:
            return 400, {
                "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                "message": "throttled",
                "ThrottlingReasons": [{"reason": "TableWriteProvisionedThroughputExceeded"}],
            }
        return 200, {"ConsumedCapacity": {"TableName": body["TableName"], "CapacityUnits": 1e2}}

    inject(client, answer)
    return client


def read_each(client: Any, tables: range) -> None:
    for t in tables:
        try:
            client.get_item(TableName=f"t{t}", Key={"pk": {"S": "a"}})
        except client.exceptions.ProvisionedThroughputExceededException:
            pass


def test_a_round_sends_a_bounded_number_of_batches_and_nothing_is_lost() -> None:
    # GIVEN a process that read 600 tables, each report due
    client = busy(600)
    capture = Capture()
    watcher = watch(client, send=capture, interval=60)
    read_each(client, range(600))
    # WHEN the sending thread's rounds run
    rounds = []
    for _ in range(4):
        before = len(capture.batches)
        watcher._round(every=False)
        rounds.append(capture.batches[before:])
    watcher.stop()
    # THEN each round sends at most its bound, in full batches, and the rest wait
    full = [MAX_BATCH_REPORTS] * MAX_BATCHES_PER_ROUND
    assert rounds[:3] == [full, full, full] and MAX_REPORTS_PER_ROUND == 200
    # AND every table's units were reported exactly once (the fourth round brings the first
    # round's rates back to zero)
    units: dict[str, float] = {}
    for r in capture.reports:
        units[r.table] = units.get(r.table, 0.0) + sum(d.units for d in r.dims)
    assert units == {f"t{i}": 1e2 for i in range(600)}
    assert len(capture.reports) == watcher.sent and watcher.failed_sends == 0


def test_a_throttled_table_goes_first_in_a_crowded_round() -> None:
    # GIVEN a process that read 500 tables, the last of them throttled
    client = busy(500, throttled={499})
    capture = Capture()
    watcher = watch(client, send=capture, interval=60)
    read_each(client, range(500))
    # WHEN one round runs
    watcher._round(every=False)
    watcher.stop()
    # THEN the throttled table's report is in the round's first batch
    assert capture.reports[0].table == "t499"
    assert capture.reports[0].dims[0].throttles.get("provisioned") == 1


def test_batches_are_cut_by_count_and_by_size() -> None:
    small = [json.loads(json.dumps({"table": f"t{i}"})) for i in range(120)]
    assert [len(b) for b in batches(small)] == [50, 50, 20]
    large = [{"table": "x" * 100_000} for _ in range(5)]
    cut = batches(large)
    assert [len(b) for b in cut] == [2, 2, 1]
    assert all(len(json.dumps(batch_json(b))) <= MAX_BATCH_CHARS for b in cut)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"v": 2, "reports": [{}]}, "v: got 2; expected 1"),
        ({"v": 1, "reports": []}, "reports: got []; expected a list of 1 to 50 reports"),
        ({"v": 1, "reports": "x"}, "reports: got 'x'; expected a list of 1 to 50 reports"),
        ({"v": 1, "reports": [{}] * 51}, "expected a list of 1 to 50 reports"),
        ({"v": 1, "reports": [{}], "table": "t"}, "batch: got the key 'table'"),
    ],
)
def test_a_batch_that_breaks_the_contract_is_refused_naming_the_field(
    raw: dict[str, Any], message: str
) -> None:
    with pytest.raises(SurgeReportError, match=message.replace("[", r"\[").replace("]", r"\]")):
        reports_of(raw)


def test_the_signals_function_takes_each_report_of_a_batch_on_its_own(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN two served tables under throttles, and a batch that also holds a malformed
    # report and one of a table not served
    one = a_table(world, "BatchOne", write_min=100)
    two = a_table(world, "BatchTwo", write_min=100)
    throttled = write(300, throttles={"provisioned": 50})
    event = batch_json(
        [
            report(one, throttled),
            {"v": 1, "table": one},
            report("not-served", throttled),
            report(two, throttled),
        ]
    )
    capsys.readouterr()
    # WHEN the signals function takes it
    out = take_reports(event, served(one, two), SETTINGS, clients=world.clients, store=world.store)
    emf = capsys.readouterr().out
    # THEN each report is answered on its own: both tables raised, the others refused
    answers = out["reports"]
    assert out["ok"] and [a["ok"] for a in answers] == [True, False, False, True]
    assert world.target_min(one, "write") > 100 and world.target_min(two, "write") > 100
    assert counted(emf, "ReportsRefused") == 1 and counted(emf, "ReportsNotServed") == 1


def test_a_batch_stops_in_time_and_counts_the_reports_it_left(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a batch of three reports, and an invocation whose time runs short after the first
    name = a_table(world, "BatchLate", write_min=100)
    event = batch_json([report(name, write(10), process=f"p{i}") for i in range(3)])
    left = iter([RESERVE_MS + 20_000, RESERVE_MS - 1])
    capsys.readouterr()
    # WHEN the signals function takes it
    out = take_reports(
        event,
        served(name),
        SETTINGS,
        clients=world.clients,
        store=world.store,
        remaining_ms=lambda: next(left),
    )
    # THEN the first is taken and the two left are counted as failed, not dropped unseen
    assert len(out["reports"]) == 1
    assert counted(capsys.readouterr().out, "SurgesFailed") == 2


def test_the_report_flood_benchmark_runs_and_meets_its_rate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from benchmarks import report_flood

    assert report_flood.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "one report an invocation" in out and "batched invocations a second" in out


# ------------------------------------------------------------------ one table's busy leases

GSIS = tuple(f"gsi{i}" for i in range(7))
TIMEOUT_S = 30  # the signals function's timeout


def many_gsi_table(world: World, base: str) -> str:  # noqa: F811 (the fixture's name)
    """A provisioned table with 7 GSIs: 16 dimensions a report may carry."""
    name = world.name(base)
    attrs = [{"AttributeName": "pk", "AttributeType": "S"}]
    gsis = []
    for g in GSIS:
        attrs.append({"AttributeName": g, "AttributeType": "S"})
        gsis.append(
            {
                "IndexName": g,
                "KeySchema": [{"AttributeName": g, "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
            }
        )
    world.ddb.create_table(
        TableName=name,
        AttributeDefinitions=attrs,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 10},
        GlobalSecondaryIndexes=gsis,
    )
    return name


def every_dimension() -> list[tuple[str | None, str]]:
    return [(i, d) for i in (None, *GSIS) for d in ("read", "write")]


def throttled_everywhere() -> list[DimensionReport]:
    """A report's dimensions for every dimension of a `many_gsi_table`, each throttled and
    asking for 5,000 units/s: a raise due on each."""
    return [
        DimensionReport(i, d, 5_000.0, 5_000, {"provisioned": 50}) for i, d in every_dimension()
    ]


@contextmanager
def leases_taken(store: HoldStore, table: str) -> Iterator[None]:
    """Every dimension of ``table`` leased by someone else (a request, a restore, a stuck
    holder) while the block runs."""
    with ExitStack() as held:
        for index, dimension in every_dimension():
            held.enter_context(store.lease(table, index, dimension, deadline=store.clock()))
        yield


def test_one_tables_busy_leases_leave_the_rest_of_the_batch_its_time(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN a table of 16 dimensions whose leases are all taken, a report asking to raise
    # each, then a report of another table asking for a raise, in one batch, and an
    # invocation of the function's 30 s
    clock = Clock()
    store = dataclasses.replace(world.store, clock=clock, sleep=clock.sleep)
    busy, healthy = many_gsi_table(world, "Busy"), a_table(world, "Healthy")
    dims = throttled_everywhere()
    event = batch_json([report(busy, *dims, sent=clock()), report(healthy, write(2_000))])
    start = clock()
    capsys.readouterr()
    # WHEN the signals function takes it
    with leases_taken(store, busy):
        out = take_reports(
            event,
            served(busy, healthy, indexes=GSIS),
            SETTINGS,
            clients=world.clients,
            store=store,
            clock=clock,
            sleep=clock.sleep,
            remaining_ms=lambda: int((start + TIMEOUT_S - clock()) * 1_000),
        )
    emf = capsys.readouterr().out
    # THEN the batch ends before the time the invocation keeps in hand
    assert clock() - start <= TIMEOUT_S - RESERVE_MS / 1_000
    # AND the busy table waited its share of the time: the dimensions reached found their
    # lease taken, the others were not decided; all deferred to the next report
    first, second = out["reports"]
    rows = first["dimensions"]
    assert len(rows) == 16 and {r["status"] for r in rows} == {"deferred"}
    waited = [r for r in rows if r["reason"] != OUT_OF_TIME]
    share = (TIMEOUT_S - RESERVE_MS / 1_000) / 2
    assert 1 <= len(waited) <= share / LEASE_WAIT_SECONDS + 1 < len(rows)
    assert counted(emf, "SurgesDeferred") == 16 and counted(emf, "SurgesFailed") == 0
    # AND the other table still got its turn: raised
    assert [r["status"] for r in second["dimensions"]] == ["applied"]
    assert world.target_min(healthy, "write") > 100


def test_one_report_stops_waiting_for_leases_before_the_invocations_reserve(
    world: World,  # noqa: F811 (the fixture)
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN the same table's report alone (not a batch), its leases all taken
    clock = Clock()
    store = dataclasses.replace(world.store, clock=clock, sleep=clock.sleep)
    busy = many_gsi_table(world, "BusyAlone")
    dims = throttled_everywhere()
    start = clock()
    capsys.readouterr()
    # WHEN the signals function takes it with 12 s of the invocation left
    with leases_taken(store, busy):
        out = take_reports(
            report(busy, *dims, sent=clock()),
            served(busy, indexes=GSIS),
            SETTINGS,
            clients=world.clients,
            store=store,
            clock=clock,
            sleep=clock.sleep,
            remaining_ms=lambda: int((start + 12 - clock()) * 1_000),
        )
    # THEN it waits for leases no later than the reserve, and the dimensions left are
    # deferred, not left to the invocation's timeout
    assert clock() - start <= 12 - RESERVE_MS / 1_000
    reasons = [r["reason"] for r in out["dimensions"]]
    assert reasons.count(OUT_OF_TIME) >= 16 - 4
    assert counted(capsys.readouterr().out, "SurgesDeferred") == 16
