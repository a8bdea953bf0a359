"""CO-1, CO-2, MG-5: databases written by upstream Hermes itself open, migrate and answer as
upstream does (``<repo>/../shared/fixtures/README.md``). Skipped when the fixtures are absent.
Each test works on a private copy: opening migrates in place.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes_state import SessionDB

VERSIONS = [2, 5, 7, 9, 10, 11]


def search_available() -> bool:
    try:
        import hermes_state.search  # noqa: F401
    except ImportError:
        return False
    return True


def master(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()
    finally:
        conn.close()


def rows(path: Path, table: str) -> list[dict]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY rowid")]
    finally:
        conn.close()


def version_of(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT version FROM schema_version").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_co1_upstream_fixture_opens_and_answers_like_upstream(upstream_copy, version: int):
    path = upstream_copy(version)
    assert version_of(path) == version
    sessions_before = rows(path, "sessions")
    messages_before = rows(path, "messages")
    db = SessionDB(path)
    try:
        assert db.message_count() == 21
        titles = [row["title"] for row in db.list_sessions_rich()]
        if version == 2:
            assert titles == [None, None, None, None]
        else:
            assert titles == [None, "travel plans #2", None, "release checklist"]
        if search_available():
            assert len(db.search_messages("terminal")) == 6
            assert len(db.search_messages("桂林")) == 1
            assert len(db.search_messages("東京の天気")) == 1
    finally:
        db.close()
    assert version_of(path) == 16  # UC-2: 1-15 are brought to 16 by a writable open
    # Every row and every old value survives the migration.
    sessions_after = rows(path, "sessions")
    messages_after = rows(path, "messages")
    assert [{k: a[k] for k in b} for a, b in zip(sessions_after, sessions_before)] == sessions_before
    assert [{k: a[k] for k in b} for a, b in zip(messages_after, messages_before)] == messages_before
    assert len(sessions_after) == len(sessions_before)
    conn = sqlite3.connect(path)
    try:
        for table in ("messages_fts", "messages_fts_trigram"):
            assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 21
            conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
            # Tool names are indexed after the v11 rebuild, even in the oldest files.
            hits = conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE {table} MATCH 'terminal'"
            ).fetchone()[0]
            assert hits == 6
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_co1_migrated_fixture_schema_equals_fresh_database(upstream_copy, db_path: Path, version: int):
    path = upstream_copy(version)
    SessionDB(path).close()
    SessionDB(db_path).close()
    # Same tables, columns, indexes, FTS tables and triggers as a database we create. Column
    # order of reconciled tables differs (ALTER TABLE appends), so compare table_info sets.
    ours = {(t, n) for t, n, _, _ in master(db_path)}
    theirs = {(t, n) for t, n, _, _ in master(path)}
    assert theirs == ours
    fresh = {(t, n): s for t, n, _, s in master(db_path) if t in ("trigger",) or n.startswith("messages_fts")}
    migrated = {(t, n): s for t, n, _, s in master(path) if t in ("trigger",) or n.startswith("messages_fts")}
    assert migrated == fresh
    for table in ("sessions", "messages", "state_meta", "schema_version"):
        a = sqlite3.connect(path)
        b = sqlite3.connect(db_path)
        got = {r[1]: (r[2], r[3], r[4], r[5]) for r in a.execute(f"PRAGMA table_info({table})")}
        want = {r[1]: (r[2], r[3], r[4], r[5]) for r in b.execute(f"PRAGMA table_info({table})")}
        a.close()
        b.close()
        assert set(got) == set(want), table
        for column, (ctype, _notnull, default, pk) in want.items():
            assert got[column][0] == ctype and got[column][2] == default and got[column][3] == pk


def test_co1_v11_file_opens_lists_and_accepts_writes_and_becomes_v16(upstream_copy, db_path: Path):
    path = upstream_copy(11)
    db = SessionDB(path)
    try:
        assert db.opened_version == 11
        assert len(db.list_sessions_rich()) == 4
        db.create_session("ours_1", "cli", model="m")
        db.append_message("ours_1", "user", content="written by hermes-sessions")
        db.append_message("ours_1", "tool", content="ok", tool_name="terminal")
        db.set_session_title("ours_1", "our title")
        db.end_session("ours_1", "user_exit")
        assert db.message_count() == 23
        if search_available():
            assert len(db.search_messages("terminal")) == 7
    finally:
        db.close()
    assert version_of(path) == 16
    SessionDB(db_path).close()
    # Same objects as a fresh v16 store (reconciled columns are appended, so only names).
    assert {(t, n) for t, n, _, _ in master(path)} == {(t, n) for t, n, _, _ in master(db_path)}


def test_co1_upstream_v16_schema_identical_to_ours(upstream_copy, db_path: Path):
    SessionDB(db_path).close()
    assert master(upstream_copy(16)) == master(db_path)


def test_co2_v2_compression_pair_listed_once_at_tip(upstream_copy):
    path = upstream_copy(2)
    db = SessionDB(path)
    try:
        listed = db.list_sessions_rich()
        projected = [row for row in listed if "_lineage_root_id" in row]
        assert len(projected) == 1
        row = projected[0]
        assert db.get_session(row["_lineage_root_id"])["end_reason"] == "compression"
        assert db.get_session(row["id"])["parent_session_id"] == row["_lineage_root_id"]
    finally:
        db.close()
