"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl``.

The public shape of a rollout line (as Codex writes it and its readers describe it):
``{"timestamp": ISO 8601, "type": …, "payload": {…}}`` where ``type`` is ``session_meta``
(first line: ``id``, ``cwd``, ``git`` …), ``turn_context`` (per turn: ``model``, ``cwd``),
``response_item`` (what the model exchanged: ``message`` with a ``role`` and content blocks
``input_text`` / ``output_text``, ``reasoning`` with its ``summary``, ``function_call`` /
``custom_tool_call`` / ``local_shell_call`` with a ``call_id``, and their
``function_call_output`` / ``custom_tool_call_output``) or ``event_msg`` (the UI's events,
among them ``token_count``). Rollouts written before that envelope (2025) hold the meta object
as the first line and the response items as plain lines; both are read.

What is read: user and assistant messages, tool calls (as Hermes stores them) and their
outputs (``tool`` messages naming the call and the tool), reasoning summaries (as the next
assistant message's ``reasoning``), the model, the working directory and git branch, the last
token totals, and the title Codex keeps for the thread in ``session_index.jsonl`` beside
``sessions/``. Left out: ``developer`` / ``system`` messages, the context Codex injects as a
user message (``<environment_context>``, ``<user_instructions>``, AGENTS.md), and
``event_msg`` lines other than token counts (they repeat the response items for the UI).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from .common import Problem, Session, find_files, parse_time, read_lines, tool_call

SOURCE = "codex"
#: Imported session ids: this prefix and Codex's own session id.
ID_PREFIX = "codex-"
#: Response item types (the payload of a ``response_item`` line, or a legacy line itself).
ITEM_TYPES = frozenset({
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "web_search_call",
})
#: User messages Codex writes itself (the environment and the instructions files).
_INJECTED_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
_UUID_TAIL = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")


def default_root() -> Path:
    """``$CODEX_HOME/sessions`` (Codex's own override), else ``~/.codex/sessions``."""
    base = os.environ.get("CODEX_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".codex") / "sessions"


def transcript_files(root: Path) -> list[Path]:
    return find_files(root)


def thread_names(root: Path) -> dict[str, str]:
    """Codex's titles of its threads (``session_index.jsonl`` beside ``sessions/``), by id:
    looked for in ``root`` and the folders above it (a PATH naming one rollout, or a day's
    folder, finds the index of the Codex home it lies in)."""
    candidates = [root, *list(root.parents)[:6]]
    for index in (folder / "session_index.jsonl" for folder in candidates):
        if not index.is_file():
            continue
        names: dict[str, str] = {}
        try:
            with open(index, encoding="utf-8", errors="replace") as handle:
                for raw in handle:
                    try:
                        entry = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(entry, dict) and isinstance(entry.get("id"), str) \
                            and isinstance(entry.get("thread_name"), str) and entry["thread_name"].strip():
                        names[entry["id"]] = entry["thread_name"].strip()
        except OSError:
            return {}
        return names
    return {}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict):
            if isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif block.get("type") in ("input_image", "image"):
                parts.append("[image]")
    return "\n".join(parts)


def _output_text(output: Any) -> str:
    """A tool's output: a string, or an object carrying it (``output`` / ``content``)."""
    if isinstance(output, str):
        # A shell call's output is itself JSON text: {"output": "...", "metadata": {...}}.
        if output.startswith("{") and '"output"' in output:
            try:
                decoded = json.loads(output)
            except ValueError:
                return output
            if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
                return decoded["output"]
        return output
    if isinstance(output, dict):
        for key in ("output", "content"):
            if key in output:
                return _output_text(output[key])
    if isinstance(output, list):
        return _text(output)
    return "" if output is None else json.dumps(output, ensure_ascii=False)


class _Reader:
    def __init__(self, path: Path, problems: list[Problem], titles: dict[str, str]) -> None:
        self.path = path
        self.problems = problems
        self.titles = titles
        self.session = Session(id="", source=SOURCE, path=path)
        self.session_id: str | None = None
        self.tool_names: dict[str, str] = {}
        self.reasoning: list[str] = []
        self.seen_meta = False

    def problem(self, line: int, reason: str) -> None:
        self.problems.append(Problem(self.path, line, reason))

    def read(self) -> Session:
        for number, obj in read_lines(self.path, self.problems):
            self.line(number, obj)
        return self.finish()

    def line(self, number: int, obj: dict) -> None:
        when = parse_time(obj.get("timestamp"))
        if "payload" in obj:
            kind, payload = obj.get("type"), obj.get("payload")
            if not isinstance(payload, dict):
                self.problem(number, f"a {kind} line whose payload is not an object")
                return
            if kind == "session_meta":
                self.meta(payload, when)
            elif kind == "turn_context":
                if isinstance(payload.get("model"), str) and payload["model"]:
                    self.session.model = payload["model"]
                if isinstance(payload.get("cwd"), str) and payload["cwd"] and self.session.cwd is None:
                    self.session.cwd = payload["cwd"]
            elif kind == "response_item":
                self.item(number, payload, when)
            elif kind == "event_msg" and payload.get("type") == "token_count":
                self.tokens(payload)
            return
        # A rollout of 2025: the meta object first, then the items as plain lines.
        if obj.get("type") in ITEM_TYPES:
            self.item(number, obj, when)
        elif not self.seen_meta and isinstance(obj.get("id"), str) and "type" not in obj:
            self.meta(obj, when)
        # (``{"record_type": "state"}`` and unknown lines: not the conversation)

    def meta(self, payload: dict, when: float | None) -> None:
        self.seen_meta = True
        if isinstance(payload.get("id"), str) and payload["id"] and self.session_id is None:
            self.session_id = payload["id"]
        self.session.seen(parse_time(payload.get("timestamp")) or when)
        if isinstance(payload.get("cwd"), str) and payload["cwd"]:
            self.session.cwd = payload["cwd"]
        git = payload.get("git")
        if isinstance(git, dict) and isinstance(git.get("branch"), str) and git["branch"]:
            self.session.git_branch = git["branch"]

    def tokens(self, payload: dict) -> None:
        info = payload.get("info")
        total = info.get("total_token_usage") if isinstance(info, dict) else None
        if not isinstance(total, dict):
            return
        # Running totals of the whole session: the last one counts.
        session = self.session
        session.input_tokens = _int(total.get("input_tokens"))
        session.cache_read_tokens = _int(total.get("cached_input_tokens"))
        session.output_tokens = _int(total.get("output_tokens"))
        session.reasoning_tokens = _int(total.get("reasoning_output_tokens"))

    def last_assistant(self) -> dict | None:
        messages = self.session.messages
        return messages[-1] if messages and messages[-1]["role"] == "assistant" else None

    def item(self, number: int, item: dict, when: float | None) -> None:
        kind = item.get("type")
        if kind == "message":
            role = item.get("role")
            text = _text(item.get("content"))
            if role == "user":
                if text.lstrip().startswith(_INJECTED_PREFIXES):
                    return
                self.session.add("user", text, when)
            elif role == "assistant":
                reasoning = "\n\n".join(self.reasoning) or None
                self.reasoning = []
                self.session.add("assistant", text, when, reasoning=reasoning)
            elif role not in ("developer", "system"):
                self.problem(number, f"a message of unknown role {role!r}")
        elif kind == "reasoning":
            summary = item.get("summary")
            texts = [s["text"] for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str)] \
                if isinstance(summary, list) else []
            self.reasoning.extend(t for t in texts if t.strip())
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
            if kind == "local_shell_call":
                name, arguments = "local_shell", item.get("action") or {}
            else:
                name = item.get("name") if isinstance(item.get("name"), str) else None
                arguments = item.get("arguments") if kind == "function_call" else item.get("input")
                arguments = "" if arguments is None else arguments
            if call_id and name:
                self.tool_names[call_id] = name
            call = tool_call(call_id, name, arguments)
            target = self.last_assistant()
            if target is None:
                reasoning = "\n\n".join(self.reasoning) or None
                self.reasoning = []
                target = self.session.add("assistant", None, when, reasoning=reasoning)
            else:
                self.session.seen(when)
            target.setdefault("tool_calls", []).append(call)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else None
            self.session.add("tool", _output_text(item.get("output")), when,
                             tool_call_id=call_id, tool_name=self.tool_names.get(call_id or ""))

    def finish(self) -> Session:
        own = _UUID_TAIL.search(self.path.stem)
        sid = self.session_id or (own.group(1) if own else self.path.stem)
        self.session.id = ID_PREFIX + sid
        self.session.title = self.titles.get(sid)
        return self.session


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def read_session(path: Path, problems: list[Problem], titles: dict[str, str] | None = None) -> Session:
    """The conversation of one rollout file (its unreadable lines named in ``problems``)."""
    return _Reader(path, problems, titles or {}).read()
