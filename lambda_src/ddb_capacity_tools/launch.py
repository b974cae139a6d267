"""Runs in: workstation (the ``ddb-capacity`` command).

The command's entry point: for a command that simulates (`compiled.SIMULATING`), the
compiled modules made the ones imported where a build matches the source
(`compiled.activate`); then the command line (`cli.main`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from . import compiled


def command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` (the arguments after the program's name) names: its first
    argument that is not an option."""
    return next((a for a in argv if not a.startswith("-")), None)


def main() -> int:
    if command(sys.argv[1:]) in compiled.SIMULATING:
        compiled.activate()
    from .cli import main as command_line

    return command_line()
