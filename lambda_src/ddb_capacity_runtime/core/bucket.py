"""Runs in: signals Lambda, stream reader Lambda, workstation (simulator).

The fast path's burst-bucket rule: a surge starts only when the dimension's burst bucket,
as measured from the capacity it consumed against what it had provisioned, would run out
before an ordinary raise lands. Noise the bucket absorbs raises nothing.

DynamoDB keeps up to `BURST_SECONDS` of a dimension's unused provisioned capacity and
spends it when demand goes over what is provisioned ("Burst capacity"). A minute above
capacity is no refusal while the bucket covers it, and a raise sent then pays for units
that prevent nothing. The signals function and the stream reader therefore keep an
estimate of the bucket (`Bucket`, advanced at each look by `advance`) and, before a
surge starts, ask `would_empty`: at the demand seen, does the bucket last until a raise
sent at the next look would land? A raise within the dimension's warm throughput lands in
seconds (`WARM_RAISE_SECONDS`); one above it takes minutes (`COLD_RAISE_SECONDS`).

What is not known is taken the way that never lowers capacity:

- no estimate (a dimension seen for the first time, or not seen for `MAX_GAP_SECONDS`)
  starts empty, so a surge is due exactly as without the rule, until the consumption
  seen has filled it;
- over a gap between looks, the bucket refills at the lower of the capacities provisioned
  at its two ends, less the higher of the consumption rates seen at them;
- the processes that report may carry only part of the traffic: the estimate is only as
  good as the share configured (``FastPath(share=...)``), and throttles always make a
  surge due, whatever it says (the bucket is empty then).

The simulator's fast path calls the same functions (``simulator.fast_path_model``), with a look
a minute (it decides once a simulated minute), so what it shows is the deployed rule,
erring towards more surges than the deployed one, which looks at every report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "ASSUMED_BURST_SECONDS",
    "BURST_SECONDS",
    "PINNED_SECONDS",
    "PINNED_SHARE",
    "COLD_RAISE_SECONDS",
    "Drain",
    "MAX_GAP_SECONDS",
    "WARM_RAISE_SECONDS",
    "Bucket",
    "advance",
    "lead_seconds",
    "pinned",
    "read_bucket",
    "would_empty",
]

BURST_SECONDS = 300
"""Seconds of unused provisioned capacity DynamoDB keeps in a dimension's burst bucket."""
ASSUMED_BURST_SECONDS = 150
"""Seconds of unused capacity the estimate takes the bucket to hold at most: half of what DynamoDB
keeps, because DynamoDB does not promise burst capacity (it may spend some on its own
maintenance). An estimate that is too high would wait for a bucket that is not there."""
PINNED_SHARE = 0.02
"""Consumption within this share above what is provisioned reads as pinned at the capacity: a
dimension whose bucket is empty serves what is provisioned and refuses the rest. A signal that sees
no refusals (the stream) cannot tell it from demand that happens to equal the capacity for a
moment, so consumption pinned for `PINNED_SECONDS` makes a surge due whatever the estimate
says."""
PINNED_SECONDS = 10
"""How long consumption must stay pinned at the capacity, from one look to a later one, to read as
refusals (noise that touches the capacity once does not)."""
WARM_RAISE_SECONDS = 10
"""How long a raise within the dimension's warm throughput takes to land: its partitions serve it
already, and the update applies within seconds."""
COLD_RAISE_SECONDS = 300
"""How long a raise above the warm throughput is taken to need: the table adds partitions, which
takes minutes (usually one or two, at times five: the simulator's ensemble spans 1 to 5). The
longer figure: a surge sent too early costs a few minutes of capacity, one sent too late costs
the refusals until it lands."""
MAX_GAP_SECONDS = BURST_SECONDS
"""The longest gap between two looks over which the estimate is carried: after a longer one it is
not known (`advance` starts it empty again)."""
MAX_TEXT_CHARS = 96
"""The longest estimate's text `read_bucket` reads."""
WRONG_SECONDS = 10
"""An estimate that still held this many seconds of the provisioned capacity when refusals appeared
was wrong (`advance`)."""
DISTRUST_SECONDS = 24 * 3600
"""How long an estimate found wrong is set aside: the rule then lets a surge start as soon as the
demand reaches the capacity, as without it. What makes an estimate wrong lasts (processes that
report only part of the traffic, a bucket DynamoDB keeps smaller), so it is not tried again
for a day."""


@dataclass(frozen=True)
class Bucket:
    """An estimate of a dimension's burst bucket: ``level`` unit-seconds left at ``at``
    (epoch seconds), with ``provisioned`` units and ``rate`` units a second consumed as
    last seen; ``until``: the estimate was found wrong and is set aside until then (epoch
    seconds; 0: it is not)."""

    level: float
    at: float
    provisioned: int
    rate: float
    until: float = 0.0
    pinned_since: float = 0.0
    """When consumption was first seen `pinned` at the capacity, look after look up to this one
    (0: it is not)."""

    @property
    def trusted(self) -> bool:
        """Whether the estimate is used (it was not found wrong in the last
        `DISTRUST_SECONDS`)."""
        return self.at >= self.until

    def text(self) -> str:
        """As the state store keeps it (`read_bucket` reads it back)."""
        return (
            f"{self.level:.0f}:{self.at:.1f}:{self.provisioned}:{self.rate:.1f}:{self.until:.0f}"
            f":{self.pinned_since:.1f}"
        )


def read_bucket(text: object, now: float, quota: int) -> Bucket | None:
    """An estimate as `Bucket.text` wrote it, checked as the untrusted input it is:
    None when it is not one, or breaks a bound (its time ahead of ``now``, its units over
    ``quota``, its level over what the bucket holds)."""
    parts = text.split(":") if isinstance(text, str) and len(text) <= MAX_TEXT_CHARS else []
    if len(parts) != 6:
        return None
    try:
        level, at, rate, until, since = (float(parts[i]) for i in (0, 1, 3, 4, 5))
        provisioned = int(parts[2])
    except ValueError:
        return None
    values = (level, at, rate, until, since)
    if not all(math.isfinite(v) and v >= 0 for v in values) or not 0 <= provisioned <= quota:
        return None
    if at > now + 60 or level > ASSUMED_BURST_SECONDS * provisioned or rate > 10 * quota:
        return None
    if until > at + DISTRUST_SECONDS or since > at:
        return None
    return Bucket(level, at, provisioned, rate, until, since)


def advance(
    kept: Bucket | None, provisioned: int, rate: float, now: float, refused: bool = False
) -> Bucket:
    """The estimate at ``now``, from ``kept`` (the last one; None: none) and what is seen
    now: ``provisioned`` units, ``rate`` units a second consumed, and whether requests are
    ``refused`` for capacity (throttles reported; for the stream, consumption `pinned` at
    the capacity). Unknown (no ``kept``, or one older than `MAX_GAP_SECONDS`) starts
    empty; a ``kept`` from the future (another clock) is carried without refilling.

    Refusals mean the bucket is empty: the estimate is emptied, and when it still held
    `WRONG_SECONDS` of the capacity it was wrong, and is set aside for
    `DISTRUST_SECONDS`."""
    rate = max(0.0, rate)
    until = kept.until if kept is not None else 0.0
    if kept is None or now - kept.at > MAX_GAP_SECONDS:
        since = now if pinned(rate, provisioned) else 0.0
        return Bucket(0.0, now, provisioned, rate, until, since)
    seconds = max(0.0, now - kept.at)
    refill = (min(provisioned, kept.provisioned) - max(rate, kept.rate)) * seconds
    level = min(max(kept.level + refill, 0.0), ASSUMED_BURST_SECONDS * provisioned)
    at = max(now, kept.at)
    if refused:
        if level > WRONG_SECONDS * provisioned:
            until = at + DISTRUST_SECONDS
        level = 0.0
    since = (kept.pinned_since or at) if pinned(rate, provisioned) else 0.0
    return Bucket(level, at, provisioned, rate, until, since)


def pinned(rate: float, provisioned: int) -> bool:
    """Whether consumption at ``rate`` reads as pinned at the ``provisioned`` capacity
    (`PINNED_SHARE`): what a signal blind to refusals sees of them."""
    return provisioned <= rate <= provisioned * (1 + PINNED_SHARE)


def lead_seconds(demand: float, warm: int | None, next_look: float) -> float:
    """How long from now until a raise sent at the next look (``next_look`` seconds on)
    would land: within the warm throughput ``warm`` (it covers ``demand``) seconds, above it
    (or not known) minutes."""
    lands = WARM_RAISE_SECONDS if warm is not None and demand <= warm else COLD_RAISE_SECONDS
    return next_look + lands


def would_empty(
    bucket: Bucket | None,
    demand: float,
    provisioned: int,
    warm: int | None,
    next_look: float,
    blind: bool = False,
) -> bool:
    """Whether ``demand`` (units a second) would empty ``bucket`` before a raise sent at
    the next look lands (`lead_seconds`); True when the bucket is not known or set aside
    (`Bucket.trusted`), and, for a signal ``blind`` to refusals (the stream), when the
    consumption has been `pinned` at the capacity for `PINNED_SECONDS`."""
    if bucket is None or not bucket.trusted:
        return True
    if blind and bucket.pinned_since and bucket.at - bucket.pinned_since >= PINNED_SECONDS:
        return True
    over = demand - provisioned
    return bucket.level <= max(0.0, over) * lead_seconds(demand, warm, next_look)


@dataclass(frozen=True)
class Drain:
    """What the bucket rule needs of a dimension at a look: its bucket's estimate (None:
    not known), its warm throughput (None: not known), the seconds until the next look, and
    whether the signal is ``blind`` to refusals (the stream sees only what was served)."""

    bucket: Bucket | None
    warm: int | None
    next_look: float
    blind: bool = False

    def due(self, demand: float, provisioned: int) -> bool:
        """Whether a surge is due for ``demand`` on ``provisioned`` units (`would_empty`)."""
        return would_empty(self.bucket, demand, provisioned, self.warm, self.next_look, self.blind)
