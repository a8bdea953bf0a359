"""The lineage of a gateway chat that compressed thousands of times (LI-13).

A chain of N segments is a family N levels deep. Drawn whole it was N rows built on the UI
thread (seconds in which ``q`` did nothing at 200,000), and past ~1,000 the recursive walk of
the family raised RecursionError. The tree shows a window of a long chain (its first
segments, the live tip, those around the session it was opened from) and says how many are
folded; Enter on a fold row shows more.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from bench.long_chain import build_chain, segment_id
from hermes_tui.screens.browser import BrowserScreen
from hermes_tui.screens.lineage import LineageScreen
from hermes_tui.widgets.lineage_folds import UNFOLD_STEP
from hermes_tui.widgets.lineage_tree import CAME_FROM, LIVE_TIP, LineageTree

from .conftest import SIZE, make_app, settle

SEGMENTS = 3_000


@pytest.fixture(scope="module")
def chain_db(tmp_path_factory) -> Path:
    return build_chain(tmp_path_factory.mktemp("chain") / "state.db", SEGMENTS).path


def rows(tree: LineageTree) -> list[str]:
    out, stack = [], [tree.root]
    while stack:
        node = stack.pop()
        out.append(node.label.plain)
        stack.extend(reversed(node.children))
    return out


async def open_lineage(pilot, session_id: str) -> LineageScreen:
    pilot.app.push_screen(pilot.app.ctx.screens.lineage(session_id))
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, LineageScreen)
    return screen


async def test_a_chain_of_thousands_of_segments_shows_a_window_with_its_live_tip_and_says_how_many_are_folded(
    chain_db: Path,
) -> None:
    middle = segment_id(1_500)
    app = make_app(chain_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_lineage(pilot, middle)
        tree = screen.tree
        drawn = rows(tree)
        assert len(drawn) < 60, f"{len(drawn)} rows drawn for a {SEGMENTS}-segment chain"
        assert any(LIVE_TIP in row and segment_id(SEGMENTS - 1) in row for row in drawn)
        assert any(CAME_FROM in row and middle in row for row in drawn)
        assert tree.highlighted is not None and tree.highlighted.id == middle
        folded = tree.folded_segments()
        assert folded > SEGMENTS - 60
        header = screen.query_one("#lineage-header").render().plain
        assert f"{SEGMENTS:,} sessions" in header
        assert f"{folded:,} chain segments folded" in header
        assert sum(1 for row in drawn if row.startswith("⋯")) == 2  # before and after the window


async def test_enter_on_a_fold_row_shows_the_next_segments_of_the_chain(chain_db: Path) -> None:
    app = make_app(chain_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_lineage(pilot, segment_id(0))
        tree = screen.tree
        before = tree.folded_segments()
        fold_row = next(node for node in _nodes(tree) if tree.fold_at(node) is not None)
        fold = tree.fold_at(fold_row)
        # The chain's root is the family's root; its segments from #2 on are listed.
        first_folded = fold.start + 1
        assert f"(#{first_folded + 1}–#" in fold.label()  # numbered along the chain, from #1
        tree.move_cursor(fold_row)
        await pilot.pause()
        assert "folded" in screen.query_one("#lineage-detail").render().plain
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, LineageScreen)  # a fold row opens no recap
        assert tree.folded_segments() == before - UNFOLD_STEP
        assert tree.highlighted is not None and tree.highlighted.id == segment_id(first_folded)
        # The next key goes on down the chain, one segment at a time.
        await pilot.press("down")
        await pilot.pause()
        assert tree.highlighted.id == segment_id(first_folded + 1)


async def test_q_while_the_family_is_still_being_read_goes_back_at_once(chain_db: Path) -> None:
    app = make_app(chain_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # The family is read for real, once the test lets it: the screen is asked to go back
        # while its worker is still at it.
        store = app.ctx.store
        real = store.lineage
        reading, release = threading.Event(), threading.Event()

        def held(session_id: str):
            reading.set()
            release.wait(30)
            return real(session_id)

        store.lineage = held
        try:
            app.push_screen(app.ctx.screens.lineage(segment_id(10)))
            await pilot.pause()
            assert reading.wait(10)
            screen = app.screen
            assert isinstance(screen, LineageScreen) and not screen.loaded
            await pilot.press("q")
            await pilot.pause()
            assert isinstance(app.screen, BrowserScreen)
        finally:
            release.set()
        await settle(pilot)
        assert isinstance(app.screen, BrowserScreen)


def _nodes(tree: LineageTree):
    stack = [tree.root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


async def test_commits_while_the_family_is_read_ask_for_one_more_read_not_one_each(chain_db: Path) -> None:
    from hermes_tui.context import StoreChange

    app = make_app(chain_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        store = app.ctx.store
        real = store.lineage
        reads: list[str] = []
        first_read, release = threading.Event(), threading.Event()

        def counted(session_id: str):
            reads.append(session_id)
            if len(reads) == 1:
                first_read.set()
                release.wait(30)  # the first read lasts while a gateway commits five times
            return real(session_id)

        store.lineage = counted
        try:
            app.push_screen(app.ctx.screens.lineage(segment_id(10)))
            await pilot.pause()
            assert first_read.wait(10)
            screen = app.screen
            assert isinstance(screen, LineageScreen)
            for _ in range(5):
                screen.store_changed(StoreChange(database=True))
            await pilot.pause()
            assert len(reads) == 1
        finally:
            release.set()
        await settle(pilot)
        await settle(pilot)
        assert len(reads) == 2  # the family read once more, for all five commits
        assert screen.loaded and not screen.loading
        assert screen.tree.highlighted is not None and screen.tree.highlighted.id == segment_id(10)


# ----------------------------------------------------------------------------- a 60-segment chain at 80×24

SHORT_SEGMENTS = 60


@pytest.fixture(scope="module")
def short_chain_db(tmp_path_factory) -> Path:
    return build_chain(tmp_path_factory.mktemp("short-chain") / "state.db", SHORT_SEGMENTS).path


def detail_text(screen: LineageScreen) -> str:
    """What the detail pane says, as plain text (it holds a Group: a title and a grid)."""
    from rich.console import Console

    console = Console(width=200, record=True, file=__import__("io").StringIO())
    console.print(screen.query_one("#lineage-detail").content)
    return console.export_text()


def _row_on_screen(tree: LineageTree) -> bool:
    line = tree.cursor_line
    top = tree.scroll_offset.y
    return line >= 0 and top <= line < top + tree.scrollable_content_region.height


async def test_the_lineage_tree_opens_with_the_session_you_came_from_scrolled_into_view(short_chain_db: Path) -> None:
    tip = segment_id(SHORT_SEGMENTS - 1)
    app = make_app(short_chain_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_lineage(pilot, tip)
        tree = screen.tree
        assert tree.highlighted is not None and tree.highlighted.id == tip
        assert tree.last_line + 1 > tree.scrollable_content_region.height  # (the tree is taller than its pane)
        assert _row_on_screen(tree), (tree.cursor_line, tree.scroll_offset.y, tree.scrollable_content_region.height)


async def test_the_lineage_tree_moves_with_j_k_g_and_G_as_the_list_does(short_chain_db: Path) -> None:
    app = make_app(short_chain_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_lineage(pilot, segment_id(SHORT_SEGMENTS - 1))
        tree = screen.tree
        await pilot.press("g")
        await pilot.pause()
        assert tree.cursor_line == 0 and tree.highlighted.id == segment_id(0)
        await pilot.press("j")
        await pilot.pause()
        assert tree.highlighted.id == segment_id(1)
        assert segment_id(1) in detail_text(screen)  # the detail follows
        await pilot.press("j", "k")
        await pilot.pause()
        assert tree.highlighted.id == segment_id(1)
        await pilot.press("G")
        await pilot.pause()
        assert tree.cursor_line == tree.last_line and _row_on_screen(tree)


def test_the_lineage_trees_moving_keys_have_ids_to_remap_and_are_in_the_help() -> None:
    from hermes_tui.keys import known_ids

    moving = {b.id: b.key for b in LineageTree.BINDINGS if b.id}
    assert {"lineage_down", "lineage_up", "lineage_first", "lineage_last"} <= set(moving)
    assert "j" in moving["lineage_down"].split(",") and "k" in moving["lineage_up"].split(",")
    assert "g" in moving["lineage_first"].split(",") and "G" in moving["lineage_last"].split(",")
    assert {"lineage_down", "lineage_up", "lineage_first", "lineage_last"} <= known_ids()


async def test_after_enter_on_a_fold_row_the_detail_describes_the_segment_highlighted(short_chain_db: Path) -> None:
    app = make_app(short_chain_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_lineage(pilot, segment_id(SHORT_SEGMENTS - 1))
        tree = screen.tree
        fold_row = next(node for node in _nodes(tree) if tree.fold_at(node) is not None)
        tree.move_cursor(fold_row)
        await pilot.pause()
        assert "folded" in detail_text(screen)
        await pilot.press("enter")
        await settle(pilot)
        assert tree.highlighted is not None
        shown = detail_text(screen)
        assert "folded" not in shown
        assert tree.highlighted.id in shown
