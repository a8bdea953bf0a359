"""config.yaml's problems are each said, and a bad setting costs only itself: its siblings,
the rest of its block, and the key a bad keymap entry would have replaced are kept."""

from __future__ import annotations

from pathlib import Path

from hermes_tui.config import AppConfig, load_config
from hermes_tui.widgets.status import StatusLine

from .conftest import SIZE, make_app, settle
from .test_delete_undo import plain


def load(tmp_path: Path, text: str) -> tuple[AppConfig, list[str]]:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return load_config(path)


def test_an_invalid_nested_value_drops_only_itself_and_keeps_its_siblings(tmp_path: Path) -> None:
    config, problems = load(tmp_path, "search:\n  order: newest\n  recency_weight: 2\n  half_life_days: 7\n")
    assert config.search.order == "newest" and config.search.half_life_days == 7
    assert config.search.recency_weight == 0.2  # the default, in place of the bad value
    [problem] = problems
    assert "search.recency_weight" in problem and "search.order" not in problem


def test_an_invalid_top_level_value_keeps_the_other_settings(tmp_path: Path) -> None:
    config, problems = load(tmp_path, "page_size: 3\nshow_reasoning: true\nrecap:\n  exchanges: 4\n")
    assert config.page_size == 100 and config.show_reasoning is True and config.recap.exchanges == 4
    assert len(problems) == 1 and "page_size" in problems[0]


def test_a_block_left_empty_gives_its_defaults_without_a_problem(tmp_path: Path) -> None:
    config, problems = load(tmp_path, "search:\n  # order: newest\nrecap:\npage_size: 50\n")
    assert problems == [] and config.page_size == 50 and config.search.order == "relevance"


def test_unknown_keys_are_named_with_the_setting_they_are_close_to(tmp_path: Path) -> None:
    config, problems = load(tmp_path, "show_reasonin: true\nthem: nord\nsearch:\n  ordr: newest\n"
                                      "recap:\n  exchange: 3\nwhatever_this_is: 1\n")
    said = "\n".join(problems)
    assert "unknown setting 'show_reasonin'" in said and "did you mean 'show_reasoning'" in said
    assert "'them'" in said and "did you mean 'theme'" in said
    assert "'search.ordr'" in said and "did you mean 'search.order'" in said
    assert "'recap.exchange'" in said and "did you mean 'recap.exchanges'" in said
    assert "'whatever_this_is'" in said
    assert config.show_reasoning is False and config.theme == "textual-dark"


def test_the_testers_file_says_every_problem_and_keeps_the_search_order(tmp_path: Path) -> None:
    config, problems = load(tmp_path, "theme: nosuchtheme\nshow_reasonin: true\n"
                                      "search: {order: newest, recency_weight: 2}\n")
    assert config.search.order == "newest"
    said = "\n".join(problems)
    assert "search.recency_weight" in said and "show_reasonin" in said


async def test_an_unknown_theme_is_a_problem_naming_some_themes(fixed_db: Path) -> None:
    app = make_app(fixed_db, config=AppConfig(animations="none", search_debounce_s=0.0, theme="nosuchtheme"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "textual-dark"
        [problem] = app.ctx.config_problems
        assert "unknown theme 'nosuchtheme'" in problem and "nord" in problem
        assert "1 problem in config.yaml" in plain(app.screen.query_one(StatusLine).render())
