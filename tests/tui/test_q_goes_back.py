"""``q`` on the recap, transcript and lineage screens goes back one screen, as in ``less``.

Before, ``q`` there did nothing and said nothing, and the keys typed next went into the screen
. On the list, ``q`` still quits; in the transcript's find field it is a letter.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Footer, Input

from hermes_tui.screens.browser import BrowserScreen
from hermes_tui.screens.lineage import LineageScreen
from hermes_tui.screens.recap import RecapScreen
from hermes_tui.screens.transcript import TranscriptScreen

from .conftest import SIZE, make_app, settle


def footer_text(screen) -> str:
    footer = screen.query_one(Footer)
    return " ".join(str(child.render()) for child in footer.query("*"))


async def test_q_goes_back_one_screen_from_recap_transcript_and_lineage(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the recap of the first conversation
        await settle(pilot)
        assert isinstance(app.screen, RecapScreen)
        await pilot.press("t")  # recap → transcript
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen)
        await pilot.press("q")  # back to the recap, not out of the app
        await settle(pilot)
        assert isinstance(app.screen, RecapScreen) and app.is_running
        await pilot.press("l")  # recap → lineage
        await settle(pilot)
        assert isinstance(app.screen, LineageScreen)
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, RecapScreen)
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, BrowserScreen) and app.is_running


async def test_footer_of_each_pushed_screen_shows_q_for_back(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        for opener, screen_type in (("t", TranscriptScreen), ("l", LineageScreen)):
            assert "q Back" in " ".join(footer_text(app.screen).split()), footer_text(app.screen)
            await pilot.press(opener)
            await settle(pilot)
            assert isinstance(app.screen, screen_type)
            assert "q Back" in " ".join(footer_text(app.screen).split()), footer_text(app.screen)
            await pilot.press("escape")  # escape still goes back too
            await settle(pilot)
            assert isinstance(app.screen, RecapScreen)


async def test_q_in_the_transcript_find_field_is_a_letter(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen)
        await pilot.press("slash", "q")
        await settle(pilot)
        find = app.screen.query_one("#transcript-find", Input)
        assert find.value == "q" and isinstance(app.screen, TranscriptScreen)
