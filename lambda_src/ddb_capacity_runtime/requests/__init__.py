"""Runs in: workers (the user's own jobs), broker Lambda, workstation (``ddb-capacity``).

Capacity requests ("get ready, here I come"): raise a table's minimum before heavy work,
hold it, and restore it when the work is done or the hold expires.

- :mod:`.holds`: the hold and its rules (pure);
- :mod:`.store`: the hold store, a DynamoDB table with conditional writes and leases;
- :mod:`.validate`: checks of a request's arguments;
- :mod:`.context`: reading the table and its traffic, moving minimums;
- :mod:`.request`: making a request (:func:`request_capacity`, :class:`CapacityHold`);
- :mod:`.ending`: ending holds (release, by id, at expiry);
- :mod:`.restorer`: the ``CapacityRequests`` restorer Lambda;
- :mod:`.broker`: the ``CapacityRequests`` broker Lambda, the only way in for workers;
- :mod:`.client`: the client that invokes the broker (workers, the restorer);
- :mod:`.counts`: the broker's EMF counts.
"""

from .ending import release_hold, restore_expired
from .holds import CapacityRequestError, CapacityRequestTimeout, Hold
from .request import CapacityHold, request_capacity

__all__ = [
    "CapacityHold",
    "CapacityRequestError",
    "CapacityRequestTimeout",
    "Hold",
    "release_hold",
    "request_capacity",
    "restore_expired",
]
