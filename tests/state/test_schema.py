"""SPEC §2 (ST-1 … ST-7) and UC-2: the on-disk schema is exactly upstream's v16.

The expected DDL below is SPEC ST-1/ST-2/ST-4's v11 text (not the code) plus what
``fixtures/upstream_v16.db`` adds (SPEC's preamble: "the v16 schema is that plus what
upstream_v16.db adds"), executed in a scratch database, so SQLite itself tells us what
``sqlite_master`` must contain.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from hermes_state import SCHEMA_SQL, SCHEMA_VERSION, SessionDB

# ---------------------------------------------------------------- SPEC text (ST-1, ST-2, ST-4)

SPEC_SCHEMA_SQL = """
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

# v16: indexes over columns that reconcile may add, created after it (upstream_v16.db).
SPEC_DEFERRED_INDEXES = """
CREATE INDEX IF NOT EXISTS idx_messages_platform_msg_id ON messages(session_id, platform_message_id)
    WHERE platform_message_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_messages_session_active ON messages(session_id, active, timestamp);
"""

SPEC_TITLE_INDEX = """
CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title_unique
    ON sessions(title) WHERE title IS NOT NULL;
"""

SPEC_FTS = """
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(content);
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts_trigram USING fts5(content, tokenize='trigram');
"""

COMBINED = (
    "COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || "
    "COALESCE(new.tool_calls, '')"
)


def spec_trigger_sql(table: str, event: str) -> str:
    """ST-5's table, written out as SQL."""
    head = {
        "insert": f"CREATE TRIGGER {table}_insert AFTER INSERT ON messages BEGIN",
        "delete": f"CREATE TRIGGER {table}_delete AFTER DELETE ON messages BEGIN",
        "update": f"CREATE TRIGGER {table}_update AFTER UPDATE ON messages BEGIN",
    }[event]
    insert = f"INSERT INTO {table}(rowid, content) VALUES (new.id, {COMBINED});"
    delete = f"DELETE FROM {table} WHERE rowid = old.id;"
    body = {"insert": insert, "delete": delete, "update": delete + " " + insert}[event]
    return f"{head} {body} END"


TRIGGERS = [
    f"{table}_{event}"
    for table in ("messages_fts", "messages_fts_trigram")
    for event in ("insert", "delete", "update")
]
SHADOW = ("data", "idx", "content", "docsize", "config")
INDEXES = (
    "idx_sessions_source",
    "idx_sessions_source_id",
    "idx_sessions_parent",
    "idx_sessions_started",
    "idx_messages_session",
    "idx_compression_locks_expires",
    "idx_messages_platform_msg_id",
    "idx_messages_session_active",
    "idx_sessions_title_unique",
    "sqlite_autoindex_sessions_1",
    "sqlite_autoindex_state_meta_1",
    "sqlite_autoindex_compression_locks_1",
)


def normalize(sql: str | None) -> str | None:
    """Collapse whitespace (and whitespace hugging parentheses) for text comparison."""
    if sql is None:
        return None
    text = " ".join(sql.split())
    return text.replace("( ", "(").replace(" )", ")")


def master(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()
    finally:
        conn.close()


@pytest.fixture
def fresh(db_path: Path) -> Path:
    SessionDB(db_path).close()
    return db_path


@pytest.fixture
def spec_db(tmp_path: Path) -> Path:
    """A database built only from SPEC's DDL text (plus ST-5 triggers as written above)."""
    path = tmp_path / "spec.db"
    conn = sqlite3.connect(path)
    conn.executescript(SPEC_SCHEMA_SQL + SPEC_DEFERRED_INDEXES + SPEC_TITLE_INDEX + SPEC_FTS)
    for name in TRIGGERS:
        table, event = name.rsplit("_", 1)
        conn.execute(spec_trigger_sql(table, event))
    conn.commit()
    conn.close()
    return path


# ---------------------------------------------------------------- ST-1


def test_st1_schema_sql_is_exactly_the_spec_statements():
    def statements(sql: str) -> list[str]:
        return [s.strip() for s in sql.split(";") if s.strip()]

    assert statements(SCHEMA_SQL) == statements(SPEC_SCHEMA_SQL)


def test_st1_schema_sql_runs_on_every_open(db_path: Path):
    SessionDB(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("DROP INDEX idx_sessions_source")
    conn.execute("DROP TABLE state_meta")
    conn.commit()
    conn.close()
    SessionDB(db_path).close()
    names = {row[1] for row in master(db_path)}
    assert {"idx_sessions_source", "state_meta"} <= names


def test_st1_plain_tables_and_indexes_match_spec_ddl(fresh: Path, spec_db: Path):
    ours = {(t, n): (tb, s) for t, n, tb, s in master(fresh) if t in ("table", "index")}
    spec = {(t, n): (tb, s) for t, n, tb, s in master(spec_db) if t in ("table", "index")}
    for key in ["schema_version", "sessions", "messages", "state_meta", "sqlite_sequence",
                "compression_locks"]:
        assert ours[("table", key)] == spec[("table", key)], key
    for name in INDEXES:
        got_tbl, got_sql = ours[("index", name)]
        want_tbl, want_sql = spec[("index", name)]
        assert got_tbl == want_tbl
        assert normalize(got_sql) == normalize(want_sql), name


def test_st1_fresh_sqlite_master_matches_spec_ddl_modulo_whitespace(fresh: Path, spec_db: Path):
    ours = [(t, n, tb, normalize(s)) for t, n, tb, s in master(fresh)]
    spec = [(t, n, tb, normalize(s)) for t, n, tb, s in master(spec_db)]
    assert ours == spec


def test_uc2_fresh_sqlite_master_identical_to_upstream_v16(fresh: Path, upstream_copy):
    upstream = upstream_copy(16)
    # Identical type, name, tbl_name and sql text (rootpage is layout, not schema).
    assert master(fresh) == master(upstream)


# ---------------------------------------------------------------- ST-2


def test_st2_title_unique_index_partial_and_case_sensitive(db: SessionDB):
    for sid in ("a", "b", "c", "d"):
        db.create_session(sid, "cli")
    # NULL titles are unlimited.
    assert db.get_session("a")["title"] is None and db.get_session("b")["title"] is None
    db._conn.execute("UPDATE sessions SET title = 'My Project' WHERE id = 'a'")
    db._conn.execute("UPDATE sessions SET title = 'my project' WHERE id = 'b'")  # case differs
    with pytest.raises(sqlite3.IntegrityError):
        db._conn.execute("UPDATE sessions SET title = 'My Project' WHERE id = 'c'")
    sql = db._conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'idx_sessions_title_unique'"
    ).fetchone()[0]
    assert normalize(sql) == normalize(SPEC_TITLE_INDEX.strip().rstrip(";")).replace(
        " IF NOT EXISTS", ""
    )


def test_st2_duplicate_titles_in_old_db_warn_and_continue(db_path: Path, caplog):
    SessionDB(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("DROP INDEX idx_sessions_title_unique")
    conn.execute("INSERT INTO sessions (id, source, started_at, title) VALUES ('x', 'cli', 1, 'dup')")
    conn.execute("INSERT INTO sessions (id, source, started_at, title) VALUES ('y', 'cli', 2, 'dup')")
    conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('z', 'cli', 3)")
    conn.commit()
    conn.close()
    with caplog.at_level("WARNING"):
        db = SessionDB(db_path)
    try:
        assert any("title" in r.getMessage().lower() for r in caplog.records)
        assert db.session_count() == 3
        # Uniqueness now rests on the pre-check of TI-2.
        with pytest.raises(ValueError, match="already in use"):
            db.set_session_title("z", "dup")
    finally:
        db.close()


# ---------------------------------------------------------------- ST-3


def test_st3_json_columns_use_json_dumps_defaults(db: SessionDB):
    config = {"temperature": 0.5, "name": "café ☕"}
    db.create_session("s", "cli", model_config=config)
    calls = [{"id": "c1", "type": "function", "function": {"name": "web", "arguments": "{\"q\": \"日本\"}"}}]
    details = [{"type": "summary", "text": "naïve"}]
    db.append_message("s", "assistant", content="x", tool_calls=calls, reasoning_details=details,
                      codex_reasoning_items=[{"a": 1}], codex_message_items=[{"b": "é"}])
    row = db._conn.execute("SELECT * FROM messages").fetchone()
    assert db._conn.execute("SELECT model_config FROM sessions").fetchone()[0] == json.dumps(config)
    assert row["tool_calls"] == json.dumps(calls)
    assert "\\u65e5" in row["tool_calls"] and ", " in row["tool_calls"] and ": " in row["tool_calls"]
    assert row["tool_calls"].isascii()
    assert row["reasoning_details"] == json.dumps(details)
    assert row["codex_reasoning_items"] == '[{"a": 1}]'
    assert row["codex_message_items"] == '[{"b": "\\u00e9"}]'


def test_st3_readers_accept_any_valid_json(db: SessionDB):
    db.create_session("s", "cli")
    mid = db.append_message("s", "assistant", content="x")
    compact = '[{"id":"c1","type":"function","function":{"name":"t","arguments":"{}"}}]'
    db._conn.execute("UPDATE messages SET tool_calls = ? WHERE id = ?", (compact, mid))
    assert db.get_messages("s")[0]["tool_calls"][0]["function"]["name"] == "t"


def test_st3_ended_at_null_while_live(db: SessionDB):
    db.create_session("s", "telegram")
    row = db.get_session("s")
    assert row["ended_at"] is None and isinstance(row["started_at"], float)
    db.end_session("s", "session_reset")
    assert isinstance(db.get_session("s")["ended_at"], float)


# ---------------------------------------------------------------- ST-4


def test_st4_fts_tables_inline_rowid_equals_message_id_combined_text(db: SessionDB):
    db.create_session("s", "cli")
    a = db.append_message("s", "user", content="hi")
    b = db.append_message("s", "tool", content="done", tool_name="terminal")
    c = db.append_message("s", "assistant", content=None, tool_calls=[{"id": "1"}])
    for table in ("messages_fts", "messages_fts_trigram"):
        rows = dict(db._conn.execute(f"SELECT rowid, content FROM {table}").fetchall())
        assert rows[a] == "hi  "
        assert rows[b] == "done terminal "
        assert rows[c] == '  [{"id": "1"}]'
        # Inline tables keep their own content table (not external content).
        assert db._conn.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = ?", (f"{table}_content",)
        ).fetchone()[0] == 1


def test_st4_tool_names_and_arguments_searchable(db: SessionDB):
    db.create_session("s", "cli")
    tool = db.append_message("s", "tool", content="ok", tool_name="terminal")
    call = db.append_message(
        "s", "assistant", tool_calls=[{"id": "c", "function": {"name": "web_search", "arguments": '{"q": "zebra"}'}}]
    )
    match = lambda t, q: [r[0] for r in db._conn.execute(f"SELECT rowid FROM {t} WHERE {t} MATCH ?", (q,))]
    assert match("messages_fts", "terminal") == [tool]
    assert match("messages_fts", "zebra") == [call]
    assert match("messages_fts_trigram", "web_search") == [call]


def test_st4_default_tokenizer_and_trigram(db: SessionDB):
    sql = dict(db._conn.execute("SELECT name, sql FROM sqlite_master WHERE type='table'").fetchall())
    assert "tokenize" not in sql["messages_fts"]  # unicode61 default
    assert "tokenize='trigram'" in sql["messages_fts_trigram"]
    db.create_session("s", "cli")
    mid = db.append_message("s", "user", content="Ünïcode WORDS 東京の天気は晴れ")
    assert db._conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'words'").fetchall()[0][0] == mid
    assert db._conn.execute(
        "SELECT rowid FROM messages_fts_trigram WHERE messages_fts_trigram MATCH '天気は'"
    ).fetchall()[0][0] == mid


# ---------------------------------------------------------------- ST-5


def test_st5_six_triggers_exact_names_and_bodies(fresh: Path):
    triggers = {n: s for t, n, tb, s in master(fresh) if t == "trigger"}
    assert sorted(triggers) == sorted(TRIGGERS)
    for name, sql in triggers.items():
        table, event = name.rsplit("_", 1)
        assert normalize(sql) == normalize(spec_trigger_sql(table, event)), name


def test_st5_triggers_keep_both_tables_in_sync(db: SessionDB):
    db.create_session("s", "cli")
    mid = db.append_message("s", "user", content="alpha")

    def fts(table):
        rows = db._conn.execute(f"SELECT content FROM {table} WHERE rowid = ?", (mid,))
        return [tuple(row) for row in rows]

    # AFTER UPDATE on any column: here only tool_name changes.
    db._conn.execute("UPDATE messages SET tool_name = 'grep' WHERE id = ?", (mid,))
    assert fts("messages_fts") == [("alpha grep ",)] and fts("messages_fts_trigram") == [("alpha grep ",)]
    db._conn.execute("UPDATE messages SET content = 'beta' WHERE id = ?", (mid,))
    assert fts("messages_fts") == [("beta grep ",)] and fts("messages_fts_trigram") == [("beta grep ",)]
    db._conn.execute("DELETE FROM messages WHERE id = ?", (mid,))
    assert fts("messages_fts") == [] and fts("messages_fts_trigram") == []


# ---------------------------------------------------------------- ST-6


def test_st6_pragmas_wal_and_foreign_keys(db: SessionDB, db_path: Path):
    assert db._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db._conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db._conn.isolation_level is None
    assert db._conn.row_factory is sqlite3.Row
    db.create_session("s", "cli")
    assert Path(str(db_path) + "-wal").exists()


def test_st6_message_for_unknown_session_raises_integrity_error(db: SessionDB):
    with pytest.raises(sqlite3.IntegrityError):
        db.append_message("missing", "user", content="x")
    assert db.message_count() == 0


def test_st6_unknown_parent_raises_integrity_error_even_with_insert_or_ignore(db: SessionDB):
    with pytest.raises(sqlite3.IntegrityError):
        db.create_session("child", "cli", parent_session_id="nope")
    assert db.get_session("child") is None
    with pytest.raises(sqlite3.IntegrityError):
        db._conn.execute(
            "INSERT OR IGNORE INTO sessions (id, source, started_at, parent_session_id) "
            "VALUES ('c2', 'cli', 1, 'nope')"
        )


# ---------------------------------------------------------------- ST-7


def test_st7_fresh_database_object_inventory(fresh: Path):
    objects = {(t, n) for t, n, tb, s in master(fresh)}
    tables = {"schema_version", "sessions", "messages", "state_meta", "sqlite_sequence"}
    for fts in ("messages_fts", "messages_fts_trigram"):
        tables.add(fts)
        tables.update(f"{fts}_{suffix}" for suffix in SHADOW)
    tables.add("compression_locks")
    expected = (
        {("table", n) for n in tables}
        | {("index", n) for n in INDEXES}
        | {("trigger", n) for n in TRIGGERS}
    )
    assert objects == expected
    conn = sqlite3.connect(fresh)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert SCHEMA_VERSION == 16
    conn.close()
