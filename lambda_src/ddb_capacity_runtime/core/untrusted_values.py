"""Runs in: every Lambda function that takes a decoded event from outside (the signals
function, the stream reader, the broker), and the senders that size what those read.

`core.untrusted`'s bound on a value already decoded (a Lambda event): how deep it nests
and how large its JSON text would be, measured with a stack of its own (nothing recurses).
Apart from `core.untrusted` so that a function reading only JSON texts (the scaler's batch
function) does not ship it.

Stdlib only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .untrusted import MAX_DEPTH, UntrustedJSONError

__all__ = ["check_json", "json_chars"]


def check_json(value: object, what: str, *, max_chars: int, max_depth: int = MAX_DEPTH) -> None:
    """Refuse (`UntrustedJSONError`, naming ``what``) a decoded value nested deeper
    than ``max_depth`` levels, or whose JSON text would be longer than ``max_chars``
    (`json_chars`' measure). Walks with a stack of its own, and stops at the first bound
    passed."""
    _measured(value, what, max_chars, max_depth)


def json_chars(value: object, *, max_depth: int = MAX_DEPTH) -> int:
    """About how many characters ``value``'s JSON text takes, as `check_json` counts them
    (each string's length and quotes, each number's digits, a float 24, each key,
    separator and bracket): what a sender sizes a message by that `check_json` reads.
    Additive: a list's measure is 2, one more for each item, and its items' measures."""
    return _measured(value, "value", math.inf, max_depth)


def _measured(value: object, what: str, max_chars: float, max_depth: int) -> int:
    size = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if depth > max_depth:
                raise UntrustedJSONError(
                    f"{what}: nested more than {max_depth} levels deep; expected at most "
                    f"{max_depth}"
                )
            children = list(item.items()) if isinstance(item, Mapping) else list(item)
            size += 2 + len(children)
            for child in children:
                if isinstance(child, tuple) and isinstance(item, Mapping):
                    key, child = child
                    size += _scalar_chars(key) + 1
                stack.append((child, depth + 1))
        else:
            size += _scalar_chars(item)
        if size > max_chars:
            raise UntrustedJSONError(
                f"{what}: larger than {max_chars:,} characters of JSON; expected at most "
                f"{max_chars:,}"
            )
    return size


def _scalar_chars(value: object) -> int:
    """About how many characters ``value`` takes in a JSON text."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, bool) or value is None:
        return 5
    if isinstance(value, int):  # its sign and at least its digits, without printing it:
        # below 2**b, a number has at most b * log10(2) + 1 digits (0.30103 > log10(2))
        return (value < 0) + value.bit_length() * 30_103 // 100_000 + 1
    return 24  # a float, or what JSON has not
