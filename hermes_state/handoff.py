"""Handoffs: a session moved from one messaging platform to another (upstream v16, UC-2).

A handoff goes ``pending`` → ``running`` → ``completed`` | ``failed`` in the session's
``handoff_state`` (with ``handoff_platform`` and ``handoff_error``); a gateway claims the
pending ones. Each function takes a :class:`~hermes_state.store.Store`; ``SessionDB``'s
methods of the same names are these, over its store.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from .prompts import with_resolved_prompts

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store


def _changed(store: "Store", sql: str, params: tuple) -> bool:
    return bool(store.write(lambda conn: conn.execute(sql, params).rowcount > 0))


def request_handoff(store: "Store", session_id: str, platform: str) -> bool:
    """Mark a handoff to ``platform`` pending, unless one is already pending or running."""
    return _changed(
        store,
        "UPDATE sessions SET handoff_state = 'pending', handoff_platform = ?, handoff_error = NULL "
        "WHERE id = ? AND (handoff_state IS NULL OR handoff_state IN ('completed', 'failed'))",
        (platform, session_id),
    )


def get_handoff_state(store: "Store", session_id: str) -> dict | None:
    """``{"state", "platform", "error"}`` of a session, or None if there is no session (or
    the store cannot say: a pre-v16 store read as it is)."""
    try:
        row = store.fetchone(
            "SELECT handoff_state, handoff_platform, handoff_error FROM sessions WHERE id = ?", (session_id,)
        )
    except sqlite3.Error:
        return None
    if row is None:
        return None
    return {"state": row[0], "platform": row[1], "error": row[2]}


def list_pending_handoffs(store: "Store") -> list[dict]:
    """Sessions with a pending handoff, oldest first."""
    try:
        rows = store.fetchall("SELECT * FROM sessions WHERE handoff_state = 'pending' ORDER BY started_at")
    except sqlite3.Error:
        return []
    return with_resolved_prompts(store, [dict(row) for row in rows])


def claim_handoff(store: "Store", session_id: str) -> bool:
    """pending → running; True if this call made the transition."""
    return _changed(
        store, "UPDATE sessions SET handoff_state = 'running' WHERE id = ? AND handoff_state = 'pending'",
        (session_id,),
    )


def complete_handoff(store: "Store", session_id: str) -> None:
    _changed(store, "UPDATE sessions SET handoff_state = 'completed', handoff_error = NULL WHERE id = ?", (session_id,))


def fail_handoff(store: "Store", session_id: str, error: str) -> None:
    """Mark the handoff failed with (the first 500 characters of) ``error``."""
    _changed(
        store, "UPDATE sessions SET handoff_state = 'failed', handoff_error = ? WHERE id = ?",
        (str(error)[:500], session_id),
    )
