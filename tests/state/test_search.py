"""search_messages: sanitiser, CJK detection, routing and the three paths (SPEC §9, SR-1 … SR-16)."""

from __future__ import annotations

import pytest

from hermes_state import SessionDB
from hermes_state.query import (
    contains_cjk,
    count_cjk,
    is_cjk_codepoint,
    parse_fts_query,
    prepare_fts_query,
    route_cjk,
    sanitize_fts5_query,
    trigram_match,
)

SR7_ROWS = [
    (1, "hello world", "hello world"),
    (2, "chat-send", '"chat-send"'),
    (3, '"chat-send"', '"chat-send"'),
    (4, '"my chat-send thing"', '"my chat-send thing"'),
    (5, "fix chat-send bug", 'fix "chat-send" bug'),
    (6, '"exact phrase" setup', '"exact phrase" setup'),
    (7, "***", ""),
    (8, "deploy*", "deploy*"),
    (9, "deploy**", "deploy*"),
    (10, "*deploy", "deploy"),
    (11, "hello AND", "hello"),
    (12, "OR world", "world"),
    (13, "NOT java", "java"),
    (14, "python NOT java", "python NOT java"),
    (15, "hello and", "hello"),
    (16, "AND", ""),
    (17, "C++", "C"),
    (18, "(problem", "problem"),
    (19, "{test}", "test"),
    (20, '"unterminated', "unterminated"),
    (21, 'foo "bar', "foo  bar"),
    (22, "a^b", "a b"),
    (23, "NEAR(a b)", "NEAR a b"),
    (24, "my.app_config.ts", '"my.app_config.ts"'),
    (25, "P2.2", '"P2.2"'),
    (26, "my-app.config.ts", '"my-app.config.ts"'),
    (27, "docker-compose_up", '"docker-compose_up"'),
    (28, "sp_new", '"sp_new"'),
    (29, "v1.2.3", '"v1.2.3"'),
    (30, "_private", "_private"),
    (31, "血管瘤 sp_new", '血管瘤 "sp_new"'),
    (32, "  spaced   out  ", "spaced   out"),
    (33, "a AND OR b", "a AND OR b"),
    (34, "TODO: fix", "TODO: fix"),
    (35, ".env", ".env"),
    (36, "rm -rf", "rm -rf"),
    (36, "--force", "--force"),
    (37, "user@example.com", 'user@"example.com"'),
    (38, "100%", "100%"),
]


@pytest.fixture
def db(tmp_path):
    store = SessionDB(tmp_path / "state.db")
    yield store
    store.close()


def add(db, sid, role, content, source="cli", tool_name=None, tool_calls=None):
    if db.get_session(sid) is None:
        db.create_session(sid, source)
    return db.append_message(sid, role, content, tool_name=tool_name, tool_calls=tool_calls)


def ids(results):
    return [r["id"] for r in results]


# ----------------------------------------------------------------------------- SR-6 / SR-7


@pytest.mark.parametrize("row,query,expected", SR7_ROWS)
def test_sr7_sanitizer_example_rows(row, query, expected):
    assert sanitize_fts5_query(query) == expected
    assert SessionDB._sanitize_fts5_query(query) == expected


@pytest.mark.parametrize("row,query,expected", [r for r in SR7_ROWS if r[0] <= 32])
def test_sr16_rows_1_to_32_reach_fts5_unchanged(row, query, expected):
    # The SR-16 repair stage runs after the sanitiser and must not alter what upstream sends.
    assert prepare_fts_query(sanitize_fts5_query(query)) == expected


@pytest.mark.parametrize(
    "query,prepared",
    [
        ("a AND OR b", "a OR b"),
        ("TODO: fix", '"TODO:" fix'),
        (".env", '".env"'),
        ("rm -rf", 'rm "-rf"'),
        ("--force", '"--force"'),
        ("-v", '"-v"'),
        ("user@example.com", '"user@ example.com"'),
        ("100%", '"100%"'),
        ("deploy -", "deploy"),
        ("a OR NOT b", "a NOT b"),
        ("x\x00y", '"x y"'),
    ],
)
def test_sr16_repair_stage_outputs(query, prepared):
    assert prepare_fts_query(sanitize_fts5_query(query)) == prepared


def test_sr16_repair_leaves_nothing_searchable_empty():
    assert prepare_fts_query(sanitize_fts5_query("-- ... !!")) == ""
    assert not parse_fts_query(sanitize_fts5_query("AND OR")).items


# ----------------------------------------------------------------------------- SR-8


def test_sr8_cjk_ranges_and_exclusions():
    inside = [0x4E00, 0x9FFF, 0x3400, 0x4DBF, 0x20000, 0x2A6DF, 0x3000, 0x3002, 0x300C,
              0x3040, 0x309F, 0x30A0, 0x30FF, 0xAC00, 0xD7AF]
    outside = [0xFF0C, 0xFF00, 0xFFEF, 0x1100, 0xF900, 0x2A700, 0x41, 0x4DC0, 0x2FFF, 0xD7B0]
    for cp in inside:
        assert is_cjk_codepoint(cp), hex(cp)
        assert SessionDB._is_cjk_codepoint(cp)
    for cp in outside:
        assert not is_cjk_codepoint(cp), hex(cp)


def test_sr8_contains_and_count():
    assert contains_cjk("日本語mixedwithenglish") is True
    assert contains_cjk("hello world") is False
    assert contains_cjk("") is False
    assert SessionDB._contains_cjk("안녕") is True
    assert count_cjk("Agent通信") == 2
    assert SessionDB._count_cjk("记忆断裂，ok") == 4  # fullwidth comma is not CJK


# ----------------------------------------------------------------------------- SR-9 routing


@pytest.mark.parametrize(
    "query,path,effective",
    [
        ("记忆断裂", "B", '"记忆断裂"'),
        ("记忆系统 OR 断裂连接", "B", '"记忆系统" OR "断裂连接"'),
        ("大别山 docker", "B", '"大别山" "docker"'),
        ("こんにちは", "B", '"こんにちは"'),
        ("안녕하세요", "B", '"안녕하세요"'),
        ("通信", "C", None),
        ("안녕", "C", None),
        ("世界", "C", None),
        ("Agent通信", "C", None),
        ("广西 OR 桂林 OR 漓江", "C", None),
        ("大别山 OR 桂林", "C", None),
        ("100%完成", "C", None),
    ],
)
def test_sr9_routing_examples(query, path, effective):
    route = route_cjk(sanitize_fts5_query(query))
    assert route.path == path
    if effective is not None:
        assert trigram_match(route.tokens) == effective


def test_sr9_c_terms_are_the_non_operator_tokens():
    assert route_cjk("广西 OR 桂林 OR 漓江").terms == ["广西", "桂林", "漓江"]
    assert route_cjk("大别山 OR 桂林").terms == ["大别山", "桂林"]


# ----------------------------------------------------------------------------- SR-1..SR-5


def test_sr2_result_has_exactly_the_upstream_keys(db):
    add(db, "s1", "user", "Deploy docker containers")
    (hit,) = db.search_messages("docker")
    assert set(hit) == {
        "id", "session_id", "role", "snippet", "timestamp", "tool_name",
        "source", "model", "session_started", "context",
    }
    session = db.get_session("s1")
    assert hit["session_started"] == session["started_at"]
    assert hit["source"] == "cli"


def test_sr13_snippet_marks_match_in_combined_text(db):
    add(db, "s1", "user", "Deploy docker containers")
    (hit,) = db.search_messages("docker")
    assert hit["snippet"] == "Deploy >>>docker<<< containers  "


def test_sr13_tool_name_and_arguments_are_searchable(db):
    add(db, "s1", "assistant", "running it", tool_calls=[
        {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls -la /srv"}'}}
    ])
    add(db, "s1", "tool", "total 0", tool_name="terminal")
    assert len(db.search_messages("terminal")) == 2


def test_sr3_context_is_previous_self_next_of_same_session(db):
    db.create_session("a", "cli")
    db.create_session("b", "cli")
    a1 = db.append_message("a", "user", "first in a")
    db.append_message("b", "user", "interleaved b one")
    a2 = db.append_message("a", "assistant", "kubernetes answer " + "x" * 300)
    db.append_message("b", "user", "interleaved b two")
    a3 = db.append_message("a", "user", "third in a")
    (hit,) = db.search_messages("kubernetes")
    assert hit["id"] == a2
    assert hit["context"] == [
        {"role": "user", "content": "first in a"},
        {"role": "assistant", "content": ("kubernetes answer " + "x" * 300)[:200]},
        {"role": "user", "content": "third in a"},
    ]
    assert a1 < a2 < a3


def test_sr3_context_orders_by_timestamp_not_id(db):
    db.create_session("a", "cli")
    first = db.append_message("a", "user", "alpha")
    second = db.append_message("a", "user", "zebra target")
    third = db.append_message("a", "user", "gamma")
    # Reorder by time: third happened before the match, first after it.
    db._conn.execute("UPDATE messages SET timestamp = 10 WHERE id = ?", (third,))
    db._conn.execute("UPDATE messages SET timestamp = 20 WHERE id = ?", (second,))
    db._conn.execute("UPDATE messages SET timestamp = 30 WHERE id = ?", (first,))
    (hit,) = db.search_messages("zebra")
    assert [c["content"] for c in hit["context"]] == ["gamma", "zebra target", "alpha"]


def test_sr3_missing_neighbours_are_absent(db):
    add(db, "solo", "user", "lonely message")
    (hit,) = db.search_messages("lonely")
    assert hit["context"] == [{"role": "user", "content": "lonely message"}]


def test_sr5_empty_queries_return_empty_list(db):
    add(db, "s1", "user", "anything")
    assert db.search_messages("") == []
    assert db.search_messages("   ") == []
    assert db.search_messages(None) == []
    assert db.search_messages("***") == []
    assert db.search_messages("AND") == []


def _three_path_corpus(db):
    add(db, "cli1", "user", "docker on cli 记忆断裂 通信", source="cli")
    add(db, "tg1", "assistant", "docker on telegram 记忆断裂 通信", source="telegram")
    add(db, "sig1", "user", "docker on signal 记忆断裂 通信", source="signal")


@pytest.mark.parametrize("query", ["docker", "记忆断裂", "通信"])
def test_sr4_filters_apply_on_all_three_paths(db, query):
    _three_path_corpus(db)
    assert len(db.search_messages(query)) == 3
    assert {r["source"] for r in db.search_messages(query, source_filter=["telegram"])} == {"telegram"}
    assert db.search_messages(query, source_filter=[]) == []
    assert {r["source"] for r in db.search_messages(query, exclude_sources=["cli", "signal"])} == {"telegram"}
    assert len(db.search_messages(query, exclude_sources=[])) == 3
    assert {r["role"] for r in db.search_messages(query, role_filter=["assistant"])} == {"assistant"}
    assert len(db.search_messages(query, role_filter=[])) == 3


def test_sr4_limit_and_offset(db):
    for i in range(7):
        add(db, "s", "user", f"paging word {i}")
    first = db.search_messages("paging", limit=3)
    second = db.search_messages("paging", limit=3, offset=3)
    assert len(first) == 3 and len(second) == 3
    assert not set(ids(first)) & set(ids(second))
    assert len(db.search_messages("paging", limit=3, offset=6)) == 1


# ----------------------------------------------------------------------------- paths B and C


def test_sr10_path_b_trigram_and_implicit_and(db):
    only_cjk = add(db, "s", "user", "关于记忆断裂的问题")
    both = add(db, "s", "user", "大别山 项目 docker 部署")
    add(db, "s", "user", "大别山 风景")
    assert ids(db.search_messages("记忆断裂")) == [only_cjk]
    assert ids(db.search_messages("大别山 docker")) == [both]
    assert set(ids(db.search_messages("记忆断裂 OR 大别山"))) == {only_cjk, both, both + 1}
    hit = db.search_messages("记忆断裂")[0]
    assert ">>>" in hit["snippet"] and "<<<" in hit["snippet"]


def test_sr11_path_c_like_semantics(db):
    lower = add(db, "s", "user", "agent通信 works")
    pct = add(db, "s", "user", "达成100%完成率")
    add(db, "s", "user", "达成100完成率")
    assert ids(db.search_messages("Agent通信")) == [lower]  # ASCII case-insensitive
    assert ids(db.search_messages("100%完成")) == [pct]  # % is a literal


def test_sr11_path_c_terms_or_ed_newest_first(db):
    a = add(db, "s", "user", "去广西玩")
    b = add(db, "s", "user", "桂林山水")
    c = add(db, "s", "user", "漓江")
    add(db, "s", "user", "别的地方")
    assert ids(db.search_messages("广西 OR 桂林 OR 漓江")) == [c, b, a]


def test_sr12_path_c_snippet_window(db):
    text = "a" * 100 + "通信" + "b" * 200
    add(db, "s", "user", text)
    (hit,) = db.search_messages("通信")
    start = text.index("通信") - 40
    assert hit["snippet"] == text[start : start + 120]


def test_sr12_path_c_snippet_when_term_not_in_content(db):
    add(db, "s", "tool", "output " + "z" * 200, tool_name="通信工具")
    add(db, "s2", "tool", None, tool_name="通信工具")
    hits = db.search_messages("通信")
    assert [h["snippet"] for h in hits] == [None, ("output " + "z" * 200)[:120]]


def test_sr14_path_a_keeps_exact_bm25_order(db):
    add(db, "s", "user", "cache " + "filler " * 40)
    add(db, "s", "user", "cache cache cache")
    add(db, "s", "user", "some cache here")
    got = ids(db.search_messages("cache"))
    expected = [
        row[0]
        for row in db._conn.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'cache' ORDER BY rank"
        )
    ]
    assert got == expected and len(got) == 3


def test_sr15_fts_errors_return_empty_list(db):
    add(db, "s", "user", "text")
    for query in ['"', "NEAR(", "a:b:c", "^^^", "OR OR OR", "((", "col:"]:
        assert isinstance(db.search_messages(query), list)


# ----------------------------------------------------------------------------- SR-16


def test_sr16_colon_column_filter(db):
    mid = add(db, "s", "user", "TODO: fix the flaky test")
    assert ids(db.search_messages("TODO: fix")) == [mid]


@pytest.mark.parametrize(
    "query,content",
    [
        (".env", "copy .env.example to .env"),
        ("rm -rf", "never run rm -rf / please"),
        ("--force", "git push --force origin main"),
        ("-v", "run pytest -v now"),
        ("user@example.com", "mail user@example.com today"),
        ("100%", "coverage is 100% now"),
        ("deploy-", "the deploy- step"),
        ("a AND OR b", "a and b"),
    ],
)
def test_sr16_punctuated_terms_find_their_text(db, query, content):
    mid = add(db, "s", "user", content)
    add(db, "s", "user", "unrelated words only")
    assert mid in ids(db.search_messages(query))


@pytest.mark.parametrize("query", ["ls -la", "rm -rf", "--force", "-v"])
def test_sr16_terms_inside_tool_call_arguments(db, query):
    mid = add(db, "s", "assistant", "", tool_calls=[
        {"id": "c", "type": "function", "function": {"name": "terminal",
         "arguments": '{"command": "ls -la && rm -rf build && git push --force -v"}'}}
    ])
    assert ids(db.search_messages(query)) == [mid]


def test_sr16_latin_inside_cjk_found_via_trigram(db):
    mid = add(db, "s", "user", "帮我修改youer服务端的配置")
    assert ids(db.search_messages("youer")) == [mid]
    assert ">>>" in db.search_messages("youer")[0]["snippet"]
    assert db.search_messages("yo") == []  # under 3 characters: no retry


def test_sr16_short_cjk_or_and_hangul(db):
    gx = add(db, "s", "user", "广西的山")
    gl = add(db, "s", "user", "桂林米粉")
    server = add(db, "s", "user", "서버 점검")
    deploy = add(db, "s", "user", "배포 완료")
    assert set(ids(db.search_messages("广西 OR 桂林 OR 漓江"))) == {gx, gl}
    assert set(ids(db.search_messages("서버 배포"))) == {server, deploy}


def test_sr16_quoted_phrase_kept_whole_on_cjk_paths(db):
    phrase = add(db, "s", "user", "大别山 项目 启动")
    add(db, "s", "user", "大别山 风景 和 项目")
    assert ids(db.search_messages('"大别山 项目"')) == [phrase]


def test_sr16_like_path_scans_newest_first_by_rowid(db):
    first = add(db, "s", "user", "通信 one")
    second = add(db, "s", "user", "通信 two")
    # Timestamps say the opposite; the LIKE path orders by rowid, newest first.
    db._conn.execute("UPDATE messages SET timestamp = 100 WHERE id = ?", (first,))
    db._conn.execute("UPDATE messages SET timestamp = 1 WHERE id = ?", (second,))
    assert ids(db.search_messages("通信")) == [second, first]


def test_sr16_like_path_stops_at_offset_plus_limit(db):
    db.create_session("s", "cli")
    rows = [("s", "user", f"通信 row {i}", 1.0 + i) for i in range(3000)]
    rows[0] = ("s", "user", "稀有词 oldest", 1.0)
    db._execute_write(
        lambda conn: conn.executemany(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)", rows
        )
    )
    steps = {"n": 0}

    def tick():
        steps["n"] += 1
        return 0

    db._conn.set_progress_handler(tick, 1000)
    try:
        assert len(db.search_messages("通信", limit=5)) == 5
        early = steps["n"]
        steps["n"] = 0
        assert len(db.search_messages("稀有", limit=5)) == 1  # must scan everything
        full = steps["n"]
    finally:
        db._conn.set_progress_handler(None, 0)
    assert early * 20 < full


def test_sr16_like_path_absent_terms_answered_from_the_trigram_index(db, monkeypatch):
    from hermes_state.search import TUNING

    monkeypatch.setattr(TUNING, "LIKE_FIRST_ROWS", 100)
    db.create_session("s", "cli")
    rows = [("s", "user", f"通信 row {i}", 1.0 + i) for i in range(3000)]
    db._execute_write(
        lambda conn: conn.executemany(
            "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)", rows
        )
    )
    steps = {"n": 0}

    def tick():
        steps["n"] += 1
        return 0

    db._conn.set_progress_handler(tick, 1000)
    try:
        assert db.search_messages("鲸鱼") == []
        assert db.search_messages("鲸鱼 OR 麒") == []
    finally:
        db._conn.set_progress_handler(None, 0)
    assert steps["n"] < 20  # a full LIKE scan of the 3000 rows takes ~100 ticks


@pytest.mark.parametrize(
    "content,tool_name,query",
    [
        ("问题是通信", None, "通信"),  # at the very end of content
        ("信", None, "信"),  # the whole content
        (None, "通信", "通信"),  # at the end of the tool name
        ("Agent通信", None, "agent通信"),  # ASCII case-insensitive, ≥ 3 characters
    ],
)
def test_sr16_like_path_absence_check_never_hides_a_match(db, content, tool_name, query):
    mid = add(db, "s", "tool" if tool_name else "user", content, tool_name=tool_name)
    assert ids(db.search_messages(query)) == [mid]
