"""Runs in: workstation (the ``ddb-capacity`` command).

The command's entry point: the compiled modules made the ones imported where a build
matches the source (`compiled.activate`), then the command line (`cli.main`)."""

from __future__ import annotations

from . import compiled


def main() -> int:
    compiled.activate()
    from .cli import main as command_line

    return command_line()
