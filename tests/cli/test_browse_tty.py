"""BR-17 on a real terminal: the app draws on ``/dev/tty`` whatever stdout and stderr are.

Each test starts ``hermes sessions browse`` in a new session whose controlling terminal is a
pseudo-terminal (as a shell in a terminal window would), with stdout to a file and stderr to
``/dev/null`` — the shell's ``id=$(hermes sessions browse 2>/dev/null)`` — types keys on the
terminal and checks what reached the terminal, stdout and the exit status.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from hermes_state import SessionDB

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")

FIRST_ID = "20250306_101500_f00d1234"


@pytest.fixture
def home(tmp_path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    db = SessionDB(path / "state.db")
    db.create_session("20250305_091523_a1b2c3", "cli")
    db.append_message("20250305_091523_a1b2c3", "user", "Help me refactor the auth module please")
    db.set_session_title("20250305_091523_a1b2c3", "refactoring auth")
    db.create_session(FIRST_ID, "telegram")
    db.append_message(FIRST_ID, "user", "What is the weather in Las Vegas?")
    db.set_session_title(FIRST_ID, "weather")
    db.close()
    return path


def _env(home: Path, tmp_path: Path) -> dict:
    env = dict(os.environ)
    env.update(
        HERMES_HOME=str(home),
        HERMES_SESSIONS_CONFIG_DIR=str(tmp_path / "config"),
        PYTHONPATH=str(REPO),
        TERM="xterm-256color",
    )
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    return env


class Terminal:
    """A pseudo-terminal that becomes the controlling terminal of one child process."""

    def __init__(self, argv: list[str], env: dict, stdout: Path, *, stdin_tty: bool = True,
                 size: tuple[int, int] = (100, 30), stderr: Path | None = None) -> None:
        self.master, slave = os.openpty()
        cols, rows = size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.screen = b""
        with open(stdout, "wb") as out, open(stderr or os.devnull, "wb") as err:
            self.proc = subprocess.Popen(
                argv,
                stdin=slave if stdin_tty else subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                cwd=REPO,
                start_new_session=True,
                pass_fds=(slave,),
                # The pty becomes the session's controlling terminal (what a terminal
                # emulator does for the shell), without being any of the std streams.
                preexec_fn=lambda: fcntl.ioctl(slave, termios.TIOCSCTTY, 0),
            )
        os.close(slave)

    def read(self, timeout: float = 0.1) -> None:
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            ready, _, _ = select.select([self.master], [], [], left)
            if not ready:
                return
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.screen += chunk

    def wait_for(self, text: bytes, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while text not in self.screen:
            if time.monotonic() > end or self.proc.poll() is not None:
                raise AssertionError(f"{text!r} never appeared on the terminal; got {self.screen[-2000:]!r}")
            self.read(0.2)

    def type(self, keys: bytes, settle: float = 0.5) -> None:
        os.write(self.master, keys)
        self.read(settle)

    def finish(self, timeout: float = 30.0) -> int:
        end = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < end:
            self.read(0.2)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("the browser did not exit")
        self.read(0.2)
        os.close(self.master)
        return self.proc.returncode


def _browse(home: Path, tmp_path: Path, **kw) -> tuple[Terminal, Path]:
    stdout = tmp_path / "stdout.txt"
    argv = [sys.executable, "-m", "hermes_tui.cli", "sessions", "browse"]
    return Terminal(argv, _env(home, tmp_path), stdout, **kw), stdout


def test_br17_app_draws_on_tty_when_stdout_and_stderr_are_redirected(home, tmp_path) -> None:
    """``id=$(hermes sessions browse 2>/dev/null)``: the UI appears, $id is only the id."""
    term, stdout = _browse(home, tmp_path)
    term.wait_for(b"weather")  # the list is drawn on the terminal, not into the pipe
    assert b"Browse sessions" not in term.screen  # not the plain picker
    term.type(b"\r")  # open the recap of the highlighted (newest) session
    term.wait_for(b"Resume")
    term.type(b"\r")  # choose it
    code = term.finish()
    assert code == 0
    assert stdout.read_text() == FIRST_ID + "\n"


def test_br17_app_takes_the_terminal_size_not_a_guess(home, tmp_path) -> None:
    """With stdout redirected the size still comes from the terminal (here 132×40)."""
    term, stdout = _browse(home, tmp_path, size=(132, 40))
    term.wait_for(b"weather")
    # Textual addresses rows by number: row 40 exists only on the real 132×40 terminal,
    # not on the 80×24 guessed when the size is asked of a redirected stdout.
    term.wait_for(b"\x1b[40;")
    term.type(b"q")
    assert term.finish() == 130
    assert stdout.read_text() == ""


def test_br17_cancel_with_q_exits_130_and_prints_nothing(home, tmp_path) -> None:
    term, stdout = _browse(home, tmp_path)
    term.wait_for(b"weather")
    term.type(b"q")
    assert term.finish() == 130
    assert stdout.read_text() == ""


def test_br17_app_draws_on_tty_even_when_stdin_is_redirected(home, tmp_path) -> None:
    """``hermes sessions browse < /dev/null``: keys come from the terminal, like fzf."""
    term, stdout = _browse(home, tmp_path, stdin_tty=False)
    term.wait_for(b"weather")
    term.type(b"q")
    assert term.finish() == 130
    assert stdout.read_text() == ""


def test_br17_without_controlling_terminal_plain_picker_uses_stderr(home, tmp_path) -> None:
    """No terminal at all (cron, CI): the plain picker, menu and prompt on stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", "browse"],
        input="1\n", capture_output=True, text=True, env=_env(home, tmp_path), cwd=REPO,
        timeout=60, start_new_session=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == FIRST_ID + "\n"
    assert "Browse sessions" in proc.stderr and "Select [1-2]" in proc.stderr


@pytest.mark.parametrize("answer", ["q\n", ""], ids=["q", "eof"])
def test_br17_plain_picker_cancel_exits_130(home, tmp_path, answer) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", "browse", "--plain"],
        input=answer, capture_output=True, text=True, env=_env(home, tmp_path), cwd=REPO,
        timeout=60, start_new_session=True,
    )
    assert proc.returncode == 130
    assert proc.stdout == ""
    assert "Cancelled." in proc.stderr


def test_cli13_not_a_database_on_a_terminal_is_one_line_before_any_drawing(home, tmp_path) -> None:
    """The browser opens the file in a thread that then reads the first pages while the UI
    loads; a file it cannot open is still said in one line, before drawing."""
    (home / "state.db").write_bytes(os.urandom(4096))
    for suffix in ("-wal", "-shm"):
        (home / f"state.db{suffix}").unlink(missing_ok=True)
    stderr = tmp_path / "stderr.txt"
    term, stdout = _browse(home, tmp_path, stderr=stderr)
    assert term.finish() == 1
    assert stdout.read_text() == ""  # (stdout is for the chosen id alone)
    err = stderr.read_text()
    assert err.count("\n") == 1 and err.startswith("Error: Could not open session database:"), err
    assert b"\x1b[?1049h" not in term.screen, "the UI never started"


def test_a_pasted_byte_that_is_not_utf8_is_shown_replaced_not_a_crash(home, tmp_path) -> None:
    """A lone 0x9b (an 8-bit CSI from a misbehaving paste) stopped Textual's input thread with
    a UnicodeDecodeError traceback and closed the browser. It is read as U+FFFD: the field
    takes it, the browser goes on, and q still quits."""
    term, stdout = _browse(home, tmp_path)
    term.wait_for(b"weather")
    term.type(b"/")
    term.type(b"weath\x9ber", settle=1.0)
    assert term.proc.poll() is None, term.screen[-2000:]
    assert b"Traceback" not in term.screen and b"UnicodeDecodeError" not in term.screen
    term.type(b"\x1b", settle=0.5)  # Esc: out of the field
    term.type(b"\x1b", settle=0.5)
    term.type(b"q")
    assert term.finish() == 130
    assert stdout.read_text() == ""
