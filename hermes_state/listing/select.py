"""Conversations chosen by a :class:`~hermes_state.listing.query.ListQuery`, for commands that
act on all of them at once (export, archive, pin, prune and delete by filter).

A command by filter acts on exactly what ``hermes sessions list`` with the same filters
would list (the same WHERE clause, :meth:`Lister.filters`), each conversation whole: its
compression lineage (the segments the list shows as one row).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..deletion import busy_sessions, compression_lineage, delete_session_rows
from .query import ListQuery

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Lister


@dataclass(frozen=True)
class Chosen:
    """One conversation a filter chose: its listed row's id, source and title, whether it
    is pinned, and every session of its compression lineage (the listed row first)."""

    id: str
    source: str | None
    title: str | None
    pinned: bool
    sessions: tuple[str, ...]
    #: Every session of the lineage has ended (a prune takes only those).
    ended: bool
    messages: int


def choose(lister: "Lister", query: ListQuery) -> list[Chosen]:
    """The conversations ``query`` lists, newest start first, with their lineages (one read
    snapshot)."""
    store = lister.store
    where, params = lister.filters(query.with_(include_children=False))
    pins = lister.pinned_ids_known() or frozenset()

    def read(conn: sqlite3.Connection) -> list[Chosen]:
        cursor = conn.cursor()
        cursor.row_factory = None
        title = "s.title" if store.has_session_column("title") else "NULL"
        rows = cursor.execute(
            f"SELECT s.id, s.source, {title} FROM sessions s {where} ORDER BY s.started_at DESC, s.id",
            params,
        ).fetchall()
        out = []
        for sid, source, name in rows:
            lineage = [sid] + [other for other in compression_lineage(conn, sid) if other != sid]
            marks = ",".join("?" for _ in lineage)
            open_, messages = cursor.execute(
                f"SELECT SUM(ended_at IS NULL), COALESCE(SUM(message_count), 0) FROM sessions WHERE id IN ({marks})",
                lineage,
            ).fetchone()
            pinned = any(member in pins for member in lineage)
            out.append(Chosen(sid, source, name, pinned, tuple(lineage), not open_, int(messages or 0)))
        return out

    return store.read_snapshot(lambda: store.read(read))


def delete_chosen(store, session_ids: list[str]) -> list[str]:
    """Delete these sessions (messages, dependent rows; children orphaned) in one write
    transaction, leaving out those an agent holds right now. Returns the ids deleted."""

    def do(conn: sqlite3.Connection) -> list[str]:
        held = {sid for sid, _what, _until in busy_sessions(conn, list(session_ids))}
        ids = [sid for sid in session_ids if sid not in held]
        delete_session_rows(conn, ids)
        return ids

    return store.write(do)
