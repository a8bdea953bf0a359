"""BR-21: the time picker narrows the list, its counts and the search alike to conversations
last active in a window, and the window is named in the status line (the fixed dataset, its
clock frozen at 2026-11-18 08:00 UTC)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList

from hermes_tui.modals.time_picker import TimePicker

from .conftest import SIZE, make_app, settle
from .dataset import NOW


def status(screen) -> str:
    return str(screen.query_one("#status").render())


def option_texts(picker: TimePicker) -> list[str]:
    options = picker.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def choose(pilot, label: str) -> None:
    """Open the picker and take the preset named ``label``."""
    await pilot.press("T")
    await settle(pilot)
    picker = pilot.app.screen
    assert isinstance(picker, TimePicker)
    options = picker.query_one(OptionList)
    options.highlighted = next(i for i, text in enumerate(option_texts(picker)) if label in text)
    await pilot.press("enter")
    await settle(pilot)


async def test_br21_time_picker_changes_the_list_its_counts_and_the_search(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        lst = screen.session_list
        everything = lst.total
        assert everything == 7 and "last active today" not in status(screen)

        # The picker shows each window with its count under the other filters.
        await pilot.press("T")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, TimePicker)
        assert picker.counts == {"any": 7, "today": 3, "7d": 7, "30d": 7, "year": 7}
        texts = option_texts(picker)
        assert texts[0].startswith("● Any time") and texts[1].split() == ["Today", "3"]
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and screen.time_key == "any"

        # Today (since 00:00 UTC): the three conversations of this morning, counted as such.
        await choose(pilot, "Today")
        assert screen.time_key == "today"
        assert screen.narrow.since == NOW - 8 * 3600
        assert lst.total == 3
        rows = [lst.row(i) for i in range(lst.total)]
        assert {r.id for r in rows} == {"20261118_074000_a1b2c3", "20261118_060000_b2c3d4e5", "20261118_030000_c3d4e5"}
        assert "last active today" in status(screen), "the window is named with the other filters"

        # The search obeys the same window: "Kyoto" is in yesterday's travel plans only.
        await pilot.press("slash", *"Kyoto")
        await settle(pilot)
        assert screen.results.view.groups == []
        await pilot.press("escape")
        await settle(pilot)

        # Back to any time: the list and the search have everything again.
        await choose(pilot, "Any time")
        assert screen.time_key == "any" and lst.total == everything
        await pilot.press("slash", *"Kyoto")
        await settle(pilot)
        assert [g.root_id for g in screen.results.view.groups] == ["20261117_090000_d4e5f6a7"]


async def test_br21_a_window_with_nothing_in_it_says_which_filters_leave_nothing(fixed_db: Path) -> None:
    app = make_app(fixed_db, clock=lambda: NOW + 400 * 86400)  # a year and more later
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        await choose(pilot, "Last 30 days")
        assert screen.session_list.total == 0
        assert "last active within 30 days" in screen.session_list.empty_text


def test_br21_snapshot_time_picker_80x24(fixed_db: Path, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot)

    assert snap_compare(make_app(fixed_db), terminal_size=(80, 24), run_before=run_before)


async def test_br21_after_and_before_in_the_search_field_narrow_the_search(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen

        async def search(text: str):
            screen.search_input.value = ""
            await settle(pilot)
            await pilot.press("slash", *text)
            await settle(pilot)
            return screen.results.view

        # Kyoto is in yesterday's travel plans.
        assert [g.root_id for g in (await search("Kyoto")).groups] == ["20261117_090000_d4e5f6a7"]
        assert (await search("Kyoto after:today")).groups == []
        assert [g.root_id for g in (await search("Kyoto before:today")).groups] == ["20261117_090000_d4e5f6a7"]
        assert [g.root_id for g in (await search("Kyoto after:2026-11-17")).groups] == ["20261117_090000_d4e5f6a7"]
        # With the picker's window too: both hold.
        await pilot.press("escape")
        await settle(pilot)
        await choose(pilot, "Today")
        assert (await search("Kyoto before:today")).groups == []
        # A term that cannot be read is left out, and the pane says why.
        await pilot.press("escape")
        await settle(pilot)
        await choose(pilot, "Any time")
        view = await search("Kyoto after:7x")
        assert [g.root_id for g in view.groups] == ["20261117_090000_d4e5f6a7"]
        assert "7x" in (view.note or "")
        # Said in full on the line before the hits (the pane's subtitle is cut at its width).
        results = app.screen.results
        first = next(row for row in results._rows if row.text is not None and row.target is None)
        assert first.text.plain.strip() == view.note
        assert "7x" not in str(app.screen.switcher.border_subtitle)


async def test_br21_export_offers_the_conversations_the_window_lists(fixed_db: Path) -> None:
    from hermes_tui.modals.export import ExportModal

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await choose(pilot, "Today")
        await pilot.press("e")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ExportModal)
        listed = [s for s in modal.plan.scopes if s.key == "listed"]
        assert len(listed) == 1 and "3 conversations, 3 sessions" in listed[0].label
        assert set(listed[0].session_ids) == {
            "20261118_074000_a1b2c3", "20261118_060000_b2c3d4e5", "20261118_030000_c3d4e5"}
        assert not [s for s in modal.plan.scopes if s.key == "all"]  # (the window is not ignored)


async def test_br21_a_window_of_ones_own_is_typed_in_the_picker(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        lst = screen.session_list
        await pilot.press("T")
        await settle(pilot)
        picker = app.screen
        # What cannot be read is said in the picker, which stays open.
        await pilot.press(*"3m", "enter")
        await settle(pilot)
        assert app.screen is picker
        assert "3min" in str(picker.query_one("#time-problem").render())
        # Yesterday only: the travel plans (their last message yesterday, 22 hours ago).
        await pilot.press("backspace", "backspace", *"2026-11-17..2026-11-17", "enter")
        await settle(pilot)
        assert app.screen is screen and screen.time_key == "custom"
        assert [lst.row(i).lineage_root_id or lst.row(i).id for i in range(lst.total)] == ["20261117_090000_d4e5f6a7"]
        assert "last active 2026-11-17..2026-11-17" in status(screen)


async def test_br21_export_of_a_search_keeps_to_the_window(fixed_db: Path) -> None:
    from hermes_tui.modals.export import ExportModal

    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)

        async def search_scope(text: str):
            await pilot.press("slash", *text)
            await settle(pilot)
            app.screen.actions.start_export(None)  # (as `e` does, from the search pane)
            await settle(pilot)
            modal = app.screen
            assert isinstance(modal, ExportModal)
            scope = next(s for s in modal.plan.scopes if s.key == "search")
            await pilot.press("escape")
            await settle(pilot)
            app.screen.search_input.value = ""
            await settle(pilot)
            return scope

        travel = await search_scope("Kyoto before:today")
        assert travel.session_ids and all(sid.startswith("20261117_") for sid in travel.session_ids)
        nothing = await search_scope("Kyoto after:today")
        assert nothing.count == 0 and nothing.unavailable


async def test_the_time_pickers_counts_obey_the_status_filter_as_the_list_does(fixed_db: Path) -> None:
    """The picker counts the screen's own list (one ListQuery): with a status filter on, its
    "Any time" is the list's length, not the length of the list without that filter."""
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        lst = screen.session_list
        everything = lst.total
        await pilot.press("S")  # only the conversations whose last turn is done
        await settle(pilot)
        done = lst.total
        assert screen.status_filter is not None and 0 < done < everything
        await pilot.press("T")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, TimePicker)
        assert picker.counts["any"] == done
        assert picker.counts["today"] <= done


async def test_br21_with_a_time_window_the_match_count_says_it_is_before_filters(fixed_db: Path) -> None:
    """The search's count of matching messages is read before the window leaves out their
    conversations: "4 hits of ~7" alone would promise three more that no page will show."""
    app = make_app(fixed_db)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = app.screen

        async def search(text: str) -> str:
            screen.search_input.value = ""
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
            await pilot.press("slash", *text)
            await settle(pilot)
            return str(screen.switcher.border_subtitle)

        everywhere = await search("the")
        assert "before filters" not in everywhere
        view = screen.results.view
        # Today's two conversations hold some of the matches; the rest are older.
        windowed = await search("the after:today")
        narrowed = screen.results.view
        assert {g.root_id for g in narrowed.groups} <= {"20261118_074000_a1b2c3", "20261118_030000_c3d4e5"}
        shown = sum(len(g.hits) for g in narrowed.groups)
        assert 0 < shown < sum(len(g.hits) for g in view.groups)
        assert f"{shown} hits of ~{narrowed.total_estimate:,} before filters" in windowed


async def test_br21_an_answer_the_window_empties_names_the_window_not_the_words(fixed_db: Path) -> None:
    """Kyoto is in yesterday's travel plans: with today's window nothing is shown, and the pane
    says the window left that conversation out -- not that no message holds the word."""
    app = make_app(fixed_db)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("slash", *"Kyoto after:today")
        await settle(pilot)
        view = screen.results.view
        assert view.groups == [] and len(view.filtered_out) == 1
        lines = [row.text.plain.strip() for row in screen.results._rows if row.text is not None]
        assert lines[0] == "No conversation the filters keep matches “Kyoto after:today”"
        assert lines[1] == "1 conversation matches, left out by the time window"
        assert not any("No message" in line for line in lines)
        # A word nobody wrote is still "no message".
        screen.search_input.value = ""
        await settle(pilot)
        await pilot.press(*"zzyzx after:today")
        await settle(pilot)
        lines = [row.text.plain.strip() for row in screen.results._rows if row.text is not None]
        assert lines[0].startswith("No message, title or id matches")
