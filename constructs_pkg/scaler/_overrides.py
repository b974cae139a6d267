"""Runs in: CDK app (synth time).

A scaler's per-table entries (``SCALER_OVERRIDES``): the ``overrides`` given, each checked
as the Lambda checks it whether its key is a table's name known at synth or its
``table_name`` known at deploy time only, and the ranges of the tables whose own ranges are
the scaler's bounds (a ``TableCapacity``'s, a global table replica's). An override may not
name one of those: their scalable targets hold that range and target, and a tick reads them
there, so an override would change nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb

from ddb_capacity_runtime.core.errors import CapacityConfigError

from ..common._props import is_token
from ..table._parts import literal_name, table_shown
from ._scaler_props import checked_override

DEPLOY_TIME = "(named at deploy time)"
"""How messages name a table that an override names by a token no managed table has."""


def names_of(table: dynamodb.ITable) -> list[str]:
    """What ``overrides`` may name ``table`` by: its ``table_name`` (a token for a table made
    in the app), and the name given to it where that is known at synth."""
    literal = literal_name(table)
    return [table.table_name] + ([literal] if literal and literal != table.table_name else [])


class ScalerOverrides:
    """The scaler's per-table entries, as its function's ``SCALER_OVERRIDES`` has them."""

    def __init__(self, where: str, table_quota: int) -> None:
        self._where, self._quota = where, table_quota
        self.entries: dict[str, Any] = {}
        """each table's entry, by its name as the template writes it (a token where it is
        known at deploy time only)"""
        self._given: dict[str, Any] = {}
        self._bounded: dict[str, tuple[str, str]] = {}
        """each name of a table whose own ranges are its entry: the table as messages name
        it, and where its ranges are set"""

    def bounds(
        self,
        table: dynamodb.ITable,
        bounds: Mapping[str, Mapping[str, float]],
        source: str,
        path: str | None = None,
    ) -> None:
        """``table``'s own ranges (``bounds``, per dimension: ``min``, ``max``, ``target``)
        as its entry; ``source`` says where they are set, ``path`` names the construct that
        sets them (default: the table's). Refused where ``overrides`` names the table."""
        names = names_of(table)
        self._bounded.update(dict.fromkeys(names, (table_shown(table, path), source)))
        for name in names:
            if name in self._given:
                raise self._refused(name)
        self.entries[table.table_name] = {d: dict(b) for d, b in bounds.items()}

    def configure(
        self, overrides: Mapping[str, Mapping[str, Any]], tables: Sequence[dynamodb.ITable]
    ) -> None:
        """The ``overrides`` given, each checked (its keys, its values, min not above max)
        against the scaler's defaults, the table named by the table's path where its key is
        a token; one naming a table whose own ranges are its bounds is refused. ``tables``:
        the tables managed so far."""
        named = {n: t for t in tables for n in names_of(t)}
        for name, override in overrides.items():
            if name in self._bounded:
                raise self._refused(name)
            table = named.get(name)
            shown = table_shown(table) if table else DEPLOY_TIME
            self.entries[name] = checked_override(
                self._where, shown if is_token(name) else name, override, self._quota
            )
        self._given = dict(overrides)

    def _refused(self, name: str) -> CapacityConfigError:
        shown, source = self._bounded[name]
        return CapacityConfigError(
            f"{self._where}: overrides name table {shown}, whose range and target the "
            f"scaler takes from {source}: the table's scalable targets hold them and a tick "
            f"reads them there, so an override would change nothing; set them in {source} "
            "(overrides are for tables without ranges of their own: imported by name, a "
            "plain Table, found by tag)"
        )

    def problems(self, tables: Sequence[dynamodb.ITable], tag_key: str | None) -> list[str]:
        """What the whole app tells: an override naming a managed table twice (by its name
        and by its ``table_name``), and, without tag discovery, one naming by its name a
        table the scaler does not manage."""
        errors = []
        for table in tables:
            keys = [n for n in names_of(table) if n in self._given]
            if len(keys) > 1:
                errors.append(
                    f"{self._where}: overrides name table {table_shown(table)} twice, by its "
                    "name and by its table_name: give its override once"
                )
        if not tag_key:
            names = {n for t in tables for n in names_of(t)}
            for name in sorted((n for n in self._given if not is_token(n)), key=str):
                if name not in names:
                    errors.append(
                        f"{self._where}: overrides name table {name!r}, which the scaler does "
                        f"not manage; add the table, or set tag_key if it is found by tag"
                    )
        return errors
