"""Helpers of the listing tests: the general query's answer, the fast path's, and writes with
controlled timestamps."""

from __future__ import annotations

import hermes_state.listing.activity as activity_module
from hermes_state import SessionDB


def _general(db: SessionDB, monkeypatch, **kw) -> list[dict]:
    """The general query's answer (the fast path switched off)."""
    with monkeypatch.context() as m:
        m.setattr(activity_module, "ACTIVITY_WALK_ROWS", 0)
        return db.list_sessions_rich(order_by_last_active=True, **kw)


def _fast(db: SessionDB, **kw) -> tuple[list[dict], bool]:
    """The default answer and whether the fast path served it (no general query ran)."""
    statements: list[str] = []
    db._conn.set_trace_callback(statements.append)
    try:
        rows = db.list_sessions_rich(order_by_last_active=True, **kw)
    finally:
        db._conn.set_trace_callback(None)
    return rows, not any("_chain_last_active" in s for s in statements)


def assert_same_pages(db: SessionDB, monkeypatch, **kw) -> bool:
    rows, served = _fast(db, **kw)
    assert rows == _general(db, monkeypatch, **kw), kw
    return served


def _add(db: SessionDB, sid: str, started: float, stamps: list[float], source: str = "cli") -> list[int]:
    """A session started at ``started`` with one user message per stamp (ids in stamp order)."""
    db.create_session(sid, source)
    ids = []
    for ts in stamps:
        ids.append(db.append_message(sid, "user", f"message of {sid} at {ts}"))
    db._execute_write(lambda conn: conn.executemany(
        "UPDATE messages SET timestamp = ? WHERE id = ?", list(zip(stamps, ids))))
    db._execute_write(lambda conn: conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (started, sid)))
    return ids


def _add_messages(db: SessionDB, sid: str, stamps: list[float]) -> list[int]:
    ids = [db.append_message(sid, "assistant", f"more of {sid}") for _ in stamps]
    db._execute_write(lambda conn: conn.executemany(
        "UPDATE messages SET timestamp = ? WHERE id = ?", list(zip(stamps, ids))))
    return ids
