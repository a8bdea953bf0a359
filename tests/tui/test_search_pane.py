"""Search-as-you-type in the browser (BR-2, BR-4)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import ContentSwitcher

from hermes_state.listing import ListQuery
from hermes_tui.widgets.search import SearchInput, SearchResults, snippet_text
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle


def _subtitle(app) -> str:
    return str(app.screen.query_one("#main").border_subtitle)


async def test_br2_prefix_while_typing_finds_docker_and_reports_path(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"dock")
        await settle(pilot)
        results = app.screen.query_one(SearchResults)
        assert app.screen.query_one(ContentSwitcher).current == "results"
        view = results.view
        assert view.query == "dock"
        assert view.path.startswith("fts5")
        hits = [hit for group in view.groups for hit in group.hits]
        # `dock` is searched as a prefix once it has 3 characters: it finds `docker`.
        assert hits and all("docker" in hit.snippet.lower() for hit in hits)
        # The tool session is hidden like in the list (no source filter).
        assert all(hit.source != "tool" for hit in hits)
        # The title match is listed too.
        assert [s.id for s in view.title_matches] == ["20261118_074000_a1b2c3"]
        sub = _subtitle(app)
        assert "fts5" in sub and "hits" in sub and "ms" in sub


async def test_br2_letters_are_text_while_search_has_focus(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # `d` (delete), `q` (quit), `s` (source) must type, not act (upstream bug).
        await pilot.press("/", "d", "q", "s", "r")
        await settle(pilot)
        assert app.is_running
        assert app.screen.query_one(SearchInput).value == "dqsr"
        assert app.screen.source_filter is None


async def test_br2_cjk_query_groups_by_conversation(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/")
        for ch in "桂林":
            await pilot.press(ch)
        await settle(pilot)
        view = app.screen.query_one(SearchResults).view
        assert [g.root_id for g in view.groups] == ["20261118_060000_b2c3d4e5"]
        assert view.groups[0].count == 2
        for hit in view.groups[0].hits:
            start, end = hit.spans[0]
            assert hit.snippet[start:end] == "桂林"


async def test_br2_compression_chain_hits_group_under_root(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"day")
        await settle(pilot)
        view = app.screen.query_one(SearchResults).view
        roots = [g.root_id for g in view.groups]
        # Both segments of "travel plans" hit; they are one conversation.
        assert roots.count("20261117_090000_d4e5f6a7") == 1
        group = next(g for g in view.groups if g.root_id == "20261117_090000_d4e5f6a7")
        assert {h.session_id for h in group.hits} == {"20261117_090000_d4e5f6a7", "20261117_100000_e5f6a7b8"}
        assert group.label == "travel plans #2"


async def test_br2_escape_clears_and_returns_to_list(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"docker")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.query_one(SearchInput).value == ""
        assert app.screen.query_one(ContentSwitcher).current == "sessions"
        assert app.screen.query_one(SessionList).has_focus


async def test_br2_stale_answers_are_dropped(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("/", *"docker")
        await settle(pilot)
        from hermes_tui.messages import SearchFinished

        stale = app.ctx.store.search("rust", ListQuery(exclude_sources=("tool",)))
        screen.post_message(SearchFinished("rust", stale))
        await settle(pilot)
        assert screen.query_one(SearchResults).view.query == "docker"


async def test_br4_malformed_queries_never_break_the_pane(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/")
        for query in ['"unbalanced', "TODO: fix", "a AND OR b", "NEAR(", "***", "--force", "(((", "[bold]"]:
            app.screen.query_one(SearchInput).value = query
            await settle(pilot)
            assert app.is_running
        assert not [n for n in app._notifications if n.severity == "error"]


def test_snippet_text_is_inert_and_highlights_spans() -> None:
    text = snippet_text("see [bold]docker[/bold] \x1b]52;c;AAAA\x07 end", [(10, 16)], "reverse")
    assert "[bold]docker[/bold]" in text.plain
    assert "\x1b" not in text.plain and "\x07" not in text.plain
    assert any(span.start == 10 and span.end == 16 for span in text.spans)


async def test_br4_enter_on_hit_opens_transcript_at_message(fixed_db: Path) -> None:
    from hermes_tui.screens.transcript import TranscriptScreen

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"compose")
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        assert screen.session_id == "20261118_074000_a1b2c3"
        assert screen.message_id is not None and screen.search_query == "compose"


def fixed_timing_app(db_path: Path):
    """The app with search latency pinned to 0.8 ms: the one non-deterministic figure."""
    app = make_app(db_path)
    real_search = app.ctx.store.search

    def search(*args, **kwargs):
        view = real_search(*args, **kwargs)
        view.elapsed_ms = 0.8
        return view

    app.ctx.store.search = search
    return app


def test_snapshot_search_english(snap_compare, fixed_db: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("/", *"docker")
        await settle(pilot)

    assert snap_compare(fixed_timing_app(fixed_db), terminal_size=SIZE, run_before=run_before)


def test_snapshot_search_cjk(snap_compare, fixed_db: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("/")
        for ch in "桂林":
            await pilot.press(ch)
        await settle(pilot)

    assert snap_compare(fixed_timing_app(fixed_db), terminal_size=SIZE, run_before=run_before)


def test_snapshot_search_short_last_word(snap_compare, fixed_db: Path) -> None:
    """`docker co`: no message has the word `co`; the hits of `docker` stay, under a line that
    says so (the title match above is the whole query's)."""
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("/", *"docker", "space", "c", "o")
        await settle(pilot)

    assert snap_compare(fixed_timing_app(fixed_db), terminal_size=SIZE, run_before=run_before)


async def test_theme_change_repaints_cached_result_rows(fixed_db: Path) -> None:
    """Rows are built once per answer with the theme's colours; a new theme rebuilds them."""
    from hermes_tui.widgets.search import SearchResults

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"docker")
        await settle(pilot)
        results = app.screen.query_one(SearchResults)
        results.action_cursor_down()
        await settle(pilot)
        highlighted = results.target_of_highlighted()

        def match_styles() -> set:
            return {str(span.style) for row in results._rows for span in row.text.spans}

        dark = match_styles()
        app.theme = "nord"  # another accent and warning colour than textual-dark
        await settle(pilot)
        assert match_styles() != dark
        assert results.target_of_highlighted() == highlighted


async def test_search_answer_records_its_phase_stamps_for_the_bench(fixed_db: Path) -> None:
    """The bench splits keystroke → painted into phases from these stamps: the
    data layer stamps the query, grouping and title match; the results widget stamps its
    rows being built and its first repaint after that, in that order."""
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"dock")
        await settle(pilot)
        results = app.screen.query_one(SearchResults)
        view = results.view
        assert view.query == "dock"
        order = [view.stamps[k] for k in ("start", "query", "grouped", "done")]
        order += [results.stamps[k] for k in ("show", "built", "render", "rendered")]
        assert order == sorted(order)
        # A later repaint (the cursor moving) leaves the first repaint's stamps alone.
        first = dict(results.stamps)
        await pilot.press("down")
        await settle(pilot)
        assert results.stamps == first


def test_conversation_names_are_kept_between_keys_and_renames_are_seen(fixed_db: Path) -> None:
    """The door keeps the conversations' names while nothing is committed (typing shows the
    same conversations key after key); a rename is a commit, and the next answer names the
    conversation anew."""
    from hermes_tui.data import BrowserData

    store = BrowserData(fixed_db)
    try:
        view = store.search("docker", ListQuery(exclude_sources=("tool",)))
        group = view.groups[0]
        statements: list[str] = []
        store.reader._read(lambda conn: conn.set_trace_callback(statements.append))
        again = store.search("docker", ListQuery(exclude_sources=("tool",)))
        assert [g.label for g in again.groups] == [g.label for g in view.groups]
        assert not [sql for sql in statements if "FROM sessions s WHERE s.id IN" in sql]  # no re-read
        tip = store.reader.get_compression_tip(group.root_id)
        outcome = store.rename(tip, "Renamed while searching", expected=store.reader.get_session_title(tip))
        assert outcome.ok, outcome
        renamed = store.search("docker", ListQuery(exclude_sources=("tool",)))
        assert {g.root_id: g.label for g in renamed.groups}[group.root_id] == "Renamed while searching"
    finally:
        store.close()


def test_the_door_forgets_what_the_search_kept_when_asked(fixed_db: Path) -> None:
    """The bench types each query as if for the first time: the door drops what its search
    connection kept from the last keys (the window scan a next key would narrow), not the
    prefix expansions, and the same query then does its own work again, with the same answer."""
    from hermes_state.search import memo
    from hermes_tui.data import BrowserData

    store = BrowserData(fixed_db)
    try:
        store.forget_search_answers()  # before any search: nothing to drop, no error
        first = store.search("dock", ListQuery(exclude_sources=("tool",)))
        searcher = store._connection("searcher")
        kept = memo.kept_for(searcher.store)
        assert kept.scan is not None and kept.terms
        store.forget_search_answers()
        assert kept.scan is None and kept.terms  # the expansions stay
        again = store.search("dock", ListQuery(exclude_sources=("tool",)))
        assert [(g.root_id, [h.id for h in g.hits]) for g in again.groups] == \
            [(g.root_id, [h.id for h in g.hits]) for g in first.groups]
    finally:
        store.close()
