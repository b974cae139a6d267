"""Runs in: workstation (the `ddb-capacity` command).

The user's JSON files (a schedule, a fleet report, an app's cdk.json), decoded with a bound on
their nesting: Python's decoder recurses once a level, and a text nested thousands of levels
deep fails it with RecursionError. `loads` measures the nesting first without recursing
(`ddb_capacity_runtime.core.untrusted.text_depth`) and refuses a text nested deeper than
`MAX_FILE_DEPTH` with a `NestedJSONError`, a ValueError as json.JSONDecodeError is.
"""

from __future__ import annotations

import json
from typing import Any

from ddb_capacity_runtime.core.untrusted import text_depth

from .tool_errors import NestedJSONError as NestedJSONError

MAX_FILE_DEPTH = 100
"""The deepest nesting read: the tools' files nest a few levels; Python's decoder fails near a
thousand."""


def loads(text: str) -> Any:
    """``text`` decoded as JSON; a `NestedJSONError` (``nested N levels deep; expected at most
    100``, for the caller to prefix with the file's name) when it nests deeper than
    `MAX_FILE_DEPTH`, json.JSONDecodeError when it is not JSON."""
    depth = text_depth(text)
    if depth > MAX_FILE_DEPTH:
        raise NestedJSONError(f"nested {depth:,} levels deep; expected at most {MAX_FILE_DEPTH}")
    return json.loads(text)
