"""Conversations chosen by a :class:`~hermes_state.listing.query.ListQuery`, for commands that
act on all of them at once (export, archive, pin, prune and delete by filter).

A command by filter acts on exactly what ``hermes sessions list`` with the same filters
would list (the same WHERE clause, :meth:`Lister.filters`), each conversation whole: the
segments of its compression chain (shown as one row) and its delegate runs, as
:func:`~hermes_state.conversation.conversation_members` has them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..deletion import busy_sessions, delete_session_rows
from ..sql_ids import in_chunks
from .query import ListQuery

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Lister


@dataclass(frozen=True)
class Chosen:
    """One conversation a filter chose: its listed row's id, source and title, whether it
    is pinned, and every session of it (the listed row first)."""

    id: str
    source: str | None
    title: str | None
    pinned: bool
    sessions: tuple[str, ...]
    #: Every session of it has ended (a prune takes only those).
    ended: bool
    messages: int


def choose(lister: "Lister", query: ListQuery) -> list[Chosen]:
    """The conversations ``query`` lists, newest start first, each with its members (one read
    snapshot)."""
    store = lister.store
    where, params = lister.filters(query.with_(include_children=False))
    pins = lister.pinned_ids_known() or frozenset()
    listed = store.rules.listed("c")

    def read(conn: sqlite3.Connection) -> list[Chosen]:
        cursor = conn.cursor()
        cursor.row_factory = None
        title = "s.title" if store.has_session_column("title") else "NULL"
        rows = cursor.execute(
            f"SELECT s.id, s.source, {title} FROM sessions s {where} ORDER BY s.started_at DESC, s.id",
            params,
        ).fetchall()
        # Each conversation's members, as the browser's export of a marked one takes them
        # (conversation_members): down from the listed row to every child not listed on its
        # own -- the compression chain and the delegate runs, not branches or resets. For a
        # statement's worth of conversations at a time (not one walk per conversation).
        members: dict[str, list[tuple[str, int, int]]] = {}
        for chunk, marks in in_chunks([row[0] for row in rows]):
            for root, sid, open_, messages in cursor.execute(
                "WITH RECURSIVE down(root, id) AS ("
                f" SELECT id, id FROM sessions WHERE id IN ({marks})"
                " UNION SELECT down.root, c.id FROM down JOIN sessions c ON c.parent_session_id = down.id"
                f" WHERE NOT {listed})"
                " SELECT down.root, down.id, m.ended_at IS NULL, COALESCE(m.message_count, 0)"
                " FROM down JOIN sessions m ON m.id = down.id ORDER BY down.root, down.id != down.root, m.started_at, m.id",
                chunk,
            ):
                members.setdefault(root, []).append((sid, int(open_ or 0), int(messages or 0)))
        out = []
        for sid, source, name in rows:
            found = members.get(sid) or [(sid, 0, 0)]
            ids = tuple(member for member, _open, _count in found)
            out.append(Chosen(
                sid, source, name, any(member in pins for member in ids), ids,
                not any(open_ for _sid, open_, _count in found), sum(count for *_rest, count in found),
            ))
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
