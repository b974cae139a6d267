"""Runs in: every Lambda function that takes a message or an event from outside (the
signals function, the broker, the sharded tick's batch function, the fleet advisor's
worker).

One bound on every untrusted JSON, checked before anything else looks at it: how deep it
nests and how large it is. Python's own ``json`` and ``repr`` recurse once per level, so a
value nested a thousand levels deep fails them with RecursionError (an invocation that
fails is retried, or kills a log line) instead of being refused as invalid. Here nothing
recurses: `parse_json` measures a text's nesting before decoding it, and
`untrusted_values.check_json` walks a decoded value (a Lambda event) with a stack of its
own. Both refuse with an `UntrustedJSONError` (a ValueError) that names what was given, how
deep or large it was and what is allowed, and never repeats the value itself.

Stdlib only.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..core.errors import UntrustedJSONError as UntrustedJSONError

__all__ = ["MAX_DEPTH", "UntrustedJSONError", "parse_json", "text_depth"]

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
