"""Runs in: CDK app (synth), workstation (simulator, schedules), every Lambda function and
the user's own processes ([`shown`][]).

Errors shared by the constructs, the run-time code and the tools, and how a message
repeats a value it was given ([`shown`][]) or an exception ([`reason_of`][]).

Every exception the three packages raise derives from [`CapacityError`][], so
``except CapacityError`` catches any of them; each also keeps the built-in its callers
already catch: ``ValueError`` for input that breaks a rule (the message names the field,
the value received and what is allowed), ``RuntimeError`` for a run that failed,
``TimeoutError`` for a wait that ran out."""

SHOWN_CHARS = 200
"""The most characters of a caller's input that an answer or a log line repeats."""


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``value`` as a message repeats it: its repr, cut to ``limit`` characters (an answer
    or a log line never carries a caller's whole input)."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        return f"<{type(value).__name__} too long to show>"
    except RecursionError:  # nested deeper than repr recurses
        return f"<{type(value).__name__} nested too deep to show>"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


REASON_CHARS = 1_000
"""The most characters of an exception's text an answer or a log line carries."""


def reason_of(exc: BaseException) -> str:
    """``exc`` as a reason in an answer or a log line: its text (its class name when it has
    none), cut to `REASON_CHARS` characters."""
    text = str(exc) or type(exc).__name__
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS] + "..."


class CapacityError(Exception):
    """The root of every exception the library raises."""


class CapacityConfigError(CapacityError, ValueError):
    """A capacity setting that DynamoDB or Application Auto Scaling would refuse."""
