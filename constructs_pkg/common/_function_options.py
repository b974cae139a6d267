"""Runs in: CDK app (synth time).

What an app may change of each function this library deploys (`FunctionOptions`), checked
and merged over the function's defaults (`function_configs`), without loading the CDK's
Lambda bindings: a table with no function of its own (no settle step) is checked and
synthesized without them (``aws_cdk.aws_lambda`` and the EC2 and S3 modules it loads, about
0.3 s of a synth, `benchmarks/synth_time.py`); `runtime` makes the functions."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration
from aws_cdk import aws_logs as logs

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown

from ._props import duration_prop, is_token, whole_prop


class _LazyModule:
    """A module imported on the first read of one of its attributes."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr == "_name":  # copy, pickle, inspect: not the module's
            raise AttributeError(attr)
        return getattr(importlib.import_module(self._name), attr)


if TYPE_CHECKING:
    from aws_cdk import aws_lambda as lambda_
else:  # read when an app gives an architecture, or when typing.get_type_hints reads the hints
    lambda_ = _LazyModule("aws_cdk.aws_lambda")

LOG_RETENTION = logs.RetentionDays.ONE_YEAR
"""Log retention of every function this library deploys, unless its FunctionOptions say."""
DEFAULT_ARCHITECTURE = "arm64"
"""The name of the architecture of every function (``Architecture.ARM_64``), unless its
FunctionOptions say."""
MEMORY_RANGE = (128, 10_240)
"""Lambda's memory range, in MB."""
MAX_TIMEOUT = Duration.minutes(15)
"""Lambda's longest timeout."""


@dataclass(frozen=True)
class FunctionOptions:
    """What to change of one function a construct deploys (its ``function_options``, keyed
    by the function's name: ``"Scaler"``, ``"Broker"``, ...), merged over the construct's
    defaults: a field set here wins, a field left None keeps the default.

    :param memory_size: memory in MB, from 128 to 10,240. Default: the construct's (256 MB
        for most; docs: Constructs reference).
    :param timeout: the function's timeout, within the range the function's deadline logic
        allows (named in the error when refused). Default: the construct's.
    :param log_retention: how long its log group keeps logs. Default: one year.
    :param architecture: ``Architecture.ARM_64`` or ``X86_64`` (the code is pure Python).
        Default: ARM_64.
    """

    memory_size: int | None = None
    timeout: Duration | None = None
    log_retention: logs.RetentionDays | None = None
    architecture: lambda_.Architecture | None = None


@dataclass(frozen=True)
class FunctionDefaults:
    """A function's defaults and the timeouts its logic allows: from ``shortest`` to
    ``longest``, for the reason ``why``."""

    memory_size: int
    timeout: Duration
    shortest: Duration
    longest: Duration = MAX_TIMEOUT
    why: str = "Lambda's longest timeout is 15 minutes"


@dataclass(frozen=True, eq=False)
class FunctionConfig:
    """A function's settings, the user's FunctionOptions merged over its defaults; equal to
    another made alike (compared by value: jsii's objects, a ``Duration`` or an
    ``Architecture``, compare by identity, and two made alike are two objects)."""

    memory_size: int
    timeout: Duration
    log_retention: logs.RetentionDays = LOG_RETENTION
    architecture: lambda_.Architecture | None = None
    """None: `DEFAULT_ARCHITECTURE` (``runtime`` gives the function ``Architecture.ARM_64``)."""

    @property
    def architecture_name(self) -> str:
        """The architecture's name: ``arm64`` or ``x86_64``."""
        return DEFAULT_ARCHITECTURE if self.architecture is None else self.architecture.name

    def _key(self) -> tuple[object, ...]:
        timeout = self.timeout.to_seconds(integral=False)  # a token's: its own mark
        return (self.memory_size, timeout, self.log_retention, self.architecture_name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FunctionConfig) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return (
            f"{self.memory_size} MB, a timeout of {self.timeout.to_human_string()}, logs kept "
            f"{self.log_retention.name}, {self.architecture_name}"
        )


def function_configs(
    where: str, options: object, defaults: Mapping[str, FunctionDefaults]
) -> dict[str, FunctionConfig]:
    """``function_options`` (None, or a mapping from the names in ``defaults`` to
    FunctionOptions) checked and merged over ``defaults``: one FunctionConfig a name."""
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise CapacityConfigError(
            f"{where}: function_options: got {shown(options)}; expected a mapping from a "
            f"function name ({', '.join(defaults)}) to a FunctionOptions, or None"
        )
    for name, option in options.items():
        if name not in defaults:
            raise CapacityConfigError(
                f"{where}: function_options: unknown function {shown(name)}; expected one "
                f"of: {', '.join(defaults)}"
            )
        if not isinstance(option, FunctionOptions):
            raise CapacityConfigError(
                f"{where}: function_options[{name!r}]: got {shown(option)}; expected a "
                "FunctionOptions"
            )
    return {
        name: _merged(f"{where}: function_options[{name!r}]", options.get(name), default)
        for name, default in defaults.items()
    }


def _merged(
    where: str, option: FunctionOptions | None, default: FunctionDefaults
) -> FunctionConfig:
    """``option`` checked and merged over ``default`` (a field None keeps the default)."""
    if option is None:
        return FunctionConfig(default.memory_size, default.timeout)
    memory = default.memory_size
    if option.memory_size is not None:
        memory = whole_prop(where, "memory_size", option.memory_size, *MEMORY_RANGE)
    timeout = default.timeout
    if option.timeout is not None:
        timeout = _checked_timeout(where, option.timeout, default)
    retention = option.log_retention
    if retention is not None and not isinstance(retention, logs.RetentionDays):
        raise CapacityConfigError(
            f"{where}: log_retention: got {shown(retention)}; expected an "
            "aws_logs.RetentionDays, or None"
        )
    return FunctionConfig(
        memory, timeout, retention or LOG_RETENTION, _architecture(where, option.architecture)
    )


def _architecture(where: str, value: object) -> lambda_.Architecture | None:
    """A FunctionOptions' ``architecture`` checked (None: the default)."""
    if value is not None and not isinstance(value, lambda_.Architecture):
        raise CapacityConfigError(
            f"{where}: architecture: got {shown(value)}; expected an aws_lambda.Architecture, "
            "or None"
        )
    return value


def _checked_timeout(where: str, timeout: object, default: FunctionDefaults) -> Duration:
    checked = duration_prop(where, "timeout", timeout, Duration.seconds(0))  # range: below
    assert checked is not None
    try:
        seconds = checked.to_seconds()
    except RuntimeError:  # a token's amount in another unit: the CDK converts seconds alone
        raise CapacityConfigError(
            f"{where}: timeout: got {checked.to_human_string()}; a timeout whose amount is a "
            "token (a parameter's) must be a Duration.seconds(...): a token cannot be converted "
            "to the seconds Lambda takes"
        ) from None
    if is_token(seconds):  # a parameter's: checked at deploy time
        return checked
    low, high = default.shortest.to_seconds(), default.longest.to_seconds()
    if not low <= seconds <= high:
        allowed = (
            f"exactly {default.longest.to_human_string()}"
            if low == high
            else f"from {default.shortest.to_human_string()} to {default.longest.to_human_string()}"
        )
        raise CapacityConfigError(
            f"{where}: timeout: got {checked.to_human_string()}; expected a Duration "
            f"{allowed}: {default.why}"
        )
    return checked
