"""A session whose id cannot name a file (a NUL, a ``/``, terminal controls -- another writer
may store any of them) is deleted, kept in the trash under a name of its own, listed and
restored like any other; its session files (EX-4) are looked for only where a file can be."""

from __future__ import annotations

import pytest

from hermes_state import SessionDB
from hermes_state.trash import delete_with_snapshot, list_trash, read_trash, undo_delete


@pytest.mark.parametrize("session_id", [
    "nul\x00inside",
    "../../escape/attempt",
    "ctl\x1b]0;pwned\x07\u202e",
    "20250305_091523_a1b2c3",
])
def test_any_stored_id_goes_to_the_trash_and_comes_back(db, tmp_path, session_id):
    trash, sessions_dir = tmp_path / "trash", tmp_path / "sessions"
    trash.mkdir()
    sessions_dir.mkdir()
    (sessions_dir / "20250305_091523_a1b2c3.json").write_text("{}")  # an ordinary id's file
    db.create_session(session_id, "cli")
    db.append_message(session_id, "user", "keep me")
    outcome = delete_with_snapshot(lambda: db, session_id, sessions_dir=sessions_dir, trash=trash, reraise=True)
    assert outcome.ok and db.get_session(session_id) is None
    # EX-4's files: only the ordinary id had one, and it went with its session.
    ordinary = session_id == "20250305_091523_a1b2c3"
    assert (sessions_dir / "20250305_091523_a1b2c3.json").exists() != ordinary
    files = list(trash.iterdir())
    assert len(files) == 1 and files[0].parent == trash  # inside the trash, whatever the id
    [entry] = list_trash(trash)
    assert entry.session_id == session_id
    report = undo_delete(lambda: db, read_trash(entry.path))
    assert report.restored
    assert [m["content"] for m in db.get_messages(session_id)] == ["keep me"]
    assert (sessions_dir / "20250305_091523_a1b2c3.json").exists()  # (restored with it)


def test_delete_session_with_a_nul_in_its_id_removes_it(db, tmp_path):
    db.create_session("a\x00b", "cli")
    assert db.delete_session("a\x00b", sessions_dir=tmp_path) is True
    assert db.get_session("a\x00b") is None
