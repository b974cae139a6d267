"""Runs in: CDK app (synth), workstation (simulator, schedules), every Lambda function and
the user's own processes ([`shown`][]).

Errors shared by the constructs, the run-time code and the tools, and how a message
repeats a value it was given ([`shown`][]) or an exception ([`reason_of`][]).

Every exception the three packages raise derives from [`CapacityError`][], so
``except CapacityError`` catches any of them; each also keeps the built-in its callers
already catch: ``ValueError`` for input that breaks a rule (the message names the field,
the value received and what is allowed), ``RuntimeError`` for a run that failed,
``TimeoutError`` for a wait that ran out."""

from typing import Any

SHOWN_CHARS = 200
"""The most characters of a caller's input that an answer or a log line repeats."""


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``value`` as a message repeats it: its repr, cut to ``limit`` characters (an answer
    or a log line never carries a caller's whole input); a CDK construct (anything with a
    ``node.path``) as its class and path, not its address in memory."""
    if not isinstance(value, str | bytes | int | float | dict | list | tuple):
        try:
            path = getattr(getattr(value, "node", None), "path", None)
        except Exception:  # an object whose attributes raise is shown by its repr
            path = None
        if isinstance(path, str) and path:
            kind = type(value)
            return shown_text(f"<{kind.__module__}.{kind.__qualname__} {path}>", limit)
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        return f"<{type(value).__name__} too long to show>"
    except RecursionError:  # nested deeper than repr recurses
        return f"<{type(value).__name__} nested too deep to show>"
    return shown_text(text, limit)


def shown_text(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
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


def with_notes(exc: BaseException) -> str:
    """``exc`` as ``Class: text``, then each note added to it (``add_note``), each after
    ``; ``: a custom resource's reason to CloudFormation, whole."""
    notes = "".join(f"; {note}" for note in getattr(exc, "__notes__", ()))
    return f"{type(exc).__name__}: {exc}{notes}"


class CapacityError(Exception):
    """The root of every exception the library raises."""


class CapacityConfigError(CapacityError, ValueError):
    """A capacity setting that DynamoDB or Application Auto Scaling would refuse."""


class ScheduleError(CapacityConfigError):
    """A schedule Application Auto Scaling would refuse, or one that contradicts itself. Raised
    by schedules, at synth time too (`schedule.entries`, `schedule.expressions`)."""


class UntrustedJSONError(CapacityError, ValueError):
    """A JSON text or value nested deeper, or larger, than allowed."""


class DeadlinePassed(CapacityError, TimeoutError):
    """The deadline passed before a lease wait or a control-plane call: nothing was sent."""


class ConfigError(CapacityError, ValueError):
    """The scaler's environment is not usable; the message says what to change."""


class OverrideError(CapacityError, ValueError):
    """One table's overrides are not usable; that table is skipped, the others go on."""


class CapacityRequestError(CapacityError, ValueError):
    """A request that cannot be made or completed; the message says why."""


class CapacityRequestFailed(CapacityRequestError):
    """A call a request needed failed at AWS (an error answer after the SDK's retries: a
    denied RegisterScalableTarget, a throttled hold store): not a refusal of the request
    itself. The broker fails its invocation for it, so it is counted and alarmed."""


class HoldStoreMissing(CapacityRequestFailed):
    """The hold store named is not a table in the account and Region: nothing was held in it,
    so nothing a request raised under it is left to withdraw."""


class CapacityRequestTimeout(CapacityRequestError, TimeoutError):
    """The table did not reach the requested capacity in time (the hold was withdrawn)."""


class LevelUnconfirmed(CapacityRequestTimeout):
    """A request's level not confirmed by its timeout, its hold recorded
    (`requests.context.still_has`): the request answers as a timeout, and keeps its hold (a
    decrease in flight may need it)."""


class TableGone(CapacityRequestError):
    """The table no longer exists, or is on-demand: no hold on it can do anything."""


class SwitchError(CapacityError, RuntimeError):
    """An on-demand window's switch that did not happen; ``metric`` is what it is counted as
    (``SwitchFailed``, or ``SwitchRefused`` for one DynamoDB's daily limit or the table's
    state forbids)."""

    def __init__(self, message: str, metric: str = "SwitchFailed") -> None:
        super().__init__(message)
        self.metric = metric


class OnDemandForNow(CapacityRequestTimeout):
    """The table is on-demand but keeps its scalable targets (an on-demand window): a
    request needs no raise, and its holds stay for when it is provisioned again. An ending
    of them waits for that (``status``: `core.outcomes.Status.RETRY_NEXT_TICK`'s value, not
    ``busy``: not counted as ``HoldsBusy``)."""

    status = "retry-next-tick"


class SurgeReportError(CapacityError, ValueError):
    """A report that breaks the contract: the message names the field, the value received
    and what is allowed."""


class InvokeError(CapacityError, RuntimeError):
    """The invocation itself failed (AWS refused it, or the connection failed); the
    message is AWS's, `code` its error code (or botocore's error class when AWS was not
    reached) and `hint` one line on what usually causes it."""

    def __init__(self, message: str, code: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.hint = hint


class BrokerConfigError(ConfigError):
    """The broker's own configuration is broken: every request would fail, so the
    invocation fails (a Lambda error, alarmed) instead of refusing the caller."""


class BatchError(CapacityConfigError):
    """A batch message that does not say what a batch is."""


class ReplicaScheduleError(CapacityError, RuntimeError):
    """A global table's replica schedule that could not be read or applied (the custom
    resource of ``GlobalTableCapacity``); the message names the table, the Region and the
    cause, and CloudFormation shows it."""


class SettleError(CapacityError, RuntimeError):
    """The settle step failed; its message (the cause's type and message) is the reason
    CloudFormation shows."""


class InstrumentError(CapacityError, ValueError):
    """A setting of the launcher or of the environment that cannot be used."""


class WatchError(CapacityError, ValueError):
    """An argument of the fast path's client hook (`watch`) that cannot be used: the
    message names the argument, the value received and what is allowed."""


class WatchTypeError(WatchError, TypeError):
    """An argument of `watch` of a kind it cannot use (a string for ``tables``, a boto3
    resource for the client): a `WatchError`, and a ``TypeError`` as it was before."""


class PacingError(CapacityError, ValueError):
    """A rate or burst that is not a positive number."""


class ScanError(CapacityError, ValueError):
    """A scan setting that is not allowed."""


class WriteError(CapacityError, ValueError):
    """What a ``SlowStartWriter`` cannot write with or write: a client that is not a DynamoDB
    client, a table name DynamoDB would refuse, items that are not a collection of items.
    The message names the argument, the value received and what is allowed."""


class TableBusy(CapacityError, RuntimeError):
    """The table is being updated: nothing is sent this time."""


class CombinerContended(CapacityError, RuntimeError):
    """The combiner item changed under every attempt to write a process's entry."""


class NotManaged(CapacityError, RuntimeError):
    """The table is skipped this tick (not ACTIVE, on-demand); not an error."""


class UnsoundListing(CapacityError, ValueError):
    """A listing of Application Auto Scaling's (untrusted) with an entry that says nothing
    sound: a scalable target without its ResourceId and ScalableDimension or a whole
    MinCapacity and MaxCapacity from 0, a target-tracking policy without its ResourceId and
    ScalableDimension. What that listing holds is unknown, and only that: the tick reads
    each table's own targets instead, and the table the entry belongs to fails alone, its
    own listing raising the same."""


class TableUpdating(NotManaged):
    """The table is UPDATING: skipped this tick, and counted (a table that stays UPDATING
    is not managed at all)."""


class TableUnavailable(NotManaged):
    """The table is in a status no wait ends by itself (its KMS key inaccessible,
    archiving, archived): the tick cannot manage it, a failure of that table (counted and
    alarmed), not a skip."""


class OnDemand(NotManaged):
    """The table is on-demand (``PAY_PER_REQUEST``): it has no capacity to manage; a
    capacity request for it ends at once (`core.holds.TableGone`)."""


class LeaseLost(CapacityRequestError):
    """A write under a state-store lease that was no longer the writer's (it ran out and
    another process took it): nothing was written."""


class LeasesNotGivenBack(CapacityError, RuntimeError):
    """A state-store lease not given back once the UpdateTable sent under it (`aws.actuator`):
    ``outcomes``, of every change of the table, stand (the lease runs out by itself); the
    caller counts the failure."""

    def __init__(self, outcomes: list[Any], why: str) -> None:
        super().__init__(f"a lease of the state store not given back: {why}")
        self.outcomes = outcomes


class TargetsUnknown(CapacityError, RuntimeError):
    """Whether the table's dimensions are under scalable targets is not known this tick."""


class TickFailed(CapacityError, RuntimeError):
    """The tick acted on every table it could, but some table or shared call failed."""


class HoldsUnread(CapacityError, RuntimeError):
    """The settle step's read of a hold store met an error that may pass (a throttle, a
    server's error, a denial while IAM applies a new statement): read again at the
    provider's next call."""
