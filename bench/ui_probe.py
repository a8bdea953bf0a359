"""Browser probe, run as a fresh process by ``bench.ui_suite``.

``python -m bench.ui_probe DB SPAWNED_AT [--query Q] [--transcript SESSION_ID]`` imports the
app, opens the browser headless on DB and prints one JSON line:

* ``first_page_s`` — seconds from SPAWNED_AT (the parent's ``time.time()`` just before it
  started this process, so interpreter start-up and imports count) to the first page of
  sessions painted: the first frame handed to the terminal driver with the list's rows in
  it (``App._display``). It used to be the moment a
  ``call_after_refresh`` queued once the rows were loaded ran, which could be frames later
  and after other callbacks queued before it (the app's own post-start housekeeping: 30-50 ms
  more); ``first_page_callback_s`` still gives that moment;
* with ``--query``: the query is typed into the search field (set at once, as a paste) and
  ``search_ms`` is the time until its results are painted;
* with ``--transcript``: that session's transcript is opened (``t`` on it, as the app does)
  and ``transcript_ms`` is the time until its messages are painted;
* with ``--profiles-home ROOT``: the browser over every profile of that Hermes root
  (``browse --all-profiles``) instead of DB;
* ``rss_mb`` — the process's peak RSS over all of that, and ``rss_first_page_mb`` /
  ``rss_search_mb`` the peak at each earlier step (the kernel's high-water mark, ``VmHWM``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time


def _peak_rss_mb() -> float:
    """This process's peak RSS: ``VmHWM`` of its memory map. Not ``ru_maxrss``: Linux carries
    the parent's high-water mark across ``fork``/``exec`` into it, so a probe spawned by a
    bench process that already holds 130 MB would report at least 130 MB."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rows_shown(app) -> bool:
    from hermes_tui.widgets.session_list import SessionList

    try:
        lists = app.screen.query(SessionList)
    except Exception:  # (no screen yet)
        return False
    return bool(lists) and lists.first().loaded and lists.first().row(0) is not None


async def _painted(app) -> float:
    done = asyncio.get_running_loop().create_future()
    app.call_after_refresh(lambda: done.set_result(time.time()))
    return await done


async def _probe(db_path: str, spawned_at: float, query: str | None, transcript: str | None,
                 profiles_home: str | None = None) -> dict:
    # As `hermes sessions browse` starts: no garbage collection until the app is mounted,
    # the first pages read ahead in a thread while the UI is imported.
    import gc
    from pathlib import Path

    gc.disable()
    from hermes_tui.browse import start_first_window
    from hermes_tui.config import AppConfig

    config = AppConfig(animations="none")
    profiles = None
    if profiles_home:
        # As `browse --all-profiles` starts: every profile of that root, each one's first
        # page read ahead.
        from hermes_state.profiles import discover

        profiles = discover({"HERMES_HOME": profiles_home}).with_stores()
        db_path = str(profiles[0].db_path)
        first = {p.name: start_first_window(p.db_path, config, source=None) for p in profiles}
    else:
        first = start_first_window(Path(db_path), config, source=None)
    from hermes_tui.app import build_app
    from hermes_tui.widgets.search import SearchInput
    from hermes_tui.widgets.session_list import SessionList

    app = build_app(db_path, config=config, watch=True, first_window=first, profiles=profiles)
    out: dict = {"first_page_s": None, "rows": 0}
    display = app._display

    def displayed(screen, update):
        # The frame is handed to the driver here; the first one holding the list's rows is
        # the first page painted.
        display(screen, update)
        if out["first_page_s"] is None and update is not None and _rows_shown(app):
            out["first_page_s"] = time.time() - spawned_at

    app._display = displayed
    async with app.run_test(size=(160, 48)) as pilot:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if _rows_shown(app):
                out["first_page_callback_s"] = await _painted(app) - spawned_at
                break
            await asyncio.sleep(0.002)
        lists = app.screen.query(SessionList)
        out["rows"] = lists.first().total if lists else 0
        out["rss_first_page_mb"] = _peak_rss_mb()
        browser = app.screen
        if query:
            before = len(browser.search.latencies)
            started = time.time()
            browser.query_one(SearchInput).value = query
            deadline = time.monotonic() + 60
            while len(browser.search.latencies) == before and time.monotonic() < deadline:
                await asyncio.sleep(0.002)
            if len(browser.search.latencies) > before:
                out["search_ms"] = (time.time() - started) * 1000
                view = browser.results.view
                out["search_hits"] = view.hit_count if view is not None else 0
            out["rss_search_mb"] = _peak_rss_mb()
        if transcript:
            started = time.time()
            app.push_screen(app.ctx.screens.transcript(transcript))
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                screen = app.screen
                if getattr(screen, "session_id", None) == transcript and getattr(screen, "loaded", False):
                    out["transcript_ms"] = (await _painted(app) - started) * 1000
                    out["transcript_entries"] = len(screen.view.entries)
                    break
                await asyncio.sleep(0.002)
        # As a person who browses for a while: the census (which, on a first run, builds the
        # recency index and keeps it for the next) is done before the browser closes.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and getattr(getattr(browser, "list_window", None), "census_running", False):
            await asyncio.sleep(0.05)
        await pilot.pause(0.2)
    out["rss_mb"] = _peak_rss_mb()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ui_probe")
    parser.add_argument("db")
    parser.add_argument("spawned_at", type=float)
    parser.add_argument("--query")
    parser.add_argument("--transcript")
    parser.add_argument("--profiles-home", help="browse every profile of this Hermes root (DB is ignored)")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(_probe(args.db, args.spawned_at, args.query, args.transcript, args.profiles_home))))


if __name__ == "__main__":
    main()
