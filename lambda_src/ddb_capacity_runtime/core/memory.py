"""Runs in: scaler Lambda, broker Lambda, workers (the user's own jobs, in direct mode).

One memory per dimension: whose minimum a scalable target has. Pure.

The state store keeps, for a dimension whose minimum the library holds above its
configured value, that configured value (``base``), the minimum the library last set
(``set_to``), the one it is about to set (``intent``, written before
RegisterScalableTarget) and its recent intents (``recent``: a register can land after the
lease it was sent under was lost). Every reader reconciles that memory with the minimum
the target reports before acting:

- the minimum is the one the library set (or was about to set, or recently meant to set):
  the memory holds;
- the library holds nothing raised and the minimum is the base: nothing to remember;
- any other minimum was set by someone else (an operator, a deploy): it becomes the new
  base, is never undone and never lost, and whatever the library set is forgotten.

A memory written before ``set_to`` existed (a 0.4 hold store item: a base and holds) is
the library's while the minimum is the level its holds asked for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol


class _Hold(Protocol):
    @property
    def units(self) -> int: ...
    @property
    def baseline(self) -> int: ...


class _State(Protocol):
    @property
    def base(self) -> int | None: ...
    @property
    def set_to(self) -> int | None: ...
    @property
    def intent(self) -> int | None: ...
    @property
    def holds(self) -> Iterable[_Hold]: ...
    @property
    def recent(self) -> Iterable[int]: ...


@dataclass(frozen=True)
class Memory:
    """A dimension's minimum, reconciled: its configured ``base``, the minimum the library
    holds it at (``set_to``; None when the minimum is the base) and whether someone else
    set the minimum since (``base`` is then that minimum)."""

    base: int
    set_to: int | None = None
    changed_elsewhere: bool = False


def reconcile(state: _State | None, current: int) -> Memory:
    """What ``state`` (the store's item, or None) means now that the target's minimum is
    ``current``."""
    if state is None or state.base is None:
        return Memory(current)
    base = state.base
    mine = {v for v in (state.set_to, state.intent) if v is not None}
    if not mine:
        holds = list(state.holds)
        if holds:  # written before set_to: the level its holds asked for is the library's
            mine.add(max(base, min(h.baseline for h in holds) + sum(h.units for h in holds)))
    if current == base:
        return Memory(base)
    if current in mine or current in set(state.recent):
        return Memory(base, current)
    return Memory(current, None, changed_elsewhere=True)


def why_wait(
    seen: tuple[int | None, ...],
    now_seen: tuple[int | None, ...],
    read_minimum: int,
    minimum: int | None,
    held: int,
    new: int,
) -> str | None:
    """Why a change of a minimum decided on what a tick read (``seen``, ``read_minimum``)
    must wait for the next tick, now that the store's memory (``now_seen``), the target's
    minimum (None: unknown, as if moved) and the level of the holds (``held``) are read
    again under the dimension's lease; None: it may go ahead. A memory or minimum that
    moved meanwhile (a capacity request, a stale listing) is never acted on, nor a change
    below a hold recorded since."""
    if now_seen != seen or minimum != read_minimum:
        return "its minimum moved since it was read"
    if new < held:
        return f"a hold since it was read needs {held:,}"
    return None
