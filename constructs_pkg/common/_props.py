"""Runs in: CDK app (synth time).

The checks the constructs' props share, at the door: a Duration prop and a whole-number
prop, each refused with the prop's name, the value received and what is allowed, before
the value reaches jsii (whose own errors name no prop, and which a NaN stops outright).
Unresolved CDK tokens are not checked. And `MetricProps`, the keyword options every
``metric_*`` method takes, as aws-cdk-lib's ``MetricOptions``; and `ReservedCapacity`, the
Region's reserved units a ``ThrottleAwareScaler`` keeps its tables' total above.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypedDict

import jsii
from aws_cdk import Duration, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import IValidation

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.reservation import Reservation, reserved_problem
from ddb_capacity_runtime.core.validators import is_whole

__all__ = ["MetricProps", "ReservedCapacity", "duration_prop", "is_token", "whole_prop"]


def did_you_mean(name: object, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)``, naming the known name closest to ``name`` (difflib), for a
    message refusing an unknown one; empty when none is close."""
    close = difflib.get_close_matches(str(name), list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


_TOKEN_MARK = "{Token["  # noqa: S105 (a token's mark, not a password)
"""In every string CDK encodes a token as (``${Token[...]}``, and ``#{Token[...]}`` in a
list): a string without it is never one."""
_PLAIN_NUMBER = 2.0**53
"""CDK encodes a number token as a double whose top 16 bits are 0xFBFF, a magnitude near
1.9e289: a number below this one in magnitude is never one."""


def is_token(value: object) -> bool:
    """True when ``value`` is an unresolved CDK token (checked at deploy time instead), as
    ``Token.is_unresolved`` answers; plain values (None, a bool, a number below 2**53 in
    magnitude, a string without a token's mark, bytes) are answered here without a round trip to
    jsii's kernel. A float that is not finite is never one (and jsii cannot take it). A
    ``Duration`` is one when its amount is (``Duration.seconds(parameter.value_as_number)``),
    which ``Token.is_unresolved`` does not see."""
    if value is None or isinstance(value, bool | bytes | bytearray):
        return False  # bytes: no token, and jsii cannot take them
    if isinstance(value, Duration):
        return duration_seconds(value) is None
    if isinstance(value, int | float):
        if not math.isfinite(value) or abs(value) < _PLAIN_NUMBER:
            return False
    elif isinstance(value, str) and _TOKEN_MARK not in value:
        return False
    return bool(Token.is_unresolved(value))


def known_at_synth(
    where: str, name: str, value: object, why: str, expected: str = "a number"
) -> None:
    """Refuse an unresolved token (`is_token`) for a value the app must know when it is
    built, for the reason ``why``, asking for ``expected``."""
    if is_token(value):
        raise CapacityConfigError(
            f"{where}: {name} must be known when the app is built ({why}); got a token (a "
            f"CfnParameter's or another resource's value): give {expected}"
        )


_KNOWN_SECONDS: dict[int, tuple[Duration, float | None]] = {}
"""Each ``Duration`` object's answer from `duration_seconds`, by its id, with the object (so
the id is not reused while the answer is kept): a Duration is immutable, and asking jsii's
kernel is a round trip each time."""
KNOWN_SECONDS_KEPT = 256
"""The most answers `_KNOWN_SECONDS` keeps (the constructs share a few dozen Durations)."""


def duration_seconds(value: Duration) -> float | None:
    """``value``'s seconds, or None when its amount is a token (CDK converts a token's amount
    from seconds alone: in another unit, asking raises); jsii's kernel is asked once per
    Duration object."""
    known = _KNOWN_SECONDS.get(id(value))
    if known is not None and known[0] is value:
        return known[1]
    try:
        seconds: float | None = value.to_seconds(integral=False)
    except RuntimeError:
        seconds = None
    if seconds is not None and is_token(seconds):
        seconds = None
    if len(_KNOWN_SECONDS) >= KNOWN_SECONDS_KEPT:
        _KNOWN_SECONDS.clear()
    _KNOWN_SECONDS[id(value)] = (value, seconds)
    return seconds


@dataclass(frozen=True)
class ReservedCapacity:
    """The Region's DynamoDB reserved capacity (Standard table class), as bought: whole
    hundreds of read and write units. Checked when made: each a whole number of hundreds
    from 0 to 10,000,000 (0: none of that dimension).

    :param read_units: reserved read capacity units. Default 0.
    :param write_units: reserved write capacity units. Default 0.
    """

    read_units: int = 0
    write_units: int = 0

    def __post_init__(self) -> None:
        for name in ("read_units", "write_units"):
            value = getattr(self, name)
            problem = reserved_problem(value)
            if problem is not None:
                raise CapacityConfigError(
                    f"ReservedCapacity: {name}: got {shown(value)}; {problem}"
                )

    @property
    def reservation(self) -> Reservation:
        """The same units, as the run-time reads them."""
        return Reservation(self.read_units, self.write_units)


class MetricProps(TypedDict, total=False):
    """The keyword options of a ``metric_*`` method: aws-cdk-lib's
    ``aws_cloudwatch.MetricOptions``, field for field."""

    account: str
    color: str
    dimensions_map: Mapping[str, str]
    id: str
    label: str
    period: Duration
    region: str
    stack_account: str
    stack_region: str
    statistic: str
    unit: cloudwatch.Unit
    visible: bool


def duration_prop(
    where: str,
    name: str,
    value: object,
    floor: Duration,
    *,
    step: Duration | None = None,
    optional: bool = False,
) -> Duration | None:
    """``value`` when it is a ``Duration`` of at least ``floor`` and a multiple of ``step``
    (default: 1 second), or None when ``optional`` and None. The prop's own range above
    the floor is its caller's."""
    if value is None and optional:
        return None

    def allowed() -> str:
        at_least = f" of at least {floor.to_human_string()}" if floor.to_seconds() else ""
        return (
            f"a Duration{at_least}, a multiple of "
            f"{(step or Duration.seconds(1)).to_human_string()}" + (", or None" if optional else "")
        )

    if not isinstance(value, Duration):
        raise CapacityConfigError(
            f"{where}: {name}: got {shown(value)} ({type(value).__name__}); expected {allowed()} "
            "(aws_cdk.Duration.minutes(5), say)"
        )
    seconds = duration_seconds(value)
    if seconds is None:  # a token: checked at deploy time
        return value
    steps = seconds / (duration_seconds(step) or 1) if step is not None else seconds
    if seconds < (duration_seconds(floor) or 0) or not float(steps).is_integer():
        raise CapacityConfigError(
            f"{where}: {name}: got {value.to_human_string()}; expected {allowed()}"
        )
    return value


def bool_prop(where: str, name: str, value: object) -> bool:
    """``value`` when it is True or False; anything else is refused, text above all: Python
    reads ``"false"`` as true."""
    if not isinstance(value, bool):
        raise CapacityConfigError(f"{where}: {name}: got {shown(value)}; expected True or False")
    return value


def optional_bool_prop(where: str, name: str, value: object) -> bool | None:
    """`bool_prop`, None taken too (the CDK's default)."""
    if value is not None and not isinstance(value, bool):
        raise CapacityConfigError(
            f"{where}: {name}: got {shown(value)}; expected True, False or None"
        )
    return value


def whole_prop(where: str, name: str, value: object, low: int, high: int) -> int:
    """``value`` when it is a whole number from ``low`` to ``high`` (or an unresolved
    token); a bool, a float (NaN and infinity included) or text is refused."""
    if isinstance(value, float) and is_token(value):
        return value  # type: ignore[return-value]
    if not is_whole(value, low, high):
        raise CapacityConfigError(
            f"{where}: {name}: got {shown(value)}; expected a whole number from {low:,} to {high:,}"
        )
    return value


@jsii.implements(IValidation)
class Checked:
    """The checks a construct can only make once the app is built (at synth): its own
    method ``check``, so that what it checks stays the construct's own."""

    def __init__(self, check: Callable[[], list[str]]) -> None:
        self._check = check

    def validate(self) -> list[str]:
        return self._check()
