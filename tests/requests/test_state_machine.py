"""The state store's promises as a stateful property (hypothesis): scaler ticks (calm or
throttled, with a deadline that passes during a lease wait), capacity requests (by writers
whose clocks are up to 90 s off, for up to 45,000 units under a table quota of 80,000),
releases, restores, an operator setting the minimum (up to 60,000), time passing (holds
expiring), a register slower than the lease (another writer wanting the lease
meanwhile), and a crash of any one AWS or store write, in any order, on a table whose
writes are under a scalable target. Tables, targets and metrics are in moto;
the state store is in dynalite (atomic conditional writes, as DynamoDB's). The clock is
virtual: every run-time call is given it.

After every step:
- no hold is lost: every hold a request returned, neither released nor expired, is in the
  store;
- the minimum is never below the configured one (the base: the deployed minimum, or the
  last one an operator set);
- whatever the store says, read against the target's minimum, gives that base back: a
  configured minimum is never lost, and never changes but by its owner (nothing is
  adopted from the library's own late write);
- no register is sent after a tick's deadline.
At the end of each run, once every hold has ended and the load has fallen, the minimum is
back at the base within a few calm ticks.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from ddb_capacity_runtime.aws.store import HoldLimits, HoldStore
from ddb_capacity_runtime.core.memory import reconcile
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.requests import (
    CapacityHold,
    CapacityRequestError,
    request_capacity,
    restore_expired,
)
from ddb_capacity_runtime.scaler.tick import run_tick
from ddb_capacity_tools.local_aws import put_traffic, recorded_events
from tests.support.hypothesis_profiles import examples
from tests.support.moto_world import LAG, World
from tests.support.state_machine import world as world  # noqa: F401 (fixture)

BASE = 100
CALM = 5.0  # units per second between bursts
QUOTA = 80_000  # the account's table quota: twice DynamoDB's default
SKEWS = st.sampled_from([0.0, -90.0, 90.0])  # a writer's clock, off the true time
UNITS = st.one_of(
    st.integers(1, 30).map(lambda n: n * 100), st.integers(400, 450).map(lambda n: n * 100)
)
NAMES = itertools.count()


class Crash(Exception):
    """A process dying in the middle of its writes."""


class CapacityStateMachine(RuleBasedStateMachine):
    def __init__(self, world: World, store_dynamodb: Any, operator: Any) -> None:
        super().__init__()
        self.world = world
        self.operator = operator  # an Application Auto Scaling client of its own
        self.name = world.table(f"machine{next(NAMES)}", 10, BASE, tagged=False)
        world.target(self.name, "write", BASE, QUOTA)
        # virtual, and moving on with real time between the steps that move it (a lease
        # left by a crash runs out; waits end): metrics are put in its past
        self.start = world.now - timedelta(hours=6)
        self.since = time.monotonic()
        self.paused_at: float | None = None  # real time stands still here: only sleeps move on
        self.limits = HoldLimits(QUOTA, timedelta(hours=24), QUOTA, QUOTA)
        # a wait for a lease moves the virtual clock on, as the requests' waits do
        self.store = HoldStore(
            store_dynamodb, world.store.name, self.limits, self.clock, self.sleep
        )
        self.registered: list[float] = []  # when each register was sent (the clock)
        world.aas.meta.events.register(
            "before-parameter-build.application-autoscaling.RegisterScalableTarget",
            self.record_register,
        )
        self.base = BASE
        self.holds: dict[str, CapacityHold] = {}
        self.fed = self.now - timedelta(minutes=LAG + 20)
        self.armed: list[tuple[Any, str, Callable[..., None]]] = []
        self.feed()

    # ------------------------------------------------------------------ the world

    @property
    def now(self) -> datetime:
        real = time.monotonic() if self.paused_at is None else self.paused_at
        return self.start + timedelta(seconds=real - self.since)

    def advance(self, delta: timedelta) -> None:
        self.start += delta

    def clock(self) -> float:
        return self.now.timestamp()

    def record_register(self, **_: Any) -> None:
        self.registered.append(self.clock())

    def writer(self, skew: float) -> tuple[HoldStore, Callable[[], float]]:
        """Another process's view of the store: its clock ``skew`` seconds off."""
        clock = (lambda: self.clock() + skew) if skew else self.clock
        return HoldStore(
            self.store.dynamodb, self.store.name, self.limits, clock, self.sleep
        ), clock

    def sleep(self, seconds: float) -> None:
        self.advance(timedelta(seconds=seconds))

    def feed(self, throttled: bool = False) -> None:
        """Calm traffic for every minute up to the metric lag, not yet put; with
        ``throttled``, a burst the minimum cannot serve in the newest two."""
        end = self.now.replace(second=0, microsecond=0) - timedelta(minutes=LAG)
        new = int((end - self.fed).total_seconds() // 60)
        if new > 0:
            put_traffic(self.world.cw, self.name, "write", CALM, end=end, minutes=range(new))
            self.fed = end
        if throttled:
            put_traffic(
                self.world.cw,
                self.name,
                "write",
                self.minimum(),
                end=end,
                minutes=range(2),
                throttles=30_000,
            )

    def minimum(self) -> int:
        return self.world.target_min(self.name, "write")

    def tick(self, deadline: float | None = None) -> dict[str, Any]:
        config = ScalerConfig.from_env(
            {
                "SCALER_TABLES": self.name,
                "SCALER_TAG_KEY": "",
                "SCALER_MODE": "reactive",
                "CAPACITY_TABLE_QUOTA": str(QUOTA),
            }
        )
        return run_tick(
            config,
            self.world.clients,
            self.now,
            out=io.StringIO(),
            store=self.store,
            clock=self.clock,
            deadline=deadline,
        )

    def disarm(self) -> None:
        for client, event, handler in self.armed:
            client.meta.events.unregister(event, handler)
        self.armed = []

    def ask(self, units: int, minutes: int, skew: float) -> None:
        """A capacity request by a writer whose clock is ``skew`` seconds off."""
        store, clock = self.writer(skew)
        try:
            made = request_capacity(
                self.name,
                write=units,
                hold=timedelta(minutes=minutes),
                timeout=timedelta(minutes=1),
                clients=self.world.clients,
                store=store,
                clock=clock,
                sleep=self.sleep,
                poll_seconds=5,
            )
        except (CapacityRequestError, Crash):
            return  # refused, or died: nothing was promised
        self.holds[made.id] = made

    # ------------------------------------------------------------------ rules

    @rule(throttled=st.booleans())
    def scaler_tick(self, throttled: bool) -> None:
        self.feed(throttled)
        self.tick()  # a table's failure is counted in the summary, never raised

    @rule(units=UNITS, minutes=st.integers(1, 30), skew=SKEWS)
    def request(self, units: int, minutes: int, skew: float) -> None:
        self.feed()
        self.ask(units, minutes, skew)

    @rule(
        seconds=st.integers(61, 300),
        units=UNITS,
        minutes=st.integers(1, 30),
        skew=SKEWS,
    )
    def a_register_outlives_the_lease(
        self, seconds: int, units: int, minutes: int, skew: float
    ) -> None:
        """The next register is sent ``seconds`` late (longer than a lease), and meanwhile
        another writer (its clock ``skew`` seconds off) makes a request."""
        self.disarm()
        client, event = (
            self.world.aas,
            ("before-parameter-build.application-autoscaling.RegisterScalableTarget"),
        )

        def stall(**_: Any) -> None:
            self.disarm()
            self.advance(timedelta(seconds=seconds))
            self.ask(units, minutes, skew)

        client.meta.events.register(event, stall)
        self.armed.append((client, event, stall))

    @rule(throttled=st.booleans(), seconds=st.sampled_from([0.0, 0.3, 1.0]), skew=SKEWS)
    def a_tick_whose_deadline_passes_in_a_lease_wait(
        self, throttled: bool, seconds: float, skew: float
    ) -> None:
        """A tick with a deadline ``seconds`` away while another writer (its clock
        ``skew`` seconds off) holds the dimension's lease: nothing is sent after it."""
        self.feed(throttled)
        other, _ = self.writer(skew)
        try:
            held = other._take(other._key(self.name, None, "write"))
        except Crash:
            held = None  # it died taking it: a lease it took runs out
        # the tick on the machine's clock alone (its waits move it on), not on real time
        # too: a register checks the deadline and is sent a store write later
        self.paused_at = time.monotonic()
        deadline = self.clock() + seconds
        sent = len(self.registered)
        try:
            self.tick(deadline)
        finally:
            self.paused_at = None
            with contextlib.suppress(Crash):  # died giving it back: it runs out
                if held is not None:
                    held.give_back()
        assert all(at <= deadline for at in self.registered[sent:])

    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        assume(self.holds)
        ident = data.draw(st.sampled_from(sorted(self.holds)))
        made = self.holds.pop(ident)
        try:
            made.release()
        except (CapacityRequestError, Crash):
            pass  # died while releasing: the hold may stay until it expires

    def restore_expired(self) -> None:
        """The restorer's run, on the machine's clock (its lease waits move the clock on)."""
        restore_expired(
            self.name,
            clients=self.world.clients,
            store=self.store,
            clock=self.clock,
            sleep=self.sleep,
        )

    @rule()
    def restore(self) -> None:
        try:
            self.restore_expired()
        except (CapacityRequestError, Crash):
            pass

    @rule(minimum=st.one_of(st.integers(1, 40).map(lambda n: n * 25), st.integers(41_000, 60_000)))
    def operator_sets_the_minimum(self, minimum: int) -> None:
        state = self.store.get(self.name, None, "write")
        # a minimum equal to one the library set, is about to, or recently meant to, reads
        # as the library's
        assume(minimum != self.minimum())
        assume(
            state is None or minimum not in (state.set_to, state.intent, state.base, *state.recent)
        )
        self.operator.register_scalable_target(
            ServiceNamespace="dynamodb",
            ResourceId=f"table/{self.name}",
            ScalableDimension="dynamodb:table:WriteCapacityUnits",
            MinCapacity=minimum,
        )
        self.base = minimum

    @rule(minutes=st.integers(1, 40))
    def time_passes(self, minutes: int) -> None:
        self.advance(timedelta(minutes=minutes))
        self.holds = {i: h for i, h in self.holds.items() if h.expires > self.now}

    @rule(
        call=st.sampled_from(["RegisterScalableTarget", "UpdateItem"]),
        skip=st.integers(0, 3),
    )
    def a_write_will_crash(self, call: str, skip: int) -> None:
        """The ``skip + 1``-th next ``call`` (a minimum set, or a store write) dies."""
        self.disarm()
        client = self.world.aas if call == "RegisterScalableTarget" else self.store.dynamodb
        service = "application-autoscaling" if call == "RegisterScalableTarget" else "dynamodb"
        event = f"before-call.{service}.{call}"
        left = [skip]

        def crash(**_: Any) -> None:
            if left[0] == 0:
                self.disarm()
                raise Crash(call)
            left[0] -= 1

        client.meta.events.register(event, crash)
        self.armed.append((client, event, crash))

    # ------------------------------------------------------------------ invariants

    @invariant()
    def no_hold_is_lost(self) -> None:
        stored = {h.id for s in self.store.table(self.name) for h in s.holds}
        active = {i for i, h in self.holds.items() if h.expires > self.now}
        assert active <= stored

    @invariant()
    def the_minimum_is_never_below_the_base_and_the_base_is_never_lost(self) -> None:
        # one read of the target's minimum for both promises (nothing runs between them)
        minimum = self.minimum()
        # the minimum is never below the base
        assert minimum >= self.base
        # the store, read against the minimum, gives the base back: it is never lost
        state = self.store.get(self.name, None, "write")
        assert reconcile(state, minimum).base == self.base

    def teardown(self) -> None:
        try:
            self.back_to_the_base()
        finally:
            self.world.aas.meta.events.unregister(
                "before-parameter-build.application-autoscaling.RegisterScalableTarget",
                self.record_register,
            )  # moto lists at most 100 targets soundly: only the live runs' are kept
            self.world.close()

    def back_to_the_base(self) -> None:
        self.disarm()
        # every hold ends, the load falls: within a few calm ticks, the base again
        self.holds = {}
        self.advance(timedelta(days=1, minutes=5))
        self.fed = self.now - timedelta(minutes=LAG + 30)
        self.restore_expired()
        decided = []
        for _ in range(4):
            self.advance(timedelta(minutes=20))
            self.feed()
            with recorded_events() as events:
                summary = self.tick()
            decided.append(
                [summary["shared_failures"], summary["failures"]]
                + [e for e in events if e.get("event") == "decision" and e["dimension"] == "write"]
            )
            if self.minimum() == self.base:
                break
        assert self.minimum() == self.base, decided
        assert all(not s.holds for s in self.store.table(self.name))


#: Runs of the machine: the profile's (tests/support/hypothesis_profiles.py: in the gate the same
#: runs every time, derandomized, so the gate never flips; ``make explore`` many more
#: random ones). ``STATE_MACHINE_EXAMPLES=N`` explores N new random runs instead.
EXPLORE = os.environ.get("STATE_MACHINE_EXAMPLES")


def test_the_state_store_keeps_its_promises(
    world: World, store_dynamodb: Any, aws_client: Any
) -> None:
    operator = aws_client("application-autoscaling")
    loaded = settings.default
    assert loaded is not None
    # hypothesis calls a factory of the machine (its annotation names the class only)
    run_state_machine_as_test(
        lambda: CapacityStateMachine(world, store_dynamodb, operator),  # type: ignore[arg-type]
        settings=settings(
            max_examples=int(EXPLORE) if EXPLORE else examples(8),
            stateful_step_count=12,
            deadline=None,
            derandomize=EXPLORE is None and loaded.derandomize,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
