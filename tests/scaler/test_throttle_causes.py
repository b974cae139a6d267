"""Throttles by cause at run time, against a moto server: several tables, only one of them
hot. A key-range throttle never raises capacity and never lets it fall; a
provisioned-throughput one raises as before; where no cause metric exists the throttles
are taken for provisioned-throughput ones, and an event says so.

moto 5.2's GetMetricData ignores the Namespace when Dimensions are given, so every metric
these tests publish has a name of its own (DynamoDB's cause metrics already do)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from ddb_capacity_runtime.aws import metrics
from ddb_capacity_runtime.core.series import MINUTE, Series
from tests.support.moto_world import LAG, World
from tests.support.throttle_causes import count_queries, hot_key_and_idle
from tests.support.throttle_causes import world as world  # noqa: F401 (fixture)


def emf(lines: list[dict[str, Any]], table: str) -> dict[str, Any]:
    (record,) = [e for e in lines if "_aws" in e and e.get("TableName") == table]
    return record


def events(lines: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in lines if e.get("event") == name]


def a_tick_off_the_forecast(world: World) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A tick in the reactive mode, which reads no history: only the window's metrics are
    read."""
    return world.tick(SCALER_MODE="reactive")


def test_only_provisioned_throughput_throttles_raise_and_only_the_hot_table_alarms(
    world: World,
) -> None:
    # GIVEN a table whose writes are throttled by a hot key (every event key-range), one
    # throttled because its capacity is short, one with both causes, and a calm one (at a
    # tick that reads no throttles by the clock)
    world.off_the_periodic_read()
    hot = world.table("hot", 100, 100)
    short = world.table("short", 100, 100)
    mixed = world.table("mixed", 100, 100)
    calm = world.table("calm", 100, 100)
    for name in (hot, short, mixed, calm):
        world.traffic(name, "read", 60)
        world.traffic(name, "write", 20 if name in (hot, calm) else 100)
    world.traffic(
        hot, "write", 0, throttles=3000, minutes=range(1, 3), causes={"KeyRangeThroughput": 3000}
    )
    world.traffic(
        short,
        "write",
        0,
        throttles=3000,
        minutes=range(1, 3),
        causes={"ProvisionedThroughput": 3000},
    )
    world.traffic(
        mixed,
        "write",
        0,
        throttles=3000,
        minutes=range(1, 3),
        causes={"ProvisionedThroughput": 600, "KeyRangeThroughput": 2400},
    )
    calls = count_queries(world)
    # WHEN one tick runs
    summary, lines = a_tick_off_the_forecast(world)
    # THEN the short table is raised as before: (served 100 + refused 50) / 0.7
    assert world.throughput(short) == (100, 215)
    # AND the mixed one only for its provisioned-throughput share: (100 + 10) / 0.7
    assert world.throughput(mixed) == (100, 158)
    # AND the hot table is not raised, nor lowered as the calm one at the same load is
    assert world.throughput(hot) == (100, 100)
    assert world.throughput(calm) == (100, 29)
    assert summary["failures"] == [] and summary["shared_failures"] == []
    # AND the key-range throttles are counted on the tables that have them, only
    assert emf(lines, hot)["KeyRangeThrottleEvents"] == 6000
    assert emf(lines, mixed)["KeyRangeThrottleEvents"] == 4800
    assert "KeyRangeThrottleEvents" not in emf(lines, short)
    assert "KeyRangeThrottleEvents" not in emf(lines, calm)
    hot_keys = {(e["table"], e["dimension"]): e for e in events(lines, "hot-key")}
    assert set(hot_keys) == {(hot, "write"), (mixed, "write")}
    assert "Contributor Insights" in hot_keys[(hot, "write")]["consequence"]
    # AND the throttle events are read after the consumption, in a second call, of the
    # writes (near their capacity, or about to be lowered on consumption alone; the reads,
    # at their aim, are neither); the
    # throttled dimensions' causes in one more, for them alone (and the calm table's
    # decrease, which rests on the window's oldest minutes, without a datapoint, in one
    # more: its delivery witness, for its write alone)
    assert len(calls) == 4
    assert all(m.startswith("Consumed") for m in calls[0])
    assert calls[1] == ["WriteThrottleEvents"] * 4
    assert calls[3] == ["ProvisionedWriteCapacityUnits"]
    cause_names = set(calls[2])
    assert len(calls[2]) == 3 * len(metrics.CAUSES)
    assert cause_names == {f"Write{c}ThrottleEvents" for c in metrics.CAUSES}
    assert events(lines, "throttle-causes-unknown") == []


def test_without_cause_metrics_the_lumped_rule_applies_and_an_event_says_so(
    world: World,
) -> None:
    # GIVEN a throttled table from before the cause metrics (only the lumped ones), and a
    # hot one beside it
    old = world.table("old", 100, 100)
    hot = world.table("hot", 100, 100)
    for name in (old, hot):
        world.traffic(name, "read", 60)
        world.traffic(name, "write", 100 if name == old else 60)
    world.traffic(old, "write", 0, throttles=3000, minutes=range(1, 3))
    world.traffic(
        hot, "write", 0, throttles=3000, minutes=range(1, 3), causes={"KeyRangeThroughput": 3000}
    )
    # WHEN one tick runs
    summary, lines = a_tick_off_the_forecast(world)
    # THEN the old table is raised as its throttles always raised it, and the event names
    # it and the minutes taken for provisioned-throughput throttles
    assert world.throughput(old) == (100, 215)
    assert world.throughput(hot) == (100, 100)
    (unknown,) = events(lines, "throttle-causes-unknown")
    assert (unknown["table"], unknown["dimension"], unknown["minutes"]) == (old, "write", 2)
    assert summary["failures"] == []


def test_a_failed_cause_read_is_a_failure_of_those_tables_and_raises_as_before(
    world: World,
) -> None:
    # GIVEN a hot table, a short one, and GetMetricData failing for the cause metrics only
    hot, idle = hot_key_and_idle(world)

    def refuse(params: dict[str, Any], **_: Any) -> None:
        names = [q["MetricStat"]["Metric"]["MetricName"] for q in params["MetricDataQueries"]]
        if any("KeyRange" in n for n in names):
            raise ClientError(
                {"Error": {"Code": "InternalServiceError", "Message": "try later"}},
                "GetMetricData",
            )

    world.clients.cloudwatch.meta.events.register(
        "provide-client-params.cloudwatch.GetMetricData", refuse
    )
    # WHEN one tick runs
    summary, lines = a_tick_off_the_forecast(world)
    # THEN the hot table's throttles are taken for fixable (unknown data never holds a raise
    # back), its failure is counted, and the other table is decided as usual
    assert world.throughput(hot)[1] == 215
    assert [f["table"] for f in summary["failures"]] == [hot]
    assert "throttles by cause" in summary["failures"][0]["reason"]
    assert emf(lines, hot)["Failures"] == 1
    assert world.throughput(idle) == (5, 5)
    assert summary["shared_failures"] == []


def series(throttles: list[float]) -> Series:
    start = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
    minutes = [start + i * MINUTE for i in range(len(throttles))]
    return Series(minutes, [1.0] * len(throttles), throttles, [])


def test_causes_that_explain_part_of_a_minute_leave_the_rest_fixable(world: World) -> None:
    # GIVEN a GSI's reads: 4 throttled minutes; the cause metrics say, per minute: all
    # key-range; half key-range and half provisioned; a third key-range, the rest not
    # explained; nothing (that minute came before the cause metrics)
    name = world.table("gsi", 100, 100, gsi=(50, 50))
    end = world.now - timedelta(minutes=LAG)
    start = end - timedelta(minutes=4)
    key = (name, "byUser", "read")
    for minute, causes in enumerate(
        [
            {"KeyRangeThroughput": 60},
            {"KeyRangeThroughput": 30, "ProvisionedThroughput": 30},
            {"KeyRangeThroughput": 20},
            {},
        ]
    ):
        world.traffic(
            name,
            "read",
            1,
            throttles=60,
            minutes=range(4 - minute, 5 - minute),
            index="byUser",
            causes=causes,
        )
    fetched = metrics.fetch(world.clients.cloudwatch, [key], start, end)
    # WHEN the causes are read
    told = metrics.fetch_causes(world.clients.cloudwatch, fetched, start, end)[key]
    # THEN per minute: what capacity cannot fix, the key-range share, and the unknown minute
    assert told.throttles == [60, 60, 60, 60]
    assert told.unfixable == [60, 30, 20, 0]
    assert told.key_range == [60, 30, 20, 0]
    assert told.causes_unknown == 1


def test_untrusted_cause_values_never_make_more_unfixable_than_was_throttled(
    world: World,
) -> None:
    # GIVEN a minute whose key-range metric says more than the lumped throttles
    name = world.table("liar", 100, 100)
    end = world.now - timedelta(minutes=LAG)
    start = end - timedelta(minutes=2)
    key = (name, None, "write")
    world.traffic(
        name, "write", 1, throttles=10, minutes=range(1, 3), causes={"KeyRangeThroughput": 1e9}
    )
    fetched = metrics.fetch(world.clients.cloudwatch, [key], start, end)
    told = metrics.fetch_causes(world.clients.cloudwatch, fetched, start, end)[key]
    # THEN what capacity cannot fix is at most what was throttled
    assert told.unfixable == [10, 10] and told.key_range == [10, 10]


def test_a_series_without_throttles_makes_no_call() -> None:
    class NoCalls:
        def get_metric_data(self, **_: Any) -> Any:
            raise AssertionError("no call expected")

    calm = {("t", None, "read"): series([0.0, 0.0])}
    now = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
    told = metrics.fetch_causes(NoCalls(), calm, now, now + 2 * MINUTE)  # type: ignore[arg-type]
    assert told == calm
