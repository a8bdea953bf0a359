"""The per-session compression lock (upstream v16, UC-2): one agent compresses a session at a
time; a lock left behind by a dead holder expires.

Each function takes a :class:`~hermes_state.store.Store`; ``SessionDB``'s methods of the same
names are these, over its store. None raises on an SQLite failure: the safe answer is given
(not taken, nobody holds it) and the failure logged.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store

log = logging.getLogger(__name__)


def try_acquire(store: "Store", session_id: str, holder: str, ttl_seconds: float = 300.0) -> bool:
    """Take the session's compression lock; False if another holder has a live one.

    An expired lock is reclaimed. Any SQLite failure answers False (the caller then skips
    compressing, the safe choice).
    """
    if not session_id:
        return False
    now = time.time()

    def do(conn: sqlite3.Connection) -> bool:
        conn.execute("DELETE FROM compression_locks WHERE session_id = ? AND expires_at < ?", (session_id, now))
        conn.execute(
            "INSERT OR IGNORE INTO compression_locks (session_id, holder, acquired_at, expires_at) "
            "VALUES (?, ?, ?, ?)",
            (session_id, holder, now, now + float(ttl_seconds)),
        )
        row = conn.execute("SELECT holder FROM compression_locks WHERE session_id = ?", (session_id,)).fetchone()
        return row is not None and row[0] == holder

    try:
        return bool(store.write(do))
    except sqlite3.Error as exc:
        log.warning("compression lock for %s not taken: %s", session_id, exc)
        return False


def release(store: "Store", session_id: str, holder: str) -> None:
    """Release the lock if ``holder`` still owns it; otherwise nothing happens."""
    if not session_id:
        return
    try:
        store.write(lambda conn: conn.execute(
            "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?", (session_id, holder)
        ))
    except sqlite3.Error as exc:
        log.warning("compression lock for %s not released: %s", session_id, exc)


def holder(store: "Store", session_id: str) -> str | None:
    """The holder of the session's unexpired compression lock, or None."""
    if not session_id:
        return None
    try:
        row = store.fetchone(
            "SELECT holder FROM compression_locks WHERE session_id = ? AND expires_at >= ?",
            (session_id, time.time()),
        )
    except sqlite3.OperationalError:  # a read-only pre-v16 store without the table
        return None
    return row[0] if row else None
