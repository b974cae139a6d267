"""Runs in: CDK app (synth time).

The fast path: the signals function the client hook reports to (`FastPath`), and the
stream reader on each served table's DynamoDB stream (`StreamSignal`).
"""

from typing import TYPE_CHECKING

from .._exports import lazy_exports

_LAZY = {
    "FastPath": "._fast_path",
    "StreamSignal": "._stream_signal",
}

if TYPE_CHECKING:
    from ._fast_path import FastPath
    from ._stream_signal import StreamSignal

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = ["FastPath", "StreamSignal"]
