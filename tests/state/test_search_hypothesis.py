"""Hostile input: search never raises on query text and always returns its type (SR-1, SR-15)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_state import SessionDB
from hermes_state.models import SearchResult
from hermes_state.query import prepare_fts_query, sanitize_fts5_query

FTS_BITS = [
    "AND", "OR", "NOT", "NEAR", "NEAR(", "and", "or", "not", '"', '""', "*", "**", "^", "+", "-",
    "(", ")", "{", "}", ":", "col:", "content:", ".", "@", "%", "_", "\\", "'", ",", ";", "|",
    "\x00", "\x1a", "\u3000", "\ud800", "🙂", "👨\u200d👩\u200d👧", "记忆", "断裂", "广西", "서버",
    "こんにちは", "Agent", "docker", "the", "修改youer服务端", "ﬁ", "İ", "\u0301", "\n", "\t", " ",
]

query_text = st.one_of(
    st.text(max_size=60),
    st.lists(st.sampled_from(FTS_BITS), max_size=12).map(" ".join),
    st.lists(st.sampled_from(FTS_BITS), max_size=12).map("".join),
    st.lists(st.one_of(st.sampled_from(FTS_BITS), st.text(max_size=5)), max_size=10).map(" ".join),
)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    store = SessionDB(tmp_path_factory.mktemp("hyp") / "state.db")
    store.create_session("s", "cli")
    for content in [
        "Deploy docker containers with the compose file",
        "修改youer服务端 记忆断裂 广西 桂林",
        "서버 배포 こんにちは",
        "TODO: fix .env and rm -rf build --force",
        "emoji 🙂 and quotes \" ' and NUL-free text",
    ]:
        store.append_message("s", "user", content)
    store.append_message("s", "tool", None, tool_name="terminal")
    yield store
    store.close()


SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SETTINGS
@given(query=query_text)
def test_sr1_search_messages_never_raises_on_query_text(db, query):
    result = db.search_messages(query)
    assert isinstance(result, list)
    for row in result:
        assert isinstance(row, dict) and "snippet" in row


@SETTINGS
@given(query=query_text, sort=st.sampled_from(["auto", "rank", "newest"]), prefix=st.booleans())
def test_sr1_search_never_raises_on_query_text(db, query, sort, prefix):
    result = db.search(query, sort=sort, prefix_last=prefix)
    assert isinstance(result, SearchResult)
    for hit in result.hits:
        for start, end in hit.spans:
            assert 0 <= start < end <= len(hit.snippet)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.one_of(
        st.text(min_size=1, max_size=50).map(lambda s: (s * (10_000 // len(s) + 1))[:10_000]),
        st.lists(st.sampled_from(FTS_BITS), min_size=2000, max_size=2000).map(" ".join).map(lambda s: s[:10_000]),
    )
)
def test_sr1_ten_thousand_character_queries(db, query):
    assert isinstance(db.search_messages(query), list)
    assert isinstance(db.search(query), SearchResult)


@settings(max_examples=300, deadline=None)
@given(query=query_text)
def test_sr16_repair_stage_is_total(query):
    prepared = prepare_fts_query(sanitize_fts5_query(query))
    assert isinstance(prepared, str)
