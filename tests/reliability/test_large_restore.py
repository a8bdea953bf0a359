"""A restore large enough to outlast Hermes' writers' patience says so and asks first.

A restore is one transaction; every other writer waits for it, and Hermes gives a write up
after about 16 s. Restoring 100,000 messages once held the lock 44 s while two gateway writers
lost 4 writes, and nothing warned. Real processes: a live store (written a moment ago), a real
delete into the trash, and a writer process appending while the restore runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from hermes_state import SessionDB
from hermes_tui.cli_trash import RESTORE_LOCK_WARN_MESSAGES

CLI = [sys.executable, "-m", "hermes_tui.cli"]

WRITER = r"""
import sys, time
from hermes_state import SessionDB
db = SessionDB(sys.argv[1])
db.create_session("gateway", "telegram")
deadline = time.time() + float(sys.argv[2])
n = 0
while time.time() < deadline:
    db.append_message("gateway", "user", f"live message {n}")
    n += 1
    time.sleep(0.05)
db.close()
print(n)
"""


def hermes(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, HERMES_HOME=str(home))
    return subprocess.run([*CLI, "sessions", *args], env=env, input=stdin, capture_output=True,
                          text=True, timeout=300)


def big_deleted_session(home: Path) -> int:
    n = RESTORE_LOCK_WARN_MESSAGES
    db = SessionDB(home / "state.db")
    try:
        db.create_session("big", "cli")
        db.store.write(lambda conn: conn.executemany(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('big', 'user', ?, ?)",
            [(f"message number {i}", 1_700_000_000 + i) for i in range(n)],
        ))
        db.create_session("other", "cli")
    finally:
        db.close()
    assert hermes(home, "delete", "big", "--yes").returncode == 0
    db = SessionDB(home / "state.db")
    try:
        db.append_message("other", "user", "written just now: the store is live")
    finally:
        db.close()
    return n


def messages_of(home: Path, sid: str) -> int:
    db = SessionDB(home / "state.db", read_only=True)
    try:
        return len(db.get_messages(sid))
    finally:
        db.close()


def test_a_large_restore_into_a_live_store_asks_first_and_no_keeps_it_in_the_trash(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    n = big_deleted_session(home)
    declined = hermes(home, "restore", "big", stdin="n\n")
    assert declined.returncode == 1
    assert f"Restoring {n:,} messages is one transaction" in declined.stderr
    assert "Hermes gives a write up after about 16 s" in declined.stderr
    assert "stays in the trash" in declined.stderr and declined.stdout == ""
    assert messages_of(home, "big") == 0
    agreed = hermes(home, "restore", "big", stdin="y\n")
    assert agreed.returncode == 0, agreed.stderr
    assert messages_of(home, "big") == n


def test_a_writer_running_during_an_agreed_restore_loses_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    n = big_deleted_session(home)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(home / "state.db"), "6"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    restored = hermes(home, "restore", "big", "--yes")
    out, err = writer.communicate(timeout=120)
    assert restored.returncode == 0, restored.stderr
    assert writer.returncode == 0, err
    assert messages_of(home, "gateway") == int(out)
    assert messages_of(home, "big") == n
