"""Runs in: on-demand switch Lambda.

One table's switch, at a window's start (`Switcher.start`), at its end (`Switcher.end`) and
on the function's regular check (`Switcher.check`, which also ends a window whose end was
missed and mends what a deploy changed underneath). Each step writes the table's switch
state before it acts, so a step cut short is finished by the next check; every refusal and
failure is a `SwitchError` the handler counts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..aws import switch_calls as calls
from ..aws import table_calls
from ..aws.discovery import table_resource_ids
from ..aws.hold_bounds import WIDEST
from ..aws.store import HoldStore
from ..core.errors import SwitchError
from ..core.on_demand_hours import HOUR_S
from ..core.switches import MAX_SWITCHES, recent, switch_allowed
from ..events import log_event
from .billing_plan import (
    ALL_SUSPENDED,
    ON_DEMAND,
    PROVISIONED,
    SwitchState,
    Target,
    back_levels,
    billing_of,
    levels_of,
    on_demand_request,
    parse_state,
    provisioned_request,
    with_last_switch,
)
from .held import held_levels, hold_minimums
from .learning import (
    DEFERRED,
    LEAD_S,
    LEARN_RESERVE_S,
    LEARNED,
    SKIPPED,
    Learning,
    acting_for,
    learn,
    run_end,
    served_levels,
)

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class Window:
    """What a window's start asks: its name, how long, the on-demand maximums, and (a learned
    window) the levels it returns at (`SwitchState.back`)."""

    name: str
    seconds: int
    max_read: int
    max_write: int
    back: Mapping[str, int] = field(default_factory=dict)


@dataclass
class Switcher:
    dynamodb: DynamoDBClient
    aas: ApplicationAutoScalingClient
    store: str
    clock: Callable[[], float]
    hold_stores: Mapping[str, str] = field(default_factory=dict)
    """Each table's hold store (that of the ``CapacityRequests`` serving it), if any."""
    cloudwatch: CloudWatchClient | None = None
    """Where the tables' metrics are read: what a table served at its window's end (`end`),
    and a learned table's past days (`learned`)."""
    remaining: Callable[[], float] | None = None
    """The seconds left to the invocation (None: no limit): a learned table's day is learned
    only with `LEARN_RESERVE_S` left (`learned`)."""

    def _holds(self, table: str) -> HoldStore | None:
        name = self.hold_stores.get(table)
        return None if name is None else HoldStore(self.dynamodb, name, WIDEST, self.clock)

    def _restore(
        self,
        table: str,
        state: SwitchState,
        description: dict[str, Any],
        held: Mapping[str, int] | None = None,
    ) -> list[Target]:
        """The targets that still exist registered again as they were before the window,
        then each held one's minimum raised to its holds' level (``held``, read now when
        not given: `held.hold_minimums`). Returns the targets deregistered since the window
        started: not registered again (see `end`)."""
        live = {(t.resource_id, t.dimension) for t in self._targets(table, description)}
        present = [t for t in state.targets if (t.resource_id, t.dimension) in live]
        self._register(present, suspend=False)
        holds = self._holds(table)
        if holds is not None:
            held = held_levels(holds, table) if held is None else held
            hold_minimums(holds, self.aas, table, present, held)
        return [t for t in state.targets if t not in present]

    def _ended(self, table: str, state: SwitchState, version: int, gone: list[Target]) -> None:
        """The window's state dropped; a target deregistered during the window is a
        `SwitchError` (counted ``SwitchFailed``, alarmed) once the rest is done: the
        switch may only register targets tagged with the table's name, which a new target
        is not, so its dimension stays without auto scaling until a deploy registers it."""
        self._save(table, state.provisioned(), version)
        if gone:
            names = ", ".join(f"{t.resource_id} {t.dimension}" for t in gone)
            raise SwitchError(
                f"table {table}: scalable target(s) {names} were deregistered during window "
                f"{state.window} and are not registered again (the switch may change only "
                "targets tagged with the table's name): the table is provisioned, and those "
                "dimensions have no auto scaling until a deploy registers their targets"
            )

    def _held(self, table: str) -> dict[str, int]:
        holds = self._holds(table)
        return {} if holds is None else held_levels(holds, table)

    def _state(self, table: str) -> tuple[SwitchState, int]:
        text, version = calls.read_state(self.dynamodb, self.store, table)
        try:
            return parse_state(text), version
        except ValueError as exc:
            raise SwitchError(f"table {table}: its switch state is unreadable ({exc})") from None

    def _save(self, table: str, state: SwitchState, version: int) -> int:
        calls.write_state(self.dynamodb, self.store, table, state.as_text(), version)
        return version + 1

    def _targets(self, table: str, description: dict[str, Any]) -> list[Target]:
        ids = table_resource_ids(table, description)
        return [Target.of(t) for t in calls.read_targets(self.aas, ids)]

    def _register(self, targets: tuple[Target, ...] | list[Target], suspend: bool) -> None:
        for t in targets:
            state = ALL_SUSPENDED if suspend else t.suspended
            calls.register(self.aas, t.resource_id, t.dimension, t.bounds, state)

    def start(self, table: str, window: Window) -> str:
        """Switch ``table`` to on-demand for ``window``: refused when it is on-demand
        already by other hands, not ACTIVE, or out of switches for the rolling day."""
        now = self.clock()
        state, version = self._state(table)
        description = table_calls.describe(self.dynamodb, table)
        if billing_of(description) == ON_DEMAND:
            if state.billing == ON_DEMAND:
                return "already-on-demand"  # a start run twice
            raise SwitchError(f"table {table} is on-demand, not by a window", "SwitchRefused")
        if description.get("TableStatus") != "ACTIVE":
            raise SwitchError(f"table {table} is {description.get('TableStatus')}, not ACTIVE")
        history = with_last_switch(state.switches, description)
        if not switch_allowed(history, now):
            raise SwitchError(
                f"table {table}: {len(recent(history, now))} switches to on-demand in the last "
                f"24 hours; DynamoDB allows {MAX_SWITCHES}: window {window.name} left provisioned",
                "SwitchRefused",
            )
        before = state
        targets = self._targets(table, description)
        state = replace(
            state,
            billing=ON_DEMAND,
            switches=(*(int(t) for t in recent(history, now)), int(now)),
            window=window.name,
            until=now + window.seconds,
            levels=levels_of(table, description),
            targets=tuple(targets),
            back=dict(window.back),
        )
        version = self._save(table, state, version)
        try:
            self._register(targets, suspend=True)
            request = on_demand_request(table, description, window.max_read, window.max_write)
            table_calls.update(self.dynamodb, request)
        except Exception:
            self._register(targets, suspend=False)
            self._save(table, before, version)
            raise
        log_event("switched-to-on-demand", table=table, window=window.name, until=state.until)
        return "switched-to-on-demand"

    def end(self, table: str) -> str:
        """Switch ``table`` back to provisioned (no lower than before its window, nor than
        its active capacity holds) and restore its targets exactly, each held one's minimum
        then raised to its holds; nothing when the switch left it provisioned. A target
        deregistered during the window is not registered again (`_ended`)."""
        state, version = self._state(table)
        if state.billing != ON_DEMAND:
            return "not-on-demand"
        description = table_calls.describe(self.dynamodb, table)
        if billing_of(description) == PROVISIONED:
            return self._switched_underneath(table, state, version, description)
        if description.get("TableStatus") != "ACTIVE":
            raise SwitchError(f"table {table} is {description.get('TableStatus')}, not ACTIVE")
        held = self._held(table)
        served = self._served(table, state, description)
        levels = back_levels(table, state, description, held, served)
        table_calls.update(self.dynamodb, provisioned_request(table, levels))
        gone = self._restore(table, state, description, held)
        log_event("switched-to-provisioned", table=table, window=state.window, levels=levels)
        self._ended(table, state, version, gone)
        return "switched-to-provisioned"

    def _served(
        self, table: str, state: SwitchState, description: dict[str, Any]
    ) -> dict[str, int]:
        """What the table served at its window's end (`learning.served_levels`)."""
        if self.cloudwatch is None:
            raise SwitchError(f"table {table}: no CloudWatch client to read what it served")
        return served_levels(self.cloudwatch, table, description, self.clock())

    def _switched_underneath(
        self, table: str, state: SwitchState, version: int, description: dict[str, Any]
    ) -> str:
        """The table is provisioned again though its window switched it to on-demand (a
        deploy of its template, or other hands): its targets restored (and its holds'
        minimums), so it is never left provisioned without its auto scaling."""
        gone = self._restore(table, state, description)
        log_event(
            "switched-back-underneath",
            level=logging.WARNING,
            table=table,
            window=state.window,
            consequence="its scalable targets are restored; the window ends early",
        )
        self._ended(table, state, version, gone)
        return "switched-back-underneath"

    def check(self, table: str) -> str:
        """The regular check: a window past its end is ended; a table provisioned again
        underneath is given its targets back; a target a deploy resumed mid-window is
        suspended again."""
        state, version = self._state(table)
        if state.billing != ON_DEMAND:
            return "not-on-demand"
        if self.clock() >= state.until:
            return self.end(table)
        description = table_calls.describe(self.dynamodb, table)
        if billing_of(description) == PROVISIONED:
            return self._switched_underneath(table, state, version, description)
        live = self._targets(table, description)
        resumed = [t for t in live if not all(t.suspended.values())]
        self._register(resumed, suspend=True)
        # a deploy (or the owner) registered targets mid-window: their bounds now are the
        # ones restored at the end (the switch changes none), a new one is restored too
        now = {(t.resource_id, t.dimension): t for t in live}
        kept = tuple(
            replace(t, bounds=now[key].bounds) if (key := (t.resource_id, t.dimension)) in now
            else t
            for t in state.targets
        )  # fmt: skip
        known = {(t.resource_id, t.dimension) for t in state.targets}
        added = tuple(t for t in resumed if (t.resource_id, t.dimension) not in known)
        if kept != state.targets or added:
            self._save(table, replace(state, targets=kept + added), version)
        return "on-demand"

    def learned(self, learning: Learning) -> str:
        """A learned table's hourly run (`hybrid.learning`): the plan of the day it acts for
        learned when the state has none (a window past its end is ended even when that
        fails); then, for the hour it acts for, a window started when planned (skipped, not
        refused, when DynamoDB's rolling limit would be passed: the whole window, as the
        simulator drops it), a learned window whose run goes on into it extended, one past its
        end ended."""
        table, now = learning.table, self.clock()
        day, hour = acting_for(now)
        state, version = self._state(table)
        if state.plan_day != day:
            if self.remaining is not None and self.remaining() < LEARN_RESERVE_S:
                # no time left to learn: no window starts, a window past its end still ends
                if state.billing == ON_DEMAND:
                    self._learned_on_demand(table, state, version, False, hour)
                log_event("learning-deferred", table=table, day=day)
                return DEFERRED
            state, version = self._learn(learning, state, version, day)
        planned = len(state.plan) == 24 and state.plan[hour]
        if state.billing == ON_DEMAND:
            return self._learned_on_demand(table, state, version, planned, hour)
        if not planned:
            return "provisioned"
        if now < state.skipped_until:
            return SKIPPED
        end = run_end(state.plan, day, hour)
        description = table_calls.describe(self.dynamodb, table)
        history = with_last_switch(state.switches, description)
        if billing_of(description) == PROVISIONED and not switch_allowed(history, now):
            log_event("learned-window-skipped", table=table, hour=hour, switches=len(history))
            self._save(table, replace(state, skipped_until=end), version)
            return SKIPPED
        back = state.returns.get(int(end // HOUR_S) % 24, {})
        window = Window(LEARNED, int(end - now), learning.max_read, learning.max_write, back)
        return self.start(table, window)

    def _learn(
        self, learning: Learning, state: SwitchState, version: int, day: int
    ) -> tuple[SwitchState, int]:
        """The table's state with ``day``'s plan learned and saved. When learning fails, a
        learned window past its end is ended first (the failure raised after)."""
        table = learning.table
        try:
            if self.cloudwatch is None:
                raise SwitchError(f"table {table}: no CloudWatch client to learn its hours")
            description = table_calls.describe(self.dynamodb, table)
            plan = learn(self.cloudwatch, table, description, learning, day)
        except Exception:
            due = state.billing == ON_DEMAND and state.window == LEARNED
            if due and self.clock() >= state.until:
                self.end(table)
            raise
        state = replace(state, plan_day=day, plan=plan.hours, returns=plan.returns)
        version = self._save(table, state, version)
        log_event(
            "learned-on-demand-hours",
            table=table,
            day=day,
            hours=_on(plan.hours),
            returns=plan.returns,
        )
        return state, version

    def _learned_on_demand(
        self, table: str, state: SwitchState, version: int, planned: bool, hour: int
    ) -> str:
        """A learned table on-demand: its window extended when its plan runs on through the
        hour acted for, else ended once past its end (a declared window's left alone)."""
        now = self.clock()
        if state.window != LEARNED:
            return "on-demand"
        if planned and state.until - now <= LEAD_S:
            day = acting_for(now)[0]
            until = max(state.until, run_end(state.plan, day, hour))
            back = state.returns.get(int(until // HOUR_S) % 24, {})
            self._save(table, replace(state, until=until, back=dict(back)), version)
            return "on-demand-extended"
        if now >= state.until:
            return self.end(table)
        return "on-demand"


def _on(hours: tuple[bool, ...]) -> list[int]:
    return [h for h, on in enumerate(hours) if on]
