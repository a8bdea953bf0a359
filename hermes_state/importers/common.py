"""What the importers of other agents' transcripts share: the session they build, the lines
they could not read, time stamps, and writing the sessions into a store.

An importer reads one transcript file into one :class:`Session` -- roles, text, tool calls
and their results, time stamps, model, working directory, title where the format has one --
and names every line it could not read (:class:`Problem`: file and line number, never fatal).
:func:`write_sessions` writes each session through :func:`hermes_state.export.import_jsonl_into`
(the import of our own export): one transaction per session, every column the store has
and no other (v16 and v30 stores written in place, no DDL), a title in use imported untitled,
and a session whose id is already there left as it is -- ids derive from the transcript's own
session id, so importing the same files again adds nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

if TYPE_CHECKING:
    import sqlite3

    from ..store import Store


@dataclass(frozen=True)
class Problem:
    """A line of a transcript that was skipped, and why."""

    path: Path
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass
class Session:
    """One imported conversation, in the shape of our own export (EX-3)."""

    id: str
    source: str
    messages: list[dict] = field(default_factory=list)
    started_at: float | None = None
    ended_at: float | None = None
    title: str | None = None
    model: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    parent_session_id: str | None = None
    model_config: dict | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    #: The file it was read from (for the messages of the summary).
    path: Path | None = None

    def add(self, role: str, content: str | None, timestamp: float | None, **fields: Any) -> dict:
        """Append a message; a missing time stamp is the previous one's (order is kept)."""
        if timestamp is None:
            timestamp = self.messages[-1]["timestamp"] if self.messages else (self.started_at or 0.0)
        message = {"role": role, "content": content, "timestamp": float(timestamp)}
        message.update({k: v for k, v in fields.items() if v is not None})
        self.messages.append(message)
        self.seen(timestamp)
        return message

    def seen(self, timestamp: float | None) -> None:
        if timestamp is None:
            return
        if self.started_at is None or timestamp < self.started_at:
            self.started_at = timestamp
        if self.ended_at is None or timestamp > self.ended_at:
            self.ended_at = timestamp

    def record(self) -> dict:
        """The session as one line of our export: what :func:`import_jsonl_into` reads. Columns
        a store lacks are dropped there (``created_source``, ``last_activity_at``: v30)."""
        started = self.started_at if self.started_at is not None else 0.0
        ended = self.ended_at if self.ended_at is not None else started
        tool_calls = sum(len(m.get("tool_calls") or ()) for m in self.messages)
        return {
            "id": self.id,
            "source": self.source,
            # v30: the platform the session started on; it never moved.
            "created_source": self.source,
            "title": _title(self.title),
            "model": self.model,
            "model_config": json.dumps(self.model_config) if self.model_config else None,
            "parent_session_id": self.parent_session_id,
            "started_at": started,
            # A transcript read from disk is a finished conversation here: Hermes cannot go on
            # with it, so it is not shown as live.
            "ended_at": ended,
            "last_activity_at": ended,
            "cwd": self.cwd,
            "git_branch": self.git_branch,
            "message_count": len(self.messages),
            "tool_call_count": tool_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "messages": self.messages,
        }


def _title(text: str | None) -> str | None:
    """A title as a person would have set it (TI-1: controls and invisibles out, whitespace
    folded); one too long is cut to the limit, ending in an ellipsis, rather than lost."""
    from ..titles import MAX_TITLE_LENGTH, sanitize_title

    if not text:
        return None
    try:
        return sanitize_title(text)
    except ValueError:
        # (cleaning only removes or folds characters: a prefix one shorter than the limit
        # cleans to at most that many)
        cut = sanitize_title(text[: MAX_TITLE_LENGTH - 1])
        return f"{cut}\u2026" if cut else None


def parse_time(value: Any) -> float | None:
    """An ISO 8601 time (``2026-04-29T08:14:22.123Z``) or epoch seconds as epoch seconds;
    None for anything else. A time without a zone is UTC (both formats write UTC)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) / 1000.0 if value > 1e11 else float(value)  # (milliseconds)
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def tool_call(call_id: str | None, name: str | None, arguments: Any) -> dict:
    """One tool call as Hermes stores it (OpenAI's shape: arguments as a JSON string)."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id or "", "type": "function", "function": {"name": name or "", "arguments": arguments}}


def read_lines(path: Path, problems: list[Problem]) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` of each JSON object line of ``path``; a line that is not one
    (bad JSON, not an object, not UTF-8) is named in ``problems`` and skipped."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                problems.append(Problem(path, number, "not UTF-8 text"))
                continue
            except ValueError as exc:
                problems.append(Problem(path, number, f"not JSON ({exc.msg})"))
                continue
            if not isinstance(obj, dict):
                problems.append(Problem(path, number, "not a JSON object"))
                continue
            yield number, obj


def find_files(root: Path, pattern: str = "*.jsonl") -> list[Path]:
    """``root`` itself when it is a file, else every ``pattern`` file below it, sorted."""
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob(pattern) if p.is_file())


@dataclass
class Outcome:
    """What an import of transcripts did."""

    files: int = 0
    imported: list[str] = field(default_factory=list)
    already_present: list[str] = field(default_factory=list)
    messages: int = 0
    problems: list[Problem] = field(default_factory=list)
    #: ``(file, reason)`` of sessions the store refused (nothing of them was written).
    rejected: list[tuple[Path, str]] = field(default_factory=list)
    #: ``(session id, title, owner)``: a title in use; the session was imported untitled.
    title_collisions: list[tuple[str, str, str]] = field(default_factory=list)
    #: Files that held no conversation (no user or assistant message).
    empty_files: int = 0
    #: ``(session id, messages added)``: sessions imported before whose transcript has grown
    #: since (the conversation went on): the new messages were added after the stored ones.
    continued: list[tuple[str, int]] = field(default_factory=list)


def write_sessions(
    store: "Store",
    sessions: Iterable[Session],
    outcome: Outcome,
    on_file: Callable[[], None] | None = None,
) -> Outcome:
    """Write each session into ``store`` (one transaction each); fill ``outcome``."""
    from ..export import import_jsonl_into

    for session in sessions:
        if on_file:
            on_file()
        if not session.messages:
            outcome.empty_files += 1
            continue
        line = json.dumps(session.record(), ensure_ascii=False)
        report = import_jsonl_into(store, [line])
        outcome.imported.extend(report.imported)
        for session_id in report.skipped_existing:
            # Read first: an unchanged transcript (the usual case) takes no write lock.
            stored = store.fetchone("SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,))[0]
            added = store.write(lambda conn: _continue(conn, session)) if len(session.messages) > stored else 0
            if added:
                outcome.continued.append((session_id, added))
            else:
                outcome.already_present.append(session_id)
        outcome.messages += report.messages
        outcome.title_collisions.extend(report.title_collisions)
        for _line, reason in report.errors:
            outcome.rejected.append((session.path or Path(session.id), reason))
        # (a parent must be in the store already: callers write a session's sub-agent runs
        # after it; one whose parent is nowhere is kept as a root)
    return outcome


def _continue(conn: "sqlite3.Connection", session: Session) -> int:
    """Add the messages of ``session`` past those already stored, when the stored session is
    this import's (same source) and holds fewer: a transcript read again after its
    conversation went on. Returns how many were added (0: nothing to do). The stored messages
    are never changed; a session written by anything else is never touched."""
    row = conn.execute("SELECT source FROM sessions WHERE id = ?", (session.id,)).fetchone()
    if row is None or row[0] != session.source:
        return 0
    stored = conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (session.id,)).fetchone()[0]
    new = session.messages[stored:]
    if not new:
        return 0
    present = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
    names = ["session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
             "finish_reason", "reasoning"]
    names = [n for n in names if n in present]
    extra = ", active" if "active" in present else ""  # said explicitly, as every import does (UC-5)
    marks = ", ".join("?" for _ in names) + (", 1" if extra else "")
    calls = 0
    for message in new:
        values = {**message, "session_id": session.id,
                  "tool_calls": json.dumps(message["tool_calls"]) if message.get("tool_calls") else None}
        calls += len(message.get("tool_calls") or ())
        conn.execute(f"INSERT INTO messages ({', '.join(names)}{extra}) VALUES ({marks})",
                     [values.get(n) for n in names])
    columns = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    record = session.record()
    sets = ["message_count = COALESCE(message_count, 0) + ?", "tool_call_count = COALESCE(tool_call_count, 0) + ?"]
    params: list[Any] = [len(new), calls]
    for name in ("ended_at", "last_activity_at", "model", "input_tokens", "output_tokens",
                 "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
        if name in columns and record.get(name) is not None:
            sets.append(f"{name} = ?")
            params.append(record[name])
    conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", [*params, session.id])
    return len(new)
