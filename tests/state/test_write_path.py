"""SPEC §4 (WR-1 … WR-8): the write path, observed with real files and real second processes."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from hermes_state import SessionDB

# ---------------------------------------------------------------- helpers: a second process

_HOLDER = r"""
import sqlite3, sys, time
path, mode, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
conn = sqlite3.connect(path, isolation_level=None, timeout=5)
if mode == "write":
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('pending', 'cli', 1)")
else:
    conn.execute("BEGIN")
    conn.execute("SELECT COUNT(*) FROM sessions").fetchone()
print("held", flush=True)
if seconds >= 0:
    time.sleep(seconds)
else:
    sys.stdin.readline()  # held until the test lets go, however slow the machine
conn.execute("COMMIT")
print("released", flush=True)
"""


@contextmanager
def held_by_other_process(path: Path, mode: str, seconds: float | None):
    """A real second process holding a write (``BEGIN IMMEDIATE`` + insert of session
    ``pending``) or read transaction for ``seconds`` (``None``: until the block ends); yields
    once the lock is held."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path), mode, str(-1 if seconds is None else seconds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.stdin.close()  # (lets go of a lock held until the block ends)
        proc.wait(timeout=30)
        proc.stdout.close()


_TRY_LOCK = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
try:
    conn.execute("BEGIN IMMEDIATE")
except sqlite3.OperationalError as exc:
    print("blocked:", exc)
else:
    conn.execute("ROLLBACK")
    print("acquired")
"""


def other_process_tries_write_lock(path: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-c", _TRY_LOCK, str(path)], capture_output=True, text=True, timeout=30
    )
    return out.stdout.strip()


# ---------------------------------------------------------------- WR-1


def test_wr1_every_mutating_method_goes_through_the_stores_write(db_path: Path, tmp_path: Path, monkeypatch):
    # SessionDB is a facade: its methods' bodies live in feature modules, and every one of
    # their writes is Store.write (the one BEGIN IMMEDIATE path; _execute_write is its
    # delegate). Counted on the real store, each write still runs.
    db = SessionDB(db_path)
    real_write = db.store.write
    writes: list[int] = []

    def counting_write(fn, **kwargs):
        writes.append(1)
        return real_write(fn, **kwargs)

    monkeypatch.setattr(db.store, "write", counting_write)
    try:
        calls = [
            lambda: db.create_session("s", "cli"),
            lambda: db.create_session("c", "cli", parent_session_id="s"),
            lambda: db.ensure_session("e"),
            lambda: db.append_message("s", "user", content="hi"),
            lambda: db.replace_messages("s", [{"role": "user", "content": "x"}]),
            lambda: db.clear_messages("s"),
            lambda: db.update_system_prompt("s", "p"),
            lambda: db.update_token_counts("s", input_tokens=1),
            lambda: db.set_session_title("s", "t"),
            lambda: db.end_session("s", "user_exit"),
            lambda: db.reopen_session("s"),
            lambda: db.set_meta("k", "v"),
            lambda: db.delete_session("e"),
            lambda: db.prune_sessions(older_than_days=0),
        ]
        for call in calls:
            before = len(writes)
            call()
            assert len(writes) > before, call
    finally:
        db.close()


def test_wr1_fn_runs_inside_transaction_and_result_is_returned(db: SessionDB):
    seen = {}

    def fn(conn):
        seen["in_tx"] = conn.in_transaction
        seen["conn"] = conn
        return {"answer": 42}

    assert db._execute_write(fn) == {"answer": 42}
    assert seen["in_tx"] is True and seen["conn"] is db._conn
    assert not db._conn.in_transaction


# ---------------------------------------------------------------- WR-2


def test_wr2_begin_immediate_takes_write_lock_before_fn_writes(db: SessionDB, db_path: Path):
    statements: list[str] = []
    db._conn.set_trace_callback(statements.append)

    def fn(conn):
        # fn has written nothing yet; a deferred BEGIN would not hold the lock here.
        return other_process_tries_write_lock(db_path)

    verdict = db._execute_write(fn)
    db._conn.set_trace_callback(None)
    assert verdict.startswith("blocked:") and "locked" in verdict
    assert "BEGIN IMMEDIATE" in statements and "COMMIT" in statements
    assert other_process_tries_write_lock(db_path) == "acquired"


def test_wr2_error_in_fn_rolls_back_and_propagates(db: SessionDB, db_path: Path):
    def fn(conn):
        conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('ghost', 'cli', 1)")
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        db._execute_write(fn)
    assert db.get_session("ghost") is None
    assert not db._conn.in_transaction
    assert other_process_tries_write_lock(db_path) == "acquired"


def test_wr2_base_exception_also_rolls_back(db: SessionDB):
    def fn(conn):
        conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('ghost', 'cli', 1)")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        db._execute_write(fn)
    assert db.get_session("ghost") is None
    db.create_session("after", "cli")  # the store is still usable
    assert db.get_session("after") is not None


def test_wr2_failed_commit_rolls_back(db: SessionDB):
    def fn(conn):
        conn.execute("PRAGMA defer_foreign_keys = ON")
        conn.execute(
            "INSERT INTO sessions (id, source, started_at, parent_session_id) "
            "VALUES ('orphan', 'cli', 1, 'missing')"
        )

    with pytest.raises(sqlite3.IntegrityError):
        db._execute_write(fn)
    assert not db._conn.in_transaction
    assert db.get_session("orphan") is None


# ---------------------------------------------------------------- WR-3


def test_wr3_write_succeeds_after_other_process_releases_lock(db: SessionDB, db_path: Path):
    with held_by_other_process(db_path, "write", 0.5):
        start = time.monotonic()
        db.create_session("mine", "cli")
        elapsed = time.monotonic() - start
    assert elapsed >= 0.3  # we really waited for the other writer
    assert db.get_session("mine") is not None
    assert db.get_session("pending") is not None


def test_wr3_retries_when_lock_outlasts_busy_timeout(db: SessionDB, db_path: Path):
    statements: list[str] = []
    db._conn.set_trace_callback(statements.append)
    with held_by_other_process(db_path, "write", 1.6):
        db.create_session("mine", "cli")
    db._conn.set_trace_callback(None)
    # The first BEGIN IMMEDIATE gave up after the 1 s busy wait; a later attempt succeeded.
    assert statements.count("BEGIN IMMEDIATE") >= 2
    assert db.get_session("mine") is not None


def test_wr3_lock_errors_retried_with_jitter_then_succeed(db: SessionDB, monkeypatch):
    # The retry is the store's (SessionDB._execute_write is its one-line delegate).
    import hermes_state.store as storemod

    sleeps: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(storemod.time, "sleep", lambda s: (sleeps.append(s), real_sleep(s)))
    attempts = []

    def fn(conn):
        attempts.append(1)
        if len(attempts) == 1:
            raise sqlite3.OperationalError("database is locked")
        if len(attempts) == 2:
            raise sqlite3.OperationalError("database table is BUSY")
        conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('ok', 'cli', 1)")
        return "done"

    assert db._execute_write(fn) == "done"
    assert len(attempts) == 3 and len(sleeps) == 2
    assert all(0.020 <= s <= 0.150 for s in sleeps)
    assert db.get_session("ok") is not None


def test_wr3_gives_up_after_15_attempts_and_reraises(db: SessionDB):
    attempts = []

    def fn(conn):
        attempts.append(time.monotonic())
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        db._execute_write(fn)
    assert len(attempts) == 15
    gaps = [b - a for a, b in zip(attempts, attempts[1:])]
    assert all(g >= 0.019 for g in gaps)
    assert sum(gaps) <= 14 * 0.150 + 1.0


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("Title 'x' is already in use by session y"),
        sqlite3.IntegrityError("FOREIGN KEY constraint failed"),
        sqlite3.OperationalError("no such table: nope"),
        RuntimeError("anything else"),
    ],
)
def test_wr3_other_errors_not_retried(db: SessionDB, exc: Exception):
    attempts = []

    def fn(conn):
        attempts.append(1)
        raise exc

    with pytest.raises(type(exc)):
        db._execute_write(fn)
    assert len(attempts) == 1


def test_wr3_real_title_conflict_and_integrity_error_not_retried(db: SessionDB):
    db.create_session("a", "cli")
    db.create_session("b", "cli")
    db.set_session_title("a", "taken")
    attempts = []

    def title_conflict(conn):
        attempts.append("title")
        other = conn.execute("SELECT id FROM sessions WHERE title = 'taken'").fetchone()
        raise ValueError(f"Title 'taken' is already in use by session {other[0]}")

    def fk_violation(conn):
        attempts.append("fk")
        conn.execute("INSERT INTO messages (session_id, role, timestamp) VALUES ('nope', 'user', 1)")

    with pytest.raises(ValueError):
        db._execute_write(title_conflict)
    with pytest.raises(sqlite3.IntegrityError):
        db._execute_write(fk_violation)
    assert attempts == ["title", "fk"]


def test_wr3_constants():
    assert SessionDB._WRITE_MAX_RETRIES == 15
    assert SessionDB._WRITE_RETRY_MIN_S == 0.020
    assert SessionDB._WRITE_RETRY_MAX_S == 0.150


# ---------------------------------------------------------------- WR-4


def test_wr4_busy_handler_waits_about_one_second(db: SessionDB, db_path: Path):
    # It waits (a slower machine only waits longer: a lower bound holds anywhere), then gives
    # up while the lock is still held: the holder lets go only after the block.
    with held_by_other_process(db_path, "write", None) as holder:
        start = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            db._conn.execute("BEGIN IMMEDIATE")
        waited = time.monotonic() - start
        assert holder.poll() is None
    assert waited >= 0.8


# ---------------------------------------------------------------- WR-5


def counting_checkpoints(db: SessionDB) -> list[str]:
    """The modes of every checkpoint the store runs from now on (its own method, wrapped)."""
    seen: list[str] = []
    real = db.store.checkpoint

    def checkpoint(mode: str = "PASSIVE") -> None:
        seen.append(mode)
        real(mode)

    db.store.checkpoint = checkpoint  # type: ignore[method-assign]
    return seen


def test_wr5_passive_checkpoint_every_50_writes(db_path: Path):
    db = SessionDB(db_path)
    db.checkpoints = counting_checkpoints(db)
    try:
        db.create_session("s", "cli")
        baseline = len(db.checkpoints)
        for i in range(48):
            db.append_message("s", "user", content=f"m{i}")
        assert len(db.checkpoints) == baseline  # 49 writes so far
        size_before = db_path.stat().st_size
        db.append_message("s", "user", content="fiftieth")
        assert db.checkpoints[baseline:] == ["PASSIVE"]
        # The checkpoint really ran: pages moved from the WAL into the main file.
        assert db_path.stat().st_size > size_before
        for i in range(50):
            db.append_message("s", "user", content=f"n{i}")
        assert db.checkpoints[baseline:] == ["PASSIVE", "PASSIVE"]
    finally:
        db.close()


def test_wr5_failed_writes_do_not_count(db_path: Path):
    db = SessionDB(db_path)
    db.checkpoints = counting_checkpoints(db)
    try:
        baseline = len(db.checkpoints)
        for _ in range(60):
            with pytest.raises(ValueError):
                db._execute_write(lambda conn: (_ for _ in ()).throw(ValueError("no")))
        assert len(db.checkpoints) == baseline
    finally:
        db.close()


def test_wr5_checkpoint_errors_swallowed(db_path: Path):
    db = SessionDB(db_path)
    real_checkpoint = db.store.checkpoint

    def broken_checkpoint(mode: str = "PASSIVE") -> None:
        # A checkpoint against a closed connection object raises inside; it must not escape.
        closed = sqlite3.connect(":memory:")
        closed.close()
        real = db.store.swap_connection(closed)
        try:
            real_checkpoint(mode)
        finally:
            db.store.swap_connection(real)

    db.store.checkpoint = broken_checkpoint  # type: ignore[method-assign]
    try:
        db.create_session("s", "cli")
        for i in range(55):
            db.append_message("s", "user", content=str(i))
        assert db.message_count("s") == 55
    finally:
        db.close()


# ---------------------------------------------------------------- WR-6


def test_wr6_close_semantics(db_path: Path):
    db = SessionDB(db_path)
    db.create_session("s", "cli")
    db.close()
    assert db._conn is None
    db.close()  # second close is a no-op
    for call in (
        lambda: db.get_session("s"),
        lambda: db.create_session("t", "cli"),
        lambda: db.list_sessions_rich(),
        lambda: db.append_message("s", "user", content="x"),
        lambda: db.message_count(),
    ):
        with pytest.raises(Exception):
            call()
    reopened = SessionDB(db_path)
    try:
        assert reopened.get_session("s") is not None
    finally:
        reopened.close()


@pytest.mark.parametrize("mode,expect_empty_wal", [("PASSIVE", False), ("TRUNCATE", True)])
def test_wr6_truncate_option_shrinks_wal_at_close(db_path: Path, mode: str, expect_empty_wal: bool):
    SessionDB(db_path).close()
    # Another connection stays open, so SQLite does not delete the WAL when ours closes.
    other = sqlite3.connect(db_path)
    other.execute("SELECT COUNT(*) FROM sessions").fetchone()
    try:
        db = SessionDB(db_path, checkpoint_mode=mode)
        db.create_session("s", "cli")
        for i in range(10):
            db.append_message("s", "user", content=f"message {i}")
        wal = Path(str(db_path) + "-wal")
        assert wal.stat().st_size > 0
        db.close()
        assert (wal.stat().st_size == 0) is expect_empty_wal
    finally:
        other.close()


def test_wr6_default_checkpoint_mode_is_passive(db: SessionDB):
    assert db.checkpoint_mode == "PASSIVE"


# ---------------------------------------------------------------- WR-7


def test_wr7_reads_hold_the_instance_lock(db: SessionDB):
    db.create_session("s", "cli")
    result = {}
    db._lock.acquire()
    try:
        reader = threading.Thread(target=lambda: result.setdefault("row", db.get_session("s")))
        reader.start()
        reader.join(0.3)
        assert reader.is_alive()  # waiting for the lock
    finally:
        db._lock.release()
    reader.join(5)
    assert result["row"]["id"] == "s"


def test_wr7_other_process_writer_never_blocks_our_reads(db: SessionDB, db_path: Path):
    db.create_session("committed", "cli")
    # The writer holds its lock (and its uncommitted row) until the reads are done: a read
    # that waited for it would never return.
    with held_by_other_process(db_path, "write", None) as writer:
        assert db.get_session("pending") is None  # uncommitted: invisible
        assert db.session_count() == 1
        assert [r["id"] for r in db.list_sessions_rich()] == ["committed"]
        assert writer.poll() is None  # still holding it
    assert db.get_session("pending") is not None


def test_wr7_other_process_reader_never_blocks_our_writes(db: SessionDB, db_path: Path):
    # The reader holds its transaction until the writes are done: a write that waited for it
    # would give up ("locked") instead of returning.
    with held_by_other_process(db_path, "read", None) as reader:
        db.create_session("s", "cli")
        db.append_message("s", "user", content="x")
        assert reader.poll() is None  # still reading
    assert db.message_count("s") == 1


# ---------------------------------------------------------------- WR-8


def test_wr8_other_process_commit_visible_and_data_version_changes(db: SessionDB, db_path: Path):
    db.create_session("mine", "cli")
    version = db.data_version()
    db.append_message("mine", "user", content="own write")
    assert db.data_version() == version  # own commits do not change it
    script = (
        "import sys; from hermes_state import SessionDB; d = SessionDB(sys.argv[1]); "
        "d.create_session('theirs', 'telegram'); d.append_message('theirs', 'user', content='hey'); d.close()"
    )
    subprocess.run([sys.executable, "-c", script, str(db_path)], check=True, cwd=Path(__file__).resolve().parents[2],
                   env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert db.data_version() != version
    assert db.get_session("theirs")["message_count"] == 1
    assert db.message_count("theirs") == 1
