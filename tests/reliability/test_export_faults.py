"""Exports under faults and the export → import round trip.

* A disk that fills up half-way (a real 64 KiB tmpfs; the tests that need it skip when this
  process may not mount one) or an export that is interrupted (an iterator raising ENOSPC or
  KeyboardInterrupt; these always run) leaves no partial file at the destination and no
  temporary file beside it, and an existing file of that name is kept intact -- through the
  library, the CLI and the app's export modal.
* Re-importing an export into an empty database recreates the sessions exactly: every
  column of every session row and every message row (ids, timestamps, titles, parent links,
  counters, tokens, tool calls, reasoning, NUL and markup in content), from the library, the
  CLI and the export modal (Pilot: ``e``, scope, format, path, ``ctrl+s``).
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.reliability import REPO, DiskFull, FailAfter, roundtrip_problems, store_problems, table_rows
from hermes_state import SessionDB
from hermes_state.export import export_to_path, iter_export, render_chunks, write_atomic
from hermes_tui.screens.browser import BrowserScreen

PREVIOUS = "previous export: keep me\n"


def add_edge_sessions(db_path: Path) -> None:
    """Sessions whose columns a round trip could get wrong, next to the simulator's."""
    db = SessionDB(db_path)
    try:
        db.create_session(
            "edge_root", "cli", model="m/odd", model_config={"temperature": 0.2, "nested": {"k": [1, 2]}},
            system_prompt="You are [bold]Hermes[/bold].\n\x00after NUL", user_id="u-1",
        )
        db.append_message("edge_root", "user", "NUL\x00inside, [@click=app.quit]quit[/], \x1b]52;c;aGk=\x07 osc52, \u202eRTL")
        db.append_message(
            "edge_root", "assistant", "thinking shown", token_count=42, finish_reason="stop",
            reasoning="step 1\nstep 2", reasoning_content="raw reasoning",
            reasoning_details=[{"type": "summary", "text": "s"}],
            codex_reasoning_items=[{"id": "r1"}], codex_message_items=[{"id": "m1", "x": None}],
        )
        db.append_message("edge_root", "user", '\x00json:[{"type": "text", "text": "multimodal"}, {"type": "image_url"}]')
        db.append_message("edge_root", "assistant", "x" * 200_000)
        db.set_session_title("edge_root", "edge: 日本語 [b]title[/b] \u200b")
        db.end_session("edge_root", "compression")
        db.create_session("edge_child", "cli", parent_session_id="edge_root")
        db.append_message("edge_child", "user", "continued after compression")
        db.create_session("edge_empty", "telegram", user_id="42")
        db._execute_write(
            lambda c: c.execute(
                "UPDATE sessions SET input_tokens = 1234, output_tokens = 56, cache_read_tokens = 7, "
                "cache_write_tokens = 8, reasoning_tokens = 9, billing_provider = 'openrouter', "
                "estimated_cost_usd = 0.0123, actual_cost_usd = 0.0125, cost_status = 'final', "
                "api_call_count = 3, started_at = started_at - 0.123456789 WHERE id = 'edge_root'"
            )
        )
    finally:
        db.close()


@pytest.fixture
def store(sim_store: Path) -> Path:
    add_edge_sessions(sim_store)
    return sim_store


def previous_file(directory: Path, name: str = "export.jsonl") -> Path:
    target = directory / name
    target.write_text(PREVIOUS, encoding="utf-8")
    return target


def assert_untouched(directory: Path, target: Path) -> None:
    assert target.read_text(encoding="utf-8") == PREVIOUS
    assert sorted(p.name for p in directory.iterdir()) == [target.name]  # no temporary file left


@pytest.fixture
def full_disk(tmp_path: Path):
    with DiskFull(tmp_path / "full") as disk:
        if not disk.available:
            pytest.skip(f"cannot mount a small tmpfs here ({disk.reason})")
        yield disk.path


# ---------------------------------------------------------------------------- disk full


def test_export_to_a_full_disk_fails_and_keeps_the_previous_file(store: Path, full_disk: Path) -> None:
    target = previous_file(full_disk)
    db = SessionDB(store, read_only=True)
    try:
        with pytest.raises(OSError) as info:
            export_to_path(db, target)
    finally:
        db.close()
    assert info.value.errno == errno.ENOSPC
    assert_untouched(full_disk, target)
    # The space of the failed attempt was given back: a small export fits afterwards.
    small = full_disk / "one.jsonl"
    db = SessionDB(store, read_only=True)
    try:
        assert export_to_path(db, small, session_ids=["edge_child"]) == 1
    finally:
        db.close()
    assert json.loads(small.read_text(encoding="utf-8"))["id"] == "edge_child"


def test_cli_export_to_a_full_disk_says_so_and_leaves_no_file(store: Path, full_disk: Path) -> None:
    target = previous_file(full_disk)
    env = dict(os.environ, HERMES_HOME=str(store.parent), PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", "export", str(target)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120,
    )
    assert proc.returncode != 0
    # One line naming the cause (the CLI prints its errors as upstream does, on stdout).
    assert "No space left on device" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert_untouched(full_disk, target)


async def test_ui_export_to_a_full_disk_is_reported_in_the_modal(store: Path, full_disk: Path) -> None:
    from textual.widgets import Input, Static

    from hermes_tui.app import build_app
    from hermes_tui.config import AppConfig

    target = previous_file(full_disk)
    config = AppConfig(animations="none", search_debounce_s=0.0, export_dir=str(full_disk))
    app = build_app(store, clock=time.time, config=config, watch=False, db_label="state.db")
    async with app.run_test(size=(120, 40)) as pilot:
        modal = await open_export_modal(pilot)
        choose(modal, "all", "jsonl")
        modal.query_one("#export-path", Input).value = str(target)
        await pilot.press("ctrl+s")  # the file exists: the first press asks to confirm
        await wait_for(pilot, lambda: modal.query_one("#export-error", Static).display)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not modal.running and "No space left" in error_text(modal))
        assert app.screen is modal
        assert "No file was written" in error_text(modal)
        assert not any(n.message.startswith("Exported") for n in app._notifications)
    assert_untouched(full_disk, target)


# ---------------------------------------------------------------------------- interrupted


@pytest.mark.parametrize("fault", ["ENOSPC half-way", "KeyboardInterrupt half-way"])
@pytest.mark.parametrize("existing", [True, False], ids=["over an existing file", "new file"])
def test_interrupted_export_leaves_no_partial_file(store: Path, tmp_path: Path, fault: str, existing: bool) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = previous_file(out) if existing else out / "export.jsonl"
    db = SessionDB(store, read_only=True)
    try:
        chunks = render_chunks(iter_export(db), "jsonl")
        if fault.startswith("ENOSPC"):
            failing = FailAfter(chunks, 20_000)
            with pytest.raises(OSError) as info:
                write_atomic(target, failing)
            assert info.value.errno == errno.ENOSPC
            assert failing.sent > 0  # it failed half-way, not before the first byte
        else:
            def interrupted():
                for index, chunk in enumerate(chunks):
                    if index == 5:
                        raise KeyboardInterrupt
                    yield chunk

            with pytest.raises(KeyboardInterrupt):
                write_atomic(target, interrupted())
    finally:
        db.close()
    if existing:
        assert_untouched(out, target)
    else:
        assert list(out.iterdir()) == []


# ---------------------------------------------------------------------------- round trip


def test_export_reimport_recreates_sessions_exactly(store: Path, tmp_path: Path) -> None:
    sessions = table_rows(store, "sessions")
    # The data exercises what a round trip can lose: parent links, titles, ended sessions.
    assert sum(1 for row in sessions if row[6]) >= 3  # parent_session_id
    title = [r[1] for r in sqlite3.connect(store).execute("PRAGMA table_info(sessions)")].index("title")
    assert sum(1 for row in sessions if row[title]) >= 3  # title (found by name, UC-1)
    export = tmp_path / "all.jsonl"
    db = SessionDB(store, read_only=True)
    try:
        assert export_to_path(db, export) == len(sessions)
    finally:
        db.close()
    assert roundtrip_problems(store, export, tmp_path / "fresh" / "state.db") == []
    # Exporting the re-imported store gives the same file, byte for byte.
    again = tmp_path / "again.jsonl"
    db = SessionDB(tmp_path / "fresh" / "state.db", read_only=True)
    try:
        export_to_path(db, again)
    finally:
        db.close()
    assert again.read_bytes() == export.read_bytes()


def test_cli_export_then_cli_import_into_an_empty_home_is_exact(store: Path, tmp_path: Path) -> None:
    export = tmp_path / "cli.jsonl"
    fresh_home = tmp_path / "fresh-home"
    fresh_home.mkdir()
    SessionDB(fresh_home / "state.db").close()  # an empty store (import never creates one)

    def cli(home: Path, *argv: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, HERMES_HOME=str(home), PYTHONPATH=str(REPO))
        return subprocess.run(
            [sys.executable, "-m", "hermes_tui.cli", "sessions", *argv],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120,
        )

    out = cli(store.parent, "export", str(export))
    assert out.returncode == 0, out.stderr
    back = cli(fresh_home, "import", str(export))
    assert back.returncode == 0, back.stderr
    fresh = fresh_home / "state.db"
    for table in ("sessions", "messages"):
        assert table_rows(fresh, table) == table_rows(store, table)
    assert store_problems(fresh) == []


async def test_ui_export_modal_reimports_exactly(store: Path, tmp_path: Path) -> None:
    from hermes_tui.app import build_app
    from hermes_tui.config import AppConfig
    from textual.widgets import Input

    out = tmp_path / "exports"
    out.mkdir()
    config = AppConfig(animations="none", search_debounce_s=0.0, export_dir=str(out))
    app = build_app(store, clock=time.time, config=config, watch=False, db_label="state.db")
    async with app.run_test(size=(120, 40)) as pilot:
        modal = await open_export_modal(pilot)
        choose(modal, "all", "jsonl")
        await wait_for(pilot, lambda: modal.scope.key == "all" and modal.fmt == "jsonl")
        modal.query_one("#export-path", Input).value = "everything.jsonl"  # relative: export dir
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.screen is not modal, timeout=60)
        assert any(n.message.startswith("Exported ") for n in app._notifications)
    target = out / "everything.jsonl"
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    assert roundtrip_problems(store, target, tmp_path / "fresh" / "state.db") == []


# ---------------------------------------------------------------------------- helpers


async def wait_for(pilot, predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.02)


async def open_export_modal(pilot):
    from hermes_tui.modals.export import ExportModal

    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen_stack[0], BrowserScreen) and app.screen_stack[0].session_list.total > 0)
    await pilot.press("e")
    await wait_for(pilot, lambda: isinstance(app.screen, ExportModal))
    return app.screen


def choose(modal, scope_key: str, fmt: str) -> None:
    from textual.widgets import RadioButton, RadioSet

    keys = [s.key for s in modal.scopes]
    list(modal.query_one("#export-scope", RadioSet).query(RadioButton))[keys.index(scope_key)].value = True
    list(modal.query_one("#export-format", RadioSet).query(RadioButton))[("jsonl", "md").index(fmt)].value = True


def error_text(modal) -> str:
    from textual.widgets import Static

    widget = modal.query_one("#export-error", Static)
    return str(widget.content) if widget.display else ""


# ---------------------------------------------------------------------------- big stores


def test_export_of_every_session_is_not_cut_at_100000(tmp_path: Path) -> None:
    """An export of "every session" (CLI, UI) writes every session, also past 100,000.

    (EX-2's ``export_all`` keeps upstream's ``limit=100000``; the streaming export that the
    CLI and the export modal use must not inherit that cut silently.)
    """
    path = tmp_path / "state.db"
    total = 100_003
    db = SessionDB(path)
    try:
        db._execute_write(
            lambda c: c.executemany(
                "INSERT INTO sessions (id, source, started_at) VALUES (?, 'cli', ?)",
                [(f"s{i:06d}", 1.7e9 + i) for i in range(total)],
            )
        )
        db.append_message("s000000", "user", "the oldest session has a message")
        target = tmp_path / "all.jsonl"
        assert export_to_path(db, target) == total
        ids = [json.loads(line)["id"] for line in target.read_text(encoding="utf-8").splitlines()]
        assert len(ids) == len(set(ids)) == total
        assert ids[0] == "s000000"  # most recently used first (it has the newest message)
        assert len(db.export_all()) == 100_000  # EX-2 unchanged
    finally:
        db.close()


# ---------------------------------------------------------------------------- exports during writes

HOT_WRITER = """
import sys, time
from hermes_state import SessionDB
db = SessionDB(sys.argv[1])
print("ready", flush=True)
stop = sys.argv[2]
deadline = time.monotonic() + 60  # (a safety net: the test asks it to stop)
import os
while time.monotonic() < deadline and not os.path.exists(stop):
    db.append_message("hot", "user", "x" * 40)
    db.append_message("hot", "assistant", None,
                      tool_calls=[{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
db.close()
"""


def test_export_of_a_session_being_written_is_a_snapshot(tmp_path: Path) -> None:
    """A session exported while other processes append to it is exported as one state:
    its counters agree with the messages it carries (they change in one transaction)."""
    path = tmp_path / "state.db"
    db = SessionDB(path)
    db.create_session("hot", "cli")
    db.close()
    # The writers append until the reader has exported enough times (a fixed duration gave a
    # loaded machine as few as 30 exports, and the count was the test's condition).
    stop = tmp_path / "stop"
    writers = [
        subprocess.Popen([sys.executable, "-c", HOT_WRITER, str(path), str(stop)], stdout=subprocess.PIPE,
                         text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=str(REPO))
        for _ in range(2)
    ]
    reader = SessionDB(path, read_only=True)
    torn: list[tuple[str, int, int, int]] = []
    exports = 0
    try:
        for writer in writers:
            assert writer.stdout.readline().strip() == "ready"
        while any(w.poll() is None for w in writers):
            if exports >= 40:
                stop.touch()
            objs = [reader.export_session("hot")] + list(iter_export(reader))
            for obj in objs:
                calls = sum(len(m["tool_calls"] or []) for m in obj["messages"])
                if (obj["message_count"], obj["tool_call_count"]) != (len(obj["messages"]), calls):
                    torn.append((obj["id"], obj["message_count"], len(obj["messages"]), calls))
            exports += len(objs)
    finally:
        reader.close()
        for writer in writers:
            writer.wait(timeout=60)
    assert all(w.returncode == 0 for w in writers)
    assert stop.exists(), "the writers stopped before the reader had exported 40 times"
    assert exports >= 40
    assert torn == [], f"{len(torn)} of {exports} exports were torn, e.g. {torn[:3]}"


# ---------------------------------------------------------------------------- killed mid-export

_SLOW_EXPORT = """
import sys, time
sys.path.insert(0, {repo!r})
import hermes_state.paths as paths
if {fallback!r}:
    paths._unnamed_file = lambda directory: None   # as on a file system without O_TMPFILE
def chunks():
    for i in range(100000):
        yield "x" * 4096
        if i == 20:
            print("WRITING", flush=True)
        time.sleep(0.001)
paths.write_atomic({target!r}, chunks())
"""


def _kill_mid_export(target: Path, fallback: bool) -> None:
    script = _SLOW_EXPORT.format(repo=str(REPO), fallback=fallback, target=str(target))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout.readline().decode().strip() == "WRITING"
        proc.kill()  # kill -9, mid-write
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -9


def test_killed_export_leaves_no_temp_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = previous_file(out)
    _kill_mid_export(target, fallback=False)
    assert_untouched(out, target)  # the data went to an unnamed file: nothing to clean up


def test_without_o_tmpfile_the_next_write_sweeps_a_killed_writers_temp(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = previous_file(out)
    _kill_mid_export(target, fallback=True)
    left = [p.name for p in out.iterdir() if p.name != target.name]
    assert len(left) == 1 and left[0].startswith(".export.jsonl.")  # the crash left its temp file
    # A temp file of a writer that is still running is not ours to remove.
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        busy = out / f".export.jsonl.{alive.pid}.abcd1234.tmp"
        busy.write_text("in progress")
        write_atomic(target, ["new content"])
        assert target.read_text() == "new content"
        assert sorted(p.name for p in out.iterdir()) == sorted([target.name, busy.name])
    finally:
        alive.kill()
        alive.wait()
