"""Read state and lifecycle status of listed conversations: the list's filters, the rows'
statuses and the marks of search's conversations -- one rule each, in SQL and in Python
(:mod:`hermes_state.unread`, :mod:`hermes_state.lifecycle`), so a filter, the count under
it and the glyphs drawn always agree.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from ..lifecycle import EMPTY, status_clause, status_of_sql, statuses, tip_sql
from ..sql_ids import in_chunks
from ..tips import conversation_tips
from ..unread import is_unread, tracks_unread, unread_clause

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store
    from .query import ListQuery


def tip_last_active_sql(store: "Store", alias: str = "s") -> str:
    """SQL of the last activity the list shows for the listed row ``alias``: its own, or
    for a compression root its live tip's (as the list projects it)."""
    rules = store.rules
    return (
        f"(CASE WHEN {alias}.end_reason = 'compression' THEN (SELECT {rules.last_active_sql('t')}"
        f" FROM sessions t WHERE t.id = {tip_sql(alias)}) ELSE {rules.last_active_sql(alias)} END)"
    )


def mark_filters(store: "Store", query: "ListQuery", alias: str = "s") -> tuple[list[str], list[Any]]:
    """The WHERE terms of ``query``'s unread-only and status filters (none when unset)."""
    clauses: list[str] = []
    params: list[Any] = []
    if query.unread_only:
        clauses.append(unread_clause(store, tip_last_active_sql(store, alias), alias))
    if query.statuses:
        clause, names = status_clause(store, query.statuses, alias)
        clauses.append(clause)
        params.extend(names)
    return clauses, params


def with_lifecycle(store: "Store", rows: list[dict]) -> list[dict]:
    """Listing rows (already shown at their tips) with ``lifecycle`` set: one statement for
    the page. The rows are changed in place."""
    if rows:
        found = statuses(store, [row["id"] for row in rows])
        for row in rows:
            row["lifecycle"] = found.get(row["id"], EMPTY)
    return rows


@dataclass(frozen=True)
class ConversationMarks:
    """What a search group shows of its conversation beside its name."""

    unread: bool = False
    lifecycle: str | None = None
    #: The conversation's last activity (its tip's, as the list shows it) and its live tip
    #: (the id the list shows it under), read by the same statement.
    last_active: float | None = None
    tip: str | None = None


def conversation_marks(store: "Store", root_ids: Iterable[str]) -> dict[str, ConversationMarks]:
    """``{root: marks}`` of these conversations (roots as :func:`conversation_roots` names
    them), by the same SQL the list filters with; ids with no session are left out."""
    ids = list(dict.fromkeys(root_ids))
    if not ids:
        return {}
    # Kept until the store changes, as the tips they are read at are: search as you type
    # marks mostly the same conversations key after key (a statement of two seeks in the
    # messages per conversation, at every key on every store). None: no such session.
    kept: dict[str, ConversationMarks | None] = store.until_changed("conversation-marks")
    wanted = [sid for sid in ids if sid not in kept]
    if wanted:
        kept.update(_read_marks(store, wanted))
    return {sid: marks for sid in ids if (marks := kept.get(sid)) is not None}


def _read_marks(store: "Store", ids: list[str]) -> dict[str, ConversationMarks | None]:
    """:func:`conversation_marks` of ``ids`` read from the store (None: no such session)."""
    watermark = "s.last_read_at" if tracks_unread(store) else "NULL"
    # Each conversation's tip walked once and kept until the store changes (its last activity
    # and its status each walked the chain again: 0.27 s a search on a chain of 10,000
    # segments, 2.8 s at 200,000).
    tips = conversation_tips(store, ids)
    pairs = [(sid, tips[sid]) for sid in ids if sid in tips]
    found: dict[str, ConversationMarks | None] = dict.fromkeys(ids)

    def run(conn: sqlite3.Connection) -> None:
        cursor = conn.cursor()
        cursor.row_factory = None
        # Two parameters a pair: 400 pairs bind 800, under SQLite's 999 (sql_ids).
        for chunk, values in in_chunks(pairs, 400, mark="(?, ?)"):
            sql = (
                f"WITH pairs(root, tip) AS (VALUES {values})"
                f" SELECT s.id, {watermark}, {store.rules.last_active_sql('t')}, s.started_at,"
                f" {status_of_sql(store, 't.id')} FROM pairs JOIN sessions s ON s.id = pairs.root"
                " JOIN sessions t ON t.id = pairs.tip"
            )
            for sid, read_at, active, started, status in cursor.execute(sql, [v for pair in chunk for v in pair]):
                found[sid] = ConversationMarks(is_unread(read_at, active, started), status, active, tips[sid])

    store.read(run)
    return found


def keeps(marks: ConversationMarks | None, query: "ListQuery") -> bool:
    """A conversation with these marks passes ``query``'s unread-only and status filters."""
    if marks is None:
        return not (query.unread_only or query.statuses)
    if query.unread_only and not marks.unread:
        return False
    return not query.statuses or marks.lifecycle in query.statuses
