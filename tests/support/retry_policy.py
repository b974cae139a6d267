"""The body of a response botocore did not fetch, for tests that answer AWS calls."""

from __future__ import annotations

from typing import Any


class _Raw:
    """The body of a response botocore did not fetch (``before-send`` answered it)."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Any:
        yield self.body
