"""``hermes sessions`` when things go wrong (CLI-2, CLI-3, CLI-8, CLI-10, CLI-15).

Each failure is one line, exit code 1, never a traceback, and never a side effect: no
database is created where there was none, no half-written export is left behind. Locks are
held by a real second process (``BEGIN IMMEDIATE``), corruption is done to real files.
"""

from __future__ import annotations

import io
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_tui import cli
from hermes_tui.cli import main

def _permissions_enforced() -> bool:
    """False when we may write into a read-only directory anyway (root with CAP_DAC_OVERRIDE)."""
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        probe = Path(scratch) / "ro"
        probe.mkdir()
        probe.chmod(0o500)
        try:
            (probe / "x").touch()
        except PermissionError:
            return True
        finally:
            probe.chmod(0o700)
        return False


needs_permissions = pytest.mark.skipif(
    not _permissions_enforced(), reason="file permissions are not enforced for this user (root)"
)

ALL_DB_ACTIONS = [
    ["list"],
    ["stats"],
    ["export", "-"],
    ["export", "OUT"],
    ["delete", "20250305_091523_a1b2c3", "--yes"],
    ["rename", "20250305_091523_a1b2c3", "a", "title"],
    ["prune", "--yes"],
]

LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()          # hold the write lock until the test closes our stdin
conn.execute("ROLLBACK")
"""


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "hermes-home"
    path.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(path))
    monkeypatch.delenv(cli.WRITE_RETRIES_ENV, raising=False)
    return path


@pytest.fixture
def run(capsys, monkeypatch, tmp_path):
    """``run(*args, stdin=None) -> (code, stdout, stderr)``; ``OUT`` becomes a tmp file path."""

    def invoke(*args: str, stdin=None):
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin) if isinstance(stdin, str) else stdin)
        argv = [str(tmp_path / "export.jsonl") if a == "OUT" else a for a in args]
        code = main(["sessions", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def populated(path: Path, sessions: int = 3, messages: int = 4) -> Path:
    db = SessionDB(path)
    try:
        for i in range(sessions):
            sid = "20250305_091523_a1b2c3" if i == 0 else f"20250305_0{i:05d}_ffff{i:02d}"
            db.create_session(sid, "cli")
            for j in range(messages):
                db.append_message(sid, "user" if j % 2 == 0 else "assistant", f"message {j} " * 40)
            db.end_session(sid, "user_exit")
    finally:
        db.close()
    return path


def one_error_line(out: str, err: str) -> str:
    """An error is one line on stderr; stdout stays empty (it is for a command's output)."""
    assert out == "", out
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert err.startswith("Error: ")
    return err.rstrip("\n")


# ----------------------------------------------------------------------------- no database


@pytest.mark.parametrize("argv", ALL_DB_ACTIONS, ids=lambda a: "-".join(a[:2]))
def test_cli3_missing_database_reported_and_not_created(run, home, tmp_path, argv):
    code, out, err = run(*argv)
    assert code == 1
    assert (out, err) == ("", f"Error: Could not open session database: no database at {home / 'state.db'}\n")
    assert list(home.iterdir()) == []
    assert not (tmp_path / "export.jsonl").exists()


def test_cli3_missing_home_directory_not_created(run, tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "nowhere"))
    code, out, err = run("list")
    assert (code, out, err) == (1, "", f"Error: Could not open session database: no database at {tmp_path / 'nowhere' / 'state.db'}\n")
    assert not (tmp_path / "nowhere").exists()


def test_cli3_hermes_home_is_a_file(run, tmp_path, monkeypatch):
    home_file = tmp_path / "home-file"
    home_file.write_text("not a directory")
    monkeypatch.setenv("HERMES_HOME", str(home_file))
    for argv in (["list"], ["rename", "x", "y"], ["stats"]):
        code, out, err = run(*argv)
        assert (code, out, err) == (
            1, "", f"Error: Could not open session database: HERMES_HOME ({home_file}) is a file, not a directory\n")
    assert home_file.read_text() == "not a directory"


def test_cli3_state_db_is_a_directory(run, home):
    (home / "state.db").mkdir()
    code, out, err = run("stats")
    assert (code, out, err) == (
        1, "", f"Error: Could not open session database: {home / 'state.db'} is a directory, not a database\n")


# ----------------------------------------------------------------------------- not a database / corrupt


@pytest.mark.parametrize("argv", ALL_DB_ACTIONS, ids=lambda a: "-".join(a[:2]))
def test_cli3_random_bytes_not_a_database(run, home, argv):
    random.seed(7)
    garbage = bytes(random.getrandbits(8) for _ in range(8192))
    (home / "state.db").write_bytes(garbage)
    code, out, err = run(*argv)
    assert code == 1
    assert one_error_line(out, err) == (
        f"Error: Could not open session database: {home / 'state.db'} is not a SQLite database (or it is encrypted)")
    assert (home / "state.db").read_bytes() == garbage


def test_cli3_text_file_not_a_database(run, home):
    (home / "state.db").write_text("hello, I am notes.txt\n" * 50)
    code, out, err = run("list")
    assert code == 1 and "is not a SQLite database" in one_error_line(out, err)


@pytest.mark.parametrize("keep", [0.25, 0.5, 0.9])
@pytest.mark.parametrize("argv", [["list"], ["stats"], ["export", "OUT"],
                                  ["rename", "20260102_090000_a1a1a1", "x"]], ids=lambda a: a[0])
def test_cli3_truncated_copy_of_real_database(run, home, upstream_copy, keep, argv, tmp_path):
    original = upstream_copy(11)
    data = original.read_bytes()
    (home / "state.db").write_bytes(data[: int(len(data) * keep)])
    code, out, err = run(*argv)
    assert code == 1
    line = one_error_line(out, err)
    assert "corrupt" in line and str(home / "state.db") in line
    assert not (tmp_path / "export.jsonl").exists()


def _corrupt_pages(path: Path, first: int, count: int) -> None:
    data = bytearray(path.read_bytes())
    rng = random.Random(1)
    for page in range(first, first + count):
        data[page * 4096:(page + 1) * 4096] = bytes(rng.getrandbits(8) for _ in range(4096))
    path.write_bytes(bytes(data))


def test_cli3_corrupt_schema_pages(run, home):
    path = populated(home / "state.db", sessions=20, messages=10)
    _corrupt_pages(path, 1, 4)
    for argv in (["list"], ["stats"], ["delete", "20250305_091523_a1b2c3", "-y"]):
        code, out, err = run(*argv)
        assert code == 1 and "is corrupt" in one_error_line(out, err), argv


def test_cli3_corruption_found_while_reading_is_one_line(run, home, tmp_path):
    """Header and schema intact, data pages garbage: the store opens, the query fails."""
    path = populated(home / "state.db", sessions=30, messages=20)
    conn = sqlite3.connect(path)
    try:
        leaves = [row[0] for row in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' ORDER BY pageno")]
    except sqlite3.OperationalError:
        pytest.skip("this SQLite has no dbstat table to locate message pages")
    finally:
        conn.close()
    assert len(leaves) > 20
    for page in leaves[5:15]:  # message rows only: the schema and the indexes stay readable
        _corrupt_pages(path, page - 1, 1)
    for argv in (["export", "OUT"], ["export", "-"], ["export", "OUT", "--format", "md"]):
        code, out, err = run(*argv)
        assert code == 1, argv
        assert one_error_line(out, err).endswith("(database disk image is malformed)")
    assert not (tmp_path / "export.jsonl").exists()


def test_cli3_foreign_sqlite_file_left_untouched(run, home):
    path = home / "state.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE recipes (name TEXT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    for argv in (["list"], ["rename", "x", "y"], ["prune", "-y"]):
        code, out, err = run(*argv)
        assert (code, out, err) == (
            1, "", f"Error: Could not open session database: {path} is not a Hermes session database\n")
    assert path.read_bytes() == before


def test_list_of_an_empty_file_answers_empty_and_writes_nothing(run, home):
    # UC-8: a read never writes, whatever the file (upstream's list would give it a schema).
    (home / "state.db").write_bytes(b"")
    code, out, err = run("list")
    assert (code, out) == (0, "No sessions found.\n")
    assert "is an empty file" in err and "nothing was written" in err
    assert (home / "state.db").read_bytes() == b""


def test_list_of_an_sqlite_file_without_tables_writes_nothing(run, home):
    path = home / "state.db"
    sqlite3.connect(path).execute("PRAGMA user_version = 0").connection.close()
    before = path.read_bytes() if path.exists() else b""
    code, out, err = run("list")
    assert (code, out) == (0, "No sessions found.\n")
    assert (path.read_bytes() if path.exists() else b"") == before


# ----------------------------------------------------------------------------- schema versions


def test_cli_read_actions_do_not_modify_a_current_database(run, home):
    path = populated(home / "state.db")
    before = path.read_bytes()
    for argv in (["list"], ["stats"], ["export", "-"], ["export", "OUT", "--format", "md"]):
        assert run(*argv)[0] == 0
    assert path.read_bytes() == before


def test_cli_older_upstream_schema_is_listed_without_migrating(run, home, upstream_copy):
    # UC-8: reading (list, stats, export, browse) never migrates; only a write brings it to 16.
    shutil.copyfile(upstream_copy(2), home / "state.db")
    before = (home / "state.db").read_bytes()
    code, out, err = run("list")
    assert code == 0 and len(out.splitlines()) == 2 + 4
    assert (home / "state.db").read_bytes() == before
    conn = sqlite3.connect(home / "state.db")
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (2,)
    conn.close()
    code, out, err = run("rename", "20260102_100000_b2b2b2c3", "now titled")
    assert code == 0
    conn = sqlite3.connect(home / "state.db")
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (16,)
    conn.close()


def test_cli_newer_schema_version_is_read_without_lowering_it(run, home):
    path = populated(home / "state.db")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = 31")
    conn.commit()
    conn.close()
    code, out, err = run("list")
    assert code == 0 and err == "Warning: database schema version 31 is newer than 30; opened read-only\n"
    # UC-9: a store newer than any we know is only read — a write is refused.
    code, out, err = run("rename", "20250305_091523_a1b2c3", "refused")
    assert (code, out, err) == (1, "", f"Error: Could not open session database: {path} has schema version 31, "
                              "newer than this program's 30; it can only be read, nothing was changed\n")
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (31,)
    assert conn.execute("SELECT COUNT(*) FROM sessions WHERE title IS NOT NULL").fetchone() == (0,)
    conn.close()


def test_cli_store_between_17_and_30_is_written_in_place(run, home):
    path = populated(home / "state.db")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = 20")
    conn.commit()
    conn.close()
    code, out, err = run("rename", "20250305_091523_a1b2c3", "in place")
    assert code == 0 and err == ""
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (20,)
    assert conn.execute("SELECT title FROM sessions WHERE id = '20250305_091523_a1b2c3'").fetchone() == ("in place",)
    conn.close()


# ----------------------------------------------------------------------------- read-only files


@needs_permissions
def test_cli_read_only_file_still_lists_and_exports(run, home, tmp_path):
    path = populated(home / "state.db")
    path.chmod(0o444)
    try:
        assert run("list")[0] == 0
        assert run("stats")[0] == 0
        assert run("export", "OUT")[1].startswith("Exported 3 sessions")
        code, out, err = run("rename", "20250305_091523_a1b2c3", "x")
        assert (code, out, err) == (1, "", f"Error: Could not open session database: {path} is read-only\n")
    finally:
        path.chmod(0o644)


@needs_permissions
def test_cli_read_only_directory_while_a_writer_has_it_open(run, home, tmp_path):
    """The gateway (another user) has the database open, so -wal/-shm exist: we can read."""
    path = populated(home / "state.db")
    writer = SessionDB(path)
    writer.create_session("20250306_000000_11ve01", "telegram")
    writer.append_message("20250306_000000_11ve01", "user", "written while you read")
    home.chmod(0o555)
    try:
        code, out, err = run("list")
        assert code == 0 and "written while you read" in out
        code, out, err = run("delete", "20250306", "-y")
        assert (code, out, err) == (1, "", f"Error: Could not open session database: {path} is read-only\n")
    finally:
        home.chmod(0o755)
        writer.close()


@needs_permissions
def test_cli_read_only_directory_without_shm_reads_a_snapshot(run, home):
    """No -shm and no way to create it: read as an immutable snapshot, and say so."""
    path = populated(home / "state.db")  # closed: SQLite removed -wal and -shm
    assert not Path(str(path) + "-shm").exists()
    home.chmod(0o555)
    try:
        code, out, err = run("list")
        assert code == 0 and len(out.splitlines()) == 2 + 3
        assert err == (f"Warning: {home} is not writable, so the database is shown as a snapshot: "
                       "changes made by other processes while it is open are not seen\n")
        code, out, err = run("rename", "20250305_091523_a1b2c3", "x")
        assert (code, out, err) == (1, "", f"Error: Could not open session database: {path} is read-only\n")
    finally:
        home.chmod(0o755)


# ----------------------------------------------------------------------------- locked


@pytest.fixture
def locker():
    """``locker(path)`` starts a real process holding ``BEGIN IMMEDIATE`` on ``path``."""
    procs: list[subprocess.Popen] = []

    def start(path: Path) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", LOCKER, str(path)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout.readline().strip() == "locked"
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.stdin.close()
            proc.wait(timeout=10)


@pytest.mark.parametrize("argv", [["rename", "20250305_091523_a1b2c3", "x"],
                                  ["delete", "20250305_091523_a1b2c3", "-y"], ["prune", "-y"]],
                         ids=lambda a: a[0])
def test_cli3_locked_database_after_retry_budget(run, home, locker, monkeypatch, argv):
    path = populated(home / "state.db")
    # One attempt keeps the suite fast; rename also shows that a retry happens within budget.
    monkeypatch.setenv(cli.WRITE_RETRIES_ENV, "2" if argv[0] == "rename" else "1")
    locker(path)
    # The lock is never released: the command returning at all shows the budget is kept (how
    # many attempts the variable allows: test_cli_write_retries_env_is_validated).
    code, out, err = run(*argv)
    assert (code, out) == (1, "")
    assert err == (f"Error: Could not open session database: {path} is locked by another process "
                   "(database is locked)\n")


def test_cli3_lock_taken_between_prompt_and_delete(run, home, locker, monkeypatch):
    """The store opened fine; another process grabs the lock while we wait for 'y'."""
    path = populated(home / "state.db")
    monkeypatch.setenv(cli.WRITE_RETRIES_ENV, "1")

    class LockThenConfirm(io.TextIOBase):
        def readline(self, *args):
            locker(path)
            return "y\n"

    code, out, err = run("delete", "20250305_091523_a1b2c3", stdin=LockThenConfirm())
    assert (code, out) == (1, "")
    assert err.endswith(f"[y/N] Error: {path} is locked by another process (database is locked)\n")
    db = SessionDB(path, read_only=True)
    try:
        assert db.get_session("20250305_091523_a1b2c3") is not None
    finally:
        db.close()


def test_cli_read_actions_work_while_a_writer_holds_the_lock(run, home, locker, tmp_path):
    path = populated(home / "state.db")
    locker(path)
    # The lock is held throughout: a reader that waited for it would end "locked", not succeed.
    assert run("list")[0] == 0
    assert run("stats")[1].startswith("Total sessions: 3\n")
    assert run("export", "OUT") == (0, f"Exported 3 sessions to {tmp_path / 'export.jsonl'}\n", "")


def test_cli_write_retries_env_is_validated(monkeypatch):
    for raw, expected in (("3", 3), ("0", None), ("-1", None), ("lots", None), ("", None)):
        monkeypatch.setenv(cli.WRITE_RETRIES_ENV, raw)
        assert cli._write_retries() == expected
        cls = cli._store_class()
        assert cls._WRITE_MAX_RETRIES == (expected or 15)


# ----------------------------------------------------------------------------- export paths


@pytest.fixture
def db_ready(home):
    return populated(home / "state.db")


def test_cli8_export_into_missing_directory(run, db_ready, tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "out.jsonl"
    code, out, err = run("export", str(target))
    assert (code, out, err) == (1, "", f"Error: cannot write {target}: No such file or directory\n")
    assert not (tmp_path / "no").exists()


def test_cli8_export_below_a_file(run, db_ready, tmp_path):
    blocker = tmp_path / "plain-file"
    blocker.write_text("x")
    code, out, err = run("export", str(blocker / "out.jsonl"))
    assert (code, out, err) == (1, "", f"Error: cannot write {blocker / 'out.jsonl'}: Not a directory\n")


def test_cli8_export_onto_a_directory(run, db_ready, tmp_path):
    target = tmp_path / "a-directory"
    target.mkdir()
    code, out, err = run("export", str(target))
    assert code == 1 and one_error_line(out, err).startswith(f"Error: cannot write {target}: ")
    assert list(target.iterdir()) == []
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@needs_permissions
def test_cli8_export_into_unwritable_directory(run, db_ready, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "out.jsonl").write_text("previous")
    locked.chmod(0o500)
    try:
        code, out, err = run("export", str(locked / "out.jsonl"))
        assert (code, out, err) == (1, "", f"Error: cannot write {locked / 'out.jsonl'}: Permission denied\n")
        assert (locked / "out.jsonl").read_text() == "previous"
    finally:
        locked.chmod(0o700)


def test_cli8_export_failure_keeps_previous_file(run, db_ready, tmp_path, monkeypatch):
    target = tmp_path / "export.jsonl"
    target.write_text("previous export\n")
    from hermes_state import export as export_mod

    calls = []
    real = export_mod._read_batch

    def flaky(db, session_ids):
        calls.append(session_ids)
        if len(calls) == 2:
            raise sqlite3.OperationalError("disk I/O error")
        return real(db, session_ids)

    # One session per batch read, the second read fails.
    monkeypatch.setattr(export_mod, "EXPORT_BATCH_SESSIONS", 1)
    monkeypatch.setattr(export_mod, "_read_batch", flaky)
    code, out, err = run("export", "OUT")
    assert code == 1 and one_error_line(out, err).endswith("disk I/O error")
    assert target.read_text() == "previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["export.jsonl"]


def test_cli8_stdout_export_errors_go_to_stderr(run, db_ready):
    code, out, err = run("export", "-", "--session-id", "nope")
    assert (code, out, err) == (1, "", "Session 'nope' not found.\n")


# ----------------------------------------------------------------------------- interrupts


def test_cli_keyboard_interrupt_during_action_is_one_line(run, db_ready, monkeypatch):
    import hermes_tui.cli_stats

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    # (what the stats action reads its figures with)
    monkeypatch.setattr(hermes_tui.cli_stats, "collect", interrupted)
    code, out, err = run("stats")
    assert (code, out, err) == (130, "", "\nInterrupted.\n")


def test_cli_unexpected_error_is_one_line_not_a_traceback(run, db_ready, monkeypatch):
    import hermes_tui.cli_stats

    def broken(*args, **kwargs):
        raise RuntimeError("something odd")

    monkeypatch.setattr(hermes_tui.cli_stats, "collect", broken)
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    code, out, err = run("stats")
    assert (code, out, err) == (1, "", "Error: unexpected RuntimeError: something odd\n")
