"""SPEC §5 (SS-1 … SS-13): the session API."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_state import SessionDB

DAY = 86400.0

SESSION_COLUMNS = [
    "id", "source", "user_id", "model", "model_config", "system_prompt", "parent_session_id",
    "started_at", "ended_at", "end_reason", "message_count", "tool_call_count", "input_tokens",
    "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "cwd",
    "billing_provider", "billing_base_url", "billing_mode", "estimated_cost_usd",
    "actual_cost_usd", "cost_status", "cost_source", "pricing_version", "title", "api_call_count",
    "handoff_state", "handoff_platform", "handoff_error", "rewind_count", "archived",  # v16
]


# ---------------------------------------------------------------- SS-1


def test_ss1_create_session_inserts_row_with_defaults(db: SessionDB):
    before = time.time()
    assert db.create_session("s1", "telegram", model="gpt", model_config={"t": 0.2, "n": "é"},
                             system_prompt="sys", user_id="u1") == "s1"
    row = db.get_session("s1")
    assert before <= row["started_at"] <= time.time()
    assert row["source"] == "telegram" and row["model"] == "gpt" and row["user_id"] == "u1"
    assert row["model_config"] == json.dumps({"t": 0.2, "n": "é"})
    assert row["system_prompt"] == "sys"
    assert row["ended_at"] is None and row["parent_session_id"] is None
    for counter in ("message_count", "tool_call_count", "input_tokens", "output_tokens",
                    "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "api_call_count"):
        assert row[counter] == 0


def test_ss1_falsy_model_config_stored_as_null(db: SessionDB):
    db.create_session("a", "cli", model_config={})
    db.create_session("b", "cli", model_config=None)
    assert db.get_session("a")["model_config"] is None
    assert db.get_session("b")["model_config"] is None


def test_ss1_first_write_wins(db: SessionDB):
    db.create_session("s", "cli", model="first")
    started = db.get_session("s")["started_at"]
    assert db.create_session("s", "telegram", model="second") == "s"
    row = db.get_session("s")
    assert (row["source"], row["model"], row["started_at"]) == ("cli", "first", started)
    assert db.session_count() == 1


def test_ss1_missing_parent_raises_integrity_error(db: SessionDB):
    with pytest.raises(sqlite3.IntegrityError):
        db.create_session("child", "cli", parent_session_id="ghost")
    db.create_session("parent", "cli")
    db.create_session("child", "cli", parent_session_id="parent")
    assert db.get_session("child")["parent_session_id"] == "parent"


# ---------------------------------------------------------------- SS-2, SS-3


def test_ss2_first_end_reason_wins(db: SessionDB):
    db.create_session("s", "cli")
    db.end_session("s", "compression")
    first = db.get_session("s")
    db.end_session("s", "user_exit")
    again = db.get_session("s")
    assert again["end_reason"] == "compression" and again["ended_at"] == first["ended_at"]
    db.end_session("unknown", "user_exit")  # no-op, no error
    assert db.get_session("unknown") is None


def test_ss3_reopen_then_new_end_reason(db: SessionDB):
    db.create_session("s", "cli")
    db.end_session("s", "compression")
    db.reopen_session("s")
    row = db.get_session("s")
    assert row["ended_at"] is None and row["end_reason"] is None
    db.end_session("s", "user_exit")
    assert db.get_session("s")["end_reason"] == "user_exit"


# ---------------------------------------------------------------- SS-4


def test_ss4_update_system_prompt_overwrites(db: SessionDB):
    db.create_session("s", "cli", system_prompt="old")
    db.update_system_prompt("s", "new prompt")
    assert db.get_session("s")["system_prompt"] == "new prompt"


# ---------------------------------------------------------------- SS-5


def test_ss5_update_token_counts_spec_example(db: SessionDB):
    db.create_session("s", "cli")
    db.update_token_counts("s", input_tokens=5, model="x")
    row = db.get_session("s")
    assert (row["input_tokens"], row["model"], row["estimated_cost_usd"]) == (5, "x", 0.0)
    db.update_token_counts("s", input_tokens=5, model="y", estimated_cost_usd=0.5, api_call_count=1)
    row = db.get_session("s")
    assert row["input_tokens"] == 10
    assert row["model"] == "x"
    assert row["estimated_cost_usd"] == 0.5
    assert row["api_call_count"] == 1


def test_ss5_delta_mode_columns(db: SessionDB):
    db.create_session("s", "cli")
    db.update_token_counts("s", input_tokens=1, output_tokens=2, cache_read_tokens=3,
                           cache_write_tokens=4, reasoning_tokens=5, estimated_cost_usd=0.25,
                           cost_status="estimated", cost_source="table", pricing_version="v1",
                           billing_provider="openrouter", billing_base_url="https://a",
                           billing_mode="api", api_call_count=2)
    db.update_token_counts("s", input_tokens=10, output_tokens=20, cache_read_tokens=30,
                           cache_write_tokens=40, reasoning_tokens=50, estimated_cost_usd=None,
                           actual_cost_usd=None, billing_provider="other", billing_base_url="https://b",
                           billing_mode="sub", api_call_count=3)
    row = db.get_session("s")
    assert [row[c] for c in ("input_tokens", "output_tokens", "cache_read_tokens",
                             "cache_write_tokens", "reasoning_tokens")] == [11, 22, 33, 44, 55]
    assert row["estimated_cost_usd"] == 0.25  # + COALESCE(None, 0)
    assert row["actual_cost_usd"] is None  # None keeps it unchanged
    assert (row["cost_status"], row["cost_source"], row["pricing_version"]) == ("estimated", "table", "v1")
    assert (row["billing_provider"], row["billing_base_url"], row["billing_mode"]) == (
        "openrouter", "https://a", "api")  # first non-NULL wins
    assert row["api_call_count"] == 5
    db.update_token_counts("s", actual_cost_usd=1.5, cost_status="final")
    db.update_token_counts("s", actual_cost_usd=0.5)
    row = db.get_session("s")
    assert row["actual_cost_usd"] == 2.0 and row["cost_status"] == "final"


def test_ss5_absolute_mode_columns(db: SessionDB):
    db.create_session("s", "telegram")
    db.update_token_counts("s", input_tokens=100, output_tokens=50, cache_read_tokens=7,
                           estimated_cost_usd=0.9, actual_cost_usd=1.0, api_call_count=4,
                           model="first")
    db.update_token_counts("s", input_tokens=300, output_tokens=80, estimated_cost_usd=1.2,
                           api_call_count=9, absolute=True, model="second")
    row = db.get_session("s")
    assert (row["input_tokens"], row["output_tokens"]) == (300, 80)
    assert row["cache_read_tokens"] == 0  # defaults overwrite in absolute mode
    assert row["estimated_cost_usd"] == 1.2
    assert row["actual_cost_usd"] == 1.0  # None keeps it
    assert row["api_call_count"] == 9
    assert row["model"] == "first"
    db.update_token_counts("s", absolute=True, actual_cost_usd=3.0)
    row = db.get_session("s")
    assert row["estimated_cost_usd"] == 0  # None resets to 0
    assert row["actual_cost_usd"] == 3.0
    assert row["input_tokens"] == 0 and row["api_call_count"] == 0


def test_ss5_unknown_id_is_noop(db: SessionDB):
    db.update_token_counts("nope", input_tokens=5)
    assert db.get_session("nope") is None


# ---------------------------------------------------------------- SS-6


def test_ss6_ensure_session_never_modifies_existing(db: SessionDB):
    db.ensure_session("e")
    row = db.get_session("e")
    assert row["source"] == "unknown" and row["model"] is None and row["started_at"] > 0
    db.create_session("c", "cli", model="m", system_prompt="p")
    before = db.get_session("c")
    db.ensure_session("c", source="telegram", model="other")
    assert db.get_session("c") == before
    db.ensure_session("f", source="discord", model="mm")
    assert (db.get_session("f")["source"], db.get_session("f")["model"]) == ("discord", "mm")


# ---------------------------------------------------------------- SS-7


def test_ss7_get_session_dict_in_table_order_or_none(db: SessionDB):
    db.create_session("s", "cli")
    row = db.get_session("s")
    assert type(row) is dict and list(row) == SESSION_COLUMNS
    assert db.get_session("missing") is None


# ---------------------------------------------------------------- SS-8


def test_ss8_resolve_exact_prefix_unknown_ambiguous(db: SessionDB, make_session):
    make_session(db, "20250305_091523_a1b2c3", started_at=100)
    make_session(db, "20250305_091523_a1ffff", started_at=200)
    make_session(db, "20250306_120000_zzzzzz", started_at=300)
    assert db.resolve_session_id("20250305_091523_a1b2c3") == "20250305_091523_a1b2c3"
    assert db.resolve_session_id("20250306") == "20250306_120000_zzzzzz"
    assert db.resolve_session_id("20250305_091523_a1b") == "20250305_091523_a1b2c3"
    assert db.resolve_session_id("20250305_091523_a1") is None  # ambiguous
    assert db.resolve_session_id("2099") is None  # unknown


def test_ss8_exact_match_wins_over_longer_ids(db: SessionDB, make_session):
    make_session(db, "abc", started_at=1)
    make_session(db, "abcdef", started_at=2)
    assert db.resolve_session_id("abc") == "abc"
    assert db.resolve_session_id("abcd") == "abcdef"


def test_ss8_underscore_percent_backslash_are_literal(db: SessionDB, make_session):
    make_session(db, "aXb_one", started_at=1)
    make_session(db, "a%z_two", started_at=2)
    make_session(db, "q\\w_three", started_at=3)
    assert db.resolve_session_id("a_b") is None  # "_" does not match "X"
    assert db.resolve_session_id("a%") == "a%z_two"
    assert db.resolve_session_id("%") is None
    assert db.resolve_session_id("a%z") == "a%z_two"
    assert db.resolve_session_id("q\\") == "q\\w_three"
    assert db.resolve_session_id("aXb_") == "aXb_one"


def test_ss8_blank_input_returns_none(db: SessionDB, make_session):
    make_session(db, "only", started_at=1)  # upstream would return it for ""
    assert db.resolve_session_id("") is None
    assert db.resolve_session_id("   ") is None
    assert db.resolve_session_id(None) is None


def test_ss8_like_is_ascii_case_insensitive(db: SessionDB, make_session):
    make_session(db, "ABCdef", started_at=1)
    assert db.resolve_session_id("abc") == "ABCdef"


# ---------------------------------------------------------------- SS-9


def test_ss9_counts_rows_not_cached_counters(db: SessionDB):
    db.create_session("a", "cli")
    db.create_session("b", "telegram")
    db.create_session("c", "telegram")
    db.append_message("a", "user", content="1")
    db.append_message("a", "user", content="2")
    db.append_message("b", "user", content="3")
    db._conn.execute("UPDATE sessions SET message_count = 99")
    assert db.session_count() == 3
    assert db.session_count("telegram") == 2
    assert db.session_count("") == 3 and db.session_count(None) == 3
    assert db.message_count() == 3
    assert db.message_count("a") == 2
    assert db.message_count("") == 3
    assert db.message_count("nope") == 0


# ---------------------------------------------------------------- SS-10


def test_ss10_meta_get_and_upsert(db: SessionDB):
    assert db.get_meta("k") is None
    db.set_meta("k", "1")
    db.set_meta("k", "2")
    assert db.get_meta("k") == "2"
    assert db._conn.execute("SELECT COUNT(*) FROM state_meta WHERE key = 'k'").fetchone()[0] == 1


# ---------------------------------------------------------------- SS-11


def test_ss11_vacuum_shrinks_file_and_truncates_wal(db: SessionDB, db_path: Path):
    db.create_session("s", "cli")
    for i in range(40):
        db.append_message("s", "user", content=("payload %d " % i) * 400)
    db._checkpoint("TRUNCATE")
    big = db_path.stat().st_size
    db.clear_messages("s")
    db.vacuum()
    assert not db._conn.in_transaction
    # In WAL mode the rebuilt pages reach the main file at the next checkpoint.
    db._checkpoint("TRUNCATE")
    assert db_path.stat().st_size < big
    assert Path(str(db_path) + "-wal").stat().st_size == 0
    assert db.get_session("s") is not None


def test_ss11_vacuum_errors_propagate(db: SessionDB, db_path: Path):
    script = (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE'); c.execute(\"INSERT INTO state_meta VALUES ('x', 'y')\")\n"
        "print('held', flush=True); time.sleep(3.0); c.execute('COMMIT')\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(db_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        # The TRUNCATE checkpoint may wait out one busy timeout; VACUUM then fails.
        with pytest.raises(sqlite3.OperationalError, match="locked|busy"):
            db.vacuum()
    finally:
        proc.wait(30)
        proc.stdout.close()


# ---------------------------------------------------------------- SS-12


def _old_ended(db, make_session, sid, days_ago, **kw):
    start = time.time() - days_ago * DAY
    return make_session(db, sid, started_at=start, ended_at=start + 10, **kw)


def test_ss12_auto_prune_runs_then_skips_within_interval(db: SessionDB, make_session, monkeypatch):
    _old_ended(db, make_session, "old", 200, messages=[("user", "bye")])
    make_session(db, "new", started_at=time.time() - DAY, end_reason="user_exit")
    vacuums = []
    real_vacuum = db.vacuum
    monkeypatch.setattr(db, "vacuum", lambda: (vacuums.append(1), real_vacuum())[1])
    first = db.maybe_auto_prune_and_vacuum(retention_days=90)
    assert first == {"skipped": False, "pruned": 1, "vacuumed": True}
    assert db.get_session("old") is None and db.get_session("new") is not None
    last = float(db.get_meta("last_auto_prune"))
    assert abs(last - time.time()) < 5
    _old_ended(db, make_session, "old2", 200)
    second = db.maybe_auto_prune_and_vacuum(retention_days=90)
    assert second == {"skipped": True, "pruned": 0, "vacuumed": False}
    assert db.get_session("old2") is not None
    assert vacuums == [1]


def test_ss12_nothing_pruned_records_time_without_vacuum(db: SessionDB, monkeypatch):
    monkeypatch.setattr(db, "vacuum", lambda: pytest.fail("vacuum must not run"))
    result = db.maybe_auto_prune_and_vacuum()
    assert result == {"skipped": False, "pruned": 0, "vacuumed": False}
    assert db.get_meta("last_auto_prune") is not None


def test_ss12_interval_elapsed_and_unparsable_value(db: SessionDB, make_session):
    db.set_meta("last_auto_prune", str(time.time() - 25 * 3600))
    _old_ended(db, make_session, "old", 100)
    assert db.maybe_auto_prune_and_vacuum(vacuum=False)["pruned"] == 1
    db.set_meta("last_auto_prune", "not-a-number")
    _old_ended(db, make_session, "old2", 100)
    result = db.maybe_auto_prune_and_vacuum(vacuum=False)
    assert result == {"skipped": False, "pruned": 1, "vacuumed": False}
    db.set_meta("last_auto_prune", str(time.time() - 3600))
    assert db.maybe_auto_prune_and_vacuum(min_interval_hours=2)["skipped"] is True
    assert db.maybe_auto_prune_and_vacuum(min_interval_hours=0.5)["skipped"] is False


def test_ss12_vacuum_error_logged_not_raised(db: SessionDB, make_session, monkeypatch):
    _old_ended(db, make_session, "old", 100)

    def broken():
        raise sqlite3.OperationalError("cannot VACUUM")

    monkeypatch.setattr(db, "vacuum", broken)
    result = db.maybe_auto_prune_and_vacuum()
    assert result == {"skipped": False, "pruned": 1, "vacuumed": False}
    assert db.get_meta("last_auto_prune") is not None


def test_ss12_never_raises(db_path: Path, tmp_path: Path):
    db = SessionDB(db_path)
    db.close()
    result = db.maybe_auto_prune_and_vacuum()
    assert result["skipped"] is False and result["pruned"] == 0 and "error" in result


def test_ss12_passes_sessions_dir(db: SessionDB, make_session, tmp_path: Path):
    sessions_dir = tmp_path / "sessions"
    sessions_dir.mkdir()
    (sessions_dir / "old.jsonl").write_text("{}\n")
    _old_ended(db, make_session, "old", 100)
    db.maybe_auto_prune_and_vacuum(sessions_dir=sessions_dir, vacuum=False)
    assert not (sessions_dir / "old.jsonl").exists()


# ---------------------------------------------------------------- SS-13


def test_ss13_close_is_wr6(db_path: Path):
    db = SessionDB(db_path)
    db.close()
    db.close()
    assert db._conn is None
    with pytest.raises(Exception):
        db.session_count()
