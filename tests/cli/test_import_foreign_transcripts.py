"""CLI-20: ``import --from claude-code|codex [PATH]`` -- real processes, transcripts
written here from the formats' public descriptions (none of their files is committed),
into new stores and into upstream's v16 and v30 stores written in place."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from hermes_state import SessionDB

from process_helpers import assert_store_sound, hermes, shape

CC_ID = "5f0c7e1a-1111-4222-8333-944455556666"
CX_ID = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
OLD_CX_ID = "5e1d2c3b-aaaa-4bbb-8ccc-000011112222"


def _line(**fields) -> str:
    return json.dumps(fields, ensure_ascii=False)


def write_claude_code(root: Path, session_id: str = CC_ID, *, broken: bool = True, agent: bool = True) -> Path:
    """A Claude Code project with one transcript (and a sub-agent's file under the session)."""
    project = root / "-home-ada-proj"
    project.mkdir(parents=True, exist_ok=True)
    common = {"sessionId": session_id, "cwd": "/home/ada/proj", "gitBranch": "main", "version": "2.1.17",
              "isSidechain": False, "userType": "external"}
    lines = [
        _line(type="summary", summary="Fix the flaky login test", leafUuid="u5"),
        _line(**common, type="user", uuid="u1", parentUuid=None, timestamp="2026-04-01T10:00:00.000Z",
              message={"role": "user", "content": "Why does test_login fail? FLAKYWORD 桂林"}),
        _line(**common, type="user", uuid="u1m", parentUuid="u1", timestamp="2026-04-01T10:00:00.500Z", isMeta=True,
              message={"role": "user", "content": "<local-command-caveat>injected</local-command-caveat>"}),
        _line(**common, type="assistant", uuid="u2", parentUuid="u1", timestamp="2026-04-01T10:00:01.000Z",
              message={"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
                       "content": [{"type": "thinking", "thinking": "Read the test first."}],
                       "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 5}}),
        _line(**common, type="assistant", uuid="u3", parentUuid="u2", timestamp="2026-04-01T10:00:02.000Z",
              message={"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-6",
                       "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                    "input": {"command": "pytest -k login"}}],
                       "stop_reason": "tool_use",
                       "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 5}}),
        _line(**common, type="system", subtype="stop_hook_summary", uuid="s1", timestamp="2026-04-01T10:00:02.500Z"),
        _line(**common, type="user", uuid="u4", parentUuid="u3", timestamp="2026-04-01T10:00:03.000Z",
              message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                     "content": [{"type": "text", "text": "1 failed"}]}]}),
        _line(**common, type="assistant", uuid="u5", parentUuid="u4", timestamp="2026-04-01T10:00:04.000Z",
              message={"id": "msg_2", "role": "assistant", "model": "claude-opus-4-6",
                       "content": [{"type": "text", "text": "The fixture leaks state."}],
                       "usage": {"input_tokens": 50, "output_tokens": 10}}),
    ]
    if broken:
        lines.insert(3, "{not json")
        lines.append(_line(**common, type="user", uuid="u6", timestamp="2026-04-01T10:00:05.000Z"))  # no message
    transcript = project / f"{session_id}.jsonl"
    transcript.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if agent:
        sub = project / session_id / "subagents"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / "agent-a1b2.jsonl").write_text("\n".join([
            _line(**{**common, "isSidechain": True}, type="user", uuid="a1", timestamp="2026-04-01T10:00:01.500Z",
                  message={"role": "user", "content": "Search the repo for login"}),
            _line(**{**common, "isSidechain": True}, type="assistant", uuid="a2", timestamp="2026-04-01T10:00:01.700Z",
                  message={"id": "msg_a", "role": "assistant", "model": "claude-haiku-4-5",
                           "content": [{"type": "text", "text": "Found tests/test_login.py"}]}),
        ]) + "\n", encoding="utf-8")
    return transcript


def write_codex(root: Path) -> Path:
    """A Codex sessions tree: one rollout of today's envelope, one of 2025's plain lines, and
    the thread index beside ``sessions/``."""
    day = root / "sessions" / "2026" / "04" / "29"
    day.mkdir(parents=True, exist_ok=True)
    rollout = day / f"rollout-2026-04-29T08-14-22-{CX_ID}.jsonl"
    rollout.write_text("\n".join([
        _line(timestamp="2026-04-29T08:14:22.100Z", type="session_meta",
              payload={"id": CX_ID, "timestamp": "2026-04-29T08:14:22.000Z", "cwd": "/work/app",
                       "git": {"branch": "feature/x"}}),
        _line(timestamp="2026-04-29T08:14:22.200Z", type="response_item",
              payload={"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]}),
        _line(timestamp="2026-04-29T08:14:22.300Z", type="response_item",
              payload={"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}]}),
        _line(timestamp="2026-04-29T08:14:23.000Z", type="turn_context", payload={"cwd": "/work/app", "model": "gpt-5.2-codex"}),
        _line(timestamp="2026-04-29T08:14:23.100Z", type="response_item",
              payload={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the files CODEXWORD"}]}),
        _line(timestamp="2026-04-29T08:14:23.150Z", type="event_msg", payload={"type": "user_message", "message": "List the files"}),
        _line(timestamp="2026-04-29T08:14:24.000Z", type="response_item",
              payload={"type": "reasoning", "summary": [{"type": "summary_text", "text": "Run ls."}]}),
        _line(timestamp="2026-04-29T08:14:24.500Z", type="response_item",
              payload={"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "call_1"}),
        _line(timestamp="2026-04-29T08:14:25.000Z", type="response_item",
              payload={"type": "function_call_output", "call_id": "call_1",
                       "output": json.dumps({"output": "README.md\nsrc\n", "metadata": {"exit_code": 0}})}),
        _line(timestamp="2026-04-29T08:14:26.000Z", type="response_item",
              payload={"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "README.md and src."}]}),
        _line(timestamp="2026-04-29T08:14:26.100Z", type="event_msg",
              payload={"type": "token_count", "info": {"total_token_usage": {
                  "input_tokens": 1200, "cached_input_tokens": 300, "output_tokens": 80, "reasoning_output_tokens": 20}}}),
        _line(timestamp="2026-04-29T08:14:27.000Z", type="response_item", payload="broken"),
    ]) + "\n", encoding="utf-8")
    old = root / "sessions" / "2025" / "05" / "01"
    old.mkdir(parents=True, exist_ok=True)
    (old / f"rollout-2025-05-01T09-00-00-{OLD_CX_ID}.jsonl").write_text("\n".join([
        _line(id=OLD_CX_ID, timestamp="2025-05-01T09:00:00.000Z", instructions=None),
        _line(record_type="state"),
        _line(type="message", role="user", content=[{"type": "input_text", "text": "old format question"}]),
        _line(type="message", role="assistant", content=[{"type": "output_text", "text": "old format answer"}]),
    ]) + "\n", encoding="utf-8")
    (root / "session_index.jsonl").write_text(_line(id=CX_ID, thread_name="List the files") + "\n", encoding="utf-8")
    return rollout


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "hermes-home"  # not created: the import creates the store


def _messages(home: Path, session_id: str) -> list[dict]:
    db = SessionDB(home / "state.db", read_only=True)
    try:
        return db.get_messages(session_id)
    finally:
        db.close()


def _session(home: Path, session_id: str) -> dict:
    db = SessionDB(home / "state.db", read_only=True)
    try:
        return db.get_session(session_id)
    finally:
        db.close()


def _counts(home: Path) -> tuple[int, int]:
    conn = sqlite3.connect(home / "state.db")
    try:
        return (conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
                conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


def test_claude_code_import_keeps_roles_tool_calls_results_times_model_cwd_and_title(home, tmp_path):
    transcript = write_claude_code(tmp_path / "claude")
    result = hermes(home, "import", "--from", "claude-code", str(tmp_path / "claude"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Imported 2 sessions (6 messages) from Claude Code.\n"
    sid = f"claude-code-{CC_ID}"
    session = _session(home, sid)
    assert (session["source"], session["title"], session["model"], session["cwd"]) == (
        "claude-code", "Fix the flaky login test", "claude-opus-4-6", "/home/ada/proj")
    assert session["input_tokens"] == 150 and session["output_tokens"] == 30  # msg_1's usage counted once
    assert session["message_count"] == 4 and session["tool_call_count"] == 1
    messages = _messages(home, sid)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[0]["content"] == "Why does test_login fail? FLAKYWORD 桂林"
    assert messages[0]["timestamp"] == 1775037600.0  # 2026-04-01T10:00:00Z
    assert messages[1]["reasoning"] == "Read the test first."
    assert messages[1]["tool_calls"] == [{"id": "toolu_1", "type": "function",
                                          "function": {"name": "Bash", "arguments": '{"command": "pytest -k login"}'}}]
    assert (messages[2]["tool_call_id"], messages[2]["tool_name"], messages[2]["content"]) == ("toolu_1", "Bash", "1 failed")
    assert messages[3]["content"] == "The fixture leaks state."
    assert session["started_at"] == 1775037600.0 and session["ended_at"] == 1775037604.0
    # the sub-agent's file: a delegate run of the session
    child = _session(home, f"{sid}-agent-a1b2")
    assert child["parent_session_id"] == sid and json.loads(child["model_config"]) == {"_delegate_from": sid}
    # the unreadable lines: counted and named file:line, on stderr only
    assert "Skipped 2 lines that could not be read:" in result.stderr
    assert f"{transcript}:4: not JSON" in result.stderr
    assert f"{transcript}:10: a user line without a message object" in result.stderr


def test_a_second_import_adds_nothing(home, tmp_path):
    write_claude_code(tmp_path / "claude")
    write_codex(tmp_path / "codex")
    for fmt, root in (("claude-code", tmp_path / "claude"), ("codex", tmp_path / "codex" / "sessions")):
        assert hermes(home, "import", "--from", fmt, str(root)).returncode == 0
    before = _counts(home)
    for fmt, root in (("claude-code", tmp_path / "claude"), ("codex", tmp_path / "codex" / "sessions")):
        again = hermes(home, "import", "--from", fmt, str(root))
        assert again.returncode == 0
        assert again.stdout.startswith("Imported 0 sessions (0 messages)") and "2 already present" in again.stdout
    assert _counts(home) == before


def test_codex_import_reads_todays_envelope_and_2025s_plain_lines(home, tmp_path):
    rollout = write_codex(tmp_path / "codex")
    result = hermes(home, "import", "--from", "codex", str(tmp_path / "codex" / "sessions"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Imported 2 sessions (6 messages) from Codex.\n"
    session = _session(home, f"codex-{CX_ID}")
    assert (session["source"], session["title"], session["model"], session["cwd"]) == (
        "codex", "List the files", "gpt-5.2-codex", "/work/app")
    assert (session["input_tokens"], session["output_tokens"]) == (1200, 80)
    messages = _messages(home, f"codex-{CX_ID}")
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[0]["content"] == "List the files CODEXWORD"  # the injected context left out
    assert messages[1]["reasoning"] == "Run ls." and messages[1]["tool_calls"][0]["function"]["name"] == "shell"
    assert (messages[2]["tool_call_id"], messages[2]["tool_name"], messages[2]["content"]) == ("call_1", "shell", "README.md\nsrc\n")
    assert messages[0]["timestamp"] == pytest.approx(1777450463.1)
    old = _messages(home, f"codex-{OLD_CX_ID}")
    assert [(m["role"], m["content"]) for m in old] == [("user", "old format question"), ("assistant", "old format answer")]
    assert f"{rollout}:12: a response_item line whose payload is not an object" in result.stderr


@pytest.mark.parametrize("version", [16, 30])
def test_import_writes_upstream_stores_in_place(upstream_copy, tmp_path, version):
    home = tmp_path / f"home-v{version}"
    home.mkdir()
    shutil.copyfile(upstream_copy(version), home / "state.db")
    before = shape(home / "state.db")
    write_claude_code(tmp_path / "claude")
    write_codex(tmp_path / "codex")
    assert hermes(home, "import", "--from", "claude-code", str(tmp_path / "claude")).returncode == 0
    assert hermes(home, "import", "--from", "codex", str(tmp_path / "codex" / "sessions")).returncode == 0
    assert shape(home / "state.db") == before
    assert_store_sound(home / "state.db")
    db = SessionDB(home / "state.db", read_only=True)
    try:
        found = {hit["session_id"] for hit in db.search_messages("FLAKYWORD")}
        assert found == {f"claude-code-{CC_ID}"}
        assert {hit["session_id"] for hit in db.search_messages("CODEXWORD")} == {f"codex-{CX_ID}"}
        session = db.get_session(f"codex-{CX_ID}")
        if version == 30:
            assert session["created_source"] == "codex" and session["last_activity_at"] == session["ended_at"]
    finally:
        db.close()
    listed = json.loads(hermes(home, "list", "--json", "--source", "claude-code").stdout)["sessions"]
    assert [item["id"] for item in listed] == [f"claude-code-{CC_ID}"]  # the delegate run listed under it


def test_default_locations_follow_home_and_the_tools_own_overrides(home, tmp_path):
    fake_home = tmp_path / "user"
    write_claude_code(fake_home / ".claude" / "projects", broken=False, agent=False)
    result = hermes(home, "import", "--from", "claude-code", extra_env={"HOME": str(fake_home)})
    assert result.returncode == 0 and result.stdout.startswith("Imported 1 session (4 messages)")
    write_codex(tmp_path / "elsewhere")
    result = hermes(home, "import", "--from", "codex",
                    extra_env={"HOME": str(fake_home), "CODEX_HOME": str(tmp_path / "elsewhere")})
    assert result.returncode == 0 and result.stdout.startswith("Imported 2 sessions")


def test_a_missing_path_is_one_line_and_no_store_is_made(home, tmp_path):
    result = hermes(home, "import", "--from", "codex", str(tmp_path / "nowhere"))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == f"Error: cannot read {tmp_path / 'nowhere'}: no such file or directory\n"
    assert not (home / "state.db").exists()


def test_import_without_input_or_from_is_a_usage_error(home):
    result = hermes(home, "import")
    assert result.returncode == 2 and result.stdout == "" and "INPUT" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_empty_directory_imports_nothing_and_says_so(home, tmp_path):
    (tmp_path / "empty").mkdir()
    result = hermes(home, "import", "--from", "claude-code", str(tmp_path / "empty"))
    assert result.returncode == 0
    assert result.stdout == "Imported 0 sessions (0 messages) from Claude Code.\n"
    assert "No Claude Code transcripts (*.jsonl) under" in result.stderr


def test_a_file_in_another_format_is_said_to_hold_no_such_conversation(home, tmp_path):
    """Our own export given to --from claude-code answered "Imported 0 sessions" and nothing
    else: the person could not tell a wrong format from an empty transcript."""
    ours = tmp_path / "export.jsonl"
    ours.write_text(json.dumps({"id": "s1", "source": "cli", "messages": [
        {"role": "user", "content": "hello"}]}) + "\n", encoding="utf-8")
    result = hermes(home, "import", "--from", "claude-code", str(ours))
    assert result.returncode == 0
    assert result.stdout == "Imported 0 sessions (0 messages) from Claude Code.\n"
    assert "looked like a Claude Code conversation" in result.stderr
    assert "hermes sessions import FILE" in result.stderr


def test_a_file_name_with_a_control_is_named_inert(home, tmp_path):
    root = tmp_path / "evil\x1b]0;x\x07dir"
    write_claude_code(root, agent=False)
    result = hermes(home, "import", "--from", "claude-code", str(root))
    assert result.returncode == 0
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr and "␛]0;x␇dir" in result.stderr


@pytest.mark.skipif(os.name != "posix", reason="pseudo-terminal")
def test_progress_is_drawn_on_a_terminal_and_stdout_keeps_one_line(home, tmp_path):
    import re
    import select
    import subprocess
    import sys

    from process_helpers import REPO

    for n in range(3):
        write_claude_code(tmp_path / "claude", session_id=f"5f0c7e1a-1111-4222-8333-94445555000{n}",
                          broken=False, agent=False)
    master, slave = os.openpty()
    env = dict(os.environ, PYTHONPATH=str(REPO), TERM="xterm-256color", HERMES_HOME=str(home))
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", "import", "--from", "claude-code", str(tmp_path / "claude")],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=REPO,
    )
    os.close(slave)
    out, _ = proc.communicate(timeout=120)
    seen = b""
    while select.select([master], [], [], 0.2)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.returncode == 0 and out == b"Imported 3 sessions (12 messages) from Claude Code.\n"
    assert b"importing" in re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", seen)


@pytest.mark.parametrize("version", [None, 30])
def test_a_transcript_that_grew_adds_only_its_new_messages(upstream_copy, home, tmp_path, version):
    if version:
        home.mkdir()
        shutil.copyfile(upstream_copy(version), home / "state.db")
    transcript = write_claude_code(tmp_path / "claude", broken=False, agent=False)
    assert hermes(home, "import", "--from", "claude-code", str(tmp_path / "claude")).returncode == 0
    sid = f"claude-code-{CC_ID}"
    before = _messages(home, sid)
    with open(transcript, "a", encoding="utf-8") as handle:  # the conversation went on
        handle.write(_line(type="user", sessionId=CC_ID, uuid="u7", timestamp="2026-04-02T09:00:00.000Z",
                           message={"role": "user", "content": "And now CONTINUEDWORD?"}) + "\n")
        handle.write(_line(type="assistant", sessionId=CC_ID, uuid="u8", timestamp="2026-04-02T09:00:05.000Z",
                           message={"id": "msg_9", "role": "assistant", "model": "claude-opus-4-7",
                                    "content": [{"type": "text", "text": "Done."}],
                                    "usage": {"input_tokens": 10, "output_tokens": 2}}) + "\n")
    again = hermes(home, "import", "--from", "claude-code", str(tmp_path / "claude"))
    assert again.returncode == 0
    assert again.stdout == "Imported 0 sessions (0 messages) from Claude Code; 1 continued (+2 messages).\n"
    after = _messages(home, sid)
    assert after[:len(before)] == before  # what was stored is untouched
    assert [(m["role"], m["content"]) for m in after[len(before):]] == [("user", "And now CONTINUEDWORD?"), ("assistant", "Done.")]
    session = _session(home, sid)
    assert session["message_count"] == len(after) and session["ended_at"] == parse_iso("2026-04-02T09:00:05Z")
    assert session["model"] == "claude-opus-4-7" and session["input_tokens"] == 160
    third = hermes(home, "import", "--from", "claude-code", str(tmp_path / "claude"))
    assert third.stdout == "Imported 0 sessions (0 messages) from Claude Code; 1 already present.\n"
    db = SessionDB(home / "state.db", read_only=True)
    try:
        assert {hit["session_id"] for hit in db.search_messages("CONTINUEDWORD")} == {sid}
    finally:
        db.close()
    if version:
        assert_store_sound(home / "state.db")


def parse_iso(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_an_imported_title_is_cleaned_as_a_typed_one_and_a_long_one_is_cut(home, tmp_path):
    write_claude_code(tmp_path / "claude", broken=False, agent=False)
    transcript = next((tmp_path / "claude").rglob("*.jsonl"))
    lines = transcript.read_text(encoding="utf-8").splitlines()
    lines[0] = _line(type="summary", summary="Fix\nthe \x1b[31mlogin\u202e " + "word " * 60, leafUuid="u5")
    transcript.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert hermes(home, "import", "--from", "claude-code", str(tmp_path / "claude")).returncode == 0
    title = _session(home, f"claude-code-{CC_ID}")["title"]
    assert title.startswith("Fix the [31mlogin word word") and title.endswith("\u2026") and len(title) <= 100
    assert "\x1b" not in title and "\n" not in title and "\u202e" not in title


def test_a_store_whose_tokenizer_cannot_load_refuses_in_one_line_and_keeps_everything(upstream_copy, home, tmp_path):
    """UC-7: the CJK index's tokenizer lives in an extension this process lacks; a message
    insert would fire its trigger. The import refuses in one line; nothing is written."""
    home.mkdir()
    shutil.copyfile(upstream_copy("30_cjkext"), home / "state.db")
    before = shape(home / "state.db"), _counts(home)
    write_codex(tmp_path / "codex")
    result = hermes(home, "import", "--from", "codex", str(tmp_path / "codex" / "sessions"))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "no such tokenizer" in result.stderr
    assert (shape(home / "state.db"), _counts(home)) == before


def test_path_may_name_one_transcript_file(home, tmp_path):
    rollout = write_codex(tmp_path / "codex")
    result = hermes(home, "import", "--from", "codex", str(rollout))
    assert result.returncode == 0 and result.stdout == "Imported 1 session (4 messages) from Codex.\n"
    assert _session(home, f"codex-{CX_ID}")["title"] == "List the files"  # the index of its Codex home
