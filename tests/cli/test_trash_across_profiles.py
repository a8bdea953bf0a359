"""The trash across Hermes profiles (PF-7), as a person runs it: real processes on a Hermes root
whose default store and profiles are copies of upstream's stores (v30 upgraded, v30, v16) plus
a profile whose store is garbage. The trash is one per user, the stores one per profile, and
session ids collide across profiles (the upgraded default store holds every id of ``old``):
a restore goes back into the store the session was deleted from -- or is refused, naming the
command that does -- and never into another profile's. After every write each store is
checked: the others unchanged byte for byte, the written one sound."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

from test_cli_profiles import READABLE, digest, ids_of, integrity, store

REPO = Path(__file__).resolve().parents[2]

#: "meeting notes": in ``old`` and, under the same id, in the default store.
MEETING = "20260528_130000_ee0001"
#: Only in ``coder``.
ROTATION = "20260921_140000_r1"


def hermes(root: Path, *args: str, home: Path | None = None):
    """``hermes sessions ARGS`` with ``HERMES_HOME`` at ``home`` (default: the root); the
    trash, config and cache beside the root, the same for every run of a test."""
    env = dict(os.environ)
    env["HERMES_HOME"] = str(home or root)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("HERMES_SESSIONS_DEBUG", None)
    env["HERMES_SESSIONS_DATA_DIR"] = str(root.parent / "data")
    env["HERMES_SESSIONS_CACHE_DIR"] = str(root.parent / "cache")
    env["HERMES_SESSIONS_CONFIG_DIR"] = str(root.parent / "config")
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", *args],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=120,
    )


def run_printed(root: Path, command: str):
    """Run a ``hermes sessions …`` command exactly as this program printed it (``VAR=value``
    words before it set the environment, as a shell would)."""
    words = shlex.split(command)
    env_words = {}
    while words and "=" in words[0] and not words[0].startswith("-"):
        name, _sep, value = words.pop(0).partition("=")
        env_words[name] = value
    assert words[:2] == ["hermes", "sessions"], command
    home = Path(env_words.pop("HERMES_HOME")) if "HERMES_HOME" in env_words else None
    assert not env_words, command
    return hermes(root, *words[2:], home=home)


def digests(root: Path, *names: str) -> dict[str, str]:
    return {name: digest(store(root, name)) for name in names}


def sound(root: Path) -> None:
    for name in READABLE:
        assert integrity(store(root, name)) == "ok", name


def messages_of(path: Path, session_id: str) -> int:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,)).fetchone()[0]


def restore_line(stderr: str) -> str:
    """The restore command a delete printed on stderr."""
    line = next(line for line in stderr.splitlines() if "hermes sessions restore" in line)
    return line[line.index("hermes sessions restore"):]


def test_a_session_deleted_from_a_profile_comes_back_into_that_profiles_store_alone(profiles_home):
    old = store(profiles_home, "old")
    transcript = old.parent / "sessions" / f"{MEETING}.jsonl"
    transcript.parent.mkdir()
    transcript.write_text('{"role": "user"}\n')
    messages = messages_of(old, MEETING)
    deleted = hermes(profiles_home, "delete", "-p", "old", MEETING, "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert MEETING not in ids_of(old) and not transcript.exists()
    # The way back it prints names the profile (the same id is in the default store too).
    printed = restore_line(deleted.stderr)
    assert printed == f"hermes sessions restore -p old {MEETING}"
    others = digests(profiles_home, "default", "coder", "broken")
    # Without the profile too: the trash knows which store the session was deleted from.
    restored = hermes(profiles_home, "restore", MEETING)
    assert restored.returncode == 0, restored.stderr
    assert "Restored 'meeting notes'" in restored.stdout
    assert "profile 'old'" in restored.stderr
    assert messages_of(old, MEETING) == messages and transcript.exists()
    assert digests(profiles_home, "default", "coder", "broken") == others
    sound(profiles_home)


def test_the_restore_command_a_delete_prints_works_as_printed(profiles_home):
    deleted = hermes(profiles_home, "delete", "--profile", "coder", ROTATION, "--yes")
    assert deleted.returncode == 0, deleted.stderr
    others = digests(profiles_home, "default", "old", "broken")
    restored = run_printed(profiles_home, restore_line(deleted.stderr))
    assert restored.returncode == 0, restored.stderr
    assert ROTATION in ids_of(store(profiles_home, "coder"))
    assert digests(profiles_home, "default", "old", "broken") == others
    sound(profiles_home)


def test_a_delete_by_filter_in_a_profile_names_that_profiles_trash(profiles_home):
    others = digests(profiles_home, "default", "coder", "broken")
    deleted = hermes(profiles_home, "delete", "-p", "old", "--title", "meeting notes", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert "Kept 7 days in the trash: hermes sessions trash -p old" in deleted.stderr
    listed = run_printed(profiles_home, "hermes sessions trash -p old")
    assert MEETING in listed.stdout
    assert digests(profiles_home, "default", "coder", "broken") == others


def test_trash_names_the_profile_each_entry_goes_back_into(profiles_home):
    assert hermes(profiles_home, "delete", "-p", "old", MEETING, "--yes").returncode == 0
    assert hermes(profiles_home, "delete", "-p", "coder", ROTATION, "--yes").returncode == 0
    listing = hermes(profiles_home, "trash")
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert "Profile" in lines[0].split()
    for session_id, profile in ((MEETING, "old"), (ROTATION, "coder")):
        cells = next(line for line in lines if session_id in line).split()
        assert cells[cells.index(session_id) - 1] == profile  # (the profile column, before the id)
    # Nothing says a restore would go anywhere but where each was deleted from.
    assert "restore puts it into" not in listing.stdout and " *" not in listing.stdout
    # One profile's trash: its entries alone.
    only_old = hermes(profiles_home, "trash", "-p", "old")
    assert MEETING in only_old.stdout and ROTATION not in only_old.stdout
    document = json.loads(hermes(profiles_home, "trash", "--json").stdout)
    profiles = {entry["session_id"]: entry["profile"] for entry in document["entries"]}
    assert profiles == {MEETING: "old", ROTATION: "coder"}
    assert {entry["session_id"] for entry in document["entries"] if entry["other_store"]} == {MEETING, ROTATION}


def test_an_id_deleted_from_two_profiles_is_restored_only_with_its_profile_named(profiles_home):
    assert hermes(profiles_home, "delete", "-p", "old", MEETING, "--yes").returncode == 0
    assert hermes(profiles_home, "delete", MEETING, "--yes").returncode == 0  # (the default's)
    before = digests(profiles_home, "default", "old", "coder", "broken")
    refused = hermes(profiles_home, "restore", MEETING)
    assert refused.returncode == 1 and refused.stdout == ""
    assert "Traceback" not in refused.stderr
    assert f"hermes sessions restore -p default {MEETING}" in refused.stderr
    assert f"hermes sessions restore -p old {MEETING}" in refused.stderr
    assert digests(profiles_home, "default", "old", "coder", "broken") == before
    into_old = hermes(profiles_home, "restore", "-p", "old", MEETING)
    assert into_old.returncode == 0, into_old.stderr
    assert MEETING in ids_of(store(profiles_home, "old")) and MEETING not in ids_of(store(profiles_home, "default"))
    # One entry left, of one profile: the id alone brings it back there.
    into_default = hermes(profiles_home, "restore", MEETING)
    assert into_default.returncode == 0, into_default.stderr
    assert MEETING in ids_of(store(profiles_home, "default"))
    sound(profiles_home)


def test_restore_into_another_profile_than_the_one_it_was_deleted_from_is_refused(profiles_home):
    assert hermes(profiles_home, "delete", "-p", "coder", ROTATION, "--yes").returncode == 0
    before = digests(profiles_home, "default", "old", "coder", "broken")
    refused = hermes(profiles_home, "restore", "-p", "old", ROTATION)
    assert refused.returncode == 1 and refused.stdout == "" and "Traceback" not in refused.stderr
    assert "profile 'coder'" in refused.stderr
    assert f"hermes sessions restore -p coder {ROTATION}" in refused.stderr
    assert digests(profiles_home, "default", "old", "coder", "broken") == before
    kept = json.loads(hermes(profiles_home, "trash", "--json").stdout)["entries"]
    assert [(e["session_id"], e["profile"]) for e in kept] == [(ROTATION, "coder")]  # (still there)


def test_an_entry_from_a_store_of_no_profile_here_is_restored_only_where_named(profiles_home, tmp_path):
    # A session deleted under a HERMES_HOME outside this root (another machine's layout, a
    # container's /opt/data): no profile here is its store.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "state.db").write_bytes(store(profiles_home, "coder").read_bytes())
    assert hermes(profiles_home, "delete", ROTATION, "--yes", home=elsewhere).returncode == 0
    before = digests(profiles_home, "default", "old", "coder", "broken")
    listing = hermes(profiles_home, "trash")
    assert str(elsewhere / "state.db") in listing.stdout
    refused = hermes(profiles_home, "restore", ROTATION)
    assert refused.returncode == 1 and refused.stdout == "" and "Traceback" not in refused.stderr
    assert digests(profiles_home, "default", "old", "coder", "broken") == before
    # It says the command that puts it back where it was deleted from, and that works.
    command = next(line for line in refused.stderr.splitlines() if "HERMES_HOME=" in line)
    command = command[command.index("HERMES_HOME="):].split(";")[0]
    restored = run_printed(profiles_home, command)
    assert restored.returncode == 0, restored.stderr
    assert ROTATION in ids_of(elsewhere / "state.db")
    assert digests(profiles_home, "default", "old", "coder", "broken") == before
    sound(profiles_home)


def test_an_entry_from_a_store_of_no_profile_here_goes_into_the_profile_named(profiles_home, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "state.db").write_bytes(store(profiles_home, "old").read_bytes())
    assert hermes(profiles_home, "delete", "20260528_140000_ff0001", "--yes", home=elsewhere).returncode == 0
    # (the id is in the default store too: its own store, chosen by name, is what restores it)
    assert hermes(profiles_home, "delete", "-p", "old", "20260528_140000_ff0001", "--yes").returncode == 0
    into_old = hermes(profiles_home, "restore", "-p", "old", "20260528_140000_ff0001")
    assert into_old.returncode == 0, into_old.stderr
    assert "20260528_140000_ff0001" in ids_of(store(profiles_home, "old"))
    # What is left is the other root's entry; named into a profile, it goes there (said so).
    before = digests(profiles_home, "default", "old", "broken")
    moved = hermes(profiles_home, "restore", "-p", "coder", "20260528_140000_ff0001")
    assert moved.returncode == 0, moved.stderr
    assert str(elsewhere / "state.db") in moved.stderr and "profile 'coder'" in moved.stderr
    assert "20260528_140000_ff0001" in ids_of(store(profiles_home, "coder"))
    assert digests(profiles_home, "default", "old", "broken") == before
    sound(profiles_home)


def test_a_child_restored_in_one_profile_never_relinks_a_session_of_another(profiles_home):
    """A child restored while its parent is in the trash leaves the link in the parent's
    entry, so that restoring the parent later re-links it: in the entry of the parent deleted
    from the child's own store, not in that of a session of the same id in another profile."""
    child = "20260528_131000_ee0002"  # "meeting notes"' continuation, in both stores
    default = store(profiles_home, "default")
    with sqlite3.connect(default) as conn:  # (here a root of its own, not MEETING's child)
        conn.execute("UPDATE sessions SET parent_session_id = NULL WHERE id = ?", (child,))
    conn.close()
    assert hermes(profiles_home, "delete", "-p", "default", MEETING, "--yes").returncode == 0
    assert hermes(profiles_home, "delete", "-p", "old", child, "--yes").returncode == 0
    assert hermes(profiles_home, "delete", "-p", "old", MEETING, "--yes").returncode == 0
    assert hermes(profiles_home, "restore", "-p", "old", child).returncode == 0  # (its parent still gone)
    assert hermes(profiles_home, "restore", "-p", "default", MEETING).returncode == 0
    with sqlite3.connect(f"file:{default}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT parent_session_id FROM sessions WHERE id = ?", (child,)).fetchone() == (None,)
    conn.close()
    # The parent deleted from old's store still brings its child's link back there.
    assert hermes(profiles_home, "restore", "-p", "old", MEETING).returncode == 0
    with sqlite3.connect(f"file:{store(profiles_home, 'old')}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT parent_session_id FROM sessions WHERE id = ?", (child,)).fetchone() == (MEETING,)
    conn.close()
    sound(profiles_home)
