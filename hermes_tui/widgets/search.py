"""Search bar and search results.

``SearchInput`` is an ``Input`` that keeps every printable key as text (single-letter
actions never steal letters while it has focus) and forwards up/down/enter to the results.
``SearchResults`` lists hits grouped by conversation; each hit's snippet comes from the
store as plain text plus match spans, so highlighting never parses markers or markup.
"""

from __future__ import annotations

from typing import Any, Callable

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from hermes_state.timefmt import relative_time

from ..data import SearchView
from ..textsafe import inert_line


class SearchInput(Input):
    """The query field. Esc clears it and hands focus back to the list."""

    BINDINGS = [
        Binding("escape", "clear_search", "Clear search", id="clear_search"),
        Binding("down", "results_down", "Next hit", show=False, id="next_hit"),
        Binding("up", "results_up", "Previous hit", show=False, id="previous_hit"),
        Binding("enter", "results_open", "Open hit", show=False, id="open_hit"),
    ]

    class Cleared(Message):
        pass

    class Navigate(Message):
        def __init__(self, action: str) -> None:
            super().__init__()
            self.action = action

    def action_clear_search(self) -> None:
        self.value = ""
        self.post_message(self.Cleared())

    def action_results_down(self) -> None:
        self.post_message(self.Navigate("down"))

    def action_results_up(self) -> None:
        self.post_message(self.Navigate("up"))

    def action_results_open(self) -> None:
        self.post_message(self.Navigate("open"))


def snippet_text(snippet: str, spans: list, match_style, width: int | None = None) -> Text:
    """One line of ``snippet`` with ``spans`` highlighted (content is never markup).

    When ``width`` is given and the first match would fall off the right edge, the start of
    the snippet is replaced by ``…`` so the match stays in view.
    """
    plain = inert_line(snippet).rstrip()
    pairs = []
    for span in spans or []:
        start, end = (span[0], span[1]) if not hasattr(span, "start") else (span.start, span.end)
        if 0 <= start < end <= len(plain):
            pairs.append((start, end))
    cut = 0
    if width and pairs and cell_len(plain[: pairs[0][1]]) > width - 4:
        # Keep about a third of the line before the match (in cells: CJK is two wide).
        start = pairs[0][0]
        cut = start
        budget = width // 3
        while cut > 0 and budget > 0:
            cut -= 1
            budget -= cell_len(plain[cut])
        space = plain.find(" ", cut, start)
        if space != -1 and space - cut < 12:
            cut = space + 1
    text = Text(no_wrap=True, overflow="ellipsis")
    if cut:
        text.append("…")
        offset = 1 - cut
    else:
        offset = 0
    text.append(plain[cut:])
    for start, end in pairs:
        start, end = start + offset, end + offset
        if start >= (1 if cut else 0):
            text.stylize(match_style, start, end)
    return text


class SearchResults(OptionList):
    """Hits grouped by conversation, with title/id matches first."""

    BINDINGS = [
        Binding("escape", "back", "Back to list", id="results_back"),
    ]

    COMPONENT_CLASSES = OptionList.COMPONENT_CLASSES | {
        "search-results--match",
        "search-results--group",
        "search-results--meta",
    }

    class Chosen(Message):
        """A hit (``message_id`` set) or a session (title/id match) was chosen."""

        def __init__(self, session_id: str, message_id: int | None, query: str) -> None:
            super().__init__()
            self.session_id = session_id
            self.message_id = message_id
            self.query = query

    class Back(Message):
        pass

    class HitHighlighted(Message):
        def __init__(self, session_id: str | None) -> None:
            super().__init__()
            self.session_id = session_id

    def __init__(self, *, clock: Callable[[], float], id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.view: SearchView | None = None
        self._targets: dict[str, tuple[str, int | None]] = {}

    def action_back(self) -> None:
        self.post_message(self.Back())

    def show(self, view: SearchView) -> None:
        """Replace the list with the results of ``view``."""
        self.view = view
        self._targets.clear()
        match_style = self.get_component_rich_style("search-results--match", partial=True)
        group_style = self.get_component_rich_style("search-results--group", partial=True)
        meta_style = self.get_component_rich_style("search-results--meta", partial=True)
        now = self.clock()
        # The pane may not be laid out yet (it was hidden): size from its container, less
        # this list's horizontal padding and a scrollbar.
        container = self.parent.content_region.width if self.parent else self.size.width
        width = max(20, container - 3)
        options: list[Any] = []
        if view.title_matches:
            options.append(Option(Text("Sessions by title or id", style=group_style), disabled=True))
            for summary in view.title_matches:
                key = f"s:{summary.id}"
                self._targets[key] = (summary.id, None)
                line = Text("  ", no_wrap=True, overflow="ellipsis")
                line.append(inert_line(summary.label), style="bold")
                line.append(f"  {summary.id}  {inert_line(summary.source)}  "
                            f"{relative_time(summary.last_active, now=now)}", style=meta_style)
                line.truncate(width, overflow="ellipsis")
                options.append(Option(line, id=key))
        for group in view.groups:
            header = Text(no_wrap=True, overflow="ellipsis")
            header.append("▌ ", style=group_style)
            header.append(inert_line(group.label), style=group_style)
            hits = "hit" if group.count == 1 else "hits"
            header.append(f"  {inert_line(group.source)} · {group.count} {hits}", style=meta_style)
            header.truncate(width, overflow="ellipsis")
            options.append(Option(header, disabled=True))
            for hit in group.hits:
                key = f"m:{hit.id}"
                self._targets[key] = (hit.session_id, hit.id)
                line = Text("  ", no_wrap=True, overflow="ellipsis")
                line.append(f"{inert_line(hit.role)[:9]:<9} ", style=meta_style)
                line.append(f"{relative_time(hit.timestamp, now=now):>10}  ", style=meta_style)
                room = width - line.cell_len
                line.append_text(snippet_text(hit.snippet, hit.spans, match_style, room))
                line.truncate(width, overflow="ellipsis")
                options.append(Option(line, id=key))
        self.set_options(options)
        first = next((i for i, opt in enumerate(options) if not opt.disabled), None)
        self.highlighted = first

    def clear_results(self) -> None:
        self.view = None
        self._targets.clear()
        self.clear_options()

    def choose_highlighted(self) -> None:
        if self.highlighted is None:
            return
        option = self.get_option_at_index(self.highlighted)
        self._choose(option.id)

    def _choose(self, key: str | None) -> None:
        if key and key in self._targets and self.view is not None:
            session_id, message_id = self._targets[key]
            self.post_message(self.Chosen(session_id, message_id, self.view.query))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        target = self._targets.get(event.option.id or "")
        self.post_message(self.HitHighlighted(target[0] if target else None))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._choose(event.option.id)

    def target_of_highlighted(self) -> tuple[str, int | None] | None:
        if self.highlighted is None:
            return None
        option = self.get_option_at_index(self.highlighted)
        return self._targets.get(option.id or "")
