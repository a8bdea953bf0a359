"""A keystroke that changes the answer repaints the panes it changes and lays out
nothing. Counted, not timed: a layout of the whole screen cost ~10 ms at 160x48 and was done
once or twice per key (the query field's virtual size, the results' virtual size and their
scrollbar coming and going), and the detail pane rebuilt the same details answer after answer."""

from __future__ import annotations

import time
from pathlib import Path

from textual.screen import Screen

from hermes_tui.widgets.detail import DetailPane

from .conftest import SIZE, make_app, settle


async def test_typing_a_query_lays_out_nothing(fixed_db: Path, monkeypatch) -> None:
    app = make_app(fixed_db)
    layouts: list[bool] = []
    builds: list[object] = []
    original_layout = Screen._refresh_layout
    original_build = DetailPane.build

    def counting_layout(self, size=None, scroll=False):
        layouts.append(scroll)
        return original_layout(self, size, scroll)

    def counting_build(self):
        builds.append(self.summary)
        return original_build(self)

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", "d")  # the first answer switches the pane: that may lay out
        await settle(pilot)
        monkeypatch.setattr(Screen, "_refresh_layout", counting_layout)
        monkeypatch.setattr(DetailPane, "build", counting_build)
        typed = 0
        for key in "ocker":
            await pilot.press(key)
            await settle(pilot)
            typed += 1
        results = app.screen.results
        assert results.view is not None and results.view.query == "docker" and results.view.hit_count
        assert layouts == [], f"{len(layouts)} layouts for {typed} keys"
        # The same first hit answer after answer: its details are not rebuilt each time.
        assert len(builds) <= 2, builds


async def test_the_first_page_is_painted_before_the_list_is_counted(tmp_path: Path) -> None:
    """Counting scans every session (0.3 s warm at 250k sessions, seconds cold): the first
    page does not wait for it, the status says the count is coming, then shows it."""
    import threading

    from hermes_tui.config import AppConfig
    from hermes_workload.corpus import generate_corpus

    path = tmp_path / "state.db"
    generate_corpus(path, messages=3000, seed=5, now=1767225600.0)
    app = make_app(path, config=AppConfig(animations="none", search_debounce_s=0.0, page_size=10))
    release = threading.Event()
    real_census = app.ctx.store.census

    def slow_census(**kwargs):
        assert release.wait(10)
        return real_census(**kwargs)

    app.ctx.store.census = slow_census
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        lst = screen.session_list
        for _ in range(200):
            if lst.loaded and lst.row(0) is not None:
                break
            await pilot.pause(0.01)
        assert lst.row(0) is not None, "the first page is shown while the count runs"
        status = str(screen.query_one("#status").render())
        assert "counting" in status
        release.set()
        await settle(pilot)
        status = str(screen.query_one("#status").render())
        assert "counting" not in status and f"{lst.total:,} conversations" in status
        assert lst.total == real_census(query=screen.filters, count=True).total


async def test_a_hit_shown_again_by_the_next_keystroke_is_not_drawn_again(fixed_db: Path, monkeypatch) -> None:
    """While a word is typed the answers often hold the same hits (``dock*``, ``docke*`` and
    ``docker`` mark the same tokens): their rows and drawn strips are reused, not rebuilt --
    and a theme change draws everything anew."""
    from hermes_tui.widgets import search as search_module

    drawn: list[str] = []
    original = search_module.fast_text_strip

    def counting(text, width, console):
        drawn.append(text.plain)
        return original(text, width, console)

    monkeypatch.setattr(search_module, "fast_text_strip", counting)
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"docke")
        await settle(pilot)
        results = app.screen.results
        before = {row.target: row for row in results._rows if row.target and row.target[1] is not None}
        assert before, "the fixed data has hits for docke*"
        drawn.clear()
        await pilot.press("r")  # docker: the same hits
        await settle(pilot)
        after = {row.target: row for row in results._rows if row.target and row.target[1] is not None}
        assert after.keys() == before.keys()
        assert all(after[t] is before[t] for t in after), "the same rows, strips and all"
        hit_lines = {row.text.plain for row in after.values()}
        assert not hit_lines & set(drawn), "no hit line was drawn again"
        app.theme = "textual-light"
        await settle(pilot)
        assert hit_lines <= set(drawn), "a new theme draws every line anew"


async def test_older_garbage_is_collected_when_nobody_types(fixed_db: Path) -> None:
    """A collection of the older generations walked Textual's caches for up to 250 ms in the
    middle of typing: they are collected only once the person has paused, and what the app
    changed about the collector is undone when it ends."""
    import gc

    before = gc.get_threshold()
    app = make_app(fixed_db)
    collections: list[int] = []

    def record(phase, info):
        if phase == "stop":
            collections.append(info["generation"])

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert gc.get_freeze_count() > 0, "what the start made is out of the collector's way"
        assert gc.get_threshold()[1:] == (200, 1_000_000)
        # A key first: after the quiet of settling, the idle collection (its 0.5 s tick) could
        # start between registering the callback and the first key being handled.
        await pilot.press("/")
        await pilot.pause(0.05)
        gc.callbacks.append(record)
        try:
            for key in "docker":
                await pilot.press(key)
                await pilot.pause(0.05)
            typing = list(collections)
            await pilot.pause(app.GC_IDLE_S + 1.2)
        finally:
            gc.callbacks.remove(record)
        assert all(generation == 0 for generation in typing), "only young collections while typing"
        assert any(generation >= 1 for generation in collections[len(typing):]), "older ones once idle"
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


async def test_no_collection_between_a_keystroke_and_its_answer_painted(fixed_db: Path) -> None:
    """Young collections (~1.2 ms each, two a key) happened while the answer was built and
    drawn: the collector is held off from the keystroke until the answer is painted, and
    is on again after -- also when no answer comes (a second at most)."""
    import gc

    app = make_app(fixed_db)
    collections: list[float] = []

    def record(phase, info):
        if phase == "start":
            collections.append(time.perf_counter())

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        gc.callbacks.append(record)
        try:
            for key in "/docker":
                before = len(screen.search.latencies)
                await pilot.press(key)
                if key == "/":
                    continue
                pressed = screen.search.keystroke_at
                for _ in range(300):
                    if len(screen.search.latencies) > before:
                        break
                    await pilot.pause(0.01)
                painted = pressed + screen.search.latencies[-1][1]
                assert gc.isenabled(), "on again once the answer is painted"
                assert not [t for t in collections if pressed <= t <= painted]
        finally:
            gc.callbacks.remove(record)
        # A keystroke whose answer never comes (a search stuck behind a lock): released
        # after a second all the same.
        import threading

        stuck = threading.Event()
        real_search = app.ctx.store.search
        app.ctx.store.search = lambda *a, **k: (stuck.wait(5), real_search(*a, **k))[1]
        try:
            await pilot.press("s")
            assert not gc.isenabled()
            await pilot.pause(1.3)
            assert gc.isenabled()
        finally:
            stuck.set()
            app.ctx.store.search = real_search


async def test_an_answer_counts_as_painted_only_once_its_frame_is_written(fixed_db: Path, monkeypatch) -> None:
    """The latency the bench reads starts when the key reaches the field (before the frame that
    echoes it) and ends after the frame that draws the hits, not before it
    (``call_after_refresh`` at the answer could run before the screen knew the results had
    changed); and the pane's border and the detail pane wait for that frame, not join it."""
    from textual.app import App

    from hermes_tui.widgets.search import SearchResults

    app = make_app(fixed_db)
    frames: list[tuple[float, set[str]]] = []  # (written at, widgets rendered in that frame)
    rendering: set[str] = set()
    original_display = App._display
    original_render = SearchResults.render_lines
    original_build = DetailPane.build

    def display(self, screen, renderable):
        frames.append((time.perf_counter(), set(rendering)))
        rendering.clear()
        return original_display(self, screen, renderable)

    def render_lines(self, crop):
        rendering.add("results")
        return original_render(self, crop)

    def build(self):
        rendering.add("detail")
        return original_build(self)

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", "d", "o")
        await settle(pilot)
        monkeypatch.setattr(App, "_display", display)
        monkeypatch.setattr(SearchResults, "render_lines", render_lines)
        monkeypatch.setattr(DetailPane, "build", build)
        screen = app.screen
        checked = 0
        for key in "cker":
            before = len(screen.search.latencies)
            frames.clear()
            await pilot.press(key)
            await settle(pilot)
            assert len(screen.search.latencies) == before + 1
            _query, seconds = screen.search.latencies[-1]
            assert frames and screen.search.keystroke_at <= frames[0][0], "timed from the key, before its echo"
            painted_at = screen.search.keystroke_at + seconds
            drawn = [(at, widgets) for at, widgets in frames if "results" in widgets]
            assert drawn, "the answer was drawn"
            first_at, first_widgets = drawn[0]
            assert first_at <= painted_at, "counted as painted before the frame that drew it"
            assert "detail" not in first_widgets, "the detail pane waits for the hits' frame"
            checked += 1
        assert checked == 4
        assert str(app.screen.query_one("#main").border_subtitle).startswith("fts5")


def _record_frames(monkeypatch) -> list[set[str]]:
    """The widgets (class names) each frame the screen draws repaints, in order."""
    from textual._compositor import Compositor

    frames: list[set[str]] = []
    original = Compositor.update_widgets

    def update_widgets(self, widgets):
        frames.append({type(widget).__name__ for widget in widgets})
        return original(self, widgets)

    monkeypatch.setattr(Compositor, "update_widgets", update_widgets)
    return frames


async def test_a_key_and_its_answer_are_drawn_in_one_frame(fixed_db: Path, monkeypatch) -> None:
    """The field's echo waits for the answer (hermes_tui.frames): no frame shows the new text
    with the old hits, and the answer does not wait for a 60 Hz slot after an echo frame."""
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", "d")
        await settle(pilot)
        frames = _record_frames(monkeypatch)
        screen = app.screen
        for key in "ock":
            frames.clear()
            before = len(screen.search.latencies)
            await pilot.press(key)
            await settle(pilot)
            assert len(screen.search.latencies) == before + 1
            echoed = [i for i, widgets in enumerate(frames) if "SearchInput" in widgets]
            assert echoed, frames
            assert "SearchResults" in frames[echoed[0]], f"the echo was drawn alone: {frames}"
            assert not screen.search_input.frame_hold.held and app._batch_count == 0
        assert screen.results.view.query == "dock"


async def test_an_answer_late_past_the_hold_does_not_keep_the_echo_back(fixed_db: Path, monkeypatch) -> None:
    """A slow search: the key's echo is drawn when the hold's limit passes, before the answer."""
    import asyncio

    from hermes_tui.frames import HOLD_LIMIT_S, FrameHold

    expired: list[bool] = []
    original_expired = FrameHold._expired

    def recording_expired(self):
        expired.append(self.held)
        return original_expired(self)

    monkeypatch.setattr(FrameHold, "_expired", recording_expired)
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", "d")
        await settle(pilot)
        store = app.screen.ctx.store
        original = store.search

        def slow_search(*args, **kwargs):
            time.sleep(0.4)
            return original(*args, **kwargs)

        monkeypatch.setattr(store, "search", slow_search)
        frames = _record_frames(monkeypatch)
        screen = app.screen
        before = len(screen.search.latencies)
        # (Only this key's hold: under load the answer to "d" may itself have come after the
        # limit, and its hold expired then.)
        expired.clear()
        started = time.monotonic()
        await pilot.press("o")
        await asyncio.sleep(max(0.0, HOLD_LIMIT_S + 0.1 - (time.monotonic() - started)))
        assert len(screen.search.latencies) == before, "the answer is not in yet"
        assert expired == [True], "the key held the screen, and the limit ended the hold"
        assert not screen.search_input.frame_hold.held and app._batch_count == 0
        assert any("SearchInput" in widgets for widgets in frames), "the echo is drawn"
        await settle(pilot)
        assert len(screen.search.latencies) == before + 1 and screen.results.view.query == "do"


async def test_emptying_the_field_lets_the_screen_draw_at_once(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", "d")
        await settle(pilot)
        await pilot.press("backspace")
        # No answer comes for an empty query: nothing is held for one.
        assert not app.screen.search_input.frame_hold.held and app._batch_count == 0
        await settle(pilot)
        # The field still has focus: the pane shows how to search again, not the list.
        assert app.screen.query_one("#main").current == "results"
        assert app.screen.results.showing_guide and app.screen.results.view is None


async def test_an_answer_repaints_only_the_lines_it_changes(fixed_db: Path, monkeypatch) -> None:
    """While a word is typed the next answer often holds the same hits: only the lines that
    differ are repainted (at least one, so the answer has its frame), and what is on screen is
    what a repaint of the whole pane draws."""
    from hermes_tui.widgets.search import SearchResults

    app = make_app(fixed_db)
    whole: list[bool] = []
    lines: list[int] = []
    original_refresh = SearchResults.refresh
    original_lines = SearchResults.refresh_lines

    def refresh(self, *regions, **kwargs):
        if not regions and kwargs.get("repaint", True):
            whole.append(True)
        return original_refresh(self, *regions, **kwargs)

    def refresh_lines(self, y_start, line_count=1):
        lines.append(line_count)
        return original_lines(self, y_start, line_count)

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", "d", "o", "c", "k")
        await settle(pilot)
        monkeypatch.setattr(SearchResults, "refresh", refresh)
        monkeypatch.setattr(SearchResults, "refresh_lines", refresh_lines)
        results = app.screen.results
        shown = [row.text.plain for row in results._rows]
        await pilot.press("e")  # docke*: the tokens dock* marked, the same hits
        await settle(pilot)
        assert [row.text.plain for row in results._rows] == shown
        assert whole == [] and sum(lines) == 1, (whole, lines)
        partial = app.export_screenshot()
        await pilot.press("backspace", "backspace", "backspace")  # "do": other hits
        await settle(pilot)
        assert whole == [] and sum(lines) > 1
        await pilot.press("c", "k", "e")
        await settle(pilot)
        partial = app.export_screenshot()
        results.refresh()
        await settle(pilot)
        assert app.export_screenshot() == partial


async def test_quitting_while_a_key_holds_the_screen_is_clean(fixed_db: Path) -> None:
    """A key's hold still running when the app exits ends with the field, without an error."""
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/")
        hold = app.screen.search_input.frame_hold
        hold.begin()
        assert hold.held and app._batch_count == 1
        app.exit()
        await pilot.pause()
    assert app._exception is None and not hold.held


async def test_rows_below_the_pane_are_made_only_when_reached(tmp_path: Path) -> None:
    """An answer's rows below the pane's height make their text (and strip) only when they
    come into view: a key's frame builds what it shows, not its 40 hits."""
    from hermes_tui.config import AppConfig
    from hermes_workload.corpus import generate_corpus

    path = tmp_path / "state.db"
    generate_corpus(path, messages=3000, seed=5, now=1767225600.0)
    app = make_app(path, config=AppConfig(animations="none", search_debounce_s=0.0))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/")
        app.screen.search_input.value = "docker"  # one answer (keys typed before would have
        await settle(pilot)  # drawn some of its rows higher up in their own answers)
        results = app.screen.results
        height = results.scrollable_content_region.height
        rows = results._rows
        assert len(rows) > height + 5, "an answer longer than the pane"
        assert all(row._text is not None for row in rows[:height])
        below = rows[height + 1:]
        assert all(row._text is None for row in below if row.key is not None), "not made yet"
        shown = [row.text.plain for row in rows]  # (made now, as a repaint would)
        assert len(set(shown[height:])) > 1 and all(line.strip() for line in shown)
        results.focus()
        for _ in range(len(rows)):
            await pilot.press("down")
        await settle(pilot)
        assert results.cursor is not None and results.cursor > height
        last = results._rows[results.cursor]  # (more hits may have loaded meanwhile)
        assert last.strip is not None, "a row reached is drawn"
