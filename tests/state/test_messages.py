"""SPEC §6 (MS-1 … MS-8): messages."""

from __future__ import annotations

import json
import logging
import time

import pytest

from hermes_state import SessionDB

MESSAGE_COLUMNS = [
    "id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
    "token_count", "finish_reason", "reasoning", "reasoning_content", "reasoning_details",
    "codex_reasoning_items", "codex_message_items",
    "platform_message_id", "observed", "active",  # schema 16 (UC-2)
]
NOTE = (
    "[System note: The following is recalled memory context, NOT new user input. "
    "Treat as informational background data.]"
)


def raw(db: SessionDB, mid: int) -> dict:
    return dict(db._conn.execute("SELECT * FROM messages WHERE id = ?", (mid,)).fetchone())


def counters(db: SessionDB, sid: str) -> tuple[int, int]:
    row = db.get_session(sid)
    return row["message_count"], row["tool_call_count"]


def search_available() -> bool:
    try:
        import hermes_state.search  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------- MS-1


def test_ms1_append_message_returns_id_and_stores_values(db: SessionDB):
    db.create_session("s", "cli")
    before = time.time()
    mid = db.append_message("s", "assistant", content="hello", tool_name="t", tool_call_id="c1",
                            token_count=12, finish_reason="stop", reasoning="think",
                            reasoning_content="rc")
    row = raw(db, mid)
    assert isinstance(mid, int) and row["id"] == mid
    assert before <= row["timestamp"] <= time.time()
    assert (row["role"], row["content"], row["tool_name"], row["tool_call_id"]) == ("assistant", "hello", "t", "c1")
    assert (row["token_count"], row["finish_reason"], row["reasoning"], row["reasoning_content"]) == (12, "stop", "think", "rc")
    assert db.append_message("s", "user", content="next") == mid + 1


def test_ms1_json_columns_encoding(db: SessionDB):
    db.create_session("s", "cli")
    calls = [{"id": "c1", "type": "function", "function": {"name": "web", "arguments": "{\"q\": \"ß\"}"}}]
    mid = db.append_message("s", "assistant", tool_calls=calls, reasoning_details=[{"x": "é"}],
                            codex_reasoning_items={"k": [1, 2]}, codex_message_items=[{"m": None}])
    row = raw(db, mid)
    assert row["tool_calls"] == json.dumps(calls) and row["tool_calls"].isascii()
    assert row["reasoning_details"] == '[{"x": "\\u00e9"}]'
    assert row["codex_reasoning_items"] == '{"k": [1, 2]}'
    assert row["codex_message_items"] == '[{"m": null}]'
    empty = db.append_message("s", "assistant", content="", tool_calls=[], reasoning_details={},
                              codex_reasoning_items=[], codex_message_items=None)
    row = raw(db, empty)
    assert row["content"] == ""  # an empty string stays an empty string
    assert row["tool_calls"] is None and row["reasoning_details"] is None
    assert row["codex_reasoning_items"] is None and row["codex_message_items"] is None


def test_ms1_non_string_content_rejected(db: SessionDB):
    db.create_session("s", "cli")
    with pytest.raises(TypeError):
        db.append_message("s", "user", content=[{"type": "text", "text": "hi"}])
    with pytest.raises(TypeError):
        db.append_message("s", "user", content=42)
    assert db.message_count() == 0 and counters(db, "s") == (0, 0)


# ---------------------------------------------------------------- MS-2


def test_ms2_counter_examples(db: SessionDB):
    db.create_session("s", "cli")
    db.append_message("s", "assistant", tool_calls=[{"id": 1}, {"id": 2}, {"id": 3}])
    assert counters(db, "s") == (1, 3)
    db.append_message("s", "tool", content="result", tool_name="terminal", tool_call_id="1")
    assert counters(db, "s") == (2, 3)
    db.append_message("s", "assistant", tool_calls=[])
    assert counters(db, "s") == (3, 3)
    db.append_message("s", "assistant", tool_calls={"id": "c1", "function": {"name": "x"}})
    assert counters(db, "s") == (4, 4)
    db.append_message("s", "user", content="hi")
    db.append_message("s", "system", content="sys")
    assert counters(db, "s") == (6, 4)


def test_ms2_counters_in_same_transaction(db: SessionDB):
    db.create_session("s", "cli")
    statements: list[str] = []
    db._conn.set_trace_callback(statements.append)
    db.append_message("s", "user", content="x")
    db._conn.set_trace_callback(None)
    begin = statements.index("BEGIN IMMEDIATE")
    commit = statements.index("COMMIT")
    inner = statements[begin:commit]
    assert any(s.startswith("INSERT INTO messages") for s in inner)
    assert any(s.startswith("UPDATE sessions") for s in inner)


# ---------------------------------------------------------------- MS-3


def test_ms3_replace_messages(db: SessionDB):
    db.create_session("s", "cli")
    db.append_message("s", "user", content="old")
    before = time.time()
    db.replace_messages("s", [
        {"role": "user", "content": "u", "reasoning": "ignored for user", "token_count": 3},
        {"role": "assistant", "content": "a", "tool_calls": [{"id": 1}, {"id": 2}],
         "reasoning": "r", "reasoning_content": "", "reasoning_details": [{"d": 1}],
         "codex_reasoning_items": [1], "codex_message_items": [2], "finish_reason": "tool_calls"},
        {"content": "no role"},
        {"role": "tool", "content": "t", "tool_call_id": "1", "tool_name": "terminal",
         "reasoning_content": "ignored"},
    ])
    msgs = db.get_messages("s")
    assert [m["content"] for m in msgs] == ["u", "a", "no role", "t"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "unknown", "tool"]
    assert msgs[0]["reasoning"] is None and msgs[0]["token_count"] == 3
    assert msgs[1]["reasoning"] == "r" and msgs[1]["reasoning_content"] == ""
    assert msgs[1]["reasoning_details"] == '[{"d": 1}]' and msgs[1]["codex_message_items"] == "[2]"
    assert msgs[1]["finish_reason"] == "tool_calls" and msgs[1]["tool_calls"] == [{"id": 1}, {"id": 2}]
    assert msgs[3]["reasoning_content"] is None and msgs[3]["tool_name"] == "terminal"
    t0 = msgs[0]["timestamp"]
    assert before <= t0 <= time.time()
    for i, m in enumerate(msgs):
        assert m["timestamp"] == pytest.approx(t0 + i * 1e-6, abs=1e-9)
    assert counters(db, "s") == (4, 2)
    assert db.message_count("s") == 4


def test_ms3_failure_leaves_old_transcript(db: SessionDB):
    db.create_session("s", "cli")
    db.append_message("s", "user", content="keep me")
    db.append_message("s", "assistant", content="and me", tool_calls=[{"id": 1}])
    with pytest.raises(Exception):
        db.replace_messages("s", [{"role": "user", "content": "new"}, {"role": None, "content": "bad"}])
    assert [m["content"] for m in db.get_messages("s")] == ["keep me", "and me"]
    assert counters(db, "s") == (2, 1)


def test_ms3_non_string_content_is_refused_as_append_message_refuses_it(db: SessionDB):
    """MS-1 rejects non-string content with TypeError; replace_messages does the same for any
    of its messages, before anything is written (not sqlite3's 'Error binding parameter')."""
    db.create_session("s", "cli")
    db.append_message("s", "user", content="keep me")
    for content in ([{"type": "text", "text": "x"}], {"type": "text"}, b"bytes", 3):
        with pytest.raises(TypeError, match="message 1: content must be str or None"):
            db.replace_messages("s", [{"role": "user", "content": "new"}, {"role": "user", "content": content}])
    assert [m["content"] for m in db.get_messages("s")] == ["keep me"]
    assert counters(db, "s") == (1, 0)


# ---------------------------------------------------------------- MS-4


def test_ms4_get_messages_every_column_ordered_and_decoded(db: SessionDB, caplog):
    db.create_session("s", "cli")
    a = db.append_message("s", "user", content="a")
    b = db.append_message("s", "assistant", content="b", tool_calls=[{"id": "x"}], reasoning_details=[1])
    c = db.append_message("s", "user", content="c")
    bad = db.append_message("s", "assistant", content="bad", tool_calls=[{"id": "y"}])
    # Same timestamp for a and b: id decides; c moved before both.
    db._conn.execute("UPDATE messages SET timestamp = 100 WHERE id IN (?, ?)", (a, b))
    db._conn.execute("UPDATE messages SET timestamp = 50 WHERE id = ?", (c,))
    db._conn.execute("UPDATE messages SET timestamp = 200, tool_calls = '{not json' WHERE id = ?", (bad,))
    with caplog.at_level(logging.WARNING):
        msgs = db.get_messages("s")
    assert [m["id"] for m in msgs] == [c, a, b, bad]
    assert all(list(m) == MESSAGE_COLUMNS for m in msgs)
    assert msgs[2]["tool_calls"] == [{"id": "x"}]
    assert msgs[2]["reasoning_details"] == "[1]"  # other JSON columns stay strings
    assert msgs[0]["tool_calls"] is None
    assert msgs[3]["tool_calls"] == []
    assert any(r.levelno == logging.WARNING for r in caplog.records)
    assert db.get_messages("unknown") == []


# ---------------------------------------------------------------- MS-5


def test_ms5_conversation_shape_spec_example(db: SessionDB):
    db.create_session("s", "cli")
    calls = [{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]
    db.append_message("s", "assistant", content=None, tool_calls=calls, reasoning="I should call the tool",
                      finish_reason="tool_calls", token_count=5)
    conv = db.get_messages_as_conversation("s")
    stamp = db.get_messages("s")[0]["timestamp"]
    # UC-2: upstream v16 also replays the message time and the assistant's finish reason.
    assert conv == [{"role": "assistant", "content": None, "tool_calls": calls,
                     "reasoning": "I should call the tool", "timestamp": stamp,
                     "finish_reason": "tool_calls"}]


def test_ms5_keys_present_only_when_stated(db: SessionDB, caplog):
    db.create_session("s", "cli")
    db.append_message("s", "system", content="  system prompt  ")
    db.append_message("s", "user", content="  hi there \n", reasoning="never", reasoning_content="never")
    db.append_message("s", "assistant", content=" answer ", reasoning="", reasoning_content="",
                      reasoning_details=[{"a": 1}], codex_reasoning_items=[2], codex_message_items=[3])
    db.append_message("s", "tool", content=" raw ", tool_call_id="c1", tool_name="terminal")
    bad = db.append_message("s", "assistant", content="x", reasoning_details=[1], tool_calls=[{"id": 1}])
    db._conn.execute(
        "UPDATE messages SET reasoning_details = 'nope{', tool_calls = 'bad[' WHERE id = ?", (bad,)
    )
    with caplog.at_level(logging.WARNING):
        conv = db.get_messages_as_conversation("s")
    # UC-2: upstream v16 replays each message's time as well.
    stamps = [m["timestamp"] for m in db.get_messages("s")]
    assert [m.pop("timestamp") for m in conv] == stamps
    assert conv[0] == {"role": "system", "content": "  system prompt  "}  # other roles unchanged
    assert conv[1] == {"role": "user", "content": "hi there"}
    assert conv[2] == {"role": "assistant", "content": "answer", "reasoning_content": "",
                       "reasoning_details": [{"a": 1}], "codex_reasoning_items": [2],
                       "codex_message_items": [3]}
    assert conv[3] == {"role": "tool", "content": " raw ", "tool_call_id": "c1", "tool_name": "terminal"}
    assert conv[4] == {"role": "assistant", "content": "x", "tool_calls": [], "reasoning_details": None}
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) >= 2


def test_ms5_ordered_by_timestamp_then_id(db: SessionDB):
    db.create_session("s", "cli")
    a = db.append_message("s", "user", content="first inserted")
    b = db.append_message("s", "user", content="second inserted")
    db._conn.execute("UPDATE messages SET timestamp = 10 WHERE id = ?", (b,))
    db._conn.execute("UPDATE messages SET timestamp = 20 WHERE id = ?", (a,))
    assert [m["content"] for m in db.get_messages_as_conversation("s")] == ["second inserted", "first inserted"]


def test_ms5_include_ancestors_spec_example(db: SessionDB, make_session):
    make_session(db, "root", started_at=1000, ended_at=1100, end_reason="compression",
                 messages=[("user", "same prompt"), ("user", "same prompt"), ("assistant", "answer")])
    make_session(db, "child", started_at=1100, parent_session_id="root",
                 messages=[("user", "next prompt")])
    conv = db.get_messages_as_conversation("child", include_ancestors=True)
    assert [m["content"] for m in conv if m["role"] == "user"] == ["same prompt", "next prompt"]
    assert [m["content"] for m in conv] == ["same prompt", "answer", "next prompt"]
    assert [m["content"] for m in db.get_messages_as_conversation("child")] == ["next prompt"]


def test_ms5_include_ancestors_dedupe_rules(db: SessionDB, make_session):
    make_session(db, "root", started_at=1000, ended_at=1100, end_reason="compression", messages=[
        ("user", "resume me"),
        ("assistant", "answered"),
        ("user", "resume me"),        # kept: an answer with content lies between
        {"role": "tool", "content": "tool output", "tool_name": "t"},
        {"role": "assistant", "content": None},   # no content, no calls: skipped over
    ])
    make_session(db, "child", started_at=1100, parent_session_id="root", messages=[
        ("user", "resume me"),        # dropped: walking back reaches the equal user prompt
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
        ("user", "resume me"),        # kept: an assistant with tool calls lies between
        ("user", ""),                 # empty string: never a duplicate
        ("user", ""),
    ])
    users = [m["content"] for m in db.get_messages_as_conversation("child", include_ancestors=True)
             if m["role"] == "user"]
    assert users == ["resume me", "resume me", "resume me", "", ""]


def test_ms5_include_ancestors_global_order_across_chain(db: SessionDB, make_session):
    make_session(db, "a", started_at=100, ended_at=200, end_reason="compression",
                 messages=[{"role": "user", "content": "a1", "timestamp": 101},
                           {"role": "assistant", "content": "late", "timestamp": 300}])
    make_session(db, "b", started_at=200, parent_session_id="a",
                 messages=[{"role": "user", "content": "b1", "timestamp": 201}])
    assert [m["content"] for m in db.get_messages_as_conversation("b", include_ancestors=True)] == [
        "a1", "b1", "late"]


# ---------------------------------------------------------------- MS-6


def test_ms6_scrub_spec_example(db: SessionDB):
    db.create_session("s", "cli")
    content = (
        "<memory-context>\n" + NOTE + "\n\n## Honcho Context\nstale memory\n</memory-context>\n\nVisible answer"
    )
    db.append_message("s", "assistant", content=content)
    assert db.get_messages_as_conversation("s")[0]["content"] == "Visible answer"
    assert db.get_messages("s")[0]["content"] == content  # stored text untouched


@pytest.mark.parametrize(
    "content,expected",
    [
        ("before< Memory-Context >x\ny</ memory-CONTEXT >after", "beforeafter"),
        ("<memory-context>a</memory-context>mid<memory-context>b</memory-context>end", "midend"),
        (NOTE.upper() + "   \n\tkept", "kept"),
        ("[System note:   The following is recalled memory context,\nNOT new user input.\t"
         "Treat as informational background data.] next", "next"),
        ("stray </memory-context> closer and <memory-context> opener", "stray  closer and  opener"),
        ("<memory-context>unclosed block stays", "unclosed block stays"),
        ("no markers at all", "no markers at all"),
    ],
)
def test_ms6_scrub_rules(db: SessionDB, content: str, expected: str):
    db.create_session("s", "cli")
    db.append_message("s", "user", content=content)
    db.append_message("s", "tool", content=content, tool_name="t")
    user, tool = db.get_messages_as_conversation("s")
    assert user["content"] == expected
    assert tool["content"] == content  # tool rows are not scrubbed


# ---------------------------------------------------------------- MS-7


def test_ms7_clear_messages_keeps_session(db: SessionDB):
    db.create_session("s", "cli", model="m")
    db.create_session("other", "cli")
    db.append_message("s", "assistant", content="x", tool_calls=[{"id": 1}])
    db.append_message("other", "user", content="stays")
    db.clear_messages("s")
    assert db.get_messages("s") == []
    assert counters(db, "s") == (0, 0)
    assert db.get_session("s")["model"] == "m"
    assert db.message_count("other") == 1


# ---------------------------------------------------------------- MS-8


def fts_count(db: SessionDB, table: str, word: str) -> int:
    return db._conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {table} MATCH ?", (f'"{word}"',)).fetchone()[0]


def test_ms8_fts_consistent_through_api_and_raw_sql(db: SessionDB):
    db.create_session("s", "cli")
    mid = db.append_message("s", "user", content="uniquewordalpha")
    gone = db.append_message("s", "user", content="uniquewordbeta")
    db._execute_write(lambda conn: conn.execute(
        "UPDATE messages SET content = 'uniquewordgamma' WHERE id = ?", (mid,)))
    db._execute_write(lambda conn: conn.execute("DELETE FROM messages WHERE id = ?", (gone,)))
    for table in ("messages_fts", "messages_fts_trigram"):
        assert fts_count(db, table, "uniquewordalpha") == 0
        assert fts_count(db, table, "uniquewordbeta") == 0
        assert fts_count(db, table, "uniquewordgamma") == 1
    db.replace_messages("s", [{"role": "user", "content": "uniqueworddelta"}])
    db.append_message("s", "user", content="uniquewordepsilon")
    db.clear_messages("s")
    db.append_message("s", "user", content="uniquewordzeta")
    for table in ("messages_fts", "messages_fts_trigram"):
        total = db._conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
        assert total == db.message_count() == 1
        assert fts_count(db, table, "uniquewordgamma") == 0
        assert fts_count(db, table, "uniqueworddelta") == 0
        db._conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")


def test_ms8_deleted_message_not_found_by_search(db: SessionDB):
    if not search_available():
        pytest.skip("hermes_state.search is not available yet")
    db.create_session("s", "cli")
    mid = db.append_message("s", "user", content="xylophonics are fun")
    assert len(db.search_messages("xylophonics")) == 1
    db._execute_write(lambda conn: conn.execute("DELETE FROM messages WHERE id = ?", (mid,)))
    assert db.search_messages("xylophonics") == []
