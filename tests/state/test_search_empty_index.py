"""UC-4: a trigram index that holds nothing while the messages have text -- a dropped table
that a writable open created again, empty (MG-1 step 5 does not fill it), or one emptied for a
rebuild -- does not hide every substring and every CJK word: a scan of the messages finds
them, and the answer says so."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes_state import SessionDB

NOTE = "the substring index is empty: substrings were sought by a scan of the messages"
PARTIAL = "the substring index lacks the older messages: substrings were sought by a scan of the messages"


def _drop_index(path: Path, table: str) -> None:
    """Drop the FTS ``table`` and its three triggers (``<table>_insert`` …), as by hand."""
    conn = sqlite3.connect(path)
    try:
        for event in ("insert", "delete", "update"):
            conn.execute(f'DROP TRIGGER IF EXISTS "{table}_{event}"')
        conn.execute(f'DROP TABLE "{table}"')
        conn.commit()
    finally:
        conn.close()


def _store(path: Path, *texts: str) -> list[int]:
    """A store at ``path`` whose session ``s`` holds ``texts`` (user, assistant, …); their ids."""
    db = SessionDB(path)
    try:
        db.create_session("s", "cli")
        return [db.append_message("s", ("user", "assistant")[i % 2], text) for i, text in enumerate(texts)]
    finally:
        db.close()


def test_a_trigram_table_created_again_empty_leaves_substrings_to_a_scan(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    english, chinese = _store(path, "the kubernetes rollout stalled", "服务器配置已经更新")
    _drop_index(path, "messages_fts_trigram")
    db = SessionDB(path)  # writable: creates the table again, empty
    try:
        conn = sqlite3.connect(path)
        assert conn.execute("SELECT count(*) FROM messages_fts_trigram_idx").fetchone()[0] == 0
        conn.close()
        inside = db.search("bernete")  # no whole word: the substring path
        assert [h.id for h in inside.hits] == [english] and NOTE in inside.note
        assert inside.path == "fts5+like"
        for query in ("服务器", "服"):
            found = db.search(query)
            assert [h.id for h in found.hits] == [chinese] and NOTE in found.note, query
        # A whole word never needed the trigram index: nothing to say.
        word = db.search("kubernetes")
        assert [h.id for h in word.hits] == [english] and not word.note
        # Its triggers feed it from now on: it holds the new message, not the older ones.
        newer = db.append_message("s", "user", "the kubernetes upgrade is done")
        partly = db.search("bernete")
        assert sorted(h.id for h in partly.hits) == sorted([english, newer]) and PARTIAL in partly.note
        assert [h.id for h in db.search("服务器").hits] == [chinese]
    finally:
        db.close()


def test_a_whole_trigram_index_says_nothing_and_answers_from_itself(tmp_path: Path) -> None:
    """Older messages deleted (the index loses them too) leave no gap to report."""
    db = SessionDB(tmp_path / "state.db")
    try:
        db.create_session("old", "cli")
        db.append_message("old", "user", "the kubernetes rollout stalled")
        db.create_session("new", "cli")
        kept = db.append_message("new", "user", "kubernetes again")
        db.delete_session("old")
        found = db.search("bernete")
        assert [h.id for h in found.hits] == [kept] and found.path == "fts5+trigram" and not found.note
    finally:
        db.close()


def test_a_v30_trigram_index_emptied_leaves_substrings_to_a_scan(upstream_copy) -> None:
    """The external-content layout (v30): the table reads its text from the messages, so
    only the index's own segments say it holds nothing."""
    path = upstream_copy(30)
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO messages_fts_trigram(messages_fts_trigram) VALUES ('delete-all')")
    conn.commit()
    conn.close()
    db = SessionDB(path, read_only=True)
    try:
        before = db.search("eploymen")  # `deployment` in the fixture's messages
        assert before.hits and NOTE in before.note
    finally:
        db.close()
    fresh = upstream_copy(30)
    db = SessionDB(fresh, read_only=True)
    try:
        untouched = db.search("eploymen")
        assert sorted(h.id for h in untouched.hits) == sorted(h.id for h in before.hits)
        assert NOTE not in (untouched.note or "") and "trigram" in untouched.path
    finally:
        db.close()


def test_a_word_index_created_again_says_results_may_be_incomplete(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    (older,) = _store(path, "the kubernetes rollout stalled")
    _drop_index(path, "messages_fts")
    db = SessionDB(path)  # creates the word index again, empty
    try:
        empty = db.search("kubernetes")
        assert "the word index is empty: results may be incomplete" in empty.note
        # (no whole word found: the substring index, whole, still finds it)
        assert [h.id for h in empty.hits] == [older]
        newer = db.append_message("s", "user", "kubernetes is upgraded")
        partly = db.search("kubernetes")
        assert "the word index lacks the older messages: results may be incomplete" in partly.note
        assert [h.id for h in partly.hits] == [newer]
        # A store whose index is whole says nothing of the kind.
        other = SessionDB(tmp_path / "other.db")
        other.create_session("s", "cli")
        other.append_message("s", "user", "kubernetes")
        assert not other.search("kubernetes").note
        other.close()
    finally:
        db.close()
