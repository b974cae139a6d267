"""Runs in: scaler Lambda.

What every step of one tick shares (`TickState`): its configuration, clients, clock,
deadline and store, and what it has found failed, skipped or throttled so far."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TextIO, TypeVar

from ..aws import discovery
from ..aws.clients import Clients
from ..aws.error_codes import describe_error, is_throttle
from ..aws.store import HoldStore
from ..core.deadline import Deadline, DeadlinePassed
from ..core.holds import CapacityRequestTimeout
from ..core.names import WORST_TABLE_METRICS
from ..core.plan import reservation_floor
from ..core.reservation import Floor, Reservation
from ..core.series import Key
from ..core.settings import ScalerConfig
from ..core.tables import ManagedTable
from ..events import emf_record, emit_metrics

T = TypeVar("T")


@dataclass(repr=False, eq=False)
class TickState:
    """What every step of one tick shares, and what it has found failed so far."""

    config: ScalerConfig
    clients: Clients
    now: datetime
    out: TextIO | None
    store: HoldStore
    deadline: Deadline = field(default_factory=Deadline)
    """after it, nothing is sent (`core.deadline`)"""
    late: int = 0
    """tables not decided, and changes not sent, because the deadline passed"""
    shared_failures: list[str] = field(default_factory=list)
    """shared calls that failed: no decrease anywhere this tick"""
    throttled: list[str] = field(default_factory=list)
    """shared calls throttled, or answered with an entry that says nothing sound, whose loss is
    confined to what they read (tables not managed this tick, their own targets read instead,
    series unknown): counted, and decreases elsewhere go on"""
    failures: dict[str, list[str]] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)
    floor: Floor | None = None
    """the reservation floor over the tables decided (None: no reservation)"""
    counted: set[str] = field(default_factory=set)
    """tables whose own record carries ``Failures`` (a decided table's, 0 or 1)"""
    witnesses: dict[tuple[str | None, Key], datetime | None] = field(default_factory=dict)
    """the newest datapoint of each delivery witness read this tick (`core.delivery`), by
    Region (None: this one) and dimension: of the dimensions about to be lowered on minutes
    read as idle only; one not read is absent"""
    markers: set[tuple[str, str]] | None = None
    """the state store's markers read this tick, as ``(table, what)`` (None: not read)"""
    missing: dict[tuple[str | None, Key], datetime] = field(default_factory=dict)
    """since when each witness read this tick without a recent datapoint has been found
    so, kept in the state store (`core.delivery.MISSING_MARK`); one not known is absent"""
    replica_idle: dict[Key, list[bool]] = field(default_factory=dict)
    """per write dimension of a global table: its minutes read as idle in one of its
    replicas' own series, before merging (`core.delivery.Elsewhere`)"""

    def shared(
        self,
        what: str,
        call: Callable[[], T],
        default: T,
        *,
        confined: bool = False,
    ) -> T:
        """``call`` (botocore retries each AWS call in it); a failure is recorded and
        ``default`` returned. A throttled call whose default
        loses nothing another table's decision rests on (``confined``), or one whose answer
        held an entry that says nothing sound (`discovery.UnsoundListing`: the table it
        belongs to fails alone), is recorded in `throttled` instead of forbidding
        decreases."""
        try:
            return call()
        except Exception as exc:
            limited = is_throttle(exc) or isinstance(exc, discovery.UnsoundListing)
            into = self.throttled if confined and limited else self.shared_failures
            into.append(f"{what}: {describe_error(exc)}")
            return default

    def set_floor(self, tables: list[ManagedTable], share: tuple[int, int] | None) -> None:
        """The tick's reservation floor (`reservation_floor`): over a batch's ``share`` of the
        reservation where its message carries one, else the whole. With a reservation, a
        table whose class could not be read fails (none of its units counted as covered)."""
        whole = self.config.reservation
        for table in tables if whole else ():
            if table.class_unknown:
                self.fail(table.name, "its table class could not be read: not covered")
        self.floor = reservation_floor(Reservation(*share) if share else whole, tables)

    def fail(self, table: str, reason: str) -> None:
        """Record a failure of ``table``."""
        self.failures.setdefault(table, []).append(reason)

    def fail_late(self, table: str, reason: str) -> None:
        """Record a failure of ``table`` because the deadline passed (counted)."""
        self.late += 1
        self.fail(table, reason)

    def passed(self, exc: Exception) -> bool:
        """Whether ``exc`` is the deadline's: raised by it, or a lease wait cut at it."""
        return isinstance(exc, DeadlinePassed) or (
            isinstance(exc, CapacityRequestTimeout) and self.deadline.left() <= 0
        )

    def emf(self, values: Mapping[str, float], table: str | None = None) -> None:
        """One Embedded Metric Format record: per table, or for the tick (`emf_record`: its
        deployment's, the store's)."""
        if table is not None and "Failures" in values:
            self.counted.add(table)
        record = emf_record(
            self.config.namespace,
            values,
            self.now.timestamp(),
            store=self.store.name,
            table=table,
            undimensioned=WORST_TABLE_METRICS,
        )
        emit_metrics(record, self.out)
