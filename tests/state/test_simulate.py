"""The concurrent writer (issue 6, items 2 and 3): real processes, real files, real WAL.

One module-scoped run of two writer processes for ~3 s against a temporary HERMES_HOME is
shared by the consistency tests; each test checks one property of the result against the
writers' own logs (written only after each database call returned). Separate tests cover
lock contention beyond the retry budget and determinism. The command-line entries
(``simulate`` / ``generate``: SIGINT, arguments, messages) are tested with the CLI, in
tests/cli/test_cli_workload.py.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.gateway import load_sessions_index
from hermes_workload.simulate import (
    fts_integrity_problems,
    read_log,
    run_simulation,
    run_writer,
    verify_simulation,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
GATEWAY_ID = re.compile(r"^\d{8}_\d{6}_[0-9a-f]{8}$")
CLI_ID = re.compile(r"^\d{8}_\d{6}_[0-9a-f]{6}$")
CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]")
#: The seed of the shared runs (see ``run``).
SEED = 9


def _sha(text):
    import hashlib

    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Two writer processes, 200 events each at 70/s (~3 s); returns (home, logs, report).

    The run stops on the event count rather than on a wall-clock duration: the workload is
    fixed by the seed, so the lifecycle events asserted below (seed 9: every kind — title,
    reset, compression, delegate, branch, rewind, archive, cwd move — within the 200 events
    of the two writers) happen however loaded the machine is. ``duration`` is only a
    safety cap.
    """
    base = tmp_path_factory.mktemp("simulate")
    home = base / "home"
    logs = base / "logs"
    report = run_simulation(
        home, writers=2, rate=70.0, max_events=200, duration=30.0, seed=SEED, log_dir=logs
    )
    log_paths = sorted(logs.glob("writer-*.jsonl"))
    return home, log_paths, report


@pytest.fixture(scope="module")
def conn(run):
    home, _, _ = run
    connection = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    connection.row_factory = sqlite3.Row
    yield connection
    connection.close()


# --------------------------------------------------------------------- the 2-writer run


def test_sim_two_writers_run_without_error(run):
    _, log_paths, report = run
    assert report.errors == 0, report.error_samples
    assert [w.writer_index for w in report.per_writer] == [0, 1]
    assert len(log_paths) == 2
    for writer in report.per_writer:
        assert writer.events == 200, writer  # both processes ran to the end
        assert writer.messages > 0
    assert not report.interrupted


def test_sim_every_logged_message_exists_exactly_once(run, conn):
    _, log_paths, _ = run
    records = read_log(log_paths)
    logged = [r for r in records if r["kind"] == "message"]
    assert logged
    counts = Counter(r["message_id"] for r in logged)
    assert max(counts.values()) == 1  # no id logged twice (ids are global across writers)
    rows = {row["id"]: row for row in conn.execute("SELECT id, session_id, role, content FROM messages")}
    for rec in logged:
        row = rows.get(rec["message_id"])
        assert row is not None, f"lost message {rec}"
        assert (row["session_id"], row["role"]) == (rec["session_id"], rec["role"])
        assert _sha(row["content"]) == rec["content_sha256"]
    # Nothing in the database that no writer logged: no duplicated or phantom writes.
    assert set(rows) == set(counts)
    # And the shared checker agrees (it is what the reliability suite uses).
    home, _, _ = run
    assert verify_simulation(home, log_paths) == []


def test_sim_session_counters_equal_message_counts(conn):
    rows = conn.execute(
        "SELECT s.id, s.message_count, s.tool_call_count,"
        " (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n"
        " FROM sessions s"
    ).fetchall()
    assert rows
    for row in rows:
        assert row["message_count"] == row["n"], dict(row)
    # tool_call_count is the number of calls carried by assistant messages (MS-2)
    calls = Counter()
    for sid, raw in conn.execute("SELECT session_id, tool_calls FROM messages WHERE tool_calls IS NOT NULL"):
        calls[sid] += len(json.loads(raw))
    for row in rows:
        assert row["tool_call_count"] == calls[row["id"]], dict(row)


def test_sim_fts_rows_equal_message_count(conn):
    total = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    assert total > 0
    assert conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone()[0] == total
    assert conn.execute("SELECT COUNT(*) FROM messages_fts_trigram").fetchone()[0] == total


def test_sim_integrity_check_ok(conn):
    assert [tuple(r) for r in conn.execute("PRAGMA integrity_check")] == [("ok",)]


def test_sim_sessions_json_keeps_every_writers_lanes(run, conn):
    home, _, report = run
    text = (home / "sessions" / "sessions.json").read_text(encoding="utf-8")
    assert isinstance(json.loads(text), dict)  # a complete JSON document (atomic replace)
    lanes = load_sessions_index(home / "sessions")
    # Both writers' lanes survived the shared read-modify-write (none lost to a race).
    assert len(lanes) == report.lanes
    existing = {row[0] for row in conn.execute("SELECT id FROM sessions")}
    for key, entry in lanes.items():
        assert key.startswith("agent:main:")
        assert entry.session_id in existing, key
        assert GATEWAY_ID.match(entry.session_id)


def test_sim_session_id_formats(conn):
    """Gateway sessions ``YYYYMMDD_HHMMSS_<8 hex>``; CLI sessions and sub-agents 6 hex (CLI-16)."""
    delegates = {r[0] for r in conn.execute(
        "SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id"
        " WHERE p.ended_at IS NULL OR c.started_at < p.ended_at")}
    rows = conn.execute("SELECT id, source FROM sessions").fetchall()
    assert {row["source"] for row in rows} - {"cli"}, "no gateway session"
    assert any(row["source"] == "cli" for row in rows)
    for row in rows:
        if row["source"] == "cli" or row["id"] in delegates:
            assert CLI_ID.match(row["id"]), row["id"]
        else:
            assert GATEWAY_ID.match(row["id"]), row["id"]


def test_sim_compression_chain_with_numbered_title(conn):
    chains = conn.execute(
        "SELECT c.id, c.title AS child_title, p.title AS parent_title"
        " FROM sessions c JOIN sessions p ON p.id = c.parent_session_id"
        " WHERE p.end_reason = 'compression' AND c.started_at >= p.ended_at"
    ).fetchall()
    assert chains, "no compression continuation was written"
    titled = [r for r in chains if r["parent_title"]]
    assert titled
    for row in titled:
        base = re.sub(r" #\d+$", "", row["parent_title"])
        assert re.fullmatch(re.escape(base) + r" #\d+", row["child_title"] or ""), dict(row)
    # the continuation starts with the compacted context
    first = conn.execute(
        "SELECT content FROM messages WHERE session_id = ? ORDER BY id LIMIT 1", (chains[0]["id"],)
    ).fetchone()
    assert first[0].startswith("[Context compacted]")


def test_sim_titles_set_after_first_exchange(conn):
    titled = conn.execute(
        "SELECT id FROM sessions WHERE title IS NOT NULL AND parent_session_id IS NULL"
    ).fetchall()
    assert titled
    for (sid,) in titled:
        roles = [r[0] for r in conn.execute(
            "SELECT role FROM messages WHERE session_id = ? ORDER BY id", (sid,))]
        assert roles[0] == "user" and "assistant" in roles
    titles = [r[0] for r in conn.execute("SELECT title FROM sessions WHERE title IS NOT NULL")]
    assert len(titles) == len(set(titles))  # unique across both writers (TI-2)


def test_sim_idle_or_daily_reset_ends_with_session_reset(run, conn):
    home, _, report = run
    assert report.resets > 0
    ended = conn.execute("SELECT COUNT(*) FROM sessions WHERE end_reason = 'session_reset'").fetchone()[0]
    assert ended == report.resets
    lanes = load_sessions_index(home / "sessions").values()
    reset_lanes = [e for e in lanes if e.was_auto_reset]
    assert reset_lanes
    assert {e.auto_reset_reason for e in reset_lanes} <= {"idle", "daily", "suspended"}


def test_sim_branches_and_delegates(run, conn):
    _, _, report = run
    assert report.branches > 0 and report.delegates > 0
    branch = conn.execute(
        "SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id"
        " WHERE p.end_reason = 'branched' AND c.started_at >= p.ended_at"
    ).fetchall()
    assert len(branch) == report.branches
    delegates = conn.execute(
        "SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id"
        " WHERE p.ended_at IS NULL OR c.started_at < p.ended_at"
    ).fetchall()
    assert len(delegates) == report.delegates


def test_sim_tool_calls_openai_shape_and_results_linked(conn):
    calls_seen: dict[str, set[str]] = {}
    n_tool = 0
    for row in conn.execute(
        "SELECT session_id, role, tool_calls, tool_name, tool_call_id FROM messages ORDER BY id"
    ):
        if row["tool_calls"]:
            for call in json.loads(row["tool_calls"]):
                assert set(call) == {"id", "type", "function"} and call["type"] == "function"
                assert set(call["function"]) == {"name", "arguments"}
                json.loads(call["function"]["arguments"])
                calls_seen.setdefault(row["session_id"], set()).add(call["id"])
        if row["role"] == "tool":
            n_tool += 1
            assert row["tool_name"]
            assert row["tool_call_id"] in calls_seen.get(row["session_id"], set())
    assert n_tool > 0


def test_sim_writes_english_and_cjk_text(conn):
    contents = [r[0] for r in conn.execute("SELECT content FROM messages WHERE role = 'user'")]
    assert any(CJK.search(c) for c in contents)
    assert any(re.search(r"\b(the|you)\b", c) for c in contents)


def test_sim_token_counts_one_api_call_per_assistant_message(conn):
    rows = conn.execute(
        "SELECT s.id, s.source, s.input_tokens, s.output_tokens, s.api_call_count,"
        " (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND m.role = 'assistant') AS a"
        " FROM sessions s LEFT JOIN sessions p ON p.id = s.parent_session_id"
        " WHERE p.end_reason IS NOT 'branched'"  # a branch copies answers without API calls
    ).fetchall()
    checked = 0
    for row in rows:
        # gateway sessions write absolute totals, CLI ones deltas: both must add up
        assert row["api_call_count"] == row["a"], dict(row)
        if row["a"]:
            assert row["input_tokens"] > 0 and row["output_tokens"] > 0
            checked += 1
    assert checked > 0


# --------------------------------------------------------------------- other behaviour


def test_sim_same_seed_same_workload(tmp_path):
    def shape(name: str, seed: int) -> list[tuple]:
        log = tmp_path / f"{name}.jsonl"
        report = run_writer(tmp_path / name, seed=seed, rate=0, max_events=80, log_path=log)
        assert report.errors == 0 and report.events == 80
        # Session ids are random (uuid4, as upstream), so a delegate's result text, which
        # names its child session, is the one content that differs between runs.
        return [
            (r["kind"], r.get("role"), r.get("tool_name"),
             None if r.get("tool_name") == "delegate_task" else r.get("content_sha256"),
             r.get("edge"), r.get("end_reason"))
            for r in read_log([log])
        ]

    first = shape("a", 5)
    assert first == shape("b", 5)
    assert first != shape("c", 6)
    assert verify_simulation(tmp_path / "a", [tmp_path / "a.jsonl"]) == []


_LOCK_HOLDER = """
import sqlite3, sys, time
time.sleep(float(sys.argv[2]))
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[3]))
conn.execute("ROLLBACK")
print("released", flush=True)
"""


def test_sim_writer_survives_lock_beyond_retry_budget(tmp_path, monkeypatch):
    """WR retry budget exhausted mid-run: the writer counts an error and goes on writing."""
    home = tmp_path / "home"
    home.mkdir()
    SessionDB(home / "state.db").close()
    # Shrink the budget (one attempt with SQLite's 1 s busy wait) so a 2 s lock exceeds it.
    monkeypatch.setattr(SessionDB, "_WRITE_MAX_RETRIES", 1)
    # Another process takes the write lock 0.7 s into the run and holds it for 2 s.
    holder = subprocess.Popen(
        [sys.executable, "-c", _LOCK_HOLDER, str(home / "state.db"), "0.7", "2.0"],
        stdout=subprocess.PIPE, text=True,
    )
    log = tmp_path / "w.jsonl"
    try:
        report = run_writer(home, seed=3, rate=0, duration=3.5, log_path=log)
    finally:
        out, _ = holder.communicate(timeout=15)
    assert out.split() == ["locked", "released"]
    assert report.errors >= 1
    assert all("database is locked" in s for s in report.error_samples), report.error_samples
    assert not any(s.startswith("open") for s in report.error_samples)  # failed mid-run
    before = [r for r in read_log([log]) if r["kind"] == "message"]
    assert len(before) == report.messages > 0
    assert verify_simulation(home, [log]) == []  # nothing lost, nothing written twice


# --------------------------------------------------------------------- current-upstream events (SPEC §16)


def _records(run, kind: str) -> list[dict]:
    _, log_paths, _ = run
    return [r for r in read_log(log_paths) if r["kind"] == kind]


def _marker(conn, session_id: str) -> dict:
    raw = conn.execute("SELECT model_config FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]
    return json.loads(raw) if raw else {}


def test_sim_rewinds_leave_inactive_rows_and_bump_rewind_count(run, conn):
    _, _, report = run
    rewinds = _records(run, "rewind")
    assert len(rewinds) == report.rewinds > 0
    per_session = Counter(r["session_id"] for r in rewinds)
    for sid, n in per_session.items():
        assert conn.execute("SELECT rewind_count FROM sessions WHERE id = ?", (sid,)).fetchone()[0] == n
        inactive = conn.execute(
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND active = 0", (sid,)
        ).fetchone()[0]
        assert inactive == sum(r["rewound"] for r in rewinds if r["session_id"] == sid) > 0
    for rec in rewinds:
        row = conn.execute("SELECT role, active FROM messages WHERE id = ?", (rec["message_id"],)).fetchone()
        assert (row["role"], row["active"]) == ("user", 0)
    # the conversation goes on after a rewind: the turn asked again is active (a run may
    # stop right after a rewind, so not necessarily in every session)
    newest = [conn.execute(
        "SELECT active FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT 1", (sid,)
    ).fetchone()["active"] for sid in per_session]
    assert 1 in newest


def test_sim_archive_and_unarchive_end_in_the_logged_state(run, conn):
    _, _, report = run
    records = _records(run, "archive")
    assert len(records) == report.archives > 0
    last: dict[str, bool] = {}
    for rec in records:
        last[rec["session_id"]] = rec["archived"]
    for sid, archived in last.items():
        row = conn.execute("SELECT archived, ended_at FROM sessions WHERE id = ?", (sid,)).fetchone()
        assert row["archived"] == int(archived), sid
        assert row["ended_at"] is not None  # only finished conversations are archived


def test_sim_delegate_and_branch_children_carry_upstream_markers(run, conn):
    _, log_paths, _ = run
    sessions = [r for r in read_log(log_paths) if r["kind"] == "session"]
    delegates = [r for r in sessions if r["edge"] == "delegate"]
    branches = [r for r in sessions if r["edge"] == "branch"]
    assert delegates and branches
    for rec in delegates:
        assert _marker(conn, rec["session_id"])["_delegate_from"] == rec["parent_session_id"]
    for rec in branches:
        assert _marker(conn, rec["session_id"])["_branched_from"] == rec["parent_session_id"]
    # v16 has no reset link: a lane's next session starts on its own.
    for rec in (r for r in sessions if r["edge"] == "reset"):
        assert rec["parent_session_id"] is None and "_reset_from" not in _marker(conn, rec["session_id"])


def test_sim_cli_sessions_record_their_workspace(run, conn):
    _, _, report = run
    cwds = [r[0] for r in conn.execute("SELECT cwd FROM sessions WHERE source = 'cli' AND cwd IS NOT NULL")]
    assert cwds and all(c.startswith(("/home/maya", "/tmp")) for c in cwds)
    moves = _records(run, "cwd")
    assert len(moves) == report.workspace_moves > 0
    last = {r["session_id"]: r["cwd"] for r in moves}
    for sid, cwd in last.items():
        assert conn.execute("SELECT cwd FROM sessions WHERE id = ?", (sid,)).fetchone()[0] == cwd


# --------------------------------------------------------------------- a v30 home


@pytest.fixture(scope="module")
def run30(tmp_path_factory):
    """Two writers on a home created in the v30 layout (``schema=30``): (home, logs, report)."""
    base = tmp_path_factory.mktemp("simulate30")
    home, logs = base / "home", base / "logs"
    report = run_simulation(
        home, writers=2, rate=0, max_events=200, duration=60.0, seed=SEED, log_dir=logs, schema=30
    )
    return home, sorted(logs.glob("writer-*.jsonl")), report


@pytest.fixture(scope="module")
def conn30(run30):
    home, _, _ = run30
    connection = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    connection.row_factory = sqlite3.Row
    yield connection
    connection.close()


def test_sim_v30_run_is_consistent_and_keeps_the_v30_layout(run30, conn30, tmp_path):
    from hermes_workload.schema_v30 import create_v30_store

    home, log_paths, report = run30
    assert report.errors == 0, report.error_samples
    assert verify_simulation(home, log_paths) == []  # includes both FTS integrity-checks
    assert [tuple(r) for r in conn30.execute("SELECT version FROM schema_version")] == [(30,)]
    query = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
    fresh = sqlite3.connect(create_v30_store(tmp_path / "fresh.db"))
    try:
        assert [tuple(r) for r in conn30.execute(query)] == fresh.execute(query).fetchall()
    finally:
        fresh.close()
    assert [tuple(r) for r in conn30.execute("PRAGMA integrity_check")] == [("ok",)]
    assert fts_integrity_problems(home / "state.db") == []


def test_sim_v30_delegates_are_subagents_and_prompts_are_stored_by_hash(run30, conn30):
    _, log_paths, _ = run30
    delegates = [r for r in read_log(log_paths) if r["kind"] == "session" and r["edge"] == "delegate"]
    assert delegates
    for rec in delegates:
        row = conn30.execute("SELECT source, model_config FROM sessions WHERE id = ?",
                             (rec["session_id"],)).fetchone()
        assert row["source"] == "subagent"
        assert json.loads(row["model_config"])["_delegate_from"] == rec["parent_session_id"]
    rows = conn30.execute(
        "SELECT s.system_prompt, p.prompt FROM sessions s LEFT JOIN system_prompts p "
        "ON p.hash = s.system_prompt_hash"
    ).fetchall()
    assert rows and all(r["system_prompt"] is None and r["prompt"] for r in rows)


def test_sim_v30_reset_children_share_the_lane_key(run30, conn30):
    _, log_paths, report = run30
    resets = [r for r in read_log(log_paths) if r["kind"] == "session" and r["edge"] == "reset"]
    assert report.resets > 0 and resets
    for rec in resets:
        child = conn30.execute("SELECT * FROM sessions WHERE id = ?", (rec["session_id"],)).fetchone()
        parent = conn30.execute("SELECT * FROM sessions WHERE id = ?", (child["parent_session_id"],)).fetchone()
        assert parent["end_reason"] == "session_reset"
        assert json.loads(child["model_config"])["_reset_from"] == parent["id"]
        assert child["session_key"] and child["session_key"] == parent["session_key"]


def test_sim_v30_pins_titles_activity_history_and_scaffolding(run30, conn30):
    _, _, report = run30
    pins = _records(run30, "pin")
    assert len(pins) == report.pins > 0
    last = {r["session_id"]: r["pinned"] for r in pins}
    for sid, pinned in last.items():
        assert conn30.execute("SELECT pinned FROM sessions WHERE id = ?", (sid,)).fetchone()[0] == int(pinned)
    sources = {r[0] for r in conn30.execute("SELECT title_source FROM sessions WHERE title IS NOT NULL")}
    assert {"llm", "branch"} <= sources
    assert conn30.execute("SELECT COUNT(*) FROM sessions WHERE last_activity_at IS NOT NULL").fetchone()[0] > 0
    compacted = conn30.execute(
        "SELECT m.active, m._compressed_summary, s.end_reason FROM messages m "
        "JOIN sessions s ON s.id = m.session_id WHERE m.compacted = 1"
    ).fetchall()
    assert report.compressions > 0 and compacted
    assert all((r["active"], r["_compressed_summary"], r["end_reason"]) == (0, 1, "compression") for r in compacted)
    scaffold = conn30.execute("SELECT session_id, id FROM messages WHERE display_kind = 'hidden'").fetchall()
    assert scaffold
    for row in scaffold:
        first = conn30.execute("SELECT MIN(id) FROM messages WHERE session_id = ?", (row["session_id"],)).fetchone()[0]
        assert first == row["id"]
    git = conn30.execute("SELECT cwd, git_branch, git_repo_root FROM sessions WHERE git_repo_root IS NOT NULL").fetchall()
    assert git and all(r["cwd"].startswith(r["git_repo_root"]) and r["git_branch"] for r in git)


def test_sim_schema_of_an_existing_store_is_kept_and_another_refused(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    SessionDB(home / "state.db").close()  # a v16 store
    with pytest.raises(ValueError, match="schema 16 store, not 30"):
        run_simulation(home, writers=1, rate=0, max_events=5, schema=30)
    conn = sqlite3.connect(home / "state.db")
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == 16
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0
    finally:
        conn.close()
    # Without --schema a v30 store is written in its own layout (the writers detect it).
    home30 = tmp_path / "home30"
    report = run_simulation(home30, writers=1, rate=0, max_events=60, seed=SEED, schema=30)
    assert report.errors == 0
    report = run_simulation(home30, writers=1, rate=0, max_events=60, seed=SEED + 1)
    assert report.errors == 0
    conn = sqlite3.connect(home30 / "state.db")
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == 30
        assert conn.execute("SELECT COUNT(*) FROM sessions WHERE system_prompt IS NOT NULL").fetchone()[0] == 0
    finally:
        conn.close()
    assert fts_integrity_problems(home30 / "state.db") == []
