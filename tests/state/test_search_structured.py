"""SessionDB.search: the structured, latency-bounded search for the UI (issue #3 item 3-5)."""

from __future__ import annotations

import re

import pytest

from hermes_state import SessionDB
from hermes_state import query as query_mod
from hermes_state.search import TUNING
from hermes_state.models import CONVERSATION_RANKING, SearchHit, SearchResult
from hermes_state.query import apply_prefix_last, find_spans, make_snippet


@pytest.fixture
def db(tmp_path):
    store = SessionDB(tmp_path / "state.db")
    yield store
    store.close()


def add(db, sid, role, content, source="cli", tool_name=None, tool_calls=None):
    if db.get_session(sid) is None:
        db.create_session(sid, source)
    return db.append_message(sid, role, content, tool_name=tool_name, tool_calls=tool_calls)


def bulk(db, sid, contents, source="cli", role="user"):
    """Insert many messages in one transaction (the FTS triggers still fire)."""
    if db.get_session(sid) is None:
        db.create_session(sid, source)
    rows = [(sid, role, text, 1000.0 + i) for i, text in enumerate(contents)]
    db._execute_write(
        lambda conn: conn.executemany(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)", rows
        )
    )
    return [r[0] for r in db._conn.execute("SELECT id FROM messages WHERE session_id = ? ORDER BY id", (sid,))]


def hit_ids(result):
    return [h.id for h in result.hits]


# ----------------------------------------------------------------------------- shape


def test_search_returns_typed_result_and_hits(db):
    mid = add(db, "s1", "user", "Deploy docker containers")
    db.set_session_title("s1", "Ops day")
    result = db.search("docker", sort="auto")
    assert isinstance(result, SearchResult)
    assert result.path == "fts5" and result.ranking == "bm25"
    assert result.query == "docker" and result.effective_query == "docker"
    assert result.total_estimate == 1 and result.total_exact and not result.has_more
    assert result.elapsed_ms > 0
    (hit,) = result.hits
    assert isinstance(hit, SearchHit)
    assert (hit.id, hit.session_id, hit.role, hit.source, hit.session_title) == (mid, "s1", "user", "cli", "Ops day")
    assert hit.session_started == db.get_session("s1")["started_at"]
    assert hit.snippet.startswith("Deploy docker containers")
    assert [hit.snippet[a:b] for a, b in hit.spans] == ["docker"]
    assert hit.raw_snippet.startswith("Deploy >>>docker<<< containers")
    assert hit.score is not None and hit.path == "fts5"


def test_spans_are_exact_even_when_text_contains_marker_lookalikes(db):
    add(db, "s1", "user", ">>> print('docker') <<< # doctest")
    (hit,) = db.search("docker", sort="auto").hits
    assert [hit.snippet[a:b] for a, b in hit.spans] == ["docker"]
    assert hit.snippet.startswith(">>> print('docker') <<<")


def test_nothing_searchable_is_a_note_not_an_error(db):
    add(db, "s1", "user", "text")
    for query in ["", "   ", "***", "-- !!", "AND"]:
        result = db.search(query, sort="auto")
        assert result.hits == [] and result.error is None and result.note
        assert result.path == ""


def test_a_query_that_starts_with_not_finds_nothing_and_says_why(db):
    """Upstream's sanitiser drops a leading operator: `NOT docker` searched docker, the very
    messages the person asked to leave out. The structured search finds nothing and says
    NOT needs a word before it; a lower-case `not` is a word like any other."""
    add(db, "s1", "user", "docker compose up")
    add(db, "s2", "user", "deploy without docker")
    add(db, "s3", "user", "deploy it by hand")
    for query in ["NOT docker", "  NOT docker deploy"]:
        result = db.search(query, sort="auto")
        assert result.hits == [] and result.error is None
        assert result.note.startswith("NOT leaves words out of what the words before it find")
    kept = db.search("deploy NOT docker", sort="auto")
    assert [hit.session_id for hit in kept.hits] == ["s3"]
    assert [hit.session_id for hit in db.search("deploy not", sort="auto").hits] != []


def test_no_match_is_exact_zero(db):
    add(db, "s1", "user", "text")
    result = db.search("zzqxjv", sort="auto")
    assert result.hits == [] and result.total_estimate == 0 and result.total_exact
    assert result.error is None


def test_invalid_sort_is_a_programming_error(db):
    with pytest.raises(ValueError):
        db.search("x", sort="best")


# ----------------------------------------------------------------------------- ranking


def test_sort_rank_matches_search_messages_bm25_order(db):
    bulk(db, "s", ["cache " + "filler " * 30, "cache cache cache", "some cache here", "cache"])
    expected = [r["id"] for r in db.search_messages("cache")]
    # (one conversation: ranked by conversation, its hits are FTS5's bm25 order)
    for sort, ranking in (("rank", CONVERSATION_RANKING), ("auto", "bm25")):
        result = db.search("cache", sort=sort)
        assert result.ranking == ranking
        assert hit_ids(result) == expected


def test_sort_newest_orders_by_rowid_desc(db):
    ids = bulk(db, "s", [f"cache item {i}" for i in range(10)])
    result = db.search("cache", sort="newest", limit=4)
    assert result.ranking == "newest"
    assert hit_ids(result) == ids[::-1][:4]
    assert result.has_more
    assert all(h.score is None for h in result.hits)


def test_window_ranking_when_bm25_would_be_expensive(db, monkeypatch):
    monkeypatch.setattr(TUNING, "EXACT_BM25_MAX_ROWS", 5)
    monkeypatch.setattr(TUNING, "WINDOW", 10)
    contents = [f"alpha filler number {i} " + "pad " * 20 for i in range(40)]
    contents[35] = "alpha alpha alpha"  # dense and short: best bm25 inside the window
    contents[5] = "alpha alpha alpha alpha"  # better still, but outside the newest 10
    ids = bulk(db, "s", contents + [f"unrelated {i}" for i in range(100)])
    result = db.search("alpha", limit=5, sort="auto")
    assert result.ranking == "bm25-recent-window"
    assert result.hits[0].id == ids[35]
    assert ids[5] not in hit_ids(result)
    window_ids = set(ids[30:40])
    assert set(hit_ids(result)) <= window_ids
    # Paging is stable: the window's ranked order, then older matches newest first.
    pages = []
    for offset in range(0, 40, 5):
        pages += hit_ids(db.search("alpha", limit=5, offset=offset, sort="auto"))
    assert len(pages) == len(set(pages)) == 40
    assert set(pages[:10]) == window_ids
    assert pages[10:] == ids[:30][::-1]


def test_near_universal_terms_rank_newest_first(db, monkeypatch):
    monkeypatch.setattr(TUNING, "EXACT_BM25_MAX_ROWS", 5)
    monkeypatch.setattr(TUNING, "WINDOW", 10)
    ids = bulk(db, "s", [f"the thing {i}" for i in range(30)])
    result = db.search("the", limit=3, sort="auto")
    assert result.ranking == "newest"
    assert hit_ids(result) == ids[::-1][:3]
    assert 20 <= result.total_estimate <= 40 and not result.total_exact
    # Every match fits the window: all of them are ranked (bm25), none is left out.
    monkeypatch.setattr(TUNING, "WINDOW", 100)
    result = db.search("the", limit=3, sort="auto")
    assert result.ranking == "bm25" and result.total_estimate == 30 and result.total_exact


def test_whole_words_few_enough_for_bm25_are_ranked_without_a_window_scan(db, monkeypatch):
    """A first key (``d``), a one-word query: its matches are counted from the index alone;
    when FTS5 can rank them all, no text is read for a window that would be thrown away
    -- and the answer is the exact ranking of ``sort="rank"``. A word past the threshold still
    takes the window; prefixes and several words still scan it first."""
    monkeypatch.setattr(TUNING, "EXACT_BM25_MAX_ROWS", 80)
    monkeypatch.setattr(TUNING, "WINDOW", 10)
    bulk(db, "s", [f"unrelated {i}" for i in range(200)] + [f"beta {'pad ' * (i % 7)} gamma" for i in range(15)]
         + [f"gamma only {i}" for i in range(30)])

    def run(text, **kw):
        statements: list[str] = []
        db._read(lambda conn: conn.set_trace_callback(statements.append))
        try:
            result = db.search(text, limit=5, **{"sort": "auto", **kw})
        finally:
            db._read(lambda conn: conn.set_trace_callback(None))
        scans = [s for s in statements if "ORDER BY messages_fts.rowid DESC" in s]
        return result, scans

    result, scans = run("beta")  # 15 matches: work 30 <= 80
    assert result.ranking == "bm25" and not scans
    ranked = db.search("beta", limit=5, sort="rank")
    assert [(h.id, h.snippet, h.score) for h in result.hits] == [(h.id, h.snippet, h.score) for h in ranked.hits]
    # (15 in the index; what the visibility rule hides is not counted, so not called exact)
    assert (result.total_estimate, result.has_more) == (15, True)
    for text in ("beta gamma", "beta -pad", '"beta pad"'):
        # Several words or a phrase: a probe of an AND of common words reads far more than
        # it returns; the scan of the window is the probe, as before.
        result, scans = run(text)
        assert result.hits and scans
    result, scans = run("gamma")  # 45 matches: work 90, past the threshold: the window ranks
    assert result.ranking in ("bm25-recent-window", "newest") and scans
    result, scans = run("bet", prefix_last=True)  # a prefix: one scan serves as probe
    assert result.hits and scans
    result, scans = run("zeta")  # nothing matches: nothing scanned
    assert (result.hits, result.total_estimate, result.total_exact) == ([], 0, True) and not scans
    # A source filter: the index count bounds the answer; the ranking applies the filter.
    db.create_session("tg", "telegram")
    db.append_message("tg", "user", "beta from telegram")
    result, scans = run("beta", source_filter=["telegram"])
    assert [h.session_id for h in result.hits] == ["tg"] and not scans
    assert (result.total_estimate, result.total_exact, result.has_more) == (1, True, False)


def test_rank_mode_stays_exact_past_thresholds(db, monkeypatch):
    monkeypatch.setattr(TUNING, "EXACT_BM25_MAX_ROWS", 5)
    bulk(db, "s", [f"beta {'pad ' * (i % 7)}" for i in range(30)])
    result = db.search("beta", sort="rank")
    assert result.ranking == CONVERSATION_RANKING
    assert hit_ids(result) == [r["id"] for r in db.search_messages("beta")]


@pytest.mark.parametrize("sort", ["auto", "newest"])
def test_total_estimate_extrapolates_past_the_probe(db, monkeypatch, sort):
    monkeypatch.setattr(TUNING, "PROBE_ROWS", 10)  # the probe of sort=newest / rank
    monkeypatch.setattr(TUNING, "WINDOW", 10)  # the first scan of sort=auto
    bulk(db, "s", [("gamma " if i % 2 else "delta ") + str(i) for i in range(200)])
    result = db.search("gamma", sort=sort)
    assert not result.total_exact
    assert 60 <= result.total_estimate <= 140


# ----------------------------------------------------------------------------- filters


@pytest.mark.parametrize("query,path", [("docker", "fts5"), ("记忆断裂", "trigram"), ("通信", "trigram")])
def test_filters_apply_on_every_path(db, query, path):
    add(db, "cli1", "user", "docker 记忆断裂 通信", source="cli")
    add(db, "tg1", "assistant", "docker 记忆断裂 通信", source="telegram")
    add(db, "sig1", "user", "docker 记忆断裂 通信", source="signal")
    assert db.search(query, sort="auto").path == path
    assert len(db.search(query, sort="auto").hits) == 3
    assert {h.source for h in db.search(query, source_filter=["telegram"], sort="auto").hits} == {"telegram"}
    assert db.search(query, source_filter=[], sort="auto").hits == []
    assert {h.source for h in db.search(query, exclude_sources=["cli", "signal"], sort="auto").hits} == {"telegram"}
    assert {h.role for h in db.search(query, role_filter=["assistant"], sort="auto").hits} == {"assistant"}
    filtered = db.search(query, source_filter=["signal"], sort="auto")
    assert filtered.total_estimate == 1 and filtered.total_exact


# ----------------------------------------------------------------------------- CJK / SR-16


def test_trigram_path_for_three_cjk_characters(db):
    mid = add(db, "s", "user", "关于记忆断裂的问题")
    result = db.search("记忆断裂", sort="auto")
    assert result.path == "trigram" and hit_ids(result) == [mid]
    (hit,) = result.hits
    assert [hit.snippet[a:b] for a, b in hit.spans] == ["记忆断裂"]


def test_short_cjk_terms_found_through_trigram_expansion(db):
    gx = add(db, "s", "user", "广西的山")
    gl = add(db, "s", "user", "桂林米粉")
    add(db, "s", "user", "别的")
    result = db.search("广西 OR 桂林 OR 漓江", sort="auto")
    # Short words are ranked as other words are (by bm25), not newest first.
    assert result.path == "trigram" and result.ranking == "bm25"
    assert sorted(hit_ids(result)) == sorted([gl, gx])
    assert {h.id: [h.snippet[a:b] for a, b in h.spans] for h in result.hits} == {gl: ["桂林"], gx: ["广西"]}


def test_short_cjk_term_at_end_of_content_is_found(db):
    mid = add(db, "s", "user", "问题是通信")
    single = add(db, "s", "user", "信")
    assert hit_ids(db.search("通信", sort="auto")) == [mid]
    assert set(hit_ids(db.search("信", sort="auto"))) == {mid, single}


def test_short_cjk_absent_term_is_answered_without_scanning(db):
    bulk(db, "s", ["通信 " + str(i) for i in range(300)])
    steps = {"n": 0}

    def tick():
        steps["n"] += 1
        return 0

    db._conn.set_progress_handler(tick, 100)
    try:
        result = db.search("鑫鑫", sort="auto")
    finally:
        db._conn.set_progress_handler(None, 0)
    assert result.hits == [] and result.total_estimate == 0 and result.total_exact
    assert steps["n"] < 50  # a full LIKE scan of 300 rows takes far more


def test_hangul_short_tokens_and_or(db):
    both = add(db, "s", "user", "서버 배포 완료")
    server = add(db, "s", "user", "서버 점검")
    deploy = add(db, "s", "user", "배포 준비")
    # Implicit AND, as on the other paths; OR finds either.
    assert hit_ids(db.search("서버 배포", sort="auto")) == [both]
    assert set(hit_ids(db.search("서버 OR 배포", sort="auto"))) == {both, server, deploy}
    assert hit_ids(db.search("서버 NOT 배포", sort="auto")) == [server]


def test_like_fallback_when_a_short_token_is_too_frequent(db, monkeypatch):
    monkeypatch.setattr(TUNING, "MAX_EXPANSION", 0)
    a = add(db, "s", "user", "广西的山")
    b = add(db, "s", "user", "广西 桂林")
    result = db.search("广西", sort="auto")
    assert result.path == "like" and result.ranking == "newest"
    assert hit_ids(result) == [b, a]
    assert hit_ids(db.search("广西 NOT 桂林", sort="auto")) == [a]
    assert [h.snippet[a_:b_] for h in result.hits for a_, b_ in h.spans] == ["广西", "广西"]


def test_latin_inside_cjk_reported_as_fts5_plus_trigram(db):
    mid = add(db, "s", "user", "帮我修改youer服务端的配置")
    result = db.search("youer", sort="auto")
    assert result.path == "fts5+trigram" and hit_ids(result) == [mid]
    assert [result.hits[0].snippet[a:b] for a, b in result.hits[0].spans] == ["youer"]


@pytest.mark.parametrize(
    "query,content",
    [
        ("TODO: fix", "TODO: fix the flaky test"),
        (".env", "copy .env.example to .env"),
        ("--force", "git push --force"),
        ("user@example.com", "mail user@example.com"),
        ("100%", "coverage is 100% now"),
        ("a AND OR b", "a and b"),
    ],
)
def test_sr16_repairs_apply_to_search_too(db, query, content):
    mid = add(db, "s", "user", content)
    assert hit_ids(db.search(query, sort="auto")) == [mid]


def test_quoted_phrase_on_cjk_path(db):
    phrase = add(db, "s", "user", "大别山 项目 启动")
    add(db, "s", "user", "大别山 风景 和 项目")
    assert hit_ids(db.search('"大别山 项目"', sort="auto")) == [phrase]


# ----------------------------------------------------------------------------- prefix_last


def test_prefix_last_makes_last_word_a_prefix(db):
    mid = add(db, "s", "user", "Deploy docker containers")
    # Without it, "dock" is no word: only the SR-16 substring retry finds it.
    assert db.search("dock", sort="auto").path == "fts5+trigram"
    result = db.search("dock", prefix_last=True, sort="auto")
    assert result.path == "fts5"
    assert hit_ids(result) == [mid] and result.effective_query == "(\"docker\")"
    assert hit_ids(db.search("deploy cont", prefix_last=True, sort="auto")) == [mid]


@pytest.mark.parametrize(
    "query,expected",
    [
        ("dock", "dock*"),
        ("deploy cont", "deploy cont*"),
        ("do", "do"),  # under 3 characters
        ('"dock"', '"dock"'),  # quoted
        ("dock*", "dock*"),  # already a prefix
        ("docker NOT", "docker NOT"),  # operator
        ("部署服务", "部署服务"),  # CJK is matched as a substring anyway
    ],
)
def test_apply_prefix_last_rules(query, expected):
    assert apply_prefix_last(query) == expected


@pytest.mark.parametrize(
    "query,expected",
    [("ku", "ku"), ("deploy f", "f"), ("kub", None), ('"ku"', None), ("ku*", None), ("docker NOT", None),
     ("服务", None)],
)
def test_short_last_word_is_the_word_prefix_last_leaves_whole(query, expected):
    assert query_mod.short_last_word(query) == expected
    if expected is not None:
        assert apply_prefix_last(query) == query


def test_an_empty_answer_to_a_short_last_word_says_longer_words_come_with_more_letters(db):
    """`ku` while `kubernetes` is typed finds nothing (no message has the word `ku`): the
    answer says why, and what the next letter does, instead of a bare "no match"."""
    mid = add(db, "s", "user", "kubernetes rollout and a deploy that failed")
    typing = db.search("ku", prefix_last=True, sort="auto")
    assert typing.hits == [] and "“ku” counts as a whole word until it has 3 letters" in typing.note
    assert hit_ids(db.search("kub", prefix_last=True, sort="auto")) == [mid]
    # The last word is the short one, wherever the query started.
    assert "“f”" in db.search("deploy f", prefix_last=True, sort="auto").note
    assert hit_ids(db.search("deploy fai", prefix_last=True, sort="auto")) == [mid]
    # A short word that is a word finds it, and nothing is said.
    found = db.search("a deploy", prefix_last=True, sort="auto")
    assert hit_ids(found) == [mid] and not (found.note or "")
    assert hit_ids(db.search("deploy a", prefix_last=True, sort="auto")) == [mid]
    # Without prefix_last (the CLI) a word is a word at any length: no such note.
    assert "whole word" not in (db.search("ku", sort="auto").note or "")
    # Quoted, it was never going to be a prefix.
    assert "whole word" not in (db.search('"ku"', prefix_last=True, sort="auto").note or "")
    # Followed by a space it is finished: a whole word, and nothing to keep typing.
    assert "whole word" not in (db.search("ku ", prefix_last=True, sort="auto").note or "")


def test_a_short_last_word_no_message_has_leaves_the_words_before_it_answering(db):
    """`the se` while `the server` is typed: no message has the word `se`, so the words before
    it answer (their hits hold every `the ser*` one), and the note says so -- the pane does not
    go hits -> nothing -> hits as the word is written."""
    server = add(db, "s", "user", "the server rollout failed")
    other = add(db, "t", "user", "the deploy went fine, plan b")
    typing = db.search("the se", prefix_last=True, sort="auto")
    assert sorted(hit_ids(typing)) == sorted([server, other]) and typing.total_estimate == 2
    assert typing.note == "Showing matches for “the”: “se” is a whole word until it has 3 letters"
    assert typing.answered_query == "the"
    assert typing.query == "the se"
    # The third letter makes it a prefix: the answer narrows to what it starts.
    assert hit_ids(db.search("the ser", prefix_last=True, sort="auto")) == [server]
    # A short word some message has is searched as the word it is, and nothing is said.
    found = db.search("plan b", prefix_last=True, sort="auto")
    assert hit_ids(found) == [other] and not (found.note or "")
    # Pages of the words before it, as the first page was.
    second = db.search("the se", prefix_last=True, limit=1, offset=1, sort="auto")
    assert len(second.hits) == 1 and hit_ids(second) != hit_ids(db.search("the se", prefix_last=True, limit=1, sort="auto"))
    assert second.note.startswith("Showing matches for “the”") and second.answered_query == "the"
    # Operators the short word leaves dangling are not shown as if searched.
    assert db.search("deploy AND se", prefix_last=True, sort="auto").note.startswith("Showing matches for “deploy”:")
    # Nothing before it, nothing the words before it find, or a NOT of it: the empty answer
    # and the reason, as before.
    leading_not = db.search("NOT se", prefix_last=True, sort="auto")
    assert leading_not.hits == [] and leading_not.note.startswith("NOT leaves words out")
    for query in ("se", "zzqx se"):
        empty = db.search(query, prefix_last=True, sort="auto")
        assert empty.hits == [] and empty.note.endswith("keep typing") and empty.answered_query is None, query
    # Without prefix_last (the CLI) the query is what was asked.
    assert db.search("the se", sort="auto").hits == []


def test_the_words_before_a_short_last_word_answer_again_what_they_answered_a_key_earlier(db):
    """`deploy the ` then `deploy the se`: nothing was committed between the keys, so the
    answer `deploy the ` got is given again (no second search); after a commit it is searched
    anew."""
    first = add(db, "s", "user", "deploy: the server rollout failed")

    def matches(text):
        statements: list[str] = []
        db._read(lambda conn: conn.set_trace_callback(statements.append))
        try:
            result = db.search(text, prefix_last=True, sort="auto")
        finally:
            db._read(lambda conn: conn.set_trace_callback(None))
        return result, [m for s in statements for m in re.findall(r"MATCH '([^']*)'", s)]

    typed = "deploy the "
    for end in range(1, len(typed) + 1):  # more keys than answers are kept: the last ones stay
        before, _ = matches(typed[:end])
    typing, searched = matches("deploy the se")
    assert hit_ids(typing) == hit_ids(before) == [first]
    # Only the whole word `se` was searched; `deploy the` answered from what the last key found.
    assert searched and set(searched) == {"deploy the se"}
    assert typing.query == "deploy the se" and typing.answered_query == "deploy the"
    second = add(db, "t", "user", "deploy again: the server is back")
    typing, searched = matches("deploy the se")
    assert sorted(hit_ids(typing)) == sorted([first, second]) and "deploy the" in searched
    # A different page or filter is a different question.
    assert hit_ids(db.search("deploy the se", prefix_last=True, role_filter=["assistant"], sort="auto")) == []
    # A filter that cannot be a key is not kept: it fails as it always did, in words.
    assert db.search("deploy the se", prefix_last=True, source_filter=[["cli"]], sort="auto").error.startswith("search failed")


@pytest.mark.parametrize("typed", ["deploy ", "deploy  ", "deploy,", "deploy."])
def test_a_space_or_punctuation_after_the_last_word_ends_it(db, typed):
    """`deploy` while typing finds deployment too; `deploy ` is the word deploy (the next
    word has not begun), as `deploy f` already searches `deploy` whole."""
    whole = add(db, "s", "user", "the deploy went fine")
    longer = add(db, "s", "user", "a deployment went wrong")
    assert sorted(hit_ids(db.search("deploy", prefix_last=True, sort="auto"))) == sorted([whole, longer])
    assert hit_ids(db.search(typed, prefix_last=True, sort="auto")) == [whole]


# ----------------------------------------------------------------------------- snippets


def test_make_snippet_picks_window_with_most_distinct_matches():
    text = "docker " + "x " * 200 + "docker compose together " + "y " * 200
    spans = find_spans(text, ["docker", "compose"])
    snippet, out, raw = make_snippet(text, spans)
    assert snippet.startswith("...") and snippet.endswith("...")
    assert [snippet[a:b] for a, b in out] == ["docker", "compose"]
    assert ">>>docker<<< >>>compose<<<" in raw
    assert len(snippet) <= query_mod.SNIPPET_CHARS + 6


def test_make_snippet_short_text_and_no_spans():
    assert make_snippet("short\ttext\n", []) == ("short text ", [], "short text ")


# ----------------------------------------------------------------------------- isolation


def test_search_works_read_only_and_never_changes_the_schema(db, tmp_path):
    add(db, "s", "user", "广西 docker 数据库")
    schema = db._conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    ro = SessionDB(tmp_path / "state.db", read_only=True)
    try:
        for query in ["docker", "广西", "数据库", "鑫"]:
            result = ro.search(query, sort="auto")
            assert result.error is None
        assert len(ro.search("广西", sort="auto").hits) == 1
    finally:
        ro.close()
    db.search("广西", sort="auto")
    assert db._conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall() == schema


def test_frequent_short_cjk_served_by_a_short_like_pass(db, monkeypatch):
    monkeypatch.setattr(TUNING, "LIKE_FIRST_ROWS", 50)
    ids = bulk(db, "s", [("通信 " if i % 2 else "别的 ") + str(i) for i in range(200)])
    result = db.search("通信", limit=5, sort="auto")
    assert result.path == "like" and result.ranking == "newest" and result.has_more
    assert hit_ids(result) == [i for i in ids[::-1] if i % 2 == 0][:5]
    # Rare in the newest rows: the vocabulary route answers, with the same order.
    rare = db.search("别的 NOT 通信", limit=5, sort="auto")
    assert rare.path in ("like", "trigram")
    assert hit_ids(rare) == [i for i in ids[::-1] if i % 2 == 1][:5]


def test_prefix_expansion_inside_larger_queries(db):
    both = add(db, "s", "user", "nginx config reload")
    add(db, "s", "user", "nginx only")
    other = add(db, "s", "user", "configuration without the server")
    assert hit_ids(db.search("nginx conf*", sort="auto")) == [both]
    assert set(hit_ids(db.search("conf* NOT nginx", sort="auto"))) == {other}
    assert set(hit_ids(db.search("nginx OR conf*", sort="auto"))) == {both, both + 1, other}
    assert hit_ids(db.search('"nginx config" conf*', sort="auto")) == [both]


def test_prefix_expansion_keeps_the_typed_word_and_its_longer_terms(db):
    """The terms are enumerated by seeking the vocabulary term by term (a vocab *row* walks
    each term's whole doclist); the typed word itself and every longer term are kept."""
    the = add(db, "s", "user", "the server")
    then = add(db, "s", "user", "then restart")
    theme = add(db, "s", "user", "dark theme")
    add(db, "s", "user", "nothing here")
    result = db.search("the", prefix_last=True, sort="newest")
    assert result.effective_query == '("the" OR "theme" OR "then")'
    assert hit_ids(result) == [theme, then, the]
    # A prefix that is no word of its own: only the longer terms.
    assert db.search("them", prefix_last=True, sort="auto").effective_query == '("theme")'


def test_prefix_expansions_narrow_from_the_cache_and_see_new_commits(db, tmp_path):
    docker = add(db, "s", "user", "docker compose up")
    add(db, "s", "user", "documented elsewhere")
    reader = SessionDB(tmp_path / "state.db", read_only=True)
    try:
        assert reader.search("doc", prefix_last=True, sort="auto").effective_query == '("docker" OR "documented")'
        # "dock" is "doc"'s expansion filtered (no vocabulary read): the same answer as a read.
        result = reader.search("dock", prefix_last=True, sort="auto")
        assert result.effective_query == '("docker")' and hit_ids(result) == [docker]
        # Another connection commits a new term: the next search sees it (data_version).
        dockerize = add(db, "s", "user", "dockerize the worker")
        result = reader.search("dock", prefix_last=True, sort="newest")
        assert result.effective_query == '("docker" OR "dockerize")'
        assert hit_ids(result) == [dockerize, docker]
    finally:
        reader.close()


def test_prefix_cache_sees_the_connections_own_writes(db):
    """data_version does not change for a connection's own commits: a store that writes and
    searches on one connection must not keep an old expansion either."""
    add(db, "s", "user", "docker compose up")
    assert db.search("dock", prefix_last=True, sort="auto").effective_query == '("docker")'
    add(db, "s", "user", "dockerize the worker")
    assert db.search("dock", prefix_last=True, sort="auto").effective_query == '("docker" OR "dockerize")'


def test_an_expanded_prefix_is_probed_as_its_expansion_never_as_word_star(db):
    """FTS5 answers ``fai*`` by merging every doclist of the prefix first (tens of ms at 5M
    messages): once expanded, every statement uses the OR of the terms instead."""
    wanted = add(db, "s", "user", "deploy failed again")
    add(db, "s", "user", "deploy fine")
    add(db, "s", "user", "failing tests")
    statements: list[str] = []
    db._read(lambda conn: conn.set_trace_callback(statements.append))
    try:
        result = db.search("deploy fai", prefix_last=True, sort="auto")
    finally:
        db._read(lambda conn: conn.set_trace_callback(None))
    assert hit_ids(result) == [wanted]
    assert result.effective_query == 'deploy AND ("failed" OR "failing")'
    matches = [sql for sql in statements if "MATCH" in sql]
    assert matches and not [sql for sql in matches if "fai*" in sql]
