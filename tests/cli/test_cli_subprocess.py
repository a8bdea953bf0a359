"""``python -m hermes_tui.cli`` as a real process: exit codes, no traceback, signals, pipes.

These prove what in-process tests cannot: the interpreter's own exit path (no "Exception
ignored" after a closed pipe), a real Ctrl-C at a prompt, and that only ``browse`` may load
textual.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_state import SessionDB

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path) -> Path:
    path = tmp_path / "hermes-home"
    path.mkdir()
    return path


def env_for(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["HERMES_HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("HERMES_SESSIONS_DEBUG", None)
    return env


def hermes(home: Path, *args: str, stdin: str | None = "", timeout: float = 60):
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env_for(home),
        timeout=timeout,
    )


def populate(home: Path) -> None:
    db = SessionDB(home / "state.db")
    try:
        db.create_session("20250305_091523_a1b2c3", "cli")
        db.append_message("20250305_091523_a1b2c3", "user", "Help me refactor the auth module")
        db.append_message("20250305_091523_a1b2c3", "assistant", "Sure.")
        db.set_session_title("20250305_091523_a1b2c3", "refactoring auth")
    finally:
        db.close()


def test_cli2_subprocess_exit_codes_and_no_traceback(home):
    missing = hermes(home, "sessions", "list")
    assert missing.returncode == 1
    assert missing.stderr == f"Error: Could not open session database: no database at {home / 'state.db'}\n"
    assert missing.stdout == ""

    populate(home)
    ok = hermes(home, "sessions", "list")
    assert ok.returncode == 0 and "refactoring auth" in ok.stdout and ok.stderr == ""

    not_found = hermes(home, "sessions", "rename", "zzz", "x")
    assert (not_found.returncode, not_found.stdout, not_found.stderr) == (1, "", "Session 'zzz' not found.\n")

    usage = hermes(home, "sessions", "list", "--limit")
    assert usage.returncode == 2 and usage.stdout == "" and "usage:" in usage.stderr

    no_action = hermes(home, "sessions")  # a usage error: the help goes to stderr
    assert no_action.returncode == 2 and no_action.stdout == "" and "list" in no_action.stderr

    for result in (missing, ok, not_found, usage, no_action):
        assert "Traceback" not in result.stdout + result.stderr


def test_cli3_subprocess_not_a_database(home):
    (home / "state.db").write_bytes(os.urandom(4096))
    result = hermes(home, "sessions", "stats")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (f"Error: Could not open session database: {home / 'state.db'} "
                             "is not a SQLite database (or it is encrypted)\n")


def test_cli6_subprocess_eof_cancels(home):
    populate(home)
    result = hermes(home, "sessions", "delete", "20250305", stdin="")
    assert (result.returncode, result.stdout) == (1, "")
    # The note before the prompt (the session was written just now, not ended), the prompt, the
    # end of input, and the cancel: all on stderr.
    assert result.stderr == ("⚠ It looks live: an agent may still be writing to it.\n"
                             "Delete session '20250305_091523_a1b2c3' and all its messages? [y/N] \n"
                             "Cancelled.\n")


def test_cli6_subprocess_ctrl_c_at_prompt_cancels(home):
    populate(home)
    db = SessionDB(home / "state.db")
    try:
        db.end_session("20250305_091523_a1b2c3", "user_exit")  # something to prune: a prompt
    finally:
        db.close()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", "prune", "--older-than", "0"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        cwd=REPO, env=env_for(home),
    )
    prompt = b" older than 0 days? [y/N] "
    seen = b""
    while not seen.endswith(prompt):  # (the prompt is on stderr; EOF ends the wait)
        chunk = os.read(proc.stderr.fileno(), 256)
        if not chunk:
            break
        seen += chunk
    assert seen.startswith(b"Delete ") and seen.endswith(prompt), seen
    proc.send_signal(signal.SIGINT)
    out, rest = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert rest == b"\nCancelled.\n"
    assert out == b""


def test_cli_subprocess_broken_pipe_is_silent(home):
    db = SessionDB(home / "state.db")
    try:
        for n in range(60):  # many lines: writes continue after the reader has gone
            db.create_session(f"big{n:02d}", "cli")
            for i in range(4):
                db.append_message(f"big{n:02d}", "user", f"{i} " + "lorem ipsum dolor " * 100)
    finally:
        db.close()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", "export", "-"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, env=env_for(home),
    )
    assert proc.stdout.read(10) == b'{"id": "bi'
    proc.stdout.close()  # the reader goes away, like `| head -c 10`
    err = proc.stderr.read()
    proc.wait(timeout=30)
    assert proc.returncode == 1
    assert err == b""  # no traceback, no "Exception ignored … BrokenPipeError"


@pytest.mark.parametrize("argv", [["list"], ["stats"], ["export", "-"],
                                  ["rename", "20250305", "new"], ["delete", "zzz", "-y"]])
def test_cli13_only_browse_may_import_textual(home, argv):
    populate(home)
    code = (
        "import sys\n"
        "from hermes_tui.cli import main\n"
        f"code = main(['sessions', *{argv!r}])\n"
        "sys.stdout.flush()\n"
        "print('TEXTUAL-LOADED' if any(m == 'textual' or m.startswith('textual.') for m in sys.modules)"
        " else 'TEXTUAL-ABSENT', file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                            env=env_for(home), timeout=60)
    assert result.stderr.strip().splitlines()[-1] == "TEXTUAL-ABSENT"
