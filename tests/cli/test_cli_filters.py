"""The one filter option group (CLI-21) as real processes: list, export, archive,
unarchive, pin, prune and delete by filter on generated stores and on upstream's own v16 and
v30 files (written in place: version and sqlite_master unchanged, integrity ok)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_state import SessionDB

REPO = Path(__file__).resolve().parents[2]
DAY = 86400.0


def hermes(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["HERMES_HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("HERMES_SESSIONS_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", *args], input=stdin, capture_output=True,
        text=True, cwd=REPO, env=env, timeout=120,
    )


def listed(home: Path, *flags: str) -> list[str]:
    done = hermes(home, "list", "--limit", "100", *flags)
    assert done.returncode == 0, done.stderr
    if done.stdout.strip() == "No sessions found.":
        return []
    return [line.split()[-1] for line in done.stdout.splitlines()[2:]]


def one_line_error(done: subprocess.CompletedProcess, code: int, *words: str) -> None:
    assert done.returncode == code
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0]


def shape(path: Path) -> tuple:
    conn = sqlite3.connect(path)
    try:
        return (conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0],
                conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall())
    finally:
        conn.close()


def integrity_ok(path: Path) -> None:
    """``PRAGMA integrity_check`` and each full-text index's own ``integrity-check`` (after the
    test's last write: the check itself changes nothing)."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%USING fts5%'")]
        assert tables
        for table in tables:
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    finally:
        conn.close()


def files_of(home: Path) -> tuple[bytes, bytes]:
    """The store's bytes: the file and what its write-ahead log holds (a reader may leave an
    empty log and its index beside it: nothing written)."""
    wal = home / "state.db-wal"
    return (home / "state.db").read_bytes(), wal.read_bytes() if wal.exists() else b""


@pytest.fixture
def made(tmp_path: Path) -> Path:
    """A v30 store (upstream's DDL) with conversations of known age, model and workspace:
    ``week`` (active 2 days ago, gpt-5, /w/app, branch main), ``month`` (20 days ago, sonnet),
    ``old`` (60 days ago, sonnet, ended), ``live`` (started 50 days ago, still open, a message
    today), all cli."""
    from hermes_workload.schema_v30 import create_v30_store

    home = tmp_path / "made"
    db = SessionDB(create_v30_store(home / "state.db"))
    now = time.time()
    try:
        for sid, age, model, ended in (("week", 2, "openai/gpt-5", True), ("month", 20, "claude-sonnet", True),
                                       ("old", 60, "claude-sonnet", True), ("live", 50, "claude-sonnet", False)):
            db.create_session(sid, "cli", model=model)
            db.append_message(sid, "user", f"hello from {sid}")
            db.set_session_title(sid, f"{sid} talk")
            if ended:
                db.end_session(sid, "user_exit")
            db._execute_write(lambda conn, sid=sid, age=age: conn.execute(
                "UPDATE sessions SET started_at = ?, ended_at = CASE WHEN ended_at IS NULL THEN NULL ELSE ? END "
                "WHERE id = ?", (now - age * DAY, now - age * DAY + 60, sid)))
            db._execute_write(lambda conn, sid=sid, age=age: conn.execute(
                "UPDATE messages SET timestamp = ? WHERE session_id = ?", (now - age * DAY + 30, sid)))
        db._execute_write(lambda conn: conn.execute(
            "UPDATE messages SET timestamp = ? WHERE session_id = 'live'", (now - 60,)))
        db._execute_write(lambda conn: conn.execute(
            "UPDATE sessions SET cwd = '/w/app', git_branch = 'main' WHERE id = 'week'"))
    finally:
        db.close()
    return home


@pytest.fixture
def fixture_home(shared_fixtures_dir: Path, tmp_path: Path):
    def make(version: int) -> Path:
        home = tmp_path / f"v{version}"
        home.mkdir()
        shutil.copyfile(shared_fixtures_dir / f"upstream_v{version}.db", home / "state.db")
        return home

    return make


# ---------------------------------------------------------------------------- list


def test_list_since_and_until_by_last_activity_relative_and_absolute(made):
    # (Listed by start, newest first; live started 50 days ago and spoke a minute ago.)
    assert listed(made, "--since", "7d") == ["week", "live"]
    assert listed(made, "--until", "7d") == ["month", "old"]
    assert listed(made, "--since", "30d", "--until", "1w") == ["month"]
    half_an_hour_ago = time.strftime("%Y-%m-%d %H:%M", time.localtime(time.time() - 1800))
    assert listed(made, "--since", half_an_hour_ago) == ["live"]
    assert listed(made, "--until", "2000-01-01") == []


def test_list_other_filters_and_workspace_by_unique_part(made):
    assert listed(made, "--model", "SONNET", "--since", "1y") == ["month", "live", "old"]
    assert listed(made, "--title", "week") == ["week"]
    assert listed(made, "--workspace", "app") == ["week"]
    assert listed(made, "--workspace", "/w/app") == ["week"]
    assert listed(made, "--branch", "mai") == ["week"]
    assert listed(made, "--cwd", "/w") == ["week"]
    assert listed(made, "--end-reason", "user_exit", "--max-messages", "1") == ["week", "month", "old"]


@pytest.mark.parametrize("flags, words", [
    (("--since", "3m"), ("--since", "3min", "3mo")),
    (("--since", "7x"), ("--since", "7x")),
    (("--until", "2026-02-30"), ("--until", "no such day")),
    (("--min-tokens", "many"), ("--min-tokens", "whole number")),
    (("--max-cost", "-1"), ("--max-cost",)),
    (("--since", "1d", "--until", "7d"), ("--until", "earlier than --since")),
])
def test_list_bad_filter_value_is_one_stderr_line_exit_2(made, flags, words):
    one_line_error(hermes(made, "list", *flags), 2, *words)


def test_filter_on_a_column_the_file_lacks_is_refused_by_name(fixture_home):
    home = fixture_home(16)
    one_line_error(hermes(home, "list", "--branch", "main"), 1, "--branch", "git_branch", "schema 16")
    one_line_error(hermes(home, "archive", "--branch", "main", "--yes"), 1, "git_branch")
    assert hermes(home, "list", "--cwd", "/home/u").returncode == 0


def test_list_with_unknown_workspace_says_so(made):
    one_line_error(hermes(made, "list", "--workspace", "nowhere"), 1, "no workspace matches")


# ---------------------------------------------------------------------------- by filter, dry run


@pytest.mark.parametrize("command", ["archive", "unarchive", "pin", "unpin", "delete"])
def test_by_filter_commands_refuse_without_a_filter_and_touch_nothing(made, command):
    before = files_of(made)
    done = hermes(made, command, "--yes")
    assert done.returncode == 2 and done.stdout == ""
    usage, reason = done.stderr.strip().splitlines()[0], done.stderr.strip().splitlines()[-1]
    assert usage.startswith(f"usage: hermes sessions {command}")  # a usage error, as always
    assert "at least one filter" in reason and "Traceback" not in done.stderr
    assert files_of(made) == before


@pytest.mark.parametrize("command", ["archive", "pin", "delete", "prune", "export"])
def test_dry_run_says_what_would_be_touched_and_touches_nothing(made, command):
    before = files_of(made)
    args = [command, "--since", "7d", "--dry-run"]
    if command == "export":
        args.insert(1, str(made / "out.jsonl"))
    done = hermes(made, *args)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].startswith("Would ") and "nothing was" in lines[-1]
    if command == "prune":  # the live conversation is kept, and says so
        assert [line.split()[0] for line in lines[:-1]] == ["week"]
        assert "1 conversation still going on" in done.stderr
    else:
        assert sorted(line.split()[0] for line in lines[:-1]) == ["live", "week"]
    assert files_of(made) == before
    assert not (made / "out.jsonl").exists()


def test_dry_run_names_the_first_twenty_and_how_many_more(tmp_path):
    home = tmp_path / "many"
    db = SessionDB(home / "state.db")
    try:
        for i in range(25):
            db.create_session(f"s{i:02d}", "cli", model="m")
    finally:
        db.close()
    done = hermes(home, "archive", "--model", "m", "--dry-run")
    lines = done.stdout.splitlines()
    assert len(lines) == 22 and lines[20].strip() == "… and 5 more"
    assert lines[21] == "Would archive 25 conversations (25 sessions); nothing was changed."


# ---------------------------------------------------------------------------- by filter, for real


def test_archive_by_filter_asks_with_counts_and_a_no_changes_nothing(made):
    before = files_of(made)
    done = hermes(made, "archive", "--until", "7d", stdin="n\n")
    assert done.returncode == 1 and "Archive 2 conversations (2 sessions)? [y/N]" in done.stderr
    assert "Cancelled." in done.stderr
    assert files_of(made) == before
    done = hermes(made, "archive", "--until", "7d", stdin="y\n")
    assert done.returncode == 0 and done.stdout == "Archived 2 conversations.\n"
    assert listed(made) == ["week", "live"]
    assert listed(made, "--archived") == ["month", "old"]
    assert hermes(made, "unarchive", "--title", "old", "--yes").stdout == "Unarchived 1 conversation.\n"
    assert listed(made, "--archived") == ["month"]


def test_pin_by_filter_puts_them_first_and_unpin_takes_them_off(made):
    assert hermes(made, "pin", "--model", "sonnet", "--until", "7d", "--yes").returncode == 0
    assert listed(made)[:2] == ["month", "old"]
    assert hermes(made, "unpin", "--title", "month", "--yes").stdout == "Unpinned 1 conversation.\n"
    assert listed(made)[0] == "old"


def test_ids_and_filters_together_are_refused(made):
    one_line_error(hermes(made, "archive", "week", "--title", "x"), 2, "not both")
    one_line_error(hermes(made, "delete", "week", "--title", "x"), 2, "not both")


def test_prune_by_filter_keeps_live_and_pinned_and_older_than_still_works_alone(made):
    assert hermes(made, "pin", "old").returncode == 0
    done = hermes(made, "prune", "--model", "sonnet", "--yes")
    assert done.returncode == 0 and done.stdout == "Pruned 1 session(s).\n"
    assert "still going on" in done.stderr and "pinned" in done.stderr
    assert listed(made) == ["old", "week", "live"]
    # --older-than alone: upstream's prune (ended, started more than N days ago).
    done = hermes(made, "prune", "--older-than", "40", "--dry-run")
    assert "Would prune 1 session ended and older than 40 days" in done.stdout


def test_delete_by_filter_goes_through_the_trash(made):
    done = hermes(made, "delete", "--title", "week", "--yes")
    assert done.returncode == 0 and done.stdout == "Deleted 1 conversation (1 session).\n"
    assert "trash" in done.stderr
    assert "week" not in listed(made)
    assert hermes(made, "restore", "week").returncode == 0
    assert "week" in listed(made)


def test_export_by_filter_writes_only_the_chosen_conversations(made):
    out = made / "out.jsonl"
    done = hermes(made, "export", str(out), "--since", "7d")
    assert done.returncode == 0, done.stderr
    import json

    ids = {json.loads(line)["id"] for line in out.read_text().splitlines()}
    assert ids == {"live", "week"}
    none = hermes(made, "export", str(made / "none.jsonl"), "--title", "nothing-like-this")
    assert none.returncode == 0 and "nothing was exported" in none.stderr
    assert not (made / "none.jsonl").exists()


# ---------------------------------------------------------------------------- upstream's files


@pytest.mark.parametrize("version, flags, expected", [
    (30, ("--source", "telegram"), 2),
    (30, ("--cwd", "/home/u"), 1),
    (16, ("--end-reason", "user_exit"), 2),
    (16, ("--until", "2026-06-01"), None),
])
def test_archive_by_filter_on_upstream_files_writes_in_place(fixture_home, version, flags, expected):
    home = fixture_home(version)
    path = home / "state.db"
    before = shape(path)
    dry = hermes(home, "archive", *flags, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    count = int(dry.stdout.splitlines()[-1].split()[2])
    if expected is not None:
        assert count == expected
    done = hermes(home, "archive", *flags, "--yes")
    assert done.returncode == 0, done.stderr
    assert shape(path) == before
    integrity_ok(path)
    assert hermes(home, "archive", *flags, "--dry-run").stdout.splitlines()[-1].split()[2] == "0"


def test_prune_and_delete_by_filter_on_upstream_files_keep_their_shape(fixture_home):
    for version in (16, 30):
        home = fixture_home(version)
        path = home / "state.db"
        before = shape(path)
        assert hermes(home, "prune", "--end-reason", "user_exit", "--yes").returncode == 0
        assert hermes(home, "delete", "--source", "cron", "--yes").returncode == 0
        assert shape(path) == before
        integrity_ok(path)
        assert listed(home, "--source", "cron") == []


def test_help_of_each_command_lists_the_filters(made):
    for command in ("list", "export", "archive", "unarchive", "pin", "unpin", "prune", "delete"):
        text = hermes(made, command, "--help").stdout
        for flag in ("--since", "--until", "--title", "--model", "--provider", "--cwd", "--workspace",
                     "--branch", "--end-reason", "--min-messages", "--max-messages", "--min-tokens",
                     "--max-tokens", "--min-cost", "--max-cost", "--min-tool-calls", "--max-tool-calls",
                     "--source"):
            assert flag in text, (command, flag)


def test_readme_command_line_section_names_every_option_of_the_commands_by_filter():
    from hermes_tui.cli import build_parser

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Command line"):readme.index("## Layout")]
    parser = build_parser()
    sessions = parser._subparsers._group_actions[0].choices["sessions"]  # (argparse has no public walk)
    actions = sessions._subparsers._group_actions[0].choices
    missing = []
    for command in ("list", "export", "archive", "unarchive", "pin", "unpin", "prune", "delete"):
        for action in actions[command]._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help" and flag not in section:
                    missing.append(f"{command} {flag}")
    assert missing == []


def test_a_conversation_is_taken_whole_its_chain_and_its_delegate_runs(fixture_home):
    home = fixture_home(30)
    path = home / "state.db"
    dry = hermes(home, "delete", "--cwd", "/home/u", "--dry-run")
    assert dry.stdout.splitlines()[0].split()[0] == "20260921_090000_s1" and "(+1 session)" in dry.stdout
    done = hermes(home, "delete", "--cwd", "/home/u", "--yes")
    assert done.returncode == 0 and done.stdout == "Deleted 1 conversation (2 sessions).\n"
    conn = sqlite3.connect(path)
    try:
        left = {row[0] for row in conn.execute("SELECT id FROM sessions")}
    finally:
        conn.close()
    assert not {"20260921_090000_s1", "20260921_090500_d1"} & left  # the delegate run went with it
    chain = hermes(home, "archive", "--title", "release prep", "--source", "cli", "--dry-run")
    assert "20260921_120000_c1" in chain.stdout and "(+2 sessions)" in chain.stdout
    integrity_ok(path)


def test_a_dry_run_on_an_old_store_neither_migrates_nor_writes_it(fixture_home):
    home = fixture_home(5)
    (home / "state.db").chmod(0o644)
    before = files_of(home)
    for command in ("prune", "delete", "pin", "export"):
        args = [command, "--title", "travel", "--dry-run"]
        if command == "export":
            args.insert(1, "-")
        done = hermes(home, *args)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1].startswith("Would ")
    assert files_of(home) == before
    # (the store's own warning about its age comes first, as for every command)
    done = hermes(home, "list", "--cwd", "/tmp")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == "Error: --cwd cannot be applied: this store (schema 5) has no cwd column."


def test_a_dry_run_of_one_session_lists_that_session_not_the_whole_store(made):
    """``export --session-id ID --dry-run`` listed every conversation of the store (it took
    the dry run for one of the filters), while the same export writes one session."""
    before = files_of(made)
    done = hermes(made, "export", "-", "--session-id", "month", "--dry-run")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["month"]
    assert lines[-1] == "Would export 1 session; nothing was written."
    assert files_of(made) == before


def test_a_dry_run_of_one_session_with_lineage_lists_its_whole_chain(made):
    db = SessionDB(made / "state.db")
    try:
        db.create_session("root", "cli")
        db.append_message("root", "user", "first part")
        db.end_session("root", "compression")
        db.create_session("tip", "cli", parent_session_id="root")
        db.append_message("tip", "user", "second part")
    finally:
        db.close()
    done = hermes(made, "export", "-", "--session-id", "tip", "--lineage", "--dry-run")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["root", "tip"]
    assert lines[-1] == "Would export 2 sessions; nothing was written."
    written = hermes(made, "export", "-", "--session-id", "tip", "--lineage")
    assert len(written.stdout.splitlines()) == 2  # (the export writes what the dry run listed)
