"""Runs in: broker Lambda, signals Lambda, workers (the user's own jobs, in direct mode).

How a dimension is raised to what its holds ask (a capacity request's, a surge's),
decided on what was read under the dimension's lease before anything is written. Pure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HeldRaise:
    """What raising a dimension to its holds takes: the level ``want``; whether the
    scalable target's minimum moves to it (``set_min``); whether the table is below it
    (``update_table``: an UpdateTable); ``over_max``: the target's max is below it (refused,
    nothing written)."""

    want: int
    set_min: bool = False
    update_table: bool = False
    over_max: bool = False


def held_raise(
    base: int,
    held: int,
    provisioned: int,
    target_min: int | None = None,
    target_max: int | None = None,
) -> HeldRaise:
    """Raise a dimension whose configured base is ``base`` to the level of its active holds
    ``held`` (never below the base): its scalable target's minimum (``target_min`` and
    ``target_max``; None: no target) moves up to it when below, and the table
    (``provisioned``) too. Never lowers anything."""
    want = max(base, held)
    if target_max is not None and want > target_max:
        return HeldRaise(want, over_max=True)
    set_min = target_min is not None and target_min < want
    return HeldRaise(want, set_min, provisioned < want)
