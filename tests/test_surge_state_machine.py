"""Surges a lie cannot buy, as a stateful property (hypothesis): processes that lie report
random units and throttles under many process ids, on the read and write of two tables
(write under a scalable target, read without one: UpdateTable), while time passes and the
restore ends expired surges, in any order (``STATE_MACHINE_EXAMPLES=N`` explores N random
runs; the gate runs a few, derandomized). Tables and targets are in moto; the state store
is in dynalite (atomic conditional writes, as DynamoDB's). The clock is virtual: every
run-time call is given it.

After every step:
- a surge never exceeds its cap: its units are at most what the surge cap allows over the
  capacity its dimension had when it started, nor its level over what the cap allows from
  the level its budget window counts from, and it never passes the max;
- the budget is never exceeded: the units the surges of a dimension added in a budget
  window, as the model counts them and as the store records them, are at most its budget;
- nothing lowers capacity: a report never lowers a table's provisioned capacity or a
  target's minimum, and no minimum ever goes below its configured base.
"""

from __future__ import annotations

import itertools
import os
import time
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from ddb_capacity_runtime.aws import combiner
from ddb_capacity_runtime.aws.store import HoldStore
from ddb_capacity_runtime.core.surge import Budget, budget_left
from ddb_capacity_runtime.core.surge_report import (
    MAX_REQUESTS_PER_SECOND,
    MAX_UNITS_PER_SECOND,
    DimensionReport,
    Report,
)
from ddb_capacity_runtime.fast_path.surge_raise import take_report
from ddb_capacity_runtime.fast_path.surge_settings import SURGE_HOLD, SurgeSettings
from ddb_capacity_runtime.requests import restore_expired
from ddb_capacity_runtime.requests.broker import BrokerConfig
from tests.hypothesis_profiles import examples
from tests.moto_world import World
from tests.test_state_machine import world as world  # noqa: F401 (the module's fixture)

BASE = 100
MAX = 40_000
SETTINGS = SurgeSettings()  # the defaults: the cap and the budget a deployment gets
NAMES = itertools.count()
DIMENSIONS = ("read", "write")


class LyingReports(RuleBasedStateMachine):
    def __init__(self, world: World, store_dynamodb: Any) -> None:
        super().__init__()
        self.world = world
        n = next(NAMES)
        self.tables = [world.table(f"liar{n}x{i}", BASE, BASE, tagged=False) for i in (0, 1)]
        for name in self.tables:
            world.target(name, "write", BASE, MAX)
        self.scopes = BrokerConfig({t: frozenset() for t in self.tables})
        self.start = world.now
        self.since = time.monotonic()
        self.store = HoldStore(store_dynamodb, world.store.name, clock=self.clock)
        #: the model: units the surges of each dimension added, by budget window start
        self.added: dict[tuple[str, str, float], int] = {}
        self.surge_units: dict[tuple[str, str], int] = {}
        #: what the invariants read since the last change (a rule empties it): each is
        #: read from moto and dynalite once a step, not once per invariant
        self.seen: dict[tuple[str, ...], Any] = {}

    def clock(self) -> float:
        return (self.start + timedelta(seconds=time.monotonic() - self.since)).timestamp()

    def levels(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(provisioned, target minimum or 0) of every dimension."""
        out = {}
        for name in self.tables:
            read, write = self.world.throughput(name)
            out[(name, "read")] = (read, 0)
            out[(name, "write")] = (write, self.target_min(name))
        return out

    def target_min(self, name: str) -> int:
        if ("min", name) not in self.seen:
            self.seen[("min", name)] = self.world.target_min(name, "write")
        return int(self.seen[("min", name)])

    def surge(self, name: str, dimension: str) -> Any:
        if ("surge", name, dimension) not in self.seen:
            state = self.store.get(name, None, dimension)
            hold = next((h for h in state.holds if h.id == SURGE_HOLD), None) if state else None
            self.seen[("surge", name, dimension)] = hold
        return self.seen[("surge", name, dimension)]

    def budget(self, name: str, dimension: str) -> Any:
        if ("budget", name, dimension) not in self.seen:
            key = combiner.combiner_key(name, f"table:{dimension}")
            item = self.world.store_ddb.get_item(
                TableName=self.world.store.name, Key=key, ConsistentRead=True
            ).get("Item", {})
            marks = combiner.entries(item, self.clock()).mark
            self.seen[("budget", name, dimension)] = marks.budget
        return self.seen[("budget", name, dimension)]

    # ------------------------------------------------------------------ rules

    @rule(
        table=st.integers(0, 1),
        dimension=st.sampled_from(DIMENSIONS),
        process=st.integers(0, 500),
        # mostly lies large enough to make a surge due, now and then a small one
        per_second=st.one_of(
            st.just(MAX_UNITS_PER_SECOND), st.floats(0, MAX_UNITS_PER_SECOND), st.floats(0, 500)
        ),
        throttles=st.one_of(st.integers(1, int(MAX_REQUESTS_PER_SECOND)), st.just(0)),
        failed=st.integers(0, 1_000_000),
    )
    def lie(
        self,
        table: int,
        dimension: str,
        process: int,
        per_second: float,
        throttles: int,
        failed: int,
    ) -> None:
        name = self.tables[table]
        self.seen.clear()
        before = self.levels()
        old = self.surge(name, dimension)
        dim = DimensionReport(
            None, dimension, per_second * 10, 1, {"provisioned": throttles}, failed
        )
        event = Report(name, f"liar-{process}", 10.0, self.clock(), (dim,)).as_json()
        take_report(
            event,
            self.scopes,
            SETTINGS,
            clients=self.world.clients,
            store=self.store,
            clock=self.clock,
            sleep=lambda _: None,
        )
        self.seen.clear()
        # nothing lowers capacity: no provisioned capacity nor minimum went down
        after = self.levels()
        assert all(after[k][0] >= before[k][0] and after[k][1] >= before[k][1] for k in after)
        new = self.surge(name, dimension)
        window = self.budget(name, dimension)
        if new is not None and window is not None:
            same = old is not None and old.baseline == new.baseline
            grew = new.units - (old.units if same else 0)
            key = (name, dimension, window.start)
            self.added[key] = self.added.get(key, 0) + max(0, grew)

    @rule(minutes=st.integers(1, 70))
    def time_passes_and_the_restore_runs(self, minutes: int) -> None:
        self.start += timedelta(minutes=minutes)
        for name in self.tables:
            restore_expired(name, clients=self.world.clients, store=self.store, clock=self.clock)
        self.seen.clear()

    # ------------------------------------------------------------------ invariants

    @invariant()
    def a_surge_never_exceeds_its_cap(self) -> None:
        for name in self.tables:
            for dimension in DIMENSIONS:
                hold = self.surge(name, dimension)
                if hold is None:
                    continue
                room = SETTINGS.room(hold.baseline)
                assert room is not None and hold.units <= room, (hold, room)
                assert hold.baseline + hold.units <= MAX
                # nor over the cap from where the lies of its budget window began
                window = self.budget(name, dimension)
                if window is not None and window.level <= hold.baseline:
                    top = window.level + (SETTINGS.room(window.level) or 0)
                    assert hold.baseline + hold.units <= max(top, hold.baseline), (hold, window)

    @invariant()
    def the_budget_is_never_exceeded(self) -> None:
        for name in self.tables:
            for dimension in DIMENSIONS:
                window = self.budget(name, dimension)
                if window is None:
                    continue
                fresh = Budget(window.start, window.level, 0)
                allowed = budget_left(fresh, None, None, SETTINGS.scale)
                assert allowed is not None and window.used <= allowed, window
                assert self.added.get((name, dimension, window.start), 0) <= allowed

    @invariant()
    def no_minimum_below_its_base(self) -> None:
        for name in self.tables:
            assert self.target_min(name) >= BASE


#: Runs of the machine in the gate: the same few runs every time (derandomized), so the
#: gate never flips. ``STATE_MACHINE_EXAMPLES=N`` explores N new random runs instead.
EXPLORE = os.environ.get("STATE_MACHINE_EXAMPLES")


def test_lying_reports_never_buy_more_than_the_cap_and_the_budget(
    world: World,  # noqa: F811 (the fixture imported above)
    store_dynamodb: Any,
) -> None:
    run_state_machine_as_test(
        lambda: LyingReports(world, store_dynamodb),
        settings=settings(
            max_examples=int(EXPLORE) if EXPLORE else examples(8),
            stateful_step_count=12,
            deadline=None,
            derandomize=EXPLORE is None and settings.default.derandomize,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
