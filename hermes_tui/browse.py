"""``hermes sessions browse``: run the browser, its plain fallback, demo mode and the hand-off.

Like fzf (BR-17), the UI draws on the controlling terminal (``/dev/tty``) whatever stdin,
stdout and stderr are redirected to, so ``id=$(hermes sessions browse 2>/dev/null)`` works:
stdout carries only the chosen id. The plain picker (BR-6) runs only without a controlling
terminal or with ``--plain``, and writes its menu and prompt to stderr. A choice exits 0,
a cancel exits 130.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO

from hermes_state import SessionDB
from hermes_state.errors import DatabaseError, describe_db_error
from hermes_state.inert_text import has_unsafe
from hermes_state.models import shown_source
from hermes_state.timefmt import relative_time
from hermes_state.visibility import INTERNAL_SOURCES

from .collector import collector_paused
from .textsafe import fit_cells

#: Exit status of a cancelled browse (BR-17; 128 + SIGINT, as fzf uses).
CANCELLED = 130


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def plain_browse(
    db_path: Path,
    *,
    source: str | None,
    limit: int,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    menu: TextIO | None = None,
    now: Callable[[], float] = time.time,
) -> tuple[int, str | None]:
    """BR-6: a numbered list and a prompt. Returns (exit code, chosen id or None).

    The list, the prompt and its messages go to ``menu`` (stderr, BR-17), and so do errors
    opening the store: ``stdout`` is for the chosen id alone. A cancel returns
    ``(CANCELLED, None)``.
    """
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    menu = menu or sys.stderr
    try:
        db = SessionDB(db_path, read_only=True)
    except (DatabaseError, Exception) as exc:
        print(f"Error: Could not open session database: {_safe(_one_line(exc, db_path))}", file=menu)
        return 1, None
    for warning in db.warnings:
        _err(f"Warning: {_safe(warning)}")
    try:
        rows = db.list_sessions_rich(
            source=source, exclude_sources=None if source else list(INTERNAL_SOURCES), limit=limit
        )
    except Exception as exc:
        print(f"Error: Could not open session database: {_safe(_one_line(exc, db_path))}", file=menu)
        return 1, None
    finally:
        db.close()
    return _plain_pick(rows, stdin=stdin, menu=menu, now=now)


def _plain_pick(
    rows: list[dict], *, stdin: TextIO | None = None, menu: TextIO | None = None,
    now: Callable[[], float] = time.time,
) -> tuple[int, str | None]:
    """The numbered list of ``rows`` and the prompt (BR-6), on ``menu``."""
    stdin = stdin or sys.stdin
    menu = menu or sys.stderr
    if not rows:
        print("No sessions found.", file=menu)
        return 0, None
    current = now()
    print("\n  Browse sessions  (enter number to resume, q to cancel)\n", file=menu)
    for i, row in enumerate(rows, start=1):
        label = fit_cells(_safe(row.get("title") or row.get("preview") or row["id"]), 50, 50, "...")
        when = relative_time(row.get("last_active"), now=current)
        # The source in full ("discord", not "discor"), as ``list`` prints it (v30:
        # created→current where the session moved platforms, UC-11).
        source = shown_source(row.get("source"), row.get("created_source"))
        print(f"  {i:>3}. {label}  {when:<10}  {_safe(source)}", file=menu)
    n = len(rows)
    while True:
        print(f"\n  Select [1-{n}]: ", end="", file=menu, flush=True)
        try:
            line = stdin.readline()
        except KeyboardInterrupt:
            print("", file=menu)
            return CANCELLED, None
        if line == "":
            print("", file=menu)
            return CANCELLED, None
        answer = line.strip()
        if answer.lower() in ("", "q", "quit", "exit"):
            return CANCELLED, None
        try:
            number = int(answer)
        except ValueError:
            print("  Invalid input. Enter a number or q to cancel.", file=menu)
            continue
        if not 1 <= number <= n:
            print(f"  Invalid selection. Enter 1-{n} or q to cancel.", file=menu)
            continue
        return 0, rows[number - 1]["id"]


def _safe(text: str) -> str:
    from hermes_state.inert_text import inert_line

    return inert_line(text)


def _one_line(exc: BaseException, path: Path) -> str:
    if isinstance(exc, DatabaseError):
        return str(exc)
    import sqlite3

    if isinstance(exc, sqlite3.Error):
        return describe_db_error(exc, path)
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def own_script_paths() -> set[Path]:
    """Paths of this project's own scripts that run the session commands (never re-executed
    by a resume command): ``hermes-sessions``, or a ``hermes`` of an older install. Our
    ``hermes`` shim is not one: it hands ``hermes --resume`` to Hermes Agent."""
    from .agent import script_kind

    paths: set[Path] = set()
    for candidate in (shutil.which("hermes"), sys.argv[0] if sys.argv else None):
        if not candidate or script_kind(candidate) != "sessions":
            continue
        try:
            paths.add(Path(candidate).resolve())
        except OSError:
            continue
    return paths


def resume_argv(template: str, session_id: str) -> list[str]:
    """The configured ``resume_command`` with ``{id}`` filled in, as an argv list."""
    argv = shlex.split(template)
    return [part.replace("{id}", session_id) for part in argv]


def refuses_own_script(argv: list[str]) -> bool:
    """CLI-13: a resume command that would start this project's session commands again is
    refused: one of our session scripts, or our ``hermes`` shim asked for ``sessions``."""
    from .agent import script_kind

    if not argv:
        return True
    exe = shutil.which(argv[0])
    if exe is None:
        return False
    kind = script_kind(exe)
    if kind == "shim":
        return len(argv) > 1 and argv[1] == "sessions"
    try:
        return kind == "sessions" or Path(exe).resolve() in own_script_paths()
    except OSError:
        return False


def demo_hint(session_id: str, resume_command: str | None) -> str:
    """What a demo's hand-off says instead of resuming: a demo session lives in a throwaway
    store that goes with the demo, so nothing is run; but the command named is the one the
    person configured (``resume_command``), not a ``hermes --resume`` they never asked for."""
    from hermes_state.inert_text import shell_quote

    from .agent import resume_hint

    head = "Demo session (its store goes with the demo): not resumed."
    if not resume_command:
        return f"{head} On your own sessions: {resume_hint(session_id)}"
    argv = resume_argv(resume_command, session_id)
    return f"{head} On your own sessions, resume_command runs: {' '.join(shell_quote(a) for a in argv)}"


def hand_off(session_id: str, resume_command: str | None, *, profile: Any = None, demo: bool = False) -> int:
    """BR-7: print the id on stdout; run the resume command in place of this process.

    ``profile`` (a :class:`~hermes_state.profiles.Profile`): the session is in that profile's
    store, which was named (``--profile``, a row of ``--all-profiles``) or is not the default
    one (PF-7). Every command printed names it (``hermes -p NAME --resume ID``), and the
    resume command runs with ``HERMES_HOME`` at its home, where Hermes Agent finds the session
    (it trusts a ``HERMES_HOME`` inside ``profiles/``, PF-1) whatever profile it would
    otherwise choose.

    An id holding a control character (another writer, or ``hermes sessions import``, can
    store one) is refused: nothing on stdout, nothing run, exit 1, and on stderr the command
    that resumes it, quoted so that every character is visible and the shell still makes
    the exact id of it (:func:`~hermes_tui.agent.resume_hint`). Printed raw it would drive
    the terminal (stdout may be one, or a pipe that ends at one); printed escaped it would
    be an id that does not exist, which ``hermes --resume "$id"`` would then be given.
    """
    from .agent import resume_hint

    name = profile.name if profile is not None else None
    if has_unsafe(session_id):
        _err(
            "Error: the chosen session id holds control characters: not printed, as they would "
            f"reach the terminal. {resume_hint(session_id, name)}"
        )
        return 1
    print(session_id, flush=True)
    if demo:
        _err(demo_hint(session_id, resume_command))
        return 0
    if not resume_command:
        _err(resume_hint(session_id, name))
        return 0
    argv = resume_argv(resume_command, session_id)
    if refuses_own_script(argv):
        _err(
            f"Not running resume_command {resume_command!r}: it starts this session browser "
            f"itself, not Hermes Agent. {resume_hint(session_id, name)}"
        )
        return 1
    if profile is not None:
        _err(f"(resuming in profile '{_safe(name)}': HERMES_HOME={_safe(str(profile.home))})")
        os.environ["HERMES_HOME"] = str(profile.home)
    try:
        sys.stdout.flush()
        os.execvp(argv[0], argv)
    except OSError as exc:
        _err(f"Error: could not run resume_command {argv[0]!r}: {exc.strerror or exc}")
        return 1
    return 0  # pragma: no cover (exec does not return)


class Demo:
    """A throwaway HERMES_HOME with realistic sessions and a background writer."""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="hermes-demo-"))
        self.db_path = self.home / "state.db"
        self.writer: subprocess.Popen | None = None

    def build(self) -> None:
        from hermes_workload.corpus import generate_demo

        _err(f"Building demo data in {self.home} …")
        # The layout people run today (upstream v30): archive, pins, hidden and internal runs,
        # delegates, resets, rewinds, workspaces -- everything the browser shows.
        generate_demo(self.db_path, schema=30)

    def start_writer(self) -> None:
        """Keep appending like a gateway would, so live refresh is visible."""
        self.writer = subprocess.Popen(
            [sys.executable, "-m", "hermes_tui.cli", "sessions", "simulate",
             "--home", str(self.home), "--writers", "1", "--rate", "0.5", "--seed", "7"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def close(self) -> None:
        if self.writer is not None and self.writer.poll() is None:
            self.writer.terminate()
            try:
                self.writer.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.writer.kill()
        shutil.rmtree(self.home, ignore_errors=True)


def open_controlling_tty() -> int | None:
    """A read-write descriptor of the controlling terminal, or None when there is none."""
    if os.name != "posix":
        return 0 if sys.stdin.isatty() and sys.stderr.isatty() else None
    try:
        fd = os.open("/dev/tty", os.O_RDWR | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    if not os.isatty(fd):
        os.close(fd)
        return None
    return fd


@contextmanager
def drawing_on(tty: int) -> Iterator[None]:
    """While the app runs, standard streams that are not a terminal point at ``tty`` (BR-17).

    Textual reads keys from fd 0, draws on fd 2 and takes the size from fd 1; with any of
    them redirected (``id=$(…)``, ``2>/dev/null``, ``< file``) it would draw into the pipe
    at a guessed size. The original descriptors come back before the id is printed, so
    stdout still carries only the chosen id.
    """
    if os.name != "posix":
        yield
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    saved: dict[int, int] = {}
    try:
        for fd in (0, 1, 2):
            try:
                if os.isatty(fd):
                    continue
            except OSError:
                pass
            try:
                saved[fd] = os.dup(fd)
            except OSError:
                saved[fd] = -1  # fd was closed: close it again afterwards
            os.dup2(tty, fd)
        yield
    finally:
        for stream in (sys.__stdout__, sys.__stderr__):
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError):
                pass
        for fd, copy in saved.items():
            if copy >= 0:
                os.dup2(copy, fd)
                os.close(copy)
            else:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if tty > 2:
            os.close(tty)


def start_first_window(db_path: Path, config, *, source: str | None, cache_dir: Path | None = None):
    """Open the store and read the browser's first pages in a thread, now, while the UI is
    imported, so the two overlap and ``browse`` reaches its first page sooner; hand the result
    to ``build_app(first_window=...)``."""
    from hermes_state.listing import ListQuery, Order
    from hermes_state.paths import cache_dir as default_cache_dir

    from .data import FirstWindow

    # The very list the browser's screen opens on (BrowserScreen.filters), so it adopts the page.
    opening = ListQuery.human(source or None, show_internal=config.show_tool_sessions, order=Order.ACTIVITY)
    return FirstWindow(
        db_path, page_size=config.page_size, query=opening,
        cache_dir=cache_dir if cache_dir is not None else default_cache_dir(),
    )


def run_browse(
    db_path: Path | None,
    *,
    source: str | None,
    limit: int,
    demo: bool,
    plain: bool,
    profiles: list | None = None,
    profile: Any = None,
) -> int:
    """The whole of ``hermes sessions browse`` (CLI-13, BR-5 … BR-7); ``profiles``: several
    Hermes profiles' stores browsed as one (PF-6); ``profile``: the profile of ``db_path``
    when the commands printed must name it (PF-7: it was named, or is not the default)."""
    # No garbage collection until the app is mounted (it turns the collector back on with
    # its own thresholds): see hermes_tui.collector.
    with collector_paused():
        if profiles:
            return _browse_profiles(profiles, source=source, limit=limit, plain=plain)
        return _run_browse(db_path, source=source, limit=limit, demo=demo, plain=plain, profile=profile)


def _pick_in_app(tty: int, db_path: Path, **build: Any) -> tuple[int, str | None]:
    """Run the browser on the terminal ``tty`` (``build``: the rest of
    :func:`~hermes_tui.app.build_app`'s arguments) and say, as :func:`plain_browse` does,
    what was chosen: ``(CANCELLED, id)``, ``(CANCELLED, None)`` when the person left without
    choosing, or ``(code, None)`` when the app ended on an error it has reported."""
    from .app import build_app
    from .tolerant_input import install

    install()  # (a paste with a byte that is not UTF-8 must not close the browser)
    app = build_app(db_path, save_settings=True, **build)
    with drawing_on(tty):
        chosen = app.run()
    if app.return_code not in (None, 0):
        return app.return_code or 1, None
    return CANCELLED, chosen


def _none_chosen(code: int) -> int:
    """The command's exit code when no session was chosen (``CANCELLED``: the person left,
    which is said; any other code's error was reported where it happened)."""
    if code == CANCELLED:
        _err("Cancelled.")
    return code


def _browse_profiles(profiles: list, *, source: str | None, limit: int, plain: bool) -> int:
    """``browse --all-profiles``: the browser over every profile's store (a store that cannot
    be read is named in the status line and left out), or the plain picker over their merged
    list. The chosen session is handed off in its own profile."""
    from . import cli_config

    config, problems = cli_config.read()
    try:
        tty = None if plain else open_controlling_tty()
        if tty is None:
            cli_config.say_problems()  # (the browser shows them in its status line)
            code, chosen = _plain_across(profiles, source=source, limit=limit)
        else:
            # Every profile's first page read ahead while the UI is imported, as for one store.
            ahead = {p.name: start_first_window(p.db_path, config, source=source) for p in profiles}
            code, chosen = _pick_in_app(tty, profiles[0].db_path, config=config, source=source,
                                        config_problems=problems, profiles=profiles, first_window=ahead)
        if chosen is None:
            return _none_chosen(code)
        name, _sep, session_id = chosen.partition(":")
        # (every row's profile is named in the list: the commands printed name it too, the
        # default one included, which a sticky `hermes profile use` would not reach)
        return hand_off(session_id, config.resume_command, profile=next(p for p in profiles if p.name == name))
    except KeyboardInterrupt:
        _err("Cancelled.")
        return CANCELLED


def _plain_across(profiles: list, *, source: str | None, limit: int) -> tuple[int, str | None]:
    """BR-6's numbered list over every profile's store, merged by start; the chosen row as
    ``profile:id``."""
    from hermes_state.across_profiles import merge_listed, open_each

    opened, left = open_each(profiles, lambda p: SessionDB(p.db_path, read_only=True))
    for item in left:
        _err(f"Warning: {_safe(item.line())}")
    try:
        streams = [
            (item.profile.name, item.store.list_sessions_rich(
                source=source, exclude_sources=None if source else list(INTERNAL_SOURCES), limit=limit))
            for item in opened
        ]
    finally:
        for item in opened:
            item.store.close()
    rows = [dict(row, id=f"{name}:{row['id']}", source=f"{name} · {row.get('source') or ''}")
            for name, row in merge_listed(streams, by_activity=False)][:limit]
    if not opened:
        _err("Error: no profile's session database could be read")
        return 1, None
    return _plain_pick(rows)


def _run_browse(db_path: Path | None, *, source: str | None, limit: int, demo: bool, plain: bool,
                profile: Any = None) -> int:
    from . import cli_config

    config, problems = cli_config.read()
    demo_home: Demo | None = None
    try:
        if demo:
            demo_home = Demo()
            demo_home.build()
            db_path = demo_home.db_path
        elif db_path is None or not db_path.exists():
            _err(
                f"Error: no session database at {_safe(str(db_path))} "
                "(try 'hermes sessions browse --demo' to explore demo data)"
            )
            return 1
        elif db_path.is_dir():
            _err(f"Error: Could not open session database: {_safe(str(db_path))} is a directory")
            return 1
        tty = None if plain else open_controlling_tty()
        if tty is None:
            cli_config.say_problems()  # (the browser shows them in its status line)
        # The demo's store goes when it ends: so does what was cached of it.
        cache_dir = demo_home.home / "cache" if demo_home is not None else None
        first = None
        if demo_home is None:
            # Fail early, with one line, on a file that is not a usable database. For the
            # browser the file is opened by the thread that goes on to read the first pages
            # while the UI loads.
            if tty is None:
                try:
                    SessionDB(db_path, read_only=True).close()
                except Exception as exc:
                    _err(f"Error: Could not open session database: {_safe(_one_line(exc, db_path))}")
                    return 1
            else:
                first = start_first_window(db_path, config, source=source, cache_dir=cache_dir)
                first.opened.wait()
                if first.error is not None and first.db is None:
                    _err(f"Error: Could not open session database: {_safe(_one_line(first.error, db_path))}")
                    first.close()
                    return 1
        if tty is None:
            code, chosen = plain_browse(db_path, source=source, limit=limit)
        else:
            if demo_home is not None:
                demo_home.start_writer()
            code, chosen = _pick_in_app(tty, db_path, config=config, source=source, config_problems=problems,
                                        cache_dir=cache_dir, first_window=first,
                                        profile=profile.name if profile is not None else None)
        if chosen is None:
            return _none_chosen(code)
        return hand_off(chosen, config.resume_command, profile=profile, demo=demo)
    except KeyboardInterrupt:
        _err("Cancelled.")
        return CANCELLED
    finally:
        if demo_home is not None:
            demo_home.close()
