"""Runs in: CDK app (synth time).

Constructs of one app that serve the same tables find each other, so that nobody wires them
by hand: a construct that keeps tables' holds (a ``CapacityRequests``) says which tables it
serves (`serve`), and a scaler says each table it comes to manage (`manage`); whichever of
the two is made first, the holder's ``join`` is called with the scaler once they share a
table. The features' layers stay as they are: the scaler knows nothing of the requests, only
of this registry, one per app.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from constructs import Construct

Key = tuple[str, str]
"""What tells a table apart in an app (`table._parts.table_keys`)."""


@dataclass
class _Holder:
    keys: frozenset[Key]
    join: Callable[[Any], None]


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


def serve(holder: Construct, keys: Collection[Key], join: Callable[[Any], None]) -> None:
    """``holder`` serves the tables ``keys``: ``join`` every scaler of the app that manages
    one of them, now and as they come."""
    registry = _registry(holder)
    entry = _Holder(frozenset(keys), join)
    registry.holders.append(entry)
    for scaler, managed in registry.managed:
        if managed & entry.keys:
            join(scaler)


def manage(scaler: Construct, keys: Collection[Key]) -> None:
    """``scaler`` manages a table of ``keys``: it is joined to every holder that serves it."""
    registry = _registry(scaler)
    for known, managed in registry.managed:
        if known is scaler:
            managed.update(keys)
            break
    else:
        registry.managed.append((scaler, set(keys)))
    for holder in registry.holders:
        if holder.keys & set(keys):
            holder.join(scaler)
