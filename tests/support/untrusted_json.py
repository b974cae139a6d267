"""The total of an EMF metric over the records a process printed."""

from __future__ import annotations

import json


def emf_total(out: str, metric: str) -> int:
    return sum(json.loads(line).get(metric, 0) for line in out.splitlines() if line.startswith("{"))
