"""Writing a session's transcript: append, replace, clear, rewind and restore (SPEC §5, MS-1 …
MS-3, MS-7; upstream v16's rewind, UC-2 / UC-3).

Each function takes a :class:`~hermes_state.store.Store` and writes in one
``BEGIN IMMEDIATE`` transaction (:meth:`Store.write`): a message and its session's counters
move together or not at all. ``SessionDB``'s methods of the same names are these, over its
store.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store

log = logging.getLogger(__name__)

INSERT_MESSAGE_SQL = (
    "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, "
    "timestamp, token_count, finish_reason, reasoning, reasoning_content, reasoning_details, "
    "codex_reasoning_items, codex_message_items) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def dumps_or_none(value: Any) -> str | None:
    """JSON columns: ``json.dumps`` defaults (ASCII escapes) when truthy, else NULL (MS-1)."""
    return json.dumps(value) if value else None


def tool_call_weight(tool_calls: Any) -> int:
    """MS-2: a list counts its length, any other non-None value counts one."""
    if tool_calls is None:
        return 0
    if isinstance(tool_calls, list):
        return len(tool_calls)
    return 1


def epoch_or_none(value: Any) -> float | None:
    """An explicit message timestamp: epoch number, or anything with ``.timestamp()``."""
    if value is None:
        return None
    try:
        return float(value.timestamp()) if hasattr(value, "timestamp") else float(value)
    except (TypeError, ValueError, OverflowError, OSError):
        log.debug("ignoring invalid message timestamp %r", value)
        return None


def append_message(
    store: "Store",
    session_id: str,
    role: str,
    content: str | None = None,
    tool_name: str | None = None,
    tool_calls: Any = None,
    tool_call_id: str | None = None,
    token_count: int | None = None,
    finish_reason: str | None = None,
    reasoning: str | None = None,
    reasoning_content: str | None = None,
    reasoning_details: Any = None,
    codex_reasoning_items: Any = None,
    codex_message_items: Any = None,
    platform_message_id: str | None = None,
    observed: bool = False,
    timestamp: Any = None,
) -> int:
    """Insert one message and bump the session's counters in the same transaction; the new
    message's id.

    Upstream v16's extras: ``platform_message_id`` (the messaging platform's own id),
    ``observed`` and an explicit ``timestamp`` (epoch number or datetime; an invalid one
    is ignored).
    """
    if content is not None and not isinstance(content, str):
        raise TypeError(f"content must be str or None, not {type(content).__name__}")
    values = (
        session_id,
        role,
        content,
        tool_call_id,
        dumps_or_none(tool_calls),
        tool_name,
        time.time(),
        token_count,
        finish_reason,
        reasoning,
        reasoning_content,
        dumps_or_none(reasoning_details),
        dumps_or_none(codex_reasoning_items),
        dumps_or_none(codex_message_items),
    )
    if timestamp is not None:
        explicit = epoch_or_none(timestamp)
        if explicit is not None:
            values = values[:6] + (explicit,) + values[7:]
    sql = INSERT_MESSAGE_SQL
    if platform_message_id is not None or observed:
        sql, rows = with_v16_message_columns(store, sql, [values], [(platform_message_id, observed)])
        values = rows[0]
    weight = tool_call_weight(tool_calls)

    def do(conn: sqlite3.Connection) -> int:
        cursor = conn.execute(sql, values)
        conn.execute(
            "UPDATE sessions SET message_count = message_count + 1, "
            "tool_call_count = tool_call_count + ? WHERE id = ?",
            (weight, session_id),
        )
        return int(cursor.lastrowid)  # type: ignore[arg-type]

    return store.write(do)


def replace_messages(store: "Store", session_id: str, messages: list[dict]) -> None:
    """Atomically replace a session's transcript (MS-3); counters recomputed."""
    t0 = time.time()
    rows = []
    calls = 0
    for index, msg in enumerate(messages):
        role = msg.get("role", "unknown")
        assistant = role == "assistant"
        content = msg.get("content")
        if content is not None and not isinstance(content, str):
            # As append_message (MS-1): refused before anything is written.
            raise TypeError(f"message {index}: content must be str or None, not {type(content).__name__}")
        tool_calls = msg.get("tool_calls")
        calls += tool_call_weight(tool_calls)
        rows.append(
            (
                session_id,
                role,
                content,
                msg.get("tool_call_id"),
                dumps_or_none(tool_calls),
                msg.get("tool_name"),
                t0 + index * 1e-6,
                msg.get("token_count"),
                msg.get("finish_reason"),
                msg.get("reasoning") if assistant else None,
                msg.get("reasoning_content") if assistant else None,
                dumps_or_none(msg.get("reasoning_details")) if assistant else None,
                dumps_or_none(msg.get("codex_reasoning_items")) if assistant else None,
                dumps_or_none(msg.get("codex_message_items")) if assistant else None,
            )
        )
    # Upstream v16's extras: an explicit timestamp, the platform's message id (also read
    # from ``message_id``) and ``observed``. Timestamps stay strictly increasing.
    extras = [
        (msg.get("platform_message_id") or msg.get("message_id"), bool(msg.get("observed")))
        for msg in messages
    ]
    explicit = [epoch_or_none(msg.get("timestamp")) for msg in messages]
    if any(t is not None for t in explicit):
        now = t0
        for index, stamp in enumerate(explicit):
            value = stamp if stamp is not None else now
            rows[index] = rows[index][:6] + (value,) + rows[index][7:]
            now = max(now + 1e-6, value + 1e-6)
    sql = INSERT_MESSAGE_SQL
    if any(pid is not None or seen for pid, seen in extras):
        sql, rows = with_v16_message_columns(store, sql, rows, extras)

    def do(conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
        conn.execute(
            "UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = ?",
            (session_id,),
        )
        conn.executemany(sql, rows)
        conn.execute(
            "UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?",
            (len(rows), calls, session_id),
        )

    store.write(do)


def clear_messages(store: "Store", session_id: str) -> None:
    """Delete a session's messages and zero its counters; the session stays (MS-7)."""

    def do(conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
        conn.execute(
            "UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = ?",
            (session_id,),
        )

    store.write(do)


def with_v16_message_columns(
    store: "Store", sql: str, rows: list[tuple], extras: list[tuple[Any, bool]]
) -> tuple[str, list[tuple]]:
    """The message INSERT extended with ``platform_message_id`` and ``observed`` (a store
    without them refuses the write: UC-5, never a new column)."""
    store.require_column("messages", "platform_message_id")
    store.require_column("messages", "observed")
    sql = sql.replace(
        "codex_message_items) VALUES (", "codex_message_items, platform_message_id, observed) VALUES (?, ?, "
    )
    return sql, [row + (pid, 1 if seen else 0) for row, (pid, seen) in zip(rows, extras)]


def rewind_to_message(store: "Store", session_id: str, target_message_id: int) -> dict:
    """Soft-delete (``active = 0``) a user message and everything after it in the session.

    Returns ``{"rewound_count", "target_message", "new_head_id"}``. Raises ``ValueError``
    when the message is not in the session or is not a user message. ``rewind_count``
    of the session grows by one on every call, even when nothing was left to rewind.
    """
    store.require_column("messages", "active")
    row = store.fetchone(
        "SELECT * FROM messages WHERE id = ? AND session_id = ?", (target_message_id, session_id)
    )
    if row is None:
        raise ValueError(f"message {target_message_id} not found in session {session_id}")
    target = dict(row)
    if target.get("role") != "user":
        raise ValueError(
            f"rewind target must be a 'user' message (got role={target.get('role')!r}, "
            f"id={target_message_id})"
        )
    bump = store.has_session_column("rewind_count")

    def do(conn: sqlite3.Connection) -> int:
        cursor = conn.execute(
            "UPDATE messages SET active = 0 WHERE session_id = ? AND id >= ? AND active = 1",
            (session_id, target_message_id),
        )
        if bump:
            conn.execute(
                "UPDATE sessions SET rewind_count = COALESCE(rewind_count, 0) + 1 WHERE id = ?",
                (session_id,),
            )
        return cursor.rowcount

    rewound = store.write(do)
    head = store.fetchone(
        "SELECT MAX(id) FROM messages WHERE session_id = ? AND active = 1", (session_id,)
    )
    return {
        "rewound_count": int(rewound),
        "target_message": target,
        "new_head_id": head[0] if head and head[0] is not None else None,
    }


def restore_rewound(store: "Store", session_id: str, since_message_id: int) -> int:
    """Make rewound messages with id ≥ ``since_message_id`` active again; how many."""
    store.require_column("messages", "active")
    return int(
        store.write(
            lambda conn: conn.execute(
                "UPDATE messages SET active = 1 WHERE session_id = ? AND id >= ? AND active = 0",
                (session_id, since_message_id),
            ).rowcount
        )
    )
