"""An export never carries a terminal control raw where it would be shown (an OSC 0 in a
message retitled the terminal through an export to stdout), and a file keeps every stored
value exactly.

* JSONL: JSON escapes C0 itself; DEL, C1 and bidi controls are ``\\uXXXX`` too -- in files and
  on stdout, one process or several -- and decode to the stored text.
* Markdown: exact by default (a file); with ``visible_controls`` (read on a terminal) every
  control but newline and tab is shown.
* An import of the file gives back every message field (the platform's message id included).
"""

from __future__ import annotations

import io
import json
import re

import pytest

from hermes_state import SessionDB, export_parallel
from hermes_state.export import export_to_path, export_to_stream, import_jsonl, render_chunks
from hermes_state.export_parallel import export_to_path as export_to_path_fast

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
PAYLOAD = "\x1b]0;pwned\x07 \x1b]52;c;Y3VybA==\x07 \x1b[2J \x9b31m \u202eevil \u2066iso\u2069 del\x7f nul\x00end\rcr"


def hostile_store(db: SessionDB) -> None:
    db.create_session("s-ctl", "cli", model="m" + PAYLOAD, system_prompt="p" + PAYLOAD, cwd="/w" + PAYLOAD)
    db.append_message("s-ctl", "user", "u" + PAYLOAD, platform_message_id="tg-1")
    db.append_message("s-ctl", "assistant", "a" + PAYLOAD, reasoning="r" + PAYLOAD, tool_calls=[
        {"id": "c" + PAYLOAD, "type": "function",
         "function": {"name": "t" + PAYLOAD, "arguments": json.dumps({"x": PAYLOAD}, ensure_ascii=False)}}])
    db.append_message("s-ctl", "tool", "result" + PAYLOAD, tool_name="t" + PAYLOAD, tool_call_id="c" + PAYLOAD)
    db.set_session_title("s-ctl", "title \x9b31m \u202e kept by TI-1")
    db.create_session("s-plain", "telegram")
    db.append_message("s-plain", "user", "桂林 weather — “quoted”")


def lines_of(text: str) -> dict[str, dict]:
    return {obj["id"]: obj for obj in map(json.loads, filter(None, text.split("\n")))}


def test_a_jsonl_file_has_no_raw_control_and_decodes_to_the_stored_values(db, tmp_path):
    hostile_store(db)
    target = tmp_path / "all.jsonl"
    export_to_path(db, target)
    text = target.read_bytes().decode("utf-8")
    assert RAW.findall(text.replace("\n", "")) == []
    assert "\\u009b" in text and "\\u202e" in text and "\\u007f" in text and "\\u001b" in text
    assert "桂林 weather — “quoted”" in text  # other text as EX-3 writes it
    assert lines_of(text) == {obj["id"]: obj for obj in db.export_all()}
    stream = io.StringIO()
    export_to_stream(db, stream)
    assert stream.getvalue() == text


def test_workers_escape_the_same_code_points_as_one_process(db, db_path, tmp_path, monkeypatch):
    hostile_store(db)
    db.close()
    monkeypatch.setattr(export_parallel, "PARALLEL_MIN_MESSAGES", 0)
    monkeypatch.setenv(export_parallel.WORKERS_ENV, "2")
    reopened = SessionDB(db_path, read_only=True)  # (workers read a store that was opened, not born)
    try:
        assert export_parallel.suitable(reopened, None)
        one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
        export_to_path(reopened, one)
        export_to_path_fast(reopened, many)  # encoded by worker processes
    finally:
        reopened.close()
    assert many.read_bytes() == one.read_bytes()
    assert "\\u009b" in many.read_text(encoding="utf-8")


def test_markdown_for_a_terminal_shows_controls_and_a_file_keeps_them(db, tmp_path):
    hostile_store(db)
    exact = "".join(render_chunks(db.export_all(), "md"))
    assert "u" + PAYLOAD in exact and "t" + PAYLOAD in exact  # content and tool name, byte for byte
    shown = io.StringIO()
    assert export_to_stream(db, shown, "md", visible_controls=True) == 2
    text = shown.getvalue()
    assert RAW.findall(text) == []
    assert "\u241b]0;pwned\u2407" in text  # ␛ ␇: legible, not executed
    assert "nul\u2400end\u240dcr" in text  # NUL and a lone CR shown
    assert "m\u241b]0;pwned" in text  # the model too
    target = tmp_path / "all.md"
    export_to_path(db, target, "md")
    assert target.read_bytes().decode("utf-8") == exact


def test_an_import_gives_back_every_message_field(db, tmp_path):
    hostile_store(db)
    first = tmp_path / "first.jsonl"
    export_to_path(db, first)
    restored = SessionDB(tmp_path / "restored.db")
    try:
        report = import_jsonl(restored, first)
        assert report.ok and len(report.imported) == 2
        assert restored.export_all() == db.export_all()
        assert restored.get_messages("s-ctl")[0]["platform_message_id"] == "tg-1"
    finally:
        restored.close()


@pytest.mark.parametrize("value", [{"nested": 1}, [1]])
def test_an_import_refuses_a_platform_message_id_that_is_not_a_plain_value(db, value):
    line = json.dumps({"id": "x", "source": "cli", "started_at": 1.0,
                       "messages": [{"role": "user", "content": "hi", "platform_message_id": value}]})
    report = import_jsonl(db, [line])
    assert report.errors and "platform_message_id" in report.errors[0][1]
