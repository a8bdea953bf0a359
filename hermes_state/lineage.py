"""Session lineage: parent links, edge kinds, compression tips, trees (SPEC §8, LI-1 … LI-13).

Parent links can be broken (a missing parent row) or even cyclic in a damaged database; every
walk here is bounded and remembers what it has seen, so none of them can loop or crash.
"""

from __future__ import annotations

import sqlite3

from .models import EDGE_LABELS, EdgeKind, LineageNode, from_store
from .sql_ids import in_chunks
from .visibility import RESET_REASONS, Rules, continuation_sql, count_shown_messages, marker_sql

__all__ = ["EDGE_LABELS", "EdgeKind", "LineageNode"]

#: A bound on any walk of parent links, far past any real conversation (a gateway chat that
#: compressed 150 times was once resumed at segment #101 under a bound of 100); every walk
#: also remembers what it has seen, so a loop ends at once whatever this is.
MAX_DEPTH = 1_000_000


def classify_edge(parent: dict, child: dict) -> EdgeKind:
    """LI-1 and UC-3: classify the edge ``parent → child``.

    Upstream's markers in ``model_config`` win (``_delegate_from``, a ``subagent`` source,
    ``_branched_from``, ``_reset_from``), then a reset child by its gateway ``session_key``,
    then end reason and timing.
    """
    if child.get("delegate_from") is not None or child.get("source") == "subagent":
        return EdgeKind.DELEGATE
    if child.get("branched_from") is not None:
        return EdgeKind.BRANCH
    key = child.get("session_key")
    if child.get("reset_from") is not None or (
        key and key == parent.get("session_key") and parent.get("end_reason") in RESET_REASONS
    ):
        return EdgeKind.RESET
    ended_at = parent.get("ended_at")
    started = child.get("started_at") or 0
    if ended_at is None or started < ended_at:
        return EdgeKind.DELEGATE
    reason = parent.get("end_reason")
    if reason == "compression":
        return EdgeKind.COMPRESSION
    if reason == "branched":
        return EdgeKind.BRANCH
    return EdgeKind.OTHER


# Each step to the newest-started continuation; UNION with no depth column: each session is
# visited once, so a loop of parent links ends, and rows come out in the order walked (a
# recursive CTE's queue is first in, first out): the tip is the last row.
_TIP_SQL = (
    "WITH RECURSIVE walk(id) AS (SELECT ? UNION"
    " SELECT (SELECT c.id FROM sessions p JOIN sessions c ON c.parent_session_id = p.id"
    f" WHERE p.id = walk.id AND {continuation_sql('p', 'c')} ORDER BY c.started_at DESC LIMIT 1)"
    " FROM walk WHERE walk.id IS NOT NULL)"
    " SELECT id FROM walk WHERE id IS NOT NULL"
)


def compression_tip(conn: sqlite3.Connection, session_id: str) -> str:
    """LI-7, UC-3: follow compression continuations -- never a branch, a reset child or a
    delegate run -- to the newest tip.

    One statement: two look-ups per segment from Python took 4.7 s on a chain of 200,000
    segments (a search naming the conversation it found waited for it)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    tip = session_id
    for (tip,) in cursor.execute(_TIP_SQL, (session_id,)):
        pass
    return tip


def resume_target(conn: sqlite3.Connection, session_id: str) -> str:
    """LI-8: an empty head resumes at its first descendant (latest child) with messages."""

    def has_messages(sid: str) -> bool:
        return conn.execute("SELECT 1 FROM messages WHERE session_id = ? LIMIT 1", (sid,)).fetchone() is not None

    if has_messages(session_id):
        return session_id
    current = session_id
    seen = {session_id}
    for _ in range(32):
        child = conn.execute(
            "SELECT id FROM sessions WHERE parent_session_id = ? "
            "ORDER BY started_at DESC, id DESC LIMIT 1",
            (current,),
        ).fetchone()
        if child is None or child[0] in seen:
            break
        current = child[0]
        seen.add(current)
        if has_messages(current):
            return current
    return session_id


# UNION, no depth column: each row is added once, so a loop of parent links ends, and rows
# come out in the order they were found (a recursive CTE's queue is first in, first out):
# nearest first.
_ANCESTORS_SQL = """
WITH RECURSIVE lineage(id, parent_session_id) AS (
  SELECT id, parent_session_id FROM sessions WHERE id = :sid
  UNION
  SELECT s.id, s.parent_session_id
  FROM sessions s JOIN lineage l ON s.id = l.parent_session_id
)
SELECT id FROM lineage
"""

_DESCENDANTS_SQL = """
WITH RECURSIVE descendants(id) AS (
  SELECT id FROM sessions WHERE id = :sid
  UNION
  SELECT s.id
  FROM sessions s JOIN descendants d ON s.parent_session_id = d.id
)
SELECT id FROM descendants
"""


def ancestors(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """LI-10: the session, its parent, … (each id once, a loop ends)."""
    return [row[0] for row in conn.execute(_ANCESTORS_SQL, {"sid": session_id})]


def descendants(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """LI-11: the session and every descendant, nearest first (each id once, a loop ends)."""
    return [row[0] for row in conn.execute(_DESCENDANTS_SQL, {"sid": session_id})]


def chain(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """LI-12: ``[root, …, parent, session]``; stops at a repeated id or a missing row.

    One statement (:func:`ancestors`), not two look-ups per step: those took seconds on a
    chain of 200,000 segments."""
    found = ancestors(conn, session_id)
    if not found:
        return [session_id]
    found.reverse()
    return found


def root_of(conn: sqlite3.Connection, session_id: str) -> str:
    """XR-2: the conversation root (top of the parent chain, loop-safe)."""
    return chain(conn, session_id)[0]


_NODE_SQL = (
    "SELECT s.id, s.title, s.source, s.parent_session_id, s.started_at, s.ended_at, "
    "s.end_reason, s.message_count, {session_key} AS session_key, "
    f"{marker_sql('s', '_delegate_from')} AS delegate_from, "
    f"{marker_sql('s', '_branched_from')} AS branched_from, "
    f"{marker_sql('s', '_reset_from')} AS reset_from, "
    "COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), "
    "s.started_at) AS last_active FROM sessions s WHERE s.id IN ({marks})"
)


def _compression_tips(rows: dict[str, dict]) -> set[str]:
    """What :func:`compression_tip` answers for every compression-ended node of a family, in
    one pass over its rows: each segment's newest continuation is followed, and each walk
    stops at a segment already resolved (one tip walk per node was quadratic: minutes for a
    chain of 10,000 segments)."""
    newest: dict[str, tuple[float, str]] = {}
    for sid, row in rows.items():
        parent = rows.get(row["parent_session_id"]) if row["parent_session_id"] else None
        if parent is None or parent["end_reason"] != "compression" or parent["ended_at"] is None:
            continue
        if classify_edge(parent, row) is not EdgeKind.COMPRESSION:
            continue
        key = (row["started_at"] or 0, sid)
        if parent["id"] not in newest or key > newest[parent["id"]]:
            newest[parent["id"]] = key
    tip_of: dict[str, str] = {}
    for start, row in rows.items():
        if row["end_reason"] != "compression" or start in tip_of:
            continue
        path: list[str] = []
        seen: set[str] = set()
        current = start
        while current not in tip_of and current in newest and current not in seen:
            seen.add(current)
            path.append(current)
            current = newest[current][1]
        # A loop stops where compression_tip stops: at the segment before the repeat.
        tip = path[-1] if current in seen else tip_of.get(current, current)
        for sid in path or [start]:
            tip_of[sid] = tip
    return {tip_of[sid] for sid, row in rows.items() if row["end_reason"] == "compression" and sid in tip_of}


def build_tree(conn: sqlite3.Connection, session_id: str, rules: "Rules | None" = None):
    """LI-13: the whole family of ``session_id`` as a tree of LineageNode, or None; with
    ``rules`` (a store with the ``active`` flag) its counts leave rewound messages out.

    The tree starts at the conversation root (top of the parent chain), contains every
    descendant of that root, labels each edge (LI-1), marks live compression tips and the
    node the caller came from. A parent link that points at a missing row, or that would
    close a cycle, is reported on the node (``broken_parent`` / ``cycle``) instead of failing.
    """
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        return None
    root_id = root_of(conn, session_id)
    ids = descendants(conn, root_id)
    if session_id not in ids:  # a cycle above the node can make the "root" not reach it
        ids.append(session_id)
    rows: dict[str, dict] = {}
    columns = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    session_key = "s.session_key" if "session_key" in columns else "NULL"
    for chunk, marks in in_chunks(ids):
        for row in conn.execute(_NODE_SQL.format(marks=marks, session_key=session_key), chunk):
            rows[row["id"]] = dict(row)
    tips = _compression_tips(rows)
    # Counts say what the transcript shows: rewound messages are not counted (``rules``: the
    # store's reader rules when it has the flag, else None).
    if rules is not None:
        count_shown_messages(conn, rules, list(rows.values()), True)

    nodes: dict[str, LineageNode] = {}
    for sid, row in rows.items():
        nodes[sid] = from_store(LineageNode, dict(
            id=sid,
            title=row["title"],
            source=row["source"],
            parent_session_id=row["parent_session_id"],
            started_at=row["started_at"],
            ended_at=row["ended_at"],
            end_reason=row["end_reason"],
            message_count=row["message_count"] or 0,
            last_active=row["last_active"],
            is_live_tip=sid in tips and row["ended_at"] is None,
            is_current=sid == session_id,
        ))
    root = nodes[root_id]
    if rows[root_id]["parent_session_id"]:
        parent_id = rows[root_id]["parent_session_id"]
        exists = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent_id,)).fetchone()
        if exists is None:
            root.broken_parent = True
        else:
            root.cycle = True

    # Attach children breadth-first from the root so each node is placed once (children
    # looked up by parent: a scan of every node per parent took minutes on a long chain).
    by_parent: dict[str, list[LineageNode]] = {}
    for node in nodes.values():
        if node.parent_session_id is not None:
            by_parent.setdefault(node.parent_session_id, []).append(node)
    placed = {root_id}
    frontier = [root_id]
    while frontier:
        next_frontier: list[str] = []
        for parent_id in frontier:
            kids = [n for n in by_parent.get(parent_id, ()) if n.id not in placed]
            kids.sort(key=lambda n: (n.started_at or 0, n.id))
            for kid in kids:
                kid.edge = classify_edge(rows[parent_id], rows[kid.id])
                nodes[parent_id].children.append(kid)
                placed.add(kid.id)
                next_frontier.append(kid.id)
        frontier = next_frontier
    # A node whose parent chain loops back was not reachable from the root.
    for sid, node in nodes.items():
        if sid not in placed:
            node.cycle = True
            root.children.append(node)
    return root
