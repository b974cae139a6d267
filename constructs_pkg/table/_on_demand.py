"""Runs in: CDK app (synth time).

A table's on-demand windows, carried out by the stack's on-demand switch
(`constructs_pkg.hybrid`), which is made with the first window only: declared
(``add_on_demand_window``), each checked as it is added with the table's other windows (never
overlapping, never more than DynamoDB's 4 switches to on-demand in any rolling 24 hours) and
previewed; or learned (``learn_on_demand_windows``), the hours of each day chosen by the switch
from the table's own metrics (`ddb_capacity_runtime.hybrid.learning`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aws_cdk import Duration, TimeZone
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from ddb_capacity_runtime.core.errors import CapacityConfigError, shown
from ddb_capacity_runtime.core.validators import is_whole
from ddb_capacity_runtime.schedule.entries import HORIZON, WEEKDAYS
from ddb_capacity_runtime.schedule.expressions import zone_name
from ddb_capacity_runtime.schedule.on_demand_windows import (
    OnDemandWindow,
    Switch,
    check_maximums,
    check_windows,
    switches,
)

from ..common._function_options import FunctionOptions
from ..common._props import duration_prop, known_at_synth
from ._parts import as_timedelta, check_week_days

if TYPE_CHECKING:
    from ..hybrid._switch import LearnedWindows

SWITCHED_AT_RUN_TIME = "the window's schedules and on-demand maximums are written at synth"


class OnDemandWindows:
    """The on-demand windows of one table (``table``, managed by ``owner``, named
    ``where`` in messages): its maximums default to ``defaults`` (the table's read and
    write maximum capacity), bounded by ``quota``."""

    def __init__(
        self,
        owner: Construct,
        table: dynamodb.ITable,
        where: str,
        quota: int,
        defaults: tuple[int, int],
    ) -> None:
        self._owner, self._table, self._where = owner, table, where
        self._quota, self._defaults = quota, defaults
        self.windows: list[OnDemandWindow] = []
        self.learned: LearnedWindows | None = None
        self._hold_store: dynamodb.ITable | None = None

    def read_holds(self, store: dynamodb.ITable) -> None:
        """The table's capacity holds are in ``store``: the stack's switch reads them at
        each window's end (told now, or with the first window)."""
        self._hold_store = store
        if self.windows or self.learned:
            self._tell_switch()

    def _maximums(self, named: str, reads: int | None, writes: int | None) -> tuple[int, int]:
        """The on-demand maximums (the table's maximum capacity where not given), known at
        synth."""
        reads = self._defaults[0] if reads is None else reads
        writes = self._defaults[1] if writes is None else writes
        for field, value in (
            ("max_read_request_units", reads),
            ("max_write_request_units", writes),
        ):
            known_at_synth(named, field, value, SWITCHED_AT_RUN_TIME)
        return reads, writes

    def learn(
        self,
        target_utilization: int,
        max_read_request_units: int | None,
        max_write_request_units: int | None,
        function_options: Mapping[str, FunctionOptions] | None,
    ) -> LearnedWindows:
        """Learned windows for the table: checked, then given to the stack's switch."""
        named = f"{self._where} learned on-demand windows"
        if self.windows or self.learned is not None:
            had = "learned windows already" if self.learned else "declared on-demand windows"
            raise CapacityConfigError(
                f"{named}: the table has {had}; a table's on-demand windows are either declared "
                "(add_on_demand_window) or learned (learn_on_demand_windows, once)"
            )
        known_at_synth(named, "target_utilization", target_utilization, SWITCHED_AT_RUN_TIME)
        if not is_whole(target_utilization, 20, 90):
            raise CapacityConfigError(
                f"{named}: target_utilization must be a whole percent from 20 to 90 (the "
                "target an on-demand hour is costed at as provisioned); got "
                f"{shown(target_utilization)}"
            )
        reads, writes = self._maximums(named, max_read_request_units, max_write_request_units)
        check_maximums(named, reads, writes, self._quota)
        from ..hybrid._switch import LearnedWindows, on_demand_switch  # only with windows

        switch = on_demand_switch(self._owner, named, function_options)
        self.learned = LearnedWindows(target_utilization, reads, writes)
        switch.add_learned(self._table, self.learned)
        if self._hold_store is not None:
            self._tell_switch()
        return self.learned

    def _tell_switch(self) -> None:
        from ..hybrid._switch import on_demand_switch  # only with a window: its function

        assert self._hold_store is not None
        on_demand_switch(self._owner).read_holds(self._table, self._hold_store)

    def add(
        self,
        id: str,
        *,
        start: str,
        duration: Duration,
        time_zone: str | TimeZone | None,
        week_days: Sequence[str] | None,
        max_read_request_units: int | None,
        max_write_request_units: int | None,
        function_options: Mapping[str, FunctionOptions] | None = None,
    ) -> OnDemandWindow:
        """Check the window alone and with the others, then render its schedules."""
        named = f"{self._where} on-demand window {id!r}"
        if self.learned is not None:
            raise CapacityConfigError(
                f"{named}: the table's on-demand windows are learned (learn_on_demand_windows); "
                "a table's windows are either declared or learned"
            )
        check_week_days(named, week_days)
        duration_prop(named, "duration", duration, Duration.seconds(0))
        reads, writes = self._maximums(named, max_read_request_units, max_write_request_units)
        window = OnDemandWindow(
            name=id,
            start=start,
            duration=as_timedelta(duration),
            week_days=tuple(WEEKDAYS if week_days is None else week_days),
            time_zone=zone_name(time_zone or "UTC"),  # type: ignore[arg-type]
            max_read_request_units=reads,
            max_write_request_units=writes,
        )
        window.check(self._where, self._quota)
        if any(w.name == id for w in self.windows):
            raise CapacityConfigError(
                f"{named}: id is already used by another on-demand window of this table; "
                "ids must be unique per table"
            )
        check_windows(self._where, [*self.windows, window], _horizon_start())
        self._render(window, named, function_options)
        self.windows.append(window)
        if len(self.windows) == 1 and self._hold_store is not None:
            self._tell_switch()
        return window

    def _render(
        self, window: OnDemandWindow, named: str, options: Mapping[str, FunctionOptions] | None
    ) -> None:
        from ..hybrid._switch import on_demand_switch  # only with a window: its function

        switch = on_demand_switch(self._owner, named, options)  # checked before it is added
        scope = Construct(self._owner, f"OnDemandWindow{window.name}")
        switch.add_window(scope, self._table, window)

    def preview(self, count: int, start: datetime) -> list[Switch]:
        """The next ``count`` switches of the table's windows from ``start``."""
        if not is_whole(count, 1):
            raise CapacityConfigError(
                f"{self._where}: on_demand_preview: count must be a whole number of 1 or more "
                f"(the switches to list); got {shown(count)}"
            )
        return [s for s in switches(self.windows, start, start + HORIZON) if s.when >= start][
            :count
        ]


def _horizon_start() -> datetime:
    return datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
