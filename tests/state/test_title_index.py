"""The in-memory title index behind the title match (hermes_state.listing.title_index): its candidates
are exactly the titles SQLite's ``LIKE`` finds, however the text was typed (a new search or
the last one extended), and it follows the store: new sessions, renames, deletions."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hermes_state import SessionDB, listing
from hermes_state.listing import ListQuery
from hermes_state.query import escape_like
from hermes_state.listing.title_index import TitleIndex

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
    listing.refresh_title_index(store.store, index)
    assert set(index.candidates(text)) == _like(store, text)


def test_a_text_typed_key_by_key_narrows_to_the_same_answers(store):
    rng = random.Random(3)
    index = TitleIndex()
    listing.refresh_title_index(store.store, index)
    words = ["release notes", "docker on", "the server", "数据库迁移", "under_score vs"]
    for _ in range(30):
        word = rng.choice(words)
        for end in range(1, len(word) + 1):
            text = word[:end]
            assert set(index.candidates(text)) == _like(store, text), text
        # and backwards, as a person deleting what they typed
        for end in range(len(word), 0, -1):
            assert set(index.candidates(word[:end])) == _like(store, word[:end])


def test_titles_are_walked_newest_first(store):
    """The index gives a text's titles in the order the title match shows them: newest first."""
    store._conn.execute("UPDATE sessions SET started_at = 1000.0 + ((rowid * 7919) % 97)")
    store._conn.commit()
    index = TitleIndex()
    listing.refresh_title_index(store.store, index)
    for text in ("e", "release", "the", "数据"):
        newest = list(index.newest(text))
        rows = store._fetchall(
            "SELECT rowid FROM sessions WHERE title LIKE ? ESCAPE '\\' ORDER BY started_at DESC",
            (f"%{escape_like(text)}%",),
        )
        assert newest == [r[0] for r in rows], text


def test_a_walk_cut_short_then_extended_misses_nothing(store):
    """The title match stops walking once it has enough; the next, longer text starts from
    what that walk saw and goes on from where it stopped, with the same answer as a fresh
    walk (and a shorter text starts again)."""
    rng = random.Random(11)
    index = TitleIndex()
    listing.refresh_title_index(store.store, index)
    words = ["release notes", "docker on", "the server", "数据库迁移", "under_score vs", "e"]
    for _ in range(60):
        word = rng.choice(words)
        for end in range(1, len(word) + 1):
            text = word[:end]
            walk = index.newest(text)
            taken = [rowid for _, rowid in zip(range(rng.randint(0, 3)), walk)]
            # a new walk of the same text, after a cut one, gives every title in order
            expected = [r for r in index.newest(text)]
            assert set(expected) == _like(store, text), text
            assert taken == expected[:len(taken)], text
    # A fresh index walking the whole text at once gives the same lists.
    fresh = TitleIndex()
    listing.refresh_title_index(store.store, fresh)
    for word in words:
        assert list(index.newest(word)) == list(fresh.newest(word))


def test_a_common_text_reads_only_the_newest_titles(tmp_path, monkeypatch):
    """A text most titles hold is answered from the newest of them: the walk stops once the
    match has its sessions, rather than reading every title."""
    path = tmp_path / "state.db"
    db = SessionDB(path)
    for n in range(300):
        db.create_session(f"r{n:03d}", "telegram" if n % 7 == 0 else "cli")
        db.set_session_title(f"r{n:03d}", f"release {n}")
    index = TitleIndex()
    walked: list[int] = []
    real = TitleIndex.newest

    def counting(self, text):
        for rowid in real(self, text):
            walked.append(rowid)
            yield rowid

    monkeypatch.setattr(TitleIndex, "newest", counting)
    try:
        got = [s.id for s in listing.match_sessions(db.store, "release", index=index, limit=8)]
        assert got == [s.id for s in listing.match_sessions(db.store, "release", limit=8)]
        assert got == [f"r{n:03d}" for n in range(299, 291, -1)]
        assert 8 <= len(walked) <= 16
        # A filter most of them fail: batch after batch until eight pass.
        got = [s.id for s in listing.match_sessions(db.store, "release", ListQuery(source="telegram"), index=index, limit=8)]
        assert got == [s.id for s in listing.match_sessions(db.store, "release", ListQuery(source="telegram"), limit=8)]
        assert got == [f"r{n:03d}" for n in range(294, 244, -7)]
    finally:
        db.close()


def test_candidates_the_filters_reject_are_left_to_sql(store, monkeypatch):
    """Reading candidates that a filter turns away, one batch after another, stops at
    MAX_TITLE_CANDIDATES: SQLite's scan of every title answers instead, the same answer."""
    monkeypatch.setattr(listing.pages, "MAX_TITLE_CANDIDATES", 2)
    index = TitleIndex()
    statements: list[str] = []
    store._read(lambda conn: conn.set_trace_callback(statements.append))
    try:
        for text, source in (("release", "telegram"), ("the", "cli")):
            statements.clear()
            got = [s.id for s in listing.match_sessions(store.store, text, ListQuery(source=source), index=index)]
            assert got == [s.id for s in listing.match_sessions(store.store, text, ListQuery(source=source))]
            assert any("title IS NOT NULL AND title LIKE" in sql for sql in statements), text
    finally:
        store._read(lambda conn: conn.set_trace_callback(None))


def test_new_sessions_are_added_and_renames_seen_after_a_rebuild(store, monkeypatch):
    now = [1000.0]
    index = TitleIndex(clock=lambda: now[0])
    listing.refresh_title_index(store.store, index)
    store.create_session("late", "cli")
    store.set_session_title("late", "kumquat harvest")
    listing.refresh_title_index(store.store, index)
    assert set(index.candidates("kumquat")) == _like(store, "kumquat") != set()
    # An old session renamed into a match: seen once the index is rebuilt (MAX_AGE_S).
    store.set_session_title("s00", "kumquat season")
    listing.refresh_title_index(store.store, index)
    now[0] += TitleIndex.MAX_AGE_S + 1
    store.set_session_title("s01", "kumquat jam")
    listing.refresh_title_index(store.store, index)
    assert set(index.candidates("kumquat")) == _like(store, "kumquat")


@pytest.mark.parametrize("recent_window", [2000, 3])
def test_the_title_match_through_the_index_is_the_sql_one(tmp_path, monkeypatch, recent_window):
    """listing.match_sessions with an index answers what it answers without one, with
    filters, after deletions, renames and sessions added (candidates are read again with the
    real condition); also when the newest sessions it reads again hold few of them."""
    monkeypatch.setattr(listing.pages, "RECENT_TITLE_WINDOW", recent_window)
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
                # a session added since the build, started at any time (an import): the
                # index walks its titles newest first, but must not take this one's place
                # in that order for granted
                added = f"added{step}"
                writer.create_session(added, rng.choice(["cli", "telegram"]))
                writer.set_session_title(added, f"{text} {rng.choice(titles)}"[:100])
                started = rng.choice([0.0, 1767225600.0 - rng.randint(0, 86400 * 400), 1767225600.0 + 10])
                writer._conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (started, added))
                writer._conn.commit()
            for options in ({}, {"source": "telegram"}, {"exclude_sources": ("tool",)}):
                with_index = [s.id for s in listing.match_sessions(reader.store, text, ListQuery(**options), index=index, limit=20)]
                without = [s.id for s in listing.match_sessions(reader.store, text, ListQuery(**options), limit=20)]
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
            got = [s.id for s in listing.match_sessions(reader.store, text, index=index)]
            newest_scan = [sql for sql in statements if "ORDER BY started_at DESC LIMIT 2000" in sql]
            assert index.exact and newest_scan == [], text
            assert got == [s.id for s in listing.match_sessions(reader.store, text)], text
        # "untitled" (older than "newest", the last titled session the index read) is titled.
        writer.set_session_title("untitled", "release of the zebras")
        statements.clear()
        got = [s.id for s in listing.match_sessions(reader.store, "release of", index=index)]
        assert got == ["untitled"] and not index.exact
        assert [sql for sql in statements if "ORDER BY started_at DESC LIMIT 2000" in sql]
    finally:
        reader._read(lambda conn: conn.set_trace_callback(None))
        reader.close()
        writer.close()


def test_an_index_built_on_one_connection_sees_every_commit_on_the_one_it_answers_on(db_path):
    """``PRAGMA data_version`` counts per connection, once per change a connection notices:
    an index built on a builder connection and refreshed on another must compare with that
    other's count, taken before the build read (``answer_on``). Here the builder notices two
    commits one by one and the reader both at once, so after one more commit the reader's
    count is the builder's: compared with the builder's, that rename would go unseen."""
    writer = SessionDB(db_path)
    writer.create_session("s1", "cli")
    writer.set_session_title("s1", "first title")
    reader = SessionDB(db_path, read_only=True)
    builder = SessionDB(db_path, read_only=True)
    try:
        count = lambda db: listing.title_index_version(db.store)[0]  # noqa: E731
        base = count(reader)
        assert count(builder) == base
        writer.set_session_title("s1", "second title")
        assert count(builder) == base + 1
        writer.set_session_title("s1", "third title")
        assert count(builder) == base + 2
        seen = listing.title_index_version(reader.store)  # before the build reads: both commits at once
        assert seen[0] == base + 1
        index = TitleIndex(owner_rebuilds=True)
        listing.refresh_title_index(builder.store, index)  # the builder's count: base + 2
        index.answer_on(seen)
        reader._read(index.refresh)
        assert index.exact  # nothing committed since the reader's count was taken
        writer.set_session_title("s1", "renamed after the build")
        assert count(reader) == base + 2  # the builder's count at the build: the trap
        reader._read(index.refresh)
        assert not index.exact  # the rename is a change to the index that answers here
        assert [s.id for s in listing.match_sessions(reader.store, "renamed after", index=index)] == ["s1"]
    finally:
        builder.close()
        reader.close()
        writer.close()
