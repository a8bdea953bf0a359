"""The workload commands' own front end: ``hermes_tui.cli_workload`` (simulate / generate).

Moved from tests/state/test_simulate.py when argument parsing left the generators: the
generators live in ``hermes_workload``; their options, messages and exit codes are the CLI's.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_tui.cli_workload import generate_main, parse_size
from hermes_tui.cli_workload import simulate_main as main
from hermes_workload.simulate import verify_simulation

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_sim_cli_sigint_stops_cleanly(tmp_path):
    home = tmp_path / "home"
    logs = tmp_path / "logs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", "simulate", "--home", str(home),
         "--writers", "2", "--rate", "40", "--seed", "2", "--log-dir", str(logs)],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a shell may start background jobs with SIGINT ignored; undo that for the child
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # (a guard against a hang, not a measure: a loaded machine may take long to start)
        deadline = time.monotonic() + 120
        written = 0
        while time.monotonic() < deadline and written < 20 and proc.poll() is None:
            time.sleep(0.2)
            try:
                with sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True) as c:
                    written = c.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
            except sqlite3.Error:
                written = 0
        assert written >= 20, "the simulator did not start writing"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode in (0, 130), err
    assert "Traceback" not in err and "Traceback" not in out
    assert out.startswith("Stopped: 2 writers")
    assert "errors 0" in out
    assert verify_simulation(home, sorted(logs.glob("*.jsonl"))) == []


def test_sim_cli_stops_at_duration(tmp_path, capsys):
    # How much a second holds depends on the machine (the writer starts in a fresh process,
    # which alone can take that second on a loaded one): only that the run ends, cleanly.
    assert main(["--home", str(tmp_path), "--duration", "1", "--rate", "20", "--seed", "4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Done: 1 writer, ")
    assert "errors 0" in out
    with SessionDB(tmp_path / "state.db", read_only=True) as db:
        assert db.message_count() >= 0  # a store that opens, whatever the second held


def test_sim_cli_events_is_a_workload_of_known_size(tmp_path, capsys):
    """``--events`` stops each writer after N events: the same store on any machine."""
    counts = []
    for run in ("a", "b"):
        home = tmp_path / run
        assert main(["--home", str(home), "--events", "40", "--rate", "0", "--seed", "4"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("Done: 1 writer, ") and ", 40 events (" in out and "errors 0" in out
        with SessionDB(home / "state.db", read_only=True) as db:
            counts.append((db.session_count(), db.message_count()))
    assert counts[0] == counts[1] and counts[0][1] > 0


def test_sim_cli_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--writers", "0"])
    assert exc.value.code == 2
    assert "at least 1" in capsys.readouterr().err


def test_generate_parse_size():
    assert parse_size("10k") == 10_000
    assert parse_size("100K") == 100_000
    assert parse_size("1m") == 1_000_000
    assert parse_size("2.5k") == 2_500
    assert parse_size("5000") == 5_000
    for bad in ("", "ten", "-5", "0", "1g"):
        with pytest.raises(ValueError):
            parse_size(bad)


def _dump(db_path: Path) -> list[tuple]:
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as c:
        return c.execute(
            "SELECT s.id, s.title, s.parent_session_id, m.role, m.content, m.tool_calls"
            " FROM messages m JOIN sessions s ON s.id = m.session_id ORDER BY m.id"
        ).fetchall()


def test_generate_builds_deterministic_database_of_requested_size(tmp_path, capsys):
    args = ["--size", "300", "--seed", "1", "--now", "1741166123"]
    assert generate_main([*args, "--home", str(tmp_path / "a")]) == 0
    with SessionDB(tmp_path / "a" / "state.db", read_only=True) as db:
        assert db.message_count() == 300
    out = capsys.readouterr().out
    assert out.startswith("Generated 300 messages in ")
    # the same size, seed and --now give the same rows (one shared generator for all uses)
    assert generate_main([*args, "--home", str(tmp_path / "b")]) == 0
    assert _dump(tmp_path / "a" / "state.db") == _dump(tmp_path / "b" / "state.db")


def test_generate_never_silently_replaces_a_database(tmp_path, capsys):
    assert generate_main(["--size", "50", "--home", str(tmp_path)]) == 0
    capsys.readouterr()
    assert generate_main(["--size", "80", "--home", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "--overwrite" in err and "Traceback" not in err
    with SessionDB(tmp_path / "state.db", read_only=True) as db:
        assert db.message_count() == 50
    assert generate_main(["--size", "80", "--home", str(tmp_path), "--overwrite"]) == 0
    with SessionDB(tmp_path / "state.db", read_only=True) as db:
        assert db.message_count() == 80


def test_generate_rejects_bad_size(capsys):
    with pytest.raises(SystemExit) as exc:
        generate_main(["--size", "lots"])
    assert exc.value.code == 2
    assert "not a size" in capsys.readouterr().err


def test_generate_progress_line_ends_with_a_newline(tmp_path, capsys):
    # The bar is the CLI's (rich.progress on stderr); whatever follows must start a new line.
    assert generate_main(["--size", "50", "--home", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "50/50" in err and err.endswith("\n")


@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminal")
def test_generate_ends_its_progress_line_on_a_terminal(tmp_path):
    """The bar is drawn on a terminal's stderr; its line is ended, so the shell prompt (or
    the next message) starts on a line of its own."""
    import re
    import select
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    master, slave = os.openpty()
    env = dict(os.environ, PYTHONPATH=str(repo), TERM="xterm-256color")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", "generate", "--size", "300",
         "--home", str(tmp_path / "h")],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=repo,
    )
    os.close(slave)
    out, _ = proc.communicate(timeout=120)
    seen = b""
    while select.select([master], [], [], 0.2)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.returncode == 0 and out.startswith(b"Generated 300 messages")
    text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", seen)
    assert b"generating" in text
    assert text.rstrip(b" ").endswith(b"\n"), text[-200:]


def test_generate_schema_30_builds_a_v30_store(tmp_path, capsys):
    args = ["--size", "400", "--seed", "2", "--now", "1741166123", "--schema", "30"]
    assert generate_main([*args, "--home", str(tmp_path / "a")]) == 0
    assert "schema 30" in capsys.readouterr().out
    conn = sqlite3.connect(tmp_path / "a" / "state.db")
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == 30
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 400
        for table in ("messages_fts", "messages_fts_trigram"):
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    finally:
        conn.close()
    assert generate_main([*args, "--home", str(tmp_path / "b")]) == 0
    assert (tmp_path / "a" / "state.db").read_bytes() == (tmp_path / "b" / "state.db").read_bytes()


def test_generate_and_simulate_reject_an_unknown_schema(capsys):
    for entry in (generate_main, main):
        with pytest.raises(SystemExit) as exc:
            entry(["--schema", "11"])
        assert exc.value.code == 2
        assert "invalid choice" in capsys.readouterr().err


def test_sim_cli_schema_30_creates_a_v30_home(tmp_path, capsys):
    home = tmp_path / "home"
    assert main(["--home", str(home), "--events", "30", "--rate", "0", "--schema", "30"]) == 0
    conn = sqlite3.connect(home / "state.db")
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == 30
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] > 0
    finally:
        conn.close()
    # asking for another layout than the home's is one line, not a traceback
    capsys.readouterr()
    assert main(["--home", str(home), "--duration", "1", "--schema", "16"]) == 1
    err = capsys.readouterr().err
    assert "schema 30 store, not 16" in err and "Traceback" not in err
