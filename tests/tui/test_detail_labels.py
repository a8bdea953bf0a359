"""The detail pane of a compression chain's row says whose each value is: the latest
segment's id and counts, the root's start and tokens."""

from __future__ import annotations

from pathlib import Path

from hermes_state import SessionDB
from hermes_tui.widgets.detail import DetailPane
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .test_delete_undo import plain

TRAVEL_ROOT = "20261117_090000_d4e5f6a7"
TRAVEL_TIP = "20261117_100000_e5f6a7b8"


async def test_a_chains_row_labels_the_roots_values_and_the_tips(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        index = next(i for i in range(lst.total) if lst.row(i) and lst.row(i).id == TRAVEL_TIP)
        lst.move_to(index)
        await settle(pilot)
        pane = app.screen.query_one(DetailPane)
        assert pane.summary.id == TRAVEL_TIP and pane.summary.lineage_root_id == TRAVEL_ROOT
        lines = [" ".join(line.split()) for line in plain(pane.build()).splitlines()]
        assert any(line.startswith(f"id {TRAVEL_TIP} · latest segment") for line in lines), lines
        assert f"root {TRAVEL_ROOT}" in lines
        assert any(line.startswith("started ") and line.endswith("· root") for line in lines)
        assert any(line.startswith("messages ") and line.endswith("· latest segment") for line in lines)
        root_tokens = SessionDB(fixed_db, read_only=True)
        try:
            root = root_tokens.get_session(TRAVEL_ROOT)
        finally:
            root_tokens.close()
        assert f"tokens {root['input_tokens']:,} in / {root['output_tokens']:,} out · root" in lines


async def test_a_single_sessions_row_carries_no_labels(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pane = app.screen.query_one(DetailPane)
        assert pane.summary is not None and not pane.summary.lineage_root_id
        text = plain(pane.build())
        assert "latest segment" not in text and "· root" not in text
