"""Runs in: scaler Lambda, CDK app (synth), workstation (simulator).

The reservation floor: DynamoDB reserved capacity covers the Region's single-Region
provisioned units of a dimension of Standard-class tables and their GSIs, whichever tables
hold them (`not_covered`: not a global table's writes, not a Standard-IA table), and is
paid whether used or not, so a decrease below it saves nothing. `Reservation` is the
reserved units; a `Floor` cuts a tick's decreases so that the covered provisioned total of
each dimension (read, write; tables and GSIs) stays at or above them
(`plan.floor_planned` applies it to a tick's changes). Raises are never limited. Pure; the
scaler's tick and the simulator's reservation-aware policies (``+reserved``) both use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .names import DIMENSIONS
from .tables import STANDARD, table_class
from .validators import is_whole

BLOCK_UNITS = 100
"""Reserved capacity is bought in blocks of this many read or write units."""
MAX_RESERVED_UNITS = 10_000_000
"""The most reserved units of one dimension the library takes (100,000 blocks)."""


def reserved_problem(value: object) -> str | None:
    """What is wrong with ``value`` as reserved units (None: nothing): it must be a whole
    number of hundreds from 0 to MAX_RESERVED_UNITS (0: no reservation)."""
    if not is_whole(value, 0, MAX_RESERVED_UNITS) or value % BLOCK_UNITS:
        return (
            f"expected a whole number of hundreds (blocks of {BLOCK_UNITS} units) from 0 "
            f"to {MAX_RESERVED_UNITS:,} (0: no reservation)"
        )
    return None


@dataclass(frozen=True)
class Reservation:
    """The Region's reserved read and write units (whole hundreds; 0: none)."""

    read_units: int = 0
    write_units: int = 0

    def units(self, dimension: str) -> int:
        """The reserved units of ``dimension`` (``read`` or ``write``)."""
        return self.read_units if dimension == "read" else self.write_units

    def __bool__(self) -> bool:
        return bool(self.read_units or self.write_units)


def not_covered(description: Mapping[str, Any], replica: bool) -> tuple[set[str], bool]:
    """The dimensions of a table (DescribeTable's ``Table``, untrusted) whose units reserved
    capacity does not cover, and whether its class is unknown: reserved capacity covers the
    single-Region provisioned units of Standard-class tables and their GSIs only, so none of
    a table of another class or of one whose class cannot be read (then counted), nor a
    global table's writes (``replica``: named in the scaler's replicas, or with
    ``Replicas`` in the answer)."""
    named = table_class(description)
    if named != STANDARD:
        return set(DIMENSIONS), named is None
    replicas = description.get("Replicas")
    return ({"write"} if replica or replicas not in (None, []) else set()), False


class Floor:
    """What decreases may still take from each dimension's provisioned total before it
    reaches the reservation (its headroom), spent as decreases are allowed, in the order
    they are asked for. A total starts from the capacities counted (`over`): a capacity
    not known counts 0, so an unknown never allows a decrease. Raises neither spend nor
    add headroom (one may still fail)."""

    def __init__(self, reservation: Reservation, totals: dict[str, int]) -> None:
        self.reservation = reservation
        self.room = {d: totals.get(d, 0) - reservation.units(d) for d in DIMENSIONS}
        """per dimension, the units decreases may still take (negative: below already)"""

    def copy(self) -> Floor:
        """A floor with the same headroom left, spent apart from this one."""
        return Floor(
            self.reservation, {d: r + self.reservation.units(d) for d, r in self.room.items()}
        )

    @classmethod
    def over(cls, reservation: Reservation, capacities: Iterable[tuple[str, int]]) -> Floor:
        """The floor over ``capacities``: (dimension, provisioned units) of every table and
        GSI the decisions cover."""
        totals: dict[str, int] = {}
        for dimension, units in capacities:
            totals[dimension] = totals.get(dimension, 0) + max(0, int(units))
        return cls(reservation, totals)

    def cut(self, dimension: str, level: int, new: int, worth: float = 0) -> int:
        """The lowest capacity ``level`` may fall to, of the ``new`` one asked for, with the
        dimension's total kept at or above its reservation; the fall allowed is spent. A
        fall cut to less than ``worth`` of ``level`` (the policy's minimum saving) is none,
        and spends nothing. ``new`` at or above ``level`` (no fall) is returned as it is."""
        if new >= level or not self.reservation.units(dimension):
            return new
        room = self.room[dimension]
        allowed = max(new, level - max(room, 0))
        if allowed > new and level - allowed < worth * level:
            return level
        self.room[dimension] = room - (level - allowed)
        return allowed
