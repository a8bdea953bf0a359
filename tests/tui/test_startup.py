"""Start-up: the browser keeps its recency index between runs in the cache directory,
and its first window may rest on the pins that index kept -- corrected right after it is shown
when another process pinned something meanwhile, without moving a reader who already moved."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.listing import ListQuery, Order, recency
from hermes_tui.screens import browser_window
from hermes_tui.screens.browser_window import ListWindow
from hermes_tui.widgets.session_list import SessionList

from .conftest import make_app, settle


@pytest.fixture
def v30_store(tmp_path: Path, monkeypatch) -> Path:
    from hermes_state.listing.engine import Lister
    from hermes_workload.corpus import generate_corpus

    # A large store's start (pins from the cache, corrected by the census): a store this
    # small would have its pins scanned exactly for the first window.
    monkeypatch.setattr(Lister, "EXACT_PINS_ROWS", 0)

    path = tmp_path / "home" / "state.db"
    path.parent.mkdir()
    generate_corpus(path, messages=3000, seed=9, now=1767225600.0, schema=30)
    return path


def _pin_a_quiet_conversation(path: Path) -> str:
    writer = SessionDB(path)
    try:
        sid = writer._fetchone(
            "SELECT id FROM sessions WHERE pinned = 0 AND parent_session_id IS NULL AND archived = 0"
            " AND hidden = 0 AND source = 'cli' ORDER BY started_at LIMIT 1")[0]
        writer.set_session_pinned(sid, True)
        return sid
    finally:
        writer.close()


def _spy_windows(monkeypatch) -> list:
    """Every window the browser's worker hands to the screen, in order."""
    seen: list = []
    original = browser_window.WindowLoaded.__init__

    def spy(self, window):
        seen.append(window)
        original(self, window)

    monkeypatch.setattr(browser_window.WindowLoaded, "__init__", spy)
    return seen


async def _first_run(path: Path, cache_dir: Path) -> None:
    app = make_app(path, cache_dir=cache_dir)
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)


async def test_the_index_is_kept_between_runs_in_the_cache_directory(v30_store, tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    await _first_run(v30_store, cache_dir)
    cache = recency.cache_file(v30_store, cache_dir)
    assert cache.exists()
    built = []
    original = recency.RecencyWalk.build
    monkeypatch.setattr(recency.RecencyWalk, "build", lambda self, conn: (built.append(1), original(self, conn)))
    seen = _spy_windows(monkeypatch)
    app = make_app(v30_store, cache_dir=cache_dir)
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        assert app.screen.query_one(SessionList).row(0) is not None
    # The first window came from the cache; the census's build confirmed it afterwards (the
    # cache only speeds up what the store confirms), and nothing changed: no correction.
    assert built == [1], "one build, to confirm the cache"
    assert [w.correction for w in seen] == [False], "nothing changed in between: no correction"


async def test_a_pin_made_between_runs_comes_first_after_the_first_window(v30_store, tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    await _first_run(v30_store, cache_dir)
    pinned = _pin_a_quiet_conversation(v30_store)
    seen = _spy_windows(monkeypatch)
    app = make_app(v30_store, cache_dir=cache_dir)
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        assert [w.correction for w in seen] == [False, True]
        assert pinned not in [row.id for row in seen[0].pages[0]], "the cached pins did not know it"
        top = [lst.row(i) for i in range(20)]
        pins_first = [row.id for row in top if row.pinned]
        assert pinned in pins_first and [row.pinned for row in top[:len(pins_first)]] == [True] * len(pins_first)
        assert lst.cursor == 0 and lst.scroll_offset.y == 0, "shown from the top, the pins first"


async def test_the_correction_keeps_a_reader_who_has_moved_on_their_conversation(v30_store, tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    await _first_run(v30_store, cache_dir)
    pinned = _pin_a_quiet_conversation(v30_store)
    go_on = threading.Event()
    original = ListWindow._window
    calls = []

    def held(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            go_on.wait(10)  # the corrected window waits until the reader has moved
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ListWindow, "_window", held)
    app = make_app(v30_store, cache_dir=cache_dir)
    async with app.run_test(size=(120, 32)) as pilot:
        lst = app.screen.query_one(SessionList)
        for _ in range(200):
            if lst.row(0) is not None:
                break
            await pilot.pause(0.01)
        await pilot.press("down", "down")
        chosen = lst.current.id
        go_on.set()
        await settle(pilot)
        assert lst.current.id == chosen and lst.cursor - lst.scroll_offset.y == 2
        assert pinned in [lst.row(i).id for i in range(20)], "corrected all the same"


async def test_the_first_window_read_ahead_is_what_the_browser_shows(v30_store, tmp_path, monkeypatch):
    """``start_first_window`` opens the store and reads the first pages while the UI loads; the
    browser adopts its reader and its pages instead of reading them again."""
    from hermes_state import listing
    from hermes_tui.browse import start_first_window
    from hermes_tui.config import AppConfig

    cache_dir = tmp_path / "cache"
    await _first_run(v30_store, cache_dir)
    expected_app = make_app(v30_store, cache_dir=tmp_path / "other-cache")
    async with expected_app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        lst = expected_app.screen.query_one(SessionList)
        expected = [lst.row(i).id for i in range(min(lst.total, 100))]

    config = AppConfig(animations="none", search_debounce_s=0.0)
    first = start_first_window(v30_store, config, source=None, cache_dir=cache_dir)
    first.done.wait(30)
    reads = []
    original = listing.page
    monkeypatch.setattr(listing, "page", lambda *a, **k: (reads.append(k.get("provisional")), original(*a, **k))[1])
    app = make_app(v30_store, cache_dir=cache_dir, config=config, first_window=first)
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        assert app.ctx.store.reader is not None and first.db is None, "the browser took its reader"
        lst = app.screen.query_one(SessionList)
        assert [lst.row(i).id for i in range(min(lst.total, 100))] == expected
    assert True not in reads, "the provisional first window was not read again"


async def test_a_first_window_that_could_not_open_leaves_the_browser_to_say_why(tmp_path):
    from hermes_tui.browse import start_first_window
    from hermes_tui.config import AppConfig
    from hermes_tui.screens.unavailable import UnavailableScreen

    path = tmp_path / "state.db"
    path.write_bytes(b"not a database at all" * 200)
    first = start_first_window(path, AppConfig(), source=None, cache_dir=tmp_path / "cache")
    first.opened.wait(10)
    assert first.db is None and first.error is not None
    app = make_app(path, cache_dir=tmp_path / "cache", first_window=first)
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, UnavailableScreen)


async def test_a_first_run_shows_a_guess_at_once_and_the_true_order_right_after(tmp_path, monkeypatch):
    """No cache yet: the first window rests on the sessions of the newest messages written
    (no seek per session before the first paint); the index is built beside it and the list
    corrected -- here an import wrote the most recently active conversation first."""
    from hermes_state.listing.recency import RecencyWalk

    path = tmp_path / "state.db"
    db = SessionDB(path)
    base = 1767000000.0

    def add(sid: str, started: float, stamps: list[float]) -> None:
        db.create_session(sid, "cli")
        ids = [db.append_message(sid, "user", f"about {sid}") for _ in stamps]
        db._execute_write(lambda c: (
            c.executemany("UPDATE messages SET timestamp = ? WHERE id = ?", list(zip(stamps, ids))),
            c.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (started, sid))))

    add("busy", base - 100000, [base + 100000, base + 100001])
    for n in range(40):
        add(f"quiet{n:02d}", base + 1000 * n, [base + 1000 * n + 10, base + 1000 * n + 11])
    db.close()
    monkeypatch.setattr(RecencyWalk, "GUESS_ROWS", 44)  # 22 sessions: the first two pages
    seen = _spy_windows(monkeypatch)
    from hermes_tui.config import AppConfig

    app = make_app(path, cache_dir=tmp_path / "cache",
                   config=AppConfig(animations="none", search_debounce_s=0.0, page_size=10))
    async with app.run_test(size=(120, 32)) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        assert "busy" not in [row.id for row in seen[0].pages[0]], "the guess"
        assert seen[-1].correction and lst.row(0).id == "busy" and lst.cursor == 0
    assert recency.cache_file(path, tmp_path / "cache").exists(), "the built index is kept"


_FIRST_PAGE_PROBE = r"""
import asyncio, json, sys
from pathlib import Path
from hermes_tui.app import build_app
from hermes_tui.config import AppConfig
from hermes_tui.widgets.session_list import SessionList

def loaded():
    return sorted(m for m in sys.modules if m.startswith(("hermes_state.", "hermes_tui.")))

def unbuilt():
    from hermes_state import models
    return sorted(name for name in ("SearchResult", "SearchHit", "Message", "LineageNode")
                  if not getattr(models, name).__pydantic_complete__)

async def main():
    app = build_app(Path(sys.argv[1]), config=AppConfig(animations="none"), watch=True,
                    cache_dir=Path(sys.argv[2]))
    at_import = {"modules": loaded(), "unbuilt": unbuilt()}
    async with app.run_test(size=(120, 32)) as pilot:
        for _ in range(2000):
            lists = app.screen.query(SessionList)
            if lists and lists.first().loaded and lists.first().row(0) is not None:
                break
            await asyncio.sleep(0.005)
        await pilot.pause()
        shown = lists.first().row(0).id
        at_first_page = {"modules": loaded(), "unbuilt": unbuilt(),
                         "metadata": "importlib.metadata" in sys.modules}
        for _ in range(400):  # the search readied once the page is painted
            if "hermes_state.search.engine" in sys.modules and "SearchHit" not in unbuilt():
                break
            await asyncio.sleep(0.01)
        after = {"modules": loaded(), "unbuilt": unbuilt()}
    print(json.dumps({"shown": shown, "import": at_import, "page": at_first_page, "after": after}))

asyncio.run(main())
"""


def test_the_first_page_imports_and_builds_only_what_it_shows(v30_store, tmp_path):
    """`browse` to the first page is mostly imports (>= 1 s on a slow machine): the
    dialogs, the secondary screens, the trash and the export are imported, and the
    transcript's models built, when first used; the search engine and its models once the
    first page is painted, for the first key -- none of them before the first page."""
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _FIRST_PAGE_PROBE, str(v30_store), str(tmp_path / "cache")],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["shown"], "the first page was painted"
    assert "hermes_state.search.engine" not in report["import"]["modules"]
    assert report["import"]["unbuilt"] == ["LineageNode", "Message", "SearchHit", "SearchResult"]
    for deferred in (
        "hermes_state.trash", "hermes_state.export",
        "hermes_tui.modals.delete", "hermes_tui.modals.export", "hermes_tui.modals.rename",
        "hermes_tui.modals.confirm_batch", "hermes_tui.screens.recap", "hermes_tui.screens.transcript",
        "hermes_tui.screens.lineage", "hermes_tui.screens.help",
    ):
        assert deferred not in report["page"]["modules"], f"{deferred} imported before the first page"
    # Pydantic's plugin discovery (importlib.metadata, 35-70 ms) is not part of the start.
    assert report["page"]["metadata"] is False
    # Once the page is painted the search is readied for the first key (not left to it).
    assert "hermes_state.search.engine" in report["after"]["modules"]
    assert report["after"]["unbuilt"] == ["LineageNode", "Message"]


_PLUGINS_PROBE = r"""
import json, sys
import hermes_tui.cli
from hermes_state.models import SessionSummary
import pydantic.plugin._loader as loader
report = {"metadata_at_start": "importlib.metadata" in sys.modules, "plugins": list(loader.get_plugins())}
report["group"] = loader.PYDANTIC_ENTRY_POINT_GROUP  # any other name: pydantic's own loader
print(json.dumps(report))
"""


@pytest.mark.parametrize("env", [{}, {"PYDANTIC_DISABLE_PLUGINS": "some_plugin"}])
def test_pydantic_plugin_discovery_is_skipped_unless_plugins_are_asked_about(env):
    """The loader that finds no plugin stands in for pydantic's (whose import of
    importlib.metadata cost every start 35-70 ms) unless PYDANTIC_DISABLE_PLUGINS says the
    person uses plugins; every other name of the loader still comes from pydantic's."""
    import json
    import os
    import subprocess
    import sys

    base = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    out = subprocess.run([sys.executable, "-c", _PLUGINS_PROBE], capture_output=True, text=True,
                         timeout=60, env={**base, **env})
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["plugins"] == [] and report["group"] == "pydantic"
    assert report["metadata_at_start"] is bool(env)


async def test_a_commit_between_the_first_window_and_the_watch_shows(v30_store, tmp_path):
    """The first pages are read ahead while the UI loads, and the change watch starts once the
    app runs: a commit in between (another process: a gateway writing as the browser starts)
    must show without waiting for the next commit, which may never come."""
    import subprocess
    import sys

    from hermes_tui.browse import start_first_window
    from hermes_tui.config import AppConfig

    from .test_live_reader import WRITER, wait_until

    cache_dir = tmp_path / "cache"
    await _first_run(v30_store, cache_dir)  # (the recency index kept: the first window is exact)
    config = AppConfig(animations="none", search_debounce_s=0.0, poll_interval_s=0.05)
    first = start_first_window(v30_store, config, source=None, cache_dir=cache_dir)
    assert first.done.wait(30) and first.error is None
    # One commit by another process, after the read ahead and before the app (and its watch).
    subprocess.run([sys.executable, str(WRITER), str(v30_store), "sessions", "quince", "1", "0"],
                   check=True, capture_output=True, timeout=60)
    app = make_app(v30_store, cache_dir=cache_dir, config=config, first_window=first, watch=True)
    async with app.run_test(size=(120, 32)) as pilot:
        lst = app.screen.query_one(SessionList)
        await wait_until(pilot, lambda: lst.loaded and lst.row(0) is not None)
        new = "20261118_090000_new00"  # (the writer's first session)

        def shown() -> list:
            return [lst.row(i).id for i in range(min(lst.total, 10)) if lst.row(i) is not None]

        # Pinned conversations first, then the newest activity: the new session.
        await wait_until(pilot, lambda: new in shown(), timeout=5)


def test_the_store_door_tells_a_commit_since_its_first_read(v30_store, tmp_path):
    """Without a read-ahead the reader opens for the first page, in a worker, while the watch
    starts beside it: the door keeps the reader's data_version from before that first read."""
    import subprocess
    import sys

    from hermes_tui.data import BrowserData

    from .test_live_reader import WRITER

    data = BrowserData(v30_store, cache_dir=tmp_path / "cache")
    try:
        assert not data.changed_since_first_read(), "nothing read yet: nothing stale"
        data.page(0, 50, ListQuery(order=Order.ACTIVITY))
        assert not data.changed_since_first_read()
        subprocess.run([sys.executable, str(WRITER), str(v30_store), "sessions", "quince", "1", "0"],
                       check=True, capture_output=True, timeout=60)
        assert data.changed_since_first_read()
    finally:
        data.close()


async def test_a_file_replaced_between_the_first_window_and_the_browser_is_reopened(v30_store, tmp_path):
    """A restore or a sync tool puts another file at the path while the UI is still loading,
    after the read-ahead opened the old one: the browser must see the replacement (say so,
    read the file at the path) -- not take the old file for the one at the path and write,
    later, into a file it never read."""
    import shutil

    from hermes_tui.browse import start_first_window
    from hermes_tui.config import AppConfig

    from .test_delete_undo import notifications
    from .test_live_reader import wait_until

    config = AppConfig(animations="none", search_debounce_s=0.0, poll_interval_s=0.05)
    first = start_first_window(v30_store, config, source=None, cache_dir=tmp_path / "cache")
    assert first.done.wait(30) and first.error is None
    # The new file: a copy of the old one with one conversation more.
    staged = tmp_path / "staged.db"
    shutil.copy(v30_store, staged)
    writer = SessionDB(staged)
    writer.create_session("20261128_120000_restored", "cli")
    writer.append_message("20261128_120000_restored", "user", "only in the file put in its place")
    writer.close()
    staged.replace(v30_store)
    app = make_app(v30_store, cache_dir=tmp_path / "cache", config=config, first_window=first, watch=True)
    async with app.run_test(size=(120, 32)) as pilot:
        lst = app.screen.query_one(SessionList)
        await wait_until(pilot, lambda: any("was replaced" in n for n in notifications(app)))

        def shown() -> list:
            return [lst.row(i).id for i in range(min(lst.total, 10)) if lst.row(i) is not None]

        await wait_until(pilot, lambda: "20261128_120000_restored" in shown())
