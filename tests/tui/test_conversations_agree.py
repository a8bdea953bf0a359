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
