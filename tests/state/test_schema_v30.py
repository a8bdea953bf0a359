"""The v30 layout the workload creates (hermes_workload.schema_v30) is upstream's (SPEC §16).

A store made by :func:`create_v30_store` must be indistinguishable, in ``sqlite_master``, from
``fixtures/upstream_v30.db`` (built from upstream's v30 DDL): same tables, columns, views,
indexes, triggers and FTS DDL, and the same ``schema_version`` and ``fts_storage_version``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_workload.schema_v30 import (
    V30_SCHEMA_VERSION,
    apply_v30_schema,
    create_v30_store,
    is_v30_layout,
)

MASTER = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"


def _master(path: Path) -> list[tuple]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(MASTER).fetchall()
    finally:
        conn.close()


def test_v30_store_has_exactly_the_sqlite_master_of_upstream_v30(tmp_path, shared_fixtures_dir):
    ours = _master(create_v30_store(tmp_path / "state.db"))
    theirs = _master(shared_fixtures_dir / "upstream_v30.db")
    assert ours == theirs


def test_v30_store_has_the_columns_of_upstream_v30_in_order(tmp_path, shared_fixtures_dir):
    path = create_v30_store(tmp_path / "state.db")
    ours = sqlite3.connect(path)
    theirs = sqlite3.connect(f"file:{shared_fixtures_dir / 'upstream_v30.db'}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in theirs.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
        for table in tables:
            assert ours.execute(f"PRAGMA table_xinfo('{table}')").fetchall() == theirs.execute(
                f"PRAGMA table_xinfo('{table}')"
            ).fetchall(), table
    finally:
        ours.close()
        theirs.close()


def test_v30_store_records_version_30_and_fts_storage_version_3(tmp_path):
    conn = sqlite3.connect(create_v30_store(tmp_path / "state.db"))
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(V30_SCHEMA_VERSION,)]
        assert conn.execute("SELECT key, value FROM state_meta").fetchall() == [("fts_storage_version", "3")]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert is_v30_layout(conn)
    finally:
        conn.close()


def test_v30_store_is_written_in_place_by_session_db_and_its_triggers_index(tmp_path):
    """SessionDB opens a v30 store without DDL; a message written through it reaches both
    FTS tables by the store's own triggers, and both integrity checks pass."""
    path = create_v30_store(tmp_path / "state.db")
    before = _master(path)
    with SessionDB(path) as db:
        assert db.opened_version == 30
        db.create_session("20260921_090000_aaaaaa", "cli")
        db.append_message("20260921_090000_aaaaaa", "user", "rotate the staging certificates")
    assert _master(path) == before
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        for table in ("messages_fts", "messages_fts_trigram"):
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
        assert conn.execute(
            "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'certificates'"
        ).fetchone()[0] == 1
        assert conn.execute(
            "SELECT COUNT(*) FROM messages_fts_trigram WHERE messages_fts_trigram MATCH 'ertif'"
        ).fetchone()[0] == 1
    finally:
        conn.close()


def test_v30_schema_is_only_applied_to_an_empty_database(tmp_path):
    path = create_v30_store(tmp_path / "state.db")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        with pytest.raises(ValueError, match="already has tables"):
            apply_v30_schema(conn)
    finally:
        conn.close()
    with pytest.raises(ValueError):
        create_v30_store(path)


def test_v16_store_is_not_the_v30_layout(db):
    assert not is_v30_layout(db._require_conn())
