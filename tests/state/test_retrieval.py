"""Cross-session retrieval (SPEC §15, XR-1 … XR-9) and conversation grouping of hits."""

from __future__ import annotations

import threading
import time
from datetime import datetime

import pytest

from hermes_state import SessionDB
from hermes_state.retrieval import (
    EARLIER_CUT,
    LATER_CUT,
    NO_MATCHES,
    clamp_limit,
    format_transcript,
    format_when,
    group_hits_by_conversation,
    lineage_roots,
    raw_preview,
    recall,
    recent_conversations,
    search_conversations,
    truncate_around_matches,
)


@pytest.fixture
def db(tmp_path):
    store = SessionDB(tmp_path / "state.db")
    yield store
    store.close()


def session(db, sid, source="cli", parent=None, end_reason=None):
    db.create_session(sid, source, parent_session_id=parent)
    if end_reason:
        db.end_session(sid, end_reason)


def say(db, sid, content, role="user", **kw):
    return db.append_message(sid, role, content, **kw)


def chain(db):
    """root → cont (compression) → tip, plus a delegate of root and an unrelated session."""
    session(db, "root", end_reason=None)
    say(db, "root", "we fixed the nginx proxy")
    db.end_session("root", "compression")
    session(db, "cont", parent="root")
    say(db, "cont", "nginx again after compression")
    db.end_session("cont", "compression")
    session(db, "tip", parent="cont")
    say(db, "tip", "nginx in the tip")
    session(db, "other")
    say(db, "other", "nginx elsewhere")


# ----------------------------------------------------------------------------- XR-2


def test_xr2_roots_follow_parents_to_the_top(db):
    chain(db)
    assert lineage_roots(db, ["tip", "cont", "root", "other"]) == {
        "tip": "root", "cont": "root", "root": "root", "other": "other",
    }
    assert lineage_roots(db, ["tip"])["tip"] == db.get_lineage_root("tip")


def test_xr2_missing_parent_row_and_unknown_ids(db):
    session(db, "orphan")
    db._conn.execute("PRAGMA foreign_keys=OFF")
    db._conn.execute("UPDATE sessions SET parent_session_id = 'gone' WHERE id = 'orphan'")
    assert lineage_roots(db, ["orphan", "never-existed"]) == {"orphan": "orphan", "never-existed": "never-existed"}


def test_xr2_loop_guard_uses_last_id_reached(db):
    session(db, "a")
    session(db, "b")
    db._conn.execute("UPDATE sessions SET parent_session_id = 'b' WHERE id = 'a'")
    db._conn.execute("UPDATE sessions SET parent_session_id = 'a' WHERE id = 'b'")
    roots = lineage_roots(db, ["a", "b"])
    assert roots == {"a": "b", "b": "a"}
    assert roots["a"] == db.get_lineage_root("a")


# ----------------------------------------------------------------------------- grouping


def test_group_hits_by_conversation_in_one_query(db):
    chain(db)
    hits = db.search("nginx", sort="newest").hits
    statements = []
    db._conn.set_trace_callback(statements.append)
    try:
        groups = group_hits_by_conversation(db, hits)
    finally:
        db._conn.set_trace_callback(None)
    assert len([s for s in statements if s.lstrip().upper().startswith(("SELECT", "WITH"))]) == 1
    assert [(g.root_id, g.hit_count) for g in groups] == [("other", 1), ("root", 3)]
    root_group = groups[1]
    assert root_group.best_hit.session_id == "tip"  # first in the given (newest) order
    assert root_group.session_ids == ["tip", "cont", "root"]
    assert group_hits_by_conversation(db, []) == []


# ----------------------------------------------------------------------------- XR-1, XR-3, XR-4, XR-8


def test_xr1_tool_sessions_are_not_candidates(db):
    session(db, "t", source="tool")
    say(db, "t", "kafka in a tool session")
    session(db, "c")
    say(db, "c", "kafka in a chat")
    result = search_conversations(db, "kafka")
    assert [r.session_id for r in result.results] == ["c"]


def test_xr3_current_lineage_is_excluded(db):
    chain(db)
    session(db, "delegate", parent="tip")
    say(db, "delegate", "nginx in a delegate")
    result = search_conversations(db, "nginx", current_session_id="cont")
    assert [r.session_id for r in result.results] == ["other"]
    assert result.sessions_searched == 1


def test_xr4_groups_ordered_by_hits_then_first_position(db):
    chain(db)
    session(db, "single")
    say(db, "single", "nginx nginx nginx nginx nginx")
    result = search_conversations(db, "nginx")
    assert [(r.session_id, r.hit_count) for r in result.results][0] == ("root", 3)
    assert {r.session_id for r in result.results[1:]} == {"single", "other"}
    assert result.count == 3 and result.sessions_searched == 3
    assert len(search_conversations(db, "nginx", limit=1).results) == 1


@pytest.mark.parametrize("value,expected", [(None, 3), ("2", 3), (2.0, 3), (True, 3), (0, 1), (-4, 1), (9, 5), (4, 4)])
def test_xr4_limit_clamped(value, expected):
    assert clamp_limit(value) == expected


def test_xr8_result_fields_and_no_match_message(db):
    chain(db)
    db._conn.execute("UPDATE sessions SET started_at = ?, model = 'm1' WHERE id = 'root'",
                     (datetime(2025, 3, 5, 9, 15).timestamp(),))
    (first, *_rest) = search_conversations(db, "nginx").results
    assert first.session_id == "root"
    assert first.when == "March 05, 2025 at 09:15 AM"
    assert (first.source, first.model, first.hit_count) == ("cli", "m1", 3)
    empty = search_conversations(db, "zzqqxx")
    assert empty.results == [] and empty.count == 0 and empty.message == NO_MATCHES


def test_xr8_when_unknown():
    assert format_when(None) == "unknown"
    assert format_when("not a time") == "unknown"


# ----------------------------------------------------------------------------- XR-5


def test_xr5_transcript_format():
    long = "x" * 300 + "y" * 300
    messages = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"function": {"name": "terminal"}}, {"name": "web_search"}, {"id": "c3"},
        ]},
        {"role": "tool", "tool_name": "terminal", "content": long},
        {"role": "assistant", "content": "done", "tool_calls": [{"name": "read_file"}]},
        {"role": "system", "content": "note"},
    ]
    assert format_transcript(messages) == "\n\n".join([
        "[USER]: hello",
        "[ASSISTANT]: [Called: terminal, web_search, ?]",
        "[TOOL:terminal]: " + long[:250] + "\n...[truncated]...\n" + long[-250:],
        "[ASSISTANT]: [Called: read_file]",
        "[ASSISTANT]: done",
        "[SYSTEM]: note",
    ])


# ----------------------------------------------------------------------------- XR-6


def test_xr6_short_text_is_kept():
    assert truncate_around_matches("abc nginx", "nginx", max_chars=100) == "abc nginx"


def test_xr6_no_match_keeps_the_head():
    text = "a" * 300
    assert truncate_around_matches(text, "zzz", max_chars=100) == "a" * 100 + LATER_CUT


def test_xr6_window_starts_a_quarter_before_the_match():
    text = "." * 500 + "NGINX" + "," * 500
    out = truncate_around_matches(text, "nginx", max_chars=100)
    assert out == EARLIER_CUT + text[475:575] + LATER_CUT


def test_xr6_densest_window_wins_and_end_is_clamped():
    text = "nginx" + "." * 400 + ("nginx" + "-" * 10) * 5 + "." * 50
    out = truncate_around_matches(text, "nginx", max_chars=120)
    body = out[len(EARLIER_CUT):]
    assert out.startswith(EARLIER_CUT) and body.count("nginx") == 5
    assert not out.endswith(LATER_CUT) or body.endswith(LATER_CUT)


def test_xr6_multi_word_uses_rarest_term_near_the_others():
    text = ("redis " * 10) + "." * 1000 + "redis cluster failover here" + "." * 1000 + "cluster " * 3
    out = truncate_around_matches(text, "cluster failover", max_chars=200)
    assert "cluster failover" in out  # phrase present → rule (1) already
    out2 = truncate_around_matches(text, "failover redis", max_chars=200)
    assert "redis cluster failover" in out2 and out2.startswith(EARLIER_CUT)


def test_xr6_falls_back_to_each_term():
    text = "." * 1000 + "alpha" + "." * 1000 + "beta" + "." * 10
    out = truncate_around_matches(text, "beta alpha", max_chars=150)
    # One position per window: the first best (earliest) wins.
    assert "alpha" in out and "beta" not in out and out.startswith(EARLIER_CUT)
    text2 = "." * 1000 + "alpha" + "." * 1000 + "beta beta" + "." * 10
    out2 = truncate_around_matches(text2, "beta alpha", max_chars=150)
    assert out2.count("beta") == 2 and not out2.endswith(LATER_CUT)


# ----------------------------------------------------------------------------- XR-7


def test_xr7_raw_preview_without_summariser(db):
    chain(db)
    result = search_conversations(db, "nginx")
    first = result.results[0]
    assert first.raw_preview
    assert first.summary.startswith("[Raw preview — summarization unavailable]\n[USER]: we fixed")
    assert first.summary.endswith("\n…[truncated]")
    assert raw_preview("abc") == "[Raw preview — summarization unavailable]\nabc\n…[truncated]"


def test_xr7_summariser_used_and_failures_degrade(db):
    chain(db)
    session(db, "single")
    say(db, "single", "nginx nginx")

    def summarize(transcript, query, meta):
        if meta["id"] == "root":
            return f"summary of {meta['id']} for {query}"
        if meta["id"] == "other":
            raise RuntimeError("model down")
        return ""

    results = {r.session_id: r for r in search_conversations(db, "nginx", summarize=summarize).results}
    assert results["root"].summary == "summary of root for nginx" and not results["root"].raw_preview
    assert results["other"].raw_preview and results["single"].raw_preview


def test_xr7_summaries_run_with_bounded_concurrency(db):
    for i in range(5):
        session(db, f"s{i}")
        say(db, f"s{i}", "kafka topic")
    active = {"now": 0, "max": 0}
    lock = threading.Lock()

    def summarize(transcript, query, meta):
        with lock:
            active["now"] += 1
            active["max"] = max(active["max"], active["now"])
        time.sleep(0.05)
        with lock:
            active["now"] -= 1
        return "ok"

    result = search_conversations(db, "kafka", limit=5, summarize=summarize, max_concurrency=2)
    assert result.count == 5 and all(r.summary == "ok" for r in result.results)
    assert active["max"] == 2


# ----------------------------------------------------------------------------- XR-9


def test_xr9_recent_mode_skips_current_root_and_children(db):
    chain(db)  # root (compression chain shown at its tip), other
    session(db, "newest")
    say(db, "newest", "latest words")
    session(db, "kid", parent="newest")
    session(db, "tool-session", source="tool")

    def never(*_args):
        raise AssertionError("recent mode must not summarise")

    rows = recall(db, "", current_session_id="tip", limit=5, summarize=never)
    assert [r.session_id for r in rows] == ["newest", "other"]
    assert rows[0].preview == "latest words" and rows[0].message_count == 1
    assert [r.session_id for r in recent_conversations(db, limit=1)] == ["newest"]
