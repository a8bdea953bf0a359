"""The in-memory title index behind the title match (hermes_state.title_index): its candidates
are exactly the titles SQLite's ``LIKE`` finds, however the text was typed (a new search or
the last one extended), and it follows the store: new sessions, renames, deletions."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hermes_state import SessionDB, listing
from hermes_state.query import escape_like
from hermes_state.title_index import TitleIndex

TITLES = [
    "Release prep", "release notes", "RELEASE checklist", "docker compose up", "Docker on the NAS",
    "数据库迁移", "サーバー設定", "100% done", "snake_case names", "under_score vs percent%",
    "Ünïcödé Title", "ünïcödé title", "tab\tinside", "the server", "theory of servers", "x",
]


def _like(db: SessionDB, text: str) -> set[int]:
    rows = db._fetchall(
        "SELECT rowid FROM sessions WHERE title IS NOT NULL AND title LIKE ? ESCAPE '\\'",
        (f"%{escape_like(text)}%",),
    )
    return {r[0] for r in rows}


@pytest.fixture
def store(db_path: Path) -> SessionDB:
    db = SessionDB(db_path)
    for n, title in enumerate(TITLES):
        db.create_session(f"s{n:02d}", "cli")
        db.set_session_title(f"s{n:02d}", title)
    db.create_session("untitled", "cli")
    yield db
    db.close()


@pytest.mark.parametrize("text", [
    "release", "RELEASE", "Rel", "docker", "the", "the s", "server", "数据", "サーバ", "%", "_", "100%",
    "snake_", "Ü", "ünï", "ÜNÏ", "\t", "x", "zzz", "e",
])
def test_candidates_are_what_like_finds(store, text):
    index = TitleIndex()
    listing.refresh_title_index(store, index)
    assert set(index.candidates(text)) == _like(store, text)


def test_a_text_typed_key_by_key_narrows_to_the_same_answers(store):
    rng = random.Random(3)
    index = TitleIndex()
    listing.refresh_title_index(store, index)
    words = ["release notes", "docker on", "the server", "数据库迁移", "under_score vs"]
    for _ in range(30):
        word = rng.choice(words)
        for end in range(1, len(word) + 1):
            text = word[:end]
            assert set(index.candidates(text)) == _like(store, text), text
        # and backwards, as a person deleting what they typed
        for end in range(len(word), 0, -1):
            assert set(index.candidates(word[:end])) == _like(store, word[:end])


def test_too_many_candidates_are_left_to_sql(store, monkeypatch):
    monkeypatch.setattr(TitleIndex, "MAX_CANDIDATES", 2)
    index = TitleIndex()
    listing.refresh_title_index(store, index)
    assert index.candidates("e") is None
    assert set(index.candidates("release n")) == _like(store, "release n")


def test_new_sessions_are_added_and_renames_seen_after_a_rebuild(store, monkeypatch):
    now = [1000.0]
    index = TitleIndex(clock=lambda: now[0])
    listing.refresh_title_index(store, index)
    store.create_session("late", "cli")
    store.set_session_title("late", "kumquat harvest")
    listing.refresh_title_index(store, index)
    assert set(index.candidates("kumquat")) == _like(store, "kumquat") != set()
    # An old session renamed into a match: seen once the index is rebuilt (MAX_AGE_S).
    store.set_session_title("s00", "kumquat season")
    listing.refresh_title_index(store, index)
    now[0] += TitleIndex.MAX_AGE_S + 1
    store.set_session_title("s01", "kumquat jam")
    listing.refresh_title_index(store, index)
    assert set(index.candidates("kumquat")) == _like(store, "kumquat")


def test_the_title_match_through_the_index_is_the_sql_one(tmp_path):
    """listing.match_sessions with an index answers what it answers without one, with
    filters, after deletions and renames (candidates are read again with the real condition)."""
    from hermes_workload.corpus import generate_corpus

    path = tmp_path / "state.db"
    generate_corpus(path, messages=6000, seed=2, now=1767225600.0, schema=30)
    writer = SessionDB(path)
    reader = SessionDB(path, read_only=True)
    index = TitleIndex()
    try:
        titles = [r[0] for r in reader._fetchall("SELECT title FROM sessions WHERE title IS NOT NULL")]
        rng = random.Random(5)
        pieces = {t[i:i + n] for t in rng.sample(titles, 40) for n in (3, 5, 8) for i in (0, 2)}
        for step, text in enumerate(sorted(pieces)):
            if step % 10 == 5:  # the store changes under the index
                victim = rng.choice(titles)
                sid = writer._fetchone("SELECT id FROM sessions WHERE title = ?", (victim,))
                if sid is not None:
                    writer.delete_session(sid[0])
            for options in ({}, {"source": "telegram"}, {"exclude_sources": ["tool"]}):
                with_index = [s.id for s in listing.match_sessions(reader, text, index=index, limit=20, **options)]
                without = [s.id for s in listing.match_sessions(reader, text, limit=20, **options)]
                assert with_index == without, (text, options)
    finally:
        reader.close()
        writer.close()


def test_an_index_nothing_was_committed_since_answers_without_the_newest_sessions_scan(db_path):
    """The title match reads the 2,000 newest sessions again only to catch titles set since
    the index read them: with nothing committed since its build it does not, and answers as
    SQL does; once a session untitled at the build is titled, the scan is back and finds it."""
    writer = SessionDB(db_path)
    for n, title in enumerate(TITLES):
        writer.create_session(f"s{n:02d}", "cli")
        writer.set_session_title(f"s{n:02d}", title)
    writer.create_session("untitled", "cli")
    writer.create_session("newest", "cli")
    writer.set_session_title("newest", "zebra crossing")
    reader = SessionDB(db_path, read_only=True)
    index = TitleIndex()
    try:
        statements: list[str] = []
        reader._read(lambda conn: conn.set_trace_callback(statements.append))
        for text in ("release", "the s", "数据", "server"):
            statements.clear()
            got = [s.id for s in listing.match_sessions(reader, text, index=index)]
            newest_scan = [sql for sql in statements if "ORDER BY started_at DESC LIMIT 2000" in sql]
            assert index.exact and newest_scan == [], text
            assert got == [s.id for s in listing.match_sessions(reader, text)], text
        # "untitled" (older than "newest", the last titled session the index read) is titled.
        writer.set_session_title("untitled", "release of the zebras")
        statements.clear()
        got = [s.id for s in listing.match_sessions(reader, "release of", index=index)]
        assert got == ["untitled"] and not index.exact
        assert [sql for sql in statements if "ORDER BY started_at DESC LIMIT 2000" in sql]
    finally:
        reader._read(lambda conn: conn.set_trace_callback(None))
        reader.close()
        writer.close()
