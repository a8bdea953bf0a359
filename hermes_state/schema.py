"""The on-disk format: upstream Hermes schema version 16, byte for byte (SPEC §2, UC-2).

The statement texts below are exactly upstream's, so that ``sqlite_master`` of a database
created by this project is indistinguishable from one created by upstream v16
(``fixtures/upstream_v16.db``). Schema 16 is schema 11 plus: ``sessions.cwd`` (placed after
``reasoning_tokens``, as upstream declares it), the handoff columns, ``rewind_count`` and
``archived``; ``messages.platform_message_id``, ``observed`` and ``active``; the
``compression_locks`` table; and three indexes.
"""

from __future__ import annotations

SCHEMA_VERSION = 16

#: The newest upstream schema whose stores this project reads and writes in place (CO-2,
#: UC-9). Above it a store is opened read-only.
MAX_KNOWN_VERSION = 30

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user_id TEXT,
    model TEXT,
    model_config TEXT,
    system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0,
    cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0,
    cwd TEXT,
    billing_provider TEXT,
    billing_base_url TEXT,
    billing_mode TEXT,
    estimated_cost_usd REAL,
    actual_cost_usd REAL,
    cost_status TEXT,
    cost_source TEXT,
    pricing_version TEXT,
    title TEXT,
    api_call_count INTEGER DEFAULT 0,
    handoff_state TEXT,
    handoff_platform TEXT,
    handoff_error TEXT,
    rewind_count INTEGER NOT NULL DEFAULT 0,
    archived INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
);

CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT,
    tool_call_id TEXT,
    tool_calls TEXT,
    tool_name TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER,
    finish_reason TEXT,
    reasoning TEXT,
    reasoning_content TEXT,
    reasoning_details TEXT,
    codex_reasoning_items TEXT,
    codex_message_items TEXT,
    platform_message_id TEXT,
    observed INTEGER DEFAULT 0,
    active INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE IF NOT EXISTS state_meta (
    key TEXT PRIMARY KEY,
    value TEXT
);

CREATE TABLE IF NOT EXISTS compression_locks (
    session_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    acquired_at REAL NOT NULL,
    expires_at REAL NOT NULL
);

CREATE INDEX IF NOT EXISTS idx_sessions_source ON sessions(source);
CREATE INDEX IF NOT EXISTS idx_sessions_source_id ON sessions(source, id);
CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id);
CREATE INDEX IF NOT EXISTS idx_sessions_started ON sessions(started_at DESC);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp);
CREATE INDEX IF NOT EXISTS idx_compression_locks_expires ON compression_locks(expires_at);
"""

#: Indexes over columns that column reconcile may have to add first (``platform_message_id``,
#: ``active``): created after reconcile, in this order, with upstream v16's exact text.
DEFERRED_INDEX_SQL = (
    "CREATE INDEX IF NOT EXISTS idx_messages_platform_msg_id "
    "ON messages(session_id, platform_message_id) "
    "WHERE platform_message_id IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS idx_messages_session_active\n"
    "    ON messages(session_id, active, timestamp)",
)

TITLE_INDEX_SQL = (
    "CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title_unique "
    "ON sessions(title) WHERE title IS NOT NULL"
)

#: Tables declared by SCHEMA_SQL (column reconcile covers exactly these).
PLAIN_TABLES = ("schema_version", "sessions", "messages", "state_meta", "compression_locks")

#: The text indexed per message (ST-4): content, tool name and raw tool-call JSON.
FTS_TEXT_EXPR = (
    "COALESCE({p}content, '') || ' ' || COALESCE({p}tool_name, '') || ' ' || "
    "COALESCE({p}tool_calls, '')"
)

FTS_TABLE = "messages_fts"
TRIGRAM_TABLE = "messages_fts_trigram"
FTS_TABLES = (FTS_TABLE, TRIGRAM_TABLE)


def _fts_ddl(table: str) -> list[str]:
    """DDL of one inline FTS5 table and its three triggers, upstream's exact text."""
    tokenize = ",\n    tokenize='trigram'" if table == TRIGRAM_TABLE else ""
    expr = (
        "COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || "
        "COALESCE(new.tool_calls, '')"
    )
    return [
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(\n    content{tokenize}\n)",
        f"CREATE TRIGGER IF NOT EXISTS {table}_insert AFTER INSERT ON messages BEGIN\n"
        f"    INSERT INTO {table}(rowid, content) VALUES (\n"
        f"        new.id,\n"
        f"        {expr}\n"
        f"    );\n"
        f"END",
        f"CREATE TRIGGER IF NOT EXISTS {table}_delete AFTER DELETE ON messages BEGIN\n"
        f"    DELETE FROM {table} WHERE rowid = old.id;\n"
        f"END",
        f"CREATE TRIGGER IF NOT EXISTS {table}_update AFTER UPDATE ON messages BEGIN\n"
        f"    DELETE FROM {table} WHERE rowid = old.id;\n"
        f"    INSERT INTO {table}(rowid, content) VALUES (\n"
        f"        new.id,\n"
        f"        {expr}\n"
        f"    );\n"
        f"END",
    ]


FTS_DDL: dict[str, list[str]] = {table: _fts_ddl(table) for table in FTS_TABLES}

#: Every trigger name of ST-5.
TRIGGER_NAMES = tuple(
    f"{table}_{event}" for table in FTS_TABLES for event in ("insert", "delete", "update")
)


def split_statements(sql: str) -> list[str]:
    """Split DDL made only of simple ``;``-terminated statements (no trigger bodies)."""
    return [stmt.strip() for stmt in sql.split(";") if stmt.strip()]
