"""The search pane's bottom line fits its border: at 80 columns the whole line was cut in the
middle of what it counts. What matters least to a reader gives way first."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text

from hermes_state.models import SearchHit
from hermes_tui.fitting import fit_parts
from hermes_tui.screens.browser_search import subtitle_parts
from hermes_tui.view_models import HitGroup, SearchView

from .conftest import make_app, settle


def _answer(hits: int, conversations: int, **view: object) -> SearchView:
    """An answer of ``hits`` hits spread over ``conversations`` conversations."""
    groups = [HitGroup(f"root-{c}", f"conversation {c}", "cli") for c in range(conversations)]
    for rowid in range(hits):
        group = groups[rowid % conversations]
        group.hits.append(SearchHit(id=rowid, session_id=group.root_id, role="user", timestamp=float(rowid)))
    return SearchView(query="docker", groups=groups, hit_count=hits, **view)  # type: ignore[arg-type]


RANKED = _answer(40, 15, path="fts5", order="relevance", ranking="bm25-conversations", total_estimate=94,
                 elapsed_ms=4.3)


def subtitle(view: SearchView, width: int) -> str:
    return fit_parts(subtitle_parts(view), width)


def test_a_line_that_fits_is_said_whole() -> None:
    assert subtitle(RANKED, 200) == "fts5 · by relevance (bm25-conversations) · 40 hits of ~94 · 15 conversations · 4.3 ms"
    assert subtitle(RANKED, 0) == subtitle(RANKED, 200), "not laid out yet: all of it"


def test_the_index_and_the_time_give_way_before_the_counts() -> None:
    line = subtitle(RANKED, 74)  # (an 80-column pane's border)
    assert line == "by relevance (bm25-conversations) · 40 hits of ~94 · 15 conversations"
    assert cell_len(line) <= 74


def test_the_index_gives_way_before_the_time() -> None:
    assert subtitle(RANKED, 80) == "by relevance (bm25-conversations) · 40 hits of ~94 · 15 conversations · 4.3 ms"


def test_the_rankings_name_gives_way_last_and_by_relevance_stays() -> None:
    assert subtitle(RANKED, 50) == "by relevance · 40 hits of ~94 · 15 conversations"
    assert subtitle(RANKED, 10) == "by relevance · 40 hits of ~94 · 15 conversations", "the border cuts the rest"


def test_a_note_is_kept_at_the_end_and_may_still_be_cut_by_the_border() -> None:
    nothing = _answer(0, 0, path="fts5+trigram", order="relevance", ranking="bm25", elapsed_ms=0.8,
                      note="no message holds the word “zxqvbnm”")
    assert subtitle(nothing, 200) == "fts5+trigram · 0 hits · 0 conversations · 0.8 ms · no message holds the word “zxqvbnm”"
    assert subtitle(nothing, 40) == "0 hits · 0 conversations · no message holds the word “zxqvbnm”"


async def test_the_line_is_fitted_again_when_the_terminal_is_resized(fixed_db) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"docker")
        await settle(pilot)
        switcher = app.screen.switcher
        wide = Text.from_markup(str(switcher.border_subtitle)).plain
        assert wide.startswith("fts5")
        await pilot.resize_terminal(60, 30)
        await settle(pilot)
        narrow = Text.from_markup(str(switcher.border_subtitle)).plain
        assert cell_len(narrow) <= switcher.size.width - 6 < cell_len(wide)
        assert not narrow.startswith("fts5") and "hit" in narrow
