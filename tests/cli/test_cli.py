"""``hermes sessions`` in-process (docs/requirements.md §13).

Every test runs ``main([...])`` against a real ``state.db`` under a temporary ``HERMES_HOME``
built through ``SessionDB``'s public API. Relative times are made deterministic by placing
activity in the middle of an RT-1 bucket relative to the real clock ("2.5 h ago" prints
``2h ago`` however long the test takes).
"""

from __future__ import annotations

import io
import json
import sys
import re
import time
import tomllib
from datetime import datetime
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_tui import cli
from hermes_tui.cli import main

REPO = Path(__file__).resolve().parents[2]
HOUR = 3600.0
DAY = 86400.0


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "hermes-home"
    path.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(path))
    monkeypatch.delenv(cli.WRITE_RETRIES_ENV, raising=False)
    return path


@pytest.fixture
def store(home):
    """A SessionDB on ``$HERMES_HOME/state.db`` for building data (closed after the test)."""
    db = SessionDB(home / "state.db")
    yield db
    db.close()


@pytest.fixture
def run(capsys, monkeypatch):
    """``run(*args, stdin=None) -> (exit code, stdout, stderr)`` of ``hermes sessions …``."""

    def invoke(*args: str, stdin: str | io.TextIOBase | None = None):
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin) if isinstance(stdin, str) else stdin)
        code = main(["sessions", *args])
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def spec_example(db: SessionDB, make_session, now: float) -> None:
    """The two sessions of CLI-7's example, active 2.5 h and 3.4 days ago."""
    make_session(
        db, "20250303_101500_f00d1234", source="telegram", started_at=now - 3.5 * DAY,
        messages=[{"role": "user", "content": "What's the weather in Las Vegas?",
                   "timestamp": now - 3.4 * DAY}],
    )
    make_session(
        db, "20250305_091523_a1b2c3", source="cli", started_at=now - 3 * HOUR, title="refactoring auth",
        messages=[{"role": "user", "content": "Help me refactor the auth module please",
                   "timestamp": now - 2.5 * HOUR}],
    )


class _InterruptingStdin(io.TextIOBase):
    def readline(self, *args):  # what input() calls when stdin is not a terminal
        raise KeyboardInterrupt

    def read(self, *args):
        raise KeyboardInterrupt


# ----------------------------------------------------------------------------- CLI-1, CLI-14


def test_cli1_main_returns_int_and_console_script_points_at_it(run, store, home):
    store.close()
    code, out, _ = run("stats")
    assert code == 0 and isinstance(code, int)
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    # `hermes` hands Hermes Agent's own commands on; `hermes-sessions` is ours alone.
    assert scripts["hermes"] == "hermes_tui.hermes_shim:main"
    assert scripts["hermes-sessions"] == "hermes_tui.cli:sessions_main"


def test_cli14_missing_action_prints_sessions_help_exit_2(capsys, home):
    assert main(["sessions"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # a usage error: the help goes with it to stderr
    assert err.startswith("usage: hermes sessions")
    for action in ("list", "browse", "export", "delete", "rename", "prune", "stats"):
        assert f"\n    {action} " in err


def test_cli14_no_command_prints_top_help_exit_2(capsys, home):
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "sessions" in err


def test_cli2_usage_errors_exit_2_on_stderr(run, store):
    store.close()
    for argv in (["list", "--bogus"], ["rename", "abc"], ["delete"], ["frobnicate"],
                 ["list", "--limit", "many"], ["prune", "--older-than", "-3"], ["export"]):
        code, out, err = run(*argv)
        assert code == 2, argv
        assert out == "" and "usage: hermes sessions" in err, argv


def test_cli2_help_exits_0(run):
    code, out, _ = run("list", "--help")
    assert code == 0 and "--source" in out and "--limit" in out


# ----------------------------------------------------------------------------- CLI-7 list


def test_cli7_titled_layout_exact(run, store, make_session):
    spec_example(store, make_session, time.time())
    store.close()
    code, out, err = run("list")
    assert code == 0 and err == ""
    assert out == (
        "Title                            Preview                                  Last Active   ID\n"
        "──────────────────────────────────────────────────────────────────────────────────────────────────────────────\n"
        "refactoring auth                 Help me refactor the auth module plea…   2h ago        20250305_091523_a1b2c3\n"
        "—                                What's the weather in Las Vegas?         3d ago        20250303_101500_f00d1234\n"
    )
    assert len(out.splitlines()[1]) == 110 and set(out.splitlines()[1]) == {"\u2500"}
    assert out.splitlines()[3].startswith("\u2014 ")


def test_cli7_untitled_layout_exact(run, store, make_session):
    now = time.time()
    make_session(store, "20250305_091523_a1b2c3", source="cli", started_at=now - 3 * HOUR,
                 messages=[{"role": "user", "content": "Help me refactor the auth module please",
                            "timestamp": now - 2.5 * HOUR}])
    store.close()
    code, out, _ = run("list")
    assert code == 0
    assert out == (
        "Preview                                            Last Active   Src    ID\n"
        "───────────────────────────────────────────────────────────────────────────────────────────────\n"
        "Help me refactor the auth module please            2h ago        cli    20250305_091523_a1b2c3\n"
    )
    assert len(out.splitlines()[1]) == 95


def test_cli7_truncation_and_long_source(run, store, make_session):
    now = time.time()
    make_session(store, "20250305_100000_0a0b0c0d", source="whatsapp_business",
                 started_at=now - 10 * DAY,
                 messages=[{"role": "user", "content": "x" * 70, "timestamp": now - 9.5 * DAY}])
    make_session(store, "20250305_110000_abcdef", source="cli", started_at=now - 200,
                 messages=[{"role": "user", "content": "Line one\nLine two " + "y" * 60,
                            "timestamp": now - 150}])
    store.close()
    code, out, _ = run("list")
    date = datetime.fromtimestamp(now - 9.5 * DAY).strftime("%Y-%m-%d")
    lines = out.splitlines()
    # Preview: LI-3 cuts at 60 + "...", the untitled layout shows 48 of it in 50 columns.
    assert lines[2] == "Line one Line two " + "y" * 29 + "…   2m ago        cli    20250305_110000_abcdef"
    # A source longer than 6 pushes the id right; the id is printed in full (CLI-16).
    assert lines[3] == "x" * 47 + "…   " + f"{date:<13} whatsapp_business 20250305_100000_0a0b0c0d"


def test_list_cuts_title_30_and_preview_38_with_ellipsis(run, store, make_session):
    now = time.time()
    make_session(store, "20250305_120000_123456", started_at=now - 50,
                 title="A very long session title that goes on and on",
                 messages=[{"role": "user", "content": "P" * 100, "timestamp": now - 30}])
    store.close()
    code, out, _ = run("list")
    assert out.splitlines()[2] == (
        "A very long session title tha…   " + "P" * 37 + "…   just now      20250305_120000_123456"
    )


def test_list_widths_count_terminal_cells(run, store, make_session):
    """CJK characters take two cells: the columns line up with ASCII rows, and a cut is "…"."""
    from rich.cells import cell_len

    now = time.time()
    make_session(store, "20250305_130000_cafe01", started_at=now - 600, title="日本語のタイトル",
                 messages=[{"role": "user", "content": "東京の天気を教えて", "timestamp": now - 500}])
    make_session(store, "20250305_120000_cafe02", started_at=now - 900, title="日本語" * 8,
                 messages=[{"role": "user", "content": "天気" * 30, "timestamp": now - 800}])
    make_session(store, "20250305_110000_cafe03", started_at=now - 1200, title="ascii title",
                 messages=[{"role": "user", "content": "plain preview", "timestamp": now - 1100}])
    store.close()
    code, out, _ = run("list")
    lines = out.splitlines()
    assert lines[2] == (
        "日本語のタイトル" + " " * 17 + "東京の天気を教えて" + " " * 23 + "8m ago        20250305_130000_cafe01"
    )
    assert lines[3].startswith("日本語日本語日本語日本語日本…    天気")  # 29 cells + "…", padded
    for line in lines[2:]:
        # the "Last Active" column starts at the same cell on every row
        assert cell_len(line[: re.search(r"\d+m ago", line).start()]) == 32 + 1 + 40 + 1, line


def test_cli7_empty_database_no_sessions_found(run, store):
    store.close()
    assert run("list") == (0, "No sessions found.\n", "")


def test_cli7_limit_and_order(run, store, make_session):
    now = time.time()
    for i in range(5):
        make_session(store, f"20250305_0{i}0000_00000{i}", started_at=now - (10 - i) * HOUR,
                     messages=[("user", f"message {i}")])
    store.close()
    code, out, _ = run("list", "--limit", "2")
    ids = [line.split()[-1] for line in out.splitlines()[2:]]
    assert ids == ["20250305_040000_000004", "20250305_030000_000003"]
    code, out, _ = run("list")
    assert len(out.splitlines()) == 2 + 5


def test_cli7_compression_chain_listed_once_at_its_tip(run, store, make_session):
    now = time.time()
    make_session(store, "20250305_080000_root01", started_at=now - 5 * HOUR, title="travel plans",
                 end_reason="compression", ended_at=now - 4 * HOUR, messages=[("user", "plan a trip")])
    make_session(store, "20250305_090000_tip001", started_at=now - 4 * HOUR + 10,
                 parent_session_id="20250305_080000_root01", title="travel plans #2",
                 messages=[{"role": "user", "content": "continue", "timestamp": now - 1.5 * HOUR}])
    store.close()
    code, out, _ = run("list")
    assert out.splitlines()[2:] == [
        "travel plans #2                  continue                                 1h ago        20250305_090000_tip001"
    ]


def test_cli7_terminal_controls_in_preview_are_inert(run, store, make_session):
    now = time.time()
    make_session(store, "20250305_140000_e5c001", started_at=now - 100,
                 messages=[{"role": "user", "content": "\x1b]52;c;cGF3bmVk\x07 \x1b[31mred\u202e",
                            "timestamp": now - 20}])
    store.close()
    code, out, _ = run("list")
    row = out.splitlines()[2]
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert row.startswith("\u241b]52;c;cGF3bmVk\u2407 \u241b[31mred\ufffd ")
    assert row.index("just now") == 51  # one visible character per control: columns unchanged


# ----------------------------------------------------------------------------- CLI-4


def test_cli4_tool_sessions_hidden_unless_source_given(run, store, make_session):
    now = time.time()
    make_session(store, "20250305_150000_c11111", source="cli", started_at=now - 300,
                 messages=[("user", "visible")])
    make_session(store, "20250305_150100_7001aa", source="tool", started_at=now - 200,
                 messages=[("user", "tool run")])
    make_session(store, "20250305_150200_7e1e9a", source="telegram", started_at=now - 100,
                 messages=[("user", "from telegram")])
    store.close()
    ids = lambda out: [line.split()[-1] for line in out.splitlines()[2:]]  # noqa: E731
    assert ids(run("list")[1]) == ["20250305_150200_7e1e9a", "20250305_150000_c11111"]
    assert ids(run("list", "--source", "tool")[1]) == ["20250305_150100_7001aa"]
    assert ids(run("list", "--source", "cli")[1]) == ["20250305_150000_c11111"]
    assert run("list", "--source", "slack")[1] == "No sessions found.\n"
    # Other actions never hide tool sessions.
    code, out, _ = run("export", "-")
    assert "20250305_150100_7001aa" in out
    assert "Total sessions: 3" in run("stats")[1]


# ----------------------------------------------------------------------------- CLI-5


@pytest.fixture
def three_sessions(store, make_session):
    now = time.time()
    make_session(store, "20250305_091523_a1b2c3", started_at=now - 300, messages=[("user", "one")])
    make_session(store, "20250305_091523_a1ffff", started_at=now - 200, messages=[("user", "two")])
    make_session(store, "20250306_120000_beef42", started_at=now - 100, messages=[("user", "three")])
    store.close()


def test_cli5_unique_prefix_resolves_for_rename_export_delete(run, three_sessions, home, tmp_path):
    assert run("rename", "20250306", "my", "title") == (
        0, "Session '20250306_120000_beef42' renamed to: my title\n", "")
    out_file = tmp_path / "one.jsonl"
    assert run("export", str(out_file), "--session-id", "20250305_091523_a1b")[1] == (
        f"Exported 1 session to {out_file}\n")
    assert json.loads(out_file.read_text())["id"] == "20250305_091523_a1b2c3"
    code, out, _ = run("delete", "20250305_091523_a1f", "--yes")
    assert (code, out) == (0, "Deleted session '20250305_091523_a1ffff'.\n")


def test_cli5_unknown_prefix_not_found(run, three_sessions, tmp_path):
    for argv in (["rename", "nope", "x"], ["delete", "zzz", "--yes"],
                 ["export", "-", "--session-id", "zzz"]):
        code, out, err = run(*argv)
        assert code == 1, argv
        assert (out + err) == f"Session '{argv[1] if argv[0] != 'export' else argv[3]}' not found.\n", argv


def test_cli17_ambiguous_prefix_says_so_with_the_count_in_every_command(run, three_sessions, home, tmp_path):
    for argv, prefix in ((["rename", "20250305_091523_a1", "x"], "20250305_091523_a1"),
                         (["delete", "20250305", "-y"], "20250305"),
                         (["export", str(tmp_path / "x.jsonl"), "--session-id", "2025030"], "2025030")):
        db = SessionDB(home / "state.db", read_only=True)
        try:
            n = sum(1 for row in db.search_sessions(limit=100) if row["id"].startswith(prefix))
        finally:
            db.close()
        assert n > 1
        code, out, err = run(*argv)
        assert code == 1, argv
        assert (out + err) == (
            f"Session '{prefix}' is ambiguous: {n} sessions match. Give more of the id.\n"), argv
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize("argv", [
    ["export", "OUT", "--session-id", ""], ["export", "-", "--session-id", "  "],
    ["delete", "", "-y"], ["rename", "", "title"],
])
def test_cli17_empty_id_is_an_error_never_every_session(run, three_sessions, home, tmp_path, argv):
    argv = [str(tmp_path / "x.jsonl") if a == "OUT" else a for a in argv]
    code, out, err = run(*argv)
    assert code == 2
    assert (out + err) == "Error: empty session id.\n"
    assert not (tmp_path / "x.jsonl").exists()
    db = SessionDB(home / "state.db", read_only=True)
    try:
        assert db.session_count() == 3 and all(row["title"] != "title" for row in db.search_sessions())
    finally:
        db.close()


def test_cli5_like_wildcards_are_literal(run, store, make_session):
    make_session(store, "20250305_aXb", messages=[("user", "x")])
    store.close()
    assert run("rename", "20250305_a_b", "t")[1:] == ("", "Session '20250305_a_b' not found.\n")
    assert run("rename", "20250305_a%", "t")[1:] == ("", "Session '20250305_a%' not found.\n")


# ----------------------------------------------------------------------------- CLI-6, CLI-9 delete


@pytest.fixture
def deletable(store, make_session, home):
    now = time.time()
    make_session(store, "20250305_091523_a1b2c3", started_at=now - 300, end_reason="branched",
                 ended_at=now - 250, messages=[("user", "parent"), ("assistant", "answer")])
    make_session(store, "20250305_091600_c0ffee", started_at=now - 200,
                 parent_session_id="20250305_091523_a1b2c3", messages=[("user", "child")])
    store.close()
    sessions = home / "sessions"
    sessions.mkdir()
    for name in ("20250305_091523_a1b2c3.json", "20250305_091523_a1b2c3.jsonl",
                 "request_dump_20250305_091523_a1b2c3_001.json", "sessions.json",
                 "20250305_091600_c0ffee.jsonl"):
        (sessions / name).write_text("{}")
    return sessions


def _exists(home: Path, session_id: str) -> bool:
    db = SessionDB(home / "state.db", read_only=True)
    try:
        return db.get_session(session_id) is not None
    finally:
        db.close()


PROMPT = "Delete session '20250305_091523_a1b2c3' and all its messages? [y/N] "


@pytest.mark.parametrize("answer", ["y\n", "yes\n", "YES\n", "  Yes  \n", "y"])
def test_cli6_yes_answers_confirm(run, deletable, home, answer):
    code, out, err = run("delete", "20250305_091523_a1b2c3", stdin=answer)
    assert code == 0
    # The prompt is CLI-9's, word for word, on stderr: stdout says only what was done.
    assert out == "Deleted session '20250305_091523_a1b2c3'.\n"
    assert PROMPT in err
    assert not _exists(home, "20250305_091523_a1b2c3")


@pytest.mark.parametrize("answer", ["n\n", "\n", "no\n", "yeah\n", "y es\n", "ye\n"])
def test_cli6_other_answers_decline(run, deletable, home, answer):
    code, out, err = run("delete", "20250305_091523_a1b2c3", stdin=answer)
    assert (code, out) == (1, "")
    assert err.endswith(PROMPT + "Cancelled.\n")
    assert _exists(home, "20250305_091523_a1b2c3")
    assert (deletable / "20250305_091523_a1b2c3.json").exists()


def test_cli9_prompt_says_on_stderr_what_else_goes_and_what_stays(run, deletable, home):
    """The prompt is CLI-9's, word for word, on stderr, after what it does not say: the
    delegate (sub-agent) runs that go with the session (UC-5), the children that stay."""
    db = SessionDB(home / "state.db")
    try:
        for run_id in ("20250305_091700_d1", "20250305_091800_d2"):
            db.create_session(run_id, "subagent", parent_session_id="20250305_091523_a1b2c3",
                              model_config={"_delegate_from": "20250305_091523_a1b2c3"})
            db.append_message(run_id, "user", "delegated")
        db.append_message("20250305_091800_d2", "assistant", "done")
    finally:
        db.close()
    code, out, err = run("delete", "20250305_091523_a1b2c3", stdin="n\n")
    assert (code, out) == (1, "")
    assert err.endswith(PROMPT + "Cancelled.\n")
    assert "Its 2 delegate (sub-agent) runs (3 messages) are deleted with it." in err
    assert "1 child session stays, as a root." in err
    assert _exists(home, "20250305_091800_d2")
    code, out, err = run("delete", "20250305_091523_a1b2c3", stdin="y\n")
    assert (code, out) == (0, "Deleted session '20250305_091523_a1b2c3'.\n")
    assert PROMPT in err
    assert not _exists(home, "20250305_091800_d2") and _exists(home, "20250305_091600_c0ffee")


def test_cli9_prompt_calls_a_session_live_by_the_users_live_window(run, store, make_session, home):
    """The note before the prompt uses the browser's setting (``live_window_s``), not a copy."""
    import os

    make_session(store, "20250305_091523_a1b2c3", started_at=time.time() - 120,
                 messages=[{"role": "user", "content": "still going", "timestamp": time.time() - 60}])
    store.close()
    _, _, err = run("delete", "20250305_091523_a1b2c3", stdin="n\n")
    assert "looks live" in err  # (written a minute ago, within the default five minutes)
    config = Path(os.environ["HERMES_SESSIONS_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text("live_window_s: 30\n", encoding="utf-8")
    _, _, err = run("delete", "20250305_091523_a1b2c3", stdin="n\n")
    assert "looks live" not in err


def test_cli6_eof_cancels(run, deletable, home):
    code, out, err = run("delete", "20250305_091523_a1b2c3", stdin="")
    assert (code, out) == (1, "")
    assert err.endswith(PROMPT + "\nCancelled.\n")
    assert _exists(home, "20250305_091523_a1b2c3")


def test_cli6_ctrl_c_cancels(run, deletable, home):
    code, out, err = run("delete", "20250305_091523_a1b2c3", stdin=_InterruptingStdin())
    assert code == 1 and out == "" and err.endswith("\nCancelled.\n")
    assert _exists(home, "20250305_091523_a1b2c3")


@pytest.mark.parametrize("flag", ["--yes", "-y"])
def test_cli6_yes_flag_skips_prompt(run, deletable, home, flag):
    code, out, _ = run("delete", "20250305_091523_a1b2c3", flag, stdin=_InterruptingStdin())
    assert (code, out) == (0, "Deleted session '20250305_091523_a1b2c3'.\n")


def test_cli9_delete_removes_files_and_orphans_children(run, deletable, home):
    code, out, _ = run("delete", "20250305_091523_a1b2c3", "-y")
    assert code == 0
    assert sorted(p.name for p in deletable.iterdir()) == [
        "20250305_091600_c0ffee.jsonl", "sessions.json"]
    db = SessionDB(home / "state.db", read_only=True)
    try:
        assert db.get_session("20250305_091600_c0ffee")["parent_session_id"] is None
        assert db.message_count("20250305_091523_a1b2c3") == 0
    finally:
        db.close()


def test_cli9_a_deleted_session_goes_to_the_trash_and_restore_brings_it_back(run, deletable, home):
    """A delete from the command line is as recoverable as one in the browser: the session,
    its messages, its child link and its files come back with ``hermes sessions restore``."""
    code, out, err = run("delete", "20250305_091523_a1b2c3", "-y")
    assert (code, out) == (0, "Deleted session '20250305_091523_a1b2c3'.\n")
    assert "hermes sessions restore 20250305_091523_a1b2c3" in err
    code, out, _ = run("trash")
    assert code == 0 and "20250305_091523_a1b2c3" in out
    code, out, err = run("restore", "20250305_091523_a1b", stdin="")
    assert code == 0, (out, err)
    db = SessionDB(home / "state.db", read_only=True)
    try:
        assert db.message_count("20250305_091523_a1b2c3") == 2
        assert db.get_session("20250305_091600_c0ffee")["parent_session_id"] == "20250305_091523_a1b2c3"
    finally:
        db.close()
    assert (deletable / "20250305_091523_a1b2c3.jsonl").exists()


def test_cli9_an_entry_of_another_store_goes_back_only_into_it(run, deletable, home, tmp_path, monkeypatch):
    """One trash per user, one store per HERMES_HOME (PF-7): a session deleted from a store of
    no profile of this root is marked, the listing says the command that puts it back there,
    and a restore here refuses rather than put it into this store."""
    assert run("delete", "20250305_091523_a1b2c3", "-y")[0] == 0
    code, out, _ = run("trash")
    assert code == 0 and "Profile" not in out and "? " not in out
    other = tmp_path / "other-home"
    other.mkdir()
    SessionDB(other / "state.db").close()
    before = (other / "state.db").read_bytes()
    monkeypatch.setenv("HERMES_HOME", str(other))
    code, out, _ = run("trash")
    cells = next(line for line in out.splitlines() if "20250305_091523_a1b2c3" in line).split()
    assert code == 0 and cells[cells.index("20250305_091523_a1b2c3") - 1] == "?"  # (its profile: none here)
    back = f"HERMES_HOME={home} hermes sessions restore SESSION_ID"
    assert f"? Deleted from {home / 'state.db'}, the store of no profile under {other}" in out and back in out
    code, out, err = run("restore", "20250305_091523_a1b2c3")
    assert code == 1 and out == ""
    assert f"HERMES_HOME={home} hermes sessions restore 20250305_091523_a1b2c3" in err
    assert (other / "state.db").read_bytes() == before
    monkeypatch.setenv("HERMES_HOME", str(home))
    code, out, err = run("restore", "20250305_091523_a1b2c3")
    assert code == 0, err


# ----------------------------------------------------------------------------- CLI-10 rename


@pytest.fixture
def titled(store, make_session):
    make_session(store, "20250304_143022_e4f5a6", title="my project", messages=[("user", "a")])
    make_session(store, "20250305_091523_a1b2c3", started_at=time.time(), messages=[("user", "b")])
    store.close()


def test_cli10_rename_joins_words_and_prints_stored_title(run, titled, home):
    assert run("rename", "20250305_091523_a1b2c3", "refactoring", "auth") == (
        0, "Session '20250305_091523_a1b2c3' renamed to: refactoring auth\n", "")
    assert run("rename", "20250305_091523_a1b2c3", "  spaced\tout  ", "title\u200b ") == (
        0, "Session '20250305_091523_a1b2c3' renamed to: spaced out title\n", "")
    db = SessionDB(home / "state.db", read_only=True)
    try:
        assert db.get_session_title("20250305_091523_a1b2c3") == "spaced out title"
    finally:
        db.close()


def test_cli10_rename_to_blank_clears_title(run, titled, home):
    assert run("rename", "20250304_143022_e4f5a6", "   ", "\u200b") == (
        0, "Session '20250304_143022_e4f5a6' title cleared.\n", "")


def test_cli10_duplicate_title_rejected(run, titled):
    assert run("rename", "20250305_091523_a1b2c3", "my", "project") == (
        1,
        "",
        "Error: Title 'my project' is already in use by session 20250304_143022_e4f5a6\n",
    )


def test_cli10_own_title_and_case_variant_accepted(run, titled):
    assert run("rename", "20250304_143022_e4f5a6", "my project")[0] == 0
    assert run("rename", "20250305_091523_a1b2c3", "My Project")[0] == 0  # TI-3 case-sensitive


def test_cli10_too_long_title_rejected(run, titled, home):
    assert run("rename", "20250305_091523_a1b2c3", "x" * 101) == (
        1, "", "Error: Title too long (101 chars, max 100)\n")
    assert run("rename", "20250305_091523_a1b2c3", "x" * 100)[0] == 0


# ----------------------------------------------------------------------------- CLI-11 prune


@pytest.fixture
def prunable(store, make_session, home):
    now = time.time()
    make_session(store, "old_cli_ended", source="cli", started_at=now - 100 * DAY, end_reason="user_exit",
                 messages=[("user", "old")])
    make_session(store, "old_tg_ended", source="telegram", started_at=now - 200 * DAY,
                 end_reason="user_exit", messages=[("user", "old tg")])
    make_session(store, "old_live", source="cli", started_at=now - 300 * DAY, messages=[("user", "live")])
    make_session(store, "recent_ended", source="cli", started_at=now - 10 * DAY, end_reason="user_exit")
    store.close()
    return home


def _ids(home: Path) -> list[str]:
    db = SessionDB(home / "state.db", read_only=True)
    try:
        return sorted(row["id"] for row in db.search_sessions(limit=100))
    finally:
        db.close()


def test_cli11_prune_prompt_and_result(run, prunable):
    assert run("prune", stdin="y\n") == (
        0, "Pruned 2 session(s).\n", "Delete 2 ended sessions older than 90 days? [y/N] ")
    assert _ids(prunable) == ["old_live", "recent_ended"]


def test_cli11_prune_with_source_and_days(run, prunable):
    code, out, err = run("prune", "--older-than", "30", "--source", "cli", stdin="yes\n")
    assert (out, err) == ("Pruned 1 session(s).\n", "Delete 1 ended session older than 30 days from 'cli'? [y/N] ")
    assert _ids(prunable) == ["old_live", "old_tg_ended", "recent_ended"]


def test_cli11_prune_declined(run, prunable):
    assert run("prune", "--older-than", "5", stdin="n\n") == (
        1, "", "Delete 3 ended sessions older than 5 days? [y/N] Cancelled.\n")
    assert len(_ids(prunable)) == 4


def test_cli11_prune_yes_flag_nothing_to_prune(run, prunable):
    assert run("prune", "--older-than", "1000", "-y") == (0, "Pruned 0 session(s).\n", "")


def test_prune_with_nothing_to_prune_does_not_ask(run, prunable):
    assert run("prune", "--older-than", "1000", stdin="") == (
        0, "No ended sessions older than 1000 days.\n", "")


def test_prune_dry_run_lists_and_deletes_nothing(run, prunable):
    code, out, err = run("prune", "--dry-run")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["old_cli_ended", "old_tg_ended"]
    assert lines[-1] == "Would prune 2 sessions ended and older than 90 days; nothing was deleted."
    assert len(_ids(prunable)) == 4


# ----------------------------------------------------------------------------- CLI-12 stats


def test_stats_lists_sources_most_sessions_first(run, store, home):
    counts = {"discord": 2, "cli": 3, "zulip": 1, "tool": 2, "slack": 1, "matrix": 1, "telegram": 0}
    n = 0
    for source, count in counts.items():
        for _ in range(count):
            store.create_session(f"s{n}", source)
            store.append_message(f"s{n}", "user", "hello")
            store.append_message(f"s{n}", "assistant", "hi")
            n += 1
    store.close()
    code, out, _ = run("stats")
    size = (home / "state.db").stat().st_size
    assert code == 0
    # CLI-12's block first, as upstream prints it; CLI-19's tables follow.
    assert out.startswith(
        "Total sessions: 10\n"
        "Total messages: 20\n"
        "  cli: 3 sessions\n"
        "  discord: 2 sessions\n"
        "  tool: 2 sessions\n"
        "  slack: 1 session\n"
        "  matrix: 1 session\n"
        "  zulip: 1 session\n"
        f"Database size: {size / 1048576:.1f} MB\n"
    )


def test_cli12_size_one_decimal_of_state_db_only(run, store, home):
    store.create_session("big", "cli")
    store._execute_write(lambda conn: conn.executemany(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('big', 'user', ?, ?)",
        [("z" * 4000, float(i)) for i in range(700)]))
    store.close()
    size = (home / "state.db").stat().st_size
    assert size > 2 * 1048576
    last = next(line for line in run("stats")[1].splitlines() if line.startswith("Database size: "))
    assert last == f"Database size: {size / 1048576:.1f} MB"
    assert last.count(".") == 1 and len(last.split(".")[1]) == len("N MB")


def test_cli12_stats_empty_database(run, store):
    store.close()
    out = run("stats")[1]
    assert out.startswith("Total sessions: 0\nTotal messages: 0\nDatabase size: ")


# ----------------------------------------------------------------------------- CLI-8 export


@pytest.fixture
def exportable(store, make_session):
    now = time.time()
    make_session(store, "20250301_100000_aaaaaa", source="cli", started_at=now - 3 * DAY,
                 title="travel plans", messages=[
                     ("user", "Plan the trip to 桂林"),
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "c1", "function": {"name": "web_search", "arguments": "{}"}}]},
                     {"role": "tool", "content": "sunny", "tool_name": "web_search", "tool_call_id": "c1"},
                 ])
    make_session(store, "20250302_090000_cccccccc", source="telegram", started_at=now - 2 * DAY,
                 messages=[("user", "東京の天気を教えて"), ("assistant", "晴れです")])
    make_session(store, "20250303_090000_dddddd", source="tool", started_at=now - DAY,
                 messages=[("user", "subtask")])
    expected = store.export_all()
    store.close()
    return expected


def test_cli8_export_all_jsonl(run, exportable, tmp_path):
    target = tmp_path / "all.jsonl"
    assert run("export", str(target)) == (0, f"Exported 3 sessions to {target}\n", "")
    text = target.read_text(encoding="utf-8")
    assert text == "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in exportable)
    assert (target.stat().st_mode & 0o777) == 0o600


def test_cli8_export_source_filter_and_singular(run, exportable, tmp_path):
    target = tmp_path / "tg.jsonl"
    assert run("export", str(target), "--source", "telegram")[1] == f"Exported 1 session to {target}\n"
    assert [json.loads(line)["id"] for line in target.read_text().splitlines()] == [
        "20250302_090000_cccccccc"]
    assert run("export", str(target), "--source", "nope")[1] == f"Exported 0 sessions to {target}\n"
    assert target.read_text() == ""


def test_cli8_export_session_id_ignores_source(run, exportable, tmp_path):
    target = tmp_path / "one.jsonl"
    code, out, _ = run("export", str(target), "--session-id", "20250301", "--source", "telegram")
    assert (code, out) == (0, f"Exported 1 session to {target}\n")
    obj = json.loads(target.read_text())
    assert obj["id"] == "20250301_100000_aaaaaa" and "last_active" not in obj  # EX-1 shape
    assert obj["messages"][1]["tool_calls"][0]["function"]["name"] == "web_search"


def test_cli8_export_to_stdout_prints_only_data(run, exportable):
    code, out, err = run("export", "-")
    assert code == 0 and err == ""
    assert [json.loads(line) for line in out.splitlines()] == exportable
    code, out, _ = run("export", "-", "--session-id", "20250302_090000_cccccccc")
    assert out.count("\n") == 1 and json.loads(out)["messages"][1]["content"] == "晴れです"


def test_cli8_export_truncates_existing_file(run, exportable, tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("x" * 100000)
    run("export", str(target), "--session-id", "20250303")
    assert target.read_text().count("\n") == 1 and "x" * 100 not in target.read_text()


def test_cli8_export_markdown(run, exportable, tmp_path):
    target = tmp_path / "t.md"
    assert run("export", str(target), "--format", "md", "--session-id", "20250301")[1] == (
        f"Exported 1 session to {target}\n")
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# travel plans\n") and "**Tool call:** `web_search`" in text
    assert (target.stat().st_mode & 0o777) == 0o600
    code, out, _ = run("export", "-", "--format", "md")
    assert code == 0 and out.count("\n---\n") == 2 and "東京の天気を教えて" in out


def test_cli8_export_progress_on_a_terminal_only(run, store, make_session, tmp_path, monkeypatch):
    for i in range(25):
        make_session(store, f"20250305_0000{i:02d}_aaaaaa", started_at=time.time() - 1000 + i)
    store.close()

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code, out, _ = run("export", str(tmp_path / "p.jsonl"))
    assert (code, out) == (0, f"Exported 25 sessions to {tmp_path / 'p.jsonl'}\n")
    shown = terminal.getvalue()
    assert "exporting" in shown and "25/25" in shown and "sessions" in shown
    # A transient bar: erased (cursor back up, line cleared) before the summary is printed.
    assert shown.endswith("\r\x1b[1A\x1b[2K")
    quiet = io.StringIO()  # not a terminal: silent
    monkeypatch.setattr(sys, "stderr", quiet)
    assert run("export", str(tmp_path / "p.jsonl"))[0] == 0
    assert quiet.getvalue() == ""


def test_cli10_c1_controls_in_title_shown_inert(run, titled):
    code, out, _ = run("rename", "20250305_091523_a1b2c3", "evil\x9b31mred")
    assert (code, out) == (0, "Session '20250305_091523_a1b2c3' renamed to: evil\ufffd31mred\n")


def test_cli8_export_bad_format_is_usage_error(run, exportable, tmp_path):
    assert run("export", str(tmp_path / "x"), "--format", "csv")[0] == 2


# ----------------------------------------------------------------------------- CLI-13 browse


def test_cli13_browse_without_database_names_path_and_suggests_demo(run, home):
    code, out, err = run("browse")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert str(home / "state.db") in err and "--demo" in err
    assert not (home / "state.db").exists()


# ----------------------------------------------------------------------------- import (project)


def test_cli_import_round_trip_restores_deleted_session(run, exportable, tmp_path, home):
    backup = tmp_path / "backup.jsonl"
    run("export", str(backup), "--session-id", "20250301")
    assert run("delete", "20250301", "-y")[0] == 0
    code, out, _ = run("import", str(backup))
    assert (code, out) == (0, "Imported 1 session, 3 messages.\n")
    db = SessionDB(home / "state.db", read_only=True)
    try:
        restored = db.export_session("20250301_100000_aaaaaa")
    finally:
        db.close()
    original = json.loads(backup.read_text())
    assert restored == original
    code, out, _ = run("import", str(backup))
    assert (code, out) == (0, "Imported 0 sessions, 0 messages, 1 already present.\n")


def test_cli_import_reports_bad_lines_exit_1(run, store, tmp_path):
    store.close()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "s", "source": "cli", "started_at": 1.0}\n{oops\n')
    code, out, err = run("import", str(bad))
    assert code == 1
    # The summary is what the import did; the bad line is a diagnostic.
    assert out == "Imported 1 session, 0 messages, 1 bad line.\n"
    assert err.startswith("  line 2: ") and err.count("\n") == 1
    assert run("import", str(tmp_path / "missing.jsonl")) == (
        1, "", f"Error: cannot read {tmp_path / 'missing.jsonl'}: no such file\n")


# ----------------------------------------------------------------------------- CLI-15


@pytest.fixture
def spy(monkeypatch):
    """Record every SessionDB the CLI opens (the real class runs; this only counts)."""
    opened: list[SessionDB] = []

    class CountingSessionDB(SessionDB):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            opened.append(self)

    monkeypatch.setattr(cli, "SessionDB", CountingSessionDB)
    return opened


@pytest.mark.parametrize(
    "argv, stdin, expected_code",
    [
        (["list"], None, 0),
        (["stats"], None, 0),
        (["export", "-"], None, 0),
        (["rename", "20250304_143022_e4f5a6", "new", "name"], None, 0),
        (["rename", "20250305_091523_a1b2c3", "my project"], None, 1),  # duplicate title
        (["rename", "nope", "x"], None, 1),  # not found
        (["delete", "20250305_091523_a1b2c3"], "n\n", 1),  # cancelled
        (["delete", "20250305_091523_a1b2c3"], "y\n", 0),
        (["prune", "-y"], None, 0),
    ],
)
def test_cli15_one_store_opened_and_closed(run, titled, spy, argv, stdin, expected_code):
    code, _, _ = run(*argv, stdin=stdin)
    assert code == expected_code
    assert len(spy) == 1
    assert spy[0]._conn is None  # closed before main returned


def test_cli15_store_closed_when_command_fails_midway(run, titled, spy, monkeypatch):
    import sqlite3

    real = SessionDB.iter_listed

    def broken_after(rows: int):
        def broken(self, *args, **kwargs):
            for n, row in enumerate(real(self, *args, **kwargs)):
                if n == rows:
                    raise sqlite3.OperationalError("disk I/O error")
                yield row
            raise sqlite3.OperationalError("disk I/O error")
        return broken

    monkeypatch.setattr(SessionDB, "iter_listed", broken_after(0))
    code, out, err = run("list")
    assert code == 1 and out == "" and err.startswith("Error: ") and err.count("\n") == 1
    assert len(spy) == 1 and spy[0]._conn is None
    # Streamed: what was printed before the failure stays printed, the error comes last.
    monkeypatch.setattr(SessionDB, "iter_listed", broken_after(10**6))  # (after the last row)
    code, out, err = run("list")
    assert code == 1 and out.splitlines()[0].startswith("Title") and err.startswith("Error: ")
    assert len(spy) == 2 and spy[1]._conn is None


def test_cli15_no_store_opened_for_usage_errors(run, titled, spy):
    assert run("rename")[0] == 2
    assert spy == []


# ----------------------------------------------------------------------------- CLI-16


def test_cli16_both_id_formats_printed_in_full(run, store, make_session):
    now = time.time()
    make_session(store, "20250305_091523_a1b2c3", started_at=now - 100, messages=[("user", "cli")])
    make_session(store, "20250305_091524_a1b2c3d4", source="telegram", started_at=now - 50,
                 messages=[("user", "gateway")])
    store.close()
    out = run("list")[1]
    assert out.splitlines()[2].endswith(" 20250305_091524_a1b2c3d4")
    assert out.splitlines()[3].endswith(" 20250305_091523_a1b2c3")


def test_cli11_a_large_prune_while_something_writes_says_what_the_lock_costs(run, store, make_session, home,
                                                                          monkeypatch):
    """A prune is one transaction (EX-5): every writer waits for all of it, and upstream's gives
    a write up after ~16 s. Large, while the store is being written, it says so on stderr before
    CLI-11's prompt (unchanged, on stderr too); small, or on a quiet store, nothing."""
    from hermes_tui import cli

    now = time.time()
    make_session(store, "old_a", source="cli", started_at=now - 200 * DAY, end_reason="user_exit",
                 messages=[("user", "one"), ("assistant", "two")])
    make_session(store, "old_b", source="cli", started_at=now - 150 * DAY, end_reason="user_exit",
                 messages=[("user", "three")])
    make_session(store, "busy", source="telegram", started_at=now - 600,
                 messages=[{"role": "user", "content": "still talking", "timestamp": now - 60}])
    store.close()
    prompt = "Delete 2 ended sessions older than 90 days? [y/N] Cancelled.\n"
    assert run("prune", stdin="n\n") == (1, "", prompt)  # (3 messages: far below the bar)
    monkeypatch.setattr(cli, "PRUNE_LOCK_WARN_MESSAGES", 3)
    code, out, err = run("prune", stdin="n\n")
    assert (code, out) == (1, "") and err.endswith(prompt)
    assert err.startswith("⚠ This store was written 1m ago: an agent or a gateway may be writing to it.")
    assert "Pruning 2 sessions (3 messages) is one transaction" in err
    assert "prune in steps (a larger --older-than first)" in err
    # Quiet for longer than the live window (the browser's setting): nothing said.
    writer = SessionDB(home / "state.db")
    try:
        writer._execute_write(lambda conn: (
            conn.execute("UPDATE messages SET timestamp = ?", (now - 3600,)),
            conn.execute("UPDATE sessions SET started_at = ? WHERE id = 'busy'", (now - 7200,)),
        ))
    finally:
        writer.close()
    assert run("prune", stdin="n\n") == (1, "", prompt)


def test_last_write_at_is_the_newest_message_or_session_start(db):
    assert db.last_write_at() is None
    db.create_session("a", "cli")
    started = db.get_session("a")["started_at"]
    assert db.last_write_at() == started
    db.append_message("a", "user", "later")
    assert db.last_write_at() >= started
    assert db.prunable_totals(older_than_days=0) == (0, 0)  # (live: never pruned)


def test_version_prints_the_installed_packages_version(run):
    from importlib.metadata import version

    code, out, err = run("--version")
    assert (code, out, err) == (0, f"hermes-sessions {version('hermes-sessions')}\n", "")
