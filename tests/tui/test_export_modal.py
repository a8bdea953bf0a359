"""Export from the browser (`e`): scope, format, path, progress, atomic 0600 files (EX-1..EX-3)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from textual.widgets import Input, ProgressBar, RadioButton, RadioSet, Static

from hermes_state.listing import ListQuery
from hermes_state import SessionDB
from hermes_tui.operations import ExportScope, plan_export, run_export
from hermes_tui.config import AppConfig
from hermes_tui.modals.export import ExportModal

from .conftest import SIZE, make_app, settle
from .dataset import NOW
from .test_delete_undo import notifications, plain

DOCKER = "20261118_074000_a1b2c3"
TRAVEL_ROOT = "20261117_090000_d4e5f6a7"
TRAVEL_TIP = "20261117_100000_e5f6a7b8"
STAMP = "20261118-080000"  # NOW in UTC (the UI tests run with TZ=UTC)


def export_app(db: Path, out: Path, **kw):
    config = AppConfig(animations="none", search_debounce_s=0.0, export_dir=str(out))
    return make_app(db, config=config, **kw)


@pytest.fixture
def out(tmp_path: Path) -> Path:
    directory = tmp_path / "exports"
    directory.mkdir()
    return directory


async def open_export(pilot, keys: tuple[str, ...] = ()) -> ExportModal:
    await settle(pilot)
    if keys:
        await pilot.press(*keys)
        await settle(pilot)
    await pilot.press("e")
    await settle(pilot)
    modal = pilot.app.screen
    assert isinstance(modal, ExportModal)
    return modal


async def choose(pilot, modal: ExportModal, radio_set: str, index: int) -> None:
    buttons = list(modal.query_one(radio_set, RadioSet).query(RadioButton))
    buttons[index].value = True
    await settle(pilot)


def scope_labels(modal: ExportModal) -> list[str]:
    return [plain(b.label).strip() for b in modal.query_one("#export-scope", RadioSet).query(RadioButton)]


def error_text(modal: ExportModal) -> str:
    widget = modal.query_one("#export-error", Static)
    return plain(widget.content).strip() if widget.display else ""


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def exported(db_path: Path, sid: str) -> dict:
    db = SessionDB(db_path, read_only=True)
    try:
        return db.export_session(sid)
    finally:
        db.close()


async def test_ex3_export_this_session_jsonl_parses_back(fixed_db: Path, out: Path) -> None:
    app = export_app(fixed_db, out)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_export(pilot)
        path_field = modal.query_one("#export-path", Input)
        target = out / f"hermes-{DOCKER}-{STAMP}.jsonl"
        assert path_field.value == str(target)
        assert scope_labels(modal)[0] == "This session — Docker deploy pipeline"
        await pilot.press("enter")  # the Export button has the focus
        await settle(pilot)
        assert not isinstance(app.screen, ExportModal)
        assert any(m.startswith("Exported 1 session (") and m.endswith(f"to {target}") for m in notifications(app))
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    lines = read_jsonl(target)
    assert lines == [exported(fixed_db, DOCKER)]
    assert [m["role"] for m in lines[0]["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert lines[0]["messages"][1]["tool_calls"][0]["function"]["name"] == "read_file"
    assert sorted(os.listdir(out)) == [target.name]  # no temporary file left


async def test_export_whole_lineage_as_markdown(fixed_db: Path, out: Path) -> None:
    app = export_app(fixed_db, out)
    async with app.run_test(size=SIZE) as pilot:
        # The travel plans row shows the compression tip; its lineage starts at the root.
        modal = await open_export(pilot, ("j", "j", "j"))
        assert scope_labels(modal)[1] == f"Whole lineage — 2 sessions, root {TRAVEL_ROOT}"
        await choose(pilot, modal, "#export-scope", 1)
        await choose(pilot, modal, "#export-format", 1)
        target = out / f"hermes-lineage-{TRAVEL_ROOT}-{STAMP}.md"
        assert modal.query_one("#export-path", Input).value == str(target)
        await pilot.click("#export-go")
        await settle(pilot)
        assert not isinstance(app.screen, ExportModal)
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# travel plans\n")
    assert "\n# travel plans #2\n" in text
    assert "Plan a week in Kyoto in April" in text and "Day 4: Nara park" in text
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


async def test_export_whole_lineage_as_an_html_page(fixed_db: Path, out: Path) -> None:
    app = export_app(fixed_db, out)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_export(pilot, ("j", "j", "j"))
        await choose(pilot, modal, "#export-scope", 1)
        await choose(pilot, modal, "#export-format", 2)
        target = out / f"hermes-lineage-{TRAVEL_ROOT}-{STAMP}.html"
        assert modal.query_one("#export-path", Input).value == str(target)
        await pilot.click("#export-go")
        await settle(pilot)
        assert not isinstance(app.screen, ExportModal)
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert "Plan a week in Kyoto in April" in page and "Day 4: Nara park" in page
    assert page.count("<article ") == 2  # the two sessions of the lineage, each listed in the sidebar
    assert page.count('<li><a href="#c') == 2
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


async def test_export_every_session_of_the_source_filter(fixed_db: Path, out: Path) -> None:
    app = export_app(fixed_db, out)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_export(pilot, ("s", "down", "enter"))  # filter: cli, from the source picker
        assert app.screen_stack[-2].source_filter == "cli"
        # (the list's conversations under its filter, in the list's unit, each whole)
        assert scope_labels(modal)[2] == "The list (cli) — 3 conversations, 3 sessions"
        assert len(scope_labels(modal)) == 3  # (the whole database is not offered beside a filter)
        await choose(pilot, modal, "#export-scope", 2)
        target = out / f"hermes-cli-{STAMP}.jsonl"
        assert modal.query_one("#export-path", Input).value == str(target)
        await pilot.press("enter")
        await settle(pilot)
    lines = read_jsonl(target)
    assert {s["source"] for s in lines} == {"cli"}
    assert {s["title"] for s in lines} == {"Docker deploy pipeline", "release checklist", "Rust borrow checker notes"}
    assert all(s["messages"] for s in lines)


async def test_export_without_filter_offers_the_list_and_the_whole_database(fixed_db: Path, out: Path) -> None:
    app = export_app(fixed_db, out)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_export(pilot)
        total = app.screen_stack[-2].session_list.total
        # The list's total, in its unit, as the list states it; then every session there is.
        assert scope_labels(modal)[2].startswith(f"The list — {total} conversations, ")
        assert scope_labels(modal)[3] == "The whole database — 9 sessions, hidden ones too"
        await choose(pilot, modal, "#export-scope", 3)
        await pilot.press("enter")
        await settle(pilot)
    lines = read_jsonl(out / f"hermes-all-{STAMP}.jsonl")
    assert len(lines) == 9 and "tool" in {s["source"] for s in lines}


@pytest.mark.skipif(not hasattr(SessionDB, "search"), reason="SessionDB.search (search engineer) not merged yet")
async def test_export_sessions_of_the_current_search(fixed_db: Path, out: Path) -> None:
    app = export_app(fixed_db, out)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"docker")
        await settle(pilot)
        app.screen.results.focus()  # leave the search field without clearing the query
        modal = await open_export(pilot)
        label = next(l for l in scope_labels(modal) if l.startswith("Sessions matching"))
        index = scope_labels(modal).index(label)
        await choose(pilot, modal, "#export-scope", index)
        await pilot.press("enter")
        await settle(pilot)
    files = list(out.glob("hermes-search-docker-*.jsonl"))
    assert len(files) == 1
    lines = read_jsonl(files[0])
    ids = {s["id"] for s in lines}
    assert DOCKER in ids
    for session in lines:
        text = json.dumps(session["messages"]).lower()
        assert "docker" in text


@pytest.mark.parametrize(
    "case, expected",
    [
        ("missing", "does not exist"),
        ("directory", "is a directory"),
        ("parent-is-file", "is not a folder"),
    ],
)
async def test_unwritable_path_reported_in_modal_and_no_file_left(
    fixed_db: Path, out: Path, tmp_path: Path, case: str, expected: str
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file")
    paths = {
        "missing": tmp_path / "no-such-dir" / "x.jsonl",
        "directory": out,
        "parent-is-file": blocker / "x.jsonl",
    }
    app = export_app(fixed_db, out)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_export(pilot)
        modal.query_one("#export-path", Input).value = str(paths[case])
        await pilot.click("#export-go")
        await settle(pilot)
        assert app.screen is modal
        assert expected in error_text(modal)
        assert not any(m.startswith("Exported") for m in notifications(app))
    assert os.listdir(out) == []
    assert not (tmp_path / "no-such-dir").exists()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores directory modes")
async def test_read_only_directory_reported_in_modal(fixed_db: Path, out: Path) -> None:
    out.chmod(0o555)
    try:
        app = export_app(fixed_db, out)
        async with app.run_test(size=SIZE) as pilot:
            modal = await open_export(pilot)
            await pilot.click("#export-go")
            await settle(pilot)
            assert app.screen is modal
            assert "permission denied" in error_text(modal)
        assert os.listdir(out) == []
    finally:
        out.chmod(0o755)


async def test_existing_file_is_replaced_only_after_a_second_confirmation(fixed_db: Path, out: Path) -> None:
    target = out / "mine.jsonl"
    target.write_text("keep me")
    app = export_app(fixed_db, out)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_export(pilot)
        modal.query_one("#export-path", Input).value = "mine.jsonl"  # relative: in the export dir
        await pilot.click("#export-go")
        await settle(pilot)
        assert app.screen is modal
        assert error_text(modal) == f"{target} exists — press Export again to replace it."
        assert target.read_text() == "keep me"
        # ctrl+s: a second click within 0.2 s would be swallowed by the button's press effect.
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ExportModal)
    assert read_jsonl(target) == [exported(fixed_db, DOCKER)]
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


async def test_large_export_shows_progress_and_writes_every_session(tmp_path: Path, out: Path) -> None:
    path = tmp_path / "state.db"
    db = SessionDB(path)
    db._execute_write(
        lambda c: c.executemany(
            "INSERT INTO sessions (id, source, started_at, title) VALUES (?, 'cli', ?, ?)",
            [(f"s{i:05d}", NOW - i * 60.0, f"bulk {i}") for i in range(400)],
        )
    )
    db.close()
    app = export_app(path, out)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_export(pilot)
        await choose(pilot, modal, "#export-scope", 3)
        bar = modal.query_one("#export-progress", ProgressBar)
        assert not bar.display  # shown only while writing
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, ExportModal)
    # The bar was sized from the plan (400) and moved by the worker's progress messages.
    assert (bar.total, bar.progress) == (400, 400)
    lines = read_jsonl(out / f"hermes-all-{STAMP}.jsonl")
    assert len(lines) == 400


# ---------------------------------------------------------------------------- the functions


def test_cancelled_export_leaves_no_file(fixed_db: Path, out: Path) -> None:
    db = SessionDB(fixed_db, read_only=True)
    try:
        plan = plan_export(db, DOCKER, query=None, listed=ListQuery(), directory=out, now=NOW)
        scope = plan.scopes[2]
        target = plan.default_path(scope, "jsonl")
        calls: list[tuple[int, int]] = []
        outcome = run_export(db, scope, "jsonl", target, progress=lambda d, t: calls.append((d, t)),
                             cancelled=lambda: len(calls) > 3)
        assert outcome.cancelled and not outcome.ok
        assert os.listdir(out) == []
        outcome = run_export(db, scope, "jsonl", target, progress=lambda d, t: calls.append((d, t)))
        assert outcome.ok and outcome.sessions == 9
        assert stat.S_IMODE(target.stat().st_mode) == 0o600
    finally:
        db.close()


def test_plan_names_files_per_scope(fixed_db: Path, out: Path) -> None:
    db = SessionDB(fixed_db, read_only=True)
    try:
        plan = plan_export(db, TRAVEL_TIP, query=None, listed=ListQuery(source="discord"), directory=out, now=NOW)
        keys = [s.key for s in plan.scopes]
        assert keys == ["session", "lineage", "listed"]
        lineage = plan.scopes[1]
        assert lineage.session_ids == (TRAVEL_ROOT, TRAVEL_TIP) and lineage.count == 2
        assert plan.default_path(plan.scopes[0], "md") == out / f"hermes-{TRAVEL_TIP}-{STAMP}.md"
        assert plan.default_path(plan.scopes[2], "jsonl") == out / f"hermes-discord-{STAMP}.jsonl"
        empty = plan_export(db, None, query=None, listed=ListQuery(source="matrix"), directory=out, now=NOW)
        assert [s.unavailable for s in empty.scopes] == ["the list is empty"]
    finally:
        db.close()


def test_export_of_sessions_deleted_meanwhile_writes_no_file(fixed_db: Path, out: Path) -> None:
    db = SessionDB(fixed_db, read_only=True)
    try:
        scope = ExportScope("session", "gone", "gone", 1, ("no-such-session",))
        outcome = run_export(db, scope, "jsonl", out / "gone.jsonl")
        assert not outcome.ok
        assert outcome.error == "Nothing to export: the sessions no longer exist. No file was written."
        assert os.listdir(out) == []
    finally:
        db.close()


async def test_every_session_counts_what_it_writes_on_a_v30_store(upstream_copy, out: Path) -> None:
    """A v30 store holds archived and hidden sessions the list leaves out; "every session"
    writes them too, so its label counts them (it said 12 of the 14 it wrote)."""
    path = upstream_copy(30)
    rows = SessionDB(path, read_only=True)
    try:
        every = rows._fetchone("SELECT COUNT(*) FROM sessions")[0]
        assert rows._fetchone("SELECT COUNT(*) FROM sessions WHERE archived = 1 OR hidden = 1")[0]
    finally:
        rows.close()
    app = export_app(path, out)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_export(pilot)
        assert scope_labels(modal)[3] == f"The whole database — {every} sessions, hidden ones too"
        await choose(pilot, modal, "#export-scope", 3)
        await pilot.press("enter")
        await settle(pilot)
    written = read_jsonl(next(out.glob("hermes-all-*.jsonl")))
    assert len(written) == every


def test_a_long_list_is_chosen_when_the_export_runs_and_written_whole(fixed_db: Path, out: Path, monkeypatch) -> None:
    """Choosing every member of a long list took seconds before the dialog could open: past
    a bound the scope holds the list's query, says its conversations, and the export chooses
    them -- each whole, as the eager scope would have."""
    import hermes_tui.operations as operations

    db = SessionDB(fixed_db, read_only=True)
    try:
        eager = plan_export(db, None, query=None, listed=ListQuery.human(None), directory=out, now=NOW).scopes[0]
        monkeypatch.setattr(operations, "EAGER_CONVERSATIONS", 1)
        lazy = plan_export(db, None, query=None, listed=ListQuery.human(None), directory=out, now=NOW).scopes[0]
        assert eager.key == lazy.key == "listed" and eager.session_ids and lazy.session_ids is None
        assert lazy.conversations == eager.conversations == lazy.count
        assert lazy.label == f"The list — {lazy.conversations:,} conversations (each whole)"
        outcome = run_export(db, lazy, "jsonl", out / "lazy.jsonl")
        assert outcome.ok and outcome.sessions == len(eager.session_ids)
        assert [s["id"] for s in read_jsonl(out / "lazy.jsonl")] == list(eager.session_ids)
    finally:
        db.close()


def test_the_search_scope_takes_hidden_sessions_when_the_list_shows_them(upstream_copy, out: Path) -> None:
    """The export's "sessions matching" scope is the search pane's: a hidden session's hit is
    in it when hidden rows are shown (H), and not otherwise."""
    db = SessionDB(upstream_copy(30), read_only=True)
    try:
        def matching(listed: ListQuery) -> tuple[str, ...]:
            plan = plan_export(db, None, query="HIDDENSESSIONWORD", listed=listed, directory=out, now=NOW)
            return next(s for s in plan.scopes if s.key == "search").session_ids

        assert matching(ListQuery.human(None)) == ()
        assert matching(ListQuery.human(None).with_(include_hidden=True)) == ("20260921_161000_h1",)
    finally:
        db.close()
