"""Which conversation a session is part of: the one answer the list, search, counts, the
detail pane, lineage, export scopes and stats all use.

A **conversation** is what the human list shows as one row (UC-3):

* a compression chain is one conversation: a session that continues another after a
  compression belongs to the conversation of the session it continues;
* a branch and a reset child start conversations of their own (as a root does, and an orphan
  whose parent row is gone);
* a delegate (sub-agent) run belongs to the conversation of the session that started it.

A conversation is named by its **root**: the session of the chain that is listed on its own
(:meth:`~hermes_state.visibility.Rules.listed`); the list shows it at its live tip.

This is not upstream's ``lineage root`` (XR-2, :func:`hermes_state.retrieval.lineage_roots`),
which follows every parent link to the top: upstream's recall tools skip a whole family that
way, but a reset child found by a search is shown in the list as its own row and must be
grouped under its own title.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store

#: Ids asked for in one statement.
CHUNK = 500


def conversation_roots(store: "Store", session_ids: Iterable[str]) -> dict[str, str]:
    """``{session_id: root}`` for every id given: the root of the conversation it is part of
    (see the module docstring). An id with no session row is its own root."""
    wanted = list(dict.fromkeys(sid for sid in session_ids if sid is not None))
    if not wanted:
        return {}
    roots = {sid: sid for sid in wanted}
    listed = store.rules.listed("c")

    def run(conn: sqlite3.Connection) -> None:
        cursor = conn.cursor()
        cursor.row_factory = None
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start:start + CHUNK]
            marks = ",".join("?" for _ in chunk)
            # Step from a session to its parent only while the session is not listed on its
            # own (a compression continuation, a delegate run). UNION, not UNION ALL: a loop
            # of parent links visits each session once and ends. The root is the session
            # reached that is listed on its own, or whose parent row is gone.
            sql = (
                "WITH RECURSIVE up(origin, id) AS ("
                f" SELECT id, id FROM sessions WHERE id IN ({marks})"
                " UNION"
                " SELECT up.origin, c.parent_session_id FROM up"
                " JOIN sessions c ON c.id = up.id"
                " JOIN sessions p ON p.id = c.parent_session_id"
                f" WHERE NOT {listed})"
                " SELECT up.origin, up.id FROM up JOIN sessions c ON c.id = up.id"
                f" WHERE {listed} OR NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = c.parent_session_id)"
            )
            for origin, node in cursor.execute(sql, chunk):
                roots[origin] = node

    store.read(run)
    return roots


def conversation_root(store: "Store", session_id: str) -> str:
    """:func:`conversation_roots` of one session."""
    return conversation_roots(store, [session_id]).get(session_id, session_id)


def conversation_members(store: "Store", session_id: str) -> list[str]:
    """Every session of the conversation ``session_id`` is part of, its root first, then by
    start: the compression chain and the delegate runs of its sessions -- not the branches
    or reset children, which are conversations of their own."""
    root = conversation_root(store, session_id)
    listed = store.rules.listed("c")

    def run(conn: sqlite3.Connection) -> list[str]:
        cursor = conn.cursor()
        cursor.row_factory = None
        # Down from the root to each child not listed on its own; UNION ends a loop.
        sql = (
            "WITH RECURSIVE down(id) AS (SELECT ?"
            " UNION SELECT c.id FROM down JOIN sessions c ON c.parent_session_id = down.id"
            f" WHERE NOT {listed})"
            " SELECT down.id FROM down JOIN sessions s ON s.id = down.id"
            " ORDER BY down.id != ?, s.started_at, s.id"
        )
        return [row[0] for row in cursor.execute(sql, (root, root))]

    return store.read(run) or [root]
