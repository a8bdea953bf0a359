"""Reading a session's transcript: every row, the replayable conversation, a window around
one message, the rewind picker's list (SPEC §5, MS-4 … MS-5; upstream v16's windows, UC-2).

Each function takes a :class:`~hermes_state.store.Store`. Rewound messages (``active = 0``,
UC-3) are left out unless asked for. ``SessionDB``'s methods of the same names are these,
over its store.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from typing import TYPE_CHECKING, Any, Iterable

from .lineage import chain as lineage_chain
from .preview import scrub_memory_context

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------- rows as dicts


def decode_message_row(row: sqlite3.Row) -> dict:
    """Every column of a message row; ``tool_calls`` decoded (MS-4: undecodable → ``[]``)."""
    data = dict(row)
    raw = data.get("tool_calls")
    if raw:
        try:
            data["tool_calls"] = json.loads(raw)
        except (TypeError, ValueError):
            log.warning("message %s has undecodable tool_calls", data.get("id"))
            data["tool_calls"] = []
    return data


def decoded_rows(rows: Iterable[sqlite3.Row]) -> list[dict]:
    return [decode_message_row(row) for row in rows]


def _json_or_none(raw: str, message_id: Any, column: str) -> Any:
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        log.warning("message %s has undecodable %s", message_id, column)
        return None


def conversation_message(row: sqlite3.Row) -> dict:
    """MS-5: one replayable chat message -- its keys present only when they say something."""
    role = row["role"]
    content = row["content"]
    if role in ("user", "assistant") and isinstance(content, str):
        content = scrub_memory_context(content).strip()
    msg: dict[str, Any] = {"role": role, "content": content}
    # Upstream v16 (UC-2) replays the message time, the platform's message id (as
    # ``message_id``), ``observed`` and the assistant's finish reason as well.
    keys = row.keys()
    if row["timestamp"]:
        msg["timestamp"] = row["timestamp"]
    if row["tool_call_id"]:
        msg["tool_call_id"] = row["tool_call_id"]
    if row["tool_name"]:
        msg["tool_name"] = row["tool_name"]
    if row["tool_calls"]:
        try:
            msg["tool_calls"] = json.loads(row["tool_calls"])
        except (TypeError, ValueError):
            log.warning("message %s has undecodable tool_calls", row["id"])
            msg["tool_calls"] = []
    if "platform_message_id" in keys and row["platform_message_id"]:
        msg["message_id"] = row["platform_message_id"]
    if "observed" in keys and row["observed"]:
        msg["observed"] = True
    if role == "assistant" and row["finish_reason"]:
        msg["finish_reason"] = row["finish_reason"]
    if role == "assistant":
        if row["reasoning"]:
            msg["reasoning"] = row["reasoning"]
        if row["reasoning_content"] is not None:
            msg["reasoning_content"] = row["reasoning_content"]
        for column in ("reasoning_details", "codex_reasoning_items", "codex_message_items"):
            if row[column]:
                msg[column] = _json_or_none(row[column], row["id"], column)
    return msg


def drop_replayed_prompts(messages: list[dict]) -> list[dict]:
    """MS-5: drop a user prompt that repeats an earlier kept one with no answer between."""
    kept: list[dict] = []
    for msg in messages:
        content = msg.get("content")
        if msg["role"] == "user" and isinstance(content, str) and content:
            duplicate = False
            for earlier in reversed(kept):
                if earlier["role"] == "user" and earlier.get("content") == content:
                    duplicate = True
                    break
                if earlier["role"] == "assistant" and (
                    earlier.get("content") or earlier.get("tool_calls")
                ):
                    break
            if duplicate:
                continue
        kept.append(msg)
    return kept


def content_text(content: Any) -> str:
    """Message content as plain text; upstream's ``"\\x00json:"`` multimodal parts flattened."""
    if content is None:
        return ""
    if isinstance(content, str) and content.startswith("\x00json:"):
        try:
            parts = json.loads(content[len("\x00json:"):])
        except (TypeError, ValueError):
            return content
        if isinstance(parts, list):
            texts = [p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
            return " ".join(t for t in texts if t).strip() or "[multimodal content]"
        return "[multimodal content]"
    return str(content)


# ---------------------------------------------------------------------- reads


def get_messages(store: "Store", session_id: str, include_inactive: bool = False) -> list[dict]:
    """Every column of every message, ordered by ``(timestamp, id)``; tool_calls decoded.

    Rewound messages (``active = 0``, UC-3) only with ``include_inactive=True``.
    """
    rows = store.fetchall(
        f"SELECT * FROM messages WHERE session_id = ?{store.active_clause(include_inactive)} "
        "ORDER BY timestamp, id",
        (session_id,),
    )
    return decoded_rows(rows)


def get_messages_as_conversation(
    store: "Store",
    session_id: str,
    include_ancestors: bool = False,
    include_inactive: bool = False,
    *,
    without_scaffolding: bool = False,
) -> list[dict]:
    """Replayable chat messages (MS-5), optionally for the whole root-to-session chain;
    rewound messages only with ``include_inactive=True``. ``without_scaffolding`` leaves
    out ``display_kind = 'hidden'`` rows too (a recap shows none of them, UC-3)."""
    if include_ancestors and session_id:
        ids = store.read(lambda conn: lineage_chain(conn, session_id))
    else:
        ids = [session_id]
    placeholders = ",".join("?" for _ in ids)
    scaffolding = (
        " AND (display_kind IS NULL OR display_kind != 'hidden')"
        if without_scaffolding and store.has_message_column("display_kind") else ""
    )
    rows = store.fetchall(
        f"SELECT * FROM messages WHERE session_id IN ({placeholders})"
        f"{store.active_clause(include_inactive, replay=True)}{scaffolding} ORDER BY timestamp, id",
        ids,
    )
    conversation = [conversation_message(row) for row in rows]
    if include_ancestors and len(ids) > 1:
        conversation = drop_replayed_prompts(conversation)
    return conversation


def get_messages_around(store: "Store", session_id: str, around_message_id: int, window: int = 5) -> dict:
    """Up to ``window`` messages either side of one message (by id), with counts.

    ``{"window": [...], "messages_before": n, "messages_after": m}``; an anchor that is
    not a message of ``session_id`` gives an empty window and zero counts.
    """
    window = max(0, int(window))

    def read(conn: sqlite3.Connection) -> dict:
        if conn.execute(
            "SELECT 1 FROM messages WHERE id = ? AND session_id = ?",
            (around_message_id, session_id),
        ).fetchone() is None:
            return {"window": [], "messages_before": 0, "messages_after": 0}
        before = conn.execute(
            "SELECT * FROM messages WHERE session_id = ? AND id <= ? ORDER BY id DESC LIMIT ?",
            (session_id, around_message_id, window + 1),
        ).fetchall()
        after = conn.execute(
            "SELECT * FROM messages WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?",
            (session_id, around_message_id, window),
        ).fetchall()
        return {
            "window": decoded_rows(list(reversed(before)) + list(after)),
            "messages_before": max(0, len(before) - 1),
            "messages_after": len(after),
        }

    return store.read(read)


def get_anchored_view(
    store: "Store",
    session_id: str,
    around_message_id: int,
    window: int = 5,
    bookend: int = 3,
    keep_roles: tuple[str, ...] | None = ("user", "assistant"),
) -> dict:
    """:func:`get_messages_around` plus the session's opening and closing messages.

    The window keeps only ``keep_roles`` (the anchor always stays); ``bookend_start`` /
    ``bookend_end`` are the first / last ``bookend`` messages with those roles and
    non-empty content lying strictly outside the window. ``keep_roles=None``: no role
    filter.
    """
    bookend = max(0, int(bookend))
    around = get_messages_around(store, session_id, around_message_id, window=window)
    rows = around["window"]
    if not rows:
        return {"window": [], "messages_before": 0, "messages_after": 0, "bookend_start": [], "bookend_end": []}
    if keep_roles is not None:
        keep = set(keep_roles)
        shown = [m for m in rows if m.get("id") == around_message_id or m.get("role") in keep]
    else:
        shown = rows
    first, last = rows[0]["id"], rows[-1]["id"]
    start: list[dict] = []
    end: list[dict] = []
    if bookend:
        role_sql, role_params = "", []
        if keep_roles is not None:
            role_sql = f" AND role IN ({','.join('?' for _ in keep_roles)})"
            role_params = list(keep_roles)

        def read(conn: sqlite3.Connection) -> tuple[list, list]:
            head = conn.execute(
                f"SELECT * FROM messages WHERE session_id = ? AND id < ?{role_sql} "
                "AND length(content) > 0 ORDER BY id LIMIT ?",
                (session_id, first, *role_params, bookend),
            ).fetchall()
            tail = conn.execute(
                f"SELECT * FROM messages WHERE session_id = ? AND id > ?{role_sql} "
                "AND length(content) > 0 ORDER BY id DESC LIMIT ?",
                (session_id, last, *role_params, bookend),
            ).fetchall()
            return head, list(reversed(tail))

        head, tail = store.read(read)
        start, end = decoded_rows(head), decoded_rows(tail)
    return {
        "window": shown,
        "messages_before": around["messages_before"],
        "messages_after": around["messages_after"],
        "bookend_start": start,
        "bookend_end": end,
    }


def list_recent_user_messages(
    store: "Store", session_id: str, limit: int = 20, include_inactive: bool = False
) -> list[dict]:
    """The newest user messages first: ``{"id", "timestamp", "preview"}`` (80 characters,
    whitespace collapsed) -- the rewind picker's list."""
    rows = store.fetchall(
        "SELECT id, timestamp, content FROM messages WHERE session_id = ? AND role = 'user'"
        f"{store.active_clause(include_inactive)} ORDER BY id DESC LIMIT ?",
        (session_id, int(limit)),
    )
    result = []
    for row in rows:
        text = " ".join(content_text(row["content"]).split())
        if len(text) > 80:
            text = text[:77] + "..."
        result.append({"id": row["id"], "timestamp": row["timestamp"], "preview": text})
    return result
