"""Snapshots of the list's orders and views on upstream's own v30 and v16 stores (frozen clock,
fixed size): last activity first with pins on top (BR-10, BR-12), start order (BR-10), the archived
view (BR-11), hidden / internal / delegate rows shown and marked (BR-15), the lineage tree with
its delegate and reset edges (BR-15), and an empty search answer that says why (BR-20)."""

from __future__ import annotations

import pytest

from .conftest import SIZE, make_app, settle
from .test_search_pane import fixed_timing_app


def shot(snap_compare, path, *keys: str) -> bool:
    async def run_before(pilot) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    # The search's measured time is in the pane's subtitle: fixed, so the picture is stable.
    return snap_compare(fixed_timing_app(path), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("version", [30, 16])
def test_snapshot_br10_br12_last_activity_first_pins_on_top(upstream_copy, monkeypatch, snap_compare, version):
    monkeypatch.setenv("HOME", "/home/u")
    assert shot(snap_compare, upstream_copy(version))


def test_snapshot_br10_start_order(upstream_copy, monkeypatch, snap_compare):
    monkeypatch.setenv("HOME", "/home/u")
    assert shot(snap_compare, upstream_copy(30), "o")


def test_snapshot_br11_archived_view(upstream_copy, monkeypatch, snap_compare):
    monkeypatch.setenv("HOME", "/home/u")
    assert shot(snap_compare, upstream_copy(30), "v")


def test_snapshot_br15_hidden_internal_delegate_rows_marked(upstream_copy, monkeypatch, snap_compare):
    monkeypatch.setenv("HOME", "/home/u")
    assert shot(snap_compare, upstream_copy(30), "H")


def test_snapshot_br15_lineage_delegate_and_reset_edges(upstream_copy, monkeypatch, snap_compare):
    monkeypatch.setenv("HOME", "/home/u")
    path = upstream_copy(30)

    async def run_before(pilot) -> None:
        await settle(pilot)
        screen = pilot.app.screen
        await pilot.press("H")
        await settle(pilot)
        lst = screen.session_list
        lst.move_to(next(i for i in range(lst.total) if lst.row(i).id == "20260921_110000_g2"))
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_br15_lineage_delegate_edge(upstream_copy, monkeypatch, snap_compare):
    monkeypatch.setenv("HOME", "/home/u")
    path = upstream_copy(30)

    async def run_before(pilot) -> None:
        await settle(pilot)
        screen = pilot.app.screen
        lst = screen.session_list
        lst.move_to(next(i for i in range(lst.total) if lst.row(i).id == "20260921_090000_s1"))
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("query", ["zxqvbnm", '"" ()'])
def test_snapshot_br20_empty_answer_says_so(upstream_copy, monkeypatch, snap_compare, query):
    monkeypatch.setenv("HOME", "/home/u")
    assert shot(snap_compare, upstream_copy(30), "slash", *query)
