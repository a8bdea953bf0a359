"""The browser across Hermes profiles (PF-3, PF-5, PF-6), in Pilot, on a Hermes root whose
default store and profiles are copies of upstream's stores (v30 upgraded, v30, v16) plus a
profile whose store is garbage: one list of every readable profile, a profile filter with
counts, search ranked together, marks and writes each reaching its own store. The broken
profile is named once; after every write each store is checked (integrity, schema)."""

from __future__ import annotations

import asyncio
import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

from textual.widgets import Input, OptionList

from hermes_state import SessionDB
from hermes_state.profiles import discover
from hermes_tui.data_profiles import WINDOW_SHARE_MIN, window_shares
from hermes_tui.modals.profile_picker import ProfilePicker
from hermes_tui.modals.rename import RenameModal

from .conftest import SIZE, make_app, settle
from .test_delete_undo import modal_text

READABLE = ("default", "coder", "old")


def store(root: Path, name: str) -> Path:
    return root / "state.db" if name == "default" else root / "profiles" / name / "state.db"


def profiles_app(root: Path, tmp_path: Path, **kwargs):
    profiles = discover({"HERMES_HOME": str(root)}).with_stores()
    kwargs.setdefault("trash_dir", tmp_path / "trash")
    return make_app(profiles[0].db_path, profiles=profiles, cache_dir=tmp_path / "cache", **kwargs)


def listed_alone(path: Path) -> int:
    """How many conversations the browser lists for this store on its own (by activity)."""
    from hermes_state import ListQuery
    from hermes_state.visibility import INTERNAL_SOURCES

    db = SessionDB(path, read_only=True)
    try:
        return db.count_listed(ListQuery.from_options(None, list(INTERNAL_SOURCES), by_activity=True))
    finally:
        db.close()


def ids_in(path: Path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return {r[0] for r in conn.execute("SELECT id FROM sessions")}


def sound(path: Path) -> tuple:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return (conn.execute("SELECT version FROM schema_version").fetchone(),
                sorted(conn.execute("SELECT type, name, sql FROM sqlite_master")))


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


def rows_of(lst) -> list:
    return [lst.row(i) for i in range(lst.total)]


async def test_every_readable_profile_is_one_list_and_the_broken_one_is_named_once(profiles_home, tmp_path):
    app = profiles_app(profiles_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        assert lst.total == sum(listed_alone(store(profiles_home, n)) for n in READABLE)
        rows = rows_of(lst)
        assert {r.profile for r in rows} == set(READABLE)
        assert all(r.id.startswith(f"{r.profile}:") for r in rows)
        # In the list's order: newest last activity first, merged across the stores.
        times = [r.last_active or r.started_at for r in rows if not r.pinned]
        assert times == sorted(times, reverse=True)
        # The profile column: each row names its profile.
        width = lst.scrollable_content_region.width
        assert f"  {rows[0].profile}" in lst.render_row(rows[0], width).plain
        broken = [n for n in notes(app) if "broken" in n]
        assert len(broken) == 1 and "not a SQLite database" in broken[0]
        # Reading again (a refresh, a search) does not say it again.
        await pilot.press("slash", *"docker")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert len([n for n in notes(app) if "broken" in n]) == 1


async def test_the_profile_filter_counts_each_profile_and_narrows_list_and_search(profiles_home, tmp_path):
    app = profiles_app(profiles_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        lst = screen.session_list
        everything = lst.total
        await pilot.press("P")
        await settle(pilot)
        picker = app.screen
        assert isinstance(picker, ProfilePicker)
        expected = {name: listed_alone(store(profiles_home, name)) for name in READABLE}
        assert picker.counts == expected and sum(expected.values()) == everything
        options = picker.query_one(OptionList)
        texts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert "all profiles" in texts[0] and any("broken" in t and "left out" in t for t in texts)
        # Choose "old" (all, default, coder, old).
        await pilot.press("down", "down", "down", "enter")
        await settle(pilot)
        assert app.screen is screen
        assert lst.total == expected["old"]
        rows = rows_of(lst)
        assert all(r.id.startswith("old:") for r in rows)
        assert all(r.profile is None for r in rows)  # (one profile shown: no column)
        assert "profile old" in str(screen.query_one("#status").render())
        await pilot.press("slash", *"the")
        await settle(pilot)
        groups = screen.results.view.groups
        assert groups and all(g.root_id.startswith("old:") for g in groups)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("P")
        await settle(pilot)
        await pilot.press("pageup", "enter")
        await settle(pilot)
        assert lst.total == everything


async def test_search_across_profiles_is_one_answer_ranked_by_score(profiles_home, tmp_path):
    app = profiles_app(profiles_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"docker")
        await settle(pilot)
        view = app.screen.results.view
        profiles = {g.root_id.split(":")[0] for g in view.groups}
        assert {"default", "coder"} <= profiles
        scores = [g.hits[0].score for g in view.groups if g.hits and g.hits[0].score is not None]
        assert scores == sorted(scores, reverse=True)
        assert all(h.session_id.split(":")[0] == g.root_id.split(":")[0] for g in view.groups for h in g.hits)
        assert all(g.label.startswith(g.root_id.split(":")[0] + ": ") for g in view.groups)


async def test_a_rename_reaches_the_rows_own_store_when_ids_collide(profiles_home, tmp_path):
    before = {name: sound(store(profiles_home, name)) for name in READABLE}
    shared = ids_in(store(profiles_home, "default")) & ids_in(store(profiles_home, "old"))
    app = profiles_app(profiles_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        index = next(i for i, r in enumerate(rows_of(lst)) if r.profile == "old" and r.id.split(":", 1)[1] in shared)
        target = lst.row(index).id.split(":", 1)[1]
        lst.move_to(index)
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, RenameModal)
        modal.query_one("#rename-input", Input).value = "only in old"
        await pilot.press("enter")
        await settle(pilot)
        assert lst.current.id == f"old:{target}" and lst.current.title == "only in old"
    for name in READABLE:
        db = SessionDB(store(profiles_home, name), read_only=True)
        try:
            title = db.get_session_title(target)
        finally:
            db.close()
        assert (title == "only in old") == (name == "old")
        assert sound(store(profiles_home, name)) == before[name]  # (no DDL; integrity ok)


async def test_marks_across_profiles_archive_each_in_its_own_store_and_undo(profiles_home, tmp_path):
    app = profiles_app(profiles_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        rows = rows_of(lst)
        first = {}
        for i, r in enumerate(rows):
            if r.profile in ("default", "coder") and r.profile not in first and not r.pinned:
                first[r.profile] = i
        for i in first.values():
            lst.move_to(i)
            await settle(pilot)
            await pilot.press("space")
            await settle(pilot)
        marked = sorted(lst.marked)
        assert len(marked) == 2 and {m.split(":")[0] for m in marked} == {"default", "coder"}
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("y")  # (the batch's one confirmation)
        await settle(pilot)
        for qualified in marked:
            name, session_id = qualified.split(":", 1)
            db = SessionDB(store(profiles_home, name), read_only=True)
            try:
                assert db.get_session(session_id)["archived"]
            finally:
                db.close()
        await pilot.press("u")
        await settle(pilot)
        for qualified in marked:
            name, session_id = qualified.split(":", 1)
            db = SessionDB(store(profiles_home, name), read_only=True)
            try:
                assert not db.get_session(session_id)["archived"]
            finally:
                db.close()
    for name in READABLE:
        sound(store(profiles_home, name))


async def test_read_and_unread_across_profiles_stamp_the_rows_own_store_only(profiles_home, tmp_path):
    """``m`` / ``M`` and opening a transcript across profiles once failed with "ProfilesData
    has no attribute unread_problem" and wrote nothing. Each now reaches the row's own store:
    a v30 profile is stamped (``last_read_at`` only), the v16 one is named and left as it was."""
    import hashlib

    old_before = hashlib.sha256(store(profiles_home, "old").read_bytes()).hexdigest()
    coder_schema = sound(store(profiles_home, "coder"))
    app = profiles_app(profiles_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        rows = rows_of(lst)
        coder = next(i for i, r in enumerate(rows) if r.profile == "coder")
        coder_id = rows[coder].id.split(":", 1)[1]

        def last_read() -> list:
            with sqlite3.connect(f"file:{store(profiles_home, 'coder')}?mode=ro", uri=True) as conn:
                root = conn.execute("SELECT id FROM sessions WHERE id = ?", (coder_id,)).fetchone()[0]
                return [r[0] for r in conn.execute("SELECT last_read_at FROM sessions WHERE id = ?", (root,))]

        lst.move_to(coder)
        await settle(pilot)
        await pilot.press("M")
        await settle(pilot)
        assert "Marked unread." in notes(app), notes(app)
        assert not any("attribute" in n for n in notes(app))
        await pilot.press("m")
        await settle(pilot)
        assert last_read() and last_read()[0] is not None
        lst.move_to(next(i for i, r in enumerate(rows_of(lst)) if r.profile == "old"))
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        assert any(n.startswith("Nothing was changed: unread is not tracked") and "profile 'old'" in n
                   for n in notes(app)), notes(app)
    assert hashlib.sha256(store(profiles_home, "old").read_bytes()).hexdigest() == old_before
    assert sound(store(profiles_home, "coder")) == coder_schema


async def test_a_delete_across_profiles_goes_to_its_store_and_undo_brings_it_back(profiles_home, tmp_path):
    app = profiles_app(profiles_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        shared = ids_in(store(profiles_home, "default")) & ids_in(store(profiles_home, "old"))
        index = next(i for i, r in enumerate(rows_of(lst))
                     if r.profile == "old" and not r.pinned and r.id.split(":", 1)[1] in shared)
        qualified = lst.row(index).id
        session_id = qualified.split(":", 1)[1]
        lst.move_to(index)
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert session_id not in ids_in(store(profiles_home, "old"))
        assert session_id in ids_in(store(profiles_home, "default"))  # (the same id, elsewhere: untouched)
        await pilot.press("u")
        await settle(pilot)
        assert session_id in ids_in(store(profiles_home, "old"))
    for name in READABLE:
        sound(store(profiles_home, name))


async def test_the_delete_dialogs_restore_command_brings_the_session_back_into_its_profile(profiles_home, tmp_path):
    """The way back the dialog names works as printed, in a terminal after the browser is
    gone: "meeting notes" of ``old`` (whose id the default store holds too) comes back into
    ``old``'s store, and no other store changes."""
    data = tmp_path / "data"
    app = profiles_app(profiles_home, tmp_path, trash_dir=data / "trash")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        index = next(i for i, r in enumerate(rows_of(lst)) if r.profile == "old" and r.title == "meeting notes")
        session_id = lst.row(index).id.split(":", 1)[1]
        assert session_id in ids_in(store(profiles_home, "default"))  # (the same id in two profiles)
        lst.move_to(index)
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        said = " ".join(modal_text(app.screen).split())
        await pilot.press("y")
        await settle(pilot)
    assert session_id not in ids_in(store(profiles_home, "old"))
    printed = said[said.index("kept in the trash for 7 days: ") + len("kept in the trash for 7 days: "):]
    words = shlex.split(printed)
    assert words[:3] == ["hermes", "sessions", "restore"] and session_id in words and "old" in words
    others = {name: store(profiles_home, name).read_bytes() for name in ("default", "coder")}
    env = dict(os.environ, HERMES_HOME=str(profiles_home), HERMES_SESSIONS_DATA_DIR=str(data),
               PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    restored = subprocess.run([sys.executable, "-m", "hermes_tui.cli", *words[1:]], capture_output=True,
                              text=True, env=env, timeout=120)
    assert restored.returncode == 0, restored.stderr
    assert session_id in ids_in(store(profiles_home, "old"))
    assert {name: store(profiles_home, name).read_bytes() for name in others} == others
    for name in READABLE:
        sound(store(profiles_home, name))


async def test_a_profile_browsed_on_its_own_is_named_in_the_delete_dialogs_restore_command(profiles_home, tmp_path):
    """``browse -p old``: one store, no profile column, but the command the dialog prints
    names the profile, as a delete from the command line with ``-p old`` does (PF-7)."""
    app = make_app(store(profiles_home, "old"), trash_dir=tmp_path / "trash", cache_dir=tmp_path / "cache",
                   profile="old")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        session_id = lst.row(0).id
        assert ":" not in session_id
        await pilot.press("d")
        await settle(pilot)
        said = " ".join(modal_text(app.screen).split())
        assert f"kept in the trash for 7 days: hermes sessions restore -p old {session_id}" in said
        await pilot.press("escape")
        await settle(pilot)
    assert session_id in ids_in(store(profiles_home, "old"))


def test_snapshot_profile_filter(snap_compare, profiles_home, tmp_path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.clear_notifications()  # (the left-out line names a temporary path)
        await pilot.press("P")
        await settle(pilot)

    assert snap_compare(profiles_app(profiles_home, tmp_path), terminal_size=(80, 24), run_before=run_before)


async def test_a_store_newer_than_known_is_listed_and_named_once(profiles_home, tmp_path):
    home = profiles_home / "profiles" / "future"
    home.mkdir()
    (home / "state.db").write_bytes(store(profiles_home, "coder").read_bytes())
    with sqlite3.connect(home / "state.db") as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    conn.close()
    app = profiles_app(profiles_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        assert "future" in {r.profile for r in rows_of(lst)}
        said = [n for n in notes(app) if "future" in n]
        assert len(said) == 1 and "newer" in said[0]
        assert len([n for n in notes(app) if "broken" in n]) == 1


async def test_a_replaced_or_deleted_store_is_noticed_for_its_profile_only(profiles_home, tmp_path, shared_fixtures_dir):
    app = profiles_app(profiles_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        store_door = app.ctx.store
        # Another file put in coder's place (a restore, a sync tool): reopened, said once.
        replacement = tmp_path / "replacement.db"
        replacement.write_bytes((shared_fixtures_dir / "upstream_v16.db").read_bytes())
        replacement.chmod(0o644)
        import os

        os.replace(replacement, store(profiles_home, "coder"))
        assert store_door.check_file() == "replaced"
        await settle(pilot)
        said = [n for n in notes(app) if "was replaced" in n]
        assert len(said) == 1 and said[0].startswith("profile 'coder'"), said
        app.screen.refresh_data()
        await settle(pilot)
        coder_ids = {r.id.split(":", 1)[1] for r in rows_of(app.screen.session_list) if r.profile == "coder"}
        assert coder_ids and all(sid.startswith("20260528_") for sid in coder_ids)
        # old's file deleted: what was read stays, its writes are refused; the others write.
        os.unlink(store(profiles_home, "old"))
        store_door.check_file()
        await settle(pilot)
        assert len([n for n in notes(app) if "was deleted" in n and n.startswith("profile 'old'")]) == 1
        old_row = next(r for r in rows_of(app.screen.session_list) if r.profile == "old")
        outcome = store_door.rename(old_row.id, "nope", expected=old_row.title)
        assert not outcome.ok and "deleted" in (outcome.error or "")
        assert not store(profiles_home, "old").exists()  # (never created again)
        default_row = next(r for r in rows_of(app.screen.session_list) if r.profile == "default" and r.title)
        done = store_door.rename(default_row.id, "still writable", expected=default_row.title)
        assert done.ok
    sound(store(profiles_home, "default"))


async def test_an_export_of_marks_in_two_profiles_is_one_file_with_each_sessions_profile(profiles_home, tmp_path):
    import json

    from textual.widgets import RadioButton, RadioSet

    from hermes_tui.config import AppConfig
    from hermes_tui.modals.export import ExportModal

    out = tmp_path / "exports"
    out.mkdir()
    config = AppConfig(animations="none", search_debounce_s=0.0, export_dir=str(out))
    shared = ids_in(store(profiles_home, "default")) & ids_in(store(profiles_home, "old"))
    app = profiles_app(profiles_home, tmp_path, config=config)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        picks = []
        for name in ("default", "old"):  # the same session id in both: two conversations
            picks.append(next(i for i, r in enumerate(rows_of(lst))
                              if r.profile == name and r.id.split(":", 1)[1] in shared))
        for index in picks:
            lst.move_to(index)
            await settle(pilot)
            await pilot.press("space")
            await settle(pilot)
        marked = sorted(lst.marked)
        await pilot.press("e")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ExportModal)
        first = modal.scopes[0]
        assert first.key == "marked" and "in 2 profiles" in first.label
        assert list(modal.query_one("#export-scope", RadioSet).query(RadioButton))[0].value
        target = out / "marked.jsonl"
        modal.query_one("#export-path", Input).value = str(target)
        await pilot.click("#export-go")
        await settle(pilot)
        assert not isinstance(app.screen, ExportModal)
    records = [json.loads(line) for line in target.read_text().splitlines()]
    exported = {(r["profile"], r["id"]) for r in records}
    for qualified in marked:
        name, session_id = qualified.split(":", 1)
        db = SessionDB(store(profiles_home, name), read_only=True)
        try:
            family = set(db.get_descendants(db.get_lineage_root(session_id)))
        finally:
            db.close()
        assert {(name, sid) for sid in family} <= exported
    assert {r["profile"] for r in records} == {"default", "old"}


async def test_the_profile_cell_starts_a_run_of_its_own_after_the_gap(profiles_home, tmp_path):
    """The blanks before the profile are drawn apart from it: a run of text starting with
    blanks loses them in an SVG renderer (the README's screenshot showed "do…default")."""
    app = profiles_app(profiles_home, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        for y in range(min(lst.total, 6)):
            row = lst.row(y)
            texts = [segment.text for segment in lst.render_line(y)]
            cell = max(i for i, text in enumerate(texts) if row.profile in text)  # (the meta: last)
            assert texts[cell].startswith(row.profile), texts
            assert texts[cell - 1].endswith("  "), texts


async def test_the_lanes_view_shows_every_profiles_gateway_lanes_each_on_its_own_row(profiles_home, tmp_path):
    """Each profile runs its own gateway (``<home>/sessions/sessions.json``): `L` lists the
    lanes of all of them, a lane's id meaning a session of its own profile's store even when
    another store holds the same id, and an edit of any profile's index shows live."""
    from hermes_tui.render.lanes import lane_text
    from hermes_tui.widgets.detail import DetailPane

    from .test_lanes import write_lanes

    shared = ids_in(store(profiles_home, "default")) & ids_in(store(profiles_home, "old"))
    app = profiles_app(profiles_home, tmp_path, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.session_list
        rows = rows_of(lst)
        in_old = next(r for r in rows if r.profile == "old" and r.id.split(":", 1)[1] in shared and not r.pinned)
        in_coder = next(r for r in rows if r.profile == "coder" and not r.pinned)
        write_lanes(profiles_home / "profiles" / "old", session_id=in_old.id.split(":", 1)[1])
        write_lanes(profiles_home / "profiles" / "coder", resume_pending=False, session_id=in_coder.id.split(":", 1)[1])
        deadline = asyncio.get_running_loop().time() + 10
        while len(app.ctx.lanes.live_ids()) < 2 and asyncio.get_running_loop().time() < deadline:
            await pilot.pause(0.05)
        assert app.ctx.lanes.live_ids() == {in_old.id, in_coder.id}
        await pilot.press("L")
        await settle(pilot)
        assert {r.id for r in rows_of(lst)} == {in_old.id, in_coder.id}  # (not default's row of the same id)
        detail = app.screen.query_one(DetailPane)
        for index in range(lst.total):
            lst.move_to(index)
            await settle(pilot)
            flags = lane_text(detail.lane).flags_text
            assert ("resume pending" in flags) == (lst.current.id == in_old.id)
        # The old profile's gateway clears its pending resume: its row's lane says so.
        write_lanes(profiles_home / "profiles" / "old", resume_pending=False, session_id=in_old.id.split(":", 1)[1])
        lst.move_to(next(i for i in range(lst.total) if lst.row(i).id == in_old.id))
        deadline = asyncio.get_running_loop().time() + 10
        while "resume pending" in lane_text(detail.lane).flags_text:
            assert asyncio.get_running_loop().time() < deadline, (
                "the old profile's edited index was not seen: "
                + lane_text(app.ctx.lanes.lane_for(in_old.id)).flags_text)
            await pilot.pause(0.05)
        assert lst.current.id == in_old.id


def _hits(groups) -> list[tuple[str, int]]:
    return [(hit.session_id, hit.id) for group in groups for hit in group.hits]


def _every_page(search, limit: int) -> list:
    pages, offset = [], 0
    while True:
        view = search(offset)
        pages.append(view)
        if not view.more or not (view.hit_count or getattr(view, "more_certain", False)):
            return pages  # (one store's page without hits is its last; across profiles a
            # page the filters left empty still has more)
        offset = view.next_offset
        assert len(pages) < 200


def test_later_pages_of_a_search_across_profiles_continue_one_ranking_losing_nothing(profiles_home, tmp_path):
    """Page 2 of an answer over three stores asked each store for its hits from the merged
    answer's offset, so the hits a store had beyond the first page's share were never shown.
    Now the pages are one ranking: every store's hits appear once, each store's in its own
    order, and a page holds about a page of hits, not a page of each store's."""
    from hermes_state import ListQuery
    from hermes_tui.data_profiles import ProfilesData

    profiles = discover({"HERMES_HOME": str(profiles_home)}).with_stores()
    door = ProfilesData(profiles, trash_dir=tmp_path / "trash", cache_dir=tmp_path / "cache")
    query, limit = "the", 5
    try:
        merged = _every_page(lambda offset: door.search(query, ListQuery(), limit=limit, offset=offset), limit)
        alone, roots = {}, {}
        for name in door.names:
            part = door.parts[name]
            pages = _every_page(lambda offset: part.search(query, ListQuery(), limit=limit, offset=offset), limit)
            alone[name] = [(f"{name}:{sid}", hid) for sid, hid in _hits(g for p in pages for g in p.groups)]
            roots[name] = list(dict.fromkeys(f"{name}:{g.root_id}" for p in pages for g in p.groups))
    finally:
        door.close()
    every = [hit for view in merged for hit in _hits(view.groups)]
    assert len({name for name, hits in alone.items() if len(hits) > limit}) >= 2  # (the case that lost hits)
    assert len(every) == len(set(every))  # nothing twice
    assert sorted(every) == sorted(hit for hits in alone.values() for hit in hits)  # nothing lost
    shown_roots = list(dict.fromkeys(g.root_id for view in merged for g in view.groups))
    for name, order in roots.items():  # each store's conversations in its own order
        assert [root for root in shown_roots if root.startswith(f"{name}:")] == order
    # A page is a page of the one ranking: conversations are whole, so a page may run over.
    assert all(view.hit_count >= limit for view in merged[:-1])
    assert merged[0].hit_count < sum(min(len(h), limit) for h in alone.values())


def test_a_later_page_across_profiles_goes_on_from_the_last_not_from_the_top(profiles_home, tmp_path):
    """Each page is asked at its own clock (as the screen asks it): the stream must still be
    found, so that a page reads only what it shows, not every page before it again."""
    import itertools

    from hermes_state import ListQuery
    from hermes_tui.data_profiles import ProfilesData

    profiles = discover({"HERMES_HOME": str(profiles_home)}).with_stores()
    door = ProfilesData(profiles, trash_dir=tmp_path / "trash", cache_dir=tmp_path / "cache")
    reads = []
    for name, part in door.parts.items():
        def counted(*args, _search=part.search, _name=name, **kwargs):
            reads.append((_name, kwargs.get("offset")))
            return _search(*args, **kwargs)
        part.search = counted
    clock = itertools.count(1_800_000_000)
    try:
        pages = _every_page(lambda offset: door.search("the", ListQuery(), limit=5, offset=offset,
                                                       now=float(next(clock))), 5)
    finally:
        door.close()
    assert len(pages) > 3
    assert len(reads) == len(set(reads))  # no store page read twice


def _door(profiles_home, tmp_path):
    from hermes_tui.data_profiles import ProfilesData

    return ProfilesData(discover({"HERMES_HOME": str(profiles_home)}).with_stores(),
                        trash_dir=tmp_path / "trash", cache_dir=tmp_path / "cache")


def _paged_alone(door, query: str, listed, limit: int) -> list[tuple[str, int]]:
    hits = []
    for name in door.names:
        part = door.parts[name]
        pages = _every_page(lambda offset: part.search(query, listed, limit=limit, offset=offset), limit)
        hits += [(f"{name}:{sid}", hid) for sid, hid in _hits(g for p in pages for g in p.groups)]
    return hits


def test_a_search_across_profiles_under_a_time_window_pages_through_every_kept_hit(profiles_home, tmp_path):
    """The stores' pages hold hits of conversations the window leaves out: a page across
    profiles stopped at the first store pages with nothing kept and said there was no more
    (0 hits shown where the stores held 12). Now it reads on, and pages through them all."""
    from hermes_state import ListQuery
    from hermes_state.listing.narrow import Narrow

    listed = ListQuery(narrow=Narrow(since=1790010000.0))
    door = _door(profiles_home, tmp_path)
    try:
        first = door.search("the", listed, limit=5)
        pages = _every_page(lambda offset: door.search("the", listed, limit=5, offset=offset), 5)
        alone = _paged_alone(door, "the", listed, 5)
    finally:
        door.close()
    every = [hit for view in pages for hit in _hits(view.groups)]
    assert alone and first.more_certain and (first.groups or first.more)
    assert len(every) == len(set(every)) and sorted(every) == sorted(alone)


def test_a_commit_between_two_pages_across_profiles_is_read_by_the_next_page(profiles_home, tmp_path):
    """A stream read before a commit handed out a deleted conversation on the next page."""
    from hermes_state import ListQuery

    peek = _door(profiles_home, tmp_path)
    try:
        first = peek.search("the", ListQuery(), limit=5)
        shown = {g.root_id for g in first.groups}
        # One the stores' first pages read but page 1 did not show: it waits in the stream.
        (stream,) = peek._searches.values()
        gone = next(f"{name}:{g.root_id}" for name, groups in stream.waiting.items() for g in groups
                    if f"{name}:{g.root_id}" not in shown)
    finally:
        peek.close()
    door = _door(profiles_home, tmp_path)
    try:
        first = door.search("the", ListQuery(), limit=5)
        assert gone not in {g.root_id for g in first.groups}
        name, session_id = gone.split(":", 1)
        db = SessionDB(store(profiles_home, name))
        try:
            db.delete_session(session_id)
        finally:
            db.close()
        rest = door.search("the", ListQuery(), limit=200, offset=first.next_offset)
    finally:
        door.close()
    assert gone not in {g.root_id for g in rest.groups}


def test_a_profile_left_out_between_two_pages_loses_none_of_the_others_hits(profiles_home, tmp_path):
    from hermes_state import ListQuery

    door = _door(profiles_home, tmp_path)
    try:
        first = door.search("the", ListQuery(), limit=5)  # (the broken profile is left out by it)
        assert any(g.root_id.startswith("coder:") for g in first.groups)
        alone = [hit for hit in _paged_alone(door, "the", ListQuery(), 5) if not hit[0].startswith("coder:")]
        door._leave_out("coder", RuntimeError("gone"))
        pages = [first]
        while pages[-1].more:
            pages.append(door.search("the", ListQuery(), limit=5, offset=pages[-1].next_offset))
            assert len(pages) < 200
    finally:
        door.close()
    every = [hit for view in pages for hit in _hits(view.groups)]
    assert set(alone) <= set(every)


def test_a_newer_search_stops_an_older_one_before_the_next_store_is_asked(profiles_home, tmp_path):
    """The stores are asked in turn (their Python shares one interpreter): a key typed while
    the first store answers interrupts the older search, and the stores after it are not
    asked for it; the newer search then asks every store."""
    from hermes_state import ListQuery

    door = _door(profiles_home, tmp_path)
    asked: list[tuple[str, str]] = []
    first = door.names[0]
    for name, part in door.parts.items():
        def search(query, *args, _search=part.search, _name=name, **kwargs):
            asked.append((_name, query))
            answer = _search(query, *args, **kwargs)
            if _name == first and query == "the":
                door.interrupt_search()  # (the next key, typed while this store answered)
            return answer
        part.search = search
    try:
        older = door.search("the", ListQuery(), limit=5)
        assert older.interrupted and not older.groups
        assert asked == [(first, "the")], "no store after the first was asked for the older search"
        newer = door.search("docker", ListQuery(), limit=5)
        assert not newer.interrupted and newer.groups
        assert [name for name, query in asked if query == "docker"] == door.names
    finally:
        door.close()


def test_each_store_ranks_its_share_of_the_newest_matches_at_a_keystroke(profiles_home, tmp_path):
    """Several stores searched as one: each ranks a share of the newest matches one store's
    keystroke ranks -- equal shares until their sizes are known, then in proportion to their
    messages -- so the answer costs about one store's (each window is read and scored in
    Python); one store alone ranks its own window."""
    from hermes_state import ListQuery

    door = _door(profiles_home, tmp_path)
    windows: list[tuple[str, object]] = []
    for name, part in door.parts.items():
        def search(*args, _search=part.search, _name=name, **kwargs):
            windows.append((_name, kwargs.get("window")))
            return _search(*args, **kwargs)
        part.search = search
    try:
        first = door.search("docker", ListQuery(), limit=5)
        assert not first.interrupted
        equal = window_shares({name: None for name in door.names})
        assert sorted(windows) == sorted(equal.items())
        sizes = dict(door._sizes)
        assert set(sizes) == set(door.names), "each store's size known from its answer"
        windows.clear()
        door.search("release", ListQuery(), limit=5)
        assert dict(windows) == window_shares(sizes)
        windows.clear()
        door.profile_filter = door.names[0]
        door.search("docker", ListQuery(), limit=5)
        assert windows == [(door.names[0], None)]
    finally:
        door.close()


def test_a_large_profile_beside_small_ones_keeps_most_of_the_keystrokes_window():
    from hermes_state.search.tuning import TUNING

    assert window_shares({"only": 5_000}) == {"only": None}
    equal = window_shares({"a": None, "b": 10, "c": 10})
    assert set(equal.values()) == {max(WINDOW_SHARE_MIN, TUNING.WINDOW // 3)}
    shares = window_shares({"default": 1_900_000, "work": 50_000, "old": 50_000})
    assert shares["default"] == TUNING.WINDOW * 1_900_000 // 2_000_000
    assert shares["work"] == shares["old"] == WINDOW_SHARE_MIN


def test_an_answer_a_window_empties_across_profiles_counts_each_stores_conversations_left_out(profiles_home, tmp_path):
    """Every store's pages are read, and the conversations the window left out are counted
    in every store (profile-qualified: the same id in two profiles is two conversations), as
    each store alone counts its own."""
    from hermes_state import ListQuery
    from hermes_state.listing.narrow import Narrow

    listed = ListQuery(narrow=Narrow(until=1.0))  # (before 1970: every conversation is left out)
    door = _door(profiles_home, tmp_path)
    try:
        pages = _every_page(lambda offset: door.search("the", listed, limit=5, offset=offset), 5)
        left_out = frozenset().union(*(view.filtered_out for view in pages))
        alone = {}
        for name in door.names:
            part = door.parts[name]
            views = _every_page(lambda offset: part.search("the", listed, limit=5, offset=offset), 5)
            alone[name] = frozenset().union(*(view.filtered_out for view in views))
    finally:
        door.close()
    assert all(not view.groups for view in pages)
    assert len([name for name, roots in alone.items() if roots]) >= 2
    assert left_out == {f"{name}:{root}" for name, roots in alone.items() for root in roots}


def test_a_title_match_across_profiles_names_its_conversation_in_its_own_profile(tmp_path):
    """A title match of a chain's middle segment is of the chain's row (its root), in the
    profile it was found in: what Esc from the search puts the list on after acting on it."""
    from hermes_state import ListQuery
    from hermes_tui.data_profiles import ProfilesData

    from .dataset import TRAVEL_ROOT, TRAVEL_SECOND, add_third_travel_segment, build_fixed_db

    root = tmp_path / "hermes-root"
    for home in (root, root / "profiles" / "coder"):
        home.mkdir(parents=True)
        build_fixed_db(home / "state.db")
    add_third_travel_segment(root / "profiles" / "coder" / "state.db")
    door = ProfilesData(discover({"HERMES_HOME": str(root)}).with_stores(),
                        trash_dir=tmp_path / "trash", cache_dir=tmp_path / "cache")
    try:
        view = door.search("travel plans", ListQuery())
        assert f"coder:{TRAVEL_SECOND}" in {s.id for s in view.title_matches}
        assert view.title_roots[f"coder:{TRAVEL_SECOND}"] == f"coder:{TRAVEL_ROOT}"
        assert view.title_roots[f"default:{TRAVEL_ROOT}"] == f"default:{TRAVEL_ROOT}"
    finally:
        door.close()


def test_each_store_makes_its_share_of_the_first_page_and_the_page_is_the_same(tmp_path, monkeypatch):
    """A keystroke across stores asks each for its share of the page (and a few more), not a
    whole page each: every hit is made whole (snippets, marks, names) before the merge keeps
    the best of all. A store whose hits outrank the others' past its share is read further,
    so the page still fills with its conversations; newest first (as a window's ranking,
    which does not depend on the page's size) it is the page a whole page from each gives.
    (Ranked by exact bm25 a store orders each page it reads by recency within the page, so
    its pages of 22 and of 40 may begin differently: both are its own ranking.)"""
    from hermes_state import ListQuery
    from hermes_tui import data_profiles
    from hermes_tui.data_profiles import PAGE_SHARE_SLACK, ProfilesData, page_shares

    from tests.state.test_conversation_search import DAY, NOW, session

    assert page_shares(40, {"a": None}) == {"a": 40}
    assert page_shares(40, {"a": 133, "b": 133, "c": 134}) == {
        "a": 14 + PAGE_SHARE_SLACK, "b": 14 + PAGE_SHARE_SLACK, "c": 14 + PAGE_SHARE_SLACK}
    assert page_shares(40, {"big": 392, "small": 100})["big"] == 40  # (never past the page)
    root = tmp_path / "hermes"
    for name, count in (("default", 60), ("work", 2), ("home", 2)):
        home = root if name == "default" else root / "profiles" / name
        home.mkdir(parents=True)
        db = SessionDB(home / "state.db")
        for n in reversed(range(count)):  # (oldest first, as a store grows)
            # (the default profile's conversations newest, so they lead the ranking)
            age = n if name == "default" else 300 + n
            session(db, f"{name}{n:02d}", [f"the gateway timeout again {n}", "raised it"], at=NOW - age * DAY)
        db.close()
    profiles = discover({"HERMES_HOME": str(root)}).with_stores()

    def first_page(shares, order: str) -> list:
        monkeypatch.setattr(data_profiles, "page_shares", shares)
        door = ProfilesData(profiles, trash_dir=tmp_path / "trash", cache_dir=tmp_path / "cache")
        asked: list[int] = []
        for part in door.parts.values():
            def search(*args, _search=part.search, **kwargs):
                asked.append(kwargs.get("limit"))
                return _search(*args, **kwargs)
            part.search = search
        try:
            view = door.search("gateway timeout", ListQuery(), limit=40, now=NOW, order=order)
            return [(g.root_id, [h.id for h in g.hits]) for g in view.groups], asked
        finally:
            door.close()

    for order in ("newest", "relevance"):
        whole, whole_asked = first_page(lambda limit, windows: {name: limit for name in windows}, order)
        shared, shared_asked = first_page(page_shares, order)
        assert whole_asked == [40, 40, 40]
        assert sorted(shared_asked[:3]) == [14 + PAGE_SHARE_SLACK] * 3
        assert len(shared_asked) > 3  # (the default profile read on)
        assert sum(len(hits) for _root, hits in shared) >= 40
        assert {root.split(":")[0] for root, _hits in shared} == {"default"}, order
        if order == "newest":
            assert shared == whole


def _statements_of(door) -> list[tuple[int, str]]:
    """Every statement each store's connections run from now on, as ``(connection, sql)``."""
    seen: list[tuple[int, str]] = []
    for part in door.parts.values():
        for db in part._dbs.values():
            db.store.read(lambda conn: conn.set_trace_callback(lambda sql, c=id(conn): seen.append((c, sql))))
    return seen


def test_a_keystroke_looks_at_each_connections_schema_once(tmp_path):
    """A keystroke's search on each store (its full-text search, the conversations' names and
    marks, the title match and its rows) looks the schema up once on each connection it
    reads, not at each read: across three stores that was 30 of its 84 statements."""
    from hermes_state import ListQuery
    from hermes_tui.data_profiles import ProfilesData

    from .dataset import build_fixed_db

    root = tmp_path / "hermes-root"
    for home in (root, root / "profiles" / "coder", root / "profiles" / "home"):
        home.mkdir(parents=True)
        build_fixed_db(home / "state.db")
    door = ProfilesData(discover({"HERMES_HOME": str(root)}).with_stores(),
                        trash_dir=tmp_path / "trash", cache_dir=tmp_path / "cache")
    try:
        first = door.search("docker", ListQuery())  # (every connection opened)
        assert first.groups and first.title_matches
        door.forget_search_answers()
        statements = _statements_of(door)
        again = door.search("docker", ListQuery())
        looks = [conn for conn, sql in statements if "schema_version" in sql]
        assert looks and len(looks) == len(set(looks))  # (once on each connection)
        assert [(g.root_id, [h.id for h in g.hits]) for g in again.groups] == [
            (g.root_id, [h.id for h in g.hits]) for g in first.groups]
        assert [s.id for s in again.title_matches] == [s.id for s in first.title_matches]
    finally:
        door.close()
