"""A store from before schema 10 has no trigram table, and the browser does not migrate it
(UC-8): its substrings -- CJK words of 3 and more characters (SR-9 path B), pieces of words
that no whole word matches (the SR-16 retry) -- are found by LIKE, as they are in the text.
Every search of such a text failed with "no such table: messages_fts_trigram"."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from hermes_state import SessionDB


def like_ids(path, needle: str) -> set[int]:
    """The messages holding ``needle``, read straight from the file (ASCII case folded)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {
            row[0] for row in conn.execute(
                "SELECT id FROM messages WHERE COALESCE(content, '') || ' ' || COALESCE(tool_name, '') "
                "|| ' ' || COALESCE(tool_calls, '') LIKE ?", [f"%{needle}%"]
            )
        }
    finally:
        conn.close()


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("version", [2, 5, 7, 9])
def test_substrings_are_found_in_a_store_without_a_trigram_table(upstream_copy, version):
    path = upstream_copy(version)
    before = digest(path)
    db = SessionDB(path, read_only=True)
    try:
        assert not db.capabilities.has_trigram
        for query, needle in (("数据库", "数据库"), ("迁移计划", "迁移计划"), ("数据", "数据"),
                              ("elease not", "elease not")):
            expected = like_ids(path, needle)
            assert expected, needle
            for prefix_last in (False, True):
                found = db.search(query, prefix_last=prefix_last)
                assert found.error is None, (query, found.error)
                assert {hit.id for hit in found.hits} == expected, query
                assert found.path.split("+")[-1] == "like"
                assert all(hit.spans for hit in found.hits)
        # A piece found nowhere is an empty answer, not an error.
        nothing = db.search("zzqxv", prefix_last=True)
        assert nothing.error is None and nothing.hits == [] and nothing.path == "fts5+like"
        # The upstream-compatible search finds the CJK words too (path B becomes path C).
        for word in ("数据库", "迁移计划"):
            assert {row["id"] for row in db.search_messages(word)} == like_ids(path, word)
    finally:
        db.close()
    assert digest(path) == before  # read, never migrated


def test_a_trigram_table_dropped_by_another_process_is_noticed_by_the_next_search(tmp_path):
    db = SessionDB(tmp_path / "state.db")
    try:
        db.create_session("s", "cli")
        db.append_message("s", "user", "数据库 迁移 docker")
        assert db.search("数据库").path == "trigram"
        other = sqlite3.connect(tmp_path / "state.db")
        other.execute("DROP TABLE messages_fts_trigram")
        other.commit()
        other.close()
        found = db.search("数据库")
        assert found.error is None and found.path == "like" and len(found.hits) == 1
    finally:
        db.close()
