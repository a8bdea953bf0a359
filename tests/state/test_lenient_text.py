"""Text that SQLite holds as invalid UTF-8 (nothing checks it; another tool may write it):
Python's sqlite3 refuses the whole read, so a read refused that way runs again reading every
invalid byte as U+FFFD (the export's workers: tests/state/test_export_parallel.py)."""

from __future__ import annotations

import sqlite3

import pytest

from hermes_state import SessionDB
from hermes_state.lenient_text import lenient_text, read_leniently


def test_read_leniently_reads_again_only_what_sqlite3_refused(tmp_path):
    conn = sqlite3.connect(tmp_path / "t.db")
    try:
        conn.execute("CREATE TABLE t (v TEXT)")
        conn.execute("INSERT INTO t VALUES ('ok' || X'FF' || 'é')")
        read = lambda: conn.execute("SELECT v FROM t").fetchall()  # noqa: E731
        with pytest.raises(sqlite3.OperationalError, match="Could not decode to UTF-8"):
            read()
        assert read_leniently(conn, read) == [("ok\ufffdé",)]
        assert conn.text_factory is str  # restored
        calls = []
        assert read_leniently(conn, lambda: calls.append(1) or "fine") == "fine" and calls == [1]
        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            read_leniently(conn, lambda: conn.execute("SELECT * FROM missing").fetchall())
    finally:
        conn.close()
    assert lenient_text(b"a\xffb") == "a\ufffdb"


def _session_with_bad_text(db: SessionDB) -> int:
    """Session ``s``: a user message whose text ends in a byte that is not UTF-8, a reply."""
    db.create_session("s", "cli")
    first = db.append_message("s", "user", "deploy the cluster")
    db.append_message("s", "assistant", "done")
    db._execute_write(lambda conn: conn.execute(
        "UPDATE messages SET content = content || X'FF' WHERE id = ?", (first,)))
    return first


def test_the_store_reads_text_that_is_not_utf8(tmp_path):
    db = SessionDB(tmp_path / "state.db")
    try:
        first = _session_with_bad_text(db)
        assert db.list_sessions_rich()[0]["preview"] == "deploy the cluster\ufffd"
        assert db.get_messages("s")[0]["content"] == "deploy the cluster\ufffd"
        assert [m.content for m in db.get_message_models("s")][0] == "deploy the cluster\ufffd"
        hits = db.search("cluster").hits
        assert [h.session_id for h in hits] == ["s"] and "\ufffd" in hits[0].snippet
        assert db._conn.text_factory is str
    finally:
        db.close()


def test_a_write_that_reads_text_that_is_not_utf8_runs_again_once(tmp_path):
    """A write transaction refused for such text was rolled back; it runs again, reading it
    leniently, and commits once. Deleting such a session to the trash and undoing it work."""
    from hermes_state.trash import delete_with_snapshot, undo_delete

    db = SessionDB(tmp_path / "state.db")
    try:
        first = _session_with_bad_text(db)
        runs = []

        def copy_first(conn):
            runs.append(1)
            conn.execute("INSERT INTO state_meta (key, value) VALUES ('copied', 'yes')"
                         " ON CONFLICT(key) DO UPDATE SET value = value || 'yes'")
            return conn.execute("SELECT content FROM messages WHERE id = ?", (first,)).fetchone()[0]

        assert db._execute_write(copy_first) == "deploy the cluster\ufffd"
        assert len(runs) == 2 and db._fetchone("SELECT value FROM state_meta WHERE key = 'copied'")[0] == "yes"
        assert db._conn.text_factory is str

        outcome = delete_with_snapshot(lambda: db, "s", sessions_dir=None, reraise=True)
        assert outcome.deleted is not None and db.get_session("s") is None
        undo_delete(lambda: db, outcome.deleted)
        assert [m["content"] for m in db.get_messages("s")] == ["deploy the cluster\ufffd", "done"]
    finally:
        db.close()
