"""The substring (trigram) searches read each match's text through the message row they
already join when the index's DDL says what that text is (issue 15: v30's trigram view cost a
statement through a join and a JSON test per row, 6 of an 11-ms search at 1M messages), or
from an inline index's own copy -- and answer exactly as reading the index's column did."""

from __future__ import annotations

import json

import pytest

from hermes_state import SessionDB
from hermes_state.search import TUNING, forget_answers
from hermes_state.search import context as context_mod
from hermes_state.search import ranking as ranking_mod
from hermes_state.visibility import INTERNAL_SOURCES

from corpus_helpers import corpora_in_both_layouts

#: CJK substrings (the trigram path: ranked in the window, or exact bm25, or newest first),
#: ASCII pieces of words that no whole word matches (the ``fts5+trigram`` retry), a NOT.
QUERIES = ("数据库", "内存泄漏", "服务器", "サーバー", "데이터베이스", "数据库 NOT 服务器", "ockerfil", "ubernete")


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    return corpora_in_both_layouts(tmp_path_factory, "trigram", messages=6000, seed=5)


@pytest.fixture
def small_window(monkeypatch):
    """The window ranking on a corpus of thousands, as 1M messages use it."""
    monkeypatch.setattr(TUNING, "WINDOW", 40)
    monkeypatch.setattr(TUNING, "EXACT_BM25_MAX_ROWS", 60)


def read_from_the_index(monkeypatch):
    """Every plain scan reads the FTS table's own column, as before."""
    monkeypatch.setattr(context_mod, "plain_text_sql", lambda table, ctx: f"{table}.content")


def answer(result):
    return (
        [(h.id, h.snippet, tuple(map(tuple, h.spans)), h.score) for h in result.hits],
        result.total_estimate, result.total_exact, result.has_more, result.ranking, result.path, result.error,
    )


def searches(db, queries, **kw):
    out = {}
    for sort in ("auto", "newest", "rank"):
        for query in queries:
            forget_answers(db.store)
            out[(query, sort)] = answer(db.search(query, limit=20, sort=sort, **kw))
    return out


@pytest.mark.parametrize("schema", [16, 30])
def test_substring_searches_answer_as_reading_the_index_did(corpora, small_window, schema, monkeypatch):
    db = SessionDB(corpora[schema], read_only=True)
    try:
        statements: list[str] = []
        db._read(lambda conn: conn.set_trace_callback(statements.append))
        through_messages = searches(db, QUERIES, exclude_sources=list(INTERNAL_SOURCES))
        db._read(lambda conn: conn.set_trace_callback(None))
        scans = [s for s in statements if "messages_fts_trigram MATCH" in s and "SELECT messages_fts_trigram.rowid" in s]
        assert scans and not any("messages_fts_trigram.content" in s for s in scans)
        read_from_the_index(monkeypatch)
        assert searches(db, QUERIES, exclude_sources=list(INTERNAL_SOURCES)) == through_messages
        paths = {got[5] for got in through_messages.values()}
        rankings = {got[4] for got in through_messages.values()}
        assert {"trigram", "fts5+trigram"} <= paths
        assert {"bm25-recent-window", "newest", "bm25"} <= rankings
        assert all(got[6] is None for got in through_messages.values())
        assert sum(len(got[0]) for got in through_messages.values()) > 100
    finally:
        db.close()


def test_a_session_delegated_after_its_messages_were_indexed_is_still_searchable(upstream_copy, monkeypatch):
    """v30's trigram view leaves out delegated sessions, and no trigger takes their messages
    out of the index when a session becomes one: FTS5 asked for such a row's text fails
    ("database disk image is malformed"), and a search that reads it failed whole. Read
    through the message, it is a hit like any other."""
    path = upstream_copy(30)
    db = SessionDB(path)
    try:
        db.create_session("later-delegate", "cli")
        db.append_message("later-delegate", "user", "数据库 连接池 满了")
        db.create_session("plain", "cli")
        db.append_message("plain", "user", "数据库 备份 完成")
        db._conn.execute(
            "UPDATE sessions SET model_config = ? WHERE id = 'later-delegate'",
            [json.dumps({"_delegate_from": "plain"})],
        )
        db._conn.commit()
        found = db.search("数据库", limit=20, sort="auto")
        assert found.error is None
        assert {h.session_id for h in found.hits} >= {"later-delegate", "plain"}
        read_from_the_index(monkeypatch)
        forget_answers(db.store)
        assert "malformed" in (db.search("数据库", limit=20, sort="auto").error or "")
    finally:
        db.close()


def test_one_substring_is_scored_as_the_general_path_scores_it():
    """The one-substring shortcut of the window ranking (no call per row) gives the scores
    and the order the general loop gives: a phrase that counts nothing added beside it
    sends the same rows down that loop."""
    texts = ["数据库", "数据库数据库 and more", "DATA数据库", "İstanbul 数据库", None, "", "nothing here",
             "数据 库", "数据库" * 40, "ǅ数据库ǆ", "数据库\n数据库\t数据库"]
    rows = [(100 - i, text) for i, text in enumerate(texts)]
    one = ranking_mod.Phrase('"数据库"', ["数据库"], False, False)
    nothing = ranking_mod.Phrase('"zzzz"', ["zzzz"], False, True)
    single = ranking_mod.window_scores(rows, [one], [1.7], True)
    general = ranking_mod.window_scores(rows, [one, nothing], [1.7, 0.4], True)
    assert single == general
    # Rows without it last, newest first among them; the texts made of it lead.
    assert [rowid for score, rowid, _text in single if not score] == [96, 95, 94, 93]
    assert [rowid for score, rowid, _text in single][:2] == [92, 90]
