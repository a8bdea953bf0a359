"""SPEC §3 (MG-1 … MG-7), CO-2 and UC-2/UC-5/UC-9: opening old and newer databases.

Old databases are built by hand here, following the version history of MG-7: the columns each
version had, the title index from v4, the old external-content FTS table over ``content`` with
``'delete'``-command triggers (the layout the published developer guide shows), and from v10
a trigram table indexing content only.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from hermes_state import SCHEMA_SQL, SessionDB
from hermes_state import migrations

# ---------------------------------------------------------------- hand-built old databases

SESSION_COLUMNS = {  # column -> (first version, DDL)
    "id": (1, "id TEXT PRIMARY KEY"),
    "source": (1, "source TEXT NOT NULL"),
    "user_id": (1, "user_id TEXT"),
    "model": (1, "model TEXT"),
    "model_config": (1, "model_config TEXT"),
    "system_prompt": (1, "system_prompt TEXT"),
    "parent_session_id": (1, "parent_session_id TEXT"),
    "started_at": (1, "started_at REAL NOT NULL"),
    "ended_at": (1, "ended_at REAL"),
    "end_reason": (1, "end_reason TEXT"),
    "message_count": (1, "message_count INTEGER DEFAULT 0"),
    "tool_call_count": (1, "tool_call_count INTEGER DEFAULT 0"),
    "input_tokens": (1, "input_tokens INTEGER DEFAULT 0"),
    "output_tokens": (1, "output_tokens INTEGER DEFAULT 0"),
    "title": (3, "title TEXT"),
    "cache_read_tokens": (5, "cache_read_tokens INTEGER DEFAULT 0"),
    "cache_write_tokens": (5, "cache_write_tokens INTEGER DEFAULT 0"),
    "reasoning_tokens": (5, "reasoning_tokens INTEGER DEFAULT 0"),
    "billing_provider": (5, "billing_provider TEXT"),
    "billing_base_url": (5, "billing_base_url TEXT"),
    "billing_mode": (5, "billing_mode TEXT"),
    "estimated_cost_usd": (5, "estimated_cost_usd REAL"),
    "actual_cost_usd": (5, "actual_cost_usd REAL"),
    "cost_status": (5, "cost_status TEXT"),
    "cost_source": (5, "cost_source TEXT"),
    "pricing_version": (5, "pricing_version TEXT"),
    "api_call_count": (8, "api_call_count INTEGER DEFAULT 0"),
    # Present by schema 16 (UC-2); the old files built here are at most v11, so the exact
    # step that added each one does not matter.
    "cwd": (16, "cwd TEXT"),
    "handoff_state": (16, "handoff_state TEXT"),
    "handoff_platform": (16, "handoff_platform TEXT"),
    "handoff_error": (16, "handoff_error TEXT"),
    "rewind_count": (16, "rewind_count INTEGER NOT NULL DEFAULT 0"),
    "archived": (16, "archived INTEGER NOT NULL DEFAULT 0"),
}
MESSAGE_COLUMNS = {
    "id": (1, "id INTEGER PRIMARY KEY AUTOINCREMENT"),
    "session_id": (1, "session_id TEXT NOT NULL REFERENCES sessions(id)"),
    "role": (1, "role TEXT NOT NULL"),
    "content": (1, "content TEXT"),
    "tool_call_id": (1, "tool_call_id TEXT"),
    "tool_calls": (1, "tool_calls TEXT"),
    "tool_name": (1, "tool_name TEXT"),
    "timestamp": (1, "timestamp REAL NOT NULL"),
    "token_count": (1, "token_count INTEGER"),
    "finish_reason": (2, "finish_reason TEXT"),
    "reasoning": (6, "reasoning TEXT"),
    "reasoning_details": (6, "reasoning_details TEXT"),
    "codex_reasoning_items": (6, "codex_reasoning_items TEXT"),
    "reasoning_content": (7, "reasoning_content TEXT"),
    "codex_message_items": (9, "codex_message_items TEXT"),
    "platform_message_id": (16, "platform_message_id TEXT"),
    "observed": (16, "observed INTEGER DEFAULT 0"),
    "active": (12, "active INTEGER NOT NULL DEFAULT 1"),
}
#: What a column added by reconcile reads in an existing row (its declared default).
ADDED_DEFAULTS = {"rewind_count": 0, "archived": 0, "observed": 0, "active": 1}

OLD_FTS = """
CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=id);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
"""
OLD_TRIGRAM = """
CREATE VIRTUAL TABLE messages_fts_trigram USING fts5(content, tokenize='trigram');
CREATE TRIGGER messages_fts_trigram_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts_trigram(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_fts_trigram_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts_trigram WHERE rowid = old.id;
END;
CREATE TRIGGER messages_fts_trigram_update AFTER UPDATE ON messages BEGIN
    DELETE FROM messages_fts_trigram WHERE rowid = old.id;
    INSERT INTO messages_fts_trigram(rowid, content) VALUES (new.id, new.content);
END;
"""

SESSIONS = [
    {"id": "root", "source": "cli", "model": "m1", "started_at": 1000.0, "ended_at": 2000.0,
     "end_reason": "compression", "message_count": 3, "tool_call_count": 1, "input_tokens": 7},
    {"id": "tip", "source": "cli", "model": "m1", "parent_session_id": "root",
     "started_at": 2000.0, "message_count": 1},
    {"id": "tg", "source": "telegram", "user_id": "u9", "started_at": 3000.0,
     "model_config": '{"t": 1}', "system_prompt": "be nice", "message_count": 2},
]
CALLS = json.dumps([{"id": "c1", "type": "function",
                     "function": {"name": "web_search", "arguments": "{\"q\": \"zebra\"}"}}])
MESSAGES = [
    {"session_id": "root", "role": "user", "content": "please run the build", "timestamp": 1001.0},
    {"session_id": "root", "role": "assistant", "content": None, "tool_calls": CALLS, "timestamp": 1002.0},
    {"session_id": "root", "role": "tool", "content": "build ok", "tool_name": "terminal",
     "tool_call_id": "c1", "timestamp": 1003.0},
    {"session_id": "tip", "role": "user", "content": "桂林山水甲天下", "timestamp": 2001.0},
    {"session_id": "tg", "role": "user", "content": "東京の天気はどうですか", "timestamp": 3001.0},
    {"session_id": "tg", "role": "assistant", "content": "오늘 날씨는 맑습니다", "timestamp": 3002.0},
]


def build_old_db(path: Path, version: int, *, fts: bool = True, skip: tuple[str, ...] = (),
                 trigram_external: bool = False) -> None:
    """A database shaped like upstream schema ``version`` with SESSIONS and MESSAGES in it."""
    conn = sqlite3.connect(path)
    scols = [c for c, (v, _) in SESSION_COLUMNS.items() if v <= version and c not in skip]
    mcols = [c for c, (v, _) in MESSAGE_COLUMNS.items() if v <= version and c not in skip]
    sdefs = ",\n    ".join(SESSION_COLUMNS[c][1] for c in scols)
    mdefs = ",\n    ".join(MESSAGE_COLUMNS[c][1] for c in mcols)
    conn.executescript(
        f"""
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        CREATE TABLE sessions (
            {sdefs},
            FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
        );
        CREATE TABLE messages (
            {mdefs}
        );
        CREATE INDEX idx_sessions_source ON sessions(source);
        CREATE INDEX idx_sessions_parent ON sessions(parent_session_id);
        CREATE INDEX idx_sessions_started ON sessions(started_at DESC);
        CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
        """
    )
    if version >= 7:
        conn.execute("CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT)")
    if version >= 4 and "title" in scols:
        conn.execute(
            "CREATE UNIQUE INDEX idx_sessions_title_unique ON sessions(title) WHERE title IS NOT NULL"
        )
    if fts:
        conn.executescript(OLD_FTS)
        if version >= 10:
            script = OLD_TRIGRAM
            if trigram_external:
                script = script.replace(
                    "fts5(content, tokenize='trigram')",
                    "fts5(content, content=messages, content_rowid=id, tokenize='trigram')",
                ).replace(
                    "DELETE FROM messages_fts_trigram WHERE rowid = old.id;",
                    "INSERT INTO messages_fts_trigram(messages_fts_trigram, rowid, content) "
                    "VALUES('delete', old.id, old.content);",
                )
            conn.executescript(script)
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    for row in SESSIONS:
        row = {k: v for k, v in row.items() if k in scols}
        if "title" in scols and row["id"] == "tg":
            row["title"] = "weather chat"
        conn.execute(
            f"INSERT INTO sessions ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
            list(row.values()),
        )
    for row in MESSAGES:
        row = {k: v for k, v in row.items() if k in mcols}
        conn.execute(
            f"INSERT INTO messages ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
            list(row.values()),
        )
    conn.commit()
    conn.close()


def dump(path: Path) -> tuple[list[dict], list[dict]]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        sessions = [dict(r) for r in conn.execute("SELECT * FROM sessions ORDER BY id")]
        messages = [dict(r) for r in conn.execute("SELECT * FROM messages ORDER BY id")]
        return sessions, messages
    finally:
        conn.close()


def master(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()
    finally:
        conn.close()


def fts_ids(conn, table: str, query: str) -> list[int]:
    return [r[0] for r in conn.execute(
        f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid", (query,))]


def assert_fully_migrated(path: Path, before: tuple[list[dict], list[dict]]) -> None:
    """Every old row and value survives, new columns exist, both FTS tables index everything."""
    sessions_before, messages_before = before
    sessions_after, messages_after = dump(path)
    assert len(sessions_after) == len(sessions_before)
    assert len(messages_after) == len(messages_before)
    for old, new in zip(sessions_before, sessions_after):
        assert {k: new[k] for k in old} == old
        assert set(new) == set(SESSION_COLUMNS)
        assert new["api_call_count"] == (old.get("api_call_count") or 0)
    for old, new in zip(messages_before, messages_after):
        assert {k: new[k] for k in old} == old
        assert set(new) == set(MESSAGE_COLUMNS)
        for column in MESSAGE_COLUMNS:
            if column not in old:
                assert new[column] == ADDED_DEFAULTS.get(column)
    for old, new in zip(sessions_before, sessions_after):
        for column in SESSION_COLUMNS:
            if column not in old and column in ADDED_DEFAULTS:
                assert new[column] == ADDED_DEFAULTS.get(column), column
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(16,)]
        total = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        for table in ("messages_fts", "messages_fts_trigram"):
            assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == total
            conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
        by_content = {m["content"]: m["id"] for m in messages_after}
        tool_msg = next(m["id"] for m in messages_after if m["tool_name"] == "terminal")
        call_msg = next(m["id"] for m in messages_after if m["tool_calls"])
        # Tool names and tool-call arguments are searchable after the v11 rebuild.
        assert fts_ids(conn, "messages_fts", "terminal") == [tool_msg]
        assert fts_ids(conn, "messages_fts", "zebra") == [call_msg]
        assert fts_ids(conn, "messages_fts_trigram", "web_search") == [call_msg]
        assert fts_ids(conn, "messages_fts", "build") == sorted(
            [by_content["please run the build"], by_content["build ok"]])
        assert fts_ids(conn, "messages_fts_trigram", "桂林山") == [by_content["桂林山水甲天下"]]
        assert fts_ids(conn, "messages_fts_trigram", "東京の天気") == [by_content["東京の天気はどうですか"]]
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def search_available() -> bool:
    try:
        import hermes_state.search  # noqa: F401
    except ImportError:
        return False
    return True


def assert_search_messages(path: Path) -> None:
    if not search_available():
        return
    db = SessionDB(path)
    try:
        hits = db.search_messages("terminal")
        assert [h["tool_name"] for h in hits] == ["terminal"]
        assert len(db.search_messages("zebra")) == 1
        assert [h["session_id"] for h in db.search_messages("桂林")] == ["tip"]
        assert [h["session_id"] for h in db.search_messages("東京の天気")] == ["tg"]
    finally:
        db.close()


# ---------------------------------------------------------------- MG-7 version history


@pytest.mark.parametrize("version", range(1, 11))
def test_mg7_every_historical_version_upgrades_without_loss(tmp_path: Path, version: int):
    path = tmp_path / "state.db"
    build_old_db(path, version)
    before = dump(path)
    db = SessionDB(path)
    try:
        assert db.opened_version == version
        assert db.message_count() == len(MESSAGES)
        assert db.session_count() == len(SESSIONS)
    finally:
        db.close()
    assert_fully_migrated(path, before)
    assert_search_messages(path)


def test_mg7_spec_example_hand_built_v2_without_fts(tmp_path: Path):
    path = tmp_path / "state.db"
    build_old_db(path, 2, fts=False)
    before = dump(path)
    db = SessionDB(path)
    try:
        assert db.get_session("tg")["title"] is None
        assert db.get_session("tg")["api_call_count"] == 0
        assert db.set_session_title("tg", "now titled") is True
        assert db.get_session_title("tg") == "now titled"
    finally:
        db.close()
    sessions_after, _ = dump(path)
    # The title we set is the only difference.
    before[0][[s["id"] for s in before[0]].index("tg")]["title"] = "now titled"
    assert_fully_migrated(path, before)
    assert_search_messages(path)


def test_mg7_v10_with_external_content_tables_and_delete_command_triggers(tmp_path: Path):
    path = tmp_path / "state.db"
    build_old_db(path, 10, trigram_external=True)
    before = dump(path)
    SessionDB(path).close()
    assert_fully_migrated(path, before)
    conn = sqlite3.connect(path)
    sql = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type IN ('table','trigger')"))
    conn.close()
    assert "content=messages" not in sql["messages_fts"]
    assert "'delete'" not in sql["messages_fts_delete"]
    assert "'delete'" not in sql["messages_fts_trigram_update"]
    assert_search_messages(path)


# ---------------------------------------------------------------- MG-1


def test_mg1_initialisation_order_reconcile_before_migration(tmp_path: Path):
    """A v1 file has no ``title``: the title index (step 4) can only be created because
    reconcile (step 2) added the column first; FTS tables exist at the end (steps 3/5)."""
    path = tmp_path / "state.db"
    build_old_db(path, 1)
    SessionDB(path).close()
    names = {row[1] for row in master(path)}
    assert "idx_sessions_title_unique" in names
    assert {"messages_fts", "messages_fts_trigram", "state_meta"} <= names


def test_mg1_fts_probe_recreates_missing_table_and_triggers(db_path: Path):
    SessionDB(db_path).close()
    conn = sqlite3.connect(db_path)
    for event in ("insert", "delete", "update"):
        conn.execute(f"DROP TRIGGER messages_fts_trigram_{event}")
    conn.execute("DROP TABLE messages_fts_trigram")
    conn.commit()
    conn.close()
    db = SessionDB(db_path)
    try:
        db.create_session("s", "cli")
        mid = db.append_message("s", "user", content="recreated trigram")
        assert fts_ids(db._conn, "messages_fts_trigram", "created") == [mid]
    finally:
        db.close()
    triggers = {r[1] for r in master(db_path) if r[0] == "trigger"}
    assert len(triggers) == 6


def test_mg1_initialisation_commits(db_path: Path):
    db = SessionDB(db_path)
    try:
        assert not db._conn.in_transaction
        other = sqlite3.connect(db_path)
        assert other.execute("SELECT version FROM schema_version").fetchall() == [(16,)]
        other.close()
    finally:
        db.close()


# ---------------------------------------------------------------- MG-2


@pytest.mark.parametrize("version", [1, 7, 10, 11])
def test_mg2_opening_twice_changes_nothing(tmp_path: Path, version: int):
    path = tmp_path / "state.db"
    if version == 11:
        db = SessionDB(path)
        db.create_session("s", "cli")
        db.append_message("s", "tool", content="x", tool_name="terminal")
        db.close()
    else:
        build_old_db(path, version)
    SessionDB(path).close()
    schema_once = master(path)
    rows_once = dump(path)
    conn = sqlite3.connect(path)
    fts_once = [conn.execute(f"SELECT rowid, content FROM {t} ORDER BY rowid").fetchall()
                for t in ("messages_fts", "messages_fts_trigram")]
    conn.close()
    SessionDB(path).close()
    assert master(path) == schema_once
    assert dump(path) == rows_once
    conn = sqlite3.connect(path)
    fts_twice = [conn.execute(f"SELECT rowid, content FROM {t} ORDER BY rowid").fetchall()
                 for t in ("messages_fts", "messages_fts_trigram")]
    conn.close()
    assert fts_twice == fts_once


# ---------------------------------------------------------------- MG-3


def test_mg3_parse_schema_columns_examples():
    cols = SessionDB._parse_schema_columns(SCHEMA_SQL)
    assert set(cols) == {"schema_version", "sessions", "messages", "state_meta", "compression_locks"}
    assert cols["compression_locks"] == {
        "session_id": "TEXT", "holder": "TEXT NOT NULL",
        "acquired_at": "REAL NOT NULL", "expires_at": "REAL NOT NULL",
    }
    assert cols["messages"]["active"] == "INTEGER NOT NULL DEFAULT 1"
    assert cols["sessions"]["archived"] == "INTEGER NOT NULL DEFAULT 0"
    assert cols["sessions"]["id"] == "TEXT"
    assert cols["sessions"]["source"] == "TEXT NOT NULL"
    assert cols["sessions"]["message_count"] == "INTEGER DEFAULT 0"
    assert cols["messages"]["session_id"] == "TEXT NOT NULL"
    assert cols["schema_version"]["version"] == "INTEGER NOT NULL"
    assert cols["messages"]["id"] == "INTEGER"  # primary key: no NOT NULL
    assert set(cols["sessions"]) == set(SESSION_COLUMNS)
    assert set(cols["messages"]) == set(MESSAGE_COLUMNS)


def test_mg3_parse_uses_sqlite_not_regex():
    ddl = """
    CREATE TABLE IF NOT EXISTS t (
        "a,b" TEXT DEFAULT 'x, y',  -- a comment, with a comma
        c INTEGER NOT NULL DEFAULT (3),
        /* block, comment */ d REAL
    );
    """
    assert SessionDB._parse_schema_columns(ddl) == {
        "t": {"a,b": "TEXT DEFAULT 'x, y'", "c": "INTEGER NOT NULL DEFAULT 3", "d": "REAL"}
    }


# ---------------------------------------------------------------- MG-4


def test_mg4_reconcile_adds_missing_columns_keeps_extra(db_path: Path):
    conn = sqlite3.connect(db_path)
    conn.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL,"
        " parent_session_id TEXT, legacy_extra TEXT);"
        "INSERT INTO sessions VALUES ('s', 'cli', 5.0, NULL, 'keep me');"
    )
    conn.commit()
    conn.close()
    db = SessionDB(db_path)
    try:
        row = db.get_session("s")
        assert row["legacy_extra"] == "keep me"
        assert row["message_count"] == 0 and row["title"] is None
        columns = [r[1] for r in db._conn.execute("PRAGMA table_info(sessions)")]
        db._reconcile_columns(db._conn.cursor())  # nothing left to add: a no-op
        assert [r[1] for r in db._conn.execute("PRAGMA table_info(sessions)")] == columns
        assert columns[:5] == ["id", "source", "started_at", "parent_session_id", "legacy_extra"]
        assert set(columns) == set(SESSION_COLUMNS) | {"legacy_extra"}
    finally:
        db.close()


def test_mg4_reconcile_runs_regardless_of_version_old_v7(tmp_path: Path):
    path = tmp_path / "state.db"
    build_old_db(path, 7, skip=("reasoning_content",))  # an "old v7" that skipped a migration
    before = dump(path)
    SessionDB(path).close()
    assert_fully_migrated(path, before)
    _, messages = dump(path)
    assert all(m["reasoning_content"] is None for m in messages)


def test_mg4_reconcile_on_v11_file_missing_a_column(db_path: Path):
    SessionDB(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("ALTER TABLE messages DROP COLUMN codex_message_items")
    conn.commit()
    conn.close()
    db = SessionDB(db_path)
    try:
        db.create_session("s", "cli")
        db.append_message("s", "assistant", content="x", codex_message_items=[1])
        assert db.get_messages("s")[0]["codex_message_items"] == "[1]"
    finally:
        db.close()


def test_mg4_reconcile_quotes_identifiers_and_ignores_failures(caplog):
    conn = sqlite3.connect(":memory:")
    conn.execute('CREATE TABLE "we""ird" (a TEXT)')
    conn.execute("CREATE TABLE t (a TEXT)")
    conn.execute("INSERT INTO t VALUES ('row')")
    declared = {
        'we"ird': {"a": "TEXT", 'col"q': "TEXT DEFAULT 'z'"},
        "t": {"a": "TEXT", "must": "TEXT NOT NULL", "fine": "INTEGER DEFAULT 0"},
    }
    with caplog.at_level(logging.DEBUG, logger="hermes_state"):
        migrations.reconcile_columns(conn.cursor(), declared)
    assert [r[1] for r in conn.execute('PRAGMA table_info("we""ird")')] == ["a", 'col"q']
    # NOT NULL without a default cannot be added: logged at debug, skipped, others still added.
    assert [r[1] for r in conn.execute("PRAGMA table_info(t)")] == ["a", "fine"]
    assert any(r.levelno == logging.DEBUG for r in caplog.records)


def test_mg4_public_reconcile_method_on_cursor(db_path: Path):
    db = SessionDB(db_path)
    try:
        db._conn.execute("CREATE TABLE scratch (x INTEGER)")  # not declared: untouched
        db._conn.execute("ALTER TABLE state_meta DROP COLUMN value")
        db._reconcile_columns(db._conn.cursor())
        cols = [r[1] for r in db._conn.execute("PRAGMA table_info(state_meta)")]
        assert cols == ["key", "value"]
        assert [r[1] for r in db._conn.execute("PRAGMA table_info(scratch)")] == ["x"]
    finally:
        db.close()


# ---------------------------------------------------------------- MG-5


def test_mg5_empty_schema_version_inserts_16_and_runs_no_data_migration(db_path: Path):
    conn = sqlite3.connect(db_path)
    conn.executescript(SCHEMA_SQL)
    conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('s', 'cli', 1)")
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s','user','x',1)")
    conn.commit()
    conn.close()
    SessionDB(db_path).close()
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(16,)]
    # FTS tables are created fresh in MG-1 step 5, with no backfill.
    assert conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM messages_fts_trigram").fetchone()[0] == 0
    conn.close()


def test_mg5_v9_gets_trigram_and_v11_rebuild(tmp_path: Path):
    path = tmp_path / "state.db"
    build_old_db(path, 9)
    before = dump(path)
    db = SessionDB(path)
    db.close()
    assert_fully_migrated(path, before)
    triggers = {r[1]: r[3] for r in master(path) if r[0] == "trigger"}
    assert len(triggers) == 6
    assert all("new.tool_name" in sql for name, sql in triggers.items() if not name.endswith("_delete"))


def test_mg5_v10_content_only_trigram_rebuilt_with_tool_text(tmp_path: Path):
    path = tmp_path / "state.db"
    build_old_db(path, 10)
    conn = sqlite3.connect(path)
    assert fts_ids(conn, "messages_fts_trigram", "terminal") == []  # content only before
    conn.close()
    SessionDB(path).close()
    conn = sqlite3.connect(path)
    assert len(fts_ids(conn, "messages_fts_trigram", "terminal")) == 1
    conn.close()


def test_mg5_v11_is_not_rebuilt(db_path: Path):
    db = SessionDB(db_path)
    db.create_session("s", "cli")
    db.close()
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO messages_fts(rowid, content) VALUES (424242, 'sentinel')")
    conn.commit()
    conn.close()
    SessionDB(db_path).close()
    conn = sqlite3.connect(db_path)
    assert fts_ids(conn, "messages_fts", "sentinel") == [424242]
    conn.close()


# ---------------------------------------------------------------- MG-6


def test_mg6_column_additions_not_version_gated_data_migrations_are(db_path: Path):
    SessionDB(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("ALTER TABLE sessions DROP COLUMN api_call_count")
    conn.execute("INSERT INTO messages_fts(rowid, content) VALUES (777, 'stale')")
    conn.commit()
    conn.close()
    SessionDB(db_path).close()
    conn = sqlite3.connect(db_path)
    assert "api_call_count" in [r[1] for r in conn.execute("PRAGMA table_info(sessions)")]
    assert fts_ids(conn, "messages_fts", "stale") == [777]  # no rebuild at version 16
    conn.close()


# ---------------------------------------------------------------- CO-2


def test_uc5_store_at_17_to_30_written_in_place_without_any_ddl(tmp_path: Path, caplog):
    """CO-2/UC-5: a v20 store keeps its version and shape -- no reconcile (a column it lacks
    is not added), no index or table created, no FTS rebuild -- and takes writes."""
    path = tmp_path / "state.db"
    SessionDB(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = 20")
    conn.execute("ALTER TABLE sessions ADD COLUMN future_col TEXT DEFAULT 'f'")
    conn.execute("ALTER TABLE sessions DROP COLUMN handoff_error")  # a declared column it lacks
    conn.execute("DROP INDEX idx_sessions_source_id")
    conn.execute("DROP TABLE compression_locks")
    conn.execute("CREATE TABLE future_table (x)")
    conn.execute("INSERT INTO future_table VALUES (1)")
    conn.execute("INSERT INTO messages_fts(rowid, content) VALUES (555, 'untouched')")
    conn.commit()
    conn.close()
    schema_before = master(path)
    with caplog.at_level(logging.WARNING):
        db = SessionDB(path)
    try:
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert db.opened_version == 20 and db.warnings == []
        assert db.capabilities.version_class == "in_place"
        assert not db.capabilities.has_session_column("handoff_error")
        db.create_session("s", "cli")  # inserts omitting the new column stay valid
        db.append_message("s", "user", content="hello")
        assert db.get_session("s")["future_col"] == "f"
        assert db.set_session_archived("s", True) is True
    finally:
        db.close()
    assert master(path) == schema_before
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(20,)]
    assert conn.execute("SELECT x FROM future_table").fetchall() == [(1,)]
    assert fts_ids(conn, "messages_fts", "untouched") == [555]
    conn.close()


@pytest.mark.parametrize("version", [12, 15])
def test_uc2_store_at_12_to_15_is_brought_to_16(tmp_path: Path, version: int):
    """UC-2: like upstream, a writable open reconciles a v12-v15 store and runs the v16
    delegate-marker backfill; no FTS rebuild (the layout is already inline)."""
    path = tmp_path / "state.db"
    SessionDB(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"UPDATE schema_version SET version = {version}")
    conn.execute("ALTER TABLE sessions DROP COLUMN archived")
    conn.execute("DROP INDEX idx_messages_session_active")
    conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('p', 'cli', 1)")
    conn.execute("INSERT INTO sessions (id, source, started_at, parent_session_id) VALUES ('d', 'cli', 2, 'p')")
    conn.execute("INSERT INTO messages_fts(rowid, content) VALUES (555, 'untouched')")
    conn.commit()
    conn.close()
    db = SessionDB(path)
    try:
        assert db.opened_version == version
        assert db.capabilities.has_archived and db.capabilities.version_class == "current"
        assert json.loads(db.get_session("d")["model_config"]) == {"_delegate_from": "p"}
        assert [row["id"] for row in db.list_sessions_rich()] == ["p"]
    finally:
        db.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(16,)]
    assert "idx_messages_session_active" in {r[1] for r in master(path)}
    assert fts_ids(conn, "messages_fts", "untouched") == [555]
    conn.close()
