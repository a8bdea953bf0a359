"""SPEC §1 (CO-3 … CO-9): the compatibility surface upstream's code and tests rely on, the
database location rules, and the read-only mode."""

from __future__ import annotations

import hashlib
import inspect
import sqlite3
import threading
from pathlib import Path

import pytest

import hermes_state
from hermes_state import SCHEMA_SQL, SCHEMA_VERSION, SessionDB
from hermes_state.listing import ListQuery


def search_available() -> bool:
    try:
        import hermes_state.search  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------- CO-3


def test_co3_module_exports():
    assert inspect.isclass(hermes_state.SessionDB)
    assert isinstance(SCHEMA_SQL, str) and "CREATE TABLE IF NOT EXISTS sessions" in SCHEMA_SQL
    assert SCHEMA_VERSION == 16 and isinstance(SCHEMA_VERSION, int)  # UC-2
    assert isinstance(hermes_state.DEFAULT_DB_PATH, Path)
    for name in ("SessionDB", "SCHEMA_SQL", "SCHEMA_VERSION"):
        assert name in hermes_state.__all__


def test_co3_default_db_path_computed_when_read(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "one"))
    assert hermes_state.DEFAULT_DB_PATH == tmp_path / "one" / "state.db"
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "two"))
    assert hermes_state.DEFAULT_DB_PATH == tmp_path / "two" / "state.db"


# ---------------------------------------------------------------- CO-4


def test_co4_class_constants():
    assert SessionDB._WRITE_MAX_RETRIES == 15
    assert SessionDB._WRITE_RETRY_MIN_S == 0.020
    assert SessionDB._WRITE_RETRY_MAX_S == 0.150
    assert SessionDB._CHECKPOINT_EVERY_N_WRITES == 50
    assert SessionDB.MAX_TITLE_LENGTH == 100


@pytest.mark.parametrize("name", ["sanitize_title", "_parse_schema_columns"])
def test_co4_static_helpers_are_staticmethods(name):
    assert isinstance(inspect.getattr_static(SessionDB, name), staticmethod)


def test_co4_static_helpers_callable_on_class():
    assert SessionDB.sanitize_title("  a  b ") == "a b"
    assert "sessions" in SessionDB._parse_schema_columns(SCHEMA_SQL)


def test_co4_search_helpers_callable_on_class():
    if not search_available():
        pytest.skip("hermes_state.search is not available yet")
    for name in ("_sanitize_fts5_query", "_contains_cjk", "_is_cjk_codepoint"):
        assert isinstance(inspect.getattr_static(SessionDB, name), staticmethod), name
    assert isinstance(inspect.getattr_static(SessionDB, "_count_cjk"), (staticmethod, classmethod))
    assert SessionDB._contains_cjk("hello 世界") is True
    assert SessionDB._contains_cjk("hello") is False
    assert SessionDB._count_cjk("日本語abc") == 3
    assert SessionDB._is_cjk_codepoint(ord("中")) is True
    assert SessionDB._is_cjk_codepoint(ord("a")) is False
    assert isinstance(SessionDB._sanitize_fts5_query("hello world"), str)


def test_co4_conn_settings(db: SessionDB, db_path: Path):
    conn = db._conn
    assert isinstance(conn, sqlite3.Connection)
    assert conn.isolation_level is None
    assert conn.row_factory is sqlite3.Row
    # check_same_thread=False: usable from another thread.
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("n", conn.execute("SELECT 1").fetchone()[0]))
    thread.start()
    thread.join(10)
    assert result == {"n": 1}
    # Raw UPDATEs between API calls; .commit() is a harmless no-op in autocommit.
    db.create_session("s", "cli")
    conn.execute("UPDATE sessions SET title = 'raw' WHERE id = 's'")
    conn.commit()
    other = sqlite3.connect(db_path)
    assert other.execute("SELECT title FROM sessions").fetchone()[0] == "raw"
    other.close()


def test_co4_execute_write_and_reconcile_exist(db: SessionDB):
    assert db._execute_write(lambda conn: conn.execute("SELECT 7").fetchone()[0]) == 7
    db._reconcile_columns(db._conn.cursor())


def test_co4_db_path_is_resolved_path(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = SessionDB("relative.db")
    try:
        assert isinstance(db.db_path, Path)
        assert db.db_path.resolve() == (tmp_path / "relative.db").resolve()
    finally:
        db.close()


def test_co4_constructor_source_mentions_30_s_default():
    assert "30" in inspect.getsource(SessionDB.__init__)


# ---------------------------------------------------------------- CO-5, CO-6


def test_co5_hermes_home_stripped(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("HERMES_HOME", f"  {tmp_path / 'home'}\n\t")
    db = SessionDB()
    try:
        assert db.db_path == tmp_path / "home" / "state.db"
        assert db.db_path.exists()
    finally:
        db.close()


@pytest.mark.parametrize("value", [None, "", "   "])
def test_co5_unset_or_blank_means_home_dot_hermes(monkeypatch, tmp_path: Path, value):
    monkeypatch.setenv("HOME", str(tmp_path))
    if value is None:
        monkeypatch.delenv("HERMES_HOME", raising=False)
    else:
        monkeypatch.setenv("HERMES_HOME", value)
    assert hermes_state.default_db_path() == tmp_path / ".hermes" / "state.db"
    db = SessionDB()
    try:
        assert db.db_path == tmp_path / ".hermes" / "state.db"
    finally:
        db.close()


def test_co5_no_tilde_expansion(monkeypatch, tmp_path: Path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "realhome"))
    monkeypatch.setenv("HERMES_HOME", "~/hh")
    db = SessionDB()
    try:
        assert db.db_path == Path("~/hh/state.db")
        assert (tmp_path / "~" / "hh" / "state.db").exists()
        assert not (tmp_path / "realhome").exists()
    finally:
        db.close()


def test_co5_sessions_dir_beside_db(monkeypatch, tmp_path: Path):
    from hermes_state.paths import sessions_dir

    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    assert sessions_dir() == tmp_path / "sessions"


def test_co6_home_set_after_import_and_parent_created(monkeypatch, tmp_path: Path):
    target = tmp_path / "deep" / "er" / "home"
    monkeypatch.setenv("HERMES_HOME", str(target))
    db = SessionDB(db_path=None)
    try:
        assert db.db_path == target / "state.db" and db.db_path.exists()
    finally:
        db.close()


def test_co6_explicit_path_wins_and_str_accepted(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "ignored"))
    explicit = tmp_path / "a" / "b" / "mine.db"
    db = SessionDB(str(explicit))
    try:
        assert db.db_path == explicit and explicit.exists()
        assert not (tmp_path / "ignored").exists()
    finally:
        db.close()


# ---------------------------------------------------------------- CO-7


def test_co7_sqlite_features_present_and_checked(monkeypatch, db_path: Path):
    import hermes_state.db as dbmod

    probe = sqlite3.connect(":memory:")
    probe.execute("CREATE VIRTUAL TABLE t USING fts5(c, tokenize='trigram')")
    probe.close()
    monkeypatch.setattr(dbmod.sqlite3, "sqlite_version_info", (3, 31, 1))
    monkeypatch.setattr(dbmod.sqlite3, "sqlite_version", "3.31.1")
    with pytest.raises(Exception) as info:
        SessionDB(db_path)
    assert "trigram" in str(info.value) or "3.34" in str(info.value)


# ---------------------------------------------------------------- CO-8


def test_co8_no_extra_tables_triggers_or_meta_keys(db: SessionDB, tmp_path: Path):
    db.create_session("p", "cli")
    db.append_message("p", "user", content="x", tool_calls=[{"id": 1}])
    db.set_session_title("p", "t")
    db.update_token_counts("p", input_tokens=3)
    db.end_session("p", "compression")
    db.create_session("c", "cli", parent_session_id="p")
    db.replace_messages("c", [{"role": "user", "content": "y"}])
    db.list_sessions_rich()
    db.lineage_tree("c")
    db.maybe_auto_prune_and_vacuum()
    db.delete_session("p", sessions_dir=tmp_path)
    objects = {(r[0], r[1]) for r in db._conn.execute("SELECT type, name FROM sqlite_master")}
    tables = {n for t, n in objects if t == "table"}
    base = {"schema_version", "sessions", "messages", "state_meta", "sqlite_sequence",
            "compression_locks"}  # v16 (UC-2)
    fts = {f"{t}{s}" for t in ("messages_fts", "messages_fts_trigram")
           for s in ("", "_data", "_idx", "_content", "_docsize", "_config")}
    assert tables == base | fts
    triggers = {n for t, n in objects if t == "trigger"}
    assert triggers == {f"{t}_{e}" for t in ("messages_fts", "messages_fts_trigram")
                        for e in ("insert", "delete", "update")}
    keys = [r[0] for r in db._conn.execute("SELECT key FROM state_meta")]
    assert all(k == "last_auto_prune" or k.startswith("hsb.") for k in keys)


# ---------------------------------------------------------------- CO-9 read-only mode


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_co9_read_only_missing_file_never_created(tmp_path: Path):
    missing = tmp_path / "nowhere" / "state.db"
    with pytest.raises(hermes_state.DatabaseError) as info:
        SessionDB(missing, read_only=True)
    assert str(missing) in str(info.value)
    assert "\n" not in str(info.value)
    assert not missing.exists() and not missing.parent.exists()


def test_co9_read_only_not_a_database(tmp_path: Path):
    bogus = tmp_path / "state.db"
    bogus.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(hermes_state.DatabaseError) as info:
        SessionDB(bogus, read_only=True)
    assert str(bogus) in str(info.value)
    assert bogus.read_bytes() == b"this is not sqlite at all" * 100


def build_v7(path: Path) -> None:
    """A small upstream-v7-shaped file: no api_call_count / codex_message_items, external FTS."""
    conn = sqlite3.connect(path)
    ddl = SCHEMA_SQL.replace("    api_call_count INTEGER DEFAULT 0,\n", "").replace(
        ",\n    codex_message_items TEXT", "")
    conn.executescript(ddl)
    conn.executescript(
        "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=id);"
        "CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN "
        "INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); END;"
    )
    conn.execute("INSERT INTO schema_version VALUES (7)")
    conn.execute("INSERT INTO sessions (id, source, started_at, title) VALUES ('old', 'cli', 100, 'kept')")
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('old', 'user', 'hello v7', 101)")
    conn.commit()
    conn.close()


def test_co9_read_only_never_migrates(tmp_path: Path):
    path = tmp_path / "state.db"
    build_v7(path)
    conn = sqlite3.connect(path)
    master_before = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    conn.close()
    digest = sha(path)
    db = SessionDB(path, read_only=True)
    try:
        assert db.opened_version == 7
        assert [r["id"] for r in db.list_sessions_rich()] == ["old"]
        assert db.get_messages("old")[0]["content"] == "hello v7"
        assert db.get_session("old")["title"] == "kept"
        assert db.message_count() == 1
    finally:
        db.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall() == master_before
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(7,)]
    conn.close()
    assert sha(path) == digest


def test_co9_read_only_upstream_v7_fixture_stays_v7(upstream_copy):
    path = upstream_copy(7)
    digest = sha(path)
    db = SessionDB(path, read_only=True)
    try:
        assert db.opened_version == 7
        assert db.message_count() == 21
        assert len(db.list_sessions_rich()) == 4
    finally:
        db.close()
    assert sha(path) == digest


def test_co9_read_only_every_mutating_method_raises(db_path: Path, tmp_path: Path):
    writer = SessionDB(db_path)
    writer.create_session("s", "cli")
    writer.append_message("s", "user", content="x")
    writer.close()
    digest = sha(db_path)
    db = SessionDB(db_path, read_only=True)
    try:
        mutations = [
            lambda: db.create_session("n", "cli"),
            lambda: db.ensure_session("n"),
            lambda: db.end_session("s", "user_exit"),
            lambda: db.reopen_session("s"),
            lambda: db.update_system_prompt("s", "p"),
            lambda: db.update_token_counts("s", input_tokens=1),
            lambda: db.set_meta("k", "v"),
            lambda: db.append_message("s", "user", content="y"),
            lambda: db.replace_messages("s", []),
            lambda: db.clear_messages("s"),
            lambda: db.set_session_title("s", "t"),
            lambda: db.delete_session("s"),
            lambda: db.prune_sessions(older_than_days=0),
            lambda: db.vacuum(),
            lambda: db._execute_write(lambda conn: None),
        ]
        for mutate in mutations:
            with pytest.raises(Exception):
                mutate()
        with pytest.raises(sqlite3.OperationalError):
            db._conn.execute("DELETE FROM sessions")  # mode=ro at the SQLite level too
        assert "error" in db.maybe_auto_prune_and_vacuum()  # never raises, reports
        assert db.message_count() == 1 and db.get_session("s")["ended_at"] is None
    finally:
        db.close()
    assert sha(db_path) == digest


def exercise_reads(db: SessionDB) -> None:
    """Every read a viewer makes; none may fail on an old file opened read-only."""
    rows = db.list_sessions_rich(include_children=True)
    assert rows
    for row in rows:
        sid = row["id"]
        assert "title" in row and "api_call_count" in row
        assert db.get_session_title(sid) == row["title"]
        assert set(db.get_session(sid)) >= {"title", "api_call_count", "cache_read_tokens"}
        db.get_messages_as_conversation(sid, include_ancestors=True)
        for message in db.get_messages(sid):
            assert set(message) >= {"finish_reason", "reasoning", "reasoning_content", "codex_message_items"}
        db.get_message_models(sid)
        db.get_summary(sid)
        db.lineage_tree(sid)
        db.get_compression_tip(sid)
        db.resolve_resume_session_id(sid)
    db.list_sessions_rich()
    db.list_summaries(ListQuery())
    db.count_listed(ListQuery())
    db.search_sessions()
    db.export_all()
    db.stats()
    assert db.get_meta("last_auto_prune") is None
    db.resolve_session_by_title("anything")
    db.get_next_title_in_lineage("anything")
    db.resolve_session_reference("anything")
    db.get_session_by_title("anything")


def build_v2(path: Path) -> None:
    """Shaped like upstream v2: no title, billing, reasoning or api_call_count columns, no
    state_meta table, no title index; old external-content FTS."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT,
            model_config TEXT, system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL,
            ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0,
            tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0,
            output_tokens INTEGER DEFAULT 0,
            FOREIGN KEY (parent_session_id) REFERENCES sessions(id));
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL, content TEXT,
            tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
            token_count INTEGER, finish_reason TEXT);
        CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=id);
        INSERT INTO schema_version VALUES (2);
        INSERT INTO sessions (id, source, started_at, ended_at, end_reason) VALUES ('r', 'cli', 1, 2, 'compression');
        INSERT INTO sessions (id, source, started_at, parent_session_id) VALUES ('t', 'cli', 2, 'r');
        INSERT INTO messages (session_id, role, content, timestamp) VALUES ('r', 'user', 'hi', 1.5);
        INSERT INTO messages (session_id, role, content, timestamp) VALUES ('t', 'assistant', 'yo', 2.5);
        """
    )
    conn.commit()
    conn.close()


def test_co9_read_only_old_file_every_read_works(tmp_path: Path):
    path = tmp_path / "state.db"
    build_v2(path)
    digest = sha(path)
    db = SessionDB(path, read_only=True)
    try:
        assert db.opened_version == 2
        exercise_reads(db)
        [row] = db.list_sessions_rich()
        assert (row["id"], row["_lineage_root_id"], row["title"]) == ("t", "r", None)
        assert db.get_session("t")["api_call_count"] == 0
        assert db.get_messages_as_conversation("t", include_ancestors=True) == [
            {"role": "user", "content": "hi", "timestamp": 1.5},
            {"role": "assistant", "content": "yo", "timestamp": 2.5}]  # v16 replays the time
    finally:
        db.close()
    assert sha(path) == digest


@pytest.mark.parametrize("version", [2, 5, 7, 9, 10, 11])
def test_co9_read_only_upstream_fixtures_every_read_works(upstream_copy, version: int):
    path = upstream_copy(version)
    digest = sha(path)
    db = SessionDB(path, read_only=True)
    try:
        assert db.opened_version == version
        exercise_reads(db)
        assert db.message_count() == 21
    finally:
        db.close()
    assert sha(path) == digest
