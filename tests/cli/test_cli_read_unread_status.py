"""``read`` / ``unread`` and ``list --unread`` / ``list --status`` as real processes, on
copies of upstream's own v30 and v16 stores: what is written (only ``last_read_at`` of the
conversation's sessions, on v30; nothing on v16), what is printed where, the exit codes."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
C1, C2, C3 = "20260921_120000_c1", "20260921_121000_c2", "20260921_122000_c3"
S1, D1, K1, CR = "20260921_090000_s1", "20260921_090500_d1", "20260921_150000_k1", "20260921_163000_cr"


@pytest.fixture
def home(shared_fixtures_dir: Path, tmp_path: Path):
    def make(version: int) -> Path:
        source = shared_fixtures_dir / f"upstream_v{version}.db"
        if not source.exists():
            pytest.skip(f"{source} not available")
        path = tmp_path / f"home{version}"
        path.mkdir()
        shutil.copyfile(source, path / "state.db")
        (path / "state.db").chmod(0o644)
        return path

    return make


def hermes(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HERMES_HOME=str(home))
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("HERMES_SESSIONS_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", *args],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=120,
    )


def watermarks(path: Path) -> dict[str, float | None]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT id, last_read_at FROM sessions"))


def listed_ids(out: str) -> list[str]:
    return [line.split()[-1] for line in out.splitlines()[2:]]


def test_read_and_unread_stamp_the_lineage_and_list_unread_shows_them(home):
    path = home(30) / "state.db"
    done = hermes(path.parent, "read", "20260921_121")  # a unique prefix of the middle segment
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"Marked '{C2}' read (and 2 sessions of its lineage).\n"
    marks = watermarks(path)
    assert all(marks[sid] is not None for sid in (C1, C2, C3))
    assert {sid for sid, value in marks.items() if value is not None} == {C1, C2, C3}

    gone = hermes(path.parent, "unread", S1, K1)
    assert gone.returncode == 0 and gone.stderr == ""
    assert gone.stdout.splitlines() == [
        f"Marked '{S1}' unread (and 1 session of its lineage).", f"Marked '{K1}' unread."]
    assert watermarks(path)[S1] == 0.0 and watermarks(path)[D1] == 0.0

    unread = hermes(path.parent, "list", "--unread")
    assert unread.returncode == 0 and unread.stderr == ""
    assert sorted(listed_ids(unread.stdout)) == [S1, K1]  # c3 was read after its activity
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == 30


def test_on_a_store_without_the_column_nothing_is_written_and_it_says_so_once(home):
    path = home(16) / "state.db"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    done = hermes(path.parent, "read", "20260528_100000_aa0001", "20260528_110000_bb0001")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "Error: unread is not tracked in this store (schema v16); nothing was changed.\n"
    listed = hermes(path.parent, "list", "--unread")
    assert listed.returncode == 0 and listed.stdout == "No sessions found.\n"
    assert listed.stderr == "Note: unread is not tracked in this store (schema v16): nothing is unread.\n"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert not Path(str(path) + "-wal").exists() or Path(str(path) + "-wal").stat().st_size == 0


def test_an_id_that_does_not_resolve_changes_nothing(home):
    path = home(30) / "state.db"
    done = hermes(path.parent, "read", C3, "no-such-session")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "Session 'no-such-session' not found.\n"
    assert all(value is None for value in watermarks(path).values())


def test_list_status_filters_by_lifecycle_and_refuses_an_unknown_word(home):
    root = home(30)
    interrupted = hermes(root, "list", "--status", "intr")
    assert interrupted.returncode == 0 and interrupted.stderr == ""
    assert sorted(listed_ids(interrupted.stdout)) == [K1, CR]  # k1 ends on a tool row, cr on a user one
    done = hermes(root, "list", "--status", "done,error")
    assert C3 in listed_ids(done.stdout) and K1 not in listed_ids(done.stdout)
    empty = hermes(root, "list", "--status", "empty")
    assert (empty.returncode, empty.stdout) == (0, "No sessions found.\n")
    bad = hermes(root, "list", "--status", "finished")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "unknown status 'finished'" in bad.stderr and "Traceback" not in bad.stderr
