"""Runs in: workstation (the `ddb-capacity` command).

The simulator's model parameters: every assumption the simulated table makes, each a
field of [`ModelParams`][ddb_capacity_tools.simulator.ModelParams] with its range.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace

from ddb_capacity_runtime.core.names import DEFAULT_TABLE_QUOTA
from ddb_capacity_runtime.core.reservation import Reservation, reserved_problem
from ddb_capacity_runtime.core.settings import RESERVED_SETTINGS, SETTINGS_BY_KEY
from ddb_capacity_runtime.core.validators import is_number

from ..tool_errors import ModelError as ModelError
from .billing import DEFAULT_BASIS, check_basis
from .trace import Trace

FRACTIONAL = frozenset(
    {"units_per_request", "burst_fraction", "key_skew", "table_size_gb", "fast_path_share"}
)

"""The fields that take any number in their range; every other field is a whole number."""
OPTIONAL = {
    "key_skew": "the trace's own",
    "split_minutes": "never",
    "on_demand_max_read_units": "unlimited",
    "on_demand_max_write_units": "unlimited",
    "fast_path_seconds": "off",
    "fast_path_cap": "the signals function's default cap and budget",
    "warm_update_seconds": "every change takes update_minutes",
    "stream_seconds": "off",
}
"""The fields that may also be None, and what None means."""
OFF = frozenset({"split_minutes", "warm_update_seconds"})
"""Of those, the ones the command line sets to None with ``off`` (``--key-skew`` is None when it is
not given)."""

BOUNDS: dict[str, tuple[float, float]] = {
    "burst_seconds": (0, 3600),
    "metric_delay_minutes": (0, 15),
    "throttle_delay_minutes": (0, 15),
    "update_minutes": (0, 10),
    "units_per_request": (0.001, 1000),
    "min_capacity": (1, 40_000),
    "max_capacity": SETTINGS_BY_KEY["default_max"].range,
    "warmup_minutes": (0, 1440),
    "retries": (0, 20),
    "burst_fraction": (0, 1),
    "delay_spread_minutes": (0, 10),
    "update_spread_minutes": (0, 30),
    "model_seed": (0, 2**31 - 1),
    "key_skew": (0, 1),
    "split_minutes": (1, 1440),
    "table_size_gb": (0, 1_000_000),
    "warm_read_units": (0, 1_000_000),
    "warm_write_units": (0, 1_000_000),
    "on_demand_peak_minutes": (1, 1440),
    "on_demand_max_read_units": (1, 1_000_000),
    "on_demand_max_write_units": (1, 1_000_000),
    "fast_path_seconds": (1, 600),
    "fast_path_share": (0.01, 1),
    "fast_path_cap": (1, 1_000_000),
    "warm_update_seconds": (0, 600),
    "stream_seconds": (1, 600),
    **{key: SETTINGS_BY_KEY[key].range for key in RESERVED_SETTINGS},
}
"""Each field's range (both ends allowed); a field that is also a setting of the scaler
(`ddb_capacity_runtime.core.settings.SETTINGS`) takes that setting's."""
HUNDREDS = frozenset(RESERVED_SETTINGS)
"""The fields that take whole hundreds only (reserved capacity's blocks of 100 units): the
scaler's reserved units settings."""


def bound_text(value: float) -> str:
    """A range's end as messages and help print it: 1,000,000, 0.01 (never 1e+06)."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class ModelParams:
    """The model's assumptions (docs/guides/simulator.md#the-model).

    :param burst_seconds: seconds of unused capacity the burst bucket keeps. DynamoDB: 300.
    :param metric_delay_minutes: minutes after a minute ends before its consumed datapoint
        is visible. CloudWatch: 1-3. Default 2.
    :param throttle_delay_minutes: minutes after a minute ends before its throttle events
        are visible. Default 2.
    :param update_minutes: minutes an UpdateTable takes to apply. Default 1 ("Handle traffic
        spikes with Amazon DynamoDB provisioned capacity": "less
        than a minute usually" once the high-water mark is set).
    :param units_per_request: capacity units one throttled request would have used; converts
        refused units into throttle events. Default 1. Policies are not told it: the
        throttle-aware policy assumes 1.
    :param retries: attempts the application makes after a throttled one (AWS SDKs retry
        throttles, with backoff, within seconds). Each attempt is a throttle event, as
        CloudWatch counts them; a minute's capacity is spent by then, so a retried request is
        refused again and, after the last attempt, lost. Default 0.
    :param burst_fraction: the fraction of the burst bucket DynamoDB leaves you (it may spend
        burst capacity on its own maintenance and does not promise it). Default 1.
    :param delay_spread_minutes: each minute's datapoints become visible after their delay
        plus a uniform draw from 0 to this (CloudWatch: 1 to 3 minutes in all). Default 0.
    :param update_spread_minutes: each UpdateTable takes ``update_minutes`` plus a uniform
        draw from 0 to this. Default 0.
    :param model_seed: seeds the draws. Default 1.
    :param min_capacity: the least capacity any policy sets a dimension to. Default 1.
    :param max_capacity: the most capacity any policy sets a dimension to (the table quota,
        40,000 by default). Policies move between the two.
    :param warmup_minutes: minutes simulated before the trace at its first row's demand, so
        policies start settled and with a CloudWatch history. Not counted in results.
    :param key_skew: the hot key's share of every dimension's requests, 0 to 1 (the
        partition model, `HotPartition`). 0: no hot key, and no partition limits (the
        model before partitions, exactly). None (the default): the trace's own
        (`Trace.key_skew`; 0 for a CSV trace or a table's history).
    :param split_minutes: minutes in a row the hot partition must be asked for more than it
        serves before DynamoDB splits it for heat. None: never. Default 15.
    :param table_size_gb: the table's size (and each GSI's): at least one partition per
        10 GB. Default 0.
    :param warm_read_units, warm_write_units: the table's (and each GSI's) warm read or
        write throughput, counted towards its partitions as if it had been provisioned.
        Default 0. On
        on-demand, what the table serves at once from the start when above a new table's
        (`ON_DEMAND_WARM`: 12,000 and 4,000): warm throughput is only ever raised.
    :param on_demand_peak_minutes: on-demand's doubling rule (`OnDemandDimension`):
        minutes after a peak is reached before traffic may exceed double it. DynamoDB: 30.
    :param on_demand_max_read_units, on_demand_max_write_units: an on-demand table's (and
        each GSI's) maximum read or write throughput, above which it throttles
        (``OnDemandThroughput``).
        None (the default): unlimited, but for the table quota (``max_capacity``).
    :param fast_path_seconds: the fast path (`fast_path`): seconds after a moment's
        demand until the application's reports of it reach the signals function, which
        raises capacity at once. Only the library's policies (throttle-aware, autopilot)
        receive them. None (the default): off.
    :param fast_path_share: the share of the traffic whose processes report (0.01 to 1).
        The signals function is not told it (as deployed by default: it scales nothing
        up). Default 1.
    :param fast_path_cap: the surge cap (``FastPath(surge_cap=...)``): the most units a
        surge adds over the capacity it started from. None (the default): the signals
        function's default, 4x the capacity it started from (at least 100 units more) or
        up to the warm throughput when higher; either way within the default budget
        (`fast_path`).
    :param warm_update_seconds: seconds a raise within the warm throughput of every
        dimension it changes takes to land (`model`). AWS documents it as instant;
        the table still shows UPDATING for a moment. Default 10. None: such raises take
        ``update_minutes`` like any other change (the model before warm throughput).
    :param stream_seconds: the table's stream as a signal (`fast_path`): seconds
        after a moment until the served writes of it reach the stream reader, which raises
        capacity at once. Only served writes are seen (reads and refused requests are not).
        Only the library's policies receive them. None (the default): off.
    :param reserved_read_units, reserved_write_units: the Region's reserved capacity
        covering the table, in whole hundreds (blocks of 100 units). Each minute, the part
        of a dimension's provisioned total (table and GSIs) at or below it costs nothing;
        what is above is charged at the list price (`run`). The reservation's own fee is
        sunk and not counted. A ``+reserved`` policy never lowers the total below it.
        Default 0: no reservation.
    :param billing: how provisioned capacity is billed, hourly-max or per-minute (`billing`).
        hourly-max (the default): each clock hour at its highest provisioned level, which
        never under-charges provisioned capacity against on-demand; per-minute: each
        minute at its level, a sixtieth of the hour's price.
    """

    burst_seconds: int = 300
    metric_delay_minutes: int = 2
    throttle_delay_minutes: int = 2
    update_minutes: int = 1
    units_per_request: float = 1.0
    min_capacity: int = 1
    max_capacity: int = DEFAULT_TABLE_QUOTA
    warmup_minutes: int = 60
    retries: int = 0
    burst_fraction: float = 1.0
    delay_spread_minutes: int = 0
    update_spread_minutes: int = 0
    model_seed: int = 1
    key_skew: float | None = None
    split_minutes: int | None = 15
    table_size_gb: float = 0.0
    warm_read_units: int = 0
    warm_write_units: int = 0
    on_demand_peak_minutes: int = 30
    on_demand_max_read_units: int | None = None
    on_demand_max_write_units: int | None = None
    fast_path_seconds: int | None = None
    fast_path_share: float = 1.0
    fast_path_cap: int | None = None
    warm_update_seconds: int | None = 10
    stream_seconds: int | None = None
    reserved_read_units: int = 0
    reserved_write_units: int = 0
    billing: str = DEFAULT_BASIS

    def __post_init__(self) -> None:
        # a whole number given as a float (2000.0) is the whole number it is: the compiled
        # modules (`ddb_capacity_tools.compiled`) take a whole-number field's value as an int
        for f in fields(self):
            value = getattr(self, f.name)
            if type(value) is float and f.name not in FRACTIONAL and value.is_integer():
                object.__setattr__(self, f.name, int(value))

    def validate(self, flags: bool = False) -> ModelParams:
        """Raise [`ModelError`][ddb_capacity_tools.simulator.ModelError] for the first field out of
        range, named as a field or, with ``flags``, as the command-line option."""

        def name(field_name: str) -> str:
            return "--" + field_name.replace("_", "-") if flags else field_name

        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "billing":
                check_basis(value, name(f.name))
                continue
            if (value is None and f.name in OPTIONAL) or f.name in HUNDREDS:
                continue
            lo, hi = BOUNDS[f.name]
            whole = f.name not in FRACTIONAL
            ok = is_number(value, lo, hi) and (not whole or float(value).is_integer())
            if not ok:
                kind = "a whole number" if whole else "a number"
                also = ""
                if f.name in OPTIONAL and (f.name in OFF or not flags):
                    also = f", or {'off' if flags else 'None'} ({OPTIONAL[f.name]})"
                span = f"{bound_text(lo)} to {bound_text(hi)}"
                expected = f"expected {kind} from {span}{also}"
                raise ModelError(f"{name(f.name)}: got {value!r}; {expected}")
        self._check_hundreds(name)
        if self.min_capacity > self.max_capacity:
            raise ModelError(
                f"{name('min_capacity')}: got {self.min_capacity}; expected at "
                f"most {name('max_capacity')} ({self.max_capacity})"
            )
        return self

    def _check_hundreds(self, name: Callable[[str], str]) -> None:
        """Raise `ModelError` for a reserved-units field that is not whole hundreds from 0 to
        the most (`reserved_problem`), named by ``name``."""
        for hundreds in sorted(HUNDREDS):
            value = getattr(self, hundreds)
            whole = isinstance(value, float) and value.is_integer()
            problem = reserved_problem(int(value) if whole else value)
            if problem is not None:
                raise ModelError(f"{name(hundreds)}: got {value!r}; {problem}")

    @property
    def reservation(self) -> Reservation:
        """The reserved read and write units (`reserved_read_units`, `reserved_write_units`)."""
        return Reservation(self.reserved_read_units, self.reserved_write_units)

    @property
    def burst(self) -> float:
        """Seconds of unused capacity the bucket can hold, with the fraction left to you."""
        return self.burst_seconds * self.burst_fraction

    def skew(self, trace: Trace) -> float:
        """The hot key's share on ``trace``: ``key_skew``, or the trace's own when None."""
        return trace.key_skew if self.key_skew is None else self.key_skew

    def for_trace(self, trace: Trace) -> ModelParams:
        """These parameters with ``key_skew`` resolved for ``trace`` (as results report it)."""
        return replace(self, key_skew=self.skew(trace))
