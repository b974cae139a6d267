"""Runs in: scaler Lambda, workstation (simulator).

The autopilot's plan of floors, as the forecast makes it and a tick obeys it: plain data,
its tag encoding and its parser. Pure; `forecast` makes plans."""

from __future__ import annotations

from dataclasses import dataclass

STEP_MINUTES = 5
"""The forecast's step: CloudWatch's 5-minute sums, as average units per second."""
PLAN_MINUTES = 75
"""How far a plan reaches: the hour until the next forecast, and a spare quarter hour should that
one fail."""
PLAN_STEPS = PLAN_MINUTES // STEP_MINUTES
MAX_RESERVE = 27
"""DynamoDB's decreases a day: 4 at any time, and one more for each hour without one."""


@dataclass(frozen=True)
class FloorPlan:
    """What a forecast plans for one dimension: the capacity (units) to have in force
    during each ``STEP_MINUTES`` step from minute ``start`` (on the caller's clock: epoch
    minutes in the Lambda). The Lambda keeps it between ticks in the state store
    (`value`, `parse_plan`); the simulator keeps the object."""

    start: int
    floors: tuple[int, ...]
    aim: int = 70
    """the target utilization (percent) the floors are sized at, and the dimension aims at while the
    plan is in force: higher than the configured one when the forecast was good
    (core.policy.aim_for)"""
    reserve: int = 0
    """decreases to keep for the falls the forecast sees later in the UTC day (one each), instead of
    the fixed reserve (core.forecast.falls_ahead)"""
    least: int = 0
    """the capacity (units) the smallest of those falls saves: a decrease that saves at least as
    much outranks it and may spend the reserve; 0 when not known (the reserve is then spent only for
    a large saving, as without a plan)"""

    @property
    def end(self) -> int:
        return self.start + len(self.floors) * STEP_MINUTES

    def at(self, minute: int) -> int | None:
        """The floor in force at ``minute``, or None outside the plan."""
        step = (minute - self.start) // STEP_MINUTES  # (before self.end: a step it has)
        if minute < self.start or step >= len(self.floors):
            return None
        return self.floors[step]

    def highest(self, minute: int, minutes: int) -> int | None:
        """The highest floor of the steps from ``minute`` to ``minute + minutes``, or None
        when the plan has none of them."""
        first = (minute - self.start) // STEP_MINUTES
        end = -(-(minute + minutes - self.start) // STEP_MINUTES)  # steps starting before
        # (each at least 0, by conditionals: a tick asks each plan, and max costs more)
        found = self.floors[first if first > 0 else 0 : end if end > 0 else 0]
        return max(found) if found else None

    def value(self) -> str:
        """As the state store keeps it: ``<start>:<aim>:<reserve>:<least>:<floor>/...``."""
        floors = "/".join(str(f) for f in self.floors)
        return f"{self.start}:{self.aim}:{self.reserve}:{self.least}:{floors}"


def _units(text: str, low: int, quota: int) -> bool:
    return text.isdigit() and len(text) <= 7 and low <= int(text) <= quota


def parse_plan(raw: str, quota: int) -> FloorPlan | None:
    """A plan read back from the state store (or a 0.4 tag), or None for anything that is
    not one exactly (it is not trusted): a start that is a whole minute on a step boundary,
    an aim from 20 to 90 %, a reserve from 0 to MAX_RESERVE decreases, the least fall's
    saving from 0 to ``quota`` units, and 1 to PLAN_STEPS floors, each a whole number of
    units from 1 to ``quota``. A tag without the least fall (``<start>:<aim>:<reserve>:
    <floors>``, as version 0.4.0 wrote it) reads with ``least`` 0."""
    fields = raw.split(":")
    if len(fields) == 4:
        fields.insert(3, "0")
    if len(fields) != 5:
        return None
    start, aim, reserve, least, rest = fields
    parts = rest.split("/")
    if (
        not start.isdigit()
        or len(start) > 12
        or int(start) % STEP_MINUTES
        or not (aim.isdigit() and len(aim) == 2 and 20 <= int(aim) <= 90)
        or not (reserve.isdigit() and len(reserve) <= 2 and int(reserve) <= MAX_RESERVE)
        or not _units(least, 0, quota)
        or not 1 <= len(parts) <= PLAN_STEPS
        or not all(_units(p, 1, quota) for p in parts)
    ):
        return None
    return FloorPlan(int(start), tuple(int(p) for p in parts), int(aim), int(reserve), int(least))
