"""BR-13 (the workspace picker narrows list and search; the filters stay in the status line)
and BR-14 (space marks; archive / delete / export act on every marked conversation after one
confirmation; one undo restores all) on copies of upstream's v16 and v30 stores.

After every write the store itself is checked: values written, schema version, integrity.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList, RadioButton, RadioSet

from hermes_state import SessionDB
from hermes_tui.config import AppConfig
from hermes_tui.modals.confirm_batch import ConfirmBatchModal
from hermes_tui.modals.export import ExportModal
from hermes_tui.modals.workspace_picker import WorkspacePicker

from .conftest import SIZE, make_app, settle
from .test_archive_pin_and_order import archived_of, assert_store_sound, lineage_of, notes


def modal_text(modal: ConfirmBatchModal) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(modal._what())
    return console.export_text()


def status(screen) -> str:
    return str(screen.query_one("#status").render())


def ids_in(path: Path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM sessions")}


def message_counts(path: Path) -> dict[str, int]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT session_id, COUNT(*) FROM messages GROUP BY session_id").fetchall())


def give_workspaces(path: Path, version: int) -> None:
    """The v30 fixture names one repository: give two more sessions another one (the test's
    own setup, written as upstream would: the git columns of v30)."""
    if version != 30:
        return
    with sqlite3.connect(path) as conn:
        rows = [r[0] for r in conn.execute(
            "SELECT id FROM sessions WHERE git_repo_root IS NULL AND cwd IS NULL AND source = 'cli' "
            "AND parent_session_id IS NULL ORDER BY id LIMIT 2"
        )]
        assert len(rows) == 2
        conn.executemany(
            "UPDATE sessions SET cwd = '/home/u/infra', git_repo_root = '/home/u/infra', git_branch = 'main' "
            "WHERE id = ?", [(r,) for r in rows],
        )


def workspace_of(path: Path, session_id: str) -> str | None:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        cols = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
        select = "COALESCE(git_repo_root, cwd)" if "git_repo_root" in cols else "cwd"
        return conn.execute(f"SELECT {select} FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]


def option_texts(picker: WorkspacePicker) -> list[str]:
    options = picker.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


# ---------------------------------------------------------------------------- BR-13


@pytest.mark.parametrize("version", [30, 16])
async def test_br13_workspace_picker_counts_narrow_list_and_search(upstream_copy, monkeypatch, version):
    monkeypatch.setenv("HOME", "/home/u")
    path = upstream_copy(version)
    give_workspaces(path, version)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        lst = screen.session_list
        everything = lst.total
        assert "all sources" in status(screen) and "workspace" not in status(screen)

        await pilot.press("w")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, WorkspacePicker)
        texts = option_texts(picker)
        assert "every workspace" in texts[0] and f"{everything:,}" in texts[0]
        counts = {c.workspace: c.count for c in picker.counts}
        assert sum(counts.values()) == everything
        assert any("~/infra" in t for t in texts) and any("~/webapp" in t for t in texts)
        assert any("no workspace" in t for t in texts)

        # Typing narrows the choices; Enter takes the highlighted one.
        await pilot.press(*"infra")
        await settle(pilot)
        assert [t for t in option_texts(picker) if "infra" in t] == option_texts(picker)
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen
        assert screen.workspace == "/home/u/infra"
        assert lst.total == counts["/home/u/infra"]
        rows = [lst.row(i) for i in range(lst.total)]
        assert all(workspace_of(path, r.lineage_root_id or r.id) == "/home/u/infra" for r in rows)
        assert "workspace ~/infra" in status(screen), "the active filter is in the status line"

        # The search is narrowed the same way: every hit lies in the workspace.
        await pilot.press("slash", *"the")
        await settle(pilot)
        view = screen.results.view
        hits = [h for g in view.groups for h in g.hits]
        assert all(workspace_of(path, h.session_id) == "/home/u/infra" for h in hits)
        await pilot.press("escape")
        await settle(pilot)

        # Back to every workspace: the picker opens on the current choice; PgUp goes to the top.
        await pilot.press("w")
        await settle(pilot)
        picker = app.screen
        assert "●" in option_texts(picker)[picker.query_one(OptionList).highlighted]
        await pilot.press("pageup", "enter")
        await settle(pilot)
        assert screen.workspace is None
        assert lst.total == everything
    assert_store_sound(path, version)


async def test_br13_store_without_workspaces_says_so(upstream_copy):
    path = upstream_copy(11)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, WorkspacePicker)
        assert "records no working directory" in str(picker.query_one("#workspace-none").render())
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.workspace is None


# ---------------------------------------------------------------------------- BR-14


async def mark(pilot, screen, count: int) -> list:
    lst = screen.session_list
    lst.move_to(0)
    await settle(pilot)
    rows = [lst.row(i) for i in range(count)]
    for _ in range(count):
        await pilot.press("space")  # marks and moves down
        await settle(pilot)
    assert list(lst.marked) == [r.id for r in rows]
    assert f"{count} marked" in status(screen)
    return rows


@pytest.mark.parametrize("version", [30, 16])
async def test_br14_delete_marked_after_one_confirmation_one_undo_restores_all(upstream_copy, version):
    path = upstream_copy(version)
    before_ids = ids_in(path)
    before_counts = message_counts(path)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        total = screen.session_list.total
        rows = await mark(pilot, screen, 3)

        await pilot.press("d")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ConfirmBatchModal)
        said = modal_text(modal)
        assert "3 conversations" in said
        for row in rows:
            assert (row.title or row.preview or "untitled")[:20] in said
        assert ids_in(path) == before_ids, "nothing is written before the confirmation"
        await pilot.press("y")
        await settle(pilot)
        assert not ({r.id for r in rows} & ids_in(path)), "all three are deleted"
        assert not screen.session_list.marked and "marked" not in status(screen)
        assert any("Deleted 3 conversations" in n and "u to undo all" in n for n in notes(app))
        assert_store_sound(path, version)
        assert screen.session_list.total < total

        await pilot.press("u")
        await settle(pilot)
        assert ids_in(path) == before_ids, "one undo restores all three"
        assert message_counts(path) == before_counts
        assert_store_sound(path, version)
        assert screen.session_list.total == total


@pytest.mark.parametrize("version", [30, 16])
async def test_br14_archive_marked_and_cancel_writes_nothing(upstream_copy, version):
    path = upstream_copy(version)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        rows = await mark(pilot, screen, 2)
        chains = {r.id: lineage_of(path, r.id) for r in rows}
        every = [sid for chain in chains.values() for sid in chain]

        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmBatchModal)
        await pilot.press("n")  # cancelled: nothing written, marks kept
        await settle(pilot)
        assert set(archived_of(path, every).values()) == {0}
        assert len(screen.session_list.marked) == 2

        await pilot.press("a")
        await settle(pilot)
        assert "Archive 2 conversations" in modal_text(app.screen)
        await pilot.press("y")
        await settle(pilot)
        assert set(archived_of(path, every).values()) == {1}, "every lineage of every mark"
        assert_store_sound(path, version)
        await pilot.press("u")
        await settle(pilot)
        assert set(archived_of(path, every).values()) == {0}
        assert_store_sound(path, version)


@pytest.mark.parametrize("version", [30, 16])
async def test_br14_export_offers_the_marked_conversations_first(upstream_copy, tmp_path, version):
    path = upstream_copy(version)
    out = tmp_path / "exports"
    out.mkdir()
    config = AppConfig(animations="none", search_debounce_s=0.0, export_dir=str(out))
    app = make_app(path, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        rows = await mark(pilot, screen, 2)
        await pilot.press("e")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ExportModal)
        first = modal.scopes[0]
        assert first.key == "marked" and first.label.startswith("Marked — 2 conversations")
        buttons = list(modal.query_one("#export-scope", RadioSet).query(RadioButton))
        assert buttons[0].value
        target = out / "marked.jsonl"
        modal.query_one("#export-path", Input).value = str(target)
        await pilot.click("#export-go")
        await settle(pilot)
        assert not isinstance(app.screen, ExportModal)
        assert len(screen.session_list.marked) == 2, "an export keeps the marks"
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    families: set[str] = set()
    db = SessionDB(path, read_only=True)
    try:
        for row in rows:
            families |= set(db.get_descendants(db.get_lineage_root(row.id)))
    finally:
        db.close()
    assert {line["id"] for line in lines} == families


async def test_br14_escape_clears_marks_and_marks_show_in_rows(upstream_copy):
    path = upstream_copy(30)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        rows = await mark(pilot, screen, 2)
        lst = screen.session_list
        assert lst.render_row(rows[0], 100).plain.startswith("✓")
        assert not lst.render_row(lst.row(3), 100).plain.startswith("✓")
        lst.move_to(1)
        await pilot.press("space")  # unmarks the second
        await settle(pilot)
        assert list(lst.marked) == [rows[0].id]
        await pilot.press("escape")
        await settle(pilot)
        assert not lst.marked and "marked" not in status(screen)


# ---------------------------------------------------------------------------- snapshots


def test_snapshot_br13_workspace_picker(upstream_copy, monkeypatch, snap_compare):
    monkeypatch.setenv("HOME", "/home/u")
    path = upstream_copy(16)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_br13_narrowed_list_with_filters_in_status(upstream_copy, monkeypatch, snap_compare):
    monkeypatch.setenv("HOME", "/home/u")
    path = upstream_copy(16)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("w", *"webapp", "enter")
        await settle(pilot)
        await pilot.press("space")
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)


def test_snapshot_br14_batch_delete_confirmation(upstream_copy, monkeypatch, snap_compare):
    monkeypatch.setenv("HOME", "/home/u")
    path = upstream_copy(30)

    async def run_before(pilot) -> None:
        await settle(pilot)
        for _ in range(7):
            await pilot.press("space")
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)


async def test_br13_keys_typed_right_after_w_go_to_the_picker(upstream_copy, monkeypatch):
    """The picker opens before its counts are read: 'infra' + Enter typed at once after w
    choose that workspace (they once went to the list: e exported, a archived)."""
    monkeypatch.setenv("HOME", "/home/u")
    path = upstream_copy(16)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("w", *"infra", "enter")
        await settle(pilot)
        assert app.screen is screen
        assert screen.workspace == "/home/u/infra"
        assert not any("rchived" in n for n in notes(app))
    assert_store_sound(path, 16)


async def test_br13_a_workspace_path_is_data_not_markup(upstream_copy, monkeypatch):
    monkeypatch.setenv("HOME", "/home/u")
    path = upstream_copy(16)
    hostile = "/srv/[bold]x[/bold]/[@click=app.quit]/\x1b[31mred"
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE sessions SET cwd = ? WHERE cwd = '/home/u/infra'", (hostile,))
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("w", *"bold", "enter")
        await settle(pilot)
        assert screen.workspace == hostile
        shown = "/srv/[bold]x[/bold]/[@click=app.quit]/\u241b[31mred"
        assert shown in status(screen)
        assert shown in screen.query_one("#main")._border_title.plain
        assert app.is_running
