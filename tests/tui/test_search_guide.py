"""The search pane opens when the field takes focus, with how to search (so the
first key does not open the pane in a frame of its own)."""

from __future__ import annotations

from pathlib import Path

from hermes_state.listing import ListQuery
from hermes_state import SessionDB
from hermes_tui.widgets.search import SearchResults

from .conftest import SIZE, make_app, settle


def _pane(app) -> tuple[str, str, str]:
    main = app.screen.query_one("#main")
    return main.current, str(main.border_title), str(main.border_subtitle)


def _lines(app) -> list[str]:
    return [row.text.plain for row in app.screen.results._rows]


async def test_focusing_the_field_opens_the_pane_with_the_guide(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert _pane(app)[0] == "sessions"
        await pilot.press("/")
        await settle(pilot)
        current, title, subtitle = _pane(app)
        assert current == "results" and title.startswith("Search · ") and subtitle == "type to search"
        results = app.screen.results
        assert results.showing_guide and results.view is None and results.cursor is None
        lines = _lines(app)
        assert "Search every message, title and id" in lines[0]
        for example, _meaning in SearchResults.GUIDE:
            assert any(example in line for line in lines)
        assert "↑ ↓ move through the hits · Enter opens one · Esc goes back to the list" in lines[-1]
        # The first key replaces the guide with its answer; the title stays.
        await pilot.press("d", "o", "c", "k")
        await settle(pilot)
        assert not results.showing_guide and results.view.query == "dock"
        current, title2, subtitle = _pane(app)
        assert current == "results" and title2 == title and "hits" in subtitle


async def test_emptied_field_shows_the_guide_and_leaving_it_shows_the_list(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", "d", "o")
        await settle(pilot)
        assert app.screen.results.view is not None
        await pilot.press("backspace", "backspace")
        await settle(pilot)
        assert _pane(app)[:1] == ("results",) and app.screen.results.showing_guide
        assert _pane(app)[2] == "type to search"
        # Tab moves focus on: nothing was asked, so the list comes back.
        await pilot.press("tab")
        await settle(pilot)
        assert not app.screen.search_input.has_focus
        assert _pane(app)[0] == "sessions" and _pane(app)[1].startswith("Sessions · ")
        assert not app.screen.results.showing_guide


async def test_escape_and_down_from_the_guide_go_back_to_the_list(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sessions = app.screen.session_list
        await pilot.press("/")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert _pane(app)[0] == "sessions" and sessions.has_focus
        await pilot.press("/")
        await settle(pilot)
        assert app.screen.results.showing_guide
        await pilot.press("down")  # no hits to move through: back to the list
        await settle(pilot)
        assert _pane(app)[0] == "sessions" and sessions.has_focus


async def test_a_query_left_in_the_field_keeps_its_results_when_focus_moves(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"docker")
        await settle(pilot)
        await pilot.press("down")  # into the hits
        await settle(pilot)
        app.screen.results.focus()
        await settle(pilot)
        assert _pane(app)[0] == "results" and app.screen.results.view.query == "docker"
        # Focus back in the field with its query: the hits stay, no guide.
        app.screen.search_input.focus()
        await settle(pilot)
        assert not app.screen.results.showing_guide and app.screen.results.view.query == "docker"


async def test_the_guide_names_remapped_keys(fixed_db: Path) -> None:
    from hermes_tui.config import AppConfig

    config = AppConfig(animations="none", search_debounce_s=0.0, keymap={"clear_search": "ctrl+g", "open_hit": "ctrl+o"})
    app = make_app(fixed_db, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/")
        await settle(pilot)
        last = _lines(app)[-1]
        assert "Esc" not in last and "Enter" not in last
        assert "Ctrl+G goes back to the list" in last or "ctrl+g goes back to the list" in last.lower()


async def test_the_guide_follows_the_theme(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/")
        await settle(pilot)
        results = app.screen.results
        before = results._styles_key
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        await settle(pilot)
        assert results.showing_guide and results._styles_key != before
        assert results._styles_key == results._row_styles()
        example = next(row.text for row in results._rows if "exact phrase" in row.text.plain)
        assert any(span.style == results._row_styles()[2] for span in example.spans)


async def test_the_guides_examples_do_what_it_says(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db = SessionDB(path)
    said = {
        "s1": "we deploy the app on fridays",
        "s2": "rollback the release now",
        "s3": "docker compose up brings the stack",
        "s4": "docker run starts one container",
        "s5": "an exact phrase appears here",
        "s6": "the phrase is not exact here",
        "s7": "kubectl talks to kubernetes",
    }
    for sid, text in said.items():
        db.create_session(sid, "cli")
        db.append_message(sid, "user", text)
    db.close()
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        store = app.ctx.store

        def sessions(query: str) -> set[str]:
            view = store.search(query, ListQuery(), limit=40)
            assert view.note is None or "syntax" not in view.note.lower(), view.note
            return {hit.session_id for group in view.groups for hit in group.hits}

        assert sessions("docker compose") == {"s3"}
        assert sessions('"exact phrase"') == {"s5"}
        assert sessions("deploy OR rollback") == {"s1", "s2"}
        assert sessions("docker NOT compose") == {"s4"}
        assert sessions("kube*") == {"s7"}
        assert [example for example, _ in SearchResults.GUIDE] == [
            "docker compose", '"exact phrase"', "deploy OR rollback", "docker NOT compose", "kube*",
        ]


async def test_a_first_key_slower_than_a_tenth_of_a_second_says_searching(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/")
        await settle(pilot)
        screen = app.screen
        screen.search.query = "dock"  # typed; its answer not in yet: the guide still shows
        screen.search.still_searching("doc")  # an older key's check: nothing to say
        assert _pane(app)[2] == "type to search"
        screen.search.still_searching("dock")
        assert _pane(app)[2] == "searching…"
