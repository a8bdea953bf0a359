"""TranscriptScreen: every message of one session.

Opened with ``t`` from the browser or the recap, and from a search hit (Enter or ``t``) with
the hit's ``message_id`` and the ``query``: the view then starts on that message, scrolled so its first
match is visible, with every occurrence of the query's terms highlighted; ``n``/``N`` move
between the messages that contain a match.

The messages are read in a thread worker (the store blocks) and handed to the view in one
message; a reload after another process committed (``store_changed``) keeps the cursor on the
same message id and keeps following the end if the view was at the end.
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.worker import get_current_worker
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Static


from hermes_state.models import SessionSummary

from ..widgets.footer import KeyFooter
from ..widgets.bounded_input import BoundedInput
from ..widgets.text_field import TextField, focus_now
from ..context import AppContext, StoreChange
from ..fitting import SEPARATOR, first_fitting
from ..messages import Generation, Stamp, WorkerDone
from ..textsafe import InertHighlighter, inert_line
from .base import HermesScreen
from ..widgets.transcript_view import Entry, TranscriptView, make_entry, match_flags, match_pattern
from ..legible import muted


class FindField(BoundedInput, TextField):
    """The transcript's find field: a query of at most MAX_QUERY_CHARS characters."""


def _version(summary: SessionSummary) -> tuple[int, float | None]:
    return summary.message_count, summary.last_active


class TranscriptScreen(HermesScreen):
    """All messages of ``session_id``; optionally opened at a search hit."""

    BINDINGS = [
        Binding("q,escape", "back", "Back", id="back"),
        Binding("enter,o", "toggle", "Fold/unfold", id="transcript_toggle"),
        Binding("a", "toggle_all", "Fold all", id="transcript_toggle_all"),
        Binding("r", "toggle_reasoning", "Reasoning", id="transcript_reasoning"),
        Binding("slash", "search", "Search", id="transcript_search"),
        Binding("n", "next_match", "Next match", id="transcript_next_match"),
        Binding("N", "previous_match", "Prev match", id="transcript_previous_match"),
        Binding("question_mark", "help", "Help", id="help"),
    ]

    def __init__(
        self, ctx: AppContext, session_id: str, *, message_id: int | None = None, query: str | None = None
    ) -> None:
        super().__init__(ctx)
        self.session_id = session_id
        self.message_id = message_id
        self.search_query = (query or "").strip() or None
        #: The query as typed: its trailing space says its last word is whole (``dock ``).
        self.typed_query = query if self.search_query else None
        self.pattern = match_pattern(self.typed_query)
        self.summary: SessionSummary | None = None
        #: Each load of the transcript; only the newest one's answer shows.
        self.loads = Generation()
        self.loaded = False
        #: Each search of this conversation; only the newest one's answer shows.
        self.finds = Generation()
        #: A search of this conversation runs in a worker (Esc stops it).
        self.finding = False
        #: (message count, last active) of the messages on screen: a refresh skips re-reading
        #: them when these are unchanged (commits to other sessions are the common case).
        self._shown: tuple[int, float | None] | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text("Loading…", style=muted(self)), id="transcript-header")
        yield TranscriptView(
            clock=self.ctx.clock,
            show_reasoning=self.ctx.config.show_reasoning,
            query=self.typed_query,
            id="transcript",
        )
        find = FindField(placeholder="search this conversation — Enter finds, Esc closes", id="transcript-find",
                         highlighter=InertHighlighter())
        find.display = False
        yield find
        yield KeyFooter()

    @property
    def view(self) -> TranscriptView:
        return self.query_one(TranscriptView)

    def on_mount(self) -> None:
        self.view.focus()
        self.load()

    # ------------------------------------------------------------------ loading

    def load(self) -> None:
        self._load(self.loads.next())

    @work(thread=True, group="transcript", exclusive=True, exit_on_error=False)
    def _load(self, stamp: Stamp) -> None:
        store = self.ctx.store
        summary = store.summary(self.session_id)
        if summary is not None and self._shown == _version(summary):
            # Another session changed: this one has the same messages, keep the view as is.
            self.post_message(WorkerDone(self._loaded, summary, None, stamp=stamp))
            return
        messages = store.messages(self.session_id) if summary else []
        # Display text and match flags are derived here, off the event loop.
        entries = [make_entry(message, self.pattern) for message in messages]
        self.post_message(WorkerDone(self._loaded, summary, entries, stamp=stamp))

    def _loaded(self, summary: SessionSummary | None, entries: list[Entry] | None) -> None:
        view = self.view
        self.summary = summary
        if summary is None:
            self._shown = None
            view.show_placeholder(f"Session {inert_line(self.session_id)} no longer exists.")
            self._update_header()
            return
        if entries is None:
            self._update_header()
            return
        self._shown = _version(summary)
        first_load = not self.loaded
        self.loaded = True
        if first_load:
            view.set_entries(entries)
            self._open_at_target()
        else:
            current = view.current
            at_end = view.scroll_offset.y >= view.max_scroll_y_for_total and (
                not view.entries or view.cursor == len(view.entries) - 1
            )
            view.set_entries(entries, keep=current.id if current else None, follow=at_end)
        self._update_header()

    def _open_at_target(self) -> None:
        view = self.view
        if self.message_id is None:
            return
        index = view.index_of(self.message_id)
        if index is None:
            self.notify("That message is no longer in this session.", severity="warning", timeout=3)
            return
        if view.entries[index].has_match:  # type: ignore[index]
            view.focus_match(index)
        else:
            view.cursor = index
            view.scroll_to_message(index, anchor="top")

    def store_changed(self, change: StoreChange) -> None:
        if change.database:
            self.load()

    # ------------------------------------------------------------------ header

    def _update_header(self) -> None:
        header = Text(no_wrap=True, overflow="ellipsis")
        summary = self.summary
        view = self.view
        if summary is None:
            header.append(f"Transcript · {inert_line(self.session_id)}", style="bold")
            if self.loaded or view.entries is None:
                header.append("  (not found)", style=muted(self))
            self.query_one("#transcript-header", Static).update(header)
            return
        header.append(inert_line(summary.title) or inert_line(summary.preview) or "(untitled)", style="bold")
        count = len(view.entries or [])
        header.append(
            f"   {inert_line(summary.id)} · {inert_line(summary.source)} · {count} message{'s' if count != 1 else ''}",
            style=muted(self),
        )
        line2 = self._state_line()
        self.query_one("#transcript-header", Static).update(Text("\n", no_wrap=True, overflow="ellipsis").join([header, line2]))

    def _state_line(self) -> Text:
        """The header's second line: what is shown, and the search's matches. Where it does
        not fit, the less important parts give way whole, in this order: the keys' hints,
        the reasoning, the tool calls, then the words around the match position -- which
        stays ("match 4 of 4" was cut at 80 columns behind the hints)."""
        view = self.view
        muted_style = muted(self)
        reasoning = "reasoning " + ("shown" if view.show_reasoning else "hidden")
        collapsible = sum(1 for e in view.entries or [] if e.collapsible)
        expanded = len(view.expanded)
        tools = "tool calls " + ("expanded" if collapsible and expanded == collapsible else (
            "collapsed" if not expanded else f"{expanded} of {collapsible} expanded"))
        search: list[tuple[str, str]] = []  # (text, style) of the full form
        short: list[tuple[str, str]] = []  # ... and of the short one
        if self.search_query:
            matches = len(view.match_indices)
            query = f"“{inert_line(self.search_query)}”"
            search = [(f"{matches} message{'s match' if matches != 1 else ' matches'} ", ""), (query, "bold")]
            position = view.match_position()
            if position is not None:
                search.append((f" — match {position} of {matches} (n/N)", ""))
                short = [(f"match {position} of {matches} ", ""), (query, "bold"), (" (n/N)", muted_style)]
            elif matches:
                search.append((" (n/N)", muted_style))
                short = [(f"{matches} match ", ""), (query, "bold"), (" (n/N)", muted_style)]
            else:
                short = [("no match ", ""), (query, "bold")]
        forms = [
            [[(reasoning + " (r)", muted_style)], [(tools + " (enter, a: all)", muted_style)], search],
            [[(reasoning, muted_style)], [(tools, muted_style)], search],
            [[(tools, muted_style)], search],
            [search],
            [short],
        ]

        def joined(parts: list[list[tuple[str, str]]]) -> Text:
            line = Text(no_wrap=True, overflow="ellipsis")
            for part in (p for p in parts if p):
                if line:
                    line.append(SEPARATOR, style=muted_style)
                for text, style in part:
                    line.append(text, style=style)
            return line

        width = self.query_one("#transcript-header", Static).content_region.width
        return first_fitting(map(joined, forms), width)

    def on_resize(self) -> None:
        if self.summary is not None:
            self._update_header()

    @on(TranscriptView.CursorMoved, "#transcript")
    def _cursor_moved(self) -> None:
        if self.summary is not None:
            self._update_header()

    # ------------------------------------------------------------------ actions

    def action_back(self) -> None:
        find = self.query_one("#transcript-find", Input)
        if find.display:
            self._close_find()
            return
        if self.stop_finding():
            return
        self.dismiss()

    # ------------------------------------------------------------------ search (BR-19)

    def action_search(self) -> None:
        """``/``: search this conversation with the same query language as the browser."""
        find = self.query_one("#transcript-find", Input)
        find.value = self.search_query or ""
        find.display = True
        if self.app.animation_level == "none":
            find.cursor_blink = False
        focus_now(find)  # (before the keys typed behind `/`)

    def _close_find(self) -> None:
        find = self.query_one("#transcript-find", Input)
        find.display = False
        self.view.focus()

    @on(Input.Submitted, "#transcript-find")
    def _find_submitted(self, event: Input.Submitted) -> None:
        self._close_find()
        self.find(event.value)

    def find(self, query: str) -> None:
        """Highlight ``query`` in this transcript and go to its first match after the cursor.

        The messages are searched in a thread worker, a window at a time (a 50 MB message
        took seconds on the event loop, in which Esc did nothing): Esc while it runs stops it."""
        self.search_query = query.strip() or None
        self.typed_query = query if self.search_query else None
        self.pattern = match_pattern(self.typed_query)
        view = self.view
        if not view.entries:
            view.set_query(self.typed_query)
            self._found_shown()
            return
        if self.pattern is None:  # nothing to look for: every highlight goes
            view.apply_matches(None, [(False, False)] * len(view.entries))
            self._found_shown()
            return
        self.finding = True
        self.query_one("#transcript-header", Static).update(
            Text(f"Searching this conversation for “{inert_line(self.search_query)}”… (Esc stops)", style=muted(self)))
        self._find(self.finds.next(), list(view.entries), self.pattern, self.typed_query)

    # (A description of its own: the default is the repr of its arguments, which copied the
    # text of a 50 MB message four times over.)
    @work(thread=True, group="transcript-find", exclusive=True, exit_on_error=False, description="find")
    def _find(self, stamp: Stamp, entries: list[Entry], pattern, typed: str | None) -> None:
        worker = get_current_worker()

        def cancelled() -> bool:
            return worker.is_cancelled

        flags = []
        for entry in entries:
            if worker.is_cancelled:
                return
            flags.append(match_flags(entry, pattern, cancelled))
        if worker.is_cancelled:
            return
        self.post_message(WorkerDone(self._found, entries, typed, flags, stamp=stamp))

    def _found(self, entries: list[Entry], typed: str | None, flags: list) -> None:
        self.finding = False
        view = self.view
        if view.entries is None or len(view.entries) != len(entries) or any(
                a.message.id != b.message.id for a, b in zip(view.entries, entries)):
            self.find(typed or "")  # the transcript was read again meanwhile: search what is shown
            return
        view.apply_matches(typed, flags)
        self._found_shown()

    def stop_finding(self) -> bool:
        """Stop a search of this conversation still running; False if none was."""
        if not self.finding:
            return False
        self.finding = False
        self.finds.next()  # (an answer already on its way is dropped)
        self.workers.cancel_group(self, "transcript-find")
        self.search_query = self.typed_query = None
        self.pattern = None
        self.view.apply_matches(None, [(False, False)] * len(self.view.entries or []))
        self.notify("Search stopped.", timeout=2)
        self._update_header()
        return True

    def _found_shown(self) -> None:
        view = self.view
        if self.search_query:
            if view.match_indices:
                self._jump(1, from_before=True)
                return
            self.notify(f"No message matches “{inert_line(self.search_query)}”.", timeout=3, markup=False)
        self._update_header()

    def action_toggle(self) -> None:
        if not self.view.toggle():
            self.notify("Nothing to expand in this message.", timeout=1.5)
        self._update_header()

    def action_toggle_all(self) -> None:
        self.view.toggle_all()
        self._update_header()

    def action_toggle_reasoning(self) -> None:
        self.view.set_show_reasoning(not self.view.show_reasoning)
        self._update_header()

    def _jump(self, direction: int, *, from_before: bool = False) -> None:
        if not self.search_query:
            self.notify("No search: press / to search this conversation.", timeout=3)
            return
        view = self.view
        if from_before and view.entries and view.cursor in view.match_indices:
            view.focus_match(view.cursor)  # the message at the cursor matches: stay on it
            result = (view.match_indices.index(view.cursor) + 1, len(view.match_indices))
        else:
            result = view.jump_to_match(direction)
        if result is None:
            self.notify(f"No message matches “{inert_line(self.search_query)}”.", timeout=2, markup=False)
        self._update_header()

    def action_next_match(self) -> None:
        self._jump(1)

    def action_previous_match(self) -> None:
        self._jump(-1)

