"""Surges a lie cannot buy, as a stateful property (hypothesis): processes that lie report
random units and throttles under many process ids, on the read and write of two tables
(write under a scalable target, read without one: UpdateTable), while time passes and the
restore ends expired surges, in any order (``STATE_MACHINE_EXAMPLES=N`` explores N random
runs; the gate runs a few, derandomized). Tables and targets are in moto; the state store
is in dynalite (atomic conditional writes, as DynamoDB's). The clock is virtual: a number
that starts at the world's fixed instant and that only the rules move (a wait the code
under test asks for moves it too); every run-time call is given it.

The oracle is the test's own: the default surge cap and budget as documented
(docs/guides/fast-path.md, "The surge cap and budget" and "A process that lies"), written
out below as numbers, and a model of each dimension's surge and budget window that the
rules keep from what they did and saw. After every step:
- a surge never exceeds its cap: its baseline is the capacity its dimension had when it
  started, its level at most 4 x that (100 units over it at least), and no dimension,
  surged or not, ever over the cap over its configured base (4 x 100);
- a surge ends in time: it expires at most 5 minutes after the last report, and at most
  an hour after it started;
- the budget is never exceeded: the units the surges of a dimension add in an hour (the
  window from the first surge unit spent) are at most twice what one surge may add from
  the level the window counts from; the window the store records is the model's;
- nothing lowers capacity: a report never lowers a table's provisioned capacity or a
  target's minimum, and no minimum ever goes below its configured base.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ddb_capacity_runtime.aws.store import HoldStore
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
from tests.support.hypothesis_profiles import examples
from tests.support.moto_world import World
from tests.support.state_machine import world as world  # noqa: F401 (the module's fixture)

BASE = 100  # every dimension's configured base: its provisioned units, its target's minimum
MAX = 40_000  # the write target's max
SETTINGS = SurgeSettings()  # the defaults: the cap and the budget a deployment gets
NAMES = itertools.count()
DIMENSIONS = ("read", "write")

# The oracle's numbers: the defaults as docs/guides/fast-path.md documents them ("The surge
# cap and budget"; the `FastPath` table: `surge_scale` 4, `surge_for` 5 minutes).
SCALE = 4  # "A surge takes a dimension to at most 4x the capacity it had when the surge started"
MIN_ROOM = 100  # "(100 units over it at least, so a dimension at 1 unit can still surge)"
BUDGET_SURGES = 2  # "its budget (by default twice the cap's units: two full surges an hour)"
HOUR = 3600  # the budget's window: the units "the surges of one dimension add in an hour"
SURGE_FOR = 5 * 60  # "how long a surge holds after the last report that asked for it"
LIFETIME = 3600  # "a surge ends at most an hour after its first raise in any case"
#: "a surge is at most the surge cap over the dimension's configured base" ("A process that
#: lies"): no lie takes a dimension configured at BASE over this, however often it surges
TOP = max(SCALE * BASE, BASE + MIN_ROOM)


def room(start: int) -> int:
    """The most units one surge may add over ``start``, the capacity it started from."""
    return max(SCALE * start - start, MIN_ROOM)


@dataclass
class Surge:
    """The model of a dimension's surge: when it started, the capacity it started from
    and the level its hold was last seen at."""

    started: float
    start: int
    level: int


@dataclass
class Window:
    """The model of a dimension's budget window: when it began (whole seconds), the level
    it counts from and the units its surges added."""

    start: int
    level: int
    used: int = 0

    def budget(self) -> int:
        return BUDGET_SURGES * room(self.level)


class LyingReports(RuleBasedStateMachine):
    def __init__(self, world: World, store_dynamodb: Any) -> None:
        super().__init__()
        self.world = world
        n = next(NAMES)
        self.tables = [world.table(f"liar{n}x{i}", BASE, BASE, tagged=False) for i in (0, 1)]
        for name in self.tables:
            world.target(name, "write", BASE, MAX)
        self.scopes = BrokerConfig({t: frozenset() for t in self.tables})
        #: the virtual clock (epoch seconds): only the rules, and the code's waits, move it
        self.now = world.now.timestamp()
        self.store = HoldStore(store_dynamodb, world.store.name, clock=self.clock)
        #: the model, by (table, dimension): the surge in force, the budget window
        self.surges: dict[tuple[str, str], Surge] = {}
        self.windows: dict[tuple[str, str], Window] = {}
        #: what the invariants read since the last change (a rule empties it): each is
        #: read from moto and dynalite once a step, not once per invariant
        self.seen: dict[tuple[str, ...], Any] = {}
        #: the dimensions lied about (no other has a budget window)
        self.told: set[tuple[str, str]] = set()
        #: the last lie told (its rule's arguments), for the liar to tell again
        self.last: tuple[int, str, int, float, int, int] | None = None

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def levels(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(provisioned, target minimum or 0) of every dimension."""
        out = {}
        for name in self.tables:
            if ("units", name) not in self.seen:
                self.seen[("units", name)] = self.world.throughput(name)
            read, write = self.seen[("units", name)]
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

    def budget(self, name: str, dimension: str) -> tuple[int, ...] | None:
        """The budget window the store records (its combiner item's ``surge_budget``,
        docs/operations/state-store.md: ``<start>:<level>:<used>``); None: none yet."""
        if ("budget", name, dimension) not in self.seen:
            key = {"pk": {"S": name}, "sk": {"S": f"surge:table:{dimension}"}}
            item = self.world.store_ddb.get_item(
                TableName=self.world.store.name, Key=key, ConsistentRead=True
            ).get("Item", {})
            text = item.get("surge_budget", {}).get("S")
            window = tuple(int(part) for part in text.split(":")) if text else None
            self.seen[("budget", name, dimension)] = window
        recorded: tuple[int, ...] | None = self.seen[("budget", name, dimension)]
        return recorded

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
        self.last = (table, dimension, process, per_second, throttles, failed)
        self.report(*self.last)

    @precondition(lambda self: self.last is not None)
    @rule(minutes=st.integers(SURGE_FOR // 60 + 1, 20))
    def the_liar_lies_again_after_the_restore(self, minutes: int) -> None:
        """The last lie again, once its surge has expired and the restore ended it: what
        repeated lies buy within a budget window."""
        assert self.last is not None
        self.time_passes(minutes)
        self.report(*self.last)

    def report(
        self,
        table: int,
        dimension: str,
        process: int,
        per_second: float,
        throttles: int,
        failed: int,
    ) -> None:
        name = self.tables[table]
        self.told.add((name, dimension))
        before = self.levels()  # as the invariants read it after the last step
        at = self.now
        dim = DimensionReport(
            None, dimension, per_second * 10, 1, {"provisioned": throttles}, failed
        )
        event = Report(name, f"liar-{process}", 10.0, at, (dim,)).as_json()
        take_report(
            event,
            self.scopes,
            SETTINGS,
            clients=self.world.clients,
            store=self.store,
            clock=self.clock,
            sleep=self.sleep,
        )
        self.seen.clear()
        # nothing lowers capacity: no provisioned capacity nor minimum went down
        after = self.levels()
        assert all(after[k][0] >= before[k][0] and after[k][1] >= before[k][1] for k in after)
        self.account((name, dimension), before[(name, dimension)][0], at)

    def account(self, key: tuple[str, str], provisioned: int, at: float) -> None:
        """Keep the model of ``key``'s surge and budget window after a report sent ``at``,
        when the dimension had ``provisioned`` units."""
        hold = self.surge(*key)
        if hold is None:
            assert key not in self.surges, "a report ended a surge"
            return
        surge = self.surges.get(key)
        if surge is None:  # a new surge: its baseline is the capacity the dimension had
            assert hold.baseline == provisioned, (hold, provisioned)
            surge = self.surges[key] = Surge(at, provisioned, provisioned)
        level = hold.baseline + hold.units
        added, surge.level = level - surge.level, max(level, surge.level)
        if added <= 0:
            return
        window = self.windows.get(key)
        if window is None or at >= window.start + HOUR:  # a new window from this spend
            lowest = surge.start
            if window is not None and at < window.start + 2 * HOUR:  # back to back
                lowest = min(lowest, window.level)
            window = self.windows[key] = Window(int(at), lowest)
        window.used += added

    # minutes (a surge expires, a budget window ends) or hours (the next one ends too)
    @rule(minutes=st.one_of(st.integers(1, 70), st.integers(120, 180)))
    def time_passes_and_the_restore_runs(self, minutes: int) -> None:
        self.time_passes(minutes)

    def time_passes(self, minutes: int) -> None:
        self.now += minutes * 60
        for name in self.tables:
            restore_expired(
                name,
                clients=self.world.clients,
                store=self.store,
                clock=self.clock,
                sleep=self.sleep,
            )
        self.seen.clear()
        for key in list(self.surges):
            if self.surge(*key) is None:  # ended by the restore: a new one may start
                del self.surges[key]

    # ------------------------------------------------------------------ invariants

    @invariant()
    def no_dimension_goes_over_the_cap_over_its_base(self) -> None:
        for key, (provisioned, minimum) in self.levels().items():
            assert provisioned <= TOP and minimum <= TOP, (key, provisioned, minimum)

    @invariant()
    def a_surge_never_exceeds_its_cap(self) -> None:
        for key, surge in self.surges.items():
            hold = self.surge(*key)
            assert hold is not None and hold.baseline == surge.start, (hold, surge)
            level = hold.baseline + hold.units
            assert level <= surge.start + room(surge.start), (hold, surge)
            assert level <= min(TOP, MAX), (hold, surge)

    @invariant()
    def a_surge_ends_in_time(self) -> None:
        for key, surge in self.surges.items():
            expires = self.surge(*key).expires.timestamp()
            assert expires <= self.now + SURGE_FOR, (key, expires, self.now)
            assert expires <= surge.started + LIFETIME, (key, expires, surge)

    @invariant()
    def the_budget_is_never_exceeded(self) -> None:
        for key in self.told:
            window = self.windows.get(key)
            recorded = self.budget(*key)
            if window is None:
                assert recorded is None, (key, recorded)
                continue
            assert window.used <= window.budget(), window
            assert recorded == (window.start, window.level, window.used), (recorded, window)

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
    class InThisWorld(LyingReports):
        def __init__(self) -> None:
            super().__init__(world, store_dynamodb)

    run_state_machine_as_test(
        InThisWorld,
        settings=settings(
            max_examples=int(EXPLORE) if EXPLORE else examples(5),
            stateful_step_count=12,
            deadline=None,
            derandomize=EXPLORE is None and settings().derandomize,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
