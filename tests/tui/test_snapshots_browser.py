"""Snapshot tests of the browser's main states (fixed size, frozen clock, fixed data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_state import SessionDB

from .conftest import SIZE, make_app, settle
from .dataset import build_fixed_db


@pytest.fixture
def snap_db(tmp_path: Path) -> Path:
    return build_fixed_db(tmp_path / "state.db")


def test_snapshot_session_list(snap_compare, snap_db: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("j")
        await settle(pilot)

    assert snap_compare(make_app(snap_db), terminal_size=SIZE, run_before=run_before)


def test_snapshot_list_filtered_by_source(snap_compare, snap_db: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("s", "down", "down", "enter")  # the source picker: all, cli, discord
        await settle(pilot)

    assert snap_compare(make_app(snap_db), terminal_size=SIZE, run_before=run_before)


def test_snapshot_empty_database(snap_compare, tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    SessionDB(path).close()

    async def run_before(pilot) -> None:
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_terminal_too_small(snap_compare, snap_db: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)

    assert snap_compare(make_app(snap_db), terminal_size=(36, 8), run_before=run_before)


def test_snapshot_search_guide(snap_compare, snap_db: Path) -> None:
    """`/` on the list: the search pane opens with how to search, before the first key."""

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("/")
        await settle(pilot)

    assert snap_compare(make_app(snap_db), terminal_size=SIZE, run_before=run_before)


def test_snapshot_search_guide_80x24_light(snap_compare, snap_db: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.theme = "textual-light"
        await pilot.press("/")
        await settle(pilot)

    assert snap_compare(make_app(snap_db), terminal_size=(80, 24), run_before=run_before)
