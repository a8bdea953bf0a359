"""Export and import (SPEC EX-1 … EX-3): JSONL, Markdown transcripts, atomic writes, importer."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from hermes_state import ReadOnlyError, SessionDB
from hermes_state.export import (
    close_open_fence,
    export_to_path,
    export_to_stream,
    fence_for,
    import_jsonl,
    iter_export,
    render_chunks,
    session_to_jsonl,
    session_to_markdown,
    write_atomic,
)

T0 = 1741166123.0  # 2025-03-05 09:15:23 UTC

def _permissions_enforced() -> bool:
    """False when we may write into a read-only directory anyway (root with CAP_DAC_OVERRIDE)."""
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        probe = Path(scratch) / "ro"
        probe.mkdir()
        probe.chmod(0o500)
        try:
            (probe / "x").touch()
        except PermissionError:
            return True
        finally:
            probe.chmod(0o700)
        return False


needs_permissions = pytest.mark.skipif(
    not _permissions_enforced(), reason="file permissions are not enforced for this user (root)"
)


# ----------------------------------------------------------------------------- helpers


def _pin(db: SessionDB, session_id: str, started_at: float, ended_at: float | None = None) -> None:
    db._execute_write(
        lambda conn: conn.execute(
            "UPDATE sessions SET started_at = ?, ended_at = COALESCE(?, ended_at) WHERE id = ?",
            (started_at, ended_at, session_id),
        )
    )


def _add(db: SessionDB, session_id: str, ts: float, role: str, content=None, **kw) -> int:
    message_id = db.append_message(session_id, role, content, **kw)
    db._execute_write(
        lambda conn: conn.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (ts, message_id))
    )
    return message_id


def build_realistic(db: SessionDB) -> None:
    """A store with every feature an export must carry: titles, a compression chain, a
    branch, a delegate, a tool session, token and cost columns, tool calls, reasoning,
    codex items, CJK and emoji, empty and NULL content."""
    db.create_session("20250301_100000_aaaaaa", "cli", model="anthropic/claude",
                      model_config={"temperature": 0.2}, system_prompt="You are Hermes.")
    _add(db, "20250301_100000_aaaaaa", T0 + 1, "user", "Plan the trip to 桂林 🚲")
    _add(db, "20250301_100000_aaaaaa", T0 + 2, "assistant", None,
         tool_calls=[{"id": "call_1", "type": "function",
                      "function": {"name": "web_search", "arguments": '{"q": "桂林 weather"}'}}],
         reasoning="I should search first", reasoning_details=[{"type": "summary", "text": "r"}],
         codex_reasoning_items=[{"id": "rs_1"}], finish_reason="tool_calls", token_count=42)
    _add(db, "20250301_100000_aaaaaa", T0 + 3, "tool", "Sunny, 24°C", tool_call_id="call_1",
         tool_name="web_search")
    _add(db, "20250301_100000_aaaaaa", T0 + 4, "assistant", "It will be sunny.",
         codex_message_items=[{"type": "message"}], reasoning_content="")
    db.update_token_counts("20250301_100000_aaaaaa", input_tokens=1200, output_tokens=300,
                           estimated_cost_usd=0.0123, billing_provider="anthropic",
                           cost_status="estimated", api_call_count=2)
    db.set_session_title("20250301_100000_aaaaaa", "travel plans")
    db.end_session("20250301_100000_aaaaaa", "compression")
    _pin(db, "20250301_100000_aaaaaa", T0, T0 + 10)

    db.create_session("20250301_100020_bbbbbb", "cli", parent_session_id="20250301_100000_aaaaaa")
    _add(db, "20250301_100020_bbbbbb", T0 + 21, "user", "continue the itinerary")
    _add(db, "20250301_100020_bbbbbb", T0 + 22, "assistant", "Day 3: Yangshuo by bike")
    db.set_session_title("20250301_100020_bbbbbb", "travel plans #2")
    _pin(db, "20250301_100020_bbbbbb", T0 + 20)

    db.create_session("20250302_090000_cccccccc", "telegram", user_id="u42")
    _add(db, "20250302_090000_cccccccc", T0 + 100, "user", "")
    _add(db, "20250302_090000_cccccccc", T0 + 101, "user", "東京の天気を教えて")
    _add(db, "20250302_090000_cccccccc", T0 + 102, "assistant", "晴れです")
    db.end_session("20250302_090000_cccccccc", "branched")
    _pin(db, "20250302_090000_cccccccc", T0 + 99, T0 + 110)

    db.create_session("20250302_090200_dddddd", "cli", parent_session_id="20250302_090000_cccccccc")
    _add(db, "20250302_090200_dddddd", T0 + 121, "user", "a branch with ``` fences")
    db.set_session_title("20250302_090200_dddddd", "branch of weather")
    _pin(db, "20250302_090200_dddddd", T0 + 120)

    # A delegate: started while its parent was live.
    db.create_session("20250302_090100_eeeeee", "tool", parent_session_id="20250302_090000_cccccccc")
    _add(db, "20250302_090100_eeeeee", T0 + 105, "user", "subtask")
    _pin(db, "20250302_090100_eeeeee", T0 + 104)


def export_lines(db: SessionDB) -> list[dict]:
    return [json.loads(line) for line in render_chunks(iter_export(db), "jsonl")]


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# ----------------------------------------------------------------------------- EX-3 JSONL


def test_ex3_jsonl_line_is_json_dumps_ensure_ascii_false_plus_newline():
    obj = {"id": "s1", "title": "Café ☕ 日本", "messages": [{"content": 'a "quoted"\nline'}]}
    line = session_to_jsonl(obj)
    assert line == json.dumps(obj, ensure_ascii=False) + "\n"
    assert "日本" in line and "\\u" not in line
    assert line.count("\n") == 1  # newlines inside content are escaped, one line per session
    assert json.loads(line) == obj


def test_ex3_export_file_one_line_per_session_utf8(db, tmp_path):
    build_realistic(db)
    out = tmp_path / "all.jsonl"
    count = export_to_path(db, out)
    assert count == 5
    raw = out.read_bytes()
    text = raw.decode("utf-8")  # strict: valid UTF-8
    assert "桂林" in text and "東京" in text
    lines = text.splitlines()
    assert len(lines) == 5 and text.endswith("\n")
    objects = [json.loads(line) for line in lines]
    assert objects == db.export_all()


def test_ex3_export_object_shape(db):
    build_realistic(db)
    by_id = {o["id"]: o for o in export_lines(db)}
    root = by_id["20250301_100000_aaaaaa"]
    # Every session column, plus last_active (export-all), then messages.
    columns = [r[1] for r in db._conn.execute("PRAGMA table_info(sessions)")]
    assert list(root)[: len(columns)] == columns
    assert list(root)[len(columns):] == ["last_active", "messages"]
    assert root["title"] == "travel plans" and root["end_reason"] == "compression"
    assert root["model_config"] == json.dumps({"temperature": 0.2})  # stored text, as EX-1
    call_msg = root["messages"][1]
    assert call_msg["tool_calls"][0]["function"]["name"] == "web_search"  # decoded (MS-4)
    assert call_msg["reasoning_details"] == json.dumps([{"type": "summary", "text": "r"}])  # string
    assert [m["role"] for m in root["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert root["last_active"] == T0 + 4


def test_ex2_export_is_most_recently_used_first_with_children_and_tool(db):
    build_realistic(db)
    ids = [o["id"] for o in export_lines(db)]
    assert ids == [
        "20250302_090200_dddddd",
        "20250302_090100_eeeeee",
        "20250302_090000_cccccccc",
        "20250301_100020_bbbbbb",
        "20250301_100000_aaaaaa",
    ]


def test_ex2_export_source_filter(db):
    build_realistic(db)
    assert [o["id"] for o in render_to_objects(db, source="telegram")] == ["20250302_090000_cccccccc"]


def render_to_objects(db, **kw):
    return [json.loads(line) for line in render_chunks(iter_export(db, **kw), "jsonl")]


def test_export_streams_one_session_at_a_time_with_progress(db):
    build_realistic(db)
    events: list[tuple] = []
    stream = iter_export(db, progress=lambda done, total: events.append(("progress", done, total)))
    for obj in stream:
        events.append(("session", obj["id"]))
    # progress(0, total) first, then one session, its progress tick, the next session, …
    assert events[0] == ("progress", 0, 5)
    kinds = [e[0] for e in events[1:]]
    assert kinds == ["session", "progress"] * 5
    assert [e[1] for e in events if e[0] == "progress"] == [0, 1, 2, 3, 4, 5]


def test_export_selected_ids_skips_unknown(db):
    build_realistic(db)
    calls = []
    got = [o["id"] for o in iter_export(db, session_ids=["20250301_100020_bbbbbb", "nope"],
                                         progress=lambda d, t: calls.append((d, t)))]
    assert got == ["20250301_100020_bbbbbb"]
    assert calls == [(0, 2), (1, 2), (2, 2)]
    assert "last_active" not in db.export_session("20250301_100020_bbbbbb")  # EX-1


def test_export_to_stream_writes_same_bytes_as_file(db, tmp_path):
    import io

    build_realistic(db)
    buffer = io.StringIO()
    assert export_to_stream(db, buffer, "jsonl") == 5
    export_to_path(db, tmp_path / "x.jsonl")
    assert buffer.getvalue() == (tmp_path / "x.jsonl").read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- atomic writes


def test_write_atomic_writes_owner_only_and_replaces(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old content\n")
    target.chmod(0o644)
    written = write_atomic(target, ["héllo ", b"bytes", "\n"])
    assert target.read_bytes() == "héllo bytes\n".encode()
    assert written == len("héllo bytes\n".encode())
    assert (target.stat().st_mode & 0o777) == 0o600
    assert leftovers(tmp_path) == []


def test_write_atomic_custom_mode(tmp_path):
    target = tmp_path / "out.md"
    write_atomic(target, ["x"], mode=0o640)
    assert (target.stat().st_mode & 0o777) == 0o640


def test_write_atomic_failing_iterator_leaves_old_file_and_no_temp(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("previous export\n")

    def chunks():
        yield "first line\n"
        yield "second line\n"
        raise RuntimeError("database went away")

    with pytest.raises(RuntimeError, match="went away"):
        write_atomic(target, chunks())
    assert target.read_text() == "previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_write_atomic_failing_iterator_creates_nothing(tmp_path):
    target = tmp_path / "new.jsonl"

    def chunks():
        yield "partial"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, chunks())
    assert list(tmp_path.iterdir()) == []


def test_write_atomic_unencodable_chunk_cleans_up(tmp_path):
    target = tmp_path / "bad.txt"
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, ["ok", "\ud800 lone surrogate"])
    assert list(tmp_path.iterdir()) == []


def test_write_atomic_sends_a_large_file_to_disk_while_writing(tmp_path, monkeypatch):
    """Past every FLUSH_EVERY bytes, the data written so far is flushed by a thread while the
    writing goes on (the final fsync then has only the tail), and the file is the same."""
    from hermes_state import paths

    monkeypatch.setattr(paths._Flusher, "FLUSH_EVERY", 4096)
    flushed: list[int] = []  # (the real fdatasync runs: this only counts the calls)
    real = getattr(os, "fdatasync", os.fsync)

    def counting(fd: int) -> None:
        flushed.append(os.fstat(fd).st_size)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", counting, raising=False)
    chunks = [f"line {n:05d} {'x' * 1000}\n" for n in range(64)]
    target = tmp_path / "big.jsonl"
    assert write_atomic(target, chunks) == sum(len(c) for c in chunks)
    assert target.read_text() == "".join(chunks)
    assert flushed and all(size >= 4096 for size in flushed)
    assert flushed == sorted(flushed) and flushed[-1] < len("".join(chunks))
    assert leftovers(tmp_path) == []
    flushed.clear()
    write_atomic(tmp_path / "small.txt", ["tiny"])
    assert flushed == []  # a small file: no thread, only the final fsync


def test_write_atomic_a_flush_that_fails_fails_the_write(tmp_path, monkeypatch):
    """A write error met by the background flush (the disk is gone) fails the write: the
    kernel reports it once per open file, so the final fsync alone could miss it. The old file
    is kept and nothing is left beside it."""
    import errno

    from hermes_state import paths

    monkeypatch.setattr(paths._Flusher, "FLUSH_EVERY", 1024)

    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", failing, raising=False)
    target = tmp_path / "out.jsonl"
    target.write_text("previous export\n")
    sent: list[int] = []

    def chunks():
        for n in range(1000):
            sent.append(n)
            time.sleep(0.001)  # (lets the flush's thread run: a writer waits on its disk too)
            yield "y" * 600

    with pytest.raises(OSError) as info:
        write_atomic(target, chunks())
    assert info.value.errno == errno.EIO
    assert len(sent) < 1000  # it stopped at the next flush, not at the end
    assert target.read_text() == "previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_write_atomic_interrupted_while_a_flush_runs_cleans_up(tmp_path, monkeypatch):
    """Ctrl-C in the middle of a large write: the flush under way is waited for (the file is
    closed after it), the interruption goes on up, nothing is left."""
    from hermes_state import paths

    monkeypatch.setattr(paths._Flusher, "FLUSH_EVERY", 1024)

    def chunks():
        for n in range(20):
            if n == 10:
                raise KeyboardInterrupt
            yield "z" * 700

    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "new.jsonl", chunks())
    assert list(tmp_path.iterdir()) == []


def test_write_atomic_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "no" / "such" / "dir" / "x.jsonl", ["x"])
    assert list(tmp_path.iterdir()) == []


def test_write_atomic_parent_is_a_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("i am a file")
    with pytest.raises(NotADirectoryError):
        write_atomic(blocker / "x.jsonl", ["x"])
    assert blocker.read_text() == "i am a file"


def test_write_atomic_destination_is_a_directory(tmp_path):
    target = tmp_path / "dir"
    target.mkdir()
    with pytest.raises(OSError):
        write_atomic(target, ["x"])
    assert target.is_dir() and list(target.iterdir()) == []
    assert leftovers(tmp_path) == []


@needs_permissions
def test_write_atomic_unwritable_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "out.jsonl").write_text("keep me")
    locked.chmod(0o500)
    try:
        with pytest.raises(PermissionError):
            write_atomic(locked / "out.jsonl", ["new"])
        assert (locked / "out.jsonl").read_text() == "keep me"
        assert sorted(p.name for p in locked.iterdir()) == ["out.jsonl"]
    finally:
        locked.chmod(0o700)


def test_export_to_path_failure_mid_export_keeps_previous_file(db, tmp_path, monkeypatch):
    build_realistic(db)
    target = tmp_path / "all.jsonl"
    target.write_text("previous\n")
    from hermes_state import export as export_mod

    # One session per batch; the third read fails.
    monkeypatch.setattr(export_mod, "EXPORT_BATCH_SESSIONS", 1)
    real = export_mod._read_batch
    seen = []

    def failing_read_batch(store, ids):
        seen.append(ids)
        if len(seen) == 3:
            raise sqlite3.OperationalError("disk I/O error")
        return real(store, ids)

    monkeypatch.setattr(export_mod, "_read_batch", failing_read_batch)
    with pytest.raises(sqlite3.OperationalError):
        export_to_path(db, target)
    assert target.read_text() == "previous\n"
    assert leftovers(tmp_path) == []


# ----------------------------------------------------------------------------- Markdown


def _fences(markdown: str) -> list:
    return [t for t in MarkdownIt("commonmark").parse(markdown) if t.type == "fence"]


def _headings(markdown: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]


def test_markdown_document_header_and_roles(db):
    build_realistic(db)
    md = session_to_markdown(db.export_session("20250301_100000_aaaaaa"))
    assert md.startswith("# travel plans\n\n")
    assert "- **Session:** `20250301_100000_aaaaaa`\n" in md
    assert "- **Source:** cli\n" in md
    assert "- **Model:** anthropic/claude\n" in md
    assert "- **Started:** 2025-03-05 09:15:23 UTC\n" in md
    assert "- **Ended:** 2025-03-05 09:15:33 UTC (compression)\n" in md
    assert "- **Messages:** 4\n" in md
    assert _headings(md) == ["travel plans", "User", "Assistant", "Tool result — web_search", "Assistant"]
    assert "Plan the trip to 桂林 🚲" in md
    assert "**Tool call:** `web_search` (id `call_1`)" in md


def test_markdown_tool_calls_and_results_are_fenced(db):
    build_realistic(db)
    md = session_to_markdown(db.export_session("20250301_100000_aaaaaa"))
    fences = _fences(md)
    contents = [f.content for f in fences]
    assert "I should search first\n" in contents  # reasoning
    assert json.dumps({"q": "桂林 weather"}, ensure_ascii=False, indent=2) + "\n" in contents
    assert "Sunny, 24°C\n" in contents  # the tool result
    assert any(f.info == "json" for f in fences)


def test_markdown_untitled_and_multiple_sessions_separated(db):
    build_realistic(db)
    md = "".join(render_chunks(iter_export(db, session_ids=["20250302_090000_cccccccc",
                                                             "20250301_100020_bbbbbb"]), "md"))
    assert md.startswith("# Untitled session\n")
    assert "\n---\n\n# travel plans #2\n" in md
    assert "- **Parent:** `20250301_100000_aaaaaa`" in md
    tokens = MarkdownIt("commonmark").parse(md)
    assert sum(1 for t in tokens if t.type == "hr") == 1


def test_markdown_fence_longer_than_any_backtick_run():
    assert fence_for("plain") == "```"
    assert fence_for("has ``` inside") == "````"
    assert fence_for("has ````` five") == "``````"


@pytest.mark.parametrize(
    "payload",
    [
        "```\nrm -rf /\n```",
        "````python\nx = 1\n````\nafter",
        "text ``` inline and\n```\n# not a heading\n",
        "`` ` ```` ```````",
    ],
)
def test_markdown_content_cannot_break_fenced_blocks(payload):
    session = {
        "id": "s", "source": "cli", "started_at": T0, "title": "fences",
        "messages": [
            {"role": "assistant", "content": None, "timestamp": T0,
             "tool_calls": [{"id": "c", "function": {"name": "terminal", "arguments": payload}}]},
            {"role": "tool", "content": payload, "timestamp": T0 + 1, "tool_name": "terminal",
             "tool_call_id": "c"},
            {"role": "user", "content": "after the tool", "timestamp": T0 + 2},
        ],
    }
    md = session_to_markdown(session)
    fences = _fences(md)
    # Arguments that are not JSON are shown verbatim; both blocks hold the payload intact.
    assert [f.content for f in fences] == [payload.rstrip("\n") + "\n"] * 2
    assert _headings(md) == ["fences", "Assistant", "Tool result — terminal", "User"]


def test_markdown_unclosed_fence_in_message_text_is_closed():
    assert close_open_fence("look:\n```python\nprint(1)") == "look:\n```python\nprint(1)\n```\n"
    assert close_open_fence("```\nok\n```") == "```\nok\n```"
    assert close_open_fence("~~~~\nx\n~~~") == "~~~~\nx\n~~~\n~~~~\n"
    session = {
        "id": "s", "source": "cli", "started_at": T0, "title": None,
        "messages": [
            {"role": "assistant", "content": "Here:\n```python\nprint('cut off", "timestamp": T0},
            {"role": "user", "content": "thanks", "timestamp": T0 + 1},
        ],
    }
    md = session_to_markdown(session)
    assert _headings(md) == ["Untitled session", "Assistant", "User"]


def test_markdown_content_is_not_escaped():
    session = {
        "id": "s", "source": "cli", "started_at": T0, "title": "[bold]x[/bold] *y*",
        "messages": [{"role": "user", "content": "**bold** <b>html</b> [link](x)", "timestamp": T0}],
    }
    md = session_to_markdown(session)
    assert "# [bold]x[/bold] *y*\n" in md
    assert "**bold** <b>html</b> [link](x)\n" in md


def test_markdown_multimodal_content_decoded():
    content = "\x00json:" + json.dumps([{"type": "text", "text": "see this"},
                                        {"type": "image_url", "image_url": {"url": "data:..."}}])
    md = session_to_markdown({"id": "s", "source": "cli", "started_at": T0,
                              "messages": [{"role": "user", "content": content, "timestamp": T0}]})
    assert "see this\n\n[image]" in md and "\x00" not in md


def test_markdown_export_file(db, tmp_path):
    build_realistic(db)
    out = tmp_path / "t.md"
    assert export_to_path(db, out, "md", session_ids=["20250302_090200_dddddd"]) == 1
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# branch of weather\n")
    assert (out.stat().st_mode & 0o777) == 0o600


def test_render_chunks_rejects_unknown_format():
    with pytest.raises(ValueError, match="unknown export format"):
        list(render_chunks([], "csv"))


# ----------------------------------------------------------------------------- import (EX-3)


def test_ex3_round_trip_export_import_export_equal(db, tmp_path):
    build_realistic(db)
    first = tmp_path / "first.jsonl"
    export_to_path(db, first)

    target = SessionDB(tmp_path / "restored.db")
    try:
        report = import_jsonl(target, first)
        assert report.ok and report.errors == []
        assert len(report.imported) == 5 and report.messages == 11
        assert report.reassigned_message_ids == 0 and report.missing_parents == []
        second = tmp_path / "second.jsonl"
        export_to_path(target, second)
        assert second.read_bytes() == first.read_bytes()
        assert target.export_all() == db.export_all()
        # Lineage behaves the same after the round trip.
        assert [r["id"] for r in target.list_sessions_rich()] == [r["id"] for r in db.list_sessions_rich()]
        assert target.get_compression_tip("20250301_100000_aaaaaa") == "20250301_100020_bbbbbb"
    finally:
        target.close()


def test_ex3_round_trip_of_upstream_database(upstream_copy, tmp_path):
    source = SessionDB(upstream_copy(11))
    target = SessionDB(tmp_path / "restored.db")
    try:
        lines = list(render_chunks(iter_export(source), "jsonl"))
        report = import_jsonl(target, lines)
        assert report.ok and len(report.imported) == 5 and report.messages == 21
        # Same objects; key order follows each store's column order, which differs between
        # an upgraded store (reconciled columns appended) and a fresh one (UC-1).
        again = list(render_chunks(iter_export(target), "jsonl"))
        assert [json.loads(line) for line in again] == [json.loads(line) for line in lines]
        # The FTS triggers indexed the imported rows exactly like the originals.
        for table in ("messages_fts", "messages_fts_trigram"):
            count = f"SELECT COUNT(*) FROM {table}"
            assert target._conn.execute(count).fetchone() == source._conn.execute(count).fetchone()
        match = "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'terminal' ORDER BY rowid"
        hits = target._conn.execute(match).fetchall()
        assert len(hits) == 6 and hits == source._conn.execute(match).fetchall()
    finally:
        source.close()
        target.close()


def test_import_after_delete_restores_session_exactly_with_ids(db, tmp_path):
    build_realistic(db)
    before = db.export_session("20250301_100000_aaaaaa")
    line = session_to_jsonl(before)
    # Later messages exist elsewhere, so the deleted ids are below the AUTOINCREMENT high mark.
    db.delete_session("20250301_100000_aaaaaa")
    assert db.get_session("20250301_100000_aaaaaa") is None
    # The continuation was orphaned by the delete (LI-14); the import does not touch it.
    report = import_jsonl(db, [line])
    assert report.imported == ["20250301_100000_aaaaaa"] and report.reassigned_message_ids == 0
    assert db.export_session("20250301_100000_aaaaaa") == before
    hits = db._conn.execute(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'sunny'"
    ).fetchall()
    assert {row[0] for row in hits} >= {before["messages"][2]["id"], before["messages"][3]["id"]}


def test_import_existing_session_left_untouched(db):
    build_realistic(db)
    obj = db.export_session("20250301_100020_bbbbbb")
    changed = dict(obj, title="something else", messages=obj["messages"] + [
        {"role": "user", "content": "extra", "timestamp": T0 + 999}])
    report = import_jsonl(db, [json.dumps(changed)])
    assert report.skipped_existing == ["20250301_100020_bbbbbb"] and report.imported == []
    assert db.export_session("20250301_100020_bbbbbb") == obj
    assert db.message_count("20250301_100020_bbbbbb") == 2


def test_import_taken_message_ids_get_new_ids_in_order(db, tmp_path):
    build_realistic(db)
    obj = db.export_session("20250302_090000_cccccccc")
    copy = dict(obj, id="20250309_000000_ffffff")
    report = import_jsonl(db, [json.dumps(copy, ensure_ascii=False)])
    assert report.imported == ["20250309_000000_ffffff"]
    assert report.reassigned_message_ids == 3
    new = db.get_messages("20250309_000000_ffffff")
    assert [m["content"] for m in new] == ["", "東京の天気を教えて", "晴れです"]
    assert [m["timestamp"] for m in new] == [m["timestamp"] for m in obj["messages"]]
    assert not {m["id"] for m in new} & {m["id"] for m in obj["messages"]}


def test_import_recomputes_counters(db):
    line = json.dumps({
        "id": "s1", "source": "cli", "started_at": T0, "message_count": 999, "tool_call_count": 7,
        "messages": [
            {"role": "user", "content": "hi", "timestamp": T0 + 1},
            {"role": "assistant", "content": None, "timestamp": T0 + 2,
             "tool_calls": [{"id": "a"}, {"id": "b"}, {"id": "c"}]},
            {"role": "assistant", "content": None, "timestamp": T0 + 3, "tool_calls": {"id": "d"}},
            {"role": "tool", "content": "ok", "timestamp": T0 + 4},
        ],
    })
    report = import_jsonl(db, [line])
    assert report.ok
    row = db.get_session("s1")
    assert row["message_count"] == 4 and row["tool_call_count"] == 4  # MS-2: 3 + 1 + 0


def test_import_child_before_parent_links_restored(db):
    child = {"id": "child", "source": "cli", "started_at": T0 + 20, "parent_session_id": "root",
             "messages": []}
    root = {"id": "root", "source": "cli", "started_at": T0, "ended_at": T0 + 10,
            "end_reason": "compression", "messages": []}
    report = import_jsonl(db, [json.dumps(child) + "\n", json.dumps(root) + "\n"])
    assert report.ok and report.missing_parents == []
    assert db.get_session("child")["parent_session_id"] == "root"
    assert db.get_compression_tip("root") == "child"


def test_import_missing_parent_reported(db):
    report = import_jsonl(db, [json.dumps({"id": "orphan", "source": "cli", "started_at": T0,
                                           "parent_session_id": "gone", "messages": []})])
    assert report.imported == ["orphan"] and report.missing_parents == [("orphan", "gone")]
    assert db.get_session("orphan")["parent_session_id"] is None


def test_import_title_collision_reported_not_fatal(db):
    db.create_session("mine", "cli")
    db.set_session_title("mine", "my project")
    report = import_jsonl(db, [json.dumps({"id": "theirs", "source": "cli", "started_at": T0,
                                           "title": "my project", "messages": [
                                               {"role": "user", "content": "x", "timestamp": T0}]})])
    assert report.imported == ["theirs"]
    assert report.title_collisions == [("theirs", "my project", "mine")]
    assert db.get_session("theirs")["title"] is None
    assert db.message_count("theirs") == 1
    assert "1 title collision" in report.summary()


def test_import_bad_lines_reported_with_numbers_good_lines_kept(db, tmp_path):
    good = {"id": "good", "source": "cli", "started_at": T0,
            "messages": [{"role": "user", "content": "fine", "timestamp": T0}]}
    bad_message = {"id": "half", "source": "cli", "started_at": T0,
                   "messages": [{"role": "user", "content": "ok", "timestamp": T0},
                                {"role": "user", "content": {"not": "text"}, "timestamp": T0 + 1}]}
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join([
        "{not json",
        json.dumps(["a list"]),
        json.dumps({"source": "cli", "started_at": T0}),
        json.dumps({"id": "x", "source": "cli", "started_at": "yesterday"}),
        json.dumps(bad_message),
        "",
        json.dumps(good),
        json.dumps({"id": "y", "source": "cli", "started_at": T0, "messages": "nope"}),
        json.dumps({"id": "z", "source": "cli", "started_at": T0, "model": {"not": "text"},
                    "messages": [{"role": "user", "content": "rolled back", "timestamp": T0}]}),
        json.dumps(dict(good, id="good2")),
    ]) + "\n", encoding="utf-8")
    report = import_jsonl(db, path)
    assert report.imported == ["good", "good2"]
    assert [line for line, _ in report.errors] == [1, 2, 3, 4, 5, 8, 9]
    assert "model" in report.errors[-1][1]
    assert db.get_session("z") is None  # rejected inside the batch: its savepoint rolled back
    assert not report.ok
    assert db.get_session("half") is None  # nothing half-imported
    assert db.message_count() == 2


def test_import_in_small_batches_same_result(db, tmp_path, monkeypatch):
    """Batches split anywhere (here: every session) give the same store as one batch."""
    import hermes_state.export as export_module

    build_realistic(db)
    lines = list(render_chunks(iter_export(db), "jsonl"))
    monkeypatch.setattr(export_module, "_IMPORT_BATCH_ROWS", 1)
    target = SessionDB(tmp_path / "restored.db")
    try:
        report = import_jsonl(target, lines)
        assert report.ok and len(report.imported) == 5
        assert list(render_chunks(iter_export(target), "jsonl")) == lines
    finally:
        target.close()


def test_import_into_read_only_store_raises(db, tmp_path):
    db.close()
    ro = SessionDB(tmp_path / "state.db", read_only=True)
    try:
        with pytest.raises(ReadOnlyError):
            import_jsonl(ro, [json.dumps({"id": "s", "source": "cli", "started_at": T0})])
    finally:
        ro.close()


def test_import_progress_called_per_line(db):
    lines = [json.dumps({"id": f"s{i}", "source": "cli", "started_at": T0 + i}) for i in range(3)]
    calls = []
    import_jsonl(db, lines, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, -1), (2, -1), (3, -1)]


def test_hermes_state_export_does_not_import_ui():
    import subprocess
    import sys

    code = "import sys, hermes_state.export; print(any(m.split('.')[0] in ('textual', 'hermes_tui') for m in sys.modules))"
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(repo)}, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------- batched reader


@pytest.fixture(scope="module", params=[16, 30])
def corpus_store(request, tmp_path_factory):
    """A generated store of each layout (v30: prompts by hash, scaffolding, rewinds, ...)."""
    from hermes_workload.corpus import generate_corpus

    path = tmp_path_factory.mktemp(f"corpus{request.param}") / "state.db"
    generate_corpus(path, messages=4000, seed=5, now=1767225600.0, schema=request.param)
    return path


@pytest.mark.parametrize("batch_sessions,batch_messages", [(200, 8000), (7, 60), (1, 1)])
def test_batched_export_is_iter_export_all_byte_for_byte(corpus_store, monkeypatch, batch_sessions, batch_messages):
    """The batched reader (a snapshot per batch) writes exactly what
    SessionDB.iter_export_all writes, session by session, whatever the batch sizes."""
    from hermes_state import export as export_mod

    monkeypatch.setattr(export_mod, "EXPORT_BATCH_SESSIONS", batch_sessions)
    monkeypatch.setattr(export_mod, "EXPORT_BATCH_MESSAGES", batch_messages)
    db = SessionDB(corpus_store, read_only=True)
    try:
        expected = [session_to_jsonl(obj) for obj in db.iter_export_all()]
        got = [session_to_jsonl(obj) for obj in export_mod.iter_export_all_batched(db)]
        assert got == expected
        source = "telegram"
        assert [session_to_jsonl(o) for o in export_mod.iter_export_all_batched(db, source)] == [
            session_to_jsonl(o) for o in db.iter_export_all(source)
        ]
    finally:
        db.close()


def test_batched_export_skips_a_session_deleted_after_the_order_was_read(db):
    from hermes_state import export as export_mod

    for i in range(3):
        db.create_session(f"s{i}", "cli")
        db.append_message(f"s{i}", "user", f"hello {i}")
    ids, _counts = export_mod.export_plan(db, None)
    db.delete_session(ids[1])
    found = export_mod._read_batch(db.store, ids)
    assert set(found) == {ids[0], ids[2]}
    assert [m["content"] for m in found[ids[0]]["messages"]] == [db.get_messages(ids[0])[0]["content"]]


def test_batches_are_cut_by_the_counts_read_with_the_order(db):
    """The order statement reads each session's message count beside its id, and the batches
    are cut by those counts: a long session starts a batch of its own, short ones share, a
    count stored as text plans as 0."""
    from hermes_state import export as export_mod

    for i, length in enumerate([3, 3, 12, 2, 2, 2, 9, 1]):
        db.create_session(f"s{i}", "cli")
        for n in range(length):
            db.append_message(f"s{i}", "user", f"m{n}")
    db._execute_write(lambda conn: conn.execute("UPDATE sessions SET message_count = 'many' WHERE id = 's7'"))
    ids, counts = export_mod.export_plan(db, None)
    assert ids == [f"s{i}" for i in range(7, -1, -1)]  # most recently used first
    assert dict(zip(ids, counts)) == {"s0": 3, "s1": 3, "s2": 12, "s3": 2, "s4": 2, "s5": 2, "s6": 9, "s7": 0}
    planned = list(export_mod.plan_batches(ids, counts, 10))
    assert planned == [["s7", "s6"], ["s5", "s4", "s3"], ["s2"], ["s1", "s0"]]
    assert [b for b in planned if "s2" in b] == [["s2"]]
    assert sum(planned, []) == ids


def test_a_blob_in_a_message_is_exported_as_its_text(db, tmp_path):
    """SQLite does not enforce column types: content written as a blob (by another tool) is
    exported as its UTF-8 text, an invalid byte as U+FFFD, in JSONL and in Markdown -- an
    export of every session must not fail on one value."""
    db.create_session("blobby", "cli", model="m")
    first = db.append_message("blobby", "user", "plain text")
    second = db.append_message("blobby", "assistant", "to be a blob")
    db._execute_write(lambda conn: (
        conn.execute("UPDATE messages SET content = ? WHERE id = ?", ("résumé ✓".encode() + b"\xff", second)),
        conn.execute("UPDATE messages SET reasoning = ?, role = ? WHERE id = ?", (b"think", b"assistant", second)),
        conn.execute("UPDATE sessions SET title = ? WHERE id = 'blobby'", (b"blob title",)),
    ))
    jsonl = tmp_path / "all.jsonl"
    assert export_to_path(db, jsonl) == 1
    exported = json.loads(jsonl.read_text(encoding="utf-8"))
    contents = [m["content"] for m in exported["messages"]]
    assert contents == ["plain text", "résumé ✓\ufffd"] and first < second
    assert exported["messages"][1]["reasoning"] == "think" and exported["title"] == "blob title"
    markdown = tmp_path / "all.md"
    assert export_to_path(db, markdown, "md") == 1
    text = markdown.read_text(encoding="utf-8")
    assert text.startswith("# blob title\n") and "## Assistant" in text
    assert "résumé ✓\ufffd" in text and "think" in text and "b'" not in text
