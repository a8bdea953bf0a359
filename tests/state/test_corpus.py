"""The deterministic corpus generator (issue #3 item 7) and the bench harness end to end.

The corpus is what every speed figure of the project is measured on, so its shape is a
contract: term shares close to the configured rates, CJK share about 12%, absent terms really
absent, lineage that ``classify_edge`` reads as intended, counters equal to the rows, FTS
indexes fed by the real triggers, unique titles, and identical bytes for identical inputs.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import random
import re
import sqlite3
import sys
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_workload import corpus as C
from hermes_state.lineage import EdgeKind, classify_edge
from hermes_state.titles import split_number_suffix

REPO_ROOT = Path(__file__).resolve().parents[2]
NOW = 1767225600.0  # 2026-01-01 00:00 UTC
SHAPE_SIZE = 10_000


def _digest(path: Path) -> str:
    """SHA-256 of every row of sessions and messages (all columns, in id order)."""
    conn = sqlite3.connect(path)
    try:
        h = hashlib.sha256()
        for table, order in (("sessions", "id"), ("messages", "id")):
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY {order}"):
                h.update(repr(row).encode())
        return h.hexdigest()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def shaped(tmp_path_factory):
    """One 12k-message corpus shared by the shape tests: ``(path, stats, conn)``."""
    path = tmp_path_factory.mktemp("corpus") / "state.db"
    stats = C.generate_corpus(path, messages=SHAPE_SIZE, seed=3, now=NOW)
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    yield path, stats, conn
    conn.close()


def _share_fts(conn: sqlite3.Connection, query: str) -> float:
    total = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    hits = conn.execute(
        "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?", (query,)
    ).fetchone()[0]
    return hits / total


def _share_substring(conn: sqlite3.Connection, term: str) -> float:
    total = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    hits = conn.execute("SELECT COUNT(*) FROM messages WHERE instr(content, ?) > 0", (term,)).fetchone()[0]
    return hits / total


# ----------------------------------------------------------------------------- determinism


def test_corpus_same_seed_size_and_now_give_identical_rows(tmp_path):
    a = C.generate_corpus(tmp_path / "a.db", messages=1000, seed=11, now=NOW)
    b = C.generate_corpus(tmp_path / "b.db", messages=1000, seed=11, now=NOW)
    assert (a.sessions, a.messages, a.tool_calls) == (b.sessions, b.messages, b.tool_calls)
    assert _digest(tmp_path / "a.db") == _digest(tmp_path / "b.db")


def test_corpus_other_seed_or_now_gives_other_rows(tmp_path):
    C.generate_corpus(tmp_path / "a.db", messages=600, seed=11, now=NOW)
    C.generate_corpus(tmp_path / "b.db", messages=600, seed=12, now=NOW)
    C.generate_corpus(tmp_path / "c.db", messages=600, seed=11, now=NOW + 86400)
    digests = {_digest(tmp_path / name) for name in ("a.db", "b.db", "c.db")}
    assert len(digests) == 3


# ----------------------------------------------------------------------------- counts and schema


def test_corpus_has_exactly_the_requested_message_count(shaped):
    _, stats, conn = shaped
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == SHAPE_SIZE
    assert stats.messages == SHAPE_SIZE
    assert stats.sessions == conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    # About 20 messages per session, as the 1M ↔ 50k target corpus.
    assert 15 <= SHAPE_SIZE / stats.sessions <= 25


def test_corpus_counters_equal_actual_rows(shaped):
    _, stats, conn = shaped
    actual_counts = dict(conn.execute("SELECT session_id, COUNT(*) FROM messages GROUP BY session_id"))
    actual_calls: dict[str, int] = {}
    for sid, raw in conn.execute("SELECT session_id, tool_calls FROM messages WHERE tool_calls IS NOT NULL"):
        actual_calls[sid] = actual_calls.get(sid, 0) + len(json.loads(raw))
    for row in conn.execute("SELECT id, message_count, tool_call_count, api_call_count FROM sessions"):
        assert row["message_count"] == actual_counts.get(row["id"], 0), row["id"]
        assert row["tool_call_count"] == actual_calls.get(row["id"], 0), row["id"]
    assert stats.tool_calls == sum(actual_calls.values()) > 0
    assert stats.empty_sessions == conn.execute(
        "SELECT COUNT(*) FROM sessions WHERE message_count = 0"
    ).fetchone()[0]


def test_corpus_built_through_the_real_schema_and_triggers(shaped):
    path, _, conn = shaped
    n = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    assert conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone()[0] == n
    assert conn.execute("SELECT COUNT(*) FROM messages_fts_trigram").fetchone()[0] == n
    # The indexed text is the trigger's combined expression (ST-4), row for row.
    mismatched = conn.execute(
        "SELECT COUNT(*) FROM messages m JOIN messages_fts f ON f.rowid = m.id WHERE f.content != "
        "COALESCE(m.content, '') || ' ' || COALESCE(m.tool_name, '') || ' ' || COALESCE(m.tool_calls, '')"
    ).fetchone()[0]
    assert mismatched == 0
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == 16
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # The store opens it like any other database.
    with SessionDB(path, read_only=True) as db:
        assert len(db.list_sessions_rich(limit=50, exclude_sources=["tool"])) == 50


def test_corpus_refuses_a_database_that_already_has_sessions(tmp_path):
    path = tmp_path / "state.db"
    C.generate_corpus(path, messages=50, seed=1, now=NOW)
    with pytest.raises(ValueError, match="already holds"):
        C.generate_corpus(path, messages=50, seed=1, now=NOW)


def test_corpus_reports_progress_up_to_the_total(tmp_path):
    calls: list[tuple[int, int]] = []
    C.generate_corpus(tmp_path / "p.db", messages=700, seed=2, now=NOW, progress=lambda d, t: calls.append((d, t)))
    assert calls[0] == (0, 700) and calls[-1] == (700, 700)
    assert all(a[0] <= b[0] for a, b in zip(calls, calls[1:]))


# ----------------------------------------------------------------------------- vocabulary shape


def test_corpus_the_is_in_about_80_percent_of_messages(shaped):
    assert 0.74 <= _share_fts(shaped[2], "the") <= 0.86


def test_corpus_docker_is_in_about_5_percent_and_topics_follow_their_rates(shaped):
    conn = shaped[2]
    assert 0.035 <= _share_fts(conn, "docker") <= 0.065
    for word, rate in C.TOPIC_RATES.items():
        share = _share_fts(conn, word)
        # Topics cluster by session theme, so a small corpus has few themed sessions of a rare
        # topic: frequent topics must be close to their rate, rare ones merely present.
        if rate >= 0.02:
            assert 0.5 * rate <= share <= 1.6 * rate, word
        else:
            assert 0 < share <= 4 * rate, word
    # Prefixes typed in the UI reach the topical words.
    assert _share_fts(conn, "kube*") >= _share_fts(conn, "kubernetes")


def test_corpus_has_thousands_of_rare_words(shaped):
    conn = shaped[2]
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, 'messages_fts', 'row')")
    distinct = conn.execute("SELECT COUNT(*) FROM temp.vocab").fetchone()[0]
    singletons = conn.execute("SELECT COUNT(*) FROM temp.vocab WHERE doc <= 2").fetchone()[0]
    assert distinct > 3000
    assert singletons > 1000


def test_corpus_cjk_share_is_about_12_percent(shaped):
    _, stats, conn = shaped
    cjk = re.compile("[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
    n = sum(1 for (content,) in conn.execute("SELECT content FROM messages") if content and cjk.search(content))
    assert n == stats.cjk_messages
    assert 0.09 <= n / SHAPE_SIZE <= 0.15
    # All three languages are present.
    for pattern in ("[\u4e00-\u9fff]", "[\u30a0-\u30ff]", "[\uac00-\ud7af]"):
        assert any(content and re.search(pattern, content) for (content,) in conn.execute("SELECT content FROM messages"))


def test_corpus_short_cjk_terms_frequent_and_absent(shaped):
    conn = shaped[2]
    assert 0.01 <= _share_substring(conn, "服务") <= 0.035
    for term in C.CJK_TERM_RATES:  # every controlled term occurs (rates are checked at 服务)
        assert _share_substring(conn, term) > 0, term
    for term in C.ABSENT_CJK_TERMS:
        assert _share_substring(conn, term) == 0, term
        assert conn.execute(
            "SELECT COUNT(*) FROM messages WHERE instr(tool_calls, ?) > 0 OR instr(tool_name, ?) > 0",
            (term, term),
        ).fetchone()[0] == 0
    # Latin glued inside a CJK run (SR-16's `修改youer服务端` case) occurs.
    assert conn.execute("SELECT COUNT(*) FROM messages WHERE content LIKE '%修改%服务端%'").fetchone()[0] > 0


def test_corpus_no_match_words_never_occur(shaped):
    conn = shaped[2]
    for word in C.NO_MATCH_WORDS:
        assert _share_fts(conn, word) == 0
        assert _share_fts(conn, word[:4] + "*") == 0


def test_vocabulary_holds_no_controlled_word_or_absent_character():
    """A controlled word may only enter a message through its own Bernoulli choice."""
    controlled = {"the", *C.TOPIC_RATES}
    free_text = (
        C._NOUNS + C._ADJS + C._VERBS + C._DETERMINERS + C._HOST_SUFFIXES + C._EXTS
        + C._USER_TEMPLATES + C._ASSISTANT_TEMPLATES + C._TOOL_PREFACES + C._LOG_TEMPLATES
        + C._REASONING_TEMPLATES + C._TITLE_TEMPLATES + C._GENERIC_COMMANDS + C._CONNECTORS
        + C.RARE_WORDS + tuple(C.TOOLS)
    )
    for text in free_text:
        tokens = set(re.findall(r"[0-9a-z]+", re.sub(r"\{\w+\}", " ", text).lower()))
        assert not tokens & controlled, text
    for topic, phrases in list(C.TOPIC_PHRASES.items()) + list(C.TOPIC_COMMANDS.items()):
        for phrase in phrases:
            tokens = set(re.findall(r"[0-9a-z]+", re.sub(r"\{\w+\}", " ", phrase).lower()))
            assert tokens & controlled == {topic}, phrase
    cjk_text = "".join(
        C._ZH_FILLER + C._JA_FILLER + C._KO_FILLER + C._ZH_TERM_TEMPLATES + C._JA_TERM_TEMPLATES
        + C._KO_TERM_TEMPLATES
        + tuple(p for parts in C._CJK_TITLE_PARTS.values() for group in parts for p in group)
    )
    for term in C.CJK_TERM_RATES:
        assert term not in cjk_text, term
    absent_chars = {ch for term in C.ABSENT_CJK_TERMS for ch in term}
    all_phrases = "".join(p for phrases in C.CJK_TERM_PHRASES.values() for p in phrases)
    assert not absent_chars & set(cjk_text + all_phrases)


# ----------------------------------------------------------------------------- sessions


def test_corpus_lineage_chains_are_classified_as_generated(shaped):
    _, stats, conn = shaped
    rows = {r["id"]: dict(r) for r in conn.execute("SELECT * FROM sessions")}
    kinds = {EdgeKind.COMPRESSION: 0, EdgeKind.BRANCH: 0, EdgeKind.DELEGATE: 0, EdgeKind.OTHER: 0}
    for child in rows.values():
        parent_id = child["parent_session_id"]
        if parent_id is None:
            continue
        parent = rows[parent_id]  # every parent link resolves
        kind = classify_edge(parent, child)
        kinds[kind] += 1
        if kind is EdgeKind.COMPRESSION and parent["title"]:
            base, number = split_number_suffix(parent["title"])
            assert child["title"] == f"{base} #{(number or 1) + 1}"
    assert kinds[EdgeKind.COMPRESSION] == stats.compression_children > 0
    assert kinds[EdgeKind.BRANCH] == stats.branch_children > 0
    assert kinds[EdgeKind.DELEGATE] == stats.delegate_children > 0
    assert kinds[EdgeKind.OTHER] == 0
    # Chains longer than one continuation exist, and the store follows them to the tip.
    path = shaped[0]
    with SessionDB(path, read_only=True) as db:
        deep = conn.execute(
            "SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id "
            "JOIN sessions g ON g.id = p.parent_session_id WHERE p.end_reason = 'compression' "
            "AND g.end_reason = 'compression' LIMIT 1"
        ).fetchone()
        assert deep is not None
        root = db.get_session_chain(deep[0])[0]
        tip = db.get_compression_tip(root)
        assert rows[tip]["end_reason"] != "compression"
        assert deep[0] in db.get_descendants(root)


def test_corpus_titles_are_unique_and_mostly_present(shaped):
    _, stats, conn = shaped
    titles = [t for (t,) in conn.execute("SELECT title FROM sessions WHERE title IS NOT NULL")]
    assert len(titles) == len(set(titles)) == stats.titled_sessions
    assert len(titles) > 0.5 * stats.sessions
    index = conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'idx_sessions_title_unique'"
    ).fetchone()
    assert index is not None


def test_corpus_ids_sources_and_times_look_real(shaped):
    _, stats, conn = shaped
    six = re.compile(r"^\d{8}_\d{6}_[0-9a-f]{6}$")
    eight = re.compile(r"^\d{8}_\d{6}_[0-9a-f]{8}$")
    for row in conn.execute("SELECT id, source, started_at, ended_at, end_reason FROM sessions"):
        pattern = six if row["source"] in ("cli", "tui") else eight
        assert pattern.match(row["id"]), row["id"]
        assert NOW - 181 * 86400 <= row["started_at"] < NOW
        if row["ended_at"] is not None:
            assert row["started_at"] <= row["ended_at"] < NOW
            assert row["end_reason"]
    assert len(stats.sources) >= 8
    assert {"cli", "telegram", "discord", "slack", "whatsapp", "cron", "tool"} <= set(stats.sources)
    live = conn.execute("SELECT COUNT(*) FROM sessions WHERE ended_at IS NULL").fetchone()[0]
    assert live == stats.live_sessions > 0
    assert conn.execute("SELECT COUNT(*) FROM sessions WHERE ended_at IS NOT NULL").fetchone()[0] > live
    spread = conn.execute("SELECT MAX(started_at) - MIN(started_at) FROM sessions").fetchone()[0]
    assert spread > 90 * 86400  # months of history
    # Messages fall inside their session and before the end.
    bad = conn.execute(
        "SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id "
        "WHERE m.timestamp < s.started_at OR (s.ended_at IS NOT NULL AND m.timestamp > s.ended_at) "
        "OR m.timestamp >= ?",
        (NOW,),
    ).fetchone()[0]
    assert bad == 0
    assert conn.execute("SELECT SUM(input_tokens), SUM(output_tokens) FROM sessions").fetchone()[0] > 0


def test_corpus_tool_calls_have_openai_shape_and_results_answer_them(shaped):
    conn = shaped[2]
    call_ids: dict[str, str] = {}
    for sid, raw in conn.execute("SELECT session_id, tool_calls FROM messages WHERE tool_calls IS NOT NULL"):
        assert raw == json.dumps(json.loads(raw))  # json.dumps defaults (ST-3)
        for call in json.loads(raw):
            assert set(call) == {"id", "type", "function"} and call["type"] == "function"
            assert call["function"]["name"] in C.TOOLS
            assert isinstance(json.loads(call["function"]["arguments"]), dict)
            call_ids[call["id"]] = sid
    results = conn.execute(
        "SELECT session_id, tool_call_id, tool_name FROM messages WHERE role = 'tool'"
    ).fetchall()
    assert results
    for sid, call_id, tool_name in results:
        assert call_ids.get(call_id) == sid
        assert tool_name in C.TOOLS
    commands = [
        json.loads(json.loads(raw)[0]["function"]["arguments"]).get("command")
        for (raw,) in conn.execute("SELECT tool_calls FROM messages WHERE tool_calls LIKE '%terminal%'")
    ]
    assert "ls -la" in commands


# ----------------------------------------------------------------------------- demo and samples


def test_demo_corpus_has_requested_sessions_and_shows_every_feature(tmp_path):
    stats = C.generate_demo(tmp_path / "demo.db", sessions=120, seed=5, now=NOW)
    assert stats.sessions == 120
    assert stats.cjk_messages > 0 and stats.tool_calls > 0 and stats.live_sessions > 0
    assert stats.compression_children > 0 and stats.titled_sessions > 60
    with SessionDB(tmp_path / "demo.db", read_only=True) as db:
        page = db.list_sessions_rich(limit=20, exclude_sources=["tool"])
        assert all(row["preview"] or row["message_count"] == 0 for row in page)
        newest = max(row["last_active"] for row in page)
        assert NOW - newest < 2 * 86400  # something happened recently


def test_sample_turn_feeds_append_message(db):
    rng = random.Random(4)
    db.create_session("20260101_000000_abcdef", "cli")
    n = 0
    for lang in ("en", "zh", "ja", "ko"):
        for msg in C.sample_turn(rng, lang=lang, themes=("docker",)):
            db.append_message("20260101_000000_abcdef", **msg)
            n += 1
    session = db.get_session("20260101_000000_abcdef")
    assert session["message_count"] == n
    assert C.sample_title(rng, lang="zh")
    with pytest.raises(ValueError):
        C.sample_turn(rng, lang="fr")


# ----------------------------------------------------------------------------- the bench harness


def _bench_run():
    try:
        return importlib.import_module("bench.run")
    except ImportError:
        sys.path.insert(0, str(REPO_ROOT))
        return importlib.import_module("bench.run")


def test_bench_harness_runs_end_to_end_and_writes_every_class(tmp_path, capsys):
    run = _bench_run()
    out = tmp_path / "results.json"
    db_path = tmp_path / "corpus.db"
    argv = ["--size", "2k", "--runs", "1", "--json", str(out), "--db", str(db_path), "--quiet"]
    assert run.main(argv) == 0
    report = json.loads(out.read_text())
    keys = {row["key"] for row in report["results"]}
    assert keys == {b.key for b in run.load_suites()}
    classes = {row["class"] for row in report["results"]}
    assert set(importlib.import_module("bench.search_suite").QUERY_CLASSES) <= classes
    assert "first_page" in classes
    for row in report["results"]:
        assert row["status"] in ("ok", "missing"), (row["key"], row.get("detail"))
        if row["status"] == "ok":
            assert row["p95_ms"] >= row["p50_ms"] > 0
            assert row["passed"] in (True, False, None)
            assert all("hits" in case for case in row["cases"])
    rows = {row["key"]: row for row in report["results"]}
    assert rows["browse.first_page"]["status"] == "ok"
    assert rows["browse.first_page"]["cases"][0]["hits"] == 50
    # The upstream reference finds nothing for absent terms and something for frequent ones.
    absent = rows["upstream_sql.cjk_short_absent"]["cases"]
    assert all(case["hits"] == 0 for case in absent)
    assert all(case["hits"] > 0 for case in rows["upstream_sql.cjk_short_frequent"]["cases"])
    assert report["corpus"]["messages"] == 2000
    assert report["corpus"]["shares"]["docker"] > 0
    table = capsys.readouterr().out
    assert "first page of 50 sessions" in table and "target" in table and "overlap@20" in table

    # A second run reuses the corpus instead of rebuilding it.
    mtime = db_path.stat().st_mtime_ns
    assert run.main(argv + ["--classes", "first_page"]) == 0
    assert db_path.stat().st_mtime_ns == mtime
    assert {row["class"] for row in json.loads(out.read_text())["results"]} == {"first_page"}


def test_bench_size_labels():
    run = _bench_run()
    assert run.parse_size("10k") == ("10k", 10_000)
    assert run.parse_size("100k") == ("100k", 100_000)
    assert run.parse_size("1m") == ("1m", 1_000_000)
    assert run.parse_size("2500") == ("2500", 2500)
    with pytest.raises(Exception):
        run.parse_size("lots")


# ----------------------------------------------------------------------------- current-upstream shapes (SPEC §16)


@pytest.fixture(scope="module")
def shaped30(tmp_path_factory):
    """The same 10k corpus as ``shaped`` (seed 3) written in the v30 layout: ``(path, stats, conn)``."""
    path = tmp_path_factory.mktemp("corpus30") / "state.db"
    stats = C.generate_corpus(path, messages=SHAPE_SIZE, seed=3, now=NOW, schema=30)
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    yield path, stats, conn
    conn.close()


def _config(row) -> dict:
    return json.loads(row["model_config"]) if row["model_config"] else {}


def _edges(conn, kind: str) -> list[tuple[dict, dict]]:
    """(parent, child) rows of the generated children of one kind, classified by marker."""
    rows = {r["id"]: dict(r) for r in conn.execute("SELECT * FROM sessions")}
    out = []
    for child in rows.values():
        parent = rows.get(child["parent_session_id"])
        if parent is None:
            continue
        marker = _config(child)
        found = ("delegate" if "_delegate_from" in marker else "branch" if "_branched_from" in marker
                 else "reset" if "_reset_from" in marker else "compression")
        if found == kind:
            out.append((parent, child))
    return out


@pytest.mark.parametrize("schema", [16, 30])
def test_corpus_shapes_archived_sessions_and_an_archived_compression_pair(shaped, shaped30, schema):
    _, stats, conn = shaped if schema == 16 else shaped30
    archived = conn.execute("SELECT COUNT(*) FROM sessions WHERE archived = 1").fetchone()[0]
    assert archived == stats.archived_sessions
    assert 0.005 * stats.sessions <= archived <= 0.1 * stats.sessions
    pair = conn.execute(
        "SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id "
        "WHERE p.end_reason = 'compression' AND p.archived = 1 AND c.archived = 1"
    ).fetchall()
    assert pair
    # Archiving acts on the whole compression lineage: no chain is half archived.
    split = conn.execute(
        "SELECT COUNT(*) FROM sessions c JOIN sessions p ON p.id = c.parent_session_id "
        "WHERE p.end_reason = 'compression' AND c.started_at >= p.ended_at AND c.archived != p.archived"
    ).fetchone()[0]
    assert split == 0
    # Only finished conversations are archived.
    assert conn.execute("SELECT COUNT(*) FROM sessions WHERE archived = 1 AND ended_at IS NULL").fetchone()[0] == 0


@pytest.mark.parametrize("schema", [16, 30])
def test_corpus_shapes_rewound_rows_are_inactive_and_counted(shaped, shaped30, schema):
    _, stats, conn = shaped if schema == 16 else shaped30
    rewound = conn.execute(
        "SELECT session_id, COUNT(*) FROM messages WHERE active = 0 AND "
        + ("compacted = 0" if schema == 30 else "1") + " GROUP BY session_id"
    ).fetchall()
    assert len(rewound) == stats.rewound_sessions > 0
    assert sum(n for _, n in rewound) == stats.inactive_messages
    for sid, _ in rewound:
        row = conn.execute("SELECT rewind_count FROM sessions WHERE id = ?", (sid,)).fetchone()
        assert row[0] >= 1, sid
        roles = conn.execute(
            "SELECT role, active FROM messages WHERE session_id = ? ORDER BY id", (sid,)
        ).fetchall()
        first_inactive = next(i for i, r in enumerate(roles) if not r["active"])
        assert roles[first_inactive]["role"] == "user"  # rewound from a user message
        assert roles[0]["active"] == 1  # the conversation's opening stays
    assert conn.execute(
        "SELECT COUNT(*) FROM sessions WHERE rewind_count > 0"
    ).fetchone()[0] == stats.rewound_sessions


@pytest.mark.parametrize("schema", [16, 30])
def test_corpus_shapes_delegate_and_branch_markers_name_the_parent(shaped, shaped30, schema):
    _, stats, conn = shaped if schema == 16 else shaped30
    delegates = _edges(conn, "delegate")
    branches = _edges(conn, "branch")
    assert len(delegates) == stats.delegate_children > 0
    assert len(branches) == stats.branch_children > 0
    for parent, child in delegates:
        assert _config(child)["_delegate_from"] == parent["id"]
        assert (child["source"] == "subagent") == (schema == 30)
    for parent, child in branches:
        assert _config(child)["_branched_from"] == parent["id"]
        assert parent["end_reason"] == "branched"


@pytest.mark.parametrize("schema", [16, 30])
def test_corpus_shapes_workspaces_and_internal_sources(shaped, shaped30, schema):
    _, stats, conn = shaped if schema == 16 else shaped30
    rows = conn.execute("SELECT * FROM sessions WHERE cwd IS NOT NULL").fetchall()
    assert len(rows) == stats.workspace_sessions > 0.1 * stats.sessions
    assert {r["source"] for r in rows} <= {"cli", "tui", "kanban", "oneshot", "subagent"}  # delegates share it
    roots = {r["cwd"] for r in rows}
    assert any(cwd.startswith("/home/maya/src/") for cwd in roots)
    if schema == 30:
        repos = {r["git_repo_root"] for r in rows if r["git_repo_root"]}
        assert 3 <= len(repos) <= 6  # a handful of repositories
        branches = {r["git_branch"] for r in rows if r["git_branch"]}
        assert len(branches) >= 4
        for r in rows:
            if r["git_repo_root"]:
                assert r["cwd"].startswith(r["git_repo_root"]) and r["git_branch"]
            else:
                assert r["git_branch"] is None
    sources = {r[0] for r in conn.execute("SELECT DISTINCT source FROM sessions")}
    assert {"tool", "kanban", "oneshot", "cron"} <= sources


def test_corpus_v30_shapes_pins_hidden_sessions_and_title_sources(shaped30):
    _, stats, conn = shaped30
    pinned = conn.execute("SELECT * FROM sessions WHERE pinned = 1").fetchall()
    hidden = conn.execute("SELECT * FROM sessions WHERE hidden = 1").fetchall()
    assert len(pinned) == stats.pinned_sessions > 0
    assert len(hidden) == stats.hidden_sessions > 0
    assert all(r["archived"] == 0 for r in pinned + hidden)
    assert {r["source"] for r in hidden} <= {"telegram", "discord", "slack", "whatsapp", "signal", "matrix", "email"}
    counts = dict(conn.execute("SELECT title_source, COUNT(*) FROM sessions WHERE title IS NOT NULL GROUP BY 1"))
    assert {"llm", "derived", "user", "branch"} <= set(counts)
    assert conn.execute("SELECT COUNT(*) FROM sessions WHERE title IS NULL AND title_source IS NOT NULL").fetchone()[0] == 0
    assert set(counts) <= {None, "llm", "derived", "user", "branch", "branch_fallback"}


def test_corpus_v30_shapes_compacted_history_and_hidden_scaffolding_rows(shaped30):
    _, stats, conn = shaped30
    compacted = conn.execute(
        "SELECT m.*, s.end_reason FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.compacted = 1"
    ).fetchall()
    assert len(compacted) == stats.compacted_messages > 0
    for row in compacted:
        assert (row["active"], row["_compressed_summary"], row["role"]) == (0, 1, "user")
        assert row["content"].startswith("[CONTEXT COMPACTION]")
        assert row["end_reason"] == "compression"  # kept in the compression parent
        last = conn.execute("SELECT MAX(id) FROM messages WHERE session_id = ?", (row["session_id"],)).fetchone()[0]
        assert last == row["id"]
    scaffold = conn.execute("SELECT * FROM messages WHERE display_kind = 'hidden'").fetchall()
    assert len(scaffold) == stats.scaffold_messages > 0
    for row in scaffold:
        first = conn.execute("SELECT MIN(id) FROM messages WHERE session_id = ?", (row["session_id"],)).fetchone()[0]
        assert first == row["id"] and row["role"] == "user" and row["active"] == 1
    # display_order is filled by the store's own trigger for every row.
    assert conn.execute("SELECT COUNT(*) FROM messages WHERE display_order IS NULL").fetchone()[0] == 0


def test_corpus_v30_shapes_reset_children_share_the_lane_key(shaped30):
    _, stats, conn = shaped30
    resets = _edges(conn, "reset")
    assert len(resets) == stats.reset_children > 0
    for parent, child in resets:
        assert _config(child)["_reset_from"] == parent["id"]
        assert parent["end_reason"] == "session_reset"
        assert child["session_key"] and child["session_key"] == parent["session_key"]
        assert child["started_at"] >= parent["ended_at"]
        assert child["source"] == parent["source"]
    gateway = conn.execute(
        "SELECT session_key, chat_id, chat_type, source FROM sessions WHERE source IN ('telegram', 'discord')"
    ).fetchall()
    assert gateway and all(r["session_key"].startswith(f"agent:main:{r['source']}:{r['chat_type']}:{r['chat_id']}")
                           for r in gateway)


def test_corpus_v30_system_prompts_by_hash_and_last_activity(shaped30):
    _, _, conn = shaped30
    assert conn.execute(
        "SELECT COUNT(*) FROM sessions s LEFT JOIN system_prompts p ON p.hash = s.system_prompt_hash "
        "WHERE s.system_prompt_hash IS NOT NULL AND p.hash IS NULL"
    ).fetchone()[0] == 0
    by_hash = conn.execute("SELECT COUNT(*) FROM sessions WHERE system_prompt_hash IS NOT NULL").fetchone()[0]
    inline = conn.execute("SELECT COUNT(*) FROM sessions WHERE system_prompt IS NOT NULL").fetchone()[0]
    assert by_hash > 5 * inline > 0
    for digest, prompt in conn.execute("SELECT hash, prompt FROM system_prompts"):
        assert hashlib.sha256(prompt.encode()).hexdigest() == digest
    assert conn.execute("SELECT COUNT(*) FROM system_prompts").fetchone()[0] >= 5
    bad = conn.execute(
        "SELECT COUNT(*) FROM sessions s WHERE s.last_activity_at IS NOT NULL AND (s.last_activity_at < "
        "(SELECT MAX(timestamp) FROM messages m WHERE m.session_id = s.id) OR s.last_activity_at >= ?)",
        (NOW,),
    ).fetchone()[0]
    assert bad == 0
    assert conn.execute("SELECT COUNT(*) FROM sessions WHERE last_activity_at IS NOT NULL").fetchone()[0] > 0
    assert conn.execute("SELECT COUNT(*) FROM session_model_usage").fetchone()[0] > 0


def test_corpus_v30_store_passes_integrity_and_both_fts_integrity_checks(shaped30):
    path, _, conn = shaped30
    assert [tuple(r) for r in conn.execute("PRAGMA integrity_check")] == [("ok",)]
    for table in ("messages_fts", "messages_fts_trigram"):
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    assert [tuple(r) for r in conn.execute("SELECT version FROM schema_version")] == [(30,)]
    assert conn.execute("SELECT value FROM state_meta WHERE key = 'fts_storage_version'").fetchone()[0] == "3"
    # The trigram index holds exactly the rows upstream's view selects (no tool rows, no
    # cron / subagent / delegate sessions), fed by the triggers.
    indexed = conn.execute("SELECT COUNT(*) FROM messages_fts_trigram_docsize").fetchone()[0]
    assert indexed == conn.execute("SELECT COUNT(*) FROM messages_fts_trigram_src").fetchone()[0]
    assert indexed < conn.execute("SELECT COUNT(*) FROM messages WHERE role != 'tool'").fetchone()[0]
    assert conn.execute("SELECT COUNT(*) FROM messages_fts_docsize").fetchone()[0] == SHAPE_SIZE


def test_corpus_v30_layout_is_the_v30_ddl(shaped30, tmp_path):
    from hermes_workload.schema_v30 import create_v30_store

    path, _, conn = shaped30
    fresh = sqlite3.connect(create_v30_store(tmp_path / "fresh.db"))
    try:
        query = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        assert [tuple(r) for r in conn.execute(query)] == fresh.execute(query).fetchall()
    finally:
        fresh.close()


def test_corpus_v16_and_v30_hold_the_same_sessions_and_shapes(shaped, shaped30):
    _, s16, c16 = shaped
    _, s30, c30 = shaped30
    q = "SELECT id, title, started_at, ended_at, end_reason, archived, rewind_count, cwd FROM sessions ORDER BY id"
    assert [tuple(r) for r in c16.execute(q)] == [tuple(r) for r in c30.execute(q)]
    assert (s16.messages, s16.sessions) == (s30.messages, s30.sessions) == (SHAPE_SIZE, s16.sessions)
    # v16 has no column for the v30-only shapes, and links no reset child.
    assert (s16.pinned_sessions, s16.hidden_sessions, s16.compacted_messages,
            s16.scaffold_messages, s16.reset_children) == (0, 0, 0, 0, 0)


def test_corpus_v30_same_seed_gives_a_byte_identical_file(tmp_path):
    paths = [tmp_path / "a.db", tmp_path / "b.db"]
    for path in paths:
        C.generate_corpus(path, messages=800, seed=11, now=NOW, schema=30)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    C.generate_corpus(tmp_path / "c.db", messages=800, seed=12, now=NOW, schema=30)
    assert _digest(paths[0]) != _digest(tmp_path / "c.db")


def test_corpus_unknown_schema_is_refused(tmp_path):
    with pytest.raises(ValueError, match="schema"):
        C.generate_corpus(tmp_path / "x.db", messages=10, seed=1, now=NOW, schema=11)


def test_corpus_v30_opens_read_only_without_migrating(shaped30):
    path, stats, conn = shaped30
    with SessionDB(path, read_only=True) as db:
        assert db.opened_version == 30
        assert db.capabilities.fts_layout == "external"
        assert db.message_count() == SHAPE_SIZE


def test_demo_corpus_at_v30(tmp_path):
    stats = C.generate_demo(tmp_path / "demo.db", sessions=120, seed=5, now=NOW, schema=30)
    assert stats.sessions == 120 and stats.schema == 30
    assert stats.pinned_sessions > 0 and stats.rewound_sessions > 0 and stats.archived_sessions > 0
    conn = sqlite3.connect(tmp_path / "demo.db")
    try:
        for table in ("messages_fts", "messages_fts_trigram"):
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    finally:
        conn.close()
