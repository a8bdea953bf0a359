"""The browser for how people use Hermes today (issue 12): archive, pin, last activity first,
hidden and delegate rows, several at once, workspaces -- on stores written by upstream v16 and v30.

After every write the store itself is checked: the values written, ``schema_version``
unchanged and ``PRAGMA integrity_check``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.pins import pinned_in_file
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle


def _store(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def schema_version(path: Path) -> int:
    with _store(path) as conn:
        return int(conn.execute("SELECT version FROM schema_version").fetchone()[0])


def integrity(path: Path) -> str:
    with _store(path) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


def archived_of(path: Path, ids: list[str]) -> dict[str, int]:
    with _store(path) as conn:
        marks = ",".join("?" for _ in ids)
        rows = conn.execute(f"SELECT id, archived FROM sessions WHERE id IN ({marks})", ids).fetchall()
    return {sid: int(value or 0) for sid, value in rows}


def lineage_of(path: Path, session_id: str) -> list[str]:
    db = SessionDB(path, read_only=True)
    try:
        tip = db.get_compression_tip(session_id)
        return db.get_session_chain(tip)
    finally:
        db.close()


def assert_store_sound(path: Path, version: int) -> None:
    assert schema_version(path) == version
    assert integrity(path) == "ok"


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


def compressed_row(lst: SessionList):
    """Index of a loaded row that is the tip of a compression chain (its lineage has > 1)."""
    for index in range(lst.total):
        row = lst.row(index)
        if row is not None and row.lineage_root_id and row.lineage_root_id != row.id:
            return index
    return None


# ---------------------------------------------------------------------------- BR-11


@pytest.mark.parametrize("version", [30, 16])
async def test_br11_archive_whole_lineage_view_filter_and_undo(upstream_copy, version):
    path = upstream_copy(version)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        lst = screen.session_list
        index = compressed_row(lst)
        assert index is not None, "the fixture has an active compression chain"
        lst.move_to(index)
        await settle(pilot)
        row = lst.current
        chain = lineage_of(path, row.id)
        assert len(chain) > 1
        total = lst.total
        assert set(archived_of(path, chain).values()) == {0}

        await pilot.press("a")
        await settle(pilot)
        assert set(archived_of(path, chain).values()) == {1}, "the whole lineage is archived"
        assert_store_sound(path, version)
        assert lst.total == total - 1
        assert all(lst.row(i) is None or lst.row(i).id != row.id for i in range(lst.total))
        assert any("Archived" in n and "u to undo" in n for n in notes(app))

        # The view filter: archived only shows it, marked; all shows both kinds.
        await pilot.press("v")
        await settle(pilot)
        assert screen.view == "archived"
        archived_rows = [lst.row(i) for i in range(lst.total)]
        assert row.id in {r.id for r in archived_rows}
        assert all(r.archived for r in archived_rows)
        assert "[archived]" in lst.render_row(archived_rows[0], 100).plain
        assert "view: archived only" in str(screen.query_one("#status").render())
        await pilot.press("v")
        await settle(pilot)
        assert screen.view == "all"
        assert lst.total >= total
        await pilot.press("v")
        await settle(pilot)
        assert screen.view == "active"

        await pilot.press("u")
        await settle(pilot)
        assert set(archived_of(path, chain).values()) == {0}, "undo unarchives the lineage"
        assert_store_sound(path, version)
        assert lst.total == total
        assert lst.current is not None and lst.current.id == row.id


@pytest.mark.parametrize("version", [30, 16])
async def test_br11_unarchive_from_archived_view(upstream_copy, version):
    path = upstream_copy(version)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        lst = screen.session_list
        await pilot.press("v")
        await settle(pilot)
        assert lst.total >= 1
        row = lst.current
        assert row.archived
        chain = lineage_of(path, row.id)
        await pilot.press("a")
        await settle(pilot)
        assert set(archived_of(path, chain).values()) == {0}
        assert_store_sound(path, version)
        assert row.id not in {lst.row(i).id for i in range(lst.total) if lst.row(i)}
        assert any("Unarchived" in n for n in notes(app))


async def test_br11_store_without_archived_column_says_why(upstream_copy):
    path = upstream_copy(11)
    before = Path(path).read_bytes()
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert any("no archived column" in n and "schema 11" in n for n in notes(app))
    assert Path(path).read_bytes() == before, "nothing was written (and nothing migrated)"


# ---------------------------------------------------------------------------- BR-12


def pinned_column(path: Path, ids: list[str]) -> dict[str, int]:
    with _store(path) as conn:
        marks = ",".join("?" for _ in ids)
        rows = conn.execute(f"SELECT id, pinned FROM sessions WHERE id IN ({marks})", ids).fetchall()
    return {sid: int(value or 0) for sid, value in rows}


def session_columns(path: Path) -> list[str]:
    with _store(path) as conn:
        return [row[1] for row in conn.execute("PRAGMA table_info(sessions)")]


@pytest.mark.parametrize("version", [30, 16])
async def test_br12_pin_comes_first_marked_and_unpins(upstream_copy, version):
    path = upstream_copy(version)
    columns = session_columns(path)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        lst = screen.session_list
        index = compressed_row(lst)
        assert index is not None and index > 0
        lst.move_to(index)
        await settle(pilot)
        row = lst.current
        chain = lineage_of(path, row.id)

        await pilot.press("p")
        await settle(pilot)
        if version >= 30:
            assert set(pinned_column(path, chain).values()) == {1}, "v30: the pinned column, whole lineage"
        else:
            assert "pinned" not in session_columns(path)
            assert set(chain) <= pinned_in_file(path), "older stores: our settings file"
        assert session_columns(path) == columns, "never a new column"
        assert_store_sound(path, version)
        rows = [lst.row(i) for i in range(lst.total)]
        head = [r for r in rows[: next(i for i, r in enumerate(rows) if not r.pinned)]]
        assert row.id in {r.id for r in head}, "pinned conversations come first"
        mine = next(r for r in head if r.id == row.id)
        assert "★" in lst.render_row(mine, 100).plain
        assert lst.current.id == row.id, "the cursor follows the pinned conversation"
        assert any("Pinned" in n for n in notes(app))

        # Pinned first in the archived view's order too, and after a reload of the page.
        await pilot.press("p")
        await settle(pilot)
        if version >= 30:
            assert set(pinned_column(path, chain).values()) == {0}
        else:
            assert not (set(chain) & pinned_in_file(path))
        assert_store_sound(path, version)
        assert not any(lst.row(i).pinned for i in range(lst.total) if lst.row(i) and lst.row(i).id == row.id)
        assert any("Unpinned" in n for n in notes(app))
