"""UC-10: on a v30 store, the session dicts of upstream's API carry the system prompt
kept once by hash in ``system_prompts`` (upstream answers ``COALESCE(prompt by hash,
sessions.system_prompt)``), on the real upstream v30 reference store."""

from __future__ import annotations

import sqlite3

from hermes_state import SessionDB

S1 = "20260921_090000_s1"
PROMPT = "You are Hermes. Be concise."


def _sqlite_master(path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    finally:
        conn.close()


def test_get_session_returns_the_prompt_stored_by_hash_on_a_v30_store(upstream_copy):
    path = upstream_copy(30)
    raw = sqlite3.connect(path)
    column, digest = raw.execute("SELECT system_prompt, system_prompt_hash FROM sessions WHERE id = ?", (S1,)).fetchone()
    raw.close()
    assert column is None and digest  # the fixture keeps it by hash only
    before = _sqlite_master(path)
    for read_only in (True, False):
        db = SessionDB(path, read_only=read_only)
        try:
            session = db.get_session(S1)
            assert session["system_prompt"] == PROMPT
            assert session["system_prompt_hash"] == digest
            assert db.get_system_prompt(S1) == PROMPT
        finally:
            db.close()
    assert _sqlite_master(path) == before


def test_every_session_dict_api_resolves_the_prompt_by_hash(upstream_copy):
    db = SessionDB(upstream_copy(30), read_only=True)
    try:
        by_id = {row["id"]: row for row in db.list_sessions_rich(limit=100)}
        assert by_id[S1]["system_prompt"] == PROMPT
        everyone = {row["id"]: row for row in db.search_sessions(limit=100)}
        assert everyone[S1]["system_prompt"] == PROMPT
        assert db.export_session(S1)["system_prompt"] == PROMPT
        # sessions without a hash keep their column (None here)
        assert all(row["system_prompt"] is None for sid, row in everyone.items() if not row["system_prompt_hash"])
    finally:
        db.close()


def test_a_prompt_in_the_column_is_returned_where_the_store_has_no_prompt_table(tmp_path):
    db = SessionDB(tmp_path / "state.db")
    try:
        db.create_session("plain", "cli", system_prompt="Column prompt")
        assert db.get_session("plain")["system_prompt"] == "Column prompt"
        assert db.list_sessions_rich()[0]["system_prompt"] == "Column prompt"
    finally:
        db.close()


def test_a_hash_without_its_prompt_row_falls_back_to_the_column(upstream_copy):
    path = upstream_copy(30)
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA foreign_keys=OFF")
    raw.execute("UPDATE sessions SET system_prompt = 'kept in the row', system_prompt_hash = 'missing' WHERE id = ?", (S1,))
    raw.commit()
    raw.close()
    db = SessionDB(path, read_only=True)
    try:
        assert db.get_session(S1)["system_prompt"] == "kept in the row"
    finally:
        db.close()
