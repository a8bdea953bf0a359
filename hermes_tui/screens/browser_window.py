"""The browser's list window and its count: the part of
:class:`~hermes_tui.screens.browser.BrowserScreen` that reads the pages around the reader and
counts the list.

Pages load in thread workers and come back as messages carrying a *generation*: a page asked
for before a filter change or a refresh is dropped when it arrives late. Counting the list
(the census) reads every session row, so it follows the window, one at a time, paced by what
it costs; the list shows "N+ … counting" until it is in. Live data never moves the reader
(BR-16): a window read again after a commit keeps the highlighted conversation on its screen
row.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Callable

from textual.message import Message

from hermes_state.listing import ListQuery
from hermes_state.models import SessionSummary

from ..messages import WorkerDone
from ..pacing import Pacer
from ..view_models import Census

if TYPE_CHECKING:
    from textual.timer import Timer

    from .browser import BrowserScreen


@dataclass
class Window:
    """Pages around a row, loaded together so a refresh lands in one step."""

    generation: int
    pages: dict[int, list[SessionSummary]]
    total: int
    keep_key: str | None
    source_counts: dict[str, int] = field(default_factory=dict)
    #: Keep the conversation highlighted when the window is shown on its screen row (BR-16).
    keep_current: bool = False
    #: Read again because what the shown window rested on was wrong: keep the reader's place
    #: only if they have moved, else show the list from its top (see ListWindow.refresh).
    correction: bool = False
    #: The pages reached the end of the list: ``total`` is its length, not a lower bound.
    exact: bool = False


class WindowLoaded(Message):
    def __init__(self, window: Window) -> None:
        super().__init__()
        self.window = window


class CensusLoaded(Message):
    """The census (see :meth:`ListWindow.load`) of the list under the filters ``key``, taken
    after the window it follows was painted."""

    def __init__(self, key: tuple, census: Census, seconds: float = 0.0) -> None:
        super().__init__()
        self.key = key
        self.census = census
        #: What taking it cost (see :class:`~hermes_tui.pacing.Pacer`).
        self.seconds = seconds


class PageLoaded(Message):
    def __init__(self, generation: int, offset: int, rows: list[SessionSummary]) -> None:
        super().__init__()
        self.generation = generation
        self.offset = offset
        self.rows = rows


def row_key(row: SessionSummary) -> str:
    """A conversation's stable identity: its lineage root (the row id changes at each tip)."""
    return row.lineage_root_id or row.id


class ListWindow:
    """Owned by one :class:`BrowserScreen`, whose filters it reads under; its workers and
    timers are the screen's. ``on_first_page`` runs once the first window is painted."""

    def __init__(self, screen: "BrowserScreen", on_first_page: Callable[[], None] | None = None) -> None:
        self.screen = screen
        self._on_first_page = on_first_page
        #: The filters the list's length was last counted for (see :meth:`load`).
        self.counted_key: tuple | None = None
        #: The first window has been asked for (it is one page, see :meth:`load`).
        self._first_window_asked = False
        #: A census is being taken / another is wanted after it (see :meth:`want_census`).
        self.census_running = False
        self.census_due = False
        #: Censuses spaced by what they cost (a gateway commits many times a second).
        self.census_pacer = Pacer()
        self._census_timer: Timer | None = None
        #: Why the next census is wanted: another process committed (it waits its turn), the
        #: user wrote (it does not, even if a commit came too).
        self.census_paced = False
        self.census_prompt = False
        #: The filters the last census was taken for.
        self._census_key: tuple | None = None
        #: Pages and windows asked for before this changed are dropped when they arrive.
        self.generation = 0
        self.source_counts: dict[str, int] = {}
        #: ``source_counts`` has been counted (by a census) at least once.
        self.counted_sources = False
        #: The source picker's numbers (conversations per source, :attr:`Census.listed_by_source`)
        #: and the filters they were counted under.
        self.listed_by_source: tuple[tuple, dict[str, int]] | None = None
        self._pending_select: str | None = None
        #: Where the cursor was when ``_pending_select`` was asked for: moved since (keys
        #: typed behind the dialog's Enter), the reader's move wins.
        self._pending_select_from: int | None = None
        #: Another process committed while the list was hidden behind the search pane: read
        #: it when it is shown (2: and what it rested on was wrong; see :meth:`refresh`).
        self._list_stale = 0

    def _in_worker(self, work: Callable[[], None], group: str, exclusive: bool = False) -> None:
        self.screen.run_worker(work, group=group, exclusive=exclusive, thread=True, exit_on_error=False)

    # ------------------------------------------------------------------ reading

    def _page(
        self, offset: int, size: int, count: bool = True, provisional: bool = False
    ) -> tuple[list[SessionSummary], int | None]:
        screen = self.screen
        data = screen.ctx.store
        if screen.lanes_only:
            return data.page_of_ids(screen.ctx.lanes.live_ids(), offset, size, screen.filters)
        return data.page(offset, size, screen.filters, count=count, provisional=provisional)

    def load(self, center: int, keep_key: str | None, *, keep_current: bool = False, correction: bool = False) -> None:
        """The pages around ``center``; the census (the list's length, the per-source counts,
        the exact pins) follows on its own connection.

        Counting the list and finding the pinned sessions each read every session row
        (~0.3 s at 250k sessions, seconds from a cold page cache) while a page is a few
        milliseconds: pages rest on the pins last found (at start-up, those the recency cache
        kept; on a first run, a guess of the order too), are shown with the length known so
        far ("at least this many" until counted), and the census corrects them if they were
        wrong. So another process's commit is shown in the time of a page, however large the
        store."""
        work = partial(self._load, center, keep_key, keep_current=keep_current, correction=correction)
        self._in_worker(work, group="window", exclusive=True)

    def _load(self, center: int, keep_key: str | None, *, keep_current: bool, correction: bool) -> None:
        # The very first window is one page: the next is read when the reader gets near it
        # (from a cold page cache each page is ~1,000 random reads: half a second at 5M).
        first, self._first_window_asked = not self._first_window_asked, True
        screen = self.screen
        window, exact = self._window(self.generation, center, keep_key, screen.filter_key(), True, one_page=first)
        window.keep_current, window.correction, window.exact = keep_current, correction, exact is not None
        screen.post_message(WindowLoaded(window))

    def _window(
        self, generation: int, center: int, keep_key: str | None, key: tuple, provisional: bool,
        one_page: bool = False,
    ) -> tuple[Window, int | None]:
        """The pages around ``center`` (``one_page``: its own only) and, when they reach the
        end, the list's length."""
        screen = self.screen
        size = screen.ctx.config.page_size
        first_page = (center // size) * size
        offsets = [first_page] if one_page else sorted({max(0, first_page - size), first_page, first_page + size})
        pages: dict[int, list[SessionSummary]] = {}
        exact: int | None = None
        end = 0
        for offset in offsets:
            rows, counted = self._page(offset, size, count=screen.lanes_only, provisional=provisional)
            pages[offset] = rows
            end = offset + len(rows)
            if counted is not None:
                exact = counted
            if len(rows) < size:
                exact = end if exact is None else exact
                break
        known = screen.session_list.total if self.counted_key == key else 0
        total = exact if exact is not None else max(end + 1, known)
        return Window(generation, pages, total, keep_key, self.source_counts), exact

    def need_page(self, offset: int) -> None:
        """The list scrolled near a page it does not hold."""
        self._in_worker(partial(self._load_page, self.generation, offset), group="pages")

    def _load_page(self, generation: int, offset: int) -> None:
        screen = self.screen
        rows, _total = self._page(offset, screen.ctx.config.page_size, count=False, provisional=True)
        screen.post_message(PageLoaded(generation, offset, rows))

    # ------------------------------------------------------------------ counting

    def conversations_by_source(self) -> dict[str, int] | None:
        """The source picker's numbers for the filters in force, if a census counted them."""
        kept = self.listed_by_source
        return kept[1] if kept is not None and kept[0] == self.screen.filter_key() else None

    def want_census(self) -> None:
        """Take a census after this window -- one at a time, and spaced by what it costs:
        while one is taken, the next waits for it and serves every window shown meanwhile;
        after another process's commit, the next waits nine times as long as the last one
        took, so counting takes at most a tenth of a core (a gateway commits many times a
        second and each census reads every session row: ~0.4 s at 250k sessions; taken back
        to back they kept a core busy). One wanted at start-up, for other filters or after
        the user's own write does not wait its turn."""
        if self.census_running:
            self.census_due = True
            return
        screen = self.screen
        key = screen.filter_key()
        prompt = self.census_prompt or not self.census_paced or key != self._census_key
        wait = self.census_pacer.wait(prompt=prompt)
        if wait > 0:
            self.census_due = True
            if self._census_timer is None:
                self._census_timer = screen.set_timer(wait, self._census_turn)
            return
        if self._census_timer is not None:
            self._census_timer.stop()
            self._census_timer = None
        self.census_running, self.census_due = True, False
        self.census_prompt = self.census_paced = False
        self._census_key = key
        self.census_pacer.started()
        self._in_worker(partial(self._take_census, key, screen.filters, not screen.lanes_only), group="census")

    def _census_turn(self) -> None:
        self._census_timer = None
        if self.census_due:
            self.want_census()

    def _take_census(self, key: tuple, query: ListQuery, count: bool) -> None:
        screen = self.screen
        started = time.monotonic()
        try:
            census = screen.ctx.store.census(query=query, count=count)
        except BaseException:
            # Posted before the error is: the screen learns the census ended, then why.
            screen.post_message(WorkerDone(self._census_failed))
            raise
        screen.post_message(CensusLoaded(key, census, time.monotonic() - started))

    def _census_failed(self) -> None:
        self.census_running = False
        self.census_pacer.finished()

    def census_loaded(self, event: CensusLoaded) -> None:
        screen = self.screen
        self.census_running = False
        census = event.census
        # (the list ranked again for deep pages is paced apart: its cost is not the count's)
        self.census_pacer.finished(max(0.0, event.seconds - census.ranking_s))
        current = event.key == screen.filter_key()
        if current:
            self.source_counts = census.source_counts
            self.counted_sources = True
            if census.listed_by_source is not None:
                self.listed_by_source = (event.key, census.listed_by_source)
            # A list reset for another order or filter is "loading…" until its own first
            # window: a count that arrives before it must not mark it loaded with no rows
            # (an End pressed meanwhile was spent on rows that were not there). The window
            # asks for a census again once it is shown.
            if census.total is not None and screen.session_list.loaded:
                self.counted_key = event.key
                if census.total != screen.session_list.total:
                    screen.session_list.set_total(census.total)
            screen.update_titles()
        if census.revised:
            screen.refresh_data(correction=True)  # (which wants a census again)
        elif self.census_due or not current:
            self.want_census()
        elif census.again_in is not None:
            # A stale ranking of the list waits its turn: a census then, though nothing
            # else commits meanwhile.
            self.census_due = self.census_paced = True
            if self._census_timer is None:
                self._census_timer = screen.set_timer(census.again_in, self._census_turn)

    # ------------------------------------------------------------------ showing

    def page_loaded(self, event: PageLoaded) -> None:
        if event.generation == self.generation:
            self.screen.session_list.set_page(event.offset, event.rows)

    def window_loaded(self, event: WindowLoaded) -> None:
        window = event.window
        if window.generation != self.generation:
            return
        screen = self.screen
        lst = screen.session_list
        self.source_counts = window.source_counts
        if window.exact:
            self.counted_key = screen.filter_key()  # (its length is known: no "N+ … counting")
        if self._pending_select and lst.cursor != self._pending_select_from:
            self._pending_select = None  # the reader moved after asking: keep their place
        # BR-16: the highlighted conversation -- as it is now, the reader may have moved
        # while the window was read -- stays on the screen row it is on.
        current = lst.current
        moved = lst.cursor > 0 or lst.scroll_offset.y > 0
        screen_row = lst.cursor - lst.scroll_offset.y
        lst.clear_rows()
        lst.set_total(window.total)
        for offset, rows in window.pages.items():
            lst.set_page(offset, rows)
        target = self._pending_select or window.keep_key
        if not target and window.keep_current and current is not None and (moved or not window.correction):
            target = row_key(current)
        if target:
            index = lst.index_of_key(target, key_of=row_key)
            if index is not None:
                if self._pending_select:
                    lst.move_to(index)
                    self._pending_select = None
                else:
                    lst.keep_at(index, screen_row)
        lst.announce()
        screen.update_titles()
        if self._on_first_page is not None:
            screen.app.call_after_refresh(self._on_first_page)
            self._on_first_page = None
        self.want_census()

    # ------------------------------------------------------------------ reading again

    def refresh(self, *, correction: bool = False) -> None:
        """Read the window again, keeping the reader's place (BR-16) -- now if the list is
        shown, else once it is (:meth:`show_stale`). ``correction``: see
        :meth:`BrowserScreen.refresh_data`."""
        screen = self.screen
        self.generation += 1
        lst = screen.session_list
        lst.invalidate()
        if screen.switcher.current == "sessions":
            self.load(lst.cursor, None, keep_current=True, correction=correction)
        else:
            self._list_stale = max(self._list_stale, 2 if correction else 1)

    def show_stale(self) -> None:
        """The list is shown again: read it if a commit came while it was hidden."""
        if self._list_stale:
            correction, self._list_stale = self._list_stale > 1, 0
            self.load(self.screen.session_list.cursor, None, keep_current=True, correction=correction)

    def select(self, key: str, since: int | None = None) -> None:
        """Move the cursor to a conversation once the window read next is in, unless the
        reader moves it from ``since`` (default: where it is now) first."""
        self._pending_select = key
        self._pending_select_from = self.screen.session_list.cursor if since is None else since

    def reveal(self, key: str) -> None:
        """Put the list's cursor on the conversation ``key`` (its root), wherever it is in the
        list: at once when its row is loaded, else once the pages around it are read. A
        conversation the filters leave out leaves the cursor where it is."""
        screen = self.screen
        lst = screen.session_list
        index = lst.index_of_key(key, key_of=row_key)
        if index is not None and not self._list_stale:
            self._pending_select = None
            lst.move_to(index)
            return
        self.select(key)
        self.generation += 1
        self._list_stale = 0  # (the pages read now are read after every commit seen)
        lst.invalidate()
        self._in_worker(partial(self._load_at, key, lst.cursor), group="window", exclusive=True)

    def _load_at(self, key: str, cursor: int) -> None:
        screen = self.screen
        center = None
        if not screen.lanes_only:
            center = screen.ctx.store.list_position(key, screen.filters)
        window, exact = self._window(
            self.generation, cursor if center is None else center, key, screen.filter_key(), True,
        )
        window.keep_current, window.exact = True, exact is not None
        screen.post_message(WindowLoaded(window))

    def from_top(self) -> None:
        """Other filters or order: the list from its top."""
        self.generation += 1
        self.screen.session_list.reset()
        self.load(0, None)
