"""``list``'s "N archived" hint after a run with filters prints the run's own options, each
quoted for a shell, so the line pasted as printed lists the archived conversations it
counted (it printed ``… (the same filters)``, which no shell runs)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_tui.cli import main


@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> Path:
    """A store with a conversation titled "my taxes 2025" and one titled "holiday plans",
    both archived, and one listed conversation about something else."""
    home = tmp_path / "hermes"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    db = SessionDB(home / "state.db")
    try:
        for session_id, title in (("s-taxes", "my taxes 2025"), ("s-plans", "holiday plans"),
                                  ("s-other", "garden")):
            db.create_session(session_id, "cli", cwd=str(home / "projects" / session_id))
            db.append_message(session_id, "user", f"the words of {session_id}")
            db.set_session_title(session_id, title)
    finally:
        db.close()
    for session_id in ("s-taxes", "s-plans"):
        assert main(["sessions", "archive", session_id]) == 0
    return home


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def printed_command(err: str) -> str:
    line = next(line for line in err.splitlines() if "archived:" in line)
    return line[line.index("hermes sessions list"):].removesuffix(")")


@pytest.mark.parametrize("options, listed, not_listed", [
    (["--title", "my taxes"], "s-taxes", "s-plans"),  # a value with a space: quoted
    (["--title", "holiday", "--source", "cli", "--min-messages", "1"], "s-plans", "s-taxes"),
])
def test_the_printed_command_runs_as_printed_and_lists_the_archived_ones(capsys, home, options, listed, not_listed):
    capsys.readouterr()
    code, out, err = run(capsys, "sessions", "list", *options)
    assert (code, out) == (0, "No sessions found.\n")
    command = printed_command(err)
    assert "…" not in command and "same filters" not in command
    words = shlex.split(command)
    assert words[0] == "hermes" and words[-1] == "--archived"
    code, out, err = run(capsys, *words[1:])
    assert (code, err) == (0, "")
    assert listed in out and not_listed not in out and "s-other" not in out


def test_a_value_that_starts_with_a_dash_is_printed_so_argparse_reads_it_as_a_value(capsys, home):
    db = SessionDB(home / "state.db")
    try:
        db.set_session_title("s-plans", "-draft plans")
    finally:
        db.close()
    capsys.readouterr()
    code, out, err = run(capsys, "sessions", "list", "--title=-draft")
    assert (code, out) == (0, "No sessions found.\n")
    command = printed_command(err)
    code, out, err = run(capsys, *shlex.split(command)[1:])
    assert (code, err) == (0, "")
    assert "s-plans" in out and "s-taxes" not in out


def test_without_filters_the_command_has_no_options_but_archived(capsys, home):
    assert run(capsys, "sessions", "archive", "s-other")[0] == 0
    code, out, err = run(capsys, "sessions", "list")
    assert (code, out) == (0, "No sessions found.\n")
    assert printed_command(err) == "hermes sessions list --archived"


def test_a_relative_cwd_is_printed_as_the_directory_it_meant(capsys, home, monkeypatch):
    """``--cwd .`` read in one directory; the printed command typed later in another still
    means the first."""
    (home / "projects" / "s-plans").mkdir(parents=True)
    monkeypatch.chdir(home / "projects" / "s-plans")
    capsys.readouterr()
    code, out, err = run(capsys, "sessions", "list", "--cwd", ".")
    assert (code, out) == (0, "No sessions found.\n")
    command = printed_command(err)
    monkeypatch.chdir(home)
    code, out, err = run(capsys, *shlex.split(command)[1:])
    assert (code, err) == (0, "")
    assert "s-plans" in out and "s-taxes" not in out
