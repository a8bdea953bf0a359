"""Telegram DM topic mode tables (upstream v16, explicit opt-in only).

Upstream creates ``telegram_dm_topic_mode`` and ``telegram_dm_topic_bindings`` only when a user
opts in (``/topic``), never when a store is opened, and records the shape in
``state_meta.telegram_dm_topic_schema_version`` (``2``: the binding's ``session_id`` foreign key
cascades on delete, so deleting a session drops its binding). The DDL text is upstream's, so a
store that went through either implementation looks the same.

Every function takes a connection; :class:`hermes_state.SessionDB` runs writers inside its
write transaction and readers under its lock. Readers answer "nothing" while the tables do not
exist (no bindings yet) instead of creating them.
"""

from __future__ import annotations

import sqlite3
import time

META_KEY = "telegram_dm_topic_schema_version"

MODE_DDL = """CREATE TABLE IF NOT EXISTS telegram_dm_topic_mode (
                    chat_id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    enabled INTEGER NOT NULL DEFAULT 1,
                    activated_at REAL NOT NULL,
                    updated_at REAL NOT NULL,
                    has_topics_enabled INTEGER,
                    allows_users_to_create_topics INTEGER,
                    capability_checked_at REAL,
                    intro_message_id TEXT,
                    pinned_message_id TEXT
                )"""

_BINDINGS_COLUMNS = """(
                    chat_id TEXT NOT NULL,
                    thread_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    session_key TEXT NOT NULL,
                    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                    managed_mode TEXT NOT NULL DEFAULT 'auto',
                    linked_at REAL NOT NULL,
                    updated_at REAL NOT NULL,
                    PRIMARY KEY (chat_id, thread_id)
                )"""

BINDINGS_DDL = "CREATE TABLE IF NOT EXISTS telegram_dm_topic_bindings " + _BINDINGS_COLUMNS

INDEX_DDL = (
    "CREATE UNIQUE INDEX IF NOT EXISTS idx_telegram_dm_topic_bindings_session\n"
    "                ON telegram_dm_topic_bindings(session_id)",
    "CREATE INDEX IF NOT EXISTS idx_telegram_dm_topic_bindings_user\n"
    "                ON telegram_dm_topic_bindings(user_id, chat_id)",
)


def _table_exists(conn: sqlite3.Connection, name: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
        is not None
    )


def has_tables(db) -> bool:
    """The store has the bindings table (from its capabilities, UC-1)."""
    return db.capabilities.has_telegram_topics


def migrate(conn: sqlite3.Connection) -> None:
    """Create the tables (shape 2); rebuild a shape-1 bindings table whose foreign key did
    not cascade. Idempotent."""
    conn.execute(MODE_DDL)
    conn.execute(BINDINGS_DDL)
    for stmt in INDEX_DDL:
        conn.execute(stmt)
    row = conn.execute("SELECT value FROM state_meta WHERE key = ?", (META_KEY,)).fetchone()
    shape = int(row[0]) if row and str(row[0]).isdigit() else 0
    if shape < 2:
        keys = conn.execute("PRAGMA foreign_key_list(telegram_dm_topic_bindings)").fetchall()
        if any(key[2] == "sessions" and (key[6] or "").upper() != "CASCADE" for key in keys):
            conn.execute("CREATE TABLE telegram_dm_topic_bindings_new " + _BINDINGS_COLUMNS)
            conn.execute(
                "INSERT INTO telegram_dm_topic_bindings_new SELECT chat_id, thread_id, user_id, "
                "session_key, session_id, managed_mode, linked_at, updated_at "
                "FROM telegram_dm_topic_bindings"
            )
            conn.execute("DROP TABLE telegram_dm_topic_bindings")
            conn.execute("ALTER TABLE telegram_dm_topic_bindings_new RENAME TO telegram_dm_topic_bindings")
            for stmt in INDEX_DDL:
                conn.execute(stmt)
    conn.execute(
        "INSERT INTO state_meta (key, value) VALUES (?, '2') "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (META_KEY,),
    )


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(bool(value))


def enable(conn, chat_id: str, user_id: str, has_topics: bool | None, can_create: bool | None) -> None:
    now = time.time()
    conn.execute(
        "INSERT INTO telegram_dm_topic_mode (chat_id, user_id, enabled, activated_at, updated_at, "
        "has_topics_enabled, allows_users_to_create_topics, capability_checked_at) "
        "VALUES (?, ?, 1, ?, ?, ?, ?, ?) ON CONFLICT(chat_id) DO UPDATE SET "
        "user_id = excluded.user_id, enabled = 1, updated_at = excluded.updated_at, "
        "has_topics_enabled = excluded.has_topics_enabled, "
        "allows_users_to_create_topics = excluded.allows_users_to_create_topics, "
        "capability_checked_at = excluded.capability_checked_at",
        (chat_id, user_id, now, now, _flag(has_topics), _flag(can_create), now),
    )


def disable(conn, chat_id: str, clear_bindings: bool) -> None:
    if _table_exists(conn, "telegram_dm_topic_mode"):
        conn.execute(
            "UPDATE telegram_dm_topic_mode SET enabled = 0, updated_at = ? WHERE chat_id = ?",
            (time.time(), chat_id),
        )
    if clear_bindings and _table_exists(conn, "telegram_dm_topic_bindings"):
        conn.execute("DELETE FROM telegram_dm_topic_bindings WHERE chat_id = ?", (chat_id,))


def is_enabled(conn, chat_id: str, user_id: str) -> bool:
    if not _table_exists(conn, "telegram_dm_topic_mode"):
        return False
    row = conn.execute(
        "SELECT enabled FROM telegram_dm_topic_mode WHERE chat_id = ? AND user_id = ?",
        (chat_id, user_id),
    ).fetchone()
    return bool(row and row[0])


def binding(conn, chat_id: str, thread_id: str) -> dict | None:
    if not _table_exists(conn, "telegram_dm_topic_bindings"):
        return None
    row = conn.execute(
        "SELECT * FROM telegram_dm_topic_bindings WHERE chat_id = ? AND thread_id = ?",
        (chat_id, thread_id),
    ).fetchone()
    return dict(row) if row else None


def bindings_for_chat(conn, chat_id: str) -> list[dict]:
    if not _table_exists(conn, "telegram_dm_topic_bindings"):
        return []
    rows = conn.execute(
        "SELECT * FROM telegram_dm_topic_bindings WHERE chat_id = ? ORDER BY updated_at DESC",
        (chat_id,),
    ).fetchall()
    return [dict(row) for row in rows]


def binding_by_session(conn, session_id: str) -> dict | None:
    if not _table_exists(conn, "telegram_dm_topic_bindings"):
        return None
    row = conn.execute(
        "SELECT * FROM telegram_dm_topic_bindings WHERE session_id = ?", (session_id,)
    ).fetchone()
    return dict(row) if row else None


def bind(conn, chat_id, thread_id, user_id, session_key, session_id, managed_mode) -> None:
    current = conn.execute(
        "SELECT chat_id, thread_id FROM telegram_dm_topic_bindings WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    if current is not None and (str(current[0]), str(current[1])) != (chat_id, thread_id):
        raise ValueError("session is already linked to another Telegram topic")
    now = time.time()
    conn.execute(
        "INSERT INTO telegram_dm_topic_bindings (chat_id, thread_id, user_id, session_key, "
        "session_id, managed_mode, linked_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(chat_id, thread_id) DO UPDATE SET user_id = excluded.user_id, "
        "session_key = excluded.session_key, session_id = excluded.session_id, "
        "managed_mode = excluded.managed_mode, updated_at = excluded.updated_at",
        (chat_id, thread_id, user_id, session_key, session_id, managed_mode, now, now),
    )
