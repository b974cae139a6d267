"""Runs in: signals Lambda, stream reader Lambda, CDK app (synth time: the construct writes
the environment).

The signals function's settings contract (`SurgeSettings`: the share, the surge's minutes,
cap, scale and budget, from the environment the construct writes) and the fast path's
fixed times: the lease wait, a surge's lifetime, how often the bucket estimate is written,
how long a surge lives unconfirmed, how often CloudWatch is read to corroborate one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from ..core.errors import shown
from ..core.holds import MAX_HOLD_MINUTES
from ..core.names import MAX_TABLE_QUOTA
from ..core.surge import (
    DEFAULT_SURGE_MINUTES,
    DEFAULT_SURGE_SCALE,
    MAX_SURGE_SCALE,
    SURGE_LIFETIME_MINUTES,
    UNBOUNDED,
    SurgeBounds,
)
from ..core.validators import is_number, is_whole
from ..requests.broker import BrokerConfigError

__all__ = [
    "BUCKET_WRITE_SECONDS",
    "CORROBORATE_SECONDS",
    "HOOK",
    "STREAM",
    "SHARE_ENV",
    "SURGE_BUDGET_ENV",
    "SURGE_CAP_ENV",
    "SURGE_SCALE_ENV",
    "SURGE_HOLD",
    "SURGE_LIFETIME",
    "SURGE_MINUTES_ENV",
    "SurgeSettings",
]


SHARE_ENV = "CAPACITY_SURGE_SHARE"
"""The signals function's settings (``CapacityRequests``' ``FastPath``)."""


SURGE_MINUTES_ENV = "CAPACITY_SURGE_MINUTES"


SURGE_CAP_ENV = "CAPACITY_SURGE_CAP"


SURGE_SCALE_ENV = "CAPACITY_SURGE_SCALE"


SURGE_BUDGET_ENV = "CAPACITY_SURGE_BUDGET"


SURGE_HOLD = "surge"
"""The id of a dimension's surge hold."""


LEASE_WAIT_SECONDS = 2.0
"""How long a raise waits for its dimension's lease (a request, a restore or another surge holding
it: each holds it for a few calls). Short, so that one hot dimension never keeps the function's
reserved slots waiting; a renewal does not wait at all. A report that finds the lease taken is
deferred: the next one, seconds later, tries again."""


RESERVE_MS = 5_000
"""The time an invocation (the signals function's, the stream reader's) keeps in hand: no
report or table is started, no dimension decided and no lease waited for or taken with less of
it left, so that a lease taken is given back before the invocation's timeout (a raise under its
lease takes about a second)."""


OUT_OF_TIME = (
    "the invocation's time ran short before this dimension was decided: the next report tries "
    "it again"
)


SURGE_LIFETIME = timedelta(minutes=SURGE_LIFETIME_MINUTES)
"""The longest a surge lasts (`core.surge.SURGE_LIFETIME_MINUTES`)."""


MAX_REPORT_CHARS = 64 * 1024
"""The largest report the function reads, as JSON text (42 dimensions of the longest names take
about 20,000 characters)."""


HOOK = "hook"
"""The sources of a surge decision's demand (`Signal`): the hook's reports, the table's stream."""


STREAM = "stream"


BUCKET_WRITE_SECONDS = 5.0
"""The shortest time between two writes of one signal's burst-bucket estimate of a dimension.
Every look advances the estimate from the one stored (`core.bucket.advance`, with the higher of
the two consumption rates seen) and decides on that, so the estimate is carried between writes;
only a write costs, and each rewrites the dimension's combiner item (up to 12 write units when
100 processes report on it), while the processes' reports come seconds apart (the hook's
interval is 5 s by default; one report per process). What a write skipped loses is the
consumption seen between two writes, at most this many seconds of it: a few percent of the
bucket at most, and refusals empty the estimate whatever it says."""


CONFIRM_SECONDS = 300.0
"""How long a surge raised on the processes' reports alone goes on before DynamoDB's own
measure must confirm it (`surge_confirmed`), and how long a confirmation lasts: CloudWatch shows a
minute's consumption within minutes (`TRUSTED_MINUTES`)."""


UNCONFIRMED = (
    "DynamoDB's own measure does not show the demand this surge was raised for: it is left to "
    "expire"
)


CORROBORATE_SECONDS = 60.0
"""The shortest time between two reads of CloudWatch for one dimension's capped surge
(`trusted_demand`): its consumed capacity is a sum a minute, so a read more often would show
nothing new; the time is claimed in the combiner item (`aws.combiner.claim_check`), so
looks at once read it once."""


TRUSTED_LAG_MINUTES = 3
"""The newest minutes CloudWatch may not have delivered yet (1 to 3 minutes late): the trusted
demand's read spans them too, and takes the last `core.surge.TRUSTED_MINUTES` it shows."""


@dataclass(frozen=True)
class SurgeSettings(SurgeBounds):
    """How the signals function raises: ``share`` is the part of the traffic the reporting
    processes make (0 to 1), ``surge_minutes`` how long a surge holds after the last report
    that asked for it. The surge cap: ``cap``, the most units a surge may add over the
    capacity its dimension had when it started; without one, ``scale``: a surge reaches at
    most ``scale`` x that capacity (and may add `core.surge.MIN_SURGE_ROOM` units
    in any case); neither: no cap beyond the limits. ``budget``: the most units the surges
    of one dimension add in a window of `core.surge.BUDGET_WINDOW_SECONDS`; None:
    twice what one surge may add from the window's start (`core.surge.budget_left`);
    `core.surge.UNBOUNDED`: no budget."""

    def __post_init__(self) -> None:
        share, minutes, cap = self.share, self.surge_minutes, self.cap
        if not (is_number(share, 0, 1) and share > 0):
            raise ValueError(f"share: got {shown(share)}; expected a number over 0, at most 1")
        if not is_whole(minutes, 1, MAX_HOLD_MINUTES):
            raise ValueError(
                f"surge_minutes: got {shown(minutes)}; expected a whole number from 1 to "
                f"{MAX_HOLD_MINUTES}"
            )
        if cap is not None and not is_whole(cap, 1, MAX_TABLE_QUOTA):
            raise ValueError(
                f"cap: got {shown(cap)}; expected None or a whole number from 1 to "
                f"{MAX_TABLE_QUOTA}"
            )
        if self.scale is not None and not _scale(self.scale):
            raise ValueError(
                f"scale: got {shown(self.scale)}; expected None or a number over 1, at most "
                f"{MAX_SURGE_SCALE:g}"
            )
        if self.budget not in (None, UNBOUNDED) and not is_whole(
            self.budget, 1, 10 * MAX_TABLE_QUOTA
        ):
            raise ValueError(
                f"budget: got {shown(self.budget)}; expected None, {UNBOUNDED!r} or a whole "
                f"number from 1 to {10 * MAX_TABLE_QUOTA}"
            )

    def to_env(self) -> dict[str, str]:
        """The settings as the construct writes them into the function's environment."""
        env = {SHARE_ENV: repr(float(self.share)), SURGE_MINUTES_ENV: str(self.surge_minutes)}
        if self.cap is not None:
            env[SURGE_CAP_ENV] = str(self.cap)
        elif self.scale is None:
            env[SURGE_CAP_ENV] = UNBOUNDED
        else:
            env[SURGE_SCALE_ENV] = repr(float(self.scale))
        if self.budget is not None:
            env[SURGE_BUDGET_ENV] = str(self.budget)
        return env

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> SurgeSettings:
        """The settings `to_env` wrote (an unset or empty variable: the default); a
        bad value fails with a `BrokerConfigError` naming the variable, the value
        and what is allowed (every report would fail, so the invocation fails)."""
        share = _setting(env, SHARE_ENV, float, lambda v: 0 < v <= 1, "a number over 0, at most 1")
        minutes = _setting(
            env,
            SURGE_MINUTES_ENV,
            int,
            lambda v: 1 <= v <= MAX_HOLD_MINUTES,
            f"a whole number from 1 to {MAX_HOLD_MINUTES}",
        )
        cap = _setting(
            env,
            SURGE_CAP_ENV,
            _or_unbounded(int),
            lambda v: v == UNBOUNDED or 1 <= v <= MAX_TABLE_QUOTA,
            f"a whole number from 1 to {MAX_TABLE_QUOTA}, {UNBOUNDED!r} (no cap), or unset "
            f"(the default cap: {SURGE_SCALE_ENV} x the start)",
        )
        scale = _setting(
            env, SURGE_SCALE_ENV, float, _scale, f"a number over 1, at most {MAX_SURGE_SCALE:g}"
        )
        budget = _setting(
            env,
            SURGE_BUDGET_ENV,
            _or_unbounded(int),
            lambda v: v == UNBOUNDED or 1 <= v <= 10 * MAX_TABLE_QUOTA,
            f"a whole number from 1 to {10 * MAX_TABLE_QUOTA}, {UNBOUNDED!r}, or unset (the "
            "default budget)",
        )
        return cls(
            1.0 if share is None else share,
            DEFAULT_SURGE_MINUTES if minutes is None else minutes,
            cap if isinstance(cap, int) else None,
            None if cap == UNBOUNDED else (DEFAULT_SURGE_SCALE if scale is None else scale),
            budget,
        )


def _or_unbounded(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    return lambda text: UNBOUNDED if text == UNBOUNDED else parse(text)


def _scale(value: object) -> bool:
    return is_number(value, 1, MAX_SURGE_SCALE) and value > 1


def _setting(
    env: Mapping[str, str],
    name: str,
    parse: Callable[[str], Any],
    allowed: Callable[[Any], bool],
    expected: str,
) -> Any:
    """The value of the variable ``name`` (None: unset or empty), parsed and checked."""
    text = env.get(name)
    if text is None or not text.strip():
        return None
    try:
        value = parse(text.strip())
    except ValueError:
        value = None
    if value is None or not allowed(value):
        raise BrokerConfigError(f"{name}: got {shown(text)}; expected {expected}")
    return value


def unbounded_settings(settings: SurgeSettings) -> SurgeSettings:
    """``settings`` without the surge cap and the budget: what the rule alone asks."""
    return replace(settings, cap=None, scale=None, budget=UNBOUNDED)
