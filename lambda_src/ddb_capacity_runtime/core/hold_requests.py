"""Runs in: broker Lambda, workers (the user's own jobs), workstation (``ddb-capacity``).

What a capacity request decides before it writes anything (`core.holds` has the hold and
the rules every function shares): a hold's release token,
a request's default hold and timeout, and how a dimension is raised to its holds
(`held_raise`). Apart from `core.holds` so that the functions that only end or read holds
(the scaler's tick, the settle step) do not carry it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

DEFAULT_HOLD = timedelta(minutes=15)
DEFAULT_TIMEOUT = timedelta(minutes=10)


def new_token() -> str:
    """A hold's release token: returned to its requester only; the store keeps its digest.
    Never begins with '-', which a command line would read as an option (``--token TOKEN``)."""
    token = secrets.token_urlsafe(24)
    while token.startswith("-"):
        token = secrets.token_urlsafe(24)
    return token


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
