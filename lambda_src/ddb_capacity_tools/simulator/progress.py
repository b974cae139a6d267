"""Runs in: workstation (the `ddb-capacity` command), advisor Lambda and nightly tuning Lambda.

How a long command shows what it has done (`Progress`): a bar redrawn in place on a
terminal, or a plain line every `LINE_STEP` % (and one at the start and one at the end)
where a redrawn bar would be kept line by line: a file, a pipe, a CI log, a Lambda's log.
The command line's ``--progress`` (`add_progress_option`, `progress_of`) picks one of
`PROGRESS_MODES`; ``auto`` (the default) the bar on a terminal, lines elsewhere. The
Lambdas log the lines (`Progress.logged`).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import TextIO

from .text import on_a_terminal

PROGRESS_MODES = ("auto", "bar", "lines", "none")
"""The values of ``--progress``: ``auto`` (a bar on a terminal, lines elsewhere), ``bar``,
``lines`` or ``none``."""
LINE_STEP = 5
"""A line is written each time the share done passes another multiple of this many %."""
BAR_WIDTH = 30


class Progress:
    """What commands have done of what they have to do, shown as ``mode`` says (``bar`` or
    ``lines``): a bar drawn with ``write`` (text written as it is, ``\\r`` and all), or
    lines each given whole to ``line``. Called as ``progress(command, done, total, what,
    label)``: ``command`` has done ``done`` of ``total`` ``what`` (runs, tables), ``label``
    the one begun or done. Each command is timed from its first call (again from its next
    call once it has done all)."""

    def __init__(
        self,
        mode: str,
        write: Callable[[str], None],
        line: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if mode not in ("bar", "lines"):
            raise ValueError(f"progress mode: got {mode!r}; expected 'bar' or 'lines'")
        self.mode, self._write, self._line, self._clock = mode, write, line, clock
        self._began: dict[str, tuple[float, int]] = {}
        """Per command: when it began and the last step (of `LINE_STEP` %) written, -1
        before any."""

    @classmethod
    def on(cls, out: TextIO, mode: str = "auto") -> Progress | None:
        """A progress on ``out`` (a command's stderr) in ``mode`` (one of
        `PROGRESS_MODES`; ``auto``: the bar when ``out`` is a terminal, lines otherwise);
        None for ``none``."""
        if mode not in PROGRESS_MODES:
            raise ValueError(
                f"--progress: got {mode!r}; expected one of {', '.join(PROGRESS_MODES)}"
            )
        if mode == "none":
            return None
        if mode == "auto":
            mode = "bar" if on_a_terminal(out) else "lines"

        def write(text: str) -> None:
            out.write(text)
            out.flush()

        return cls(mode, write, lambda text: write(text + "\n"))

    @classmethod
    def logged(cls, log: Callable[[str], None]) -> Progress:
        """Lines, each given to ``log`` (a Lambda's logger) as it is made."""
        return cls("lines", log, log)

    def __call__(self, command: str, done: int, total: int, what: str, label: str = "") -> None:
        if total <= 0:
            return
        began, last = self._began.get(command, (0.0, -1))
        if command not in self._began or last * LINE_STEP >= 100:  # new, or done before
            began, last = self._clock(), -1
        step = min(done, total) * 100 // total // LINE_STEP
        self._began[command] = (began, max(last, step))
        if self.mode == "bar":
            filled = "#" * (BAR_WIDTH * done // total)
            end = "\n" if done >= total else ""
            self._write(
                f"\r{command} [{filled:<{BAR_WIDTH}}] {done}/{total} {what} {label:<43}{end}"
            )
        elif step > last:
            seconds = self._clock() - began
            percent = min(done, total) * 100 // total
            self._line(f"{command}: {percent}% ({done} of {total} {what}, {seconds:.0f} s)")


def add_progress_option(parser: argparse.ArgumentParser) -> None:
    """``--progress`` and ``--quiet`` (``--progress none``) on a long command's parser."""
    parser.add_argument(
        "--progress",
        choices=PROGRESS_MODES,
        default="auto",
        help="how progress is shown on stderr: auto (the default: a bar on a terminal, a "
        f"line every {LINE_STEP}%% elsewhere, as in a file, a pipe or a CI log), bar, lines "
        "or none",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress: --progress none")


def progress_of(progress: str, quiet: bool, err: TextIO) -> Progress | None:
    """The progress the options ``--progress`` and ``--quiet`` ask for on ``err``."""
    return Progress.on(err, "none" if quiet else progress)


def step(
    progress: Progress | None, command: str, done: int, total: int, what: str, label: str = ""
) -> None:
    """``progress(command, done, total, what, label)``; nothing when ``progress`` is None."""
    if progress is not None:
        progress(command, done, total, what, label)
