"""The shell contract, command by command, in real processes with stdout and stderr kept apart.

stdout carries what a command produces (a listing, figures, exported data, the one line saying
what a write did) and nothing else; every error, warning, hint and prompt goes to stderr. Each
case below is an error: its stdout must be empty, its stderr says why in few lines, never a
traceback, and the exit status is not 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_state import SessionDB

REPO = Path(__file__).resolve().parents[2]
IDS = ("20250305_091523_a1b2c3", "20250305_101500_f00d1234", "20250306_080000_c0ffee")


def hermes(home: Path, *args: str, stdin: str = "", cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = dict(os.environ, HERMES_HOME=str(home), PYTHONPATH=str(REPO))
    env.pop("HERMES_SESSIONS_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "hermes_tui.cli", *args], input=stdin,
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def fill(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    db = SessionDB(home / "state.db")
    try:
        for n, session_id in enumerate(IDS):
            db.create_session(session_id, "telegram" if n == 1 else "cli")
            db.append_message(session_id, "user", f"question {n}: how do I deploy the \x1b[31mapp\x1b[0m?")
            db.append_message(session_id, "assistant", f"answer {n}")
        db.set_session_title(IDS[0], "deploy notes")
        db.set_session_title(IDS[2], "taken")
        db.end_session(IDS[2], "user_exit")
    finally:
        db.close()


@pytest.fixture
def home(tmp_path) -> Path:
    path = tmp_path / "home"
    fill(path)
    return path


#: (case name, argv after `sessions`) of commands that fail on the filled store.
FAILING = [
    ("list-bad-option", ["list", "--bogus"]),
    ("list-limit-zero", ["list", "--limit", "0"]),
    ("list-limit-negative", ["list", "--limit", "-3"]),
    ("browse-limit-zero", ["browse", "--plain", "--limit", "0"]),
    ("export-unknown-id", ["export", "-", "--session-id", "nope"]),
    ("export-ambiguous-id", ["export", "-", "--session-id", "2025030"]),
    ("export-empty-id", ["export", "OUT", "--session-id", ""]),
    ("export-unwritable", ["export", "NOWHERE"]),
    ("export-bad-format", ["export", "OUT", "--format", "pdf"]),
    ("import-missing-file", ["import", "MISSING"]),
    ("delete-unknown-id", ["delete", "nope", "--yes"]),
    ("delete-ambiguous-id", ["delete", "2025030", "--yes"]),
    ("delete-declined", ["delete", IDS[0]]),
    ("rename-unknown-id", ["rename", "nope", "title"]),
    ("rename-empty-id", ["rename", " ", "title"]),
    ("rename-title-in-use", ["rename", IDS[0], "taken"]),
    ("rename-title-too-long", ["rename", IDS[0], "x" * 101]),
    ("archive-unknown-id", ["archive", "nope"]),
    ("unarchive-ambiguous-id", ["unarchive", "2025030"]),
    ("pin-unknown-id", ["pin", "nope"]),
    ("unpin-empty-id", ["unpin", ""]),
    ("restore-not-in-trash", ["restore", "nope"]),
    ("restore-empty-id", ["restore", " "]),
    ("prune-declined", ["prune", "--older-than", "0"]),
    ("prune-bad-days", ["prune", "--older-than", "soon"]),
    ("stats-extra-argument", ["stats", "extra"]),
    ("unknown-action", ["frobnicate"]),
    ("missing-action", []),
    ("simulate-bad-writers", ["simulate", "--writers", "0"]),
    ("generate-over-existing-store", ["generate", "--size", "600", "--home", "HOME"]),
]


def _argv(argv: list[str], home: Path, tmp_path: Path) -> list[str]:
    swap = {"OUT": str(tmp_path / "out.jsonl"), "NOWHERE": str(tmp_path / "no" / "such" / "out.jsonl"),
            "MISSING": str(tmp_path / "missing.jsonl"), "HOME": str(home)}
    return [swap.get(arg, arg) for arg in argv]


@pytest.mark.parametrize("argv", [argv for _name, argv in FAILING], ids=[name for name, _argv in FAILING])
def test_each_commands_errors_go_to_stderr_alone(home, tmp_path, argv):
    result = hermes(home, "sessions", *_argv(argv, home, tmp_path), stdin="n\n")
    assert result.returncode != 0, result
    assert result.stdout == "", result.stdout
    assert result.stderr.strip(), "an error says why"
    assert "Traceback" not in result.stderr
    assert "\x1b" not in result.stderr  # no terminal control from the data it names


@pytest.mark.parametrize("argv", [["list"], ["stats"], ["export", "-"], ["trash"], ["rename", IDS[0], "x"],
                                  ["archive", IDS[0]], ["delete", IDS[0], "--yes"], ["prune", "--yes"],
                                  ["import", "MISSING"]], ids=lambda a: a[0])
def test_a_missing_store_is_one_line_on_stderr(tmp_path, argv):
    empty = tmp_path / "empty-home"
    empty.mkdir()
    result = hermes(empty, "sessions", *_argv(argv, empty, tmp_path))
    if argv == ["trash"]:  # (the trash is not the store: an empty trash is a listing)
        assert result.returncode == 0 and result.stderr == ""
        return
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")


def test_an_unreadable_store_is_one_line_on_stderr(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "state.db").write_bytes(b"this is not a database, it is notes.txt\n" * 200)
    for argv in (["list"], ["stats"], ["export", "-"], ["browse", "--plain"], ["rename", IDS[0], "x"]):
        result = hermes(home, "sessions", *argv)
        assert (result.returncode, result.stdout) == (1, ""), argv
        assert result.stderr.count("\n") == 1 and "not a SQLite database" in result.stderr, argv


# ---------------------------------------------------------------------------- --source, --limit


def test_an_unknown_source_is_a_warning_naming_the_known_ones(home, tmp_path):
    warning = "Warning: no session has source 'telegarm'; sources in this store: cli, telegram\n"
    listed = hermes(home, "sessions", "list", "--source", "telegarm")
    assert (listed.returncode, listed.stdout, listed.stderr) == (0, "No sessions found.\n", warning)
    out = tmp_path / "out.jsonl"
    exported = hermes(home, "sessions", "export", str(out), "--source", "telegarm")
    assert exported.returncode == 0 and exported.stderr == warning
    assert exported.stdout == f"Exported 0 sessions to {out}\n" and out.read_text() == ""
    to_stdout = hermes(home, "sessions", "export", "-", "--source", "telegarm")
    assert (to_stdout.returncode, to_stdout.stdout, to_stdout.stderr) == (0, "", warning)
    pruned = hermes(home, "sessions", "prune", "--dry-run", "--source", "telegarm")
    assert pruned.returncode == 0 and pruned.stderr == warning
    # A known source says nothing more than before.
    known = hermes(home, "sessions", "list", "--source", "telegram")
    assert known.returncode == 0 and known.stderr == "" and IDS[1] in known.stdout


def test_a_limit_must_be_one_or_more(home):
    for argv in (["list", "--limit", "0"], ["list", "--limit", "-1"], ["browse", "--plain", "--limit", "0"]):
        result = hermes(home, "sessions", *argv)
        assert (result.returncode, result.stdout) == (2, ""), argv
        assert f"--limit: must be 1 or more: '{argv[-1]}'" in result.stderr
    one = hermes(home, "sessions", "list", "--limit", "1")
    assert one.returncode == 0 and len(one.stdout.splitlines()) == 3  # header, rule, one row


# ---------------------------------------------------------------------------- moving to a new machine


def test_export_then_import_into_an_empty_home_moves_the_history(home, tmp_path):
    """The way to a new machine: export here, import there, where no state.db exists yet."""
    backup = tmp_path / "history.jsonl"
    exported = hermes(home, "sessions", "export", str(backup))
    assert exported.returncode == 0 and exported.stdout == f"Exported 3 sessions to {backup}\n"
    new_home = tmp_path / "new-machine" / ".hermes"  # not even the directory exists
    imported = hermes(new_home, "sessions", "import", str(backup))
    assert (imported.returncode, imported.stderr) == (0, "")
    assert imported.stdout == "Imported 3 sessions, 6 messages.\n"
    assert (new_home / "state.db").is_file()
    again = tmp_path / "again.jsonl"
    assert hermes(new_home, "sessions", "export", str(again)).returncode == 0

    def by_id(path: Path) -> dict:
        return {row["id"]: row for row in map(json.loads, path.read_text().splitlines())}

    assert by_id(again) == by_id(backup)
    assert hermes(new_home, "sessions", "list").stdout == hermes(home, "sessions", "list").stdout


def test_import_from_stdin_creates_the_store_too(home, tmp_path):
    data = hermes(home, "sessions", "export", "-", "--session-id", IDS[0]).stdout
    new_home = tmp_path / "fresh"
    imported = hermes(new_home, "sessions", "import", "-", stdin=data)
    assert (imported.returncode, imported.stdout, imported.stderr) == (0, "Imported 1 session, 2 messages.\n", "")


def test_import_into_a_home_that_is_a_file_creates_nothing(home, tmp_path):
    backup = tmp_path / "history.jsonl"
    assert hermes(home, "sessions", "export", str(backup)).returncode == 0
    not_a_dir = tmp_path / "home-file"
    not_a_dir.write_text("x")
    result = hermes(not_a_dir, "sessions", "import", str(backup))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.count("\n") == 1 and "is a file, not a directory" in result.stderr
    assert not_a_dir.read_text() == "x"


# ---------------------------------------------------------------------------- texts


def test_help_says_the_trash_holds_every_delete(home):
    helped = hermes(home, "sessions", "--help")
    assert helped.returncode == 0
    trash_line = next(line for line in helped.stdout.splitlines() if line.strip().startswith("trash"))
    assert "deleted in the browser" not in trash_line
    assert "delete" in trash_line and "browser" in trash_line and "7 days" in trash_line


def test_stats_says_one_session_not_one_sessions(home):
    stats = hermes(home, "sessions", "stats")
    assert stats.returncode == 0
    assert "  telegram: 1 session\n" in stats.stdout and "  cli: 2 sessions\n" in stats.stdout
