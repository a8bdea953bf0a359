"""How many conversations the list shows, per source, under a query's other filters.

The list, the source picker and the export dialog state totals for the same filters; they
must agree and say their unit. The list counts *conversations* (a compression chain once, at
its root; delegate runs only when shown; rewound and hidden rows never), so the picker's
numbers are counted by the same WHERE clause as the list's total, grouped by source: the
source is a column of the row that WHERE tests, so each group is exactly what the list would
count with that source chosen, and the list's own total is a sum of groups -- one scan gives
both, no second count to drift from the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .query import ListQuery

if TYPE_CHECKING:
    from .engine import Lister


@dataclass(frozen=True)
class SourceCounts:
    """Conversations per source under a query's filters but its source (``by_source``), and
    the total the list shows for the query itself (its source or its excluded sources
    applied)."""

    by_source: dict[str, int]
    total: int

    @classmethod
    def of(cls, query: ListQuery, by_source: dict[str, int]) -> "SourceCounts":
        if query.source:
            total = by_source.get(query.source, 0)
        else:
            left_out = set(query.exclude_sources)
            total = sum(n for source, n in by_source.items() if source not in left_out)
        return cls(by_source, total)


def conversations_by_source(lister: "Lister", query: ListQuery) -> SourceCounts:
    """One grouped scan of ``sessions`` with the list's WHERE clause, its source filters
    lifted. (A NULL source, which a foreign writer can store, is the empty name, as the list
    shows it.)"""
    where, params = lister.filters(query.with_(source=None, exclude_sources=(), include_children=False))

    def read(conn) -> dict[str, int]:
        counts: dict[str, int] = {}
        for source, n in conn.execute(f"SELECT s.source, COUNT(*) FROM sessions s {where} GROUP BY s.source", params):
            name = "" if source is None else str(source)
            counts[name] = counts.get(name, 0) + int(n)
        return counts

    return SourceCounts.of(query, lister.store.read(read))
