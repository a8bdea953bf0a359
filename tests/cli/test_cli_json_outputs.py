"""CLI-18, CLI-19: ``--json`` of ``list``, ``stats``, ``trash`` and ``pin --list``, and the
figures of ``stats`` -- real processes on generated stores and on upstream's v16 and v30 stores."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_tui.cli_json import SESSION_FIELDS

from process_helpers import assert_store_sound, hermes, shape

#: A title holding what must never reach a terminal raw: ESC (an OSC title), a C1 CSI, DEL,
#: a bidi override, a NUL, and text a person reads (CJK, an emoji).
HOSTILE = "evil\x1b]0;pwned\x07 \x9b31m \x7f \u202edcba \x00 桂林 🚀"
RAW_DANGER = [chr(c) for c in [*range(0x00, 0x0A), *range(0x0B, 0x20), *range(0x7F, 0xA0)]] + ["\u202e", "\u2066"]


@pytest.fixture
def home(tmp_path) -> Path:
    path = tmp_path / "hermes-home"
    path.mkdir()
    return path


def _fixture_home(upstream_copy, version: int, tmp_path: Path) -> Path:
    home = tmp_path / f"home-v{version}"
    home.mkdir()
    source = upstream_copy(version)
    shutil.copyfile(source, home / "state.db")
    return home


def _document(result) -> dict:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    for char in RAW_DANGER:
        assert char not in result.stdout, f"raw {char!r} on stdout"
    return json.loads(result.stdout)


def _store(home: Path) -> SessionDB:
    return SessionDB(home / "state.db")


def test_list_json_carries_every_documented_field_and_the_stored_text_exactly(home):
    db = _store(home)
    db.create_session("s-hostile", "cli", model="m-1")
    db.append_message("s-hostile", "user", "first question " + HOSTILE)
    db.set_session_title("s-hostile", HOSTILE)
    db.update_session_cwd("s-hostile", HOSTILE)  # stored as given: every control kept
    db.create_session("s-plain", "telegram")
    db.append_message("s-plain", "user", "hello")
    db.close()
    document = _document(hermes(home, "list", "--json"))
    assert document["version"] == 1 and document["command"] == "list"
    by_id = {item["id"]: item for item in document["sessions"]}
    assert set(by_id) == {"s-hostile", "s-plain"}
    for item in by_id.values():
        assert list(item) == list(SESSION_FIELDS)
    hostile = by_id["s-hostile"]
    stored_title = SessionDB(home / "state.db", read_only=True).get_session("s-hostile")["title"]
    assert hostile["title"] == stored_title and "\x9b" in hostile["title"]  # (TI-1 keeps C1 in titles)
    assert hostile["cwd"] == HOSTILE
    assert hostile["model"] == "m-1" and hostile["source"] == "cli" and hostile["message_count"] == 1
    assert isinstance(hostile["started_at"], float) and hostile["ended_at"] is None
    assert hostile["pinned"] is False and hostile["archived"] is False
    assert hostile["created_source"] is None and hostile["shown_source"] == "cli"


def test_list_json_of_an_empty_store_is_an_empty_array(home):
    _store(home).close()
    document = _document(hermes(home, "list", "--json"))
    assert document == {"version": 1, "command": "list", "sessions": []}


def test_list_json_honours_source_limit_and_archived(home):
    db = _store(home)
    for n in range(5):
        db.create_session(f"c{n}", "cli")
        db.append_message(f"c{n}", "user", f"q{n}")
    db.create_session("t0", "telegram")
    db.set_session_archived("c0", True)
    db.close()
    assert [i["id"] for i in _document(hermes(home, "list", "--json", "--source", "telegram"))["sessions"]] == ["t0"]
    assert len(_document(hermes(home, "list", "--json", "--limit", "2"))["sessions"]) == 2
    archived = _document(hermes(home, "list", "--json", "--archived"))["sessions"]
    assert [(i["id"], i["archived"]) for i in archived] == [("c0", True)]


def test_list_json_on_upstream_v30_lists_what_the_text_list_lists(upstream_copy, tmp_path):
    home = _fixture_home(upstream_copy, 30, tmp_path)
    before = shape(home / "state.db")
    items = _document(hermes(home, "list", "--json", "--limit", "100"))["sessions"]
    text = hermes(home, "list", "--limit", "100").stdout
    assert [i["id"] for i in items] == [line.split()[-1] for line in text.splitlines()[2:]]
    pinned = [i["id"] for i in items if i["pinned"]]
    assert pinned == ["20260921_140000_r1"]
    tip = next(i for i in items if i["id"] == "20260921_122000_c3")  # the chain c1 → c2 → c3
    assert tip["lineage_root_id"] == "20260921_120000_c1"
    assert shape(home / "state.db") == before


def test_stats_json_figures_add_up_per_source_model_and_month(home):
    db = _store(home)
    # two months (UTC), two models, two sources; tokens recorded
    plan = [("a", "cli", "model-x", 1_700_000_000.0, 3), ("b", "cli", "model-y", 1_700_000_000.0, 1),
            ("c", "telegram", "model-x", 1_710_000_000.0, 2)]
    for sid, source, model, started, messages in plan:
        db.create_session(sid, source, model=model)
        for n in range(messages):
            db.append_message(sid, "user", f"m{n}")
        db.update_token_counts(sid, input_tokens=100, output_tokens=10)
    db._execute_write(lambda conn: [conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (p[3], p[0]))
                                    for p in plan])
    db.close()
    doc = _document(hermes(home, "stats", "--json"))
    assert (doc["version"], doc["command"], doc["sessions"], doc["messages"]) == (1, "stats", 3, 6)
    assert doc["input_tokens"] == 300 and doc["output_tokens"] == 30
    by_source = {g["source"]: (g["sessions"], g["messages"], g["input_tokens"]) for g in doc["by_source"]}
    assert by_source == {"cli": (2, 4, 200), "telegram": (1, 2, 100)}
    by_model = {g["model"]: (g["sessions"], g["messages"]) for g in doc["by_model"]}
    assert by_model == {"model-x": (2, 5), "model-y": (1, 1)}
    assert [(g["month"], g["sessions"]) for g in doc["by_month"]] == [("2023-11", 2), ("2024-03", 1)]
    database = doc["database"]
    assert database["main_bytes"] == (home / "state.db").stat().st_size
    assert database["total_bytes"] == database["main_bytes"] + (database["wal_bytes"] or 0)
    for table in ("by_source", "by_model", "by_month"):
        assert sum(g["sessions"] for g in doc[table]) == doc["sessions"]
        assert sum(g["messages"] for g in doc[table]) == doc["messages"]


def test_stats_text_says_one_session_not_one_sessions_and_shows_the_tables(home):
    db = _store(home)
    db.create_session("only", "cli", model="solo-model")
    db.append_message("only", "user", "hi")
    db.close()
    out = hermes(home, "stats").stdout
    assert "  cli: 1 session\n" in out and "1 sessions" not in out
    assert "By source" in out and "By model" in out and "By month (UTC)" in out
    assert "solo-model" in out


def test_stats_json_on_upstream_v16_and_v30_reads_without_writing(upstream_copy, tmp_path):
    for version in (16, 30):
        home = _fixture_home(upstream_copy, version, tmp_path)
        before = shape(home / "state.db")
        conn = sqlite3.connect(home / "state.db")
        sessions = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
        conn.close()
        doc = _document(hermes(home, "stats", "--json"))
        assert doc["sessions"] == sessions
        assert sum(g["sessions"] for g in doc["by_month"]) == sessions
        assert shape(home / "state.db") == before


def test_pin_list_json_on_v16_and_v30_stores_after_pinning_in_place(upstream_copy, tmp_path):
    for version in (16, 30):
        home = _fixture_home(upstream_copy, version, tmp_path)
        path = home / "state.db"
        ids = [i["id"] for i in _document(hermes(home, "list", "--json"))["sessions"]]
        target = next(i for i in ids if i != "20260921_140000_r1")
        before = shape(path)
        env = {"HERMES_SESSIONS_DATA_DIR": str(tmp_path / f"data-{version}")}
        pinned = hermes(home, "pin", target, extra_env=env)
        assert pinned.returncode == 0, pinned.stderr
        document = _document(hermes(home, "pin", "--list", "--json", extra_env=env))
        assert document["command"] == "pin"
        listed = [i["id"] for i in document["sessions"]]
        assert target in listed and all(i["pinned"] for i in document["sessions"])
        text = hermes(home, "pin", "--list", extra_env=env)
        assert text.returncode == 0 and target in text.stdout
        assert shape(path) == before
        assert_store_sound(path)


def test_pin_usage_errors_are_one_line_and_exit_2(home):
    _store(home).close()
    for args, words in ((["pin"], "needs SESSION_IDs or at least one filter"), (["pin", "--json", "x"], "--json goes with --list"),
                        (["pin", "--list", "x"], "--list takes no SESSION_ID")):
        result = hermes(home, *args)
        assert result.returncode == 2 and result.stdout == ""
        assert words in result.stderr and "Traceback" not in result.stderr


def test_trash_json_lists_a_deleted_session(home, tmp_path):
    db = _store(home)
    db.create_session("gone", "cli")
    db.append_message("gone", "user", "bye " + HOSTILE)
    db.close()
    env = {"HERMES_SESSIONS_DATA_DIR": str(tmp_path / "data")}
    assert hermes(home, "delete", "gone", "--yes", extra_env=env).returncode == 0
    document = _document(hermes(home, "trash", "--json", extra_env=env))
    assert document["command"] == "trash" and document["kept_days"] == 7
    [entry] = document["entries"]
    assert entry["session_id"] == "gone" and entry["messages"] == 1 and entry["other_store"] is False
    assert entry["expires_at"] == entry["deleted_at"] + 7 * 86400
    assert entry["problem"] is None and entry["entry"].startswith("gone")
    restored = hermes(home, "restore", entry["entry"], extra_env=env)  # the name restore takes
    assert restored.returncode == 0, restored.stderr
    empty = _document(hermes(home, "trash", "--json", extra_env={"HERMES_SESSIONS_DATA_DIR": str(tmp_path / "none")}))
    assert empty["entries"] == []


def test_created_source_shows_as_created_to_current_in_list_and_json(upstream_copy, tmp_path):
    home = _fixture_home(upstream_copy, 30, tmp_path)
    conn = sqlite3.connect(home / "state.db")
    conn.execute("UPDATE sessions SET title = NULL")  # the untitled layout has the source column
    conn.execute("UPDATE sessions SET created_source = 'tui' WHERE id = '20260921_100000_g1'")
    conn.execute("UPDATE sessions SET created_source = 'cli' WHERE id = '20260921_090000_s1'")  # same: plain
    conn.commit()
    conn.close()
    items = {i["id"]: i for i in _document(hermes(home, "list", "--json"))["sessions"]}
    assert items["20260921_100000_g1"]["created_source"] == "tui"
    assert items["20260921_100000_g1"]["shown_source"] == "tui\u2192telegram"
    assert items["20260921_090000_s1"]["shown_source"] == "cli"
    lines = {line.split()[-1]: line for line in hermes(home, "list").stdout.splitlines()[2:]}
    assert "tui\u2192telegram" in lines["20260921_100000_g1"]
    assert "\u2192" not in lines["20260921_090000_s1"]


def test_list_json_counts_the_messages_the_transcript_shows_not_the_rewound_ones(upstream_copy, tmp_path):
    """The browser's list says 12 messages for a session rewound by three: `list --json` said
    15, the stored count, for the same row."""
    home = _fixture_home(upstream_copy, 30, tmp_path)
    db = _store(home)
    try:
        sid = "20260921_090000_rw"
        db.create_session(sid, "cli")
        ids = [db.append_message(sid, "user" if n % 2 == 0 else "assistant", f"turn {n}") for n in range(6)]
        db.rewind_to_message(sid, ids[2])  # (a user turn: it and the three after it)
        shown = db._conn.execute("SELECT count(*) FROM messages WHERE session_id = ? AND active = 1",
                                 (sid,)).fetchone()[0]
        stored = db._conn.execute("SELECT message_count FROM sessions WHERE id = ?", (sid,)).fetchone()[0]
        assert shown < stored
        browser = db.get_summary(sid).message_count
    finally:
        db.close()
    items = _document(hermes(home, "list", "--json", "--limit", "100"))["sessions"]
    row = next(i for i in items if i["id"] == sid)
    assert row["message_count"] == shown == browser
