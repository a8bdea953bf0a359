"""Upstream's export dicts (SPEC §10, EX-1 / EX-2): ``{**session, "messages": [...]}`` for one
session, or for every session most recently used first.

Each function takes a :class:`~hermes_state.store.Store`; ``SessionDB.export_session`` /
``export_all`` / ``iter_export_all`` are these. The file formats and the batched, parallel
exports built on the same dicts are :mod:`hermes_state.export` and its neighbours.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from .messages_read import get_messages
from .sessions import get_session, get_system_prompt

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store


def with_prompt(store: "Store", session: dict) -> dict:
    """UC-3 for exports: the system prompt travels with the session even where the store
    keeps it once, by hash, in ``system_prompts`` (v30); import puts it back there."""
    if session.get("system_prompt") is None and session.get("system_prompt_hash"):
        return {**session, "system_prompt": get_system_prompt(store, session["id"])}
    return session


def export_session(store: "Store", session_id: str) -> dict | None:
    """``{**session, "messages": [...]}`` (EX-1); None for an unknown id.

    The row and the messages are read in one snapshot: a session exported while an agent
    appends to it carries exactly the messages its ``message_count`` counts.
    """

    def read() -> dict | None:
        session = get_session(store, session_id)
        if session is None:
            return None
        return {**with_prompt(store, session), "messages": get_messages(store, session_id)}

    return store.read_snapshot(read)


def iter_export_all(store: "Store", source: str | None = None, limit: int | None = None) -> Iterator[dict]:
    """Every session (of ``source``), most recently used first, with its messages, one at a
    time; every session unless ``limit`` (upstream's ``export_all`` stops at 100000).

    The streaming exports (CLI, browser) use this without a limit: "every session" must not
    stop silently at 100000. The order is read once, as ids only, so memory is bounded by
    one session and sessions written meanwhile neither repeat nor shift others; a session
    deleted meanwhile is skipped.
    """
    last_active = store.rules.last_active_sql()
    where = "WHERE s.source = ?" if source else ""
    params: list[Any] = [source] if source else []
    sql = f"SELECT s.id FROM sessions s {where} ORDER BY {last_active} DESC, s.started_at DESC, s.id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    ids = [row[0] for row in store.fetchall(sql, params)]
    one = f"SELECT s.*, {last_active} AS last_active FROM sessions s WHERE s.id = ?"

    def read(session_id: str) -> dict | None:
        row = store.fetchone(one, (session_id,))
        if row is None:
            return None
        return {**with_prompt(store, dict(row)), "messages": get_messages(store, session_id)}

    for session_id in ids:
        # one snapshot per session (row and messages agree), none held across the yield
        obj = store.read_snapshot(lambda: read(session_id))
        if obj is not None:
            yield obj
