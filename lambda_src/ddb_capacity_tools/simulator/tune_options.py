"""Runs in: workstation (`ddb-capacity tune`).

``tune``'s options that take a number: each parsed, bounded and refused with the option, the
value received and what is allowed (`TuneError`).
"""

from __future__ import annotations

import math
import re

from ..tool_errors import TuneError as TuneError
from .params import BOUNDS

MAX_TOLERANCE = 1.0
"""``--refusal-tolerance``'s largest value: 1 (100 %), twice the best stock's refusals."""


TOLERANCE_HELP = (
    "a fraction from 0 to 1 (0.1) or a percent from 0 to 100 followed by % (10%): how much "
    "more than the best stock setting the recommendation may refuse"
)


MAX_FLOOR = 0.01
"""``--refusal-floor``'s largest value: 1 % of the requested units."""


FLOOR_HELP = (
    "a fraction from 0 to 0.01 (0.0002) or a percent from 0 to 1 followed by % (0.02%): the "
    "share of the requested units within which refusals count as no more than the best "
    "stock setting's"
)


MAX_PRICE = 1_000_000.0
"""``--refusal-price``'s largest value, dollars per million refused units."""


PRICE_HELP = (
    f"dollars per million refused units, more than 0 and at most {MAX_PRICE:,.0f} (1.5): "
    "the recommendation is then the candidate whose cost plus its refusals at this price "
    "is least"
)


def refusal_tolerance(text: str) -> float:
    """``--refusal-tolerance``: ``0.1`` or ``10%`` is 0.1 (the recommendation may refuse
    10 % more than the best stock setting); 0 to 1, or 0 % to 100 %."""
    return _fraction(text, "--refusal-tolerance", MAX_TOLERANCE, TOLERANCE_HELP)


def refusal_floor(text: str) -> float:
    """``--refusal-floor``: ``0.0002`` or ``0.02%`` is 0.0002 (refusals within 2 in 10,000
    requested units of the best stock setting's count as no more); 0 to 0.01, or 0 % to
    1 %."""
    return _fraction(text, "--refusal-floor", MAX_FLOOR, FLOOR_HELP)


def _fraction(text: str, option: str, most: float, allowed: str) -> float:
    """``text`` as a fraction from 0 to ``most``, written as one or as a percent with %."""
    value = text.strip()
    percent = value.endswith("%")
    number = value[:-1].strip() if percent else value
    if re.fullmatch(r"\d+(\.\d*)?|\.\d+", number):
        fraction = float(number) / (100 if percent else 1)
        if 0 <= fraction <= most:
            return fraction
    hint = (
        f" (for a percent, write it with %: {number}%)"
        if not percent and _is_number(number, most)
        else ""
    )
    raise TuneError(f"{option}: got {text!r}; expected {allowed}{hint}")


def _is_number(text: str, most: float) -> bool:
    """Whether ``text`` is a number above ``most`` that, read as a percent, is allowed."""
    try:
        return math.isfinite(float(text)) and most < float(text) <= most * 100
    except ValueError:
        return False


def refusal_price(text: str) -> float:
    """``--refusal-price``: dollars per million refused units, more than 0 (digits and a
    decimal point only)."""
    number = text.strip()
    value = float(number) if re.fullmatch(r"\d+(\.\d*)?|\.\d+", number) else math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_PRICE):
        raise TuneError(f"--refusal-price: got {text!r}; expected {PRICE_HELP}")
    return value


MAX_SIZE_GB = BOUNDS["table_size_gb"][1]
"""``--table-size-gb``'s largest value (the model's)."""


SIZE_ALLOWED = (
    f"the table's size in GB, a number from 0 to {MAX_SIZE_GB:,.0f} (digits and a decimal "
    "point: 120 or 0.5)"
)
"""``--table-size-gb``'s values, in words."""


SIZE_HELP = (
    f"{SIZE_ALLOWED}; GB of 2^30 bytes, its indexes' included. Given, tune also advises the "
    "table class; with --key-skew, it also sets the partitions (0 when not given)"
)
"""``--table-size-gb``'s help."""


def table_size_gb(text: str) -> float:
    """``--table-size-gb``: the table's size in GB, a number from 0 to `MAX_SIZE_GB`
    (digits and a decimal point only)."""
    number = text.strip()
    value = float(number) if re.fullmatch(r"\d+(\.\d*)?|\.\d+", number) else math.nan
    if not (math.isfinite(value) and value <= MAX_SIZE_GB):
        raise TuneError(f"--table-size-gb: got {text!r}; expected {SIZE_ALLOWED}")
    return value
