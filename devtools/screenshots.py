"""Make the README's screenshots with the app itself: ``python -m devtools.screenshots [--out DIR] [NAME ...]``.

Every picture is the browser's own ``save_screenshot`` of a headless run (``run_test``), so it
shows what the app draws today. Each run is deterministic: a fixed terminal size, the clock
pinned to :data:`NOW`, the time zone UTC, the one figure the machine decides (how long a
search took) pinned, and data made from this repository alone -- the ``--demo`` corpus
(:func:`hermes_workload.corpus.generate_demo`, fixed seed and anchor, upstream's v30 layout),
plus what a screenshot needs on top (read watermarks, a gateway's lane index, a Hermes root
with profiles). Running it twice writes the same files.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable, Iterator

from devtools.pilot import settle as pilot_settle

# Times are drawn in local time: UTC, so the pictures do not depend on where they are made.
os.environ["TZ"] = "UTC"
if hasattr(time, "tzset"):
    time.tzset()

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "screenshots"

#: The injected clock: 2026-11-18 08:00 UTC (the UI tests' own), the demo corpus anchored on it.
NOW = 1794988800.0
#: The demo corpus's seed (the one ``browse --demo`` uses).
DEMO_SEED = 7
#: How the status line names the store (a temporary path would change every run).
DB_LABEL = "~/.hermes/state.db"
#: Where the export dialog proposes to write (the default is the user's own directory).
EXPORT_DIR = "/exports"
#: The search latency shown in the pane's subtitle: the one figure the machine decides.
SEARCH_MS = 0.8

#: What a shot does in the app before it is taken (given the ``textual.pilot.Pilot``).
Steps = Callable[[object], Awaitable[None]]


@dataclass(frozen=True)
class Shot:
    """One README screenshot: its file name, what it shows, the data it is taken on (a key of
    :data:`DATA`), the keys that lead to it and the terminal's size in cells."""

    name: str
    about: str
    data: str
    steps: Steps
    size: tuple[int, int] = (120, 32)
    #: Draw the app's notices (off in headless runs otherwise).
    notices: bool = False


# --------------------------------------------------------------------------- data


def _demo_store(path: Path, *, sessions: int = 300, seed: int = DEMO_SEED) -> Path:
    from hermes_workload.corpus import generate_demo

    path.parent.mkdir(parents=True, exist_ok=True)
    generate_demo(path, sessions=sessions, seed=seed, now=NOW, schema=30)
    return path


def _build_demo(home: Path) -> Path:
    return _demo_store(home / "state.db")


def _pin_times(db, session_id: str, started: float, step: float = 60.0) -> None:
    """Put a session made here at ``started`` and its messages a ``step`` apart (the API
    stamps the wall clock; the pictures must not depend on it)."""
    def do(conn):
        conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (started, session_id))
        conn.execute(
            "UPDATE messages SET timestamp = ? + ? * (1 + id - (SELECT MIN(id) FROM messages WHERE session_id = ?))"
            " WHERE session_id = ?", (started, step, session_id, session_id))
        conn.execute(
            "UPDATE sessions SET last_activity_at = (SELECT MAX(timestamp) FROM messages WHERE session_id = ?)"
            " WHERE id = ?", (session_id, session_id))
    db.store.write(do)


#: Two conversations the demo corpus lacks, so every status glyph shows: one whose last turn
#: failed (``!``) and one with no message yet (``∅``).
ERROR_SESSION = "20261118_072000_e1e2e3"
EMPTY_SESSION = "20261118_074500_f1f2f3"
#: Conversations with activity after they were last read (the rest are read).
UNREAD = (ERROR_SESSION, "20261117_214425_966311", "20261117_052202_c15c248b", "20261116_093955_042482c9")


def _build_unread(home: Path) -> Path:
    """The demo, every conversation read at :data:`NOW` but four, plus an errored and an
    empty conversation: every mark of the list (upstream v30 keeps ``last_read_at``)."""
    from hermes_state import SessionDB
    from hermes_state.unread import set_read, set_read_many

    path = _build_demo(home)
    db = SessionDB(path)
    try:
        db.create_session(ERROR_SESSION, "cli", model="anthropic/claude-sonnet-4.5", cwd="/home/you/src/site")
        db.set_session_title(ERROR_SESSION, "Publish the docs site")
        db.append_message(ERROR_SESSION, "user", "Build the docs site and publish it to the bucket")
        db.append_message(ERROR_SESSION, "assistant", "The provider returned an error (overloaded).",
                          finish_reason="error")
        _pin_times(db, ERROR_SESSION, NOW - 40 * 60)
        db.create_session(EMPTY_SESSION, "cli", model="anthropic/claude-sonnet-4.5")
        db.set_session_title(EMPTY_SESSION, "scratch")
        _pin_times(db, EMPTY_SESSION, NOW - 15 * 60)
        ids = [row[0] for row in db.store.read(lambda c: c.execute("SELECT id FROM sessions").fetchall())]
        set_read_many(db.store, ids, True, now=NOW)
        for session_id in UNREAD:
            set_read(db.store, session_id, False)  # (upstream's "mark as unread": the watermark 0)
    finally:
        db.close()
    return path


#: Live gateway conversations given a lane in ``sessions/sessions.json``: (tip, chat, user, flags).
LANES = (
    ("20261117_052202_c15c248b", "#deploys", "Alice", {"resume_pending": True, "resume_reason": "restart_timeout"}),
    ("20261116_093955_042482c9", None, "Bob", {}),
)


def _build_lanes(home: Path) -> Path:
    """The demo with a gateway's lane index (``sessions/sessions.json``) naming two live
    conversations, one waiting to resume after a restart."""
    from datetime import datetime, timedelta

    from hermes_state import SessionDB
    from hermes_state.gateway import SessionEntry, SessionSource, save_sessions_index

    path = _build_demo(home)
    db = SessionDB(path, read_only=True)
    try:
        entries = {}
        for session_id, chat, user, flags in LANES:
            row = db.get_session(session_id)
            origin = SessionSource(platform=row["source"], chat_id=row["chat_id"], chat_name=chat,
                                   chat_type=row["chat_type"], user_id=row["user_id"], user_name=user)
            active = datetime.fromtimestamp(row.get("last_activity_at") or row["started_at"])
            if flags.get("resume_pending"):
                flags = dict(flags, last_resume_marked_at=active + timedelta(minutes=5))
            entries[row["session_key"]] = SessionEntry(
                session_key=row["session_key"], session_id=session_id,
                created_at=datetime.fromtimestamp(row["started_at"]), updated_at=active, origin=origin,
                display_name=user, platform=row["source"], chat_type=row["chat_type"],
                total_tokens=(row["input_tokens"] or 0) + (row["output_tokens"] or 0), **flags)
    finally:
        db.close()
    save_sessions_index(home / "sessions", entries)
    return path


#: The profiles of the Hermes root the two profile screenshots browse: (name, sessions, seed).
PROFILES = (("work", 60, 11), ("old2025", 40, 13))


def _build_profiles(home: Path) -> Path:
    """A Hermes root: the default store, two profiles' stores (demo corpora of other seeds)
    and a profile whose ``state.db`` is not a database, so the left-out line shows."""
    path = _demo_store(home / "state.db", sessions=80)
    for name, sessions, seed in PROFILES:
        _demo_store(home / "profiles" / name / "state.db", sessions=sessions, seed=seed)
    broken = home / "profiles" / "broken" / "state.db"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"this is not a SQLite database\n" * 64)
    return path


#: How each shot's Hermes home is built (into the directory given).
DATA: dict[str, Callable[[Path], Path]] = {
    "demo": _build_demo,
    "unread": _build_unread,
    "lanes": _build_lanes,
    "profiles": _build_profiles,
}


# --------------------------------------------------------------------------- running


async def settle(pilot, rounds: int = 3) -> None:
    """:func:`devtools.pilot.settle`, patient (a first search of the demo store may be slow)."""
    await pilot_settle(pilot, rounds, tries=1000)


async def press(pilot, *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


@contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _app(home: Path, work: Path):
    from hermes_tui.app import build_app
    from hermes_tui.config import AppConfig

    config = AppConfig(animations="none", search_debounce_s=0.0, export_dir=EXPORT_DIR)
    profiles = None
    if (home / "profiles").is_dir():
        from hermes_state.profiles import discover

        # The root named relative to the working directory (``.hermes``): what the app says
        # of a profile (the left-out notice names its file) is then the same in every run.
        profiles = discover({"HERMES_HOME": home.name}).with_stores()
    app = build_app(
        home / "state.db", clock=lambda: NOW, config=config, watch=False, db_label=DB_LABEL,
        trash_dir=work / "trash", cache_dir=work / "cache", profiles=profiles,
    )
    real_search = app.ctx.store.search

    def search(*args, **kwargs):
        view = real_search(*args, **kwargs)
        view.elapsed_ms = SEARCH_MS
        return view

    app.ctx.store.search = search
    return app


async def _take(shot: Shot, home: Path, work: Path, out: Path) -> Path:
    with _working_directory(home.parent):
        app = _app(home, work)
        async with app.run_test(size=shot.size, notifications=shot.notices) as pilot:
            await settle(pilot)
            await shot.steps(pilot)
            await settle(pilot)
            written = app.save_screenshot(filename=f"{shot.name}.svg", path=str(out.resolve()))
    return Path(written)


# --------------------------------------------------------------------------- the shots


# Which conversation each shot shows, chosen by looking at the demo corpus (seed 7, anchored
# on NOW): change the corpus and these may need choosing again (go_to says which is missing).
#: A live conversation with activity since it was read, so the detail pane says "unread".
UNREAD_CURSOR = "20261117_214425_966311"
#: Two words many conversations hold, some only across two messages.
SEARCH_QUERY = "docker compose"
#: Three characters: the trigram index answers (two would fall back to LIKE).
SEARCH_CJK_QUERY = "数据库"
#: The live tip of a family with two compressions, a delegate run and two resets.
LINEAGE_SESSION = "20261117_052202_c15c248b"
#: The fourth segment of a compression chain, its last exchanges short enough to fit.
RECAP_SESSION = "20261114_204544_c034f6"
#: A middle segment with a delegate run and a reset child: delete says what goes and what it orphans.
DELETE_SESSION = "20261101_060726_c367770e"
#: A compression chain, so every scope of the export dialog has something to say.
EXPORT_SESSION = "20261114_201533_203d3d"
#: The lane waiting to resume (see LANES).
LANE_SESSION = "20261117_052202_c15c248b"


async def go_to(pilot, session_id: str) -> None:
    """Put the list's cursor on the conversation of ``session_id`` (its row or its root)."""
    lst = pilot.app.screen.session_list
    index = lst.index_of(session_id)
    if index is None:
        raise LookupError(f"conversation {session_id} is not on the list's first page")
    lst.move_to(index)
    await settle(pilot)


async def _browser(pilot) -> None:
    pass


async def _unread(pilot) -> None:
    await go_to(pilot, UNREAD_CURSOR)


async def _type(pilot, text: str) -> None:
    await pilot.press("slash")
    for ch in text:
        await pilot.press(ch if ch != " " else "space")
    await settle(pilot)


async def _search(pilot) -> None:
    await _type(pilot, SEARCH_QUERY)


async def _search_cjk(pilot) -> None:
    await _type(pilot, SEARCH_CJK_QUERY)


async def _lineage(pilot) -> None:
    await go_to(pilot, LINEAGE_SESSION)
    await press(pilot, "l")


async def _recap(pilot) -> None:
    await go_to(pilot, RECAP_SESSION)
    await press(pilot, "enter")


async def _transcript(pilot) -> None:
    # Into the hits (the first row is the title match), down to the first message hit: Enter
    # opens the transcript at it.
    await _type(pilot, SEARCH_QUERY)
    await press(pilot, "down", "down", "enter")


async def _delete(pilot) -> None:
    await go_to(pilot, DELETE_SESSION)
    await press(pilot, "d")


async def _export(pilot) -> None:
    await go_to(pilot, EXPORT_SESSION)
    await press(pilot, "e")


async def _lanes(pilot) -> None:
    await go_to(pilot, LANE_SESSION)


async def _profiles(pilot) -> None:
    pass


async def _profile_filter(pilot) -> None:
    await press(pilot, "P")


SHOTS: tuple[Shot, ...] = (
    Shot("browser", "the session list and the detail pane", "demo", _browser),
    Shot("unread", "unread markers and each conversation's status glyph", "unread", _unread),
    Shot("search", "search hits grouped by conversation", "demo", _search),
    Shot("search-cjk", "a Chinese query on the trigram index", "demo", _search_cjk),
    Shot("lineage", "a conversation's lineage tree", "demo", _lineage),
    Shot("recap", "the resume recap", "demo", _recap, size=(120, 36)),
    Shot("transcript", "the transcript opened at a search hit", "demo", _transcript),
    Shot("profiles", "every profile's conversations as one list; the broken one's notice", "profiles", _profiles,
         size=(120, 30), notices=True),
    Shot("profile-filter", "the profile picker with counts", "profiles", _profile_filter, size=(120, 30)),
    Shot("delete", "the delete confirmation: what goes, what it orphans", "demo", _delete),
    Shot("export", "the export dialog", "demo", _export),
    Shot("lanes", "a gateway session's lane in the detail pane", "lanes", _lanes, size=(120, 40)),
)


def _by_name() -> dict[str, Shot]:
    return {shot.name: shot for shot in SHOTS}


@contextmanager
def _own_directories(base: Path) -> Iterator[None]:
    """Nothing of the person's own setup (config, pins kept aside, caches, their Hermes home)
    reaches a picture, and nothing is written in their directories."""
    values = {
        "HERMES_SESSIONS_CONFIG_DIR": base / "config",
        "HERMES_SESSIONS_DATA_DIR": base / "data",
        "HERMES_SESSIONS_CACHE_DIR": base / "cache",
        "HERMES_HOME": base / "hermes-home",
    }
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update({name: str(path) for name, path in values.items()})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def make(names: list[str], out: Path, *, report: Callable[[Path], None] = lambda _path: None) -> list[Path]:
    """Write the named screenshots (all when none) into ``out``, calling ``report`` with each
    file written; returns the files."""
    chosen = [_by_name()[n] for n in names] if names else list(SHOTS)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="hermes-shots-") as tmp:
        base = Path(tmp)
        built: dict[str, Path] = {}
        with _own_directories(base / "user"):
            for shot in chosen:
                if shot.data not in built:
                    built[shot.data] = base / "built" / shot.data
                    DATA[shot.data](built[shot.data])
                # Each shot on its own copy: opening a transcript marks it read, and no shot
                # should see what another did.
                home = base / "run" / shot.name / ".hermes"
                shutil.copytree(built[shot.data], home)
                written.append(asyncio.run(_take(shot, home, base / "work" / shot.name, out)))
                report(written[-1])
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.screenshots", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="directory written (default: screenshots/)")
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"screenshots to make (default: all): {', '.join(_by_name())}")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in _by_name()]
    if unknown:
        print(f"Error: no screenshot named {', '.join(unknown)} (known: {', '.join(_by_name())})", file=sys.stderr)
        return 2
    try:
        make(args.names, args.out, report=print)
    except Exception as exc:  # (a tool run by hand: one line, not a traceback)
        print(f"Error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
