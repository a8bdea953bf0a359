"""UC-11: a v30 session that started on one platform and is routed to another
(``created_source`` beside ``source``) shows ``created→current`` in the browser's list and
detail pane; a session that never moved shows its source alone (upstream's v30 store)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from textual.geometry import Region

from hermes_tui.widgets.detail import DetailPane
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle

MOVED = "20260921_100000_g1"
STAYED = "20260921_090000_s1"


def _store(upstream_copy, tmp_path: Path) -> Path:
    path = tmp_path / "v30" / "state.db"
    path.parent.mkdir()
    shutil.copyfile(upstream_copy(30), path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE sessions SET created_source = 'tui' WHERE id = ?", (MOVED,))
    conn.execute("UPDATE sessions SET created_source = 'cli' WHERE id = ?", (STAYED,))
    conn.commit()
    conn.close()
    return path


async def test_a_session_that_moved_platforms_shows_created_to_current(upstream_copy, tmp_path) -> None:
    app = make_app(_store(upstream_copy, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        ids = [lst.row(i).id for i in range(lst.total) if lst.row(i) is not None]
        lines = [strip.text for strip in lst.render_lines(Region(0, 0, lst.size.width, lst.size.height))]
        moved_line = lines[ids.index(MOVED)]
        stayed_line = lines[ids.index(STAYED)]
        assert "tui\u2192teleg\u2026" in moved_line  # cut to the source column, with an ellipsis
        assert "\u2192" not in stayed_line and " cli " in stayed_line
        for _ in range(ids.index(MOVED)):
            await pilot.press("j")
        await settle(pilot)
        detail = app.screen.query_one(DetailPane)
        assert detail.summary.id == MOVED and detail.summary.shown_source == "tui\u2192telegram"
        shown = "\n".join(strip.text for strip in detail.render_lines(Region(0, 0, detail.size.width, detail.size.height)))
        assert "tui\u2192telegram" in shown


def test_the_plain_fallback_shows_created_to_current_too(upstream_copy, tmp_path, monkeypatch, capsys) -> None:
    import io
    import sys

    from hermes_tui.cli import main

    path = _store(upstream_copy, tmp_path)
    monkeypatch.setenv("HERMES_HOME", str(path.parent))
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    assert main(["sessions", "browse", "--plain"]) == 130
    err = capsys.readouterr().err
    assert any(line.endswith("  tui\u2192telegram") for line in err.splitlines())
    assert not any(line.endswith("  cli\u2192cli") for line in err.splitlines())


def test_snapshot_created_to_current_in_list_and_detail(snap_compare, upstream_copy, tmp_path) -> None:
    """How ``tui→telegram`` looks: cut to the list's source column, whole in the detail pane."""
    path = _store(upstream_copy, tmp_path)

    async def run_before(pilot) -> None:
        await settle(pilot)
        lst = pilot.app.screen.query_one(SessionList)
        ids = [lst.row(i).id for i in range(lst.total) if lst.row(i) is not None]
        for _ in range(ids.index(MOVED)):
            await pilot.press("j")
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=SIZE, run_before=run_before)
