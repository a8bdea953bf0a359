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

from .sql_ids import in_chunks

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store


def conversation_roots(store: "Store", session_ids: Iterable[str]) -> dict[str, str]:
    """``{session_id: root}`` for every id given: the root of the conversation it is part of
    (see the module docstring). An id with no session row is its own root."""
    asked = list(dict.fromkeys(sid for sid in session_ids if sid is not None))
    if not asked:
        return {}
    # Known answers are kept until the store changes: search as you type asks for the roots
    # of mostly the same sessions at each keystroke.
    cache = store.until_changed("conversation-roots")
    roots = {sid: cache[sid] for sid in asked if sid in cache}
    wanted = [sid for sid in asked if sid not in roots]
    if not wanted:
        return roots
    found = _walk_up(store, wanted)
    cache.update(found)
    roots.update(found)
    return roots




def _walk_up(store: "Store", wanted: list[str]) -> dict[str, str]:
    roots = {sid: sid for sid in wanted}
    listed = store.rules.listed("c")
    # One walk up for all the ids together: each session of the chains above them is read
    # once, whichever ids share it (walking per id read a 10,000-segment chain once for each
    # of a search's hits: seconds). A step goes from a session to its parent only while the
    # session is not listed on its own (a compression continuation, a delegate run) and the
    # parent row exists. UNION, not UNION ALL: a loop of parent links visits each session once
    # and ends.
    parent_of: dict[str, str | None] = {}
    is_listed: dict[str, bool] = {}

    def run(conn: sqlite3.Connection) -> None:
        cursor = conn.cursor()
        cursor.row_factory = None
        for chunk, marks in in_chunks(wanted):
            sql = (
                "WITH RECURSIVE up(id, parent, listed) AS ("
                f" SELECT c.id, c.parent_session_id, {listed} FROM sessions c WHERE c.id IN ({marks})"
                " UNION"
                f" SELECT c.id, c.parent_session_id, {listed} FROM up"
                " JOIN sessions c ON c.id = up.parent"
                " WHERE NOT up.listed)"
                " SELECT id, parent, listed FROM up"
            )
            for node, parent, node_listed in cursor.execute(sql, chunk):
                parent_of[node] = parent
                is_listed[node] = bool(node_listed)

    store.read(run)
    resolved: dict[str, str | None] = {}
    for origin in wanted:
        if origin not in parent_of:
            continue  # no session row: its own root
        path: list[str] = []
        seen: set[str] = set()
        node: str | None = origin
        root: str | None = None
        while node is not None:
            if node in resolved:
                root = resolved[node]
                break
            if node in seen:
                root = None  # a loop of sessions none of which is listed: no root
                break
            seen.add(node)
            path.append(node)
            parent = parent_of.get(node)
            if is_listed.get(node) or parent is None or parent not in parent_of:
                root = node  # listed on its own, or its parent row is gone
                break
            node = parent
        for member in path:
            resolved[member] = root
        if root is not None:
            roots[origin] = root
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
