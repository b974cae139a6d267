"""What every benchmark of a policy prints beside it: the cheapest stock target that
refuses no more than the policy, or, where none does, the stock target that refuses least;
the settings that beat the policy on both counts; and the Markdown table such a comparison
is printed in, ready for the docs.

Not a benchmark of its own: the benchmarks that compare a policy with every stock target
(``autopilot_goals``, ``padding``, ``fast_path``, ``ensemble_traces``, ``hybrid``) ask it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ddb_capacity_tools.simulator.candidates import STOCK


def cheapest_within(
    figures: Mapping[str, tuple[float, float]], ceiling: float, names: Sequence[str] = STOCK
) -> tuple[str, bool]:
    """Of ``names`` (``figures[name]``: its refused units and its cost), the cheapest
    refusing no more than ``ceiling`` units (and True), or, where none does, the one refusing
    least, the cheaper of two that refuse as little (and False)."""
    within = [n for n in names if figures[n][0] <= ceiling]
    if within:
        return min(within, key=lambda n: figures[n][1]), True
    return min(names, key=lambda n: figures[n]), False


def beaten_by(
    figures: Mapping[str, tuple[float, float]], refused: float, cost: float, names: Iterable[str]
) -> list[str]:
    """Of ``names`` (``figures[name]``: its refused units and its cost), those refusing no
    more than ``refused`` units at less than ``cost``, in the order of ``names``."""
    return [n for n in names if figures[n][0] <= refused and figures[n][1] < cost]


def print_table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """A Markdown table: ``columns`` as its header, then a line a row of cells."""
    print("| " + " | ".join(columns) + " |")
    print("|" + " --- |" * len(columns))
    for cells in rows:
        print("| " + " | ".join(cells) + " |")
