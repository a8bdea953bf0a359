"""BrowserScreen: the session list, the search pane and the detail pane.

The screen holds the filters and the widgets, and composes three parts that do the work:

* :class:`~hermes_tui.screens.browser_window.ListWindow` -- the pages around the reader and
  the list's count (the census), read in thread workers; a page asked for before a filter
  change or a refresh is dropped when it arrives late (its *generation*);
* :class:`~hermes_tui.screens.browser_search.SearchAsYouType` -- a search per key, the
  search pane, a stale answer dropped (its query), a superseded search interrupted;
* :class:`~hermes_tui.screens.flows.SessionActions` -- rename, delete, archive, pin, undo and
  export: the modals, the writes and what is said after them.

Messages reach the screen (a part is not a DOM node): its handlers hand each on to its part.
Workers are the screen's, so a failure takes the screen's error path.

Live data never moves the reader (BR-16): a refresh after another process's commit keeps the
highlighted conversation on the same screen row of the list, and the highlighted hit where it
was in the results; the detail pane follows the highlighted row's newest state.
"""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Input

from hermes_state.listing import VIEWS, ListQuery, Order, View, hidden_sources
from hermes_state.listing.narrow import Narrow
from hermes_state.timewindow import PRESETS, preset_window
from hermes_state.visibility import INTERNAL_SOURCES
from hermes_state.models import SessionSummary

from ..context import Access, AppContext, StoreChange, StoreStatus
from ..fitting import Part, first_fitting
from ..keynames import bound_keys_label
from ..messages import SearchFinished, WorkerDone
from ..modals.source_picker import SourcePicker
from ..modals.time_picker import TimePick, TimePicker, time_label
from ..modals.workspace_picker import WorkspacePick, WorkspacePicker, workspace_label
from ..render.reading import UNREAD_GLYPH, status_word
from ..textsafe import InertHighlighter, inert_line
from .base import HermesScreen
from .browser_search import SearchAsYouType
from .browser_reading import Reading, next_status
from .browser_window import CensusLoaded, ListWindow, PageLoaded, WindowLoaded
from .flows import SessionActions
from ..widgets.detail import DetailPane
from ..widgets.footer import TieredFooter
from ..widgets.search import SearchInput, SearchResults, ToggleRanking
from ..widgets.session_list import SessionList
from ..widgets.status import StatusLine
from ..widgets.text_field import focus_now
from ..wording import counted



#: How the titles and the status line name each view filter (BR-11).
VIEW_NAMES = {"active": "active", "archived": "archived only", "all": "active + archived"}
#: The list's empty state when the store holds no session at all.
NO_SESSIONS_YET = "No sessions yet — new ones appear here as they are written."

class BrowserScreen(HermesScreen):
    """The main screen of ``hermes sessions browse``."""

    #: The list has the focus from the start (Textual's default, the first focusable widget,
    #: is the search field: focusing it and then moving the focus cost two restyles).
    AUTO_FOCUS = "#sessions"

    BINDINGS = [
        Binding("slash", "focus_search", "Search", id="search"),
        Binding("space", "toggle_mark", "Mark", id="toggle_mark", show=False),
        Binding("escape", "clear_marks", "Clear marks", id="clear_marks", show=False),
        Binding("t", "transcript", "Transcript", id="transcript"),
        Binding("l", "lineage", "Lineage", id="lineage"),
        Binding("r", "rename", "Rename", id="rename"),
        Binding("d", "delete", "Delete", id="delete"),
        Binding("u", "undo", "Undo", id="undo"),
        Binding("e", "export", "Export", id="export"),
        Binding("a", "archive", "Archive / unarchive", id="archive", show=False),
        Binding("v", "cycle_view", "View: active / archived / all", id="cycle_view", show=False),
        Binding("p", "pin", "Pin / unpin", id="pin", show=False),
        Binding("o", "toggle_order", "Order: last activity / start", id="toggle_order", show=False),
        Binding("H", "toggle_hidden", "Show hidden, internal and delegate runs", id="toggle_hidden", show=False),
        Binding("y", "copy_id", "Copy id", id="copy_id"),
        Binding("s", "cycle_source", "Source", id="cycle_source"),
        Binding("w", "pick_workspace", "Workspace", id="pick_workspace", show=False),
        Binding("m", "mark_read", "Mark read", id="mark_read"),
        Binding("M", "mark_unread", "Mark unread", id="mark_unread"),
        Binding("U", "toggle_unread", "Unread only", id="unread_only", show=False),
        Binding("S", "cycle_status", "Status: all / done / interrupted / error / empty", id="cycle_status",
                show=False),
        Binding("P", "pick_profile", "Profile", id="pick_profile", show=False),
        Binding("T", "pick_time", "Time", id="pick_time", show=False),
        Binding("L", "toggle_lanes", "Lanes", id="lanes_only"),
        Binding("i", "toggle_detail", "Details", id="toggle_detail"),
        Binding("question_mark", "help", "Help", id="help"),
        Binding("q", "quit", "Quit", id="quit"),
    ]

    #: Below this many columns the detail pane folds away (``i`` shows it): titles keep room.
    NARROW = 110
    #: Below this many columns only the footer's first two tiers are shown.
    MEDIUM = 160
    #: Footer tiers: 0 always, 1 from NARROW columns, 2 from MEDIUM columns.
    FOOTER_TIERS = {
        "lineage": 1, "rename": 1, "export": 1, "cycle_source": 1, "transcript": 1, "undo": 1,
        "copy_id": 2, "toggle_lanes": 2, "mark_read": 2, "mark_unread": 2,
    }

    def __init__(
        self, ctx: AppContext, *, source: str | None = None, on_first_page: Callable[[], None] | None = None
    ) -> None:
        super().__init__(ctx)
        #: Rename, delete, archive, pin, undo and export (the screen is their FlowsHost).
        self.actions = SessionActions(self)
        #: The list's window (the pages around the reader) and its count.
        self.list_window = ListWindow(self, on_first_page)
        #: The list's filters and order, as the one value the store door takes for the list,
        #: its counts, the pickers' counts, the search and the export (and the key of all
        #: that is kept for a list). The filter attributes below read and change it. It
        #: opens as the first window read ahead opened (``browse.start_first_window``).
        self.filters = ListQuery.human(
            source or None, show_internal=ctx.config.show_tool_sessions, order=Order.ACTIVITY)
        #: Show only sessions that are the current session of some gateway lane.
        self.lanes_only = False
        #: The time window (BR-21): a preset of the picker (its window, as it was when chosen,
        #: is the query's ``narrow``: one value, the list's cache key must not move with the clock).
        self.time_key = "any"
        #: What was typed for a window of one's own (``time_key`` ``custom``).
        self.time_text = ""
        self._widgets: dict[type, Widget] = {}
        #: Search as you type: the query, its searches and the search pane.
        self.search = SearchAsYouType(self)
        #: Read / unread marks and the unread-only and status filters.
        self.reading = Reading(self)

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        clock = self.ctx.clock
        # The width classes are known before any widget is styled: set at mount, they restyled
        # every widget once more before the first frame (~12 ms of the start).
        self._fit_width(self.app.size.width, update=False)
        with Vertical(id="browser"):
            # (the key as the keymap has it: "/ search" beside a search moved to ctrl+f was a
            # key that did nothing)
            key = bound_keys_label(self.app, "search", "slash")
            yield SearchInput(
                placeholder=f"{key} search every message, title or id…", id="search",
                highlighter=InertHighlighter(), hold_echo=True,
            )
            with Horizontal(id="panes"):
                with ContentSwitcher(initial="sessions", id="main"):
                    yield SessionList(
                        clock=clock,
                        page_size=self.ctx.config.page_size,
                        empty_text=NO_SESSIONS_YET,
                        id="sessions",
                    )
                    yield SearchResults(clock=clock, id="results")
                yield DetailPane(clock=clock, id="detail")
            yield StatusLine(id="status")
        yield TieredFooter(self.FOOTER_TIERS, narrow_only={"toggle_detail"})

    def on_mount(self) -> None:
        if self.app.animation_level == "none":
            # No blinking cursor without animations (and stable snapshots).
            self.search_input.cursor_blink = False
        self.query_one(SessionList).focus()
        self.ctx.signals.status.subscribe(self, self._status)
        self.ctx.signals.access.subscribe(self, self._access)
        self.update_titles()
        self._show_config_problems()
        self._fit_width(self.app.size.width)
        self.list_window.load(0, None)

    def _show_config_problems(self) -> None:
        """config.yaml's problems stay in the status line until fixed; help names each one."""
        n = len(self.ctx.config_problems)
        if n:
            help_key = bound_keys_label(self.app, "help", "?")
            self._one(StatusLine).set_notice(
                f"{n} problem{'s' if n != 1 else ''} in config.yaml ({help_key} lists them)")

    def on_resize(self, event) -> None:
        self._fit_width(event.size.width)
        self.call_after_refresh(self.update_titles)  # (titles fit the pane's new width)
        self.call_after_refresh(self.search.refit)  # (and the search pane's bottom line)

    def _fit_width(self, width: int, update: bool = True) -> None:
        """Small terminals: fold the detail pane, show the essential keys.
        ``update=False``: the classes only (before the widgets they style are mounted)."""
        narrow = width < self.NARROW
        self.set_class(narrow, "-narrow", update=update)
        self.set_class(not narrow, "-wide", update=update)
        self.set_class(width < self.MEDIUM, "-medium", update=update)

    def action_toggle_detail(self) -> None:
        """Show or hide the detail pane (it is folded away on narrow terminals)."""
        if self.has_class("-narrow"):
            self.toggle_class("-detail-shown")
        else:
            self.toggle_class("-detail-hidden")
        self.call_after_refresh(self.update_titles)  # (the list pane's width changed)

    def _status(self, status: StoreStatus) -> None:
        line = self.query_one(StatusLine)
        if status.activity:
            line.set_activity(status.text)
        else:
            line.set_warning(status.text, status.severity)

    def _access(self, _access: Access) -> None:
        self.update_titles()

    def _one(self, kind: type[Widget]) -> Widget:
        """The screen's one widget of ``kind``, looked up once: a DOM query matched CSS
        selectors against every node (~0.1 ms), a dozen times per keystroke."""
        widget = self._widgets.get(kind)
        if widget is None:
            widget = self._widgets[kind] = self.query_one(kind)
        return widget

    @property
    def session_list(self) -> SessionList:
        return self._one(SessionList)

    @property
    def results(self) -> SearchResults:
        return self._one(SearchResults)

    @property
    def search_input(self) -> SearchInput:
        return self._one(SearchInput)

    @property
    def switcher(self) -> ContentSwitcher:
        """``#main``: the list or the search pane."""
        return self._one(ContentSwitcher)

    # ------------------------------------------------------------------ filters (in ``filters``)

    def _refilter(self, **changes: object) -> None:
        """Change some of the list's filters; the sources left out follow the source chosen
        and whether internal runs are shown (UC-3)."""
        query = self.filters.with_(**changes)
        internal = self.ctx.config.show_tool_sessions or query.include_hidden
        self.filters = query.with_(exclude_sources=tuple(hidden_sources(query.source, internal) or ()))

    @property
    def source_filter(self) -> str | None:
        """One source (None: every one but the internal runs, unless they are shown)."""
        return self.filters.source

    @source_filter.setter
    def source_filter(self, source: str | None) -> None:
        self._refilter(source=source or None)

    @property
    def view(self) -> str:
        """Which conversations by archive state: ``active``, ``archived`` or ``all`` (BR-11)."""
        return self.filters.view.value

    @view.setter
    def view(self, view: str) -> None:
        self._refilter(view=View(view))

    @property
    def by_activity(self) -> bool:
        """Newest activity first (BR-10); False: newest start first."""
        return self.filters.by_activity

    @by_activity.setter
    def by_activity(self, by_activity: bool) -> None:
        self._refilter(order=Order.ACTIVITY if by_activity else Order.STARTED)

    @property
    def show_hidden(self) -> bool:
        """Also list hidden sessions, internal runs and delegate runs, each marked (BR-15)."""
        return self.filters.include_hidden

    @show_hidden.setter
    def show_hidden(self, shown: bool) -> None:
        self._refilter(include_hidden=bool(shown), include_delegates=bool(shown))

    @property
    def workspace(self) -> str | None:
        """One workspace (BR-13): None every one, ``NO_WORKSPACE`` those without one."""
        return self.filters.workspace

    @workspace.setter
    def workspace(self, workspace: str | None) -> None:
        self._refilter(workspace=workspace)

    @property
    def unread_only(self) -> bool:
        """Only unread conversations."""
        return self.filters.unread_only

    @unread_only.setter
    def unread_only(self, only: bool) -> None:
        self._refilter(unread_only=bool(only))

    @property
    def status_filter(self) -> str | None:
        """Only conversations of one lifecycle status (None: every one)."""
        return self.filters.statuses[0] if self.filters.statuses else None

    @status_filter.setter
    def status_filter(self, status: str | None) -> None:
        self._refilter(statuses=(status,) if status else ())

    @property
    def narrow(self) -> Narrow:
        """The conversations' own fields the list is narrowed by: the time window (BR-21)."""
        return self.filters.narrow

    @narrow.setter
    def narrow(self, narrow: Narrow) -> None:
        self._refilter(narrow=narrow)

    @property
    def internal_shown(self) -> bool:
        """Internal runs are listed: by the config, or with hidden rows shown (BR-15)."""
        return self.ctx.config.show_tool_sessions or self.show_hidden

    @property
    def exclude_sources(self) -> list[str] | None:
        return list(self.filters.exclude_sources) or None

    def filter_label(self) -> str:
        label = inert_line(self.source_filter) or ("all" if self.internal_shown else "all (internal runs hidden)")
        if self.workspace is not None:
            label += f" · in {workspace_label(self.workspace)}"
        if self.unread_only:
            label += " · unread"
        if self.status_filter:
            label += f" · {status_word(self.status_filter)}"
        if self.time_key != "any":
            label += f" · {time_label(self.time_key, self.time_text)}"
        return f"{label} · live lanes" if self.lanes_only else label

    def _filter_parts(self) -> list[str]:
        """The filters in force (not the order, nor the marks)."""
        parts = [
            f"source {inert_line(self.source_filter)}" if self.source_filter
            else ("all sources" if self.internal_shown else "all sources (internal runs hidden)")
        ]
        profile = getattr(self.ctx.store, "profile_filter", None)
        if profile is not None:  # (browsing every Hermes profile, narrowed to one: PF-6)
            parts.insert(0, f"profile {inert_line(profile)}")
        if self.lanes_only:
            parts.append("live lanes only")
        if self.workspace is not None:
            parts.append(f"workspace {workspace_label(self.workspace)}")
        if self.unread_only:
            parts.append("unread only")
        if self.status_filter:
            parts.append(f"status {status_word(self.status_filter)}")
        if self.time_key != "any":
            parts.append(time_label(self.time_key, self.time_text))
        parts.append(VIEW_NAMES[self.view])
        if self.show_hidden:
            parts.append("hidden, internal and delegate runs shown")
        return parts

    def _status_filter_parts(self) -> list[Part]:
        """Every filter in force (BR-13), the marks and the order, as status line parts, each
        with its short form, so that all stay in an 80-column status line."""
        parts = [Part(text, short="all sources" if text.startswith("all sources (") else None)
                 for text in self._filter_parts()]
        n = len(self.session_list.marked)
        if n:
            parts.insert(0, Part(f"{n} marked (a/d/e act on them, Esc clears)", short=f"{n} marked",
                                 droppable=False))
        parts.append(Part("by last activity" if self.by_activity or self.lanes_only else "by start"))
        return parts

    def _empty_text(self) -> str:
        """What an empty list says: that the filters leave nothing (and which), that every
        session the store holds is archived, hidden or an internal or delegate run, or that
        there is no session yet -- never "no sessions yet" over a store that has some."""
        narrowed = (self.source_filter is not None or self.workspace is not None or self.lanes_only
                    or self.view == "archived" or self.unread_only or self.status_filter is not None
                    or getattr(self.ctx.store, "profile_filter", None) is not None
                    or self.time_key != "any")
        if narrowed:
            view = (f" ({bound_keys_label(self.app, 'cycle_view', 'v')} changes the view)"
                    if self.view != "all" else "")
            return f"No conversation matches the filters: {' · '.join(self._filter_parts())}{view}."
        left_out, keys = [], []
        if self.view == "active":
            left_out.append("archived")
            keys.append(f"{bound_keys_label(self.app, 'cycle_view', 'v')} changes the view")
        if not self.show_hidden:
            left_out += ["hidden", *([] if self.internal_shown else ["an internal run"]), "a delegate run"]
            keys.append(f"{bound_keys_label(self.app, 'toggle_hidden', 'H')} shows hidden rows")
        if left_out and sum(self.list_window.source_counts.values()):
            kinds = ", ".join(left_out[:-1]) + f" or {left_out[-1]}" if len(left_out) > 1 else left_out[0]
            return f"No conversation to list: every session in the store is {kinds} ({'; '.join(keys)})."
        return NO_SESSIONS_YET

    def _view_label(self) -> str:
        """The filters other than the source, as the list pane's title shows them."""
        extra = " · hidden, internal and delegate runs shown" if self.show_hidden else ""
        # (the lanes view is always by last activity: a lane's newest exchange first)
        order = "last activity" if self.by_activity or self.lanes_only else "start"
        return f"{VIEW_NAMES[self.view]} · by {order}{extra}"

    def _fitting_title(self, room: int) -> str:
        """The list pane's title, in the longest form that fits ``room`` cells: Textual cut
        it mid-word at 80 columns with the detail pane shown ("· activ…"). The status line
        names every filter in full."""
        label, view = self.filter_label(), self._view_label()
        short = label.replace("all (internal runs hidden)", "all")
        forms = [f"Sessions · {label} · {view}", f"Sessions · {short} · {view}", f"{short} · {view}",
                 f"{short} · {VIEW_NAMES[self.view]}"]
        return first_fitting(forms, room)

    def list_query(self) -> ListQuery:
        """The screen's filters as the one value the store's list takes."""
        return self.filters

    def filter_key(self) -> tuple:
        """What the list shown depends on: its query, the lanes view and (across profiles)
        the profile shown, which is which stores are asked rather than a filter of each."""
        return (self.filters, self.lanes_only, getattr(self.ctx.store, "profile_filter", None))

    def update_titles(self) -> None:
        lst = self.session_list
        counting = self.list_window.counted_key != self.filter_key()
        if not lst.loaded:
            count = "loading…"
        elif counting:
            count = f"{lst.total - 1:,}+ conversations (counting…)"
        else:
            count = counted(lst.total, "conversation")
        lst.set_counting(counting and lst.loaded)
        empty = self._empty_text()
        if empty != lst.empty_text:
            lst.empty_text = empty
            if lst.loaded and lst.total == 0:
                lst.refresh()
        main = self.switcher
        if main.current == "sessions":
            # While results are shown the pane's titles describe the search instead.
            # Text, not a str: a str title is parsed as markup, and a source or a workspace path
            # is data ("/home/u/[wip]" must show as it is).
            main.border_title = Text(self._fitting_title(main.size.width - 6))
            main.border_subtitle = Text(count)
        parts = [Part(count, droppable=False)]
        if self.ctx.access.read_only_reason:
            parts.append(Part(
                "read-only snapshot (changes by other processes are not shown)" if self.ctx.access.immutable
                else "read-only", short="read-only", droppable=False))
        # Conditions first, then the active filters (BR-13), then the file and the legend: a
        # narrow terminal shortens and then leaves out parts from the end, whole (never a
        # filter cut mid-word), so the filters stay in view at 80 columns.
        parts += self._status_filter_parts()
        # (the legend before the file: the file's name gives way first)
        parts.append(Part(f"● live  ○ ended  ★ pinned  {UNREAD_GLYPH} unread",
                          short=f"● live ○ ended ★ pinned {UNREAD_GLYPH} unread", gives_way=1))
        parts.append(Part(self.ctx.db_label, short=self.ctx.db_label.rsplit("/", 1)[-1], gives_way=1))
        self._one(StatusLine).set_info(parts)

    # ------------------------------------------------------------------ loading

    @on(SessionList.NeedPage, "#sessions")
    def _need_page(self, event: SessionList.NeedPage) -> None:
        self.list_window.need_page(event.offset)

    @on(PageLoaded)
    def _page_loaded(self, event: PageLoaded) -> None:
        self.list_window.page_loaded(event)

    @on(WindowLoaded)
    def _window_loaded(self, event: WindowLoaded) -> None:
        self.list_window.window_loaded(event)

    @on(CensusLoaded)
    def _census_loaded(self, event: CensusLoaded) -> None:
        self.list_window.census_loaded(event)

    def refresh_data(self, *, correction: bool = False) -> None:
        """Reload what is visible, keeping the reader's place (BR-16). ``correction``: what the
        shown window rested on (the pins last known, a first run's guess of the order) was
        wrong -- a reader still at the top sees the list from its top (a new pin first), one
        who has moved keeps their place.

        The list behind the search pane is read again when it is shown, not at each commit;
        the search is asked again unless a key's search will show the commit anyway (see
        :meth:`SearchAsYouType.refresh`). A gateway commits several times a second, and both
        competed with the keys being typed."""
        self.list_window.refresh(correction=correction)
        self.search.committed()

    def store_changed(self, change: StoreChange) -> None:
        """Another process committed (or the lanes changed): re-read what is shown."""
        if not self.query(SessionList):
            return  # not composed yet, or being torn down
        if change.database or (change.lanes and self.lanes_only):
            self.list_window.census_paced = True
            self.refresh_data()
        if change.lanes:
            # (in the lanes view too: the row under the cursor stays, so no highlight
            # would redraw its lane)
            self.show_detail(self.session_list.current)

    def select_session(self, key: str, since: int | None = None) -> None:
        """Move the cursor to a conversation once it is loaded (e.g. after a rename), unless
        the reader moves it from ``since`` (default: where it is now) first."""
        self.list_window.select(key, since)
        self.refresh_data()

    def after_write(self, select: str | None = None, since: int | None = None) -> None:
        self.list_window.census_prompt = True  # the user's own change: counted at once
        if select:
            self.select_session(select, since)
        else:
            self.refresh_data()

    def list_position(self) -> int | None:
        return self.session_list.cursor

    def search_text(self) -> str | None:
        return self.search.query or None

    def marked_ids(self) -> list[str]:
        return list(self.session_list.marked)

    def after_batch(self) -> None:
        self.session_list.clear_marks()
        self.update_titles()

    # ------------------------------------------------------------------ detail

    @on(SessionList.Highlighted, "#sessions")
    def _highlighted(self, event: SessionList.Highlighted) -> None:
        self.show_detail(event.summary)

    def show_detail(self, summary: SessionSummary | None) -> None:
        lane = self.ctx.lanes.lane_for(summary.id) if summary is not None else None
        self._one(DetailPane).show(summary, lane)

    @on(SessionList.Selected, "#sessions")
    def _selected(self, event: SessionList.Selected) -> None:
        self.app.push_screen(self.ctx.screens.recap(event.summary.id))
        self.reading.opened(event.summary.id)

    # ------------------------------------------------------------------ search

    def action_focus_search(self) -> None:
        focus_now(self.search_input)  # (before the keys typed behind `/`)

    @on(events.DescendantFocus)
    def _focus_arrived(self, event: events.DescendantFocus) -> None:
        # The search pane opens when the field takes focus (`/`, a click, Tab), showing how
        # to search until the first key: opened by the first key instead, its layout and
        # the whole pane were drawn in that key's frame (~7 ms of every query's first key).
        if event.widget is self.search_input and not self.search.query.strip():
            self.search.show_guide()

    @on(events.DescendantBlur)
    def _focus_left(self, event: events.DescendantBlur) -> None:
        # An empty query has nothing to show once the field lets go: the list again.
        if event.widget is self.search_input and not self.search.query.strip():
            if self.switcher.current == "results":
                self.show_list()

    def show_list(self) -> None:
        self.switcher.current = "sessions"
        self.list_window.show_stale()
        self.results.clear_results()
        self.update_titles()
        self.show_detail(self.session_list.current)

    @on(Input.Changed, "#search")
    def _query_changed(self, event: Input.Changed) -> None:
        self.search.query_changed(event.value)

    @on(SearchFinished)
    def _search_finished(self, event: SearchFinished) -> None:
        self.search.finished(event)

    @on(SearchResults.NeedMore, "#results")
    def _need_more(self, event: SearchResults.NeedMore) -> None:
        self.search.need_more(event.query, event.offset)

    @on(SearchInput.Navigate, "#search")
    def _navigate(self, event: SearchInput.Navigate) -> None:
        self.search.navigate(event.action)

    @on(SearchResults.HitHighlighted, "#results")
    def _hit_highlighted(self, event: SearchResults.HitHighlighted) -> None:
        self.search.hit_highlighted(event.session_id)

    @on(ToggleRanking)
    def _toggle_ranking(self) -> None:
        self.search.toggle_order()

    @on(SearchInput.Cleared, "#search")
    def _search_cleared(self) -> None:
        self.search.query = ""
        self.show_list()
        self.session_list.focus()
        acted_on, self.search.acted_on = self.search.acted_on, None
        if acted_on:
            # Back from the search after acting on a hit: the list is on that conversation.
            self.list_window.reveal(acted_on)

    @on(SearchResults.ShowNew)
    def _show_new_matches(self) -> None:
        self.search.show_new()

    @on(SearchResults.Back, "#results")
    def _results_back(self) -> None:
        self.search_input.action_clear_search()

    @on(SearchResults.Chosen, "#results")
    def _hit_chosen(self, event: SearchResults.Chosen) -> None:
        self.search.acted_on = self.results.conversation_of_highlighted() or event.session_id
        if event.message_id is None:
            # A title or id match: the transcript opened from its recap still highlights the
            # query's terms (BR-19).
            self.app.push_screen(self.ctx.screens.recap(event.session_id, query=event.query))
        else:
            self.app.push_screen(
                self.ctx.screens.transcript(event.session_id, message_id=event.message_id, query=event.query)
            )
        self.reading.opened(event.session_id)

    # ------------------------------------------------------------------ actions

    def _target(self) -> str | None:
        """The session an action applies to: the highlighted hit or list row."""
        if self.switcher.current == "results":
            target = self.results.target_of_highlighted()
            if target:
                self.search.acted_on = self.results.conversation_of_highlighted()
                return target[0]
        current = self.session_list.current
        return current.id if current else None

    def _require_target(self) -> str | None:
        target = self._target()
        if target is None:
            self.notify("No session selected.", severity="warning", timeout=2)
        return target

    def action_cycle_source(self) -> None:
        """``s``: pick the source from a list (busiest first, internal runs last)."""

        def chosen(source: str | None) -> None:
            if source is None or (source or None) == self.source_filter:
                return
            self.source_filter = source or None
            self._reload_from_top()

        # Conversations, as the list counts them under its other filters: the picker's "all
        # sources" is the list's own total.
        counts = self.list_window.conversations_by_source()
        picker = SourcePicker(counts, self.source_filter, INTERNAL_SOURCES, self.internal_shown)
        self.app.push_screen(picker, chosen)
        if counts is None:
            self._load_sources(picker, self.filters)

    @work(thread=True, group="sources", exclusive=True, exit_on_error=False)
    def _load_sources(self, picker: SourcePicker, query) -> None:
        counts = self.ctx.store.conversations_by_source(query)
        self.post_message(WorkerDone(picker.set_counts, counts))  # (a picker closed meanwhile ignores them)

    def action_pick_workspace(self) -> None:
        """``w``: narrow the list and the search to one workspace, picked with counts (BR-13).

        The picker opens at once and is filled when the counts are read (a grouped scan of
        every session), so what is typed after ``w`` goes into it."""

        def chosen(pick: WorkspacePick | None) -> None:
            if pick is None or pick.workspace == self.workspace:
                return
            self.workspace = pick.workspace
            self._reload_from_top()

        picker = WorkspacePicker(None, self.workspace)
        self.app.push_screen(picker, chosen)
        self._load_workspaces(picker)

    @work(thread=True, group="workspaces", exclusive=True, exit_on_error=False)
    def _load_workspaces(self, picker: WorkspacePicker) -> None:
        counts = self.ctx.store.workspace_counts(self.filters)
        self.post_message(WorkerDone(picker.set_counts, counts))  # (a picker closed meanwhile ignores them)

    def action_pick_profile(self) -> None:
        """``P``: across Hermes profiles (``browse --all-profiles``), narrow the list, the
        search and the counts to one profile, picked with counts (PF-6)."""
        from ..modals.profile_picker import ProfilePicker

        store = self.ctx.store
        if not hasattr(store, "profile_filter"):
            self.notify("One profile is shown: browse --all-profiles shows every profile's sessions.",
                        timeout=5, markup=False)
            return

        def chosen(name: str | None) -> None:
            if name is None or (name or None) == store.profile_filter:
                return
            store.profile_filter = name or None
            self._reload_from_top()

        picker = ProfilePicker(store.names, None, store.profile_filter, store.left_out)
        self.app.push_screen(picker, chosen)
        self._load_profiles(picker)

    @work(thread=True, group="profiles", exclusive=True, exit_on_error=False)
    def _load_profiles(self, picker) -> None:
        store = self.ctx.store
        counts = store.count_by_profile(self.filters)
        self.post_message(WorkerDone(picker.set_counts, counts, dict(store.left_out)))
    def action_pick_time(self) -> None:
        """``T``: narrow the list, its counts and the search to conversations last active in
        a window (BR-21), picked from presets, each with its count (read in the background)."""

        def chosen(pick: TimePick | None) -> None:
            if pick is None or (pick.key == self.time_key and pick.key != "custom"):
                return
            self.time_key, self.time_text = pick.key, pick.text
            if pick.key == "custom":
                since, until = pick.since, pick.until
            else:
                since, until = preset_window(pick.key, self.ctx.clock())
            self.narrow = self.narrow.with_(since=since, until=until)
            self._reload_from_top()

        picker = TimePicker(self.time_key, clock=self.ctx.clock)
        self.app.push_screen(picker, chosen)
        self._load_time_counts(picker)

    @work(thread=True, group="time-counts", exclusive=True, exit_on_error=False)
    def _load_time_counts(self, picker: TimePicker) -> None:
        now = self.ctx.clock()
        windows = {}
        for preset in PRESETS:
            since, until = preset_window(preset.key, now)
            windows[preset.key] = self.narrow.with_(since=since, until=until)
        counts = self.ctx.store.count_windows(self.filters, windows)
        self.post_message(WorkerDone(picker.set_counts, counts))  # (a picker closed meanwhile ignores them)

    def action_cycle_view(self) -> None:
        """Active, archived only, all (BR-11)."""
        self.view = VIEWS[(VIEWS.index(self.view) + 1) % len(VIEWS)]
        self.session_list.archived_view = self.view == "archived"
        self._reload_from_top()

    def action_toggle_order(self) -> None:
        """Last activity first, or start first (BR-10); the time column shows the one sorted on."""
        self.by_activity = not self.by_activity
        self.session_list.time_field = "last_active" if self.by_activity else "started_at"
        self._reload_from_top()

    def action_toggle_hidden(self) -> None:
        """Show or hide hidden sessions, internal runs and delegate runs (BR-15)."""
        self.show_hidden = not self.show_hidden
        self._reload_from_top()

    def _marked_rows(self) -> list[SessionSummary]:
        return list(self.session_list.marked.values())

    def action_toggle_mark(self) -> None:
        """``space``: mark or unmark the highlighted conversation and move down (BR-14)."""
        if self.switcher.current != "sessions":
            self.notify("Marks are made in the session list (Esc leaves the search).", timeout=3)
            return
        lst = self.session_list
        if lst.toggle_mark() is None:
            return
        lst.action_cursor_down()
        self.update_titles()

    def action_clear_marks(self) -> None:
        if self.session_list.marked:
            n = len(self.session_list.marked)
            self.session_list.clear_marks()
            self.update_titles()
            self.notify(f"Cleared {n} mark{'s' if n != 1 else ''}.", timeout=2)

    def action_archive(self) -> None:
        """Archive or unarchive the highlighted conversation (its whole lineage), with undo;
        with marks, every marked one after one confirmation (BR-14)."""
        marked = self._marked_rows()
        if marked:
            self.actions.start_batch("unarchive" if marked[0].archived else "archive", marked)
            return
        target = self._require_target()
        if target:
            self.actions.start_archive([target])

    def action_pin(self) -> None:
        """Pin or unpin the highlighted conversation: pinned ones come first (BR-12)."""
        target = self._require_target()
        if target:
            self.actions.start_pin(target)

    def action_toggle_lanes(self) -> None:
        """Show only sessions that are live in some gateway lane (or everything again)."""
        self.lanes_only = not self.lanes_only
        self._reload_from_top()

    def _reload_from_top(self) -> None:
        self.list_window.from_top()
        self.update_titles()
        if self.search.query:
            self.search.start(self.search.query)
        elif self.results.showing_guide:
            self.search.show_guide()  # (its title names the filters)

    def action_copy_id(self) -> None:
        target = self._require_target()
        if target:
            # (across profiles the row's id is profile:id; what is copied is the session's own)
            target = getattr(self.ctx.store, "session_id_of", lambda qualified: qualified)(target)
            self.app.copy_to_clipboard(target)
            self.notify(f"Copied session id {inert_line(target)}", timeout=2, markup=False)

    def action_lineage(self) -> None:
        target = self._require_target()
        if target:
            self.app.push_screen(self.ctx.screens.lineage(target))

    def action_transcript(self) -> None:
        target = self._require_target()
        if target:
            showing_results = self.switcher.current == "results"
            query = self.search.query if showing_results else None
            # On a message hit, at that message (as Enter opens it); a title or id match
            # has no message: the transcript opens at its start.
            hit = self.results.target_of_highlighted() if showing_results else None
            message_id = hit[1] if hit is not None and hit[0] == target else None
            self.app.push_screen(self.ctx.screens.transcript(target, message_id=message_id, query=query))
            self.reading.opened(target)

    def action_rename(self) -> None:
        target = self._require_target()
        if target:
            self.actions.start_rename(target)

    def action_delete(self) -> None:
        marked = self._marked_rows()
        if marked:
            self.actions.start_batch("delete", marked)
            return
        target = self._require_target()
        if target:
            self.actions.start_delete(target)

    def action_undo(self) -> None:
        self.actions.start_undo()

    def action_export(self) -> None:
        self.actions.start_export(self._target())

    def action_mark_read(self) -> None:
        """``m``: mark the highlighted conversation read (its whole lineage)."""
        self.reading.mark(self._require_target(), read=True)

    def action_mark_unread(self) -> None:
        """``M``: mark it unread, as upstream's "mark as unread" does."""
        self.reading.mark(self._require_target(), read=False)

    def action_toggle_unread(self) -> None:
        """``U``: only unread conversations, in the list, its count and the search."""
        self.unread_only = not self.unread_only
        self.reading.say_if_not_tracked()
        self._reload_from_top()

    def action_cycle_status(self) -> None:
        """``S``: every status, then only done, interrupted, error, empty conversations."""
        self.status_filter = next_status(self.status_filter)
        self._reload_from_top()

    def action_quit(self) -> None:
        self.app.exit(None)
