"""Runs in: every Lambda function that takes a message or an event from outside (the
signals function, the broker, the sharded tick's batch function, the fleet advisor's
worker).

One bound on every untrusted JSON, checked before anything else looks at it: how deep it
nests and how large it is. Python's own ``json`` and ``repr`` recurse once per level, so a
value nested a thousand levels deep fails them with RecursionError (an invocation that
fails is retried, or kills a log line) instead of being refused as invalid. Here nothing
recurses: `parse_json` measures a text's nesting before decoding it, and
`check_json` walks a decoded value (a Lambda event) with a stack of its own. Both
refuse with an `UntrustedJSONError` (a ValueError) that names what was given, how
deep or large it was and what is allowed, and never repeats the value itself.

Stdlib only.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ..core.errors import UntrustedJSONError as UntrustedJSONError

__all__ = ["MAX_DEPTH", "UntrustedJSONError", "check_json", "parse_json", "text_depth"]

MAX_DEPTH = 16
"""The deepest nesting any message or event of the library has is 4 (a report's
``dims[i].throttles``); this leaves room and stays far from Python's recursion limit."""
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
"""JSON strings (with their escapes), removed before the nesting is measured: a bracket inside a
string nests nothing."""
_BRACKETS = re.compile(r"[\[\]{}]")


def parse_json(text: object, what: str, *, max_chars: int, max_depth: int = MAX_DEPTH) -> Any:
    """``text`` decoded, once it is known to be a string of at most ``max_chars``
    characters nested at most ``max_depth`` levels; an `UntrustedJSONError` naming
    ``what`` otherwise, and for what is not JSON at all (a json.JSONDecodeError, or an
    integer of more digits than Python converts, is a ValueError too)."""
    if not isinstance(text, str):
        raise UntrustedJSONError(f"{what}: got a {type(text).__name__}; expected a JSON text")
    if len(text) > max_chars:
        raise UntrustedJSONError(
            f"{what}: got {len(text):,} characters; expected at most {max_chars:,}"
        )
    depth = text_depth(text)
    if depth > max_depth:
        raise UntrustedJSONError(
            f"{what}: nested {depth:,} levels deep; expected at most {max_depth}"
        )
    try:
        return json.loads(text)
    except ValueError as exc:  # JSONDecodeError, or too many digits for an int
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)[:120]
        raise UntrustedJSONError(f"{what}: not JSON ({reason})") from None


def text_depth(text: str) -> int:
    """How deep ``text``'s brackets nest, outside its strings (a malformed text may give
    any number: the decoder then refuses it). Recurses not at all: the tools measure the
    user's JSON files with it too."""
    depth = most = 0
    for bracket in _BRACKETS.finditer(_STRINGS.sub('""', text)):
        if bracket.group() in "[{":
            depth += 1
            most = max(most, depth)
        else:
            depth -= 1
    return most


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
