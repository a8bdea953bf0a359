"""Every trash entry is reachable, none is trusted blindly.

Real processes, real files, a real chown: a session deleted twice keeps both deletes and
either can be restored; an entry the user does not own, a symlinked entry and a damaged
entry are listed as such and never restored; a crafted ``files`` list writes nothing outside
the store's sessions directory and no set-id bits; a symlinked trash directory's target keeps
its mode; a ghost entry left by a delete that never committed is named, not "restored".
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.paths import default_trash_dir

CLI = [sys.executable, "-m", "hermes_tui.cli"]


def hermes(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HERMES_HOME=str(home))
    return subprocess.run([*CLI, "sessions", *args], env=env, capture_output=True, text=True, timeout=120)


def add_session(home: Path, sid: str, messages: int) -> None:
    db = SessionDB(home / "state.db")
    try:
        db.create_session(sid, "cli")
        for n in range(messages):
            db.append_message(sid, "user" if n % 2 == 0 else "assistant", f"message {n} of {sid}")
    finally:
        db.close()


def message_count(home: Path, sid: str) -> int:
    db = SessionDB(home / "state.db", read_only=True)
    try:
        return len(db.get_messages(sid))
    finally:
        db.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    (path / "sessions").mkdir(parents=True)
    add_session(path, "keep", 2)
    return path


def entries() -> list[Path]:
    return sorted(default_trash_dir().glob("*.json"))


def test_both_deletes_of_a_recreated_session_can_be_restored(home: Path) -> None:
    add_session(home, "s1", 117)
    assert hermes(home, "delete", "s1", "--yes").returncode == 0
    add_session(home, "s1", 2)
    assert hermes(home, "delete", "s1", "--yes").returncode == 0
    listing = hermes(home, "trash")
    assert listing.stdout.count(" s1 ") == 2 and listing.stdout.count("entry ") == 2, listing.stdout
    names = [line.split("entry ", 1)[1].strip() for line in listing.stdout.splitlines() if "entry " in line]
    # The id chooses the newest delete and names the older one.
    newest = hermes(home, "restore", "s1")
    assert newest.returncode == 0 and message_count(home, "s1") == 2
    assert names[1] in newest.stderr and "older delete" in newest.stderr
    # The older, 117-message snapshot is reachable by its entry name once the id is free.
    assert hermes(home, "delete", "s1", "--yes").returncode == 0
    older = hermes(home, "restore", names[1])
    assert older.returncode == 0, older.stderr
    assert message_count(home, "s1") == 117


def crafted_entry(home: Path, target: Path) -> Path:
    """A trash entry of a session with a ``files`` list pointing at ``target``, mode 4777."""
    add_session(home, "victim", 3)
    assert hermes(home, "delete", "victim", "--yes").returncode == 0
    (entry,) = [p for p in entries() if p.name.startswith("victim.")]
    document = json.loads(entry.read_text())
    document["files"] = [{"path": str(target), "mode": 0o4777, "mtime": 0.0,
                          "data": {"$b64": "IyEvYmluL3NoCmVjaG8gcHduZWQK"}}]
    entry.write_text(json.dumps(document))
    return entry


def test_a_crafted_files_list_writes_nothing_outside_the_sessions_directory(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "evil"
    target.parent.mkdir()
    crafted_entry(home, target)
    result = hermes(home, "restore", "victim")
    assert result.returncode == 0 and message_count(home, "victim") == 3
    assert not target.exists()
    assert "evil was not restored (not a file of this store's sessions; not written)" in result.stdout


def test_a_kept_session_file_never_comes_back_with_set_id_bits(home: Path) -> None:
    crafted_entry(home, home / "sessions" / "victim.jsonl")
    assert hermes(home, "restore", "victim").returncode == 0
    mode = stat.S_IMODE((home / "sessions" / "victim.jsonl").stat().st_mode)
    assert mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | 0o111) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_an_entry_owned_by_another_user_is_listed_and_never_restored(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "evil"
    entry = crafted_entry(home, target)
    os.chown(entry, 65534, 65534)  # nobody
    listing = hermes(home, "trash")
    assert "cannot be restored: it belongs to another user (uid 65534)" in listing.stdout
    result = hermes(home, "restore", "victim")
    assert result.returncode == 1 and "belongs to another user" in result.stderr
    assert not target.exists() and entry.exists()


def test_a_symlinked_entry_is_listed_and_not_followed(home: Path, tmp_path: Path) -> None:
    add_session(home, "linked", 2)
    assert hermes(home, "delete", "linked", "--yes").returncode == 0
    (entry,) = [p for p in entries() if p.name.startswith("linked.")]
    real = tmp_path / "real-entry.json"
    shutil.move(entry, real)
    entry.symlink_to(real)
    listing = hermes(home, "trash")
    assert "cannot be restored: it is a symbolic link (not followed)" in listing.stdout
    result = hermes(home, "restore", entry.name)
    assert result.returncode == 1 and "symbolic link" in result.stderr
    assert real.exists() and entry.is_symlink()


@pytest.mark.parametrize("content", [b"", b'{"format": "hermes-sessions-trash/1", "sessi', os.urandom(64)],
                         ids=["empty", "truncated", "random"])
def test_a_damaged_entry_is_listed_as_damaged(home: Path, content: bytes) -> None:
    default_trash_dir().mkdir(parents=True, exist_ok=True)
    (default_trash_dir() / "broken.1234abcd.json").write_bytes(content)
    listing = hermes(home, "trash")
    assert "The trash is empty" not in listing.stdout
    assert "broken.1234abcd.json" in listing.stdout and "cannot be restored: damaged" in listing.stdout
    result = hermes(home, "restore", "broken.1234abcd")
    assert result.returncode == 1 and "damaged" in result.stderr and "Traceback" not in result.stderr


def test_a_symlinked_trash_directory_keeps_its_targets_mode(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "shared-trash"
    target.mkdir(mode=0o755)
    os.chmod(target, 0o755)
    default_trash_dir().parent.mkdir(parents=True, exist_ok=True)
    default_trash_dir().symlink_to(target)
    add_session(home, "s2", 2)
    assert hermes(home, "delete", "s2", "--yes").returncode == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert [p.name.split(".")[0] for p in target.glob("*.json")] == ["s2"]


def test_an_entry_left_by_a_delete_that_never_committed_is_named_and_removed(home: Path, tmp_path: Path) -> None:
    add_session(home, "ghost", 5)
    before = tmp_path / "before.db"
    shutil.copyfile(home / "state.db", before)
    assert hermes(home, "delete", "ghost", "--yes").returncode == 0
    # The store as it was: the delete "rolled back", its trash entry stayed (a kill -9
    # between the entry and the commit leaves exactly this).
    for suffix in ("-wal", "-shm"):
        Path(str(home / "state.db") + suffix).unlink(missing_ok=True)
    shutil.copyfile(before, home / "state.db")
    assert message_count(home, "ghost") == 5
    result = hermes(home, "restore", "ghost")
    assert result.returncode == 1
    assert "still in the store: the delete that left this trash entry did not complete" in result.stderr
    assert "exists again" not in result.stderr
    assert not [p for p in entries() if p.name.startswith("ghost.")]
    assert message_count(home, "ghost") == 5


def test_restoring_a_child_then_its_parent_puts_the_link_back(home: Path) -> None:
    db = SessionDB(home / "state.db")
    try:
        db.create_session("parent", "cli")
        db.append_message("parent", "user", "the parent")
        db.create_session("child", "cli", parent_session_id="parent")
        db.append_message("child", "user", "the child")
    finally:
        db.close()
    assert hermes(home, "delete", "child", "--yes").returncode == 0
    assert hermes(home, "delete", "parent", "--yes").returncode == 0
    child = hermes(home, "restore", "child")
    assert child.returncode == 0 and "its parent parent no longer exists" in child.stdout
    parent = hermes(home, "restore", "parent")
    assert parent.returncode == 0 and "re-linked 1 child session" in parent.stdout, parent.stdout
    db = SessionDB(home / "state.db", read_only=True)
    try:
        assert db.get_session("child")["parent_session_id"] == "parent"
    finally:
        db.close()
