"""Phrases of common words: what the one scan of their matches read is what they are ranked
from, and words the index knows are not looked for again as substrings."""

from __future__ import annotations

import random

import pytest

from hermes_state import SessionDB
from hermes_state.search import TUNING, forget_answers


@pytest.fixture
def db(tmp_path):
    """Two common words (in about a third of the messages each) that stand together as a
    phrase in a handful, of different lengths; every other word distinct."""
    store = SessionDB(tmp_path / "state.db")
    rnd = random.Random(7)
    rows = []
    for i in range(3000):
        words = [f"w{rnd.randrange(10_000)}" for _ in range(rnd.randrange(4, 30))]
        if i % 3 == 0:
            words.insert(rnd.randrange(len(words)), "config")
        if i % 3 == 1:
            words.insert(rnd.randrange(len(words)), "file")
        if i % 500 == 7:
            words[rnd.randrange(len(words)):0] = ["config", "file"]
        rows.append((f"s{i % 40}", "user", " ".join(words), 1000.0 + i))
    for sid in sorted({row[0] for row in rows}):
        store.create_session(sid, "cli")
    store._execute_write(lambda conn: conn.executemany(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)", rows))
    yield store
    store.close()


def traced(db, fn):
    statements: list[str] = []
    db._read(lambda conn: conn.set_trace_callback(statements.append))
    try:
        return fn(), statements
    finally:
        db._read(lambda conn: conn.set_trace_callback(None))


def exact_order(db, query):
    return [r[0] for r in db._conn.execute(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank", (query,))]


def test_a_phrase_of_common_words_is_ranked_from_its_one_scan(db):
    result, statements = traced(db, lambda: db.search('"config file"', limit=20, sort="auto"))
    expected = exact_order(db, '"config file"')
    assert len(expected) == 6
    assert result.ranking == "bm25" and result.total_exact and result.total_estimate == 6
    assert sorted(hit.id for hit in result.hits) == sorted(expected)
    assert not [s for s in statements if "ORDER BY rank" in s or ".rank" in s]
    # every match was scored; the ones holding the phrase alone in a short text first
    scores = [hit.score for hit in result.hits]
    assert all(score is not None and score > 0 for score in scores)


def test_a_phrase_ranked_from_its_scan_comes_in_the_order_fts5_ranks_it(db):
    """Every match read, each scored by bm25 over its tokens: the order of FTS5's own
    ``ORDER BY rank``, without the two walks it costs."""
    result, statements = traced(db, lambda: db.search('"config file"', limit=20, sort="auto"))
    assert result.ranking == "bm25"
    assert not [s for s in statements if "ORDER BY rank" in s]
    by_score = [hit.id for hit in sorted(result.hits, key=lambda hit: (-hit.score, -hit.id))]
    assert by_score == exact_order(db, '"config file"')


def test_a_phrase_with_more_matches_than_the_window_is_read_whole_and_ranked(db, monkeypatch):
    """Past the window, the scan reads the phrase's older matches too (up to
    ``PHRASE_RANKED_ROWS``): every match ranked, none by a second FTS5 statement."""
    monkeypatch.setattr(TUNING, "WINDOW", 3)
    result, statements = traced(db, lambda: db.search('"config file"', limit=20, sort="auto"))
    assert result.ranking == "bm25" and result.total_exact and result.total_estimate == 6
    assert sorted(hit.id for hit in result.hits) == sorted(exact_order(db, '"config file"'))
    assert not [s for s in statements if "ORDER BY rank" in s]
    # More matches than it may read whole: FTS5 ranks them where that is affordable (these
    # words are in a third of 3,000 messages), the window where it is not.
    monkeypatch.setattr(TUNING, "PHRASE_RANKED_ROWS", 4)
    forget_answers(db.store)
    result, statements = traced(db, lambda: db.search('"config file"', limit=20, sort="auto"))
    assert result.ranking == "bm25" and [s for s in statements if "ORDER BY rank" in s]
    monkeypatch.setattr(TUNING, "EXACT_BM25_MAX_ROWS", 20)
    forget_answers(db.store)
    assert db.search('"config file"', limit=20, sort="auto").ranking == "bm25-recent-window"


def test_known_words_found_nowhere_together_are_not_sought_as_substrings(db):
    db.create_session("glued", "cli")
    db.append_message("glued", "user", "w1 configfile w2")
    result, statements = traced(db, lambda: db.search('"file config"', sort="auto"))
    assert result.hits == [] and result.path == "fts5"
    assert not [s for s in statements if "messages_fts_trigram" in s and "MATCH" in s]
    assert "no message holds" in (result.note or "")


def test_a_word_the_index_never_saw_as_a_word_is_still_sought_as_a_substring(db):
    db.create_session("cjk", "cli")
    mid = db.append_message("cjk", "user", "帮我修改youer服务端的配置 config")
    result = db.search("config youer", sort="auto")
    assert result.path == "fts5+trigram" and [hit.id for hit in result.hits] == [mid]


def _pages(db, query, limit):
    hits, offset = [], 0
    while True:
        result = db.search(query, limit=limit, offset=offset, sort="auto")
        hits += [hit.id for hit in result.hits]
        if not result.has_more:
            return hits
        offset += len(result.hits)
        assert offset < 100


def test_a_phrase_of_commoner_words_reads_only_its_newest_matches_at_a_keystroke(db, monkeypatch):
    """Its words' doclists are longer than a keystroke's walk may be (5M messages: 14.5 ms
    for the newest 400 of "auth module"'s 600 matches): the scan stops at the rowid the
    bounded walk reaches, the newest matches above it are ranked as a window, and the older
    follow newest first -- every match still on some page, once."""
    monkeypatch.setattr(TUNING, "PHRASE_WALK_ENTRIES", 1000)  # (about half this store's walk)
    monkeypatch.setattr(TUNING, "PHRASE_BOUNDED_MIN_ROWS", 3)  # (its newest half holds 3 matches)
    every = exact_order(db, '"config file"')
    newest = sorted(every, reverse=True)[:3]
    result, statements = traced(db, lambda: db.search('"config file"', limit=2, sort="auto"))
    assert result.ranking == "bm25-recent-window" and not result.total_exact
    assert {hit.id for hit in result.hits} <= set(newest)
    assert [s for s in statements if "messages_fts.rowid >= " in s], "the scan was bounded"
    assert not [s for s in statements if "ORDER BY rank" in s]
    paged = _pages(db, '"config file"', 2)
    assert sorted(paged) == sorted(every) and len(paged) == len(set(paged))


def test_a_bounded_walk_that_finds_too_few_to_fill_a_page_answers_with_them_and_the_next_page_reads_on(
        db, monkeypatch):
    """A phrase too rare for the keystroke's bounded walk to fill a page (`"config file"` at
    5M messages: 2 of its 21 matches within it, the rest behind a ~50 ms walk): the page ends
    with what the walk found and says it is short on purpose; the next page reads the older
    matches, so every match is still on some page, once."""
    monkeypatch.setattr(TUNING, "PHRASE_WALK_ENTRIES", 1000)
    monkeypatch.setattr(TUNING, "PHRASE_BOUNDED_MIN_ROWS", 41)
    every = exact_order(db, '"config file"')
    result, statements = traced(db, lambda: db.search('"config file"', limit=20, sort="auto"))
    assert result.ranking == "bm25-recent-window" and not result.total_exact
    assert 0 < len(result.hits) < len(every)
    assert {hit.id for hit in result.hits} == set(sorted(every, reverse=True)[:len(result.hits)])
    assert result.has_more and result.short_page
    floor = min(hit.id for hit in result.hits)
    assert not [s for s in statements if "messages_fts.rowid < " in s], "nothing below the bound read"
    following = db.search('"config file"', limit=20, offset=len(result.hits), sort="auto")
    assert {hit.id for hit in following.hits} == set(every) - {hit.id for hit in result.hits}
    assert all(hit.id < floor for hit in following.hits)
    assert not following.has_more and not following.short_page
    # What the screen's script gets, by conversation (the default sort), is every match at once.
    assert sorted(hit.id for hit in db.search('"config file"', limit=20).hits) == sorted(every)


def test_a_bounded_walk_that_finds_no_match_reads_on_and_ranks_every_match(db, monkeypatch):
    """Nothing above the bound: an empty page would say nothing, so the walk goes on down."""
    monkeypatch.setattr(TUNING, "PHRASE_WALK_ENTRIES", 10)  # (the newest dozen messages)
    newest = db._conn.execute("SELECT max(rowid) FROM messages_fts").fetchone()[0]
    assert all(rowid < newest - 30 for rowid in exact_order(db, '"config file"'))
    result = db.search('"config file"', limit=20, sort="auto")
    assert result.ranking == "bm25" and result.total_exact and result.total_estimate == 6
    assert not result.short_page and not result.has_more
    assert sorted(hit.id for hit in result.hits) == sorted(exact_order(db, '"config file"'))


@pytest.mark.parametrize("walk", [1000, 1400])
@pytest.mark.parametrize("limit", [1, 2, 3])
def test_a_page_that_ends_where_the_bounded_window_ends_still_leads_to_the_older_matches(db, monkeypatch,
                                                                                        walk, limit):
    """The window holds as many matches as the bounded walk found (any number): a page that
    ends exactly at its end must still say older matches follow, or they are never shown."""
    monkeypatch.setattr(TUNING, "PHRASE_WALK_ENTRIES", walk)
    monkeypatch.setattr(TUNING, "PHRASE_BOUNDED_MIN_ROWS", 2)
    every = exact_order(db, '"config file"')
    paged = _pages(db, '"config file"', limit)
    assert sorted(paged) == sorted(every) and len(paged) == len(set(paged))


def test_a_short_page_that_held_every_match_says_so_exactly_once_the_next_page_finds_none(db, monkeypatch):
    """Every match of the phrase among the newest messages: the keystroke's page holds them all
    but cannot know it (knowing is the walk it leaves out), so it says more may follow; the
    next page reads to the end and gives the exact total, for the count the pane shows."""
    monkeypatch.setattr(TUNING, "PHRASE_WALK_ENTRIES", 1000)
    db.create_session("recent", "cli")
    ids = [db.append_message("recent", "user", f"the config file number {n}") for n in range(3)]
    db._execute_write(lambda conn: conn.execute(
        "DELETE FROM messages WHERE id NOT IN ({}) AND content LIKE '%config file%'".format(",".join("?" * 3)), ids))
    assert sorted(exact_order(db, '"config file"')) == ids
    first = db.search('"config file"', limit=40, sort="auto")
    assert sorted(hit.id for hit in first.hits) == ids
    assert first.short_page and first.has_more and not first.total_exact
    following = db.search('"config file"', limit=40, offset=3, sort="auto")
    assert following.hits == [] and not following.has_more
    assert following.total_exact and following.total_estimate == 3
