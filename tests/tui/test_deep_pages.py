"""Pages deep in the list by last activity (End, a dragged scrollbar) are slices of one ranking.

Past the first conversations, which the newest messages find, a page by last activity ranks
every listed conversation: 4-5 s at 250k sessions, for each page a reader scrolled to. The
browser's store door ranks once per set of filters (on the census's connection, so the reader
stays free for the pages near the top), reads each deep page's rows by id, ranks again in the
census's turn after another process commits, and at once after the user's own change.

And what a large store's list shows while it is being counted (End, another filter, the
source picker), with the census held.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import hermes_state.listing.activity as activity_module
from hermes_state import SessionDB, listing
from hermes_state.listing import ListQuery, Order
from hermes_tui.data import BrowserData
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app
from .test_live_reader import build_many, wait_until

BASE = 1_767_000_000.0
#: Pages ending past this many conversations are "deep" in these tests (1,000 in the product).
WALK = 10


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch) -> Path:
    import hermes_state.listing.rankings as rankings_module

    monkeypatch.setattr(activity_module, "ACTIVITY_WALK_ROWS", WALK)
    # A stale ranking's turn comes at once (its pacing has a test of its own): paced by what
    # ranking cost, a busy machine (CI beside other jobs) put the turn 60 ms off and the census
    # did not rank again.
    monkeypatch.setattr(rankings_module, "RANK_IDLE_RATIO", 0.0)
    path = tmp_path / "state.db"
    db = SessionDB(path)
    try:
        for i in range(40):
            sid = f"s{i:02d}"
            db.create_session(sid, "cli")
            db.append_message(sid, "user", f"message of {sid}")
            db._execute_write(lambda conn, sid=sid, i=i: (
                conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (BASE + i, sid)),
                conn.execute("UPDATE messages SET timestamp = ? WHERE session_id = ?", (BASE + 100 + i, sid)),
            ))
    finally:
        db.close()
    return path


def deep_page(store: BrowserData, offset: int, limit: int = 10, by_activity: bool = True) -> list[str]:
    rows, _total = store.page(offset, limit, ListQuery.from_options(by_activity=by_activity), count=False)
    return [row.id for row in rows]


def general_page(path: Path, offset: int, limit: int = 10, by_activity: bool = True) -> list[str]:
    db = SessionDB(path, read_only=True)
    try:
        rows, _total = listing.page(db.store, ListQuery.from_options(by_activity=by_activity), offset, limit, count=False)
        return [row.id for row in rows]
    finally:
        db.close()


def _ranks_by_activity(statement: str) -> bool:
    return "_chain_last_active" in statement


def _ranks_by_start(statement: str) -> bool:
    """Every id by start (no LIMIT): the ranking by start."""
    return statement.startswith("SELECT s.id FROM sessions s") and "LIMIT" not in statement


def rankings_run(store: BrowserData, fn, by_activity: bool = True) -> int:
    """How many times ``fn()`` ranked the whole list (by last activity, or by start)."""
    counter = store._connection("counter")
    statements: list[str] = []
    counter._conn.set_trace_callback(statements.append)
    try:
        fn()
    finally:
        counter._conn.set_trace_callback(None)
    ranks = _ranks_by_activity if by_activity else _ranks_by_start
    return sum(1 for s in statements if ranks(s))


def test_deep_pages_are_the_general_querys_pages_from_one_ranking(store_path: Path) -> None:
    store = BrowserData(store_path)
    try:
        assert rankings_run(store, lambda: deep_page(store, 20)) == 1
        assert deep_page(store, 20) == general_page(store_path, 20) == [f"s{i:02d}" for i in range(19, 9, -1)]
        assert rankings_run(store, lambda: [deep_page(store, offset) for offset in (10, 30, 5)]) == 0
        assert deep_page(store, 30) == general_page(store_path, 30)
        assert deep_page(store, 35) == general_page(store_path, 35)  # (the last 5)
        rows, total = store.page(30, 10, ListQuery.from_options(by_activity=True), count=True)
        assert total == 40
        # The first page is still the walk's (no ranking), and by start nothing is ranked.
        assert rankings_run(store, lambda: store.page(0, 5, ListQuery.from_options(by_activity=True))) == 0
        assert rankings_run(store, lambda: store.page(20, 10, ListQuery())) == 0
        # Other filters, another ranking.
        assert rankings_run(store, lambda: store.page(
            20, 10, ListQuery.from_options(exclude_sources=["telegram"], by_activity=True), count=False)) == 1
    finally:
        store.close()


def test_a_commit_is_ranked_again_in_the_census_turn(store_path: Path) -> None:
    store = BrowserData(store_path)
    writer = SessionDB(store_path)
    try:
        before = deep_page(store, 20)
        assert "s15" in before
        writer.append_message("s15", "user", "back to this one")  # newest activity: to the top
        # Until the census, deep pages are slices of the ranking made before the commit.
        assert deep_page(store, 20) == before
        census = store.census(ListQuery(order=Order.ACTIVITY), count=True)
        assert census.revised
        after = deep_page(store, 20)
        assert "s15" not in after
        assert after == general_page(store_path, 20)
        # Nothing committed since: no new ranking, nothing to revise.
        assert not store.census(ListQuery(order=Order.ACTIVITY), count=True).revised
    finally:
        writer.close()
        store.close()


def test_a_stale_ranking_waits_its_turn_and_the_census_says_when(store_path: Path, monkeypatch) -> None:
    """Ranking again costs seconds at 250k sessions: it is paced by its own cost, apart from
    the count (whose pace the census keeps), and the census says when its turn comes."""
    import hermes_state.listing.rankings as rankings_module

    store = BrowserData(store_path)
    writer = SessionDB(store_path)
    try:
        before = deep_page(store, 20)
        writer.append_message("s15", "user", "back to this one")
        monkeypatch.setattr(rankings_module, "RANK_IDLE_RATIO", 1e9)  # (its turn far off)
        censuses = []
        assert rankings_run(store, lambda: censuses.append(
            store.census(ListQuery(order=Order.ACTIVITY), count=True))) == 0
        census = censuses[0]
        assert census.total == 40 and not census.revised
        assert census.ranking_s == 0.0 and census.again_in > 0
        assert deep_page(store, 20) == before  # (the stale ranking serves meanwhile)
        monkeypatch.setattr(rankings_module, "RANK_IDLE_RATIO", 0.0)  # its turn has come
        census = store.census(ListQuery(order=Order.ACTIVITY), count=True)
        assert census.revised and census.ranking_s > 0 and census.again_in is None
        assert deep_page(store, 20) == general_page(store_path, 20) != before
    finally:
        writer.close()
        store.close()


def test_a_ranking_nobody_reads_is_dropped_not_ranked_again(store_path: Path) -> None:
    store = BrowserData(store_path)
    writer = SessionDB(store_path)
    try:
        deep_page(store, 20)
        writer.append_message("s15", "user", "a commit")
        assert store.census(ListQuery(order=Order.ACTIVITY), count=True).revised  # ranked again
        writer.append_message("s16", "user", "another")
        # No deep page read since (the reader went back to the top): dropped.
        assert rankings_run(store, lambda: store.census(ListQuery(order=Order.ACTIVITY), count=True)) == 0
        assert not store.rankings
    finally:
        writer.close()
        store.close()


def test_the_users_own_archive_shows_at_once_deep_in_the_list(store_path: Path) -> None:
    store = BrowserData(store_path)
    try:
        assert "s15" in deep_page(store, 20)
        assert store.set_archived("s15", True)
        page = deep_page(store, 20)
        assert "s15" not in page
        assert page == general_page(store_path, 20)
    finally:
        store.close()


def test_the_reader_is_free_while_the_list_is_ranked(store_path: Path) -> None:
    store = BrowserData(store_path)
    try:
        counter = store._connection("counter")
        entered, release = threading.Event(), threading.Event()

        def hold() -> int:
            entered.set()
            release.wait(10)
            return 0

        counter._conn.set_progress_handler(hold, 100)  # the ranking stops inside SQLite
        deep: list[list[str]] = []
        thread = threading.Thread(target=lambda: deep.append(deep_page(store, 20)))
        thread.start()
        try:
            assert entered.wait(10)
            top = [row.id for row in store.page(
                0, 5, ListQuery.from_options(by_activity=True), count=False)[0]]
            assert top == ["s39", "s38", "s37", "s36", "s35"]
            assert store.summary("s03") is not None
        finally:
            release.set()
            thread.join(10)
        counter._conn.set_progress_handler(None, 0)
        assert deep == [general_page(store_path, 20)]
    finally:
        store.close()


def test_a_conversation_deleted_since_the_ranking_leaves_no_hole(store_path: Path) -> None:
    store = BrowserData(store_path)
    writer = SessionDB(store_path)
    try:
        before = deep_page(store, 20)
        writer.delete_session(before[3])  # another process
        page = deep_page(store, 20)
        assert len(page) == 10
        assert page == [sid for sid in before if sid != before[3]] + ["s09"]
    finally:
        writer.close()
        store.close()


# ------------------------------------------------------------------ while the list is counted


@pytest.fixture
def census_gate(monkeypatch) -> threading.Event:
    """The browser's census (the list's length, the counts per source) waits until this is
    set: what a user meets in the seconds it takes at 250k sessions."""
    gate = threading.Event()
    real_census = BrowserData.census

    def held_census(self, **kwargs):
        gate.wait(10)
        return real_census(self, **kwargs)

    monkeypatch.setattr(BrowserData, "census", held_census)
    return gate


async def test_end_pressed_while_counting_goes_to_the_end_once_counted(tmp_path: Path, census_gate: threading.Event) -> None:
    """The first window is one page and the list is counted after it ("50+ conversations
    (counting…)"): End pressed meanwhile went to the 51st row and stayed there."""
    db = build_many(tmp_path / "state.db", sessions=330)
    counting = census_gate
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        lst = app.screen.query_one(SessionList)
        await wait_until(pilot, lambda: lst.loaded and lst.row(0) is not None)
        assert lst.counting and lst.total < 330
        await pilot.press("end")
        assert lst.cursor == lst.total - 1 < 329
        counting.set()
        await wait_until(pilot, lambda: not lst.counting)
        await wait_until(pilot, lambda: lst.cursor == 329 and lst.row(329) is not None)
        assert lst.row(329).id == "20261117_000000_many00"  # the oldest

        # A move after End, while counting, is where the reader stays.
        counting.clear()
        await pilot.press("o")  # another order: counted again
        await wait_until(pilot, lambda: lst.counting and lst.row(0) is not None)
        await pilot.press("end", "up")
        moved_to = lst.cursor
        counting.set()
        await wait_until(pilot, lambda: not lst.counting)
        await pilot.pause(0.1)
        assert lst.cursor == moved_to


async def test_another_list_does_not_show_the_last_ones_count_while_counting(tmp_path: Path, census_gate: threading.Event) -> None:
    """Another filter or order is counted afresh: meanwhile the pane said the old list's length
    ("196,854+ conversations (counting…)" for a workspace of 22,195), seconds at 250k sessions."""
    db = build_many(tmp_path / "state.db", sessions=330)  # (more than the window after a change reads)
    counting = census_gate
    counting.set()
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        lst = screen.query_one(SessionList)
        await wait_until(pilot, lambda: not lst.counting and lst.total == 330)
        assert str(screen.switcher.border_subtitle) == "330 conversations"
        counting.clear()
        seen: list[str] = []
        real_update = screen.update_titles

        def update_titles() -> None:
            real_update()
            seen.append(str(screen.switcher.border_subtitle))

        screen.update_titles = update_titles
        await pilot.press("o")
        await wait_until(pilot, lambda: lst.loaded and lst.row(0) is not None)
        counting.set()
        await wait_until(pilot, lambda: not lst.counting)
        assert seen[-1] == "330 conversations"
        assert all(title == "loading…" or title == "330 conversations" or title.endswith("+ conversations (counting…)")
                   and not title.startswith("329") for title in seen), seen
        assert "loading…" in seen


async def test_the_source_picker_opened_before_the_count_fills_in(tmp_path: Path, census_gate: threading.Event) -> None:
    """``s`` before the first census said "all sources 0" and offered no source to pick."""
    from textual.widgets import OptionList

    from hermes_tui.modals.source_picker import SourcePicker
    db = build_many(tmp_path / "state.db", sessions=30)
    writer = SessionDB(db)
    writer.create_session("tg1", "telegram")
    writer.close()
    counting = census_gate
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        lst = app.screen.query_one(SessionList)
        await wait_until(pilot, lambda: lst.loaded and lst.row(0) is not None)
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, SourcePicker))
        options = app.screen.query_one(OptionList)
        await wait_until(pilot, lambda: [o.id for o in options.options] == ["", "cli", "telegram"])
        assert "31" in str(options.get_option_at_index(0).prompt)
        await pilot.press("down", "down", "enter")
        await wait_until(pilot, lambda: app.screen is not None and not isinstance(app.screen, SourcePicker))
        assert app.screen.source_filter == "telegram"
        counting.set()


async def test_a_ranking_that_waited_its_turn_is_made_again_without_another_commit(
        store_path: Path, monkeypatch) -> None:
    """A reader at the end of the list; another process commits once; the census after it
    leaves the ranking for its turn -- which comes with no commit after it to wake the list."""
    import hermes_state.listing.rankings as rankings_module
    from hermes_tui.context import StoreChange

    app = make_app(store_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        lst = screen.query_one(SessionList)
        await wait_until(pilot, lambda: lst.loaded and lst.total == 40 and not lst.counting)
        await pilot.press("end")
        await wait_until(pilot, lambda: lst.row(39) is not None)
        store = app.ctx.store
        assert store.rankings, "the end of the list is a slice of a ranking"
        ranking = store.rankings.kept()[0]
        # Its turn 0.6 s after it was made, whatever it cost.
        monkeypatch.setattr(rankings_module, "RANK_IDLE_RATIO", 0.6 / max(ranking.cost_s, 1e-6))
        writer = SessionDB(store_path)
        try:
            writer.append_message("s00", "user", "the oldest, active again")  # to the top
        finally:
            writer.close()
        screen.store_changed(StoreChange(database=True))  # (as the watcher does)
        await wait_until(pilot, lambda: lst.row(39) is not None and lst.row(39).id == "s01", timeout=5)
        assert lst.row(0).id == "s00"


# --------------------------------------------------------------------- deep pages by start
#
# By start a page deep in the list walks the start index up to its offset (0.4-0.8 s a page
# past 100,000 rows at 250k sessions): deep pages by start are slices of one ranking by start.


def test_deep_pages_by_start_are_slices_of_one_ranking_by_start(store_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(listing.pages, "BY_START_DEEP_ROWS", WALK)
    store = BrowserData(store_path)
    writer = SessionDB(store_path)

    def page(offset: int) -> list[str]:
        return deep_page(store, offset, by_activity=False)

    def general(offset: int) -> list[str]:
        return general_page(store_path, offset, by_activity=False)

    def ranked(fn) -> int:
        return rankings_run(store, fn, by_activity=False)

    try:
        assert ranked(lambda: page(20)) == 1
        assert page(20) == general(20) == [f"s{i:02d}" for i in range(19, 9, -1)]
        assert ranked(lambda: [page(offset) for offset in (10, 30, 5)]) == 0
        assert page(35) == general(35)  # (the last 5)
        # The order is part of the ranking's key: by last activity, a ranking of its own.
        assert rankings_run(store, lambda: deep_page(store, 20)) == 1
        assert ranked(lambda: page(20)) == 0
        # A new conversation (the newest start) moves every deep page by one: ranked again in
        # the census's turn for the order shown.
        writer.create_session("s99", "cli")
        writer.append_message("s99", "user", "a new one")
        assert ranked(lambda: store.census(ListQuery(), count=True)) == 1
        assert page(20) == general(20) == [f"s{i:02d}" for i in range(20, 10, -1)]
    finally:
        writer.close()
        store.close()


# ------------------------------------------------------------- what the reader waits for
#
# Ranking the whole list takes seconds at 250k sessions (once per filters and order): the deep
# rows show "…" meanwhile, and the status line says why.


def test_the_store_door_says_while_it_ranks_and_only_then(store_path: Path) -> None:
    from hermes_tui.data import RANKING_TEXT

    said: list = []
    store = BrowserData(store_path, on_activity=said.append)
    try:
        deep_page(store, 20)
        assert said == [RANKING_TEXT, None]
        deep_page(store, 30)  # (a slice of the ranking made: nothing to wait for)
        deep_page(store, 0)  # (the first page: no ranking)
        assert said == [RANKING_TEXT, None]
    finally:
        store.close()


async def test_the_status_line_says_what_a_deep_page_waits_for(store_path: Path, monkeypatch) -> None:
    from hermes_tui.data import RANKING_TEXT
    from hermes_tui.widgets.status import StatusLine

    app = make_app(store_path)
    async with app.run_test(size=SIZE) as pilot:
        lst = app.screen.query_one(SessionList)
        status = app.screen.query_one(StatusLine)
        await wait_until(pilot, lambda: lst.loaded and lst.total == 40 and not lst.counting)

        def drawn() -> str:
            return "".join(segment.text for segment in status.render_line(0))

        # (the door's own start-up ranking, if a loaded machine still has it running, said and
        # cleared before the held one begins)
        await app.workers.wait_for_complete()
        await wait_until(pilot, lambda: RANKING_TEXT[:30] not in drawn(), timeout=10)
        # The list by start, every page of it "deep" here, its ranking held back (a large store).
        gate = threading.Event()
        original = listing.pages.rank

        def slow_rank(*args, **kwargs):
            gate.wait(10)
            return original(*args, **kwargs)

        monkeypatch.setattr(listing.pages, "rank", slow_rank)
        monkeypatch.setattr(listing.pages, "BY_START_DEEP_ROWS", WALK)
        assert RANKING_TEXT[:30] not in drawn()
        await pilot.press("o")
        await wait_until(pilot, lambda: RANKING_TEXT[:30] in drawn(), timeout=5)
        assert "⚠" not in drawn()  # (not a warning)
        gate.set()
        await wait_until(pilot, lambda: lst.row(0) is not None and RANKING_TEXT[:30] not in drawn(), timeout=5)
        assert lst.row(0).id == "s39"  # (the newest start first)


async def test_the_store_door_never_waits_for_the_event_loop_to_say_a_status(store_path: Path) -> None:
    """The door says "ranking…" or "waiting for a lock" while it holds its own locks: a thread
    that waited there for a busy event loop would hang the day the loop asked the door for
    anything. Said from a thread while the loop is blocked, it returns at once and shows once
    the loop runs; said from the loop itself, it shows too."""
    import time

    from hermes_tui.widgets.status import StatusLine

    app = make_app(store_path)
    async with app.run_test(size=SIZE) as pilot:
        status = app.screen.query_one(StatusLine)
        lst = app.screen.query_one(SessionList)
        # (the door's own work done: its "ranking…" and the clearing after it said)
        await wait_until(pilot, lambda: lst.loaded and lst.total == 40 and not lst.counting)
        await app.workers.wait_for_complete()

        def drawn() -> str:
            return "".join(segment.text for segment in status.render_line(0))

        returned: list[float] = []
        thread = threading.Thread(
            target=lambda: (app._activity_from_thread("ordering from a thread"), returned.append(time.monotonic()))
        )
        blocked_at = time.monotonic()
        thread.start()
        time.sleep(0.5)  # the event loop is busy (this test runs on it)
        thread.join(5)
        assert returned and returned[0] - blocked_at < 0.4  # not held until the loop was free
        await wait_until(pilot, lambda: "ordering from a thread" in drawn(), timeout=5)
        app._activity_from_thread(None)
        app._wait_from_thread("said on the loop's own thread")
        await wait_until(pilot, lambda: "said on the loop's own thread" in drawn(), timeout=5)


async def test_end_pressed_while_another_order_loads_goes_to_its_end(tmp_path: Path, monkeypatch) -> None:
    """``o`` (another order) empties the list until its first page is read -- half a second
    and more at 250k sessions when the page is slow (a common source by start was, before
    the start index was walked for it). End pressed meanwhile was lost: the list came back
    at its top."""
    db = build_many(tmp_path / "state.db", sessions=120)
    gate = threading.Event()
    real_page = BrowserData.page

    def held_page(self, *args, **kwargs):
        query = kwargs["query"] if "query" in kwargs else args[2]
        if not query.by_activity:
            gate.wait(10)
        return real_page(self, *args, **kwargs)

    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        lst = app.screen.query_one(SessionList)
        await wait_until(pilot, lambda: lst.loaded and lst.row(0) is not None and not lst.counting)
        monkeypatch.setattr(BrowserData, "page", held_page)
        await pilot.press("o")
        await wait_until(pilot, lambda: not lst.loaded)
        await pilot.press("end")
        gate.set()
        await wait_until(pilot, lambda: lst.loaded and not lst.counting and lst.total == 120)
        await wait_until(pilot, lambda: lst.cursor == 119 and lst.row(119) is not None)
        assert lst.row(119).id == "20261117_000000_many00"  # the oldest start
