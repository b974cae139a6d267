"""Runs in: workstation (`ddb-capacity tune`, `advise`).

The construct code printed with a recommendation, to paste into a CDK app (`code_for`),
with the bounds it sets (`bounds_for`). Its scope is ``stack``, as in the README's quick
start (``self`` in a Stack's own class); ``partition_key=...`` is the table's own key.
"""

from __future__ import annotations

from dataclasses import replace

from ddb_capacity_runtime.core.on_demand_hours import HISTORY_DAYS
from ddb_capacity_runtime.core.policy import capacity_units

from .candidates import STREAM_SECONDS
from .hybrid import SWITCH_MINUTES, windows_of
from .params import ModelParams
from .policies import Spec
from .run import hybrid_base
from .table_class import STANDARD_IA
from .trace import Trace

STREAM_VIEW = "NEW_AND_OLD_IMAGES"
"""The stream a table read as a signal has (the view type the library turns on for a table it
makes: `constructs_pkg.fast_path._stream_signal.VIEW_TYPE`)."""

PEAK_HEADROOM = 2
"""The pasted code's maximum is this many times the trace's peak (`bounds_for`)."""


def bounds_for(
    trace: Trace, params: ModelParams, target_percent: int
) -> dict[str, tuple[int, int]]:
    """Per dimension (``read``, ``write``), the range the pasted code gives it, from the
    traffic's own range at the target utilization (``T`` %):

    - min: the trace's lowest minute of that dimension / T, rounded up: never more than
      its quietest minute needs, so the range does not keep capacity the traffic never
      asked for;
    - max: ``PEAK_HEADROOM`` (2) x its busiest minute / T, rounded up: room for traffic up
      to twice the trace's peak before a raise is capped;

    both within the model's range (``--min-capacity`` to ``--max-capacity``, 1 to 40,000 by
    default), and the max at least the min. The table's own dimensions are read, else (a
    trace of one GSI) the first of that dimension."""
    target = target_percent / 100
    out = {}
    for dim in ("read", "write"):
        keys = [k for k in trace.demand if k[1] == dim]
        key = (None, dim) if (None, dim) in trace.demand else keys[0] if keys else None
        demand = trace.demand[key] if key is not None else []
        low, peak = min(demand, default=0.0), max(demand, default=0.0)
        lo, hi = params.min_capacity, params.max_capacity
        least = max(lo, min(hi, capacity_units(low / target)))
        most = max(least, min(hi, capacity_units(PEAK_HEADROOM * peak / target)))
        out[dim] = (least, most)
    return out


def code_for(
    spec: Spec,
    trace: Trace,
    params: ModelParams,
    warm: dict[str, int] | None = None,
    table_class: str | None = None,
    extras: tuple[str, ...] = (),
    hours: tuple[bool, ...] = (),
) -> str:
    """The construct code that deploys ``spec`` on a table (`_code`); for declared windows
    (``windows:T``) and the hybrid (``hybrid:T``), the autopilot on stock at T
    (`run.hybrid_base`), then `_windows_code` at ``hours`` or `_learned_code`."""
    if spec.kind in ("windows", "hybrid"):
        base = _code(hybrid_base(spec), trace, params, warm, table_class, extras)
        return base + (_windows_code(hours) if spec.kind == "windows" else _learned_code(spec))
    return _code(spec, trace, params, warm, table_class, extras)


def _code(
    spec: Spec,
    trace: Trace,
    params: ModelParams,
    warm: dict[str, int] | None,
    table_class: str | None,
    extras: tuple[str, ...],
) -> str:
    """The construct code that deploys ``spec`` on a table, each dimension's range from the
    trace's traffic (`bounds_for`); with ``warm`` (per dimension), the table
    pre-warmed to it (``PROVISION_THEN_SETTLE`` in ``extras``: provisioned at the marks, then
    settled; else by warm throughput); with the fast path's signals on in ``params``, or
    ``stream`` in ``extras``, the fast path; with ``table_class`` `STANDARD_IA`, the table
    in that class (Standard is the default)."""
    klass = f"table_class=dynamodb.TableClass.{STANDARD_IA}" if table_class == STANDARD_IA else ""
    line = f"    {klass},\n" if klass else ""
    settle = bool(warm) and "PROVISION_THEN_SETTLE" in extras
    if "stream" in extras:
        params = replace(params, stream_seconds=params.stream_seconds or STREAM_SECONDS)
    if spec.kind == "on-demand":
        return (
            "dynamodb.Table(stack, 'Table', partition_key=..., "
            f"billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST{', ' + klass if klass else ''})\n"
        )
    target = spec.value or 70
    (r_lo, r_hi), (w_lo, w_hi) = bounds_for(trace, params, target).values()
    if spec.kind == "stock" or (spec.kind == "autopilot" and spec.with_stock):
        if settle:
            line += "    prewarm=PrewarmMethod.PROVISION_THEN_SETTLE,\n"
        table = _provisioned_table_code(target, (r_lo, r_hi), (w_lo, w_hi), warm, line)
        if spec.kind == "stock":
            return table + _fast_path_code(params, False)
        owned = ", own_target=True" if spec.owned else ""
        fast = _fast_path_code(params, True)
        return (
            f"table = {table}"
            f"{_scaler_name(fast)}ThrottleAwareScaler(stack, 'Scaler', tables=[table]{owned})"
            "  # the autopilot mode\n" + fast
        )
    if spec.kind == "autopilot":
        if params.stream_seconds is not None:  # a ProvisionedTable turns its own on
            line += f"    stream=dynamodb.StreamViewType.{STREAM_VIEW},\n"
        priced = (
            "# pre-warming was priced as an hour provisioned at the marks: a ProvisionedTable "
            "with prewarm=PrewarmMethod.PROVISION_THEN_SETTLE pays that; warm throughput's "
            "one-time charge may differ\n"
            if settle
            else ""
        )
        fast = _fast_path_code(params, True)
        return (
            priced
            + _autopilot_code(target, (r_lo, r_hi), (w_lo, w_hi), warm, line, _scaler_name(fast))
            + fast
        )
    raise ValueError(f"code_for: no construct code for {spec.text!r}")


def _windows_code(hours: tuple[bool, ...]) -> str:
    """The ``add_on_demand_window`` calls of declared windows at ``hours`` (24, UTC), every
    day (`hybrid.windows_of`), each starting the switch's minutes before its first hour
    (`hybrid.led`); a comment when there are none."""
    windows = windows_of(hours) if hours else []
    if not windows:
        return "# no hour of the day cost less on-demand on the history: no on-demand window\n"
    lines = [
        "# on-demand in the hours of the day where it cost less on the history the choice\n"
        "# was fitted on, every day (UTC), each switch started early so that the table is\n"
        "# on-demand on the hour; provisioned the rest of the day (docs: On-demand windows)\n"
    ]
    lead = SWITCH_MINUTES  # the switch starts early, so the table is on-demand on the hour
    for n, (first, long) in enumerate(windows, 1):
        hour, minute = divmod((first * 60 - lead) % 1440, 60)
        lines.append(
            f"table.add_on_demand_window('OnDemand{n}', start='{hour:02d}:{minute:02d}', "
            f"duration=Duration.minutes({long * 60 + lead}), week_days=EVERY_DAY)\n"
        )
    return "".join(lines)


def _learned_code(spec: Spec) -> str:
    """The ``learn_on_demand_windows`` call of the hybrid ``spec``: the stack's on-demand switch
    learns each UTC day's on-demand hours from the table's last `HISTORY_DAYS` days, an
    on-demand hour costed as provisioned at the hybrid's target (70 % when it names none)."""
    return (
        "# on-demand in the hours of each day (UTC) where it cost less, learned each day by\n"
        f"# the stack's on-demand switch from the table's last {HISTORY_DAYS} days, each switch\n"
        "# started early so that the table is on-demand on the hour; provisioned the rest of\n"
        "# the day (docs: On-demand windows)\n"
        f"table.learn_on_demand_windows(target_utilization={spec.value or 70})\n"
    )


def _provisioned_table_code(
    target: int,
    read: tuple[int, int],
    write: tuple[int, int],
    warm: dict[str, int] | None,
    line: str,
) -> str:
    """A ProvisionedTable at the ranges and ``target``, each dimension's high-water mark
    ``warm`` when it has one; ``line``: its further props (the table class, the pre-warm
    method) or nothing."""
    marks = {
        d: f", high_water_mark={warm[d]}" if warm and warm[d] else "" for d in ("read", "write")
    }
    return (
        "ProvisionedTable(\n"
        "    stack, 'Table', partition_key=...,\n"
        f"    read=Capacity(min_capacity={read[0]}, max_capacity={read[1]}, "
        f"target_utilization_percent={target}{marks['read']}),\n"
        f"    write=Capacity(min_capacity={write[0]}, max_capacity={write[1]}, "
        f"target_utilization_percent={target}{marks['write']}),\n"
        f"{line}"
        ")\n"
    )


def _autopilot_code(
    target: int,
    read: tuple[int, int],
    write: tuple[int, int],
    warm: dict[str, int] | None,
    line: str,
    name: str = "",
) -> str:
    """The autopilot alone: a provisioned table at the ranges' minimums (pre-warmed to
    ``warm``) and a scaler that overrides its target and ranges; ``line``, the table
    class's line or nothing; ``name``, what the scaler is assigned to (`_scaler_name`)."""
    warmed = (
        f"    warm_throughput=dynamodb.WarmThroughput(read_units_per_second="
        f"{warm['read'] or None}, write_units_per_second={warm['write'] or None}),\n"
        if warm
        else ""
    )
    return (
        "table = dynamodb.Table(\n"
        "    stack, 'Table', partition_key=...,\n"
        "    billing_mode=dynamodb.BillingMode.PROVISIONED,\n"
        f"    read_capacity={read[0]}, write_capacity={write[0]},\n"
        f"{warmed}{line}"
        ")\n"
        f"{name}ThrottleAwareScaler(\n"
        "    stack, 'Scaler', tables=[table], mode='autopilot',\n"
        "    overrides={table.table_name: {\n"
        f"        'target': {target},\n"
        f"        'read': {{'min': {read[0]}, 'max': {read[1]}}},\n"
        f"        'write': {{'min': {write[0]}, 'max': {write[1]}}},\n"
        "    }},\n"
        ")\n"
    )


def _scaler_name(fast_path: str) -> str:
    """What the scaler is assigned to in the code: ``scaler = `` when ``fast_path`` (its
    code) connects the requests to it, else nothing."""
    return "scaler = " if fast_path else ""


def _fast_path_code(params: ModelParams, library: bool) -> str:
    """The fast path's code when the model runs with its signals and the policy is the
    library's (stock target tracking sees no signal: nothing to add): the signals function,
    with the stream reader when the stream is a signal, connected to the scaler (``scaler``,
    `_scaler_name`), which manages the same table (the two are connected without a call)."""
    hook, stream = params.fast_path_seconds is not None, params.stream_seconds is not None
    if not library or not (hook or stream):
        return ""
    words = []
    if hook:
        words.append("# the hook in the processes that use the table (docs: Fast path)\n")
    if stream:
        words.append(
            "# the table's stream as a write signal: no client code; it sees writes only, "
            "reads need the hook (docs: Fast path)\n"
        )
    fast = "FastPath(stream=True)" if stream else "FastPath()"
    return "".join(words) + (
        f"CapacityRequests(stack, 'Requests', tables=[table], fast_path={fast})\n"
    )
