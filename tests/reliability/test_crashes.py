"""kill -9 of writer processes at random moments (the long run: bench/reliability.py).

A crashed agent must never leave the store unusable or half-written: after each kill the
database opens, passes ``PRAGMA integrity_check`` and both FTS ``integrity-check``\\ s, has no
message without its session, no session whose counters disagree with its rows, one FTS row
per message, and still holds every write that a writer had seen committed.

The check itself is tested first, on stores broken on purpose, so a green crash test means
the property holds rather than that the check is blind.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from bench.reliability import REPO, counts, kill_writer, run_crashes, spawn_writer, store_problems, table_rows
from hermes_state import SessionDB
from hermes_state.export import export_to_path


def _small_store(path: Path) -> Path:
    db = SessionDB(path)
    try:
        db.create_session("parent", "cli")
        db.append_message("parent", "user", "find the failing route")
        db.append_message(
            "parent", "assistant", None,
            tool_calls=[{"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}],
        )
        db.append_message("parent", "tool", "routes.py:12", tool_name="grep", tool_call_id="c1")
        db.create_session("child", "cli", parent_session_id="parent")
        db.append_message("child", "user", "subtask")
    finally:
        db.close()
    return path


def _raw(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        for sql in statements:
            conn.execute(sql)
    finally:
        conn.close()


def _corrupt_page(path: Path) -> None:
    """Overwrite the middle of the file (after a checkpoint) with garbage."""
    conn = sqlite3.connect(str(path))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.seek(size // 2)
        handle.write(b"\xde\xad\xbe\xef" * 1024)


BREAKAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "message_count off by one": (
        lambda p: _raw(p, "UPDATE sessions SET message_count = message_count + 1 WHERE id = 'parent'"),
        "counters disagree",
    ),
    "tool_call_count off": (
        lambda p: _raw(p, "UPDATE sessions SET tool_call_count = 0 WHERE id = 'parent'"),
        "counters disagree",
    ),
    "message without session": (
        lambda p: _raw(p, "INSERT INTO messages (session_id, role, content, timestamp) "
                          "VALUES ('ghost', 'user', 'orphan', 1.0)"),
        "without a session row",
    ),
    "FTS row missing": (
        lambda p: _raw(p, "DELETE FROM messages_fts WHERE rowid = 1"),
        "messages_fts has 3 rows for 4 messages",
    ),
    "trigram row indexes other text": (
        lambda p: _raw(p, "UPDATE messages_fts_trigram SET content = 'something else' WHERE rowid = 2"),
        "index other text",
    ),
    "FTS index damaged": (
        lambda p: _raw(p, "DELETE FROM messages_fts_data WHERE id > 10"),
        "messages_fts integrity-check",
    ),
    "parent link to a missing session": (
        lambda p: _raw(p, "UPDATE sessions SET parent_session_id = 'gone' WHERE id = 'child'"),
        "missing parent",
    ),
    "damaged page": (_corrupt_page, ""),
}


def test_store_check_passes_a_sound_store(tmp_path: Path) -> None:
    assert store_problems(_small_store(tmp_path / "state.db")) == []


@pytest.mark.parametrize("name", list(BREAKAGES))
def test_store_check_reports_each_kind_of_half_written_store(tmp_path: Path, name: str) -> None:
    path = _small_store(tmp_path / "state.db")
    breakage, expected = BREAKAGES[name]
    breakage(path)
    problems = store_problems(path)
    assert problems, f"{name} went unnoticed"
    assert any(expected in p for p in problems), problems


def test_crash_kill9_writers_five_times_store_stays_whole(tmp_path: Path) -> None:
    """Five kills (blind and inside transactions, some with no process left): always whole."""
    result = run_crashes(tmp_path / "home", kills=5, seed=11, log_dir=tmp_path / "logs")
    assert result.problems == []
    assert result.kills == 5
    # Kills 2 and 4 were placed inside a write transaction, so torn transactions happened.
    assert result.targeted == 2
    assert result.mid_transaction >= result.targeted
    # The writers really wrote (rate 0, several processes) and nothing else went wrong.
    assert result.messages > 100 and result.sessions > 10
    assert result.survivor_errors == 0
    assert result.unlogged_messages <= result.kills


def test_crash_kill9_while_creating_a_new_store_leaves_an_openable_store(tmp_path: Path) -> None:
    """A writer killed while it creates the schema of a brand-new store: the next open works."""
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    db_path = home / "state.db"
    landed = 0
    for attempt, delay in enumerate((0.0, 0.002, 0.006, 0.015)):
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
        writer = spawn_writer(home, 0, log_dir=tmp_path / "logs", seed=attempt, tag=f"new{attempt}-")
        deadline = time.monotonic() + 30
        while not db_path.exists() and writer.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0002)
        time.sleep(delay)
        kill_writer(writer)
        assert db_path.exists()
        if not writer.log_path.exists() or writer.log_path.stat().st_size == 0:
            landed += 1  # killed before its first write: inside start-up / schema creation
        assert store_problems(db_path) == [], f"kill {delay * 1000:.0f} ms after the file appeared"
    assert landed >= 2


def _chained_store(path: Path, chains: int = 700, per_session: int = 8) -> Path:
    """Compression chains of three sessions (root, continuation, its continuation): an export
    lists each chain newest first, so a child always comes before its parent in the file."""
    db = SessionDB(path)
    sessions, messages = [], []
    base = 1.7e9
    for c in range(chains):
        parent = None
        for depth in range(3):
            sid = f"c{c:04d}_{depth}"
            start = base + c * 100 + depth * 10
            sessions.append((sid, "cli", parent, start, start + 5 if depth < 2 else None,
                             "compression" if depth < 2 else None, per_session,
                             f"chain {c}" + (f" #{depth + 1}" if depth else "")))
            for k in range(per_session):
                messages.append((sid, "user" if k % 2 == 0 else "assistant",
                                 f"chain {c} step {depth}.{k} 日本語", start + k * 0.5))
            parent = sid
    db._execute_write(lambda conn: (
        conn.executemany(
            "INSERT INTO sessions (id, source, parent_session_id, started_at, ended_at, end_reason, "
            "message_count, title) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", sessions),
        conn.executemany(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)", messages),
    ))
    db.close()
    return path


def _cli_import(home: Path, export: Path) -> subprocess.Popen:
    env = dict(os.environ, HERMES_HOME=str(home), PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", "import", str(export)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(REPO),
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_crash_kill9_during_import_then_rerun_recreates_every_session(tmp_path: Path, seed: int) -> None:
    """``hermes sessions import`` killed half-way leaves only whole sessions, and running the
    same import again completes the store exactly (rows, messages, parent links)."""
    original = _chained_store(tmp_path / "original.db")
    export = tmp_path / "all.jsonl"
    db = SessionDB(original, read_only=True)
    try:
        total = export_to_path(db, export)
    finally:
        db.close()
    home = tmp_path / "home"
    home.mkdir()
    fresh = home / "state.db"
    SessionDB(fresh).close()
    proc = _cli_import(home, export)
    rng = random.Random(seed)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and counts(fresh)[0] == 0:
        time.sleep(0.005)
    time.sleep(rng.uniform(0.0, 0.15))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the import finished before the kill; make it bigger"
    imported, _ = counts(fresh)
    assert 0 < imported < total
    assert store_problems(fresh) == []
    # Every session that made it is whole: its messages are exactly the original's.
    original_messages = table_rows(original, "messages")
    present = {row[0] for row in table_rows(fresh, "sessions")}
    assert [m for m in table_rows(fresh, "messages")] == [m for m in original_messages if m[1] in present]
    # The same import again completes the store exactly.
    again = _cli_import(home, export)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, out + err
    assert f"{imported} already present" in out.decode()
    assert re.search(r"\b\d+ parent links? restored on sessions already present", out.decode())
    assert table_rows(fresh, "sessions") == table_rows(original, "sessions")
    assert table_rows(fresh, "messages") == original_messages
    assert store_problems(fresh) == []


OPEN_AND_MIGRATE = """
import sys
from hermes_state import SessionDB
print("opening", flush=True)
SessionDB(sys.argv[1]).close()
print("done", flush=True)
"""


def test_crash_kill9_while_migrating_an_upstream_v9_store(upstream_copy, tmp_path: Path) -> None:
    """The agent killed while it upgrades an older store (v9 → v11: both FTS tables rebuilt
    from 40,000 messages) leaves the store as it was or upgraded -- never in between -- and
    the next open completes the upgrade with every message intact."""
    template = upstream_copy(9)
    conn = sqlite3.connect(str(template))
    sid = conn.execute("SELECT id FROM sessions ORDER BY id LIMIT 1").fetchone()[0]
    conn.executemany(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
        [(sid, f"message {i} about the gateway deploy 日本語 {i * 7}", 1.7e9 + i) for i in range(40_000)],
    )
    conn.execute("UPDATE sessions SET message_count = message_count + 40000 WHERE id = ?", (sid,))
    conn.commit()
    expected = [r[:4] + r[7:8] for r in conn.execute("SELECT * FROM messages ORDER BY id")]
    conn.close()
    mid_migration = 0
    for attempt, delay in enumerate((0.0, 0.05, 0.12, 0.25)):
        work = tmp_path / f"attempt{attempt}"
        work.mkdir()
        path = work / "state.db"
        shutil.copyfile(template, path)
        proc = subprocess.Popen(
            [sys.executable, "-c", OPEN_AND_MIGRATE, str(path)], stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=str(REPO),
        )
        assert proc.stdout.readline().strip() == "opening"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        raw = sqlite3.connect(str(path))
        version = raw.execute("SELECT version FROM schema_version").fetchone()[0]
        raw.close()
        assert version in (9, 16)
        if version == 9 and proc.returncode == -signal.SIGKILL:
            mid_migration += 1
        assert store_problems(path) == [], f"killed {delay * 1000:.0f} ms into the open"
        raw = sqlite3.connect(str(path))
        try:
            assert raw.execute("SELECT version FROM schema_version").fetchone()[0] == 16
            assert [r[:4] + r[7:8] for r in raw.execute("SELECT * FROM messages ORDER BY id")] == expected
        finally:
            raw.close()
    assert mid_migration >= 2  # most kills landed before the upgrade committed
