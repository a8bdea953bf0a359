"""The live tip of each conversation's compression chain, kept until the store changes.

A search names each conversation it found by its tip's title and marks it by its tip's
status and last activity (UC-3): each a walk of the chain, segment by segment. On a gateway
chat that compressed 10,000 times one walk costs ~80 ms, and search as you type asks for the
same conversations key after key; so the answers are kept per store until its change mark
moves (as :func:`hermes_state.conversation.conversation_roots` keeps the roots).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Iterable

from .lifecycle import tip_sql
from .sql_ids import in_chunks

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store


def conversation_tips(store: "Store", session_ids: Iterable[str]) -> dict[str, str]:
    """``{id: tip}`` for each id that has a session row: the session itself, or for one that
    ended ``compression`` the live tip its chain leads to (as
    :func:`hermes_state.lifecycle.tip_sql` walks it, each step to the newest continuation)."""
    asked = list(dict.fromkeys(sid for sid in session_ids if sid is not None))
    if not asked:
        return {}
    cache = store.until_changed("conversation-tips")
    wanted = [sid for sid in asked if sid not in cache]
    if wanted:
        found: dict[str, str] = {}

        def run(conn: sqlite3.Connection) -> None:
            cursor = conn.cursor()
            cursor.row_factory = None
            for chunk, marks in in_chunks(wanted):
                found.update(cursor.execute(
                    f"SELECT s.id, {tip_sql('s')} FROM sessions s WHERE s.id IN ({marks})", chunk))

        store.read(run)
        cache.update(found)
    return {sid: cache[sid] for sid in asked if sid in cache}
