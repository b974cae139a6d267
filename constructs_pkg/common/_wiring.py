"""Runs in: CDK app (synth time).

Constructs of one app that serve the same tables find each other, so that nobody wires them
by hand: a construct that keeps tables' holds (a ``CapacityRequests``) says which tables it
serves (`serve`), and a scaler says each table it comes to manage (`manage`); whichever of
the two is made first, the holder's ``join`` is called with the scaler and the tables they
share once they share one. A holder asks which others serve its tables before it serves
them (`holders`): a table has one. The features' layers stay as they are: the scaler knows
nothing of the requests, only of this registry, one per app.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from constructs import Construct

Key = tuple[str, str]
"""What tells a table apart in an app (`table._parts.table_keys`)."""

Join = Callable[[Any, frozenset[Key]], None]
"""A holder's ``join(scaler, shared)``: ``scaler`` manages the tables ``shared`` (their
keys) that the holder serves."""


@dataclass
class _Holder:
    owner: Construct
    keys: frozenset[Key]
    join: Join


@dataclass
class _Registry:
    holders: list[_Holder] = field(default_factory=list)
    managed: list[tuple[Any, set[Key]]] = field(default_factory=list)


_APPS: weakref.WeakKeyDictionary[Any, _Registry] = weakref.WeakKeyDictionary()
"""Each app's registry, by its root construct (every app's root has the same address, so
the object itself), gone with it."""


def _registry(scope: Construct) -> _Registry:
    root = scope.node.root
    registry = _APPS.get(root)
    if registry is None:
        registry = _APPS[root] = _Registry()
    return registry


def holders(scope: Construct, keys: Collection[Key]) -> list[tuple[Construct, frozenset[Key]]]:
    """Each holder of ``scope``'s app that serves one of the tables ``keys``, with the keys
    it shares, in the order they were made."""
    wanted = frozenset(keys)
    return [(h.owner, h.keys & wanted) for h in _registry(scope).holders if h.keys & wanted]


def serve(holder: Construct, keys: Collection[Key], join: Join) -> None:
    """``holder`` serves the tables ``keys``: ``join`` every scaler of the app that manages
    one of them, now and as they come."""
    registry = _registry(holder)
    entry = _Holder(holder, frozenset(keys), join)
    registry.holders.append(entry)
    for scaler, managed in registry.managed:
        if managed & entry.keys:
            join(scaler, frozenset(managed & entry.keys))


def manage(scaler: Construct, keys: Collection[Key]) -> None:
    """``scaler`` manages a table of ``keys``: it is joined to every holder that serves it."""
    registry, new = _registry(scaler), frozenset(keys)
    for known, managed in registry.managed:
        if known is scaler:
            managed.update(new)
            break
    else:
        registry.managed.append((scaler, set(new)))
    for holder in registry.holders:
        if shared := holder.keys & new:
            holder.join(scaler, shared)
