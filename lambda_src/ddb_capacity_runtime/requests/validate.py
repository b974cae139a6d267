"""Runs in: broker Lambda, workers (the user's own jobs), workstation (``ddb-capacity``).

Checks of a capacity request's arguments, before anything is read or changed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ..core.errors import shown
from ..core.holds import MAX_HOLD, CapacityRequestError
from ..core.names import MAX_TABLE_QUOTA
from ..core.validators import is_whole


def validate_request(
    table: Any,
    read: Any,
    write: Any,
    index: Any,
    hold: Any,
    timeout: Any,
    quota: int = MAX_TABLE_QUOTA,
) -> dict[str, int]:
    """The units asked for per dimension, each checked up to the table quota ``quota`` (by
    default the largest accepted: where the quota is not known yet, the hold store's
    bounds, which come from it, check the units again)."""
    if not isinstance(table, str) or not 3 <= len(table) <= 255:
        raise CapacityRequestError(
            f"table: got {shown(table)}; expected a table name (3 to 255 characters)"
        )
    if index is not None and (not isinstance(index, str) or not 3 <= len(index) <= 255):
        raise CapacityRequestError(
            f"index: got {shown(index)}; expected None or a global "
            f"secondary index name (3 to 255 characters)"
        )
    wanted = {}
    for name, units in (("read", read), ("write", write)):
        if not is_whole(units, 0, quota):
            raise CapacityRequestError(
                f"{name}: got {shown(units)}; expected a whole number of "
                f"capacity units from 0 to {quota:,}"
            )
        if units:
            wanted[name] = units
    if not wanted:
        raise CapacityRequestError(
            "read and write: got 0 and 0; ask for at least one unit of read or write capacity"
        )
    if not isinstance(hold, timedelta) or not timedelta(minutes=1) <= hold <= MAX_HOLD:
        raise CapacityRequestError(
            f"hold: got {shown(hold)}; expected a timedelta from 1 minute to {MAX_HOLD}"
        )
    if not isinstance(timeout, timedelta) or timeout < timedelta(0):
        raise CapacityRequestError(
            f"timeout: got {shown(timeout)}; expected a timedelta of 0 or more"
        )
    return wanted
