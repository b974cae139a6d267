"""Capacity holds under races: requesters, releases, restores and scaler ticks in threads
(with random jitter, or started in an order drawn from the seed: `Turns`); tables, targets
and metrics in a moto server, the hold store in dynalite (whose conditional writes are
atomic, as DynamoDB's are). After every trial no hold is lost, and the minimum, read before
any restore could repair it, is what the rule says (`minimum_for`, written out here): the
base, or the larger of the base and the active holds' level."""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ddb_capacity_runtime.requests import (
    release_hold,
    request_capacity,
    restore_expired,
)
from ddb_capacity_tools.local_aws import put_traffic, recorded_events
from tests.support.moto_world import World

#: Trials in the gate: the same 12 seeds every time, so the gate never flips.
#: ``HOLD_RACE_TRIALS=N`` runs N trials instead, their seeds drawn from ``HOLD_RACE_SEED``
#: (``make explore`` runs 200 from a new seed every time).
TRIALS = int(os.environ.get("HOLD_RACE_TRIALS") or 12)
SEED = os.environ.get("HOLD_RACE_SEED", "")
#: Rounds of the churn test (`test_a_tick_and_releases_never_leave_the_minimum_raised`): 10
#: in the gate, from the same seed; with ``HOLD_RACE_TRIALS=N``, N rounds from
#: ``HOLD_RACE_SEED``.
ROUNDS = int(os.environ.get("HOLD_RACE_TRIALS") or 10)
BASE = 100
#: The write traffic of every table of the tests (units/s): each hold's baseline.
TRAFFIC = 40
#: The longest a racer waits for the one before it to reach the store (real seconds): only a
#: failing test waits it.
TURN_WAIT = 60


def poll(seconds: float) -> None:
    """A wait for a dimension's lease, a tenth of the one asked for: a lease given back is
    taken sooner (the waits' length is no part of what is checked, and shorter ones only
    interleave the racers more)."""
    time.sleep(seconds / 10)


@pytest.fixture(scope="module")
def world(aws_client_module: Any, store_dynamodb: Any) -> Iterator[World]:
    made = World(aws_client_module, store_dynamodb)
    assert made.store.table("none") == []  # the store exists before the threads start
    made.store.sleep = poll  # the tick's lease waits
    yield made
    made.close()


@pytest.fixture(scope="module")
def aws_client_module(aws_env: dict[str, str]) -> Any:
    from ddb_capacity_tools import local_aws

    return lambda service: local_aws.client(aws_env["AWS_ENDPOINT_URL"], service)


def run_all(actions: list[Callable[[], None]]) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(action: Callable[[], None]) -> None:
        try:
            action()
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(a,)) for a in actions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    # a racer still running is an error of its own, not a state to check yet
    stuck = [a for a, t in zip(actions, threads, strict=True) if t.is_alive()]
    errors += [
        TimeoutError(f"{getattr(a, '__qualname__', a)} still running after 120 s") for a in stuck
    ]
    return errors


@pytest.mark.parametrize("trial", range(TRIALS))
def test_no_hold_is_lost_and_the_minimum_follows_the_rule(world: World, trial: int) -> None:
    rng = random.Random(f"{SEED}{trial}" if SEED else trial)
    name = world.table(f"race{trial}", 10, BASE, tagged=False)
    world.target(name, "write", BASE, 40_000)
    steady_traffic(world, name)
    jitter = [rng.uniform(0, 0.05) for _ in range(6)]
    units = {k: rng.randrange(100, 5_000, 100) for k in ("a", "b", "c")}
    made: dict[str, Any] = {}
    released: set[str] = set()
    a_releases = rng.random() < 0.5
    b_releases = rng.random() < 0.3

    def ask(
        key: str, delay: float, minutes: int, release_after: float | None
    ) -> Callable[[], None]:
        def go() -> None:
            time.sleep(delay)
            # the restorer's clock runs 3 minutes ahead, within the clock skew tolerated
            # (180 s): it never takes a lease a requester still holds, so every request and
            # release is recorded
            made[key] = request_capacity(
                name,
                write=units[key],
                hold=timedelta(minutes=minutes),
                clients=world.clients,
                store=world.store,
                sleep=poll,
            )
            if release_after is not None:
                time.sleep(release_after)
                made[key].release()
                released.add(key)

        return go

    def tick() -> None:
        time.sleep(jitter[3])
        world.tick(SCALER_TABLES=name, SCALER_TAG_KEY="")

    def restore_later() -> None:  # the restorer, as if 3 minutes later: c has expired
        time.sleep(jitter[4])
        restore_expired(
            name,
            clients=world.clients,
            store=world.store,
            clock=lambda: time.time() + 180,
            sleep=poll,
        )

    errors = run_all(
        [
            ask("a", jitter[0], 15, jitter[5] if a_releases else None),
            ask("b", jitter[1], 15, jitter[5] if b_releases else None),
            ask("c", jitter[2], 1, None),
            tick,
            restore_later,
        ]
    )
    assert errors == []
    # THEN no hold is lost: exactly the holds made, and not released, are in the store, and
    # c if the restore ran before it was made (it ends c in every other trial)
    kept = {k for k in ("a", "b") if k in made and k not in released}
    stored = {h.id for s in world.store.table(name) for h in s.holds}
    assert stored - {made["c"].id} == {made[k].id for k in kept}
    # AND the minimum, before any restore could repair it, is the rule's for those holds
    held = [k for k in made if made[k].id in stored]
    assert world.target_min(name, "write") == minimum_for([units[k] for k in held])
    # AND once c has expired, a restore ends it, and the minimum follows again
    restore_expired(
        name, clients=world.clients, store=world.store, clock=lambda: time.time() + 180, sleep=poll
    )
    assert {h.id for s in world.store.table(name) for h in s.holds} == {made[k].id for k in kept}
    assert world.target_min(name, "write") == minimum_for([units[k] for k in kept])
    if not kept:
        assert not any(s.holding for s in world.store.table(name))  # nothing left behind


def steady_traffic(world: World, name: str) -> None:
    """``name``'s write traffic, `TRAFFIC` units/s from an hour before now to an hour after:
    every hold made on it in the test sees it, however long the module has run."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    put_traffic(world.cw, name, "write", TRAFFIC, end=now, minutes=range(-60, 61))


def minimum_for(units: list[int]) -> int:
    """The minimum the rule gives a table at `BASE` with `TRAFFIC` under active holds of
    ``units``, written out here and not asked of the library: the base, or, while holds are
    active, the larger of the base and the traffic seen when the first was made plus all
    their units."""
    return max(BASE, TRAFFIC + sum(units)) if units else BASE


class Turns:
    """Racers started in a given order, by events and not by waits: each starts once the
    racer before it has made its first call to the hold store (``client``), and from there
    they run side by side. Each racer runs in a thread of its own (`run_all`)."""

    def __init__(self, client: Any, order: list[str]) -> None:
        self.client = client
        self.reached = {name: threading.Event() for name in order}
        self.before = dict(zip(order[1:], order, strict=False))
        self.local = threading.local()

    def __enter__(self) -> Turns:
        self.client.meta.events.register("before-call.dynamodb", self._called)
        return self

    def __exit__(self, *_: object) -> None:
        self.client.meta.events.unregister("before-call.dynamodb", self._called)

    def _called(self, **_: Any) -> None:
        name = getattr(self.local, "name", None)
        if name is not None:
            self.reached[name].set()

    def racer(self, name: str, action: Callable[[], None]) -> Callable[[], None]:
        def go() -> None:
            self.local.name = name
            before = self.before.get(name)
            if before is not None and not self.reached[before].wait(TURN_WAIT):
                raise TimeoutError(f"{name}: {before} made no call to the store in {TURN_WAIT} s")
            action()

        return go


def test_a_tick_and_releases_never_leave_the_minimum_raised(world: World) -> None:
    """Two requests racing, then their releases racing with each other and with a tick,
    `ROUNDS` times over one table, each round's racers started in an order drawn from the
    seed (`Turns`): while both are held the minimum is the traffic seen plus both holds'
    units, and after the last release it is the base again."""
    name = world.table("churn", 10, BASE, tagged=False)
    world.target(name, "write", BASE, 40_000)
    steady_traffic(world, name)
    rng = random.Random(f"{SEED}churn" if SEED else 7)

    def ask(holds: list[Any], units: int) -> Callable[[], None]:
        def go() -> None:
            holds.append(
                request_capacity(
                    name, write=units, clients=world.clients, store=world.store, sleep=poll
                )
            )

        return go

    def release(hold_id: str) -> Callable[[], None]:
        def go() -> None:
            release_hold(name, hold_id, clients=world.clients, store=world.store, sleep=poll)

        return go

    def tick() -> None:
        world.tick(SCALER_TABLES=name, SCALER_TAG_KEY="")

    for _ in range(ROUNDS):
        holds: list[Any] = []
        units = {k: rng.randrange(100, 3_000, 100) for k in "ab"}
        asks = {k: ask(holds, u) for k, u in units.items()}
        with Turns(world.store_ddb, rng.sample(sorted(asks), 2)) as turns:
            assert run_all([turns.racer(k, a) for k, a in asks.items()]) == []
        assert world.target_min(name, "write") == minimum_for([units["a"], units["b"]])
        racers = {h.id: release(h.id) for h in holds} | {"tick": tick}
        with (
            recorded_events() as events,
            Turns(world.store_ddb, rng.sample(sorted(racers), 3)) as turns,
        ):
            assert run_all([turns.racer(k, r) for k, r in racers.items()]) == []
        # what the round did, to tell a release that left its hold from a minimum set again
        told = (
            [(h.id, h.levels, h.changes) for h in holds],
            world.store.table(name),
            [e for e in events if e.get("event") != "decision" or e.get("table") == name],
        )
        assert world.target_min(name, "write") == BASE, told
        assert not any(s.holding for s in world.store.table(name)), told
