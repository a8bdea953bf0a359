"""ChangeWatcher (WR-8, BR-8): commits by another process and gateway-index edits, one watcher."""

from __future__ import annotations

from pathlib import Path

from hermes_state import SessionDB
from hermes_state.gateway import SessionEntry, SessionSource, save_sessions_index, sessions_index_path
from hermes_state.watch import ChangeWatcher


def _entry(key: str = "agent:main:telegram:dm:42") -> SessionEntry:
    source = SessionSource(platform="telegram", chat_id="42", chat_type="dm")
    return SessionEntry(session_key=key, session_id="20261118_080000_aaaa", origin=source,
                        created_at="2026-11-18T08:00:00", updated_at="2026-11-18T08:00:00")


def test_wr8_watcher_sees_another_connections_commit_and_only_that(tmp_path: Path) -> None:
    db_path = tmp_path / "state.db"
    SessionDB(db_path).close()
    watcher = ChangeWatcher(db_path, tmp_path / "sessions")
    try:
        assert not watcher.poll()
        other = SessionDB(db_path)
        other.create_session("s1", "cli")
        change = watcher.poll()
        assert change.database and not change.lanes
        assert not watcher.poll()
        other.close()
    finally:
        watcher.close()


def test_br8_watcher_reports_index_changes_and_keeps_lanes_while_half_written(tmp_path: Path) -> None:
    db_path = tmp_path / "state.db"
    SessionDB(db_path).close()
    sessions = tmp_path / "sessions"
    first = _entry()
    save_sessions_index(sessions, {first.session_key: first})
    watcher = ChangeWatcher(db_path, sessions)
    try:
        # What is there when the watcher starts is the baseline, not a change.
        assert not watcher.poll().lanes
        assert set(watcher.lanes) == {first.session_key}
        second = _entry("agent:main:discord:dm:7")
        save_sessions_index(sessions, {first.session_key: first, second.session_key: second})
        assert watcher.poll().lanes
        assert set(watcher.lanes) == {first.session_key, second.session_key}
        path = sessions_index_path(sessions)
        path.write_text(path.read_text()[:40])  # a non-atomic writer caught mid-write
        assert not watcher.poll().lanes
        assert set(watcher.lanes) == {first.session_key, second.session_key}
    finally:
        watcher.close()


def test_br8_watcher_never_raises_for_a_missing_or_corrupt_file(tmp_path: Path) -> None:
    db_path = tmp_path / "state.db"
    watcher = ChangeWatcher(db_path, tmp_path / "sessions")
    try:
        assert not watcher.poll()  # no database yet: nothing to report
        SessionDB(db_path).close()
        assert watcher.poll().reopened  # it appeared
        db_path.unlink()
        Path(str(db_path) + "-wal").unlink(missing_ok=True)
        Path(str(db_path) + "-shm").unlink(missing_ok=True)
        db_path.write_bytes(b"not a database at all" * 100)
        change = watcher.poll()  # replaced by garbage: reported, never raised
        assert change.reopened and watcher.last_error
    finally:
        watcher.close()
