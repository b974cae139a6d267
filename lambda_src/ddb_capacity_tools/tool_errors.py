"""Runs in: workstation, CI, fleet advisor and nightly tuning Lambdas.

Every exception class of the tools, in one module to read top to bottom; each is a
`CapacityError` (the library's one root, ``ddb_capacity_runtime.core.errors``) and a
``ValueError``: each refuses an input (an option, a file, a setting) and its message names
the field, the value received and what is allowed (but `CompileError`, a ``RuntimeError``:
the compiled modules' build failed). Each is importable from the module that
raises it too. And `option_named`: a file's error, read for an option, names the option;
`whole`: an option's whole number, anything else refused saying so; `printable`: a name
from the user's files or arguments as the tools print it; `reason_of`: an exception as a
reason shown to the user.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from ddb_capacity_runtime.aws.error_codes import describe_error
from ddb_capacity_runtime.core.errors import CapacityError


def whole(text: str) -> int:
    """An option's whole number (argparse's ``type``); anything else refused saying so,
    argparse's message naming the option: ``argument --read: got 'abc'; expected a whole
    number``."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"got {text!r}; expected a whole number") from None


def printable(text: object) -> str:
    """``text`` (a file's name, a name from a user's file) as the tools print it: each
    character a terminal would act on or that starts a line (an escape sequence's ESC, a
    newline, any other control or format character, a byte that was not UTF-8) escaped as
    Python writes it (``\\x1b``), the others as they are."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in str(text))


def reason_of(exc: BaseException) -> str:
    """``exc`` as a reason shown to the user (a table that could not be advised, settings
    that could not be read): the message alone for one of the library's own refusals (a
    `CapacityError`, whose message says what it refused), AWS's error code and message for
    an AWS error, the class and the message for anything else."""
    if isinstance(exc, CapacityError):
        return str(exc) or type(exc).__name__
    return describe_error(exc)


class CompileError(CapacityError, RuntimeError):
    """The compiled modules' build failed (``ddb_capacity_tools.compiled``); the message
    says why (mypyc's or the C compiler's last words)."""


class RequestInputError(CapacityError, ValueError):
    """A ``request`` / ``release`` option is out of range. Raised by ``ddb-capacity``
    (`cli`)."""


class OptionError(CapacityError, ValueError):
    """A value argparse lets through that no option takes. Raised by ``ddb-capacity``
    (`cli`)."""


class HtmlError(CapacityError, ValueError):
    """A page cannot be written (a bad file name, a folder that does not exist). Raised by the
    report pages (`page.document`)."""


class SettingsError(CapacityError, ValueError):
    """An environment variable the advisor cannot run with; the message names it. Raised by the
    fleet advisor's settings (`fleet_settings`)."""


class AdviseError(CapacityError, ValueError):
    """The account's table list could not be read as documented: nothing is advised. Raised by
    ``advise`` (`advise`)."""


class NestedJSONError(CapacityError, ValueError):
    """A user's JSON file nested deeper than the tools read; the caller names the file. Raised
    by `json_files.loads`."""


class ReserveError(CapacityError, ValueError):
    """A fleet or an option ``reserve`` cannot plan with; the message names it. Raised by
    ``reserve`` (`reserve`)."""


class ModelError(CapacityError, ValueError):
    """A model parameter outside what the model supports. Raised by the simulator's model
    (`simulator.params`)."""


class TuneError(CapacityError, ValueError):
    """A tune option out of range; the message names the option, the value and the range. Raised
    by ``tune`` (`simulator.tune`)."""


class ScenarioError(CapacityError, ValueError):
    """An unknown scenario name. Raised by the simulator's scenarios (`simulator.scenarios`)."""


class TraceError(CapacityError, ValueError):
    """A trace that cannot be simulated; the message names the line and column. Raised by traces
    (`simulator.trace`)."""


class EnsembleError(CapacityError, ValueError):
    """An unknown ensemble name. Raised by ensembles (`simulator.ensemble`)."""


class PolicyError(CapacityError, ValueError):
    """A policy name the simulator does not know, or that cannot run on this input. Raised by
    policies (`simulator.policies`)."""


class PriceError(CapacityError, ValueError):
    """A price override that is not a known name with a non-negative number. Raised by prices
    (`simulator.prices`)."""


class ChartError(CapacityError, ValueError):
    """The chart cannot be written (matplotlib missing, a bad file name). Raised by charts
    (`simulator.chart`)."""


class ScheduleFileError(CapacityError, ValueError):
    """A schedule that cannot be read; the message names the entry and field. Raised by schedule
    files (`simulator.schedules`)."""


class LocalError(CapacityError, ValueError):
    """An option of ``local`` names no app or stack that can be deployed locally. Raised by
    ``local`` (`local`)."""


class FlagsError(CapacityError, ValueError):
    """The feature flags cannot be read or merged: aws-cdk-lib is not installed, or the
    ``cdk.json`` given is not a JSON object (or cannot be read or written); the message names
    the file. Raised by ``flags`` (`flags_command`)."""


class ReportError(CapacityError, ValueError):
    """A report destination that cannot be written to; the message names ``--report``. Raised by
    the fleet report (`fleet`)."""


@contextmanager
def option_named(
    option: str,
    path: object = None,
    errors: tuple[type[CapacityError], ...] = (TraceError, ScheduleFileError),
) -> Iterator[None]:
    """Read, or use, the file ``option`` gave (``path``): one of ``errors`` is raised again
    with the option first, and the file's name after it where the message does not start
    with it (``--trace: x.csv line 3, column read: ...``, ``--schedule: s.json: schedule
    entry 1: missing field 'name'``)."""
    try:
        yield
    except errors as exc:
        message, name = str(exc), printable(path)
        if path is not None and not message.startswith(name):
            message = f"{name}: {message}"
        raise type(exc)(f"{option}: {message}") from None
