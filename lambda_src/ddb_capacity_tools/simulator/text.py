"""Runs in: workstation (the `ddb-capacity` command).

Fixed-width text tables, as every simulator command prints them, a count in words (`counted`:
``1 block``, ``2 blocks``, the one place the tools' words make a plural), the words that say
what a run's dollars cover, and whether a stream is a terminal (`on_a_terminal`: where a
bar redrawn in place reads as one line)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO


def fixed_width(rows: Sequence[Sequence[str]], left: int = 2) -> list[str]:
    """``rows`` (the header first) as lines: the first ``left`` columns left-aligned, the
    others right-aligned, a rule under the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append(
            "  ".join(
                cell.ljust(widths[i]) if i < left else cell.rjust(widths[i])
                for i, cell in enumerate(row)
            ).rstrip()
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def counted(count: float, noun: str, plural: str = "") -> str:
    """``count`` ``noun`` in words, the noun plural unless the count is 1: ``1 block``,
    ``2 blocks``, ``1,440 minutes``, ``0 tables``, ``1.5 days``; ``plural`` where the noun's is
    not the noun + s (``policy``, ``policies``)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def span(minutes: int) -> str:
    """``minutes`` in words: ``180 minutes``; from a day on, in days too (``3 days (4,320
    minutes)``, ``1.5 days (2,160 minutes)``)."""
    if minutes < 1440:
        return counted(minutes, "minute")
    days = minutes // 1440 if minutes % 1440 == 0 else round(minutes / 1440, 1)
    return f"{counted(days, 'day')} ({minutes:,} minutes)"


def run_period(score_from: int) -> str:
    """What a ``simulate`` or ``backtest`` dollar covers, in a label: ``over the trace``, or
    ``over the scored part`` when the run was scored from minute ``score_from`` (> 0)."""
    return "over the scored part" if score_from else "over the trace"


def cost_heading(score_from: int) -> str:
    """The heading of a ``simulate`` or ``backtest`` table's cost column: ``cost $ (trace)``,
    or ``cost $ (scored)`` when the run was scored from minute ``score_from`` (> 0)."""
    return f"cost $ ({'scored' if score_from else 'trace'})"


def run_scope(minutes: int, score_from: int = 0) -> str:
    """What a ``simulate`` or ``backtest`` dollar covers, in a sentence's words: the cost
    ``over the trace's 180 minutes``, or over its scored part (from minute ``score_from``
    on), never a month."""
    if score_from:
        return (
            f"over the trace's scored {span(minutes - score_from)} (from minute "
            f"{score_from:,} on), not a month"
        )
    return f"over the trace's {span(minutes)}, not a month"


def on_a_terminal(out: TextIO) -> bool:
    """``out`` is a terminal: where a bar redrawn in place (``\r``) reads as one line; in a
    file or a CI log each redraw would be kept."""
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):  # no isatty, or closed
        return False
