"""A global table's replicas, each managed by the scaler of its own Region: two Regions of
the session's moto server, each holding the table's replica under auto scaling (moto keeps
no replication, so each Region's table stands for its replica, and the traffic each
replica would see is written to each Region's CloudWatch). A throttled read raises that
Region's read minimum alone; a throttled write raises every replica's write minimum to one
value; both restore to the template's baseline."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.aws.clients import call_bound, make_clients
from ddb_capacity_runtime.core.series import Series, with_replicas
from ddb_capacity_runtime.core.settings import ConfigError, ScalerConfig
from ddb_capacity_tools.local_aws import put_traffic
from tests.support.faults import emf
from tests.support.moto_world import World
from tests.support.replica_scaler import EU, READ_MIN, US, WRITE_MIN, writes_throttled_in_us
from tests.support.replica_scaler import worlds as worlds  # noqa: F401 (fixture)


def tick(
    worlds: dict[str, World],
    region: str,
    name: str,
    now: datetime | None = None,
    *,
    replicated: bool = True,
) -> dict[str, Any]:
    """One tick of ``region``'s scaler over its replica (``replicated``: told of the other
    Region, as the construct tells it)."""
    others = [r for r in worlds if r != region]
    env = {"SCALER_TABLES": name, "SCALER_TAG_KEY": ""}
    if replicated:
        env["SCALER_REPLICAS"] = json.dumps({name: {"regions": others}})
    summary, _ = worlds[region].tick(now, **env)
    return summary


def minimums(worlds: dict[str, World], name: str, dimension: str) -> dict[str, int]:
    return {region: w.target_min(name, dimension) for region, w in worlds.items()}


def write_minimums_raised(
    worlds: dict[str, World], *, eu_witness: bool = True
) -> tuple[str, dict[str, int]]:
    """The replicas after a write throttled in us-east-1 (`writes_throttled_in_us`) and a
    tick in each Region: both write minimums raised alike, above `WRITE_MIN`."""
    name = writes_throttled_in_us(worlds, eu_witness=eu_witness)
    for region in worlds:
        tick(worlds, region, name)
    raised = minimums(worlds, name, "write")
    assert raised[US] == raised[EU] > WRITE_MIN
    return name, raised


def test_a_read_raises_its_region_alone_and_a_write_every_replica(
    worlds: dict[str, World],
) -> None:
    # GIVEN the replicas, every write seen by both (replicated), and in us-east-1 alone
    # reads and writes throttled
    name = writes_throttled_in_us(worlds, read=60)
    us = worlds[US]
    us.traffic(name, "read", 0, throttles=1200, minutes=range(1, 2))
    # WHEN each Region's scaler ticks
    summaries = {region: tick(worlds, region, name) for region in worlds}
    # THEN us-east-1's read minimum is raised, eu-west-1's stays at its baseline
    reads = minimums(worlds, name, "read")
    assert reads[US] > 80 / 0.7 and reads[EU] == READ_MIN  # served 60 + refused 20, at 70 %
    # AND the write minimum is raised to one value in every replica, by each Region's own
    # scaler (each moves its own Region's targets only)
    writes = minimums(worlds, name, "write")
    assert writes[US] == writes[EU] > 60 / 0.7  # served 50 + refused 10, at 70 %
    assert all(s["failures"] == [] for s in summaries.values())
    # WHEN later ticks see no throttles (and light traffic up to their end)
    later = us.now + timedelta(minutes=45)
    for world in worlds.values():
        world.traffic(name, "read", 5, minutes=range(-44, -28))
        world.traffic(name, "write", 5, minutes=range(-44, -28))
    for region in worlds:
        tick(worlds, region, name, later)
    # THEN every minimum is back at the template's baseline, and nothing is remembered
    assert minimums(worlds, name, "read") == {US: READ_MIN, EU: READ_MIN}
    assert minimums(worlds, name, "write") == {US: WRITE_MIN, EU: WRITE_MIN}
    for world in worlds.values():
        assert world.memory(name, "write") is None and world.memory(name, "read") is None


def test_a_replica_not_told_of_the_others_raises_only_for_its_own_writes(
    worlds: dict[str, World],
) -> None:
    # GIVEN writes throttled in us-east-1 alone
    name = writes_throttled_in_us(worlds)
    # WHEN eu-west-1's scaler ticks without the replicas setting
    tick(worlds, EU, name, replicated=False)
    # THEN its write minimum is not raised: the replicas' write capacity would differ
    assert minimums(worlds, name, "write")[EU] == WRITE_MIN


def test_an_unreadable_region_is_a_failure_and_never_lowers_a_write(
    worlds: dict[str, World],
) -> None:
    # GIVEN both write minimums raised by a write throttled in us-east-1
    name, raised = write_minimums_raised(worlds)
    # WHEN, the throttles over, eu-west-1's scaler cannot read us-east-1's CloudWatch

    def unreachable(region: str) -> Any:
        raise ConnectionError(f"no route to CloudWatch in {region}")

    eu = worlds[EU]
    eu.clients = replace(eu.clients, cloudwatch_of=unreachable)
    later = worlds[US].now + timedelta(minutes=45)
    for world in worlds.values():
        world.traffic(name, "write", 5, minutes=range(-44, -28))
    summaries = {region: tick(worlds, region, name, later) for region in worlds}
    # THEN eu-west-1 keeps its raised write minimum (unknown data never lowers capacity),
    # and counts its table as failed, naming the Region; us-east-1 restores its own
    assert minimums(worlds, name, "write") == {US: WRITE_MIN, EU: raised[EU]}
    (failure,) = summaries[EU]["failures"]
    assert failure["table"] == name and "replica us-east-1" in failure["reason"]
    assert "no route to CloudWatch" in failure["reason"]
    assert summaries[US]["failures"] == []


def replica_tick(
    worlds: dict[str, World], region: str, tables: list[str], now: datetime
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One tick of ``region``'s scaler over ``tables``, each a global table replicated to
    the other Region; returns its summary and its events and EMF records."""
    others = [r for r in worlds if r != region]
    return worlds[region].tick(
        now,
        SCALER_TABLES=",".join(tables),
        SCALER_TAG_KEY="",
        SCALER_REPLICAS=json.dumps({t: {"regions": others} for t in tables}),
    )


def later_ticks(worlds: dict[str, World]) -> datetime:
    """45 minutes after the worlds' now, the state store read every minute up to then in
    each Region (each tick reads it): the minutes before are delivered here."""
    for world in worlds.values():
        world.traffic(world.store.name, "read", 0.5, minutes=range(-44, -28))
    return worlds[US].now + timedelta(minutes=45)


def stalled_writes(lines: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in lines if e.get("event") == "metrics-stalled" and e.get("table") == name]


def test_a_global_table_quiet_everywhere_restores_its_write_minimum(
    worlds: dict[str, World],
) -> None:
    # GIVEN both write minimums raised by a write throttled in us-east-1
    name, raised = write_minimums_raised(worlds)
    # WHEN 45 minutes later, no write anywhere since, each Region's scaler ticks, the
    # table's delivery witness arriving on time in both Regions
    later = later_ticks(worlds)
    summaries = {region: tick(worlds, region, name, later) for region in worlds}
    # THEN both write minimums are back at the template's baseline: another Region's
    # minutes without a datapoint read as idle, as this one's, once its witness shows them
    # delivered
    assert minimums(worlds, name, "write") == {US: WRITE_MIN, EU: WRITE_MIN}
    assert all(s["failures"] == [] for s in summaries.values())
    assert worlds[US].memory(name, "write") is None


def test_a_global_table_quiet_everywhere_waits_for_the_witness_of_another_region(
    worlds: dict[str, World],
) -> None:
    # GIVEN both write minimums raised, and the table's metrics no longer arriving in
    # eu-west-1 (its witness there stopped at the raise)
    name, raised = write_minimums_raised(worlds, eu_witness=False)
    # WHEN 45 minutes later, no write seen anywhere since, us-east-1's scaler ticks
    later = later_ticks(worlds)
    summary, lines = replica_tick(worlds, US, [name], later)
    # THEN its write minimum stays raised: eu-west-1's minutes may be a stall, not idle
    assert minimums(worlds, name, "write")[US] == raised[US]
    # AND the held decrease is counted as a stall of eu-west-1's metrics, naming it
    assert emf(lines, name)["MetricsStalled"] == 1
    (held,) = stalled_writes(lines, name)
    assert (held["dimension"], held["region"]) == ("write", EU)
    assert summary["failures"] == []


def test_local_writes_never_hide_another_regions_stall(worlds: dict[str, World]) -> None:
    # GIVEN both write minimums raised, the table's metrics no longer arriving in eu-west-1
    # (its witness there stopped at the raise), and another global table whose metrics
    # still arrive there: eu-west-1's minutes without a write of the first read as idle
    name, raised = write_minimums_raised(worlds, eu_witness=False)
    busy = {w.table("busy", 100, 100, tagged=False) for w in worlds.values()}.pop()
    later = later_ticks(worlds)
    for world in worlds.values():
        put_traffic(world.cw, busy, "write", 50, end=later, minutes=range(45))
    # WHEN 45 minutes later, light writes of the first seen in us-east-1 alone every
    # minute since, us-east-1's scaler ticks
    put_traffic(worlds[US].cw, name, "write", 5, end=later, minutes=range(45))
    summary, lines = replica_tick(worlds, US, [name, busy], later)
    # THEN its write minimum stays raised: the writes eu-west-1's stall may hide are not
    # taken for none because us-east-1's are known
    assert minimums(worlds, name, "write")[US] == raised[US]
    assert emf(lines, name)["MetricsStalled"] == 1
    (held,) = stalled_writes(lines, name)
    assert (held["dimension"], held["region"]) == ("write", EU)
    assert summary["failures"] == []


START = datetime(2026, 1, 5, tzinfo=UTC)


def test_a_write_minute_late_in_another_region_restores_no_write_minimum(
    worlds: dict[str, World],
) -> None:
    # GIVEN both write minimums raised by a write throttled in us-east-1
    name, raised = write_minimums_raised(worlds)
    # WHEN, the throttles over, later ticks see light writes up to their end in eu-west-1,
    # and in us-east-1 all but the minute 4 minutes before the end (not arrived yet, while
    # the newer ones have)
    later = worlds[US].now + timedelta(minutes=45)
    worlds[EU].traffic(name, "write", 5, minutes=range(-44, -28))
    worlds[US].traffic(name, "write", 5, minutes=range(-44, -43))
    worlds[US].traffic(name, "write", 5, minutes=range(-42, -28))
    summaries = {region: tick(worlds, region, name, later) for region in worlds}
    # THEN eu-west-1 keeps its raised write minimum: us-east-1's late minute is not an idle
    # one, and the replicas' writes are one (and so does us-east-1, for its own)
    assert minimums(worlds, name, "write") == raised
    assert all(s["failures"] == [] for s in summaries.values())


def series(
    consumed: list[float],
    throttles: list[float],
    *,
    unknown: list[bool] | None = None,
    unfixable: list[float] | None = None,
    start: datetime = START,
) -> Series:
    starts = [start + timedelta(minutes=i) for i in range(len(consumed))]
    return Series(starts, consumed, throttles, unknown or [], unfixable or [])


def test_a_replicas_writes_are_the_most_consumed_and_every_fixable_throttle() -> None:
    here = series([10, 40, 5], [0, 3, 0], unfixable=[0, 1, 0])
    there = series([12, 30, 5], [2, 5, 0], unfixable=[0, 5, 0], unknown=[False, False, True])
    merged = with_replicas(here, [there])
    assert merged.consumed == [12, 40, 5]
    # this replica's throttles all stay; another's count only where capacity could serve them
    assert merged.throttles == [2, 3, 0]
    assert merged.unfixable == [0, 1, 0] and merged.unknown == [False, False, True]
    assert with_replicas(here, []) is here


def test_a_replica_read_over_other_minutes_leaves_every_minute_unknown() -> None:
    here = series([10, 40], [0, 3])
    there = series([10, 40], [0, 3], start=START + timedelta(minutes=1))
    assert with_replicas(here, [there]).unknown == [True, True]


@pytest.mark.parametrize(
    "raw",
    [
        '{"T": {"regions": "eu-west-1"}}',
        '{"T": {"regions": ["moon-1"]}}',
        '{"T": {"regions": ["eu-west-1", "eu-west-1"]}}',
        '{"T": {}}',
        '{"T": {"regions": [1]}}',
    ],
)
def test_the_replicas_setting_is_checked(raw: str) -> None:
    with pytest.raises(ConfigError, match=r"SCALER_REPLICAS: table T regions must be a list"):
        ScalerConfig.from_env({"SCALER_TABLES": "T", "SCALER_REPLICAS": raw})


def test_a_tick_short_of_time_reads_no_other_region_and_fails_its_replica(
    worlds: dict[str, World],
) -> None:
    # GIVEN writes throttled in us-east-1, and eu-west-1's tick with less time left than
    # one call of its client for us-east-1 can take (moto's clients wait minutes at worst)
    name = writes_throttled_in_us(worlds)
    eu = worlds[EU]
    env = {
        "SCALER_TABLES": name,
        "SCALER_TAG_KEY": "",
        "SCALER_REPLICAS": json.dumps({name: {"regions": [US]}}),
    }
    # WHEN it ticks
    summary, _ = eu.tick(None, time.time() + 30, **env)
    # THEN it does not wait on us-east-1: its table fails, naming the Region, and nothing
    # it did not read moves its write minimum
    (failure,) = summary["failures"]
    assert failure["table"] == name and "replica us-east-1" in failure["reason"]
    assert "too little of the tick left" in failure["reason"]
    assert minimums(worlds, name, "write")[EU] == WRITE_MIN


def test_another_regions_cloudwatch_is_bounded_and_made_once() -> None:
    clients = make_clients(region_name=US)
    assert clients.cloudwatch_of is not None
    made = clients.cloudwatch_of(EU)
    assert made is clients.cloudwatch_of(EU)
    assert made.meta.region_name == EU
    assert call_bound(made) == call_bound(clients.dynamodb) < 60


def test_an_unreadable_region_fails_its_replica_alone(worlds: dict[str, World]) -> None:
    """Each table its own fault domain: beside the replica whose other Region cannot be
    read, a table of eu-west-1 alone, throttled, is raised as ever and not failed; the
    replica's failure is counted in the tick's metrics, the other's is not."""
    # GIVEN the replicas, and a plain eu-west-1 table under auto scaling, reads throttled
    name = writes_throttled_in_us(worlds)
    eu = worlds[EU]
    plain = eu.table("catalog", 100, 20, tagged=False)
    eu.target(plain, "read", READ_MIN, 1000)
    eu.traffic(plain, "read", 60)
    eu.traffic(plain, "read", 0, throttles=1200, minutes=range(1, 2))

    def unreachable(region: str) -> Any:
        raise ConnectionError(f"no route to CloudWatch in {region}")

    eu.clients = replace(eu.clients, cloudwatch_of=unreachable)
    env = {
        "SCALER_TABLES": f"{name},{plain}",
        "SCALER_TAG_KEY": "",
        "SCALER_REPLICAS": json.dumps({name: {"regions": [US]}}),
    }
    # WHEN eu-west-1's scaler ticks
    summary, events = eu.tick(None, None, **env)
    # THEN the replica alone fails, and its write minimum stays; the plain table is raised
    assert [f["table"] for f in summary["failures"]] == [name]
    assert eu.target_min(name, "write") == WRITE_MIN
    assert eu.target_min(plain, "read") > 80 / 0.7
    failures = {e["TableName"]: e["Failures"] for e in events if "_aws" in e and "TableName" in e}
    assert failures == {name: 1, plain: 0}
