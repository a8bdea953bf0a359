"""Deleting a session removes its files from the sessions directory and nothing outside it,
whatever its id holds (another writer, or an import, can store an id like ``../x``)."""

from __future__ import annotations

from pathlib import Path

from hermes_state import SessionDB


def test_an_id_that_climbs_out_of_the_sessions_directory_deletes_no_file_outside_it(tmp_path: Path):
    sessions = tmp_path / "home" / "sessions"
    sessions.mkdir(parents=True)
    outside = [tmp_path / "home" / "keep.json", tmp_path / "home" / "keep.jsonl"]
    for path in outside:
        path.write_text("not the session's")
    db = SessionDB(tmp_path / "home" / "state.db")
    try:
        db.create_session("../keep", "cli")
        db.create_session("plain", "cli")
        (sessions / "plain.json").write_text("{}")
        (sessions / "plain.jsonl").write_text("")
        assert db.delete_session("../keep", sessions_dir=sessions)
        assert db.delete_session("plain", sessions_dir=sessions)
        assert db.get_session("../keep") is None and db.get_session("plain") is None
    finally:
        db.close()
    assert all(path.read_text() == "not the session's" for path in outside)
    assert list(sessions.iterdir()) == []  # the plain id's own files went
