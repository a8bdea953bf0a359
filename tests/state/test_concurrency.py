"""Concurrency with real processes over a real file (WR-2 … WR-8, CO-9, MS-8).

Four writer processes append 300 messages each while a read-only reader process searches and
lists. Nothing may be lost, no "database is locked" may escape the retry loop, and both FTS
indexes must stay exactly in step with ``messages``.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import traceback
from pathlib import Path

import pytest

from hermes_state import SessionDB

WRITERS = 4
PER_WRITER = 300


def _writer(path: str, index: int, start, errors) -> None:
    try:
        db = SessionDB(path)
        try:
            sid = f"writer{index}"
            db.create_session(sid, "cli", model="m")
            start.wait(30)
            for j in range(PER_WRITER):
                if j % 10 == 9:
                    db.append_message(sid, "tool", content=f"result w{index}n{j}", tool_name="terminal",
                                      tool_call_id=f"c{j}")
                else:
                    db.append_message(sid, "user" if j % 2 == 0 else "assistant",
                                      content=f"message w{index}n{j} 並行書き込み")
        finally:
            db.close()
    except BaseException:  # report everything, including "database is locked"
        errors.put(f"writer {index}: {traceback.format_exc()}")


def _reader(path: str, start, stop, errors, counts) -> None:
    try:
        start.wait(30)
        db = SessionDB(path, read_only=True)
        try:
            try:
                import hermes_state.search  # noqa: F401
                has_search = True
            except ImportError:
                has_search = False
            iterations = 0
            last_total = 0
            while not stop.is_set():
                total = db.message_count()
                assert total >= last_total, "a reader saw messages disappear"
                last_total = total
                db._conn.execute(
                    "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'terminal' LIMIT 50"
                ).fetchall()
                db._conn.execute(
                    "SELECT rowid FROM messages_fts_trigram WHERE messages_fts_trigram MATCH '書き込み' LIMIT 50"
                ).fetchall()
                db.list_sessions_rich(limit=10)
                if has_search:
                    db.search_messages("terminal")
                    db.search_messages("並行書き")
                iterations += 1
            counts.put(iterations)
        finally:
            db.close()
    except BaseException:
        errors.put(f"reader: {traceback.format_exc()}")


def test_wr3_four_writers_and_a_reader_lose_nothing(tmp_path: Path):
    path = tmp_path / "state.db"
    SessionDB(path).close()
    ctx = multiprocessing.get_context("spawn")
    start, stop = ctx.Event(), ctx.Event()
    errors, counts = ctx.Queue(), ctx.Queue()
    writers = [ctx.Process(target=_writer, args=(str(path), i, start, errors)) for i in range(WRITERS)]
    reader = ctx.Process(target=_reader, args=(str(path), start, stop, errors, counts))
    for proc in writers + [reader]:
        proc.start()
    start.set()
    for proc in writers:
        proc.join(120)
    stop.set()
    reader.join(60)
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert problems == []
    assert all(proc.exitcode == 0 for proc in writers + [reader])
    assert counts.get(timeout=5) > 0  # the reader really ran concurrently

    db = SessionDB(path)
    try:
        assert db.message_count() == WRITERS * PER_WRITER
        for i in range(WRITERS):
            sid = f"writer{i}"
            messages = db.get_messages(sid)
            assert len(messages) == PER_WRITER
            assert db.get_session(sid)["message_count"] == PER_WRITER
            # Order preserved within a session.
            assert [m["content"].split()[1] for m in messages] == [f"w{i}n{j}" for j in range(PER_WRITER)]
        conn = db._conn
        for table in ("messages_fts", "messages_fts_trigram"):
            assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == WRITERS * PER_WRITER
            conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        hits = conn.execute(
            "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'terminal'"
        ).fetchone()[0]
        assert hits == WRITERS * (PER_WRITER // 10)
    finally:
        db.close()


def test_co9_threads_share_one_instance_safely(db: SessionDB):
    db.create_session("s", "cli")
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for j in range(50):
                db.append_message("s", "user", content=f"t{n} {j}")
                db.get_messages("s")
                db.list_sessions_rich()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert db.message_count("s") == 200
    assert db.get_session("s")["message_count"] == 200


def _slow_writer(path: str, ready, done) -> None:
    db = SessionDB(path)
    try:
        db.create_session("live", "telegram")
        ready.set()
        for j in range(100):
            db.append_message("live", "user", content=f"live {j}")
    finally:
        db.close()
        done.set()


def test_co9_read_only_reads_work_while_another_process_writes(db_path: Path):
    SessionDB(db_path).close()
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_slow_writer, args=(str(db_path), ready, done))
    proc.start()
    try:
        assert ready.wait(30)
        ro = SessionDB(db_path, read_only=True)
        try:
            seen = []
            while not done.is_set():
                seen.append(ro.message_count())
                ro.list_sessions_rich()
                ro.get_messages("live")
            seen.append(ro.message_count())
        finally:
            ro.close()
    finally:
        proc.join(60)
    assert proc.exitcode == 0
    assert seen == sorted(seen) and seen[-1] == 100


def _opener(path: str, start, errors, versions) -> None:
    try:
        start.wait(30)
        db = SessionDB(path)
        try:
            versions.put((db.opened_version, db.message_count(),
                          db._conn.execute("PRAGMA journal_mode").fetchone()[0]))
        finally:
            db.close()
    except BaseException:
        errors.put(traceback.format_exc())


def _build_old_v9(path: Path, messages: int) -> None:
    """Upstream-v9 shaped: rollback journal, external-content FTS, no trigram table."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT,
            model_config TEXT, system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL,
            ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0,
            tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0,
            output_tokens INTEGER DEFAULT 0, title TEXT,
            FOREIGN KEY (parent_session_id) REFERENCES sessions(id));
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL, content TEXT,
            tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
            token_count INTEGER, finish_reason TEXT);
        CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=id);
        CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
            INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
        END;
        INSERT INTO schema_version VALUES (9);
        INSERT INTO sessions (id, source, started_at) VALUES ('s', 'cli', 1);
        """
    )
    conn.executemany(
        "INSERT INTO messages (session_id, role, content, tool_name, timestamp) VALUES ('s', 'tool', ?, 'terminal', ?)",
        [(f"line {i}", float(i)) for i in range(messages)],
    )
    conn.commit()
    conn.close()


def test_mg2_concurrent_openers_migrate_an_old_file_once(tmp_path: Path):
    path = tmp_path / "state.db"
    _build_old_v9(path, 500)
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    errors, versions = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=_opener, args=(str(path), start, errors, versions)) for _ in range(4)]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(120)
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert problems == []
    seen = [versions.get(timeout=5) for _ in procs]
    # Exactly one opener found version 9 and migrated; the others found 16.
    assert sorted(v for v, _, _ in seen) == [9, 16, 16, 16]
    assert all(count == 500 and mode == "wal" for _, count, mode in seen)
    conn = sqlite3.connect(path)
    try:
        for table in ("messages_fts", "messages_fts_trigram"):
            assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 500
            assert conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE {table} MATCH 'terminal'").fetchone()[0] == 500
            conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(16,)]
    finally:
        conn.close()


def test_mg2_concurrent_openers_create_a_new_file_once(tmp_path: Path):
    path = tmp_path / "fresh" / "state.db"
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    errors, versions = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=_opener, args=(str(path), start, errors, versions)) for _ in range(4)]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(120)
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert problems == []
    seen = [versions.get(timeout=5) for _ in procs]
    assert sorted(seen, key=lambda v: v[0] or 0)[0][0] is None
    assert sorted((v[0] or 0) for v in seen) == [0, 16, 16, 16]  # exactly one created it
    assert all(mode == "wal" for _, _, mode in seen)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(16,)]
        assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger'").fetchone()[0] == 6
    finally:
        conn.close()
