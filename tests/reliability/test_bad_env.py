"""A bad environment gives a clear message, in the CLI and in the app.

Environments: no database yet; an empty file; random bytes; a truncated database (cut in
its header, and cut in half); a database written by a newer Hermes (schema version 12);
a read-only file; a read-only directory (with and without another process holding the
store open); ``HERMES_HOME`` naming a file.

CLI: ``hermes sessions list / stats / browse --plain / rename / delete / export`` each print
one clear line (never a traceback), exit non-zero when they could not do their job, and
never change a database they must not change (checked on disk afterwards).

App: ``build_app`` on each path never crashes: an unusable file gets a screen with the
one-line reason; a usable but read-only one is browsed, and rename/delete explain why they
cannot. The read-only cases run in a child process without ``CAP_DAC_OVERRIDE`` (the suite
runs as root, which ignores permission bits), so they really run.
"""

from __future__ import annotations

import hashlib
import io
import random
import sqlite3
import sys
from pathlib import Path

import pytest

try:
    from .helpers_env import (SIZE, app_report, cli_unprivileged, make_app, notifications,
                              populate, require_unprivileged, schema_fingerprint, settle,
                              squeeze, terminal_output)
except ImportError:  # collected as a rootdir-relative module
    from helpers_env import (SIZE, app_report, cli_unprivileged, make_app, notifications,
                             populate, require_unprivileged, schema_fingerprint, settle,
                             squeeze, terminal_output)

from hermes_state import SessionDB
from hermes_tui.cli import WRITE_RETRIES_ENV, main

SID = "20261118_000000_s0000"

COMMANDS = {
    "list": ["list"],
    "stats": ["stats"],
    "browse": ["browse", "--plain"],
    "rename": ["rename", SID, "a", "new", "title"],
    "delete": ["delete", SID, "--yes"],
    "export": ["export", "OUT"],
}
READS = ("list", "stats", "browse", "export")
#: Exit status of a successful read: browse --plain reads EOF, a cancel (BR-17: 130).
READ_OK = {"browse": 130}
WRITES = ("rename", "delete")


# ---------------------------------------------------------------------------- environments


def make_env(kind: str, base: Path) -> tuple[Path, Path]:
    """Build environment ``kind`` under ``base``; return ``(HERMES_HOME, state.db path)``."""
    home = base / "home"
    if kind == "homefile":
        home.write_text("HERMES_HOME should be a directory\n")
        return home, home / "state.db"
    home.mkdir()
    db = home / "state.db"
    if kind == "missing":
        pass
    elif kind == "empty":
        db.write_bytes(b"")
    elif kind == "random":
        db.write_bytes(random.Random(7).randbytes(16384))
    elif kind in ("truncated_header", "truncated_half"):
        populate(db, sessions=3)
        data = db.read_bytes()
        db.write_bytes(data[:60] if kind == "truncated_header" else data[: len(data) // 2])
    elif kind == "newer":
        populate(db, sessions=3)
        conn = sqlite3.connect(db)
        conn.execute("UPDATE schema_version SET version = 31")  # above 30: unknown (UC-9)
        conn.commit()
        conn.close()
    elif kind in ("rofile", "rodir"):
        populate(db, sessions=3)
        if kind == "rofile":
            db.chmod(0o444)
        else:
            home.chmod(0o555)
    else:  # pragma: no cover
        raise ValueError(kind)
    return home, db


def restore_permissions(home: Path) -> None:
    if home.is_dir():
        home.chmod(0o755)
        for path in home.iterdir():
            path.chmod(0o644)


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dir_listing(home: Path) -> list[str]:
    return sorted(p.name for p in home.iterdir())


def run_cli(monkeypatch, capsys, home: Path, argv: list[str]) -> tuple[int, str, str]:
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv(WRITE_RETRIES_ENV, "2")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = main(["sessions", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def with_out(argv: list[str], base: Path) -> list[str]:
    return [str(base / "export.jsonl") if a == "OUT" else a for a in argv]


def assert_one_error_line(text: str, *needles: str) -> None:
    assert "Traceback" not in text
    lines = [l for l in text.splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("Error: ")]
    assert len(errors) == 1, text
    assert all(n in errors[0] for n in needles), (needles, text)


# ---------------------------------------------------------------------------- CLI, as root


UNUSABLE = {
    # kind: the words the one error line must contain
    "missing": ("no", "database at"),
    "random": ("is not a SQLite database",),
    "truncated_header": ("state.db",),
    "truncated_half": ("is corrupt",),
    "homefile": ("is a file, not a directory",),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("kind", list(UNUSABLE))
def test_bad_env_cli_unusable_store_is_one_clear_line(tmp_path, monkeypatch, capsys, kind, command):
    home, db = make_env(kind, tmp_path)
    before = file_digest(db) if db.exists() else None
    code, out, err = run_cli(monkeypatch, capsys, home, with_out(COMMANDS[command], tmp_path))
    assert code == 1, (out, err)
    assert_one_error_line(out + err, *UNUSABLE[kind])
    assert str(db.parent if kind == "homefile" else db) in out + err
    # Nothing was created or changed, and no export file was left behind.
    assert (file_digest(db) if db.exists() else None) == before
    assert not (tmp_path / "export.jsonl").exists()
    if home.is_dir():
        # (A WAL-mode header makes SQLite's reader create empty -wal/-shm files: harmless.)
        assert [n for n in dir_listing(home) if n not in ("state.db-wal", "state.db-shm")] == (
            [] if kind == "missing" else ["state.db"])


@pytest.mark.parametrize("command", list(COMMANDS))
def test_bad_env_cli_empty_file(tmp_path, monkeypatch, capsys, command):
    """An empty file: read actions answer as an empty history and write nothing to it (a
    read never writes, whatever the file); browse says it is empty; writes find nothing."""
    home, db = make_env("empty", tmp_path)
    code, out, err = run_cli(monkeypatch, capsys, home, with_out(COMMANDS[command], tmp_path))
    assert "Traceback" not in out + err
    if command in ("list", "stats", "export", "browse"):
        assert db.stat().st_size == 0
    if command in ("list", "stats", "export"):
        assert f"{db} is an empty file" in err and "nothing was written" in err
    if command == "list":
        assert (code, out) == (0, "No sessions found.\n")
    elif command == "stats":
        assert code == 0 and out.startswith("Total sessions: 0\nTotal messages: 0\n")
    elif command == "export":
        assert (code, out) == (0, f"Exported 0 sessions to {tmp_path / 'export.jsonl'}\n")
    elif command == "browse":
        assert code == 1
        assert_one_error_line(out + err, str(db), "is an empty file")
    else:
        assert (code, out, err) == (1, "", f"Session '{SID}' not found.\n")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_bad_env_cli_newer_schema_is_read_never_changed(tmp_path, monkeypatch, capsys, command):
    home, db = make_env("newer", tmp_path)
    before = schema_fingerprint(db)
    code, out, err = run_cli(monkeypatch, capsys, home, with_out(COMMANDS[command], tmp_path))
    assert "Traceback" not in out + err
    if command in READS:
        assert code == READ_OK.get(command, 0), (out, err)
        assert "Warning: database schema version 31 is newer than 30; opened read-only" in err
    else:
        assert code == 1 and out == ""
        assert_one_error_line(err, "schema version 31", "newer", "nothing was changed")
    after = schema_fingerprint(db)
    assert after == before and after[0] == [(31,)]
    store = SessionDB(db, read_only=True)
    try:
        assert store.session_count() == 3 and store.get_session_title(SID) is None
    finally:
        store.close()


# ---------------------------------------------------------------------------- CLI, without DAC override


@pytest.mark.parametrize("kind", ["rofile", "rodir"])
def test_bad_env_cli_read_only_file_and_directory(tmp_path, kind):
    require_unprivileged()
    home, db = make_env(kind, tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    try:
        before_digest, before_files = file_digest(db), dir_listing(home)
        commands = [with_out(COMMANDS[name], out_dir) for name in COMMANDS]
        results = dict(zip(COMMANDS, cli_unprivileged(home, commands)))
        for name, (code, out, err) in results.items():
            assert "Traceback" not in out + err, (name, out, err)
            if name in READS:
                assert code == READ_OK.get(name, 0), (name, out, err)
            else:
                assert code == 1 and out == "", (name, out, err)
                assert_one_error_line(err, "is read-only")
        assert len(results["list"][1].splitlines()) == 2 + 3
        assert results["stats"][1].startswith("Total sessions: 3\nTotal messages: 12\n")
        assert "Select [1-3]" in results["browse"][2]  # the picker's menu is on stderr (BR-17)
        assert results["export"][1] == f"Exported 3 sessions to {out_dir / 'export.jsonl'}\n"
        if kind == "rodir":
            for name in READS:
                assert "shown as a snapshot" in results[name][2], (name, results[name])
        # Nothing was written: same bytes, no new file beside the database.
        assert file_digest(db) == before_digest
        if kind == "rodir":
            assert dir_listing(home) == before_files
    finally:
        restore_permissions(home)
    store = SessionDB(db, read_only=True)
    try:
        assert store.session_count() == 3 and store.get_session_title(SID) is None
    finally:
        store.close()


def test_bad_env_cli_read_only_directory_while_a_writer_has_it_open(tmp_path):
    """Another process has the store open (so -wal/-shm exist): reads see its live data."""
    require_unprivileged()
    home, db = make_env("missing", tmp_path)
    populate(db, sessions=3)
    writer = SessionDB(db)
    writer.create_session("20261118_090000_live01", "telegram")
    writer.append_message("20261118_090000_live01", "user", "written while you read")
    home.chmod(0o555)
    try:
        results = cli_unprivileged(home, [["list"], ["delete", SID, "--yes"]])
        (code, out, err), (dcode, dout, derr) = results
        assert code == 0 and "written while you read" in out and "snapshot" not in err
        assert dcode == 1 and dout == "" and "is read-only" in derr
    finally:
        home.chmod(0o755)
        writer.close()


# ---------------------------------------------------------------------------- the app


@pytest.mark.parametrize("kind", ["missing", "empty", "random", "truncated_header", "truncated_half", "homefile"])
async def test_bad_env_app_unusable_store_shows_the_reason(tmp_path, kind):
    from hermes_tui.screens.unavailable import UnavailableScreen

    _home, db = make_env(kind, tmp_path)
    before = file_digest(db) if db.exists() else None
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, UnavailableScreen)
        text = terminal_output(app, plain=True)
        assert "Cannot open the session database" in text
        reason = app.screen.reason
        assert "\n" not in reason and "Traceback" not in reason
        assert {"missing": "no database at", "empty": "is an empty file", "random": "is not a SQLite",
                "truncated_header": "state.db", "truncated_half": "is corrupt",
                "homefile": "is a file, not a directory"}[kind] in reason
        assert squeeze(reason) in squeeze(text), (reason, text)
        # Its one line is on screen, not in a pile of error notices.
        assert [m for s, m in notifications(app) if s == "error"] == []
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, UnavailableScreen) and app.is_running
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 1
    assert (file_digest(db) if db.exists() else None) == before


async def test_bad_env_app_database_appearing_later_is_opened(tmp_path):
    """No database yet: the app waits on its reason screen and opens the store once a
    process creates it (the change watcher notices the new file)."""
    from hermes_tui.screens.unavailable import UnavailableScreen
    from hermes_tui.widgets.session_list import SessionList

    home, db = make_env("missing", tmp_path)
    app = make_app(db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, UnavailableScreen)
        populate(db, sessions=3)
        for _ in range(300):
            if not isinstance(app.screen, UnavailableScreen):
                break
            await pilot.pause(0.02)
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        for _ in range(200):
            if lst.loaded and lst.total == 3:
                break
            await pilot.pause(0.02)
        assert lst.total == 3
        assert app.ctx.access.read_only_reason is None


async def test_bad_env_app_newer_schema_read_only_never_migrated(tmp_path):
    from hermes_tui.screens.browser import BrowserScreen
    from hermes_tui.widgets.session_list import SessionList

    _home, db = make_env("newer", tmp_path)
    before = schema_fingerprint(db)
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, BrowserScreen)
        assert app.screen.query_one(SessionList).total == 3
        assert "schema version 31" in (app.ctx.access.read_only_reason or "")
        assert any(s == "warning" and "schema version 31 is newer" in m for s, m in notifications(app))
        assert "read-only" in terminal_output(app, plain=True)
        for key, verb in (("r", "rename"), ("d", "delete")):
            app.clear_notifications()
            await pilot.press(key)
            await settle(pilot)
            assert isinstance(app.screen, BrowserScreen), f"{key} opened a modal on a v31 store"
            said = [m for s, m in notifications(app) if s == "error"]
            assert said and said[0].startswith(f"Cannot {verb}: schema version 31"), said
    after = schema_fingerprint(db)
    assert after == before and after[0] == [(31,)]


@pytest.mark.parametrize("kind", ["rofile", "rodir"])
def test_bad_env_app_read_only_file_and_directory(tmp_path, kind):
    require_unprivileged()
    home, db = make_env(kind, tmp_path)
    try:
        before = file_digest(db)
        report = app_report(db, "r", "d", unprivileged=True)
        assert report["screen"] == "BrowserScreen"
        assert report["read_only_reason"] and "read-only" in report["read_only_reason"]
        status = report["status"][0]
        assert "3 conversations" in status and "read-only" in status
        if kind == "rodir":
            assert "snapshot" in status
            assert any("shown as a snapshot" in m for _s, m in report["notices"])
        for key, screen, notices in report["after_keys"]:
            verb = {"r": "rename", "d": "delete"}[key]
            assert screen == "BrowserScreen", f"{key} opened {screen} on a read-only store"
            assert any(s == "error" and m.startswith(f"Cannot {verb}:") and "read-only" in m
                       for s, m in notices), notices
        assert file_digest(db) == before
    finally:
        restore_permissions(home)


def test_bad_env_app_read_only_known_from_sqlite_when_permissions_say_writable(tmp_path):
    """os.access answers 'writable' (as on a read-only mount or with ACLs), SQLite says no:
    the browser believes SQLite and explains rename/delete instead of failing inside them."""
    require_unprivileged()
    home, db = make_env("rofile", tmp_path)
    try:
        report = app_report(db, "r", unprivileged=True, env={"PROBE_ACCESS_SAYS_WRITABLE": "1"})
        reason = report["read_only_reason"] or ""
        assert reason.startswith("SQLite reports") and "read-only" in reason, reason
        [(key, screen, notices)] = report["after_keys"]
        assert screen == "BrowserScreen"
        assert any(m.startswith("Cannot rename: SQLite reports") for _s, m in notices), notices
    finally:
        restore_permissions(home)
