"""Fixtures and helpers of the reliability tests for locks, bad environments, hostile content
and hostile queries.

Import what a test module needs (fixtures included) from here; ``conftest.py`` of this
directory belongs to the contention/crash/export tests.

* :func:`make_app` / :func:`settle` — the browser on a real file with a frozen clock, and a
  way to wait for its workers (as in ``tests/tui``; duplicated here so these tests do not
  depend on another directory's conftest).
* :func:`populate` — a real database of ordinary sessions with pinned timestamps.
* :class:`Locker` — a real second process holding a lock on the database: ``immediate``
  (``BEGIN IMMEDIATE``: writers wait, WAL readers do not) or ``exclusive``
  (``PRAGMA locking_mode=EXCLUSIVE`` plus a write: every other connection, readers included,
  gets ``SQLITE_BUSY`` until it lets go).
* :func:`unprivileged_prefix` / :func:`run_unprivileged` — run a check in a child process
  that cannot bypass file permissions. The tests run as root, and root ignores permission
  bits; ``capsh`` drops ``CAP_DAC_OVERRIDE``/``CAP_DAC_READ_SEARCH`` so a 0444 file or a
  0555 directory really is read-only for the child (a non-root user needs nothing).
* :func:`terminal_output` / :func:`assert_inert_screen` — what the terminal would receive for
  the current screen, and the check that no byte of content drives it.
* ``bench_corpus`` — the session-scoped bench corpus for the query-latency tests, built once
  per test run and shared by the xdist workers.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from hermes_state import SessionDB

REPO = Path(__file__).resolve().parents[2]

#: The injected clock of these tests: 2026-11-18 08:00 UTC.
NOW = 1794988800.0
SIZE = (120, 32)

os.environ["TZ"] = "UTC"
if hasattr(time, "tzset"):
    time.tzset()


# ---------------------------------------------------------------------------- the app


def frozen_clock() -> float:
    return NOW


def make_app(db_path: Path, **kwargs: Any):
    """``build_app`` on ``db_path`` with a frozen clock, no animations, no debounce, no watcher."""
    from hermes_tui.app import build_app
    from hermes_tui.config import AppConfig

    kwargs.setdefault("clock", frozen_clock)
    kwargs.setdefault("config", AppConfig(animations="none", search_debounce_s=0.0))
    kwargs.setdefault("watch", False)
    kwargs.setdefault("db_label", "~/.hermes/state.db")
    return build_app(db_path, **kwargs)


def busy_workers(app) -> list:
    busy = [w for w in app.workers if not w.is_finished and w.group != "watch"]
    for screen in app.screen_stack:
        busy += [w for w in screen.workers if not w.is_finished and w.group != "watch"]
    return busy


async def settle(pilot, rounds: int = 3, timeout: float = 20.0) -> None:
    """Wait until no worker except the change watcher runs, then let the UI paint."""
    deadline = time.monotonic() + timeout
    for _ in range(rounds):
        while busy_workers(pilot.app) and time.monotonic() < deadline:
            await pilot.pause(0.01)
        await pilot.pause()


def notifications(app) -> list[tuple[str, str]]:
    """``(severity, message)`` of every notification still on screen."""
    return [(n.severity, str(n.message)) for n in app._notifications]


# ---------------------------------------------------------------------------- databases


def populate(path: Path, sessions: int = 30, messages: int = 4, *, prefix: str = "s") -> list[str]:
    """``sessions`` ended cli sessions, newest first by id order, ``messages`` each."""
    db = SessionDB(path)
    ids = []
    try:
        for i in range(sessions):
            sid = f"20261118_{i:06d}_{prefix}{i:04d}"
            db.create_session(sid, "cli")
            for j in range(messages):
                db.append_message(sid, "user" if j % 2 == 0 else "assistant", f"message {j} of session {i}")
            db.end_session(sid, "user_exit")
            started = NOW - 3600 - i * 600
            db._execute_write(
                lambda c, sid=sid, t=started: (
                    c.execute("UPDATE sessions SET started_at = ?, ended_at = ? WHERE id = ?", (t, t + 60, sid)),
                    c.execute("UPDATE messages SET timestamp = ? + id * 0.001 WHERE session_id = ?", (t, sid)),
                )
            )
            ids.append(sid)
    finally:
        db.close()
    return ids


def schema_fingerprint(path: Path) -> tuple[Any, ...]:
    """``(schema_version rows, sqlite_master rows)`` read with a plain read-only connection."""
    import sqlite3
    from urllib.parse import quote

    conn = sqlite3.connect("file:" + quote(str(path)) + "?mode=ro", uri=True)
    try:
        version = conn.execute("SELECT version FROM schema_version").fetchall()
        master = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    finally:
        conn.close()
    return version, master


def title_of(path: Path, session_id: str) -> str | None:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT title FROM sessions WHERE id = ?", (session_id,)).fetchone()
    finally:
        conn.close()
    return row[0] if row else None


# ---------------------------------------------------------------------------- locks held by another process

_LOCKER = r"""
import sqlite3, sys, time
path, mode, hold = sys.argv[1], sys.argv[2], float(sys.argv[3])
conn = sqlite3.connect(path, isolation_level=None, timeout=10)
if mode == "exclusive_mode":
    # WAL + EXCLUSIVE locking mode: the (empty) write below takes the exclusive lock and the
    # connection keeps it until it closes; readers in other processes get SQLITE_BUSY.
    conn.execute("PRAGMA locking_mode=EXCLUSIVE")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE sessions SET title = title WHERE 0")
    conn.execute("COMMIT")
else:
    conn.execute("BEGIN IMMEDIATE" if mode == "immediate" else "BEGIN EXCLUSIVE")
print("locked", flush=True)
deadline = time.monotonic() + hold
while time.monotonic() < deadline:
    time.sleep(0.01)
if mode != "exclusive_mode":
    conn.execute("ROLLBACK")
conn.close()
print("released", flush=True)
"""


class Locker:
    """A real process holding a lock on ``path`` for ``hold_s`` seconds, then letting go.

    Modes: ``immediate`` / ``exclusive`` (``BEGIN IMMEDIATE`` / ``BEGIN EXCLUSIVE``: in WAL
    mode both block writers only) and ``exclusive_mode`` (``PRAGMA locking_mode=EXCLUSIVE``
    and a write: readers are blocked too). ``with Locker(path, mode, 5.0) as lock:`` returns
    once the lock is held; :meth:`wait` returns once it is released.
    """

    MODES = ("immediate", "exclusive", "exclusive_mode")

    def __init__(self, path: Path, mode: str = "immediate", hold_s: float = 5.0) -> None:
        if mode not in self.MODES:
            raise ValueError(mode)
        self.path = path
        self.mode = mode
        self.hold_s = hold_s
        self.proc: subprocess.Popen | None = None
        self.locked_at = 0.0
        self.released_at: float | None = None

    def __enter__(self) -> "Locker":
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _LOCKER, str(self.path), self.mode, str(self.hold_s)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        line = self.proc.stdout.readline().strip()
        if line != "locked":
            raise RuntimeError(f"locker did not take the lock: {line!r} {self.proc.stderr.read()}")
        self.locked_at = time.monotonic()
        return self

    @property
    def held(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout: float = 30.0) -> None:
        """Block until the locker released its lock and exited."""
        assert self.proc is not None
        line = self.proc.stdout.readline().strip()
        self.proc.wait(timeout=timeout)
        assert line == "released", (line, self.proc.stderr.read())
        if self.released_at is None:
            self.released_at = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc is not None:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


# ---------------------------------------------------------------------------- dropping privileges


def _capsh_works() -> bool:
    capsh = shutil.which("capsh")
    if capsh is None:
        return False
    probe = subprocess.run(
        [capsh, "--drop=cap_dac_override,cap_dac_read_search", "--", "-c", "exit 0"],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=20,
    )
    return probe.returncode == 0


def unprivileged_prefix() -> list[str] | None:
    """argv prefix running a command without the power to ignore file permissions.

    ``[]`` for an ordinary user; ``capsh --drop=…`` for root (its child keeps uid 0, so it can
    still run the root-owned virtualenv, but mode bits now bind it); None when neither works.
    """
    if os.geteuid() != 0:
        return []
    if _capsh_works():
        return [shutil.which("capsh"), "--drop=cap_dac_override,cap_dac_read_search", "--",
                "-c", 'exec "$0" "$@"']
    return None


def require_unprivileged() -> list[str]:
    prefix = unprivileged_prefix()
    if prefix is None:
        pytest.skip("cannot drop the capability to ignore file permissions (no capsh)")
    return prefix


def run_unprivileged(code: str, *args: str, env: dict[str, str] | None = None,
                     stdin: str | None = None, timeout: float = 90) -> subprocess.CompletedProcess:
    """Run ``python -c code args…`` from the repository root without DAC override."""
    prefix = require_unprivileged()
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run(
        [*prefix, sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=REPO, env=full_env, input=stdin if stdin is not None else "", text=True,
        capture_output=True, timeout=timeout,
    )


_CLI_BATCH = r"""
import contextlib, io, json, sys
from hermes_tui.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    sys.stdin = io.StringIO("")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["sessions", *argv])
    results.append([code, out.getvalue(), err.getvalue()])
print("RESULTS " + json.dumps(results))
"""


def cli_unprivileged(home: Path, commands: list[list[str]]) -> list[tuple[int, str, str]]:
    """Run ``hermes sessions …`` for each argv of ``commands`` (in order, one child process
    without DAC override, ``HERMES_HOME=home``); ``[(code, stdout, stderr)]``."""
    proc = run_unprivileged(
        _CLI_BATCH, json.dumps(commands),
        env={"HERMES_HOME": str(home), "HERMES_SESSIONS_WRITE_RETRIES": "2"},
    )
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULTS ")]
    assert proc.returncode == 0 and lines, f"{proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return [tuple(r) for r in json.loads(lines[-1][len("RESULTS "):])]


#: Runs the browser (Pilot) on argv[1] and prints a JSON report of what a person would see:
#: which screen, the status line, notices, and what r / d answered.
APP_PROBE = r"""
import asyncio, json, sys, os
from pathlib import Path
sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "reliability"))
from helpers_env import make_app, settle, notifications, SIZE, terminal_output

if os.environ.get("PROBE_ACCESS_SAYS_WRITABLE") == "1":
    # A file system whose permission bits do not tell (read-only mount, ACLs): only
    # SQLite's own answer can reveal that the store is read-only.
    os.access = lambda *args, **kwargs: True

async def main(path, keys):
    app = make_app(Path(path))
    report = {}
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.pause(0.2)
        await settle(pilot)
        report["screen"] = type(app.screen).__name__
        report["read_only_reason"] = app.ctx.access.read_only_reason
        report["notices"] = notifications(app)
        report["text"] = terminal_output(app, plain=True)
        from hermes_tui.widgets.status import StatusLine
        status = [w for screen in app.screen_stack for w in screen.query(StatusLine)]
        report["status"] = [s.left + " | " + str(s.warning) for s in status]
        report["after_keys"] = []
        for key in keys:
            app.clear_notifications()
            await pilot.press(key)
            await settle(pilot)
            await pilot.pause(0.1)
            report["after_keys"].append([key, type(app.screen).__name__, notifications(app)])
            if type(app.screen).__name__ != report["screen"]:
                await pilot.press("escape")
                await settle(pilot)
    report["return_code"] = app.return_code
    print("REPORT " + json.dumps(report))

asyncio.run(main(sys.argv[1], sys.argv[2:]))
"""


def app_report(db_path: Path, *keys: str, unprivileged: bool = False,
               env: dict[str, str] | None = None) -> dict:
    """Run :data:`APP_PROBE` in a child process (optionally without DAC override)."""
    if unprivileged:
        proc = run_unprivileged(APP_PROBE, str(db_path), *keys, env=env)
    else:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        proc = subprocess.run(
            [sys.executable, "-c", APP_PROBE, str(db_path), *keys], cwd=REPO, env=env,
            text=True, capture_output=True, timeout=90, stdin=subprocess.DEVNULL,
        )
    lines = [l for l in proc.stdout.splitlines() if l.startswith("REPORT ")]
    assert proc.returncode == 0 and lines, f"probe failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(lines[-1][len("REPORT "):])


# ---------------------------------------------------------------------------- what reaches the terminal

#: Sequences Rich/Textual themselves emit: SGR styles, cursor moves, show/hide cursor.
_OWN_SEQUENCES = re.compile(r"\x1b\[[0-9;:?]*[A-Za-z]")


def terminal_output(app, *, plain: bool = False) -> str:
    """The bytes the terminal would receive for a full repaint of the current screen.

    Rendered exactly as Textual's driver renders an update (the compositor's full update
    printed on a truecolor terminal console). ``plain=True`` returns the text without
    Textual's own escape sequences (for reading what is on screen).
    """
    from rich.console import Console

    console = Console(
        file=io.StringIO(), force_terminal=True, color_system="truecolor", width=app.size.width,
        height=app.size.height, legacy_windows=False, safe_box=False, record=False,
    )
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    if plain:
        lines = ["".join(seg.text for strip in chops for seg in strip) for chops in update.strips]
        return "\n".join(line.rstrip() for line in lines)
    console.print(update, end="")
    return console.file.getvalue()


def squeeze(text: str) -> str:
    """``text`` without whitespace and box-drawing borders (to find wrapped text on screen)."""
    return "".join(ch for ch in text if not ch.isspace() and ch not in "│╭╮╰╯─▏▕┃")


def screen_segments(app) -> Iterator[Any]:
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    for chops in update.strips:
        for strip in chops:
            yield from strip


FORBIDDEN_SEGMENT_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def assert_inert_screen(app) -> str:
    """No content byte drives the terminal: returns the plain screen text for further checks.

    * no segment text holds ESC, another C0/C1 control or a bidi control;
    * no segment carries a hyperlink (OSC 8) or an ``@click`` action outside Textual's own
      footer/command widgets;
    * the encoded output holds no OSC / DCS / APC sequence at all, and every ESC in it
      starts one of the CSI sequences Textual itself emits.
    """
    for segment in screen_segments(app):
        bad = FORBIDDEN_SEGMENT_CHARS.search(segment.text)
        assert bad is None, f"control {bad.group()!r} reaches the terminal in {segment.text!r}"
        style = segment.style
        if style is not None:
            assert not style.link, f"hyperlink {style.link!r} from {segment.text!r}"
            meta = style.meta or {}
            click = meta.get("@click")
            if click:
                assert "app.quit" not in str(click), f"click action {click!r} on {segment.text!r}"
    out = terminal_output(app)
    for opener in ("\x1b]", "\x1bP", "\x1b_", "\x1b^", "\x1bX", "\x9d", "\x90", "\x9b"):
        assert opener not in out, f"{opener!r} in terminal output"
    leftover = _OWN_SEQUENCES.sub("", out)
    assert "\x1b" not in leftover, repr(leftover[max(0, leftover.index("\x1b") - 40):][:80])
    return terminal_output(app, plain=True)


# ---------------------------------------------------------------------------- bench corpus

#: Messages in the query-latency corpus. 100k (the issue's bench size) unless overridden;
#: ``HERMES_RELIABILITY_CORPUS`` may name an existing corpus to use as is.
CORPUS_MESSAGES = int(os.environ.get("HERMES_RELIABILITY_CORPUS_MESSAGES", "100000"))
CORPUS_NOW = 1767225600.0


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_shared_corpus(root: Path, messages: int = CORPUS_MESSAGES, seed: int = 0) -> Path:
    """The corpus under ``root``, built by the first caller; concurrent callers wait for it."""
    from hermes_workload.corpus import generate_corpus

    target = root / f"reliability-corpus-{messages}-seed{seed}.db"
    with _file_lock(root / (target.name + ".lock")):
        if not target.exists():
            building = root / (target.name + ".building")
            for stale in root.glob(building.name + "*"):
                stale.unlink()
            generate_corpus(building, messages=messages, seed=seed, now=CORPUS_NOW)
            for suffix in ("-wal", "-shm"):
                side = Path(str(building) + suffix)
                if side.exists():
                    side.unlink()
            os.replace(building, target)
    return target


@pytest.fixture(scope="session")
def bench_corpus(tmp_path_factory) -> Path:
    """The bench corpus (``CORPUS_MESSAGES`` messages, seed 0), once per test run."""
    given = os.environ.get("HERMES_RELIABILITY_CORPUS")
    if given:
        return Path(given)
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # shared by every worker of this run
    return build_shared_corpus(root)
