"""The state store's leases under the races that lose a configured minimum: a register
slower than the lease, writers whose clocks are skewed, a minimum above DynamoDB's default
quota, and a tick whose leases are contended past its deadline. Targets and tables in a
moto server, the store in dynalite (atomic conditional writes, as DynamoDB's)."""

from __future__ import annotations

import io
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from ddb_capacity_runtime.aws import store as store_module
from ddb_capacity_runtime.aws.minimum import set_minimum
from ddb_capacity_runtime.aws.store import HoldLimits, HoldStore
from ddb_capacity_runtime.core.deadline import Deadline, DeadlinePassed
from ddb_capacity_runtime.core.holds import (
    CapacityRequestError,
    CapacityRequestTimeout,
    Hold,
    LeaseLost,
)
from ddb_capacity_runtime.core.memory import reconcile
from ddb_capacity_runtime.core.names import DEFAULT_TABLE_QUOTA
from ddb_capacity_runtime.core.settings import ScalerConfig
from ddb_capacity_runtime.core.tables import ScalableTarget
from ddb_capacity_runtime.events import event_fields
from ddb_capacity_runtime.scaler.shard import Batch
from ddb_capacity_runtime.scaler.tick import run_tick
from ddb_capacity_tools.local_aws import recorded_events
from tests.support.moto_world import World

BASE = 100
LATE = 1_050


@pytest.fixture(scope="module")
def world(aws_env: dict[str, str], store_dynamodb: Any) -> Iterator[World]:
    from ddb_capacity_tools import local_aws

    made = World(lambda s: local_aws.client(aws_env["AWS_ENDPOINT_URL"], s), store_dynamodb)
    assert made.store.table("none") == []  # the store exists
    yield made
    made.close()


def _target(world: World, base: str) -> tuple[str, ScalableTarget]:
    name = world.table(base, 10, BASE, tagged=False)
    world.target(name, "write", BASE, 40_000)
    target = ScalableTarget(
        resource_id=f"table/{name}",
        scalable_dimension="dynamodb:table:WriteCapacityUnits",
        min_capacity=BASE,
        max_capacity=40_000,
        target_tracking=True,
    )
    return name, target


WAIT = 30
"""The longest a test waits for another thread (real seconds): only a failing test waits it."""


class _Clock:
    """A clock (POSIX seconds) that moves only when told: by `advance`, or by a wait
    through `sleep` (each one kept in ``slept``). Thread-safe."""

    def __init__(self, start: float) -> None:
        self.now = start
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.slept.append(seconds)
            self.now += seconds


def _clocked(world: World) -> tuple[HoldStore, _Clock]:
    """The world's store (in dynalite) read by a `_Clock` set to a whole second of the true
    time: its lease waits move that clock on, and take no time."""
    clock = _Clock(float(int(time.time())))
    return HoldStore(world.store_ddb, world.store.name, clock=clock, sleep=clock.sleep), clock


def _in_flight(
    client: Any,
    clock: _Clock,
    seconds: float,
    registered: list[tuple[str, int]],
    go_on: threading.Event,
) -> threading.Event:
    """``client``'s RegisterScalableTarget calls are in flight ``seconds`` of ``clock``
    before they are sent (a slow network, or retries): each one moves ``clock`` on by them,
    sets the event returned, and is sent once ``go_on`` is set, recorded with its minimum."""
    in_flight = threading.Event()

    def stall(params: dict[str, Any], **_: Any) -> None:
        clock.advance(seconds)
        in_flight.set()
        if not go_on.wait(WAIT):
            raise TimeoutError("the second writer neither waited for the lease nor took it")
        registered.append(("stalled", params["MinCapacity"]))

    client.meta.events.register(
        "before-parameter-build.application-autoscaling.RegisterScalableTarget", stall
    )
    return in_flight


def _aas(world: World, aws_env: dict[str, str], **config: Any) -> Any:
    return boto3.client(
        "application-autoscaling",
        endpoint_url=aws_env["AWS_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106 (moto takes any key; not a secret)
        config=Config(**config),
    )


@pytest.fixture
def short_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2-second lease, and no skew allowance: the writers share one clock here."""
    monkeypatch.setattr(store_module, "LEASE", timedelta(seconds=2))
    monkeypatch.setattr(store_module, "CLOCK_SKEW", timedelta(0))


def _in_thread(action: Callable[[], None]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def _two_writers(
    world: World, base: str, first_client: Any, stall: float, wait: float
) -> tuple[str, list[tuple[str, int]], list[BaseException], list[float]]:
    """A first writer setting the minimum to 1,050 through ``first_client``, whose register
    has been in flight ``stall`` s (of the store's clock) when a second writer (waiting up to
    ``wait`` s for the lease) wants the lease, to set it back to the base. The register is
    sent once the second writer has waited for the lease (a wait that lasts until the first
    writer is done) or has held it and given it back. Returns the table, the registers in
    the order sent, what the first writer raised, and the second writer's waits."""
    name, target = _target(world, base)
    store, clock = _clocked(world)
    order: list[tuple[str, int]] = []
    go_on = threading.Event()
    in_flight = _in_flight(first_client, clock, stall, order, go_on)

    def first() -> None:
        with store.lease(name, None, "write", deadline=clock() + 1) as lease:
            set_minimum(lease, first_client, target, BASE, LATE)

    thread, errors = _in_thread(first)
    assert in_flight.wait(WAIT), errors

    def until_the_first_is_done(seconds: float) -> None:
        clock.sleep(seconds)
        go_on.set()
        thread.join(WAIT)

    try:
        with store.lease(
            name, None, "write", deadline=clock() + wait, sleep=until_the_first_is_done
        ) as lease:
            order.append(("second", BASE))
            set_minimum(lease, world.aas, target, BASE, BASE)
    finally:
        go_on.set()
        thread.join(WAIT)
    assert not thread.is_alive()
    return name, order, errors, clock.slept


@pytest.mark.usefixtures("short_lease")
def test_a_register_slower_than_the_lease_is_never_overtaken(
    world: World, aws_env: dict[str, str]
) -> None:
    """GIVEN a writer whose RegisterScalableTarget (to 1,050) stalls 4 s under a 2 s lease
    WHEN a second writer wants the lease meanwhile, to restore the base
    THEN the first writer's lease was renewed for as long as its call can take: the second
    waits, registers after it, and the configured minimum (100) is never lost."""
    # botocore's defaults: a call may take 615 s
    name, order, errors, waits = _two_writers(world, "slowreg", _aas(world, aws_env), 4.0, 30)
    store = world.store
    assert errors == []  # the first writer was told the truth: its minimum was recorded
    assert len(waits) == 1  # the second found the lease held, and took it once given back
    assert order == [("stalled", LATE), ("second", BASE)]
    minimum = world.target_min(name, "write")
    assert minimum == BASE
    assert reconcile(store.get(name, None, "write"), minimum).base == BASE


@pytest.mark.usefixtures("short_lease")
def test_a_register_that_lands_after_its_lease_was_taken_is_never_adopted(
    world: World, aws_env: dict[str, str]
) -> None:
    """GIVEN a writer whose register outlives even its renewed lease (a client bounded to
    5 s, and a request that AWS applies 12 s later)
    WHEN a second writer takes the lease after it ran out and restores the base, and then
    the first writer's register lands (the minimum is 1,050)
    THEN the first writer is told its minimum was set but not recorded, and the next reader
    reads 1,050 as the library's own (a recent intent), not as a configured minimum."""
    bounded = _aas(
        world,
        aws_env,
        connect_timeout=2,
        read_timeout=3,
        retries={"mode": "standard", "total_max_attempts": 1},
    )
    name, order, errors, waits = _two_writers(world, "latereg", bounded, 12.0, 20)
    store = world.store
    assert waits == []  # the renewed lease had run out: the second took it at once
    assert order == [("second", BASE), ("stalled", LATE)]
    assert world.target_min(name, "write") == LATE  # the late register landed
    (lost,) = errors
    assert isinstance(lost, LeaseLost)
    assert "MinCapacity was set to 1,050" in str(lost)
    memory = reconcile(store.get(name, None, "write"), LATE)
    assert (memory.base, memory.set_to, memory.changed_elsewhere) == (BASE, LATE, False)


class _Skewed:
    """A clock ``offset`` seconds off the true time (moved on by ``advance``)."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def __call__(self) -> float:
        return time.time() + self.offset


@pytest.mark.parametrize(("holder", "taker"), [(-90, 90), (0, 90), (-90, 0), (90, -90)])
def test_a_writer_with_a_skewed_clock_never_takes_a_held_lease(
    world: World, holder: float, taker: float
) -> None:
    """GIVEN a lease held now by a writer whose clock is ``holder`` seconds off
    WHEN a writer whose clock is ``taker`` seconds off wants it that same second
    THEN it waits (90 s either way is within the skew tolerated); and once the lease
    plus the skew tolerated have passed by its clock, it gets it (a dead holder's lease
    still runs out)."""
    name = world.name(f"skew{holder}{taker}".replace("-", "m"))
    holding = HoldStore(world.store_ddb, world.store.name, clock=_Skewed(holder))
    taking_clock = _Skewed(taker)
    taking = HoldStore(world.store_ddb, world.store.name, clock=taking_clock)
    with holding.lease(name, None, "write", deadline=0) as held:
        with pytest.raises(CapacityRequestTimeout):
            with taking.lease(name, None, "write", deadline=taking.clock() + 0.3):
                pass
        later = held.until + store_module.CLOCK_SKEW.total_seconds() + 1
        taking_clock.offset += later - taking.clock()
        with taking.lease(name, None, "write", deadline=taking.clock()) as taken:
            assert taken.version == held.version + 1
        with pytest.raises(LeaseLost):  # fenced: the first writer can write nothing more
            held.write(BASE)
        held.done = True


def test_minimums_above_the_default_quota_are_remembered(world: World) -> None:
    """GIVEN a table quota of 80,000
    WHEN the library raises a minimum from 30,000 to 43,572, and records a hold of 2,000
    over a configured minimum of 50,000
    THEN both are read back as the library's: the raise is not someone else's change, and
    the hold is not malformed."""
    store = HoldStore(world.store_ddb, world.store.name, HoldLimits(quota=80_000))
    name = world.name("quota")
    with store.lease(name, None, "write", deadline=store.clock()) as lease:
        lease.write(30_000, set_to=43_572)
    memory = reconcile(store.get(name, None, "write"), 43_572)
    assert (memory.base, memory.set_to, memory.changed_elsewhere) == (30_000, 43_572, False)
    expires = datetime.now(UTC) + timedelta(hours=1)
    hold = Hold("h1", None, "read", 2_000, expires, 50_000)
    with store.lease(name, None, "read", deadline=store.clock()) as lease:
        lease.write(50_000, [hold])
    state = store.get(name, None, "read")
    assert state is not None and state.malformed == () and state.holds[0].baseline == 50_000
    # a store given no quota (DynamoDB's default) reads them too: they are levels the
    # table had, not raises, so a restorer run with the default quota still restores them
    default = HoldStore(world.store_ddb, world.store.name).get(name, None, "read")
    assert default is not None and default.base == 50_000 and default.malformed == ()
    assert HoldLimits().quota == DEFAULT_TABLE_QUOTA


@pytest.mark.parametrize(("lease_seconds", "registers"), [(60, 0), (1, 1)])
def test_contended_leases_never_carry_a_tick_past_its_deadline(
    world: World, monkeypatch: pytest.MonkeyPatch, lease_seconds: int, registers: int
) -> None:
    """GIVEN six throttled dimensions under scalable targets, each one's lease held by
    another process (for a minute or more, or running out a second after another's)
    WHEN a batch with a deadline 3 s away ticks them (its clock moves only while it waits)
    THEN no RegisterScalableTarget is sent after the deadline (one is before it, where a
    lease ran out in time), the batch ends at it (its waits for the leases end there), and
    what was left fails the batch and is counted (DeadlinePassed)."""
    monkeypatch.setattr(store_module, "CLOCK_SKEW", timedelta(0))
    names = [world.table(f"late{lease_seconds}{n}", 10, 10, gsi=(10, 10)) for n in "ab"]
    dims = [(n, i, d) for n in names for i in (None, "byUser") for d in ("read", "write")][:6]
    for name, index, dim in dims:
        world.target(name, dim, 10, 1_000, index=index)
        world.traffic(name, dim, 10, throttles=500, minutes=range(1, 6), index=index)
    store, clock = _clocked(world)
    sent: list[float] = []

    def register(**_: Any) -> None:
        sent.append(clock())

    event = "before-call.application-autoscaling.RegisterScalableTarget"
    config = ScalerConfig.from_env({"SCALER_TABLES": ",".join(names), "SCALER_MODE": "reactive"})
    out = io.StringIO()
    with ExitStack() as held:  # leases held by another process, given back after the tick
        for n, (name, index, dim) in enumerate(dims, start=1):
            monkeypatch.setattr(store_module, "LEASE", timedelta(seconds=lease_seconds * n))
            held.enter_context(store.lease(name, index, dim, deadline=clock()))
        world.aas.meta.events.register(event, register)
        held.callback(world.aas.meta.events.unregister, event, register)
        deadline = clock() + 3
        batch = Batch(world.now, datetime.fromtimestamp(deadline, UTC), 1, 1, tuple(names))
        with recorded_events():
            summary = run_tick(
                config, world.clients, world.now, out, store=store, batch=batch, clock=clock
            )
    assert len(sent) == registers and all(at <= deadline for at in sent), (sent, deadline)
    assert clock() == pytest.approx(deadline, abs=1e-6), (clock(), deadline, clock.slept)
    assert summary["failures"], summary
    assert '"DeadlinePassed"' in out.getvalue()


def _refuse_give_backs(client: Any) -> Callable[[], None]:
    """Make ``client``'s UpdateItem calls that give a lease back (``REMOVE`` its owner and
    expiry) fail as DynamoDB's throttling does, until the returned function is called."""
    armed = [True]

    def hook(params: dict[str, Any], **_: Any) -> None:
        if armed[0] and params.get("UpdateExpression", "").startswith("REMOVE #o, #u"):
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "x"}},
                "UpdateItem",
            )

    event = "before-parameter-build.dynamodb.UpdateItem"
    client.meta.events.register(event, hook)
    return lambda: client.meta.events.unregister(event, hook)


def test_a_lease_not_given_back_never_hides_the_failure_of_the_work_under_it(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """The work under a lease fails, and so does giving the lease back: the work's own error
    is the one raised (the one its caller counts and reports), and the lease left behind is
    logged with its table, item and error."""
    caplog.set_level(logging.ERROR, logger="ddb_capacity_runtime")
    name, _ = _target(world, "giveback")
    undo = _refuse_give_backs(world.store_ddb)
    try:
        with pytest.raises(ValueError, match="the work failed"):
            with world.store.lease(name, None, "write", deadline=time.time() + 5) as lease:
                lease.write(BASE)
                raise ValueError("the work failed")
        with pytest.raises(CapacityRequestError, match="ProvisionedThroughputExceeded"):
            with world.store.lease(name, "byCustomer", "read", deadline=time.time() + 5):
                pass  # work that succeeds: a lease not given back is still its caller's error
    finally:
        undo()
    (logged,) = [f for r in caplog.records if (f := event_fields(r))]
    assert logged["event"] == "lease-give-back-failed"
    assert (logged["table"], logged["item"]) == (name, "table:write")
    assert "ProvisionedThroughputExceededException" in logged["error"]


def test_a_refused_register_leaves_no_intent_behind(world: World) -> None:
    """GIVEN a dimension at its base of 100, whose RegisterScalableTarget is refused
    WHEN a writer under its lease sets the minimum to 1,050
    THEN the refusal is raised, the minimum stays 100, and the store holds no minimum about
    to be set: the base is what the next reader goes by."""
    name, target = _target(world, "refusedreg")

    def refuse(**_: Any) -> None:
        raise ClientError(
            {"Error": {"Code": "ConcurrentUpdateException", "Message": "busy"}},
            "RegisterScalableTarget",
        )

    event = "before-call.application-autoscaling.RegisterScalableTarget"
    world.aas.meta.events.register(event, refuse)
    try:
        with world.store.lease(name, None, "write", deadline=time.time() + 5) as lease:
            with pytest.raises(ClientError, match="ConcurrentUpdateException"):
                set_minimum(lease, world.aas, target, BASE, LATE)
    finally:
        world.aas.meta.events.unregister(event, refuse)
    assert world.target_min(name, "write") == BASE
    held = world.store.get(name, None, "write")
    assert held is not None and (held.base, held.intent, held.set_to) == (BASE, None, None)


def test_a_minimum_past_its_deadline_is_neither_written_nor_sent(world: World) -> None:
    """GIVEN a dimension at its base of 100, under its lease, and a deadline already passed
    WHEN a writer sets the minimum to 1,050
    THEN it is told the deadline passed, and neither the store nor the target was touched."""
    name, target = _target(world, "pastdeadline")
    sent: list[object] = []

    def record(params: object, **_: Any) -> None:
        sent.append(params)

    event = "before-call.application-autoscaling.RegisterScalableTarget"
    world.aas.meta.events.register(event, record)
    passed = Deadline(time.time() - 1)
    try:
        with world.store.lease(name, None, "write", deadline=time.time() + 5) as lease:
            with pytest.raises(DeadlinePassed, match="MinCapacity 1,050"):
                set_minimum(lease, world.aas, target, BASE, LATE, deadline=passed)
    finally:
        world.aas.meta.events.unregister(event, record)
    assert sent == [] and world.target_min(name, "write") == BASE
    held = world.store.get(name, None, "write")
    assert held is None or (held.intent, held.recent) == (None, ())
