"""``list``'s "N archived" hint names the profile the run read (PF-7), as a person runs it:
real processes on a Hermes root with real stores. Typed later, the printed command may run
where Hermes chooses then (another sticky ``hermes profile use``), so it names a profile given
with ``-p``, one Hermes chose through the sticky ``active_profile``, and ``--all-profiles``;
run as printed, it lists the archived sessions the hint counted."""

from __future__ import annotations

import shlex
from pathlib import Path

from hermes_state import SessionDB

from process_helpers import beside
from process_helpers import hermes as run_hermes


def hermes(root: Path, *args: str):
    return run_hermes(root, *args, stdin=None, extra_env=beside(root))


def root_with_work_archived(tmp_path: Path) -> Path:
    """A root whose default store holds one listed session and whose profile ``work`` holds
    one session, archived."""
    root = tmp_path / "hermes-root"
    for home, session_id in ((root, "d1"), (root / "profiles" / "work", "w1")):
        home.mkdir(parents=True)
        db = SessionDB(home / "state.db")
        try:
            db.create_session(session_id, "cli")
            db.append_message(session_id, "user", f"the words of {session_id}")
        finally:
            db.close()
    archived = hermes(root, "archive", "w1", "-p", "work")
    assert archived.returncode == 0, archived.stderr
    return root


def hint(stderr: str) -> str:
    """The command the hint prints."""
    line = next(line for line in stderr.splitlines() if "archived:" in line)
    return line[line.index("hermes sessions list"):].removesuffix(")")


def run_printed(root: Path, command: str):
    words = shlex.split(command)
    assert words[:3] == ["hermes", "sessions", "list"], command
    return hermes(root, *words[2:])


def test_a_sticky_profile_is_named_in_the_hint_and_the_printed_command_lists_its_archive(tmp_path):
    root = root_with_work_archived(tmp_path)
    (root / "active_profile").write_text("work\n")
    result = hermes(root, "list")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "No sessions found.\n"
    command = hint(result.stderr)
    assert command == "hermes sessions list -p work --archived"
    # Typed later, with the sticky profile back to the default: still work's archive.
    (root / "active_profile").write_text("default\n")
    again = run_printed(root, command)
    assert again.returncode == 0, again.stderr
    assert "w1" in again.stdout and "d1" not in again.stdout


def test_a_profile_named_with_p_is_named_as_hermes_spells_it(tmp_path):
    root = root_with_work_archived(tmp_path)
    result = hermes(root, "list", "-p", " Work ", "--source", "cli")
    assert result.returncode == 0, result.stderr
    assert hint(result.stderr) == "hermes sessions list -p work --source cli --archived"


def test_across_profiles_the_hint_says_all_profiles(tmp_path):
    root = root_with_work_archived(tmp_path)
    hermes(root, "archive", "d1")
    result = hermes(root, "list", "--all-profiles")
    assert result.returncode == 0, result.stderr
    command = hint(result.stderr)
    assert command == "hermes sessions list --all-profiles --archived"
    again = run_printed(root, command)
    assert "w1" in again.stdout and "d1" in again.stdout


def test_the_default_profile_named_by_nothing_is_not_named(tmp_path):
    root = root_with_work_archived(tmp_path)
    hermes(root, "archive", "d1")
    result = hermes(root, "list")
    assert hint(result.stderr) == "hermes sessions list --archived"
