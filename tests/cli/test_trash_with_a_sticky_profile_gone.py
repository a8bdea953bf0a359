"""``trash`` and ``restore`` when the sticky ``active_profile`` names a profile that is gone
(``hermes profile use work`` and then ``hermes profile delete work``), as a person runs them:
real processes on a Hermes root with real stores. The trash is one per user and each entry
records its store (PF-7), so neither needs the run's profile: both work, and a restore
writes the store the session was deleted from and no other. Every other command still
refuses in one line naming the profiles there are (PF-1)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from hermes_state import SessionDB

from process_helpers import beside
from process_helpers import hermes as run_hermes


def _store(path: Path, *ids: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = SessionDB(path)
    try:
        for session_id in ids:
            db.create_session(session_id, "cli")
            db.append_message(session_id, "user", f"the words of {session_id}")
    finally:
        db.close()


def hermes(root: Path, *args: str):
    return run_hermes(root, *args, stdin=None, extra_env=beside(root))


def ids_of(path: Path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM sessions")}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def root_with_deletes(tmp_path: Path) -> Path:
    """A root whose default store and profile ``coder`` each had a session deleted into the
    trash, and whose sticky profile is then one that is gone."""
    root = tmp_path / "hermes-root"
    _store(root / "state.db", "d1", "d2")
    _store(root / "profiles" / "coder" / "state.db", "c1", "c2")
    assert hermes(root, "delete", "d1", "--yes").returncode == 0
    assert hermes(root, "delete", "c1", "--yes", "-p", "coder").returncode == 0
    (root / "active_profile").write_text("work\n")  # (profiles/work was never there, or deleted)
    return root


def test_trash_lists_every_profiles_entries_with_the_profile_each_goes_back_into(tmp_path):
    root = root_with_deletes(tmp_path)
    result = hermes(root, "trash")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    rows = {line.split()[-2]: line.split()[-3] for line in result.stdout.splitlines() if " d1 " in line or " c1 " in line}
    # (the run has no profile of its own: each entry's is named)
    assert result.stdout.splitlines()[0].split()[3] == "Profile"
    assert rows == {"d1": "default", "c1": "coder"}, result.stdout


def test_trash_json_names_each_entrys_profile(tmp_path):
    root = root_with_deletes(tmp_path)
    result = hermes(root, "trash", "--json")
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)["entries"]
    assert {e["session_id"]: e["profile"] for e in entries} == {"d1": "default", "c1": "coder"}


def test_restore_puts_each_session_back_into_the_store_it_was_deleted_from_and_no_other(tmp_path):
    root = root_with_deletes(tmp_path)
    default, coder = root / "state.db", root / "profiles" / "coder" / "state.db"
    before = digest(default)
    result = hermes(root, "restore", "c1")
    assert result.returncode == 0, result.stderr
    assert ids_of(coder) == {"c1", "c2"}
    assert digest(default) == before
    assert "into profile 'coder'" in result.stderr
    result = hermes(root, "restore", "d1")
    assert result.returncode == 0, result.stderr
    assert ids_of(default) == {"d1", "d2"}
    assert hermes(root, "trash", "--json").stdout.count('"session_id"') == 0


def test_a_profile_named_that_is_not_there_is_still_refused(tmp_path):
    root = root_with_deletes(tmp_path)
    result = hermes(root, "restore", "c1", "-p", "nope")
    assert result.returncode == 1 and "no profile 'nope'" in result.stderr
    assert result.stderr.count("\n") == 1


def test_the_commands_that_need_the_runs_store_still_refuse_in_one_line(tmp_path):
    root = root_with_deletes(tmp_path)
    for args in (["list"], ["stats"], ["search", "words"], ["delete", "d2", "--yes"]):
        result = hermes(root, *args)
        assert result.returncode == 1, (args, result.stdout)
        assert "active profile 'work'" in result.stderr and result.stderr.count("\n") == 1, (args, result.stderr)
    assert ids_of(root / "state.db") == {"d2"}
