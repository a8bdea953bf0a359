"""The browser's search by conversation (SR-17), its ranking key (SR-18) and its empty
answers (SR-19), driven by keys through Pilot on the fixed store."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.widgets.search import SearchResults

from .conftest import SIZE, make_app, settle

TRAVEL = "20261117_090000_d4e5f6a7"


def _subtitle(app) -> str:
    return str(app.screen.query_one("#main").border_subtitle)


def _lines(app) -> list[str]:
    results = app.screen.query_one(SearchResults)
    return [row.text.plain for row in results._rows]


async def test_words_from_two_sessions_of_a_chain_find_the_conversation_and_say_how(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # `Kyoto` is in the chain's first session, `Nara` in its compression child.
        await pilot.press("/", *"kyoto nara ")
        await settle(pilot)
        view = app.screen.query_one(SearchResults).view
        assert [g.root_id for g in view.groups] == [TRAVEL]
        (group,) = view.groups
        assert group.across == 2 and {h.session_id for h in group.hits} == {TRAVEL, "20261117_100000_e5f6a7b8"}
        assert any("travel plans" in line and "2 messages hold these words" in line for line in _lines(app))
        assert "by relevance" in _subtitle(app)


async def test_ctrl_o_toggles_relevance_and_newest_first_and_the_pane_says_which(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"docker")
        await settle(pilot)
        assert app.screen.query_one(SearchResults).view.order == "relevance"
        assert "by relevance" in _subtitle(app)
        await pilot.press("ctrl+o")
        await settle(pilot)
        view = app.screen.query_one(SearchResults).view
        assert view.order == "newest" and "newest first" in _subtitle(app)
        assert app.screen.query_one("#search").value == "docker"  # (the key typed nothing)
        # From the hits too, and back.
        await pilot.press("down")
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert app.screen.query_one(SearchResults).view.order == "relevance"
        assert "by relevance" in _subtitle(app)


async def test_an_empty_answer_says_why_in_the_pane(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"kyoto zebrafish ")
        await settle(pilot)
        lines = _lines(app)
        assert any("No message, title or id matches" in line for line in lines)
        assert any("no message holds the word “zebrafish”" in line for line in lines)


async def test_words_no_conversation_holds_together_say_so_in_the_pane(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"kyoto borrow ")
        await settle(pilot)
        assert any("no conversation holds them all" in line for line in _lines(app))


def test_the_search_ranking_numbers_come_from_the_config_file(tmp_path: Path) -> None:
    from hermes_tui.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text("search:\n  order: newest\n  recency_weight: 0.5\n  half_life_days: 7\n", encoding="utf-8")
    config, problems = load_config(path)
    assert problems == [] and config.search.order == "newest"
    weights = config.search.weights()
    assert (weights.recency, weights.half_life_days, weights.together) == (0.5, 7.0, 0.5)
    path.write_text("search:\n  recency_weight: 3\n", encoding="utf-8")
    config, problems = load_config(path)
    assert "search.recency_weight" in problems[0] and config.search.recency_weight == 0.2


async def test_the_configured_order_is_the_one_the_search_starts_in(fixed_db: Path) -> None:
    from hermes_tui.config import AppConfig, SearchConfig

    config = AppConfig(animations="none", search_debounce_s=0.0, search=SearchConfig(order="newest"))
    app = make_app(fixed_db, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"docker")
        await settle(pilot)
        assert app.screen.query_one(SearchResults).view.order == "newest"
        assert "newest first" in _subtitle(app)


async def test_a_trailing_space_makes_the_title_match_whole_words(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", *"dock")
        await settle(pilot)
        view = app.screen.query_one(SearchResults).view
        assert [s.title for s in view.title_matches] == ["Docker deploy pipeline"]
        await pilot.press("space")
        await settle(pilot)
        view = app.screen.query_one(SearchResults).view
        # `dock ` is the word dock: neither the title `Docker…` nor a message's `docker`.
        assert view.query == "dock " and view.title_matches == [] and view.groups == []
