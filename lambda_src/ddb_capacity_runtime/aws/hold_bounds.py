"""Runs in: settle Lambda, on-demand switch Lambda.

The bounds a function reads capacity holds within when it is not told those of the
``CapacityRequests`` that wrote them (a settle step serves the tables of every one of its
stack; the on-demand switch, every windowed table's)."""

from __future__ import annotations

from ..core.holds import MAX_HOLD
from ..core.names import MAX_TABLE_QUOTA
from .store import HoldLimits

WIDEST = HoldLimits(MAX_TABLE_QUOTA, MAX_HOLD, MAX_TABLE_QUOTA, MAX_TABLE_QUOTA)
"""The widest bounds any ``CapacityRequests`` allows. A hold within them is obeyed, which can
only keep a dimension higher; one outside them no component wrote (malformed: what it holds
is not known)."""
