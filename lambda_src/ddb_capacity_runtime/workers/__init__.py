"""Runs in: workers (the user's own jobs).

Clients for users' own workers: a rate-limited resumable scan, a slow-start writer, the
token bucket that paces both by consumed capacity, and the reading of a throttle's cause."""

from .pacing import PacingError, TokenBucket, throttle_cause
from .scan import CursorStore, RateLimitedScan, ScanError, create_cursor_table
from .writer import SlowStartWriter, WriteError

__all__ = [
    "CursorStore",
    "PacingError",
    "RateLimitedScan",
    "ScanError",
    "SlowStartWriter",
    "TokenBucket",
    "WriteError",
    "create_cursor_table",
    "throttle_cause",
]
