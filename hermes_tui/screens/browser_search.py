"""The browser's search as you type: the part of :class:`~hermes_tui.screens.browser.BrowserScreen`
that turns keys in the search field into searches and their answers into the search pane.

A key searches at once after a pause, keys in quick succession are coalesced (debounced); a
search still running for an older query is interrupted; an answer for a query no longer typed
is dropped. The key's echo is held for its answer (one frame for both, see
:mod:`hermes_tui.frames`). After another process's commit the query is asked again, unless a
key's search will show the commit anyway. The detail pane follows the highlighted hit.
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING, Any, Callable

from rich.text import Text

from hermes_state.models import ranks_again_when_paused
from hermes_state.timewindow import Windowed, windowed

from ..collector import hold_collection, release_collection
from ..fitting import Part, fit_parts
from ..keynames import bound_keys_label
from ..messages import Generation, SearchFinished, Stamp, WorkerDone
from ..search_hold import Held, announcement, hold_still, ranked_anew, without_shown
from ..view_models import SearchView

if TYPE_CHECKING:
    from textual.timer import Timer

    from hermes_state.models import SessionSummary

    from .browser import BrowserScreen

#: Hits per page of the search pane (more than a screenful; the next page loads as you move).
SEARCH_PAGE = 40
#: After a commit, the search is asked again once no key has searched for this long.
SEARCH_REFRESH_QUIET_S = 0.3
#: Typing paused while a refresh after a commit ran: the pause's ranking is tried again after
#: this, this many times at most.
EXACT_RETRY_S = 0.1
EXACT_RETRIES = 50


#: Columns of the pane's bottom border its subtitle leaves to the corners and the border.
SUBTITLE_MARGIN = 6


def subtitle_parts(view: SearchView) -> list[Part]:
    """Path, ranking, hits shown of the estimated total, conversations, time, notes. At 80
    columns the full line (``fts5 · by relevance (bm25-conversations) · 40 hits of ~94 · 15
    conversations · 4.3 ms``) was cut in the middle of what it counts: what matters least to
    a reader gives way first, the index that served it, then the time, then the ranking's
    name in brackets (``by relevance`` stays)."""
    # (the hits shown: one store's ``hit_count`` is the hits it read, where the next
    # page starts, and counts those a time window or another filter then left out)
    shown = sum(len(group.hits) for group in view.groups)
    hits = f"{shown} hit{'s' if shown != 1 else ''}"
    if view.total_estimate and view.total_estimate > shown:
        # (a time window or another conversation filter leaves out conversations after
        # their messages matched: the count of matches is then theirs too, and says so)
        hits += f" of ~{view.total_estimate:,}" + (" before filters" if view.filters_on else "")
    convs = len(view.groups)
    parts = [Part(view.path or "—", gives_way=2), Part(hits, droppable=False),
             Part(f"{convs} conversation{'s' if convs != 1 else ''}", droppable=False),
             Part(f"{view.elapsed_ms:.1f} ms", gives_way=1)]
    if view.order == "newest":
        label = "newest first"
    elif view.ranking == "newest":
        label = "newest first (words too common to rank)"
    elif view.order:
        label = "by relevance" + (f" ({view.ranking})" if view.ranking else "")
    else:
        label = view.ranking
    if label and shown:
        parts.insert(1, Part(label, short="by relevance" if label.startswith("by relevance (") else None,
                             droppable=False))
    if view.note and not view.groups:  # (with hits, the note heads them)
        parts.append(Part(view.note, droppable=False))
    return parts


class SearchAsYouType:
    """Owned by one :class:`BrowserScreen`; its workers and timers are the screen's."""

    def __init__(self, screen: "BrowserScreen") -> None:
        self.screen = screen
        #: The query in the field now (what an answer must be for to be shown).
        self.query = ""
        self._search_timer: Timer | None = None
        self._collection_timer: Timer | None = None
        self._last_search_at = 0.0
        #: When the key behind the current query reached the field (``time.perf_counter()``).
        self.keystroke_at = 0.0
        #: A search worker is running (a newer query interrupts it).
        self._searching = False
        #: Searches of the whole answer asked so far (keys, refreshes, the pause): an answer
        #: to any but the last is superseded (``SearchFinished.asked``).
        self._asked = 0
        #: Another process committed since the last search started (see :meth:`refresh`).
        self.stale = False
        self._refresh_timer: Timer | None = None
        #: The newest answer asked again after a commit, while it holds matches not shown: the
        #: rows on screen hold still and the new matches wait for the reader (search_hold).
        self.held: Held | None = None
        #: The conversation of the hit last acted on (opened, renamed, pinned…): Esc back to
        #: the list puts the list's cursor on it.
        self.acted_on: str | None = None
        #: (query, seconds from keystroke to results painted) of recent searches (bench).
        self.latencies: list[tuple[str, float]] = []
        #: The detail pane's loads for the highlighted hit: only the newest one's answer shows.
        self._detail_requests = Generation()
        #: ((query, screen's window), what _windowed answered) at the last first page.
        self._window_kept: tuple[tuple, Windowed] | None = None
        #: The pause after which a keystroke's answer is ranked over every match by
        #: conversation, and the query whose shown answer is that one (its later pages are
        #: asked so too).
        self._exact_timer: Any = None
        self._exact_query: str | None = None
        #: How conversations are ordered (SR-18): the config's, until the key toggles it.
        search_config = screen.ctx.config.search
        self.order = search_config.order
        self.weights = search_config.weights()

    # ------------------------------------------------------------------ the pane

    def show_guide(self) -> None:
        """The search pane of an empty, focused field: the query language by example."""
        screen = self.screen

        def key(binding_id: str, default: str) -> str:
            return bound_keys_label(screen.app, binding_id, default)

        screen.results.show_guide(
            f"{key('previous_hit', 'up')} {key('next_hit', 'down')} move through the hits · "
            f"{key('open_hit', 'enter')} opens one · {key('clear_search', 'escape')} goes back to the list"
        )
        switcher = screen.switcher
        switcher.current = "results"
        switcher.border_title = self.title()
        switcher.border_subtitle = Text("type to search")

    def still_searching(self, query: str) -> None:
        if query == self.query and self.screen.results.showing_guide:
            self.screen.switcher.border_subtitle = Text("searching…")

    def title(self) -> Text:
        """The search pane's title: what is searched (a Text: the filters are data) -- after
        the new matches that wait, when some do: said first, a narrow pane cuts the end."""
        title = Text(f"Search · {self.screen.filter_label()}")
        if self.held is None:
            return title
        keys = bound_keys_label(self.screen.app, "show_new_matches", "ctrl+n")
        return Text.assemble((f" {announcement(len(self.held.new), keys)} ", "bold reverse"), " · ", title)

    def _hold(self, held: Held | None) -> None:
        """New matches wait (``held``), or none does (None): the title and the key say so."""
        self.held = held
        self.screen.results.set_waiting(len(held.new) if held is not None else 0)
        if self.screen.switcher.current == "results":
            self.screen.switcher.border_title = self.title()

    def show_new(self) -> None:
        """The reader takes the new matches: the newest answer as it ranks them, the cursor on
        the first of them."""
        held = self.held
        if held is None or held.fresh.query != self.query:
            return
        self._hold(None)
        results = self.screen.results
        results.show(held.fresh)
        results.highlight_first(held.new)
        self.subtitle(held.fresh)

    def subtitle(self, view: SearchView | None) -> None:
        if view is None:
            return
        main = self.screen.switcher
        main.border_subtitle = Text(fit_parts(subtitle_parts(view), main.size.width - SUBTITLE_MARGIN))

    def refit(self) -> None:
        """The answer shown described again at the pane's width (the terminal was resized):
        not while a search runs (its line says so) nor over the guide."""
        results = self.screen.results
        if (self.screen.switcher.current == "results" and results.view is not None
                and not results.showing_guide and not self._searching):
            self.subtitle(results.view)

    def _titles(self, view: SearchView) -> None:
        if self.screen.results.view is view:  # (a newer answer has its own)
            self.screen.switcher.border_title = self.title()
            self.subtitle(view)

    def _describe_nothing_for(self, view: SearchView) -> None:
        screen = self.screen
        if screen.results.view is view and screen.switcher.current == "results":
            screen.show_detail(None)

    # ------------------------------------------------------------------ keys

    def query_changed(self, query: str) -> None:
        """The field's text changed (a key, a paste, the program)."""
        screen = self.screen
        if self._search_timer is not None:
            self._search_timer.stop()
            self._search_timer = None
        if query != self.query and self.held is not None:
            self._hold(None)  # (the new query's answer shows every match)
        self.query = query
        # The latency of this change starts when its key reached the field, before the frame
        # that echoed it (~2 ms earlier); a change not made by a key (a paste, the program)
        # starts now.
        now = time.perf_counter()
        key_at = screen.search_input.key_at
        self.keystroke_at = key_at if 0 <= now - key_at < 0.25 else now
        if not query.strip():
            screen.ctx.store.interrupt_search()
            if screen.search_input.has_focus:
                self.show_guide()
            else:
                screen.show_list()
            screen.search_input.release_echo(screen.results, screen.switcher)
            return
        # No garbage collection until this answer is painted (or a second has passed): see
        # hermes_tui.collector.hold_collection.
        hold_collection()
        if self._collection_timer is not None:
            self._collection_timer.stop()
        self._collection_timer = screen.set_timer(1.0, release_collection)
        switcher = screen.switcher
        if switcher.current != "results":
            # The search pane opens at the first key, empty (its rows were cleared with the
            # last query) and named. The key's echo is held for the answer (SearchInput's
            # frame_hold), so the switch's layout is drawn in the answer's frame: drawn
            # beside the first search instead, it shared the interpreter with it and first
            # keys took longer (1M, held: p50 45.6 ms, drawn at once: 55.2).
            screen.results.clear_results()
            switcher.current = "results"
            switcher.border_title = self.title()
            switcher.border_subtitle = Text("searching…")
        elif screen.results.showing_guide:
            # The pane is open already (the field took focus) and keeps its title; the answer's
            # frame redraws only the hits. A search slower than that says so.
            screen.set_timer(0.1, lambda: self.still_searching(query))
        # Leading edge: the first keystroke after a pause searches at once (so one key
        # paints in the time of one query); keys typed in quick succession are coalesced
        # into one search after the debounce interval.
        now = time.monotonic()
        debounce = screen.ctx.config.search_debounce_s
        if now - self._last_search_at >= debounce:
            self._last_search_at = now
            # The key's echo waits for this answer (SearchInput.frame_hold): one frame for both.
            self.start(query)
        else:
            screen.search_input.release_echo()
            self._search_timer = screen.set_timer(debounce, lambda: self._debounced(query))

    def _debounced(self, query: str) -> None:
        self._search_timer = None
        if query == self.query:
            self._last_search_at = time.monotonic()
            self.start(query)

    # ------------------------------------------------------------------ searching

    def start(self, query: str, *, keep: bool = False) -> None:
        """Search for ``query``; a search still running for an older query is stopped.

        ``keep``: the same query again after a commit; its answer is merged in place.
        """
        screen = self.screen
        if self._searching:
            screen.ctx.store.interrupt_search()
        self._searching = True
        if not keep:
            # (a refresh after a commit leaves the pause's ranking to come: the same query)
            self._cancel_exact()
        # (a refresh after a commit of an answer ranked exactly is ranked exactly again)
        exact = keep and self._exact_query == query
        if not exact:
            self._exact_query = None
        self.stale = False  # (this one sees every commit made before it)
        if self._refresh_timer is not None:
            self._refresh_timer.stop()
            self._refresh_timer = None
        shown = screen.results.view
        # A refresh asks for as many hits as are shown, so pages already loaded (BR-20) stay
        # (shown hits that new matches push past the limit stay as shown: search_hold).
        limit = max(SEARCH_PAGE, shown.hit_count) if keep and shown is not None else SEARCH_PAGE
        self._asked += 1
        self._in_worker(partial(self._run, query, keep, limit, exact, self._asked), group="search")

    # ------------------------------------------------------------------ ranked exactly once typing pauses

    def _cancel_exact(self) -> None:
        if self._exact_timer is not None:
            self._exact_timer.stop()
            self._exact_timer = None

    def _reader_stayed(self, query: str) -> bool:
        """The answer of ``query`` is shown and the reader has not moved into it: the field
        still has focus and the first hit is highlighted (a better answer may replace it
        without moving anything the reader holds; new matches announced meanwhile stay
        announced, :func:`~hermes_tui.search_hold.ranked_anew`)."""
        screen = self.screen
        shown = screen.results.view
        return (query == self.query and shown is not None and shown.query == query
                and screen.focused is screen.search_input and screen.results.at_first_hit())

    def _rank_exactly(self, query: str, tries: int = EXACT_RETRIES) -> None:
        """Typing paused on a keystroke's answer (the newest matches only, or message by
        message, for speed): the same query ranked over every match by conversation, in the
        background; the next key stops it (SR-18)."""
        self._exact_timer = None
        if not self._reader_stayed(query):
            return
        if self._searching:
            # (a refresh after a commit is running -- a gateway writes every few seconds: the
            # pause ranks once it has answered, not never; a search that never answers is
            # not waited for forever)
            if tries > 0:
                self._exact_timer = self.screen.set_timer(
                    EXACT_RETRY_S, lambda: self._rank_exactly(query, tries - 1))
            return
        self._searching = True
        shown = self.screen.results.view
        limit = max(SEARCH_PAGE, shown.hit_count) if shown is not None else SEARCH_PAGE
        self._asked += 1
        self._in_worker(partial(self._run, query, False, limit, True, self._asked), group="search")

    def _in_worker(self, work: Callable[[], None], group: str) -> None:
        """One worker of the group at a time (a newer one cancels the older), on the screen."""
        self.screen.run_worker(work, group=group, exclusive=True, thread=True, exit_on_error=False)

    def _windowed(self, query: str, *, again: bool = False) -> Windowed:
        """``query`` without its ``after:`` / ``before:`` terms, the screen's time window
        narrowed by them (BR-21: the conversations last active in both), and what is wrong
        with a term that cannot be read (the term is then left out, and the note says so):
        the library's one reading of them (:func:`hermes_state.timewindow.windowed`) at the
        screen's clock.

        ``again``: for a later page of the answer shown, the window its first page was read
        with (``after:7d`` is worked out at the first page's clock, not at each page's:
        pages of one answer share one window, and the store finds the answer's stream)."""
        screen = self.screen
        kept = self._window_kept
        if again and kept is not None and kept[0] == (query, screen.narrow):
            return kept[1]
        answer = windowed(query, screen.narrow, screen.ctx.clock())
        self._window_kept = ((query, screen.narrow), answer)
        return answer

    def _searched(self, query: str, read: Windowed, **asked: Any) -> SearchView:
        """A page of ``query``'s answer (``read``: its words and time window) under the
        screen's filters, in the pane's order: the one call of the store's search, for a
        first page and the pages after it alike."""
        screen = self.screen
        listed = screen.filters.with_(narrow=read.narrow)
        view = screen.ctx.store.search(
            read.text, listed, order=self.order, weights=self.weights, now=screen.ctx.clock(), **asked,
        )
        view.query = query  # (as typed: its answer and its next pages are matched by it)
        view.filters_on = tuple(listed.conversation_filters())
        return view

    def _run(self, query: str, keep: bool, limit: int, exact: bool = False, asked: int | None = None) -> None:
        screen = self.screen
        read = self._windowed(query, again=exact)
        # (a refresh after a commit -- ``keep`` -- reads on past a short page: see ProfilesData)
        view = self._searched(query, read, limit=limit, sort="rank" if exact else "auto",
                              keystroke=not keep and not exact)
        if read.problem:
            view.note = read.problem
        if not view.more_certain:
            # (one store's answer shorter than a page has no more, whatever its estimate)
            view.more = view.more and view.hit_count >= SEARCH_PAGE
        screen.post_message(SearchFinished(query, view, keep=keep, exact=exact, asked=asked))

    def toggle_order(self) -> None:
        """Relevance ↔ newest first (SR-18): the query is asked again in the other order."""
        self.order = "newest" if self.order == "relevance" else "relevance"
        self.screen.notify(f"Search ranking: {'newest first' if self.order == 'newest' else 'by relevance'}",
                           timeout=2)
        if self.query.strip():
            self.start(self.query)

    def need_more(self, query: str, offset: int) -> None:
        """The results want the next page of hits (BR-20)."""
        if query == self.query:
            self._in_worker(partial(self._load_more, query, offset), group="search-more")

    def _load_more(self, query: str, offset: int) -> None:
        read = self._windowed(query, again=True)
        view = self._searched(query, read, limit=SEARCH_PAGE, offset=offset,
                              sort="rank" if self._exact_query == query else "auto")
        self.screen.post_message(SearchFinished(query, view, page=True))

    def finished(self, event: SearchFinished) -> None:
        """An answer: shown if it is for the query typed now."""
        screen = self.screen
        view: SearchView = event.view
        if view.interrupted:
            return  # superseded; the newer search answers
        results = screen.results
        if event.page:
            if event.query == self.query:
                results.append(without_shown(results.view, view) if results.view is not None else view)
                self.subtitle(results.view)
            return
        if event.asked is not None and event.asked != self._asked:
            return  # superseded by a search asked since (of this query too: the order toggled)
        if event.query == self.query:
            self._searching = False
        if event.query != self.query or not event.query.strip():
            return  # a stale answer: the query changed while it ran
        ranked: Held | None = None
        if event.exact and not event.keep:
            # The pause's answer (a refresh of an answer ranked so is a refresh like any other).
            if not self._reader_stayed(event.query):
                return  # (the reader moved into the hits meanwhile: what they hold stays)
            # The rows take the ranking's order; matches committed since the answer shown was
            # read are in it too, and wait announced, not slipped in (BR-16).
            shown = results.view
            ranked = ranked_anew(shown, view)
            if ranked.steady is not shown:
                # (its later pages and refreshes are ranked so too -- unless the rows shown
                # stay whole, an answer to other words waiting: they are not in its order)
                self._exact_query = event.query
            view = ranked.steady
        elif not event.keep and ranks_again_when_paused(view.ranking) and view.order != "newest":
            pause = screen.ctx.config.search.exact_after_s
            if pause > 0:
                self._cancel_exact()
                self._exact_timer = screen.set_timer(pause, lambda q=event.query: self._rank_exactly(q))
        switcher = screen.switcher
        keep = event.keep and switcher.current == "results"
        switcher.current = "results"
        shown = results.view
        if ranked is not None:
            self._hold(ranked if ranked.new else None)
        elif keep and shown is not None and shown.query == view.query and (shown.groups or shown.title_matches):
            # The rows on screen hold still; new matches wait, announced (BR-16).
            held = hold_still(shown, view)
            view = held.steady
            self._hold(held if held.new else None)
        elif self.held is not None:
            self._hold(None)
        results.show(view, keep=keep)
        # The key's echo and this answer in one frame, the results' scrollbar (resized by the
        # answer) with them.
        screen.search_input.release_echo(results, results.vertical_scrollbar)
        if not keep and not event.exact:
            started = self.keystroke_at

            def painted() -> None:
                self.latencies.append((event.query, time.perf_counter() - started))
                release_collection()

            results.after_paint(painted)
        # The pane's border (how the answer was served, in how long) follows a frame after
        # the hits: redrawing it redraws the whole pane, ~3 ms before the hits could show.
        results.after_paint(lambda: self._titles(view))
        if not view.groups and not view.title_matches:
            # BR-20: nothing highlighted, nothing to describe (after the frame, as above).
            results.after_paint(lambda: self._describe_nothing_for(view))

    def refresh(self) -> None:
        """Ask the search again after a commit -- unless a search started since will show it:
        while keys are being typed (each one searches afresh) or a search is running (its
        answer shows first), look again a little later."""
        self._refresh_timer = None
        if not self.stale or not self.query:
            return
        if self._searching or time.monotonic() - self._last_search_at < SEARCH_REFRESH_QUIET_S:
            self._refresh_timer = self.screen.set_timer(SEARCH_REFRESH_QUIET_S, self.refresh)
            return
        self.start(self.query, keep=True)

    def committed(self) -> None:
        """Another process committed (or the user wrote): the answer shown may be out of date."""
        if self.query:
            self.stale = True
            self.refresh()

    # ------------------------------------------------------------------ moving through hits

    def navigate(self, action: str) -> None:
        """Up, down or open, typed in the field."""
        screen = self.screen
        if screen.switcher.current != "results" or screen.results.showing_guide:
            if action == "down":
                screen.session_list.focus()
            return
        results = screen.results
        if action == "down":
            # Into the hits, as Tab: the highlighted (first) hit is where ↓ lands, and the
            # keys of the hits (t, r, p…) work from there.
            results.focus()
        elif action == "up":
            results.action_cursor_up()
        elif action == "open":
            results.choose_highlighted()

    def hit_highlighted(self, session_id: str | None) -> None:
        if session_id:
            # After the frame that shows the hits: drawing the detail pane (~6 ms) in that
            # frame made every answer that moved to another session paint that much later.
            self.screen.results.after_paint(lambda: self._load_detail_of_highlighted(session_id))

    def _load_detail_of_highlighted(self, session_id: str) -> None:
        target = self.screen.results.target_of_highlighted()
        if target and target[0] == session_id:  # (still the one highlighted)
            stamp = self._detail_requests.next()
            self._in_worker(partial(self._load_detail, session_id, stamp), group="detail")

    def _load_detail(self, session_id: str, stamp: Stamp) -> None:
        summary = self.screen.ctx.store.summary(session_id)
        self.screen.post_message(WorkerDone(self._detail_loaded, session_id, summary, stamp=stamp))

    def _detail_loaded(self, session_id: str, summary: "SessionSummary | None") -> None:
        screen = self.screen
        target = screen.results.target_of_highlighted()
        if screen.switcher.current == "results" and target and target[0] == session_id:
            screen.show_detail(summary)
