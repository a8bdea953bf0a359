"""Claude Code transcripts: ``~/.claude/projects/<project>/<session id>.jsonl``.

The public shape of a transcript line (as Claude Code writes it and its readers describe
it): ``type`` (``user``, ``assistant``, ``summary``, ``system``, ``progress`` …), ``uuid`` /
``parentUuid``, ``sessionId``, ``timestamp`` (ISO 8601), ``cwd``, ``gitBranch``, and for a
user or assistant line ``message``: the API message. A user message's ``content`` is text or
a list of blocks (``text``, ``image``, ``tool_result`` with ``tool_use_id`` and its own
``content``); an assistant message carries ``model``, ``usage`` and blocks (``text``,
``thinking``, ``tool_use`` with ``id``, ``name``, ``input``) -- one line per block, several
lines sharing the message's ``id``, merged here into one message. A ``summary`` line
(``summary``) titles the conversation.

What is read: user and assistant messages with their times, tool calls (as Hermes stores
them: ``tool_calls`` of the assistant message) and tool results (``tool`` messages naming the
call and the tool), thinking as ``reasoning``, the model, the working directory and git
branch, the token totals (each API message's usage counted once), the title. What is left
out: hook and progress events, snapshots, lines Claude Code marks ``isMeta`` (text it injected,
not typed), and the inline sub-agent lines of old transcripts (``isSidechain``). A sub-agent's
own file (``agent-<id>.jsonl``, beside the session or under ``<session>/subagents/``) becomes a
delegate run of its session (``_delegate_from``), as Hermes records its sub-agents.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .common import Problem, Session, find_files, parse_time, read_lines, tool_call

SOURCE = "claude-code"
#: Imported session ids: this prefix and Claude Code's own session id (stable: a second
#: import finds them present).
ID_PREFIX = "claude-code-"
#: Claude Code's stand-in model for messages it made itself (errors, interruptions).
_SYNTHETIC_MODEL = "<synthetic>"


def default_root() -> Path:
    """``$CLAUDE_CONFIG_DIR/projects`` (Claude Code's own override), else ``~/.claude/projects``."""
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".claude") / "projects"


def _is_agent_file(path: Path) -> bool:
    return path.stem.startswith("agent-")


def transcript_files(root: Path) -> list[Path]:
    """Every transcript under ``root`` (or ``root`` itself), sessions before their sub-agents'
    files, so that a delegate run's parent is in the store when it is written."""
    return sorted(find_files(root), key=lambda p: (_is_agent_file(p), str(p)))


def _block_text(content: Any) -> str:
    """The text of a tool result's content: a string, or blocks (text kept, an image named)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif block.get("type") == "image":
                    parts.append("[image]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return "" if content is None else str(content)


class _Reader:
    def __init__(self, path: Path, problems: list[Problem]) -> None:
        self.path = path
        self.problems = problems
        self.agent = _is_agent_file(path)
        self.session_id: str | None = None
        self.session = Session(id="", source=SOURCE, path=path)
        self.tool_names: dict[str, str] = {}
        self.usage: dict[str, dict] = {}
        self.last_assistant: dict | None = None
        self.last_assistant_id: str | None = None
        self.summary: str | None = None
        self.custom_title: str | None = None

    def problem(self, line: int, reason: str) -> None:
        self.problems.append(Problem(self.path, line, reason))

    def read(self) -> Session | None:
        for number, obj in read_lines(self.path, self.problems):
            self.line(number, obj)
        return self.finish()

    def line(self, number: int, obj: dict) -> None:
        kind = obj.get("type")
        if kind == "summary":
            if isinstance(obj.get("summary"), str) and obj["summary"].strip():
                self.summary = obj["summary"].strip()
            return
        if kind == "custom-title":
            if isinstance(obj.get("customTitle"), str) and obj["customTitle"].strip():
                self.custom_title = obj["customTitle"].strip()
            return
        if kind not in ("user", "assistant"):
            return  # system, progress, file-history-snapshot, queue-operation …: not the conversation
        if obj.get("isSidechain") and not self.agent:
            return  # an old transcript's inline sub-agent turns
        if self.session_id is None and isinstance(obj.get("sessionId"), str) and obj["sessionId"]:
            self.session_id = obj["sessionId"]
        for key, attribute in (("cwd", "cwd"), ("gitBranch", "git_branch")):
            value = obj.get(key)
            if isinstance(value, str) and value and getattr(self.session, attribute) is None:
                setattr(self.session, attribute, value)
        when = parse_time(obj.get("timestamp"))
        if obj.get("timestamp") is not None and when is None:
            self.problem(number, "timestamp is not an ISO 8601 time")
        message = obj.get("message")
        if not isinstance(message, dict):
            self.problem(number, f"a {kind} line without a message object")
            return
        if kind == "user":
            if not obj.get("isMeta"):
                self.user(number, message, when)
        else:
            self.assistant(number, message, when)

    def user(self, number: int, message: dict, when: float | None) -> None:
        content = message.get("content")
        self.last_assistant = None
        if isinstance(content, str):
            self.session.add("user", content, when)
            return
        if not isinstance(content, list):
            self.problem(number, "user content is neither text nor a list of blocks")
            return
        texts: list[str] = []
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "image":
                texts.append("[image]")
            elif kind == "tool_result":
                call_id = block.get("tool_use_id") if isinstance(block.get("tool_use_id"), str) else None
                self.session.add("tool", _block_text(block.get("content")), when,
                                 tool_call_id=call_id, tool_name=self.tool_names.get(call_id or ""))
        if texts:
            self.session.add("user", "\n".join(texts), when)

    def assistant(self, number: int, message: dict, when: float | None) -> None:
        model = message.get("model")
        if isinstance(model, str) and model and model != _SYNTHETIC_MODEL:
            self.session.model = model  # the last one used
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        if message_id and isinstance(message.get("usage"), dict):
            self.usage[message_id] = message["usage"]  # repeated on each line of the message: once
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            self.problem(number, "assistant content is neither text nor a list of blocks")
            return
        texts, thoughts, calls = [], [], []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                thoughts.append(block["thinking"])
            elif kind == "tool_use":
                call_id = block.get("id") if isinstance(block.get("id"), str) else None
                name = block.get("name") if isinstance(block.get("name"), str) else None
                if call_id and name:
                    self.tool_names[call_id] = name
                calls.append(tool_call(call_id, name, block.get("input") or {}))
        target = self.last_assistant if (message_id and message_id == self.last_assistant_id) else None
        if target is None:
            target = self.session.add("assistant", None, when)
            self.last_assistant, self.last_assistant_id = target, message_id
        else:
            self.session.seen(when)
        if texts:
            joined = "\n\n".join(texts)
            target["content"] = f"{target['content']}\n\n{joined}" if target.get("content") else joined
        if thoughts:
            joined = "\n\n".join(thoughts)
            target["reasoning"] = f"{target['reasoning']}\n\n{joined}" if target.get("reasoning") else joined
        if calls:
            target.setdefault("tool_calls", []).extend(calls)
        stop = message.get("stop_reason")
        if isinstance(stop, str):
            target["finish_reason"] = stop

    def finish(self) -> Session | None:
        session = self.session
        # An assistant message of thinking alone (its text came in no line) has no content.
        session.messages = [m for m in session.messages
                            if m["role"] != "assistant" or m.get("content") or m.get("tool_calls") or m.get("reasoning")]
        own = self.path.stem
        sid = self.session_id or own
        if self.agent:
            parent = ID_PREFIX + sid
            session.id = f"{parent}-{own}"
            session.parent_session_id = parent
            session.model_config = {"_delegate_from": parent}
        else:
            # The file is named by its session id; a file renamed by hand keeps the id inside it.
            session.id = ID_PREFIX + (own if self.session_id in (None, own) else sid)
        session.title = self.custom_title or self.summary
        for usage in self.usage.values():
            session.input_tokens += _int(usage.get("input_tokens"))
            session.output_tokens += _int(usage.get("output_tokens"))
            session.cache_read_tokens += _int(usage.get("cache_read_input_tokens"))
            session.cache_write_tokens += _int(usage.get("cache_creation_input_tokens"))
        return session


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def read_session(path: Path, problems: list[Problem]) -> Session | None:
    """The conversation of one transcript file (its unreadable lines named in ``problems``)."""
    return _Reader(path, problems).read()
