"""A page of search hits that the list's filters emptied (a time window, unread only, a
status: they drop conversations after the store's page is read) is not the end of the
answer: the pane says it reads on, and asks for the next page itself -- no cursor, no key
would ever ask for it."""

from __future__ import annotations

from textual.app import App, ComposeResult

from hermes_tui.view_models import SearchView
from hermes_tui.widgets.search import SearchResults

from .dataset import NOW


class ResultsApp(App):
    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, int]] = []

    def compose(self) -> ComposeResult:
        yield SearchResults(clock=lambda: NOW, id="results")

    def on_search_results_need_more(self, event: SearchResults.NeedMore) -> None:
        self.asked.append((event.query, event.offset))


def _plain(results: SearchResults) -> str:
    return "\n".join(row.text.plain for row in results._rows if row.text is not None)


async def test_a_page_the_filters_left_empty_says_it_reads_on_and_asks_for_the_next() -> None:
    app = ResultsApp()
    async with app.run_test(size=(100, 20)) as pilot:
        results = app.query_one(SearchResults)
        results.show(SearchView(query="docker", groups=[], hit_count=0, skipped=1, more=True, more_certain=True))
        await pilot.pause()
        assert "reading on" in _plain(results) and "No message" not in _plain(results)
        assert app.asked == [("docker", 1)]


async def test_an_empty_answer_with_nothing_more_says_nothing_matches_and_asks_for_nothing() -> None:
    app = ResultsApp()
    async with app.run_test(size=(100, 20)) as pilot:
        results = app.query_one(SearchResults)
        results.show(SearchView(query="docker", groups=[], hit_count=0, more=False))
        await pilot.pause()
        assert "No message, title or id matches" in _plain(results)
        assert app.asked == []
