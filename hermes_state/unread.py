"""Read and unread conversations: upstream's ``sessions.last_read_at`` watermark.

Upstream (v30) keeps one number per session, ``last_read_at``: a watermark stamped over a
whole conversation when it is read (its desktop stamps it when a conversation is opened, and
``mark as unread`` stamps ``0``). Nothing is written when a message arrives: a conversation
is **unread** when its last activity comes after the watermark; NULL means "never tracked"
and counts as read, so a store written before the column existed shows nothing unread.

The rules here are upstream's (``SessionDB.set_session_read`` / ``session_unread``):

* marking read stamps the current time, marking unread stamps ``0.0``;
* the stamp covers every session of the conversation (:func:`conversation_members`: the
  compression chain, so the row the list shows agrees whichever segment is asked, and its
  delegate runs) and writes that one column, nothing else -- never DDL;
* the watermark read is the one of the row the list shows (the conversation's root: a
  continuation created after the stamp starts with NULL, as upstream's list reads the root's
  too), compared with the last activity the list shows (the live tip's).

A store without the column tracks nothing: :func:`not_tracked` says so in one line, and a
write raises :class:`UnreadNotTracked` before anything is opened for writing.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Any, Iterable

from .conversation import conversation_members
from .errors import DatabaseError
from .sql_ids import in_chunks

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store

#: The column upstream v30 keeps the watermark in.
COLUMN = "last_read_at"


class UnreadNotTracked(DatabaseError):
    """The store has no ``sessions.last_read_at``: nothing can be marked (and nothing was)."""


def tracks_unread(store: "Store") -> bool:
    """This store keeps read state (it has upstream's column)."""
    return store.has_session_column(COLUMN)


def not_tracked(store: "Store") -> str | None:
    """Why nothing is unread here, in one line -- or None when the store tracks it."""
    if tracks_unread(store):
        return None
    version = store.opened_version
    if version is None:  # (a store this connection created: its version is the one it wrote)
        version = store.capabilities.schema_version
    return not_tracked_text(version)


def not_tracked_text(version: int | None) -> str:
    return f"unread is not tracked in this store (schema v{version if version is not None else '?'})"


def is_unread(last_read_at: Any, last_active: Any, started_at: Any = None) -> bool:
    """Upstream's rule: unread when the last activity (else the start) comes after the
    watermark; a NULL watermark is read. A value that is not a number is read as NULL."""
    if last_read_at is None:
        return False
    try:
        watermark = float(last_read_at)
        activity = float(last_active if last_active is not None else (started_at or 0))
    except (TypeError, ValueError):
        return False
    return activity > watermark


def set_read(store: "Store", session_id: str, read: bool = True, *, now: float | None = None) -> list[str]:
    """Mark the conversation of ``session_id`` read (the watermark at ``now``, default the
    current time) or unread (``0.0``). Returns the sessions stamped (empty: no such session).
    Only ``last_read_at`` of those sessions is written, in one transaction."""
    if not tracks_unread(store):
        raise UnreadNotTracked(not_tracked(store) or "")
    value = (time.time() if now is None else float(now)) if read else 0.0

    def do(conn: sqlite3.Connection) -> list[str]:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            return []
        ids = conversation_members(store, session_id)
        for chunk, marks in in_chunks(ids):
            conn.execute(f"UPDATE sessions SET {COLUMN} = ? WHERE id IN ({marks})", [value, *chunk])
        return ids

    return store.write(do)


def set_read_many(
    store: "Store", session_ids: Iterable[str], read: bool = True, *, now: float | None = None,
) -> dict[str, list[str]]:
    """:func:`set_read` of each id (one stamp time for all); ``{id: sessions stamped}``."""
    when = time.time() if now is None else float(now)
    return {sid: set_read(store, sid, read, now=when) for sid in dict.fromkeys(session_ids)}


def unread_clause(store: "Store", tip_last_active: str, alias: str = "s") -> str:
    """SQL true for a listed row ``alias`` whose conversation is unread (the row's watermark
    against ``tip_last_active``, the SQL of the last activity the list shows for it): the
    same rule as :func:`is_unread`. ``"0"`` on a store without the column."""
    if not tracks_unread(store):
        return "0"
    # typeof: a watermark that is not a number is read as NULL (as is_unread does); the
    # cheap test first, as most rows of a store have never been read.
    return (
        f"({alias}.{COLUMN} IS NOT NULL AND typeof({alias}.{COLUMN}) IN ('integer', 'real')"
        f" AND {tip_last_active} > {alias}.{COLUMN})"
    )
