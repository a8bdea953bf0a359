"""The list, search, the detail pane and the counts agree on what a conversation is: a search
hit is grouped under the row the list shows it in (a reset child under its own title), on the
v30 store upstream wrote."""

from __future__ import annotations

import pytest

from hermes_tui.widgets.search import SearchResults

from .conftest import SIZE, make_app, settle
from hermes_state.listing import ListQuery

P = "20260921_"


async def test_a_hit_in_a_reset_child_is_grouped_under_its_own_title(upstream_copy) -> None:
    path = upstream_copy(30)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        listed = {app.screen.session_list.row(i).id for i in range(app.screen.session_list.total)}
        assert {P + "100000_g1", P + "110000_g2"} <= listed, "the list shows g1 and g2 apart"
        await pilot.press("/")
        for ch in "大别山":
            await pilot.press(ch)
        await settle(pilot)
        view = app.screen.query_one(SearchResults).view
        groups = {g.root_id: g for g in view.groups}
        assert set(groups) == {P + "100000_g1", P + "110000_g2"}
        assert groups[P + "110000_g2"].label == "lane after reset"
        assert [h.session_id for h in groups[P + "110000_g2"].hits] == [P + "110000_g2"]
        assert [h.session_id for h in groups[P + "100000_g1"].hits] == [P + "100000_g1"]


async def test_a_hit_in_a_delegate_run_is_grouped_under_the_conversation_that_started_it(upstream_copy) -> None:
    path = upstream_copy(30)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # Delegate runs are shown (and found) only when asked for (H).
        await pilot.press("H")
        await settle(pilot)
        await pilot.press("/", *"DELEGATEWORD")
        await settle(pilot)
        view = app.screen.query_one(SearchResults).view
        assert [g.root_id for g in view.groups] == [P + "090000_s1"]
        assert view.groups[0].label == "auth refactor"


async def test_every_count_of_a_rewound_session_is_what_its_transcript_shows(upstream_copy) -> None:
    from hermes_state import SessionDB
    from hermes_state.listing import summaries_of

    path = upstream_copy(30)
    r1 = P + "140000_r1"
    db = SessionDB(path, read_only=True)
    try:
        shown = len(db.get_messages(r1))  # the transcript's messages: rewound ones left out
        assert shown == 4
        listed = {row.id: row for row in db.list_summaries(ListQuery(), limit=50)}
        assert listed[r1].message_count == shown
        assert db.get_summary(r1).message_count == shown
        assert summaries_of(db.store, [r1])[0].message_count == shown
        assert db.lineage_tree(r1).message_count == shown
    finally:
        db.close()
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        index = next(i for i in range(lst.total) if lst.row(i).id == r1)
        assert "4 msgs" in lst.render_row(lst.row(index), 100).plain


async def _totals_said(app, pilot) -> dict[str, object]:
    """What the list, the source picker, the workspace picker and the export dialog say the
    list holds, each with its unit."""
    from hermes_tui.modals.export import ExportModal
    from hermes_tui.modals.source_picker import SourcePicker
    from hermes_tui.modals.workspace_picker import WorkspacePicker

    screen = app.screen
    said: dict[str, object] = {"list": screen.session_list.total}
    await pilot.press("s")
    await settle(pilot)
    picker = app.screen
    assert isinstance(picker, SourcePicker) and picker.counts is not None
    assert picker.HEADING == "Show conversations from"
    said["source picker"] = sum(n for s, n in picker.counts.items() if s not in picker.internal)
    await pilot.press("escape")
    await pilot.press("w")
    await settle(pilot)
    picker = app.screen
    assert isinstance(picker, WorkspacePicker)
    said["workspace picker"] = sum(w.count for w in picker.counts or [])
    await pilot.press("escape")
    await settle(pilot)
    await pilot.press("e")
    await settle(pilot)
    modal = app.screen
    assert isinstance(modal, ExportModal)
    listed = [s for s in modal.plan.scopes if s.key == "listed"]
    assert len(listed) == 1
    said["export dialog"] = listed[0].conversations
    said["export label"] = listed[0].label
    await pilot.press("escape")
    await settle(pilot)
    return said


@pytest.mark.parametrize("version", [30, 16])
async def test_the_list_the_pickers_and_the_export_dialog_state_one_total_in_conversations(upstream_copy, version) -> None:
    """Upstream's stores hold compression children, delegate runs, internal runs, archived and
    hidden sessions: sessions the list does not show as conversations. Every total the
    browser states for the same filters is the list's, and says "conversations"."""
    app = make_app(upstream_copy(version))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for keys in ((), ("v",), ("H",)):  # the default list, the archived view, hidden rows shown
            for key in keys:
                await pilot.press(key)
                await settle(pilot)
            said = await _totals_said(app, pilot)
            total = said["list"]
            assert said["source picker"] == said["export dialog"] == total, (keys, said)
            if said["workspace picker"]:  # (a store that records working directories)
                assert said["workspace picker"] == total, (keys, said)
            unit = "conversation" if total == 1 else "conversations"
            assert f"— {total} {unit}" in str(said["export label"]), said
