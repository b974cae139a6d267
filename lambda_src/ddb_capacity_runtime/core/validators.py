"""Runs in: every Lambda function, workers (the user's own jobs), CDK app (synth),
workstation.

What a number, and a Region's name, is, in one place: every prop, setting, message field and
AWS answer the library reads as a whole number, a number or a Region is checked here first.
A bool is never a number (``True`` is an ``int`` to Python, but ``true`` in JSON or a prop
is a mistake), nor is NaN, an infinity, or an integer too large for a float where a number
is wanted. The callers word
their own refusals: each names the field, the value received and what is allowed.

Stdlib only.
"""

from __future__ import annotations

import math
import re
from typing import TypeGuard

__all__ = ["REGION_NAME", "is_number", "is_region", "is_whole", "whole_text"]

REGION_NAME = re.compile(r"[a-z]{2,4}(-[a-z]+)+-\d{1,2}")
"""What an AWS Region's name looks like (``eu-west-1``, ``us-gov-west-1``, and the European
Sovereign Cloud's ``eusc-de-east-1``)."""


def is_whole(value: object, low: float = -math.inf, high: float = math.inf) -> TypeGuard[int]:
    """``value`` is an ``int`` (never a bool) from ``low`` to ``high``, both included."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def whole_text(raw: object, low: float, high: float, digits: int = 15) -> int | None:
    """``raw`` as the text of a whole number from ``low`` to ``high``, both included: ASCII
    digits only, at most ``digits`` of them (as CloudFormation's properties, DynamoDB's
    ``N`` and environment variables carry numbers); None for anything else."""
    if not isinstance(raw, str) or not raw.isascii() or not raw.isdigit() or len(raw) > digits:
        return None
    value = int(raw)
    return value if low <= value <= high else None


def is_number(
    value: object, low: float = -math.inf, high: float = math.inf
) -> TypeGuard[int | float]:
    """``value`` is a finite ``int`` or ``float`` (never a bool, NaN, an infinity or an
    integer too large for a float) from ``low`` to ``high``, both included."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int of hundreds of digits
        return False
    return finite and low <= value <= high


def is_region(value: object) -> TypeGuard[str]:
    """``value`` is a string shaped as an AWS Region's name (`REGION_NAME`)."""
    return isinstance(value, str) and REGION_NAME.fullmatch(value) is not None
