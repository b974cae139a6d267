"""Runs in: on-demand switch Lambda, CDK app (synth time), workstation (simulator).

DynamoDB's limit on switches to on-demand: a table may be switched from provisioned to
on-demand (``PAY_PER_REQUEST``) at most `MAX_SWITCHES` times in any rolling `SPAN_S`
seconds (back to provisioned at any time). One rule, shared by the check of declared
on-demand windows at synth and by the switch function, which counts a table's own history.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_SWITCHES = 4
"""The most switches to on-demand a table takes in any rolling 24 hours."""
SPAN_S = 86_400
"""That rolling span, in seconds."""


def recent(history: Iterable[float], at: float) -> list[float]:
    """The switches of ``history`` (seconds since the epoch) that count at ``at``: those
    in the span that ends at ``at``, oldest first."""
    return sorted(t for t in history if at - SPAN_S < t <= at)


def switch_allowed(history: Iterable[float], at: float) -> bool:
    """Whether a switch to on-demand at ``at`` stays within the limit."""
    return len(recent(history, at)) < MAX_SWITCHES


def crowded(times: Iterable[float]) -> list[float] | None:
    """The first set of more than `MAX_SWITCHES` switches among ``times`` within one
    rolling span, oldest first (None: the limit is kept)."""
    ordered = sorted(times)
    for end, at in enumerate(ordered):
        span = recent(ordered[: end + 1], at)
        if len(span) > MAX_SWITCHES:
            return span
    return None
