"""The browser for how people use Hermes now: archive, pin, last activity first,
hidden and delegate rows, several at once, workspaces -- on stores written by upstream v16 and v30.

After every write the store itself is checked: the values written, ``schema_version``
unchanged and ``PRAGMA integrity_check``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.listing.pins import pinned_in_file
from hermes_state.listing import ListQuery
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
        # Every row of the archived view is archived: "[archived]" on each said nothing;
        # the view's title and status line say it once.
        assert "[archived]" not in lst.render_row(archived_rows[0], 100).plain
        assert "archived only" in str(screen.query_one("#status").render())
        await pilot.press("v")
        await settle(pilot)
        assert screen.view == "all"
        shown = lst.row(next(i for i in range(lst.total) if lst.row(i) and lst.row(i).id == row.id))
        assert "[archived]" in lst.render_row(shown, 100).plain  # among active ones, it is said
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


# ---------------------------------------------------------------------------- BR-10


def ranked(path: Path, **kw) -> list[str]:
    from hermes_state.visibility import INTERNAL_SOURCES

    db = SessionDB(path, read_only=True)
    try:
        return [r.id for r in db.list_summaries(ListQuery.from_options(exclude_sources=list(INTERNAL_SOURCES), **kw), limit=100)]
    finally:
        db.close()


@pytest.mark.parametrize("version", [30, 16])
async def test_br10_last_activity_first_and_start_order_toggle(upstream_copy, version):
    from hermes_state.timefmt import relative_time

    from .conftest import frozen_clock

    path = upstream_copy(version)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        lst = screen.session_list
        rows = [lst.row(i) for i in range(lst.total)]
        assert [r.id for r in rows] == ranked(path, order_by_last_active=True)
        unpinned = [r for r in rows if not r.pinned]
        stamps = [r.last_active or r.started_at for r in unpinned]
        assert stamps == sorted(stamps, reverse=True), "newest activity first"
        assert relative_time(rows[0].last_active or rows[0].started_at, now=frozen_clock()) in lst.render_row(rows[0], 120).plain
        assert "by last activity" in str(screen.query_one("#status").render())

        await pilot.press("o")
        await settle(pilot)
        rows = [lst.row(i) for i in range(lst.total)]
        assert [r.id for r in rows] == ranked(path, order_by_last_active=False)
        assert "by start" in str(screen.query_one("#status").render())
        assert lst.time_field == "started_at"
        assert relative_time(rows[0].started_at, now=frozen_clock()) in lst.render_row(rows[0], 120).plain
        await pilot.press("o")
        await settle(pilot)
        assert [lst.row(i).id for i in range(lst.total)] == ranked(path, order_by_last_active=True)


def _both_paths(path: Path, monkeypatch, **kw) -> tuple[list[str], list[str]]:
    import hermes_state.listing.activity as activity_module

    db = SessionDB(path, read_only=True)
    try:
        fast = [r["id"] for r in db.list_sessions_rich(order_by_last_active=True, **kw)]
        monkeypatch.setattr(activity_module, "ACTIVITY_WALK_ROWS", 0)
        full = [r["id"] for r in db.list_sessions_rich(order_by_last_active=True, **kw)]
        monkeypatch.undo()
        return fast, full
    finally:
        db.close()


@pytest.mark.parametrize("version", [30, 16, 11])
@pytest.mark.parametrize(
    "options",
    [{}, {"exclude_sources": ["tool", "kanban", "oneshot"]}, {"include_archived": True},
     {"archived_only": True}, {"include_hidden": True}, {"offset": 2, "limit": 3}],
)
def test_br10_fast_first_page_ranks_as_the_full_query(upstream_copy, monkeypatch, version, options):
    path = upstream_copy(version)
    fast, full = _both_paths(path, monkeypatch, **{"limit": 50, **options})
    assert fast == full


def test_br10_fast_first_page_on_a_generated_corpus(tmp_path, monkeypatch):
    from hermes_workload.corpus import generate_corpus

    path = tmp_path / "corpus.db"
    generate_corpus(path, messages=6000, seed=3, now=1767225600.0)
    for offset in (0, 50, 150):
        fast, full = _both_paths(path, monkeypatch, limit=50, offset=offset, exclude_sources=["tool"])
        assert fast == full and len(fast) == 50


# ---------------------------------------------------------------------------- BR-15


@pytest.mark.parametrize("version", [30, 16])
async def test_br15_toggle_shows_hidden_internal_and_delegate_runs_marked(upstream_copy, version):
    path = upstream_copy(version)
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        lst = screen.session_list
        before = {lst.row(i).id for i in range(lst.total)}
        assert not any(lst.row(i).delegate or lst.row(i).hidden for i in range(lst.total))
        await pilot.press("H")
        await settle(pilot)
        rows = [lst.row(i) for i in range(lst.total)]
        assert before < {r.id for r in rows}
        delegates = [r for r in rows if r.delegate]
        internal = [r for r in rows if r.source in ("tool", "kanban", "oneshot")]
        assert delegates and internal
        assert all("[delegate]" in lst.render_row(r, 140).plain for r in delegates)
        assert all("[internal]" in lst.render_row(r, 140).plain for r in internal)
        if version >= 30:
            hidden = [r for r in rows if r.hidden]
            assert hidden and all("[hidden]" in lst.render_row(r, 140).plain for r in hidden)
        assert "delegate runs shown" in str(screen.query_one("#status").render())
        await pilot.press("H")
        await settle(pilot)
        assert {lst.row(i).id for i in range(lst.total)} == before


async def test_br13_detail_pane_shows_the_workspace(shared_fixtures_dir, tmp_path, monkeypatch) -> None:
    """cwd, git repository and branch of the highlighted session (v30 columns), home as ~."""
    import shutil

    from hermes_tui.widgets.detail import DetailPane
    from hermes_tui.widgets.session_list import SessionList

    from .conftest import SIZE, make_app, settle

    monkeypatch.setenv("HOME", "/home/u")
    db = tmp_path / "state.db"
    shutil.copyfile(shared_fixtures_dir / "upstream_v30.db", db)
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        index = next(i for i in range(lst.total) if lst.row(i) and lst.row(i).id.endswith("_s1"))
        lst.move_to(index)
        await settle(pilot)
        pane = app.screen.query_one(DetailPane)
        assert pane.summary.id.endswith("_s1")
        text = app.export_screenshot()
        import html
        import re
        plain = html.unescape(" ".join(re.findall(r">([^<]*)</text>", text))).replace("\xa0", " ")
        assert "~/webapp" in plain and "feat/auth" in plain


# ---------------------------------------------------------------------------- UC-3 in search


async def test_search_marks_archived_and_finds_hidden_only_with_the_toggle(upstream_copy):
    """Search reads as the list does (UC-3): an archived conversation is found and marked, a
    hidden session's messages and title are found only while hidden rows are shown (BR-15),
    and then marked too."""
    from hermes_tui.widgets.search import SearchResults

    app = make_app(upstream_copy(30))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        results = app.screen.query_one(SearchResults)

        def shown() -> str:
            return "\n".join(row.text.plain for row in results._rows)

        async def search(text: str) -> str:
            await pilot.press("/", *text)
            await settle(pilot)
            found = shown()
            await pilot.press("escape")
            await settle(pilot)
            return found

        assert " ▌ [archived] taxes 2025  whatsapp · 1 hit" in (await search("ARCHIVEDWORD")).splitlines()
        hidden_off = await search("HIDDENSESSIONWORD")
        assert "Bot Chat" not in hidden_off and "No message, title or id matches" in hidden_off
        assert "No message, title or id matches “Bot Chat”" in await search("Bot Chat")
        await pilot.press("H")
        await settle(pilot)
        assert " ▌ [hidden] Bot Chat  telegram · 1 hit" in (await search("HIDDENSESSIONWORD")).splitlines()
        titled = (await search("Bot Chat")).splitlines()
        assert any(line.startswith("   [hidden] Bot Chat  20260921_161000_h1") for line in titled), titled


# ---------------------------------------------------------------------------- the empty list


def empty_text(app) -> str:
    """The empty list's sentence as drawn (wrapped to the pane), joined again."""
    lst = app.screen.session_list
    assert lst.loaded and lst.total == 0
    lines = [lst.render_line(y).text.strip() for y in range(1, lst.size.height)]
    assert all(lines[: lines.index("")]) and not any(lines[lines.index(""):])
    return " ".join(lines[: lines.index("")])


async def test_an_empty_list_says_why_never_no_sessions_over_a_store_that_has_some(tmp_path, upstream_copy):
    fresh = tmp_path / "fresh" / "state.db"
    fresh.parent.mkdir()
    SessionDB(fresh).close()
    app = make_app(fresh)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert empty_text(app) == "No sessions yet — new ones appear here as they are written."

    db = SessionDB(fresh)
    db.create_session("only", "cli")
    db.append_message("only", "user", "a conversation put away")
    db.set_session_archived("only", True)
    db.close()
    app = make_app(fresh)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert empty_text(app) == (
            "No conversation to list: every session in the store is archived, hidden, an internal run "
            "or a delegate run (v changes the view; H shows hidden rows)."
        )
        await pilot.press("v")  # archived only: the conversation is there
        await settle(pilot)
        assert app.screen.session_list.total == 1

    app = make_app(upstream_copy(30))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        screen.workspace = "/home/u/webapp"
        screen._reload_from_top()
        await settle(pilot)
        assert screen.session_list.total == 1
        await pilot.press("a")  # archive its one conversation
        await settle(pilot)
        said = empty_text(app)
        assert said.startswith("No conversation matches the filters: ") and "workspace /home/u/webapp" in said
