"""Export and import of sessions: JSONL (EX-3), Markdown transcripts, atomic file writes.

Everything here streams: sessions are read a batch at a time (:func:`iter_export_all_batched`,
the order and content of ``SessionDB.iter_export_all``) and written as they come, so exporting
a large store needs memory for one batch of sessions, not all of them. Files are written atomically (:func:`write_atomic`): a temporary file in the destination
directory, ``fsync``, owner-only permissions, then ``os.replace`` -- a reader never sees a
half-written export and a failure leaves no partial file behind.

Public API
----------
``session_to_jsonl(obj) -> str``
    One EX-3 line (``json.dumps(obj, ensure_ascii=False) + "\\n"``, with DEL, C1 and bidi
    controls escaped as ``\\uXXXX``: the same JSON value, nothing raw to drive a terminal).
``session_to_markdown(obj) -> str``
    A readable transcript of one exported session.
``iter_export(db, source=None, session_ids=None, progress=None) -> Iterator[dict]``
    Exported session dicts one at a time, reporting ``progress(done, total)``.
``render_chunks(sessions, fmt, visible_controls=False) -> Iterator[str]``
    Text chunks of a JSONL or Markdown export of ``sessions`` (Markdown for a terminal with
    ``visible_controls``).
``export_to_path(db, path, fmt="jsonl", ...) -> int`` / ``export_to_stream(db, stream, ...)``
    Write an export; return the number of sessions written.
``write_atomic(path, chunks, mode=0o600) -> int``
    The atomic writer (bytes written).
``import_jsonl(db, path_or_lines) -> ImportReport``
    Read an EX-3 export back (sessions INSERT OR IGNORE, messages with their timestamps and,
    when free, their original ids; counters recomputed; parent links restored).

This module never imports the UI.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from array import array
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator

from .db import SessionDB
from .export_batch import IDS, PROMPT_ALIAS, blob_text, jsonl_line, read_batch
from .inert_text import inert_document
from .paths import write_atomic

if TYPE_CHECKING:
    from .store import Store

ProgressCallback = Callable[[int, int], None]

FORMATS = ("jsonl", "md")




# ---------------------------------------------------------------------------- JSONL


def session_to_jsonl(obj: dict) -> str:
    """One EX-3 line: the session dict as JSON (non-ASCII kept as is) plus a newline; no
    control raw (see :func:`~hermes_state.export_batch.jsonl_line`)."""
    return jsonl_line(obj)


# ---------------------------------------------------------------------------- Markdown

_BACKTICK_RUN_RE = re.compile(r"`+")
_ROLE_HEADINGS = {
    "user": "User",
    "assistant": "Assistant",
    "system": "System",
    "tool": "Tool result",
}
_MULTIMODAL_PREFIX = "\x00json:"


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text`` (at least three).

    A fenced block closes only on a backtick run at least as long as its opening fence, so
    content containing ``````` cannot end the block early.
    """
    longest = max((len(m.group(0)) for m in _BACKTICK_RUN_RE.finditer(text)), default=0)
    return "`" * max(3, longest + 1)


def fenced(text: str, info: str = "") -> str:
    """``text`` in a fenced code block that its content cannot break."""
    fence = fence_for(text + info)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{info}\n{body}{fence}\n"


def format_timestamp(ts: Any) -> str:
    """``YYYY-MM-DD HH:MM:SS UTC`` (UTC so an export reads the same everywhere), or ``?``."""
    try:
        return datetime.fromtimestamp(float(ts), timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"


_FENCE_LINE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def close_open_fence(text: str) -> str:
    """``text`` plus a closing fence if it leaves a code fence open (CommonMark rules).

    Message text is written unescaped, but an answer cut off inside a code block must not
    turn the rest of the document into code: the open block is closed after the text.
    """
    open_fence: str | None = None
    for line in text.split("\n"):
        match = _FENCE_LINE_RE.match(line)
        if not match:
            continue
        fence, rest = match.group(1), match.group(2)
        if open_fence is None:
            if fence[0] == "`" and "`" in rest:
                continue  # not an opener: a backtick fence's info string has no backticks
            open_fence = fence
        elif fence[0] == open_fence[0] and len(fence) >= len(open_fence) and not rest.strip():
            open_fence = None
    if open_fence is None:
        return text
    return text.rstrip("\n") + "\n" + open_fence + "\n"


def _one_line(text: Any) -> str:
    return " ".join(_text(text).split())


def _text(value: Any) -> str:
    """Any stored value as text (a blob as its UTF-8, see :func:`blob_text`)."""
    return blob_text(value) if isinstance(value, (bytes, bytearray, memoryview)) else str(value)


def _content_text(content: Any) -> str:
    """Message content as text; decodes upstream's ``"\\x00json:"`` multimodal encoding."""
    if content is None:
        return ""
    if isinstance(content, str) and content.startswith(_MULTIMODAL_PREFIX):
        try:
            parts = json.loads(content[len(_MULTIMODAL_PREFIX) :])
        except ValueError:
            return content[len(_MULTIMODAL_PREFIX) :]
        content = parts
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                pieces.append(str(part.get("text", "")))
            elif isinstance(part, dict) and part.get("type") in ("image_url", "image"):
                pieces.append("[image]")
            else:
                pieces.append(json.dumps(part, ensure_ascii=False, default=blob_text))
        return "\n\n".join(pieces)
    if isinstance(content, (bytes, bytearray, memoryview)):
        return blob_text(content)
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=blob_text)


def _render_tool_call(call: Any) -> str:
    """``**Tool call:** `name``` then the arguments, pretty-printed when they are JSON."""
    name = None
    arguments: Any = None
    if isinstance(call, dict):
        function = call.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            arguments = function.get("arguments")
        else:
            name = call.get("name")
            arguments = call.get("arguments", call.get("input"))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    if arguments is None and not isinstance(call, dict):
        arguments = call
    if isinstance(arguments, str):
        body, info = arguments, ""
    else:
        body, info = json.dumps(arguments, ensure_ascii=False, indent=2, default=blob_text), "json"
    label = _one_line(name) if name else "unknown"
    call_id = call.get("id") if isinstance(call, dict) else None
    suffix = f" (id `{_one_line(call_id)}`)" if call_id else ""
    return f"**Tool call:** `{label}`{suffix}\n\n" + fenced(body, info)


def _render_message(msg: dict) -> str:
    role = _text(msg.get("role") or "unknown")
    heading = _ROLE_HEADINGS.get(role, _one_line(role))
    if role == "tool" and msg.get("tool_name"):
        heading += f" — {_one_line(msg['tool_name'])}"
    out = [f"## {heading}\n\n", f"*{format_timestamp(msg.get('timestamp'))}*\n\n"]
    text = _content_text(msg.get("content"))
    reasoning = msg.get("reasoning") or msg.get("reasoning_content")
    if reasoning and role == "assistant":
        out.append("**Reasoning:**\n\n" + fenced(_text(reasoning), "text") + "\n")
    if role == "tool":
        if msg.get("tool_call_id"):
            out.append(f"Result of call `{_one_line(msg['tool_call_id'])}`:\n\n")
        out.append(fenced(text) + "\n")
    elif text:
        out.append(close_open_fence(text).rstrip("\n") + "\n\n")
    tool_calls = msg.get("tool_calls")
    if tool_calls:
        calls = tool_calls if isinstance(tool_calls, list) else [tool_calls]
        for call in calls:
            out.append(_render_tool_call(call) + "\n")
    return "".join(out)


def session_to_markdown(obj: dict) -> str:
    """A readable transcript of one exported session (EX-1 dict with ``messages``).

    Content is data: nothing is escaped, but tool calls, tool results and reasoning are put in
    fenced blocks whose fence is longer than any backtick run inside, so they cannot be broken.
    """
    title = obj.get("title")
    lines = [f"# {_one_line(title) if title else 'Untitled session'}\n\n"]
    facts = [
        ("Session", f"`{_one_line(obj.get('id'))}`"),
        # (an export across Hermes profiles says whose each session is; ids may collide)
        ("Profile", obj.get("profile")),
        ("Source", obj.get("source")),
        ("Model", obj.get("model")),
        ("Started", format_timestamp(obj.get("started_at"))),
    ]
    if obj.get("ended_at"):
        reason = f" ({_one_line(obj['end_reason'])})" if obj.get("end_reason") else ""
        facts.append(("Ended", format_timestamp(obj["ended_at"]) + reason))
    if obj.get("parent_session_id"):
        facts.append(("Parent", f"`{_one_line(obj['parent_session_id'])}`"))
    messages = obj.get("messages") or []
    facts.append(("Messages", str(len(messages))))
    for label, value in facts:
        if value is not None and value != "":
            lines.append(f"- **{label}:** {value if label in ('Session', 'Parent') else _one_line(value)}\n")
    lines.append("\n")
    for msg in messages:
        lines.append(_render_message(msg))
    return "".join(lines)


# ---------------------------------------------------------------------------- streaming export


#: Sessions read per snapshot by :func:`iter_export_all_batched` (and at most this many
#: messages): a few statements per batch instead of several per session.
EXPORT_BATCH_SESSIONS = 200
EXPORT_BATCH_MESSAGES = 8000


def export_plan(db: SessionDB, source: str | None) -> "tuple[list[str], array[int]]":
    """Ids of every session (of ``source``), most recently used first -- the order of
    :meth:`SessionDB.iter_export_all` (a test holds the two to the same output) -- and each
    one's message count as the same statement read it (what :func:`plan_batches` cuts
    batches by, without a statement per batch)."""
    where = "WHERE s.source = ?" if source else ""
    # CAST: a count stored as text or a blob (nothing enforces the column's type) plans as 0.
    sql = (
        f"SELECT s.id, CAST(s.message_count AS INTEGER) FROM sessions s {where} "
        f"ORDER BY {db.rules.last_active_sql()} DESC, s.started_at DESC, s.id DESC"
    )
    def read(conn) -> "tuple[list[str], array[int]]":
        # Streamed as plain tuples: 250k sqlite3.Row objects held at once were ~35 MB of the
        # export's peak memory at 5M messages; the counts as machine integers (2 MB there).
        cursor = conn.cursor()
        cursor.row_factory = None
        ids: list[str] = []
        counts = array("q")
        add_id, add_count = ids.append, counts.append
        for session_id, count in cursor.execute(sql, [source] if source else []):
            add_id(session_id)
            add_count(count if isinstance(count, int) and 0 < count < 1 << 62 else 0)
        return ids, counts

    return db.store.read(read)


def batch_statements(db: SessionDB) -> tuple[str, str]:
    """The two statements that read a batch of sessions of ``db`` (sessions, then their
    messages), with :data:`~hermes_state.export_batch.IDS` where the ids go."""
    sessions_sql = (
        f"SELECT s.*, {db.rules.last_active_sql()} AS last_active, "
        f"{db.rules.system_prompt_sql('s')} AS {PROMPT_ALIAS} FROM sessions s WHERE s.id IN ({IDS})"
    )
    messages_sql = (
        f"SELECT * FROM messages WHERE session_id IN ({IDS}){db.store.active_clause(False)} "
        "ORDER BY session_id, timestamp, id"
    )
    return sessions_sql, messages_sql


def _read_batch(db: SessionDB, ids: list[str]) -> dict[str, dict]:
    """The export dicts of ``ids`` (those that still exist), read in one snapshot so each
    session's row and messages agree."""
    sessions_sql, messages_sql = batch_statements(db)
    return db.store.read_snapshot(lambda: db.store.read(lambda conn: read_batch(conn, sessions_sql, messages_sql, ids)))


def iter_export_all_batched(db: SessionDB, source: str | None = None) -> Iterator[dict]:
    """Every session (of ``source``), most recently used first, exactly as
    :meth:`SessionDB.iter_export_all` yields them, read a batch of sessions per snapshot.

    Memory stays bounded by one batch (``EXPORT_BATCH_SESSIONS`` sessions, fewer when they
    are long); the order is read once, as ids, so sessions written meanwhile neither repeat
    nor shift others, and a session deleted meanwhile is skipped. No snapshot is held across
    a ``yield``. (Reading the next batch in a thread while this one is encoded was measured:
    no gain, the GIL serialises the Python both sides do.)
    """
    ids, counts = export_plan(db, source)
    for batch, found in _batches(db, ids, counts):
        for session_id in batch:
            obj = found.get(session_id)
            if obj is not None:
                yield obj


def _batches(
    db: SessionDB, ids: list[str], counts: "array[int]"
) -> Iterator[tuple[list[str], dict[str, dict]]]:
    for batch in plan_batches(ids, counts):
        yield batch, _read_batch(db, batch)


def plan_batches(ids: list[str], counts: "array[int]", max_messages: int | None = None) -> Iterator[list[str]]:
    """``ids`` cut into batches of at most ``EXPORT_BATCH_SESSIONS`` sessions and, unless one
    session is longer, ``max_messages`` messages (default ``EXPORT_BATCH_MESSAGES``), by the
    message ``counts`` read beside ``ids`` (:func:`export_plan`)."""
    max_messages = max_messages or EXPORT_BATCH_MESSAGES
    start = 0
    while start < len(ids):
        batch = ids[start : start + EXPORT_BATCH_SESSIONS]
        # Long sessions make smaller batches (a 400-message session weighs 20 short ones).
        total = 0
        for i, size in enumerate(counts[start : start + len(batch)]):
            total += size
            if total > max_messages and i > 0:
                batch = batch[:i]
                break
        start += len(batch)
        yield batch


def iter_export(
    db: SessionDB,
    source: str | None = None,
    session_ids: list[str] | None = None,
    progress: ProgressCallback | None = None,
) -> Iterator[dict]:
    """Exported sessions one at a time: the given ids (EX-1), else ``export_all`` (EX-2).

    ``progress(done, total)`` is called once before the first session (``done = 0``) and after
    each one. Unknown ids in ``session_ids`` are skipped.
    """
    if session_ids is not None:
        total = len(session_ids)
        if progress:
            progress(0, total)
        for done, session_id in enumerate(session_ids, 1):
            obj = db.export_session(session_id)
            if obj is not None:
                yield obj
            if progress:
                progress(done, total)
        return
    total = db.session_count(source)
    if progress:
        progress(0, total)
    done = 0
    for obj in iter_export_all_batched(db, source):
        yield obj
        done += 1
        if progress:
            progress(done, max(total, done))


def render_chunks(
    sessions: Iterable[dict], fmt: str = "jsonl", *, visible_controls: bool = False
) -> Iterator[str]:
    """Text chunks of an export: one JSONL line per session, or Markdown documents
    separated by a horizontal rule.

    JSONL never carries a control raw (:func:`session_to_jsonl`) and stays exact. Markdown
    is exact by default (a file keeps every byte of content); with ``visible_controls``
    every control in it but newline and tab is shown as a visible character
    (:func:`~hermes_state.inert_text.inert_document`): Markdown read on a terminal, where an
    ESC in a message would retitle it or write the clipboard."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (expected one of {', '.join(FORMATS)})")
    first = True
    for obj in sessions:
        if fmt == "jsonl":
            yield session_to_jsonl(obj)
        else:
            if not first:
                yield "---\n\n"
            # The whole document at once: content, title, model, tool names, cwd and ids
            # alike, whatever field a control came in.
            document = session_to_markdown(obj)
            yield inert_document(document) if visible_controls else document
        first = False


class _Counter:
    def __init__(self, items: Iterable[dict]) -> None:
        self.items = items
        self.count = 0

    def __iter__(self) -> Iterator[dict]:
        for item in self.items:
            self.count += 1
            yield item


def export_to_path(
    db: SessionDB,
    path: str | os.PathLike[str],
    fmt: str = "jsonl",
    *,
    source: str | None = None,
    session_ids: list[str] | None = None,
    progress: ProgressCallback | None = None,
    mode: int = 0o600,
) -> int:
    """Export to a file, atomically and owner-only; return the number of sessions written.
    (:func:`hermes_state.export_parallel.export_to_path` writes the same on several cores.)"""
    counter = _Counter(iter_export(db, source, session_ids, progress))
    write_atomic(path, render_chunks(counter, fmt), mode=mode)
    return counter.count


def export_to_stream(
    db: SessionDB,
    stream: IO[str],
    fmt: str = "jsonl",
    *,
    source: str | None = None,
    session_ids: list[str] | None = None,
    progress: ProgressCallback | None = None,
    visible_controls: bool = False,
) -> int:
    """Export to an open text stream (e.g. stdout); return the number of sessions written.
    ``visible_controls``: Markdown to be read on a terminal (see :func:`render_chunks`)."""
    counter = _Counter(iter_export(db, source, session_ids, progress))
    for chunk in render_chunks(counter, fmt, visible_controls=visible_controls):
        stream.write(chunk)
    stream.flush()
    return counter.count


# ---------------------------------------------------------------------------- import


@dataclass
class ImportReport:
    """What :func:`import_jsonl` did. Nothing in it is fatal; a caller decides what to show."""

    #: Ids of sessions inserted.
    imported: list[str] = field(default_factory=list)
    #: Ids of sessions already present (left untouched, their messages not imported).
    skipped_existing: list[str] = field(default_factory=list)
    #: Messages inserted.
    messages: int = 0
    #: Messages whose original id was taken by another message and got a new id.
    reassigned_message_ids: int = 0
    #: ``(session_id, title, owner_id)``: the title was in use; the session was imported untitled.
    title_collisions: list[tuple[str, str, str]] = field(default_factory=list)
    #: ``(session_id, parent_id)``: the parent exists neither in the file nor in the database;
    #: the link could not be stored (the schema enforces it) and the session became a root.
    missing_parents: list[tuple[str, str]] = field(default_factory=list)
    #: ``(line_number, reason)`` for lines that could not be imported.
    errors: list[tuple[int, str]] = field(default_factory=list)
    #: ``(session_id, parent_id)``: a session already present (the same session: same
    #: source and start) had lost its parent link -- e.g. an earlier import of this file was
    #: interrupted before it linked parents -- and got it back. Nothing else is changed.
    relinked_existing: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        """One line for a person."""
        parts = [f"Imported {len(self.imported)} session{'s' if len(self.imported) != 1 else ''}"]
        parts.append(f"{self.messages} message{'s' if self.messages != 1 else ''}")
        if self.skipped_existing:
            parts.append(f"{len(self.skipped_existing)} already present")
        if self.title_collisions:
            parts.append(f"{len(self.title_collisions)} title collision(s)")
        if self.missing_parents:
            parts.append(f"{len(self.missing_parents)} missing parent(s)")
        if self.relinked_existing:
            parts.append(f"{len(self.relinked_existing)} parent link(s) restored on sessions already present")
        if self.errors:
            parts.append(f"{len(self.errors)} bad line(s)")
        return ", ".join(parts) + "."


_MESSAGE_COLUMNS = (
    "session_id",
    "role",
    "content",
    "tool_call_id",
    "tool_calls",
    "tool_name",
    "timestamp",
    "token_count",
    "finish_reason",
    "reasoning",
    "reasoning_content",
    "reasoning_details",
    "codex_reasoning_items",
    "codex_message_items",
)
_JSON_TEXT_COLUMNS = ("reasoning_details", "codex_reasoning_items", "codex_message_items")
#: Message columns an import writes when the store has them (after ``_MESSAGE_COLUMNS``):
#: without them an export → import → export lost the platform's message id (EX-3 says equal).
_OPTIONAL_MESSAGE_COLUMNS = ("platform_message_id", "observed")


class _BadLine(ValueError):
    pass


def _iter_lines(path_or_lines: str | os.PathLike[str] | Iterable[str]) -> Iterator[str]:
    if isinstance(path_or_lines, (str, os.PathLike)):
        with open(path_or_lines, encoding="utf-8") as handle:
            yield from handle
    else:
        yield from path_or_lines


def _tool_call_weight(tool_calls: Any) -> int:
    """MS-2 (same rule as the store): a list counts its length, another value one."""
    if tool_calls is None:
        return 0
    return len(tool_calls) if isinstance(tool_calls, list) else 1


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float))


def _as_text_or_none(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _BadLine(f"{what} must be a string or null")


def _message_row(session_id: str, msg: Any, previous_ts: float) -> tuple[Any, list[Any]]:
    if not isinstance(msg, dict):
        raise _BadLine("a message is not an object")
    timestamp = msg.get("timestamp")
    if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)):
        if timestamp is not None:
            raise _BadLine("message timestamp is not a number")
        timestamp = previous_ts + 1e-6  # keep order for hand-written files
    tool_calls = msg.get("tool_calls")
    for key in ("token_count", "finish_reason"):
        if not _is_scalar(msg.get(key)):
            raise _BadLine(f"message {key} is not a plain value")
    values: list[Any] = [
        session_id,
        str(msg.get("role") or "unknown"),
        _as_text_or_none(msg.get("content"), "message content"),
        _as_text_or_none(msg.get("tool_call_id"), "tool_call_id"),
        json.dumps(tool_calls) if tool_calls else None,  # MS-1 encoding (decoded by MS-4)
        _as_text_or_none(msg.get("tool_name"), "tool_name"),
        float(timestamp),
        msg.get("token_count"),
        msg.get("finish_reason"),
        _as_text_or_none(msg.get("reasoning"), "reasoning"),
        _as_text_or_none(msg.get("reasoning_content"), "reasoning_content"),
    ]
    for column in _JSON_TEXT_COLUMNS:
        value = msg.get(column)
        # MS-4 exports these as the stored strings; a hand-made file may hold decoded JSON.
        values.append(value if value is None or isinstance(value, str) else json.dumps(value))
    # Kept where the store has the column (v16 and later; dropped by _import_session otherwise).
    platform_id = msg.get("platform_message_id")
    if not _is_scalar(platform_id):
        raise _BadLine("message platform_message_id is not a plain value")
    values.append(platform_id)
    values.append(1 if msg.get("observed") else 0)
    original_id = msg.get("id")
    if isinstance(original_id, bool) or not isinstance(original_id, int):
        original_id = None
    return original_id, values


def _session_columns(conn: sqlite3.Connection) -> list[str]:
    return [row[1] for row in conn.execute("PRAGMA table_info(sessions)")]


def import_jsonl(
    db: SessionDB,
    path_or_lines: str | os.PathLike[str] | Iterable[str],
    progress: ProgressCallback | None = None,
) -> ImportReport:
    """Import an EX-3 JSONL export into ``db``: :func:`import_jsonl_into` its store."""
    return import_jsonl_into(db.store, path_or_lines, progress)


def import_jsonl_into(
    store: "Store",
    path_or_lines: str | os.PathLike[str] | Iterable[str],
    progress: ProgressCallback | None = None,
) -> ImportReport:
    """Import an EX-3 JSONL export into ``store``; return what happened.

    Each line is one session; sessions are written in batches (one transaction per about
    2000 rows), each session under its own savepoint:

    * the session row is inserted with every column the table has (title, parent, ended_at,
      end_reason, timestamps, tokens, costs …); a session whose id already exists is left
      untouched and its messages are skipped (INSERT OR IGNORE semantics);
    * its messages are inserted in file order with their timestamps, and with their original
      ``id`` when no other message holds it (so a deleted session re-imported comes back
      exactly, ids included); otherwise SQLite assigns a new id;
    * ``message_count`` and ``tool_call_count`` are recomputed from the inserted messages;
    * a title already used by another session is reported and the session is imported
      untitled (not fatal);
    * a parent that is not in the database yet is linked after every line has been read (an
      export lists children before their parents); a parent found nowhere is reported;
    * so an import interrupted (killed) before that last step can simply be run again: a
      session already present that is the same session (same source and start) with no
      parent link gets the link the file names (``relinked_existing``); nothing else of an
      existing session is changed.

    Lines that are not valid JSON objects with ``id``, ``source`` and ``started_at`` are
    reported in ``errors`` with their line number and skipped. ``progress(done, -1)`` is
    called after each line (the total is unknown while streaming).
    """
    report = ImportReport()
    deferred_parents: list[tuple[str, str]] = []
    relink: set[str] = set()  # sessions already present whose lost parent link is restored
    columns = store.read(_session_columns)
    column_set = set(columns)
    batch: list[tuple[int, dict, list]] = []
    batch_messages = 0

    def tick(line_number: int) -> None:
        if progress:
            progress(line_number, -1)

    def flush() -> None:
        nonlocal batch_messages
        if not batch:
            return
        outcomes = store.write(
            lambda conn: _import_batch(conn, batch, columns, column_set)
        )
        for (line_number, obj, rows), outcome in zip(batch, outcomes):
            status = outcome[0]
            if status == "error":
                report.errors.append((line_number, outcome[1]))
            elif status == "exists":
                report.skipped_existing.append(obj["id"])
                if outcome[1]:
                    # its parent link was lost (interrupted import): restore it with the rest
                    deferred_parents.append((obj["id"], outcome[1]))
                    relink.add(obj["id"])
            else:
                _, reassigned, collision, parent = outcome
                report.imported.append(obj["id"])
                report.messages += len(rows)
                report.reassigned_message_ids += reassigned
                if collision:
                    report.title_collisions.append((obj["id"], collision[0], collision[1]))
                if parent:
                    deferred_parents.append((obj["id"], parent))
            tick(line_number)
        batch.clear()
        batch_messages = 0

    for line_number, line in enumerate(_iter_lines(path_or_lines), 1):
        if not line.strip():
            continue
        try:
            obj, rows = _parse_line(line)
        except (ValueError, TypeError) as exc:  # json.JSONDecodeError and _BadLine included
            report.errors.append((line_number, str(exc)))
            tick(line_number)
            continue
        batch.append((line_number, obj, rows))
        batch_messages += len(rows) + 1
        if batch_messages >= _IMPORT_BATCH_ROWS:
            flush()
    flush()

    if deferred_parents:
        missing = store.write(lambda conn: _link_parents(conn, deferred_parents))
        report.missing_parents.extend(m for m in missing if m[0] not in relink)
        lost = set(missing)
        report.relinked_existing.extend(
            link for link in deferred_parents if link[0] in relink and link not in lost
        )
    return report


#: Rows (sessions + messages) written per transaction: one commit (and fsync) per batch
#: instead of one per session, while a writer lock is never held for long.
_IMPORT_BATCH_ROWS = 2000


def _parse_line(line: str) -> tuple[dict, list[tuple[int | None, list[Any], int]]]:
    """Validate one JSONL line; return the session object and its message rows."""
    obj = json.loads(line)
    if not isinstance(obj, dict):
        raise _BadLine("not a JSON object")
    session_id = obj.get("id")
    if not isinstance(session_id, str) or not session_id:
        raise _BadLine("missing session id")
    if not isinstance(obj.get("source"), str):
        raise _BadLine("missing source")
    started = obj.get("started_at")
    if isinstance(started, bool) or not isinstance(started, (int, float)):
        raise _BadLine("missing or invalid started_at")
    messages = obj.get("messages") or []
    if not isinstance(messages, list):
        raise _BadLine("messages is not a list")
    rows = []
    previous = float(started)
    for msg in messages:
        original_id, values = _message_row(session_id, msg, previous)
        previous = values[6]
        rows.append((original_id, values, _tool_call_weight(msg.get("tool_calls"))))
    return obj, rows


def _import_batch(
    conn: sqlite3.Connection,
    batch: list[tuple[int, dict, list]],
    columns: list[str],
    column_set: set[str],
) -> list[tuple]:
    """Import several sessions in one transaction, each under its own savepoint so that a
    session the database rejects is rolled back alone and reported."""
    outcomes: list[tuple] = []
    for _line_number, obj, rows in batch:
        conn.execute("SAVEPOINT hermes_import")
        try:
            outcome = _import_session(conn, obj, rows, columns, column_set)
        except (_BadLine, sqlite3.IntegrityError) as exc:
            conn.execute("ROLLBACK TO hermes_import")
            conn.execute("RELEASE hermes_import")
            reason = str(exc) if isinstance(exc, _BadLine) else f"rejected by the database: {exc}"
            outcomes.append(("error", reason))
            continue
        conn.execute("RELEASE hermes_import")
        outcomes.append(outcome)
    return outcomes


def _import_session(
    conn: sqlite3.Connection,
    obj: dict,
    rows: list[tuple[int | None, list[Any], int]],
    columns: list[str],
    column_set: set[str],
) -> tuple:
    """Insert one session and its messages; runs inside ``_execute_write``.

    Returns ``(status, reassigned_ids, (title, owner) | None, deferred_parent | None)``, or
    ``("exists", lost_parent | None)`` for a session already present.
    """
    session_id = obj["id"]
    existing = conn.execute(
        "SELECT parent_session_id, source, started_at FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if existing:
        parent = obj.get("parent_session_id")
        same = existing[1] == obj.get("source") and existing[2] == obj.get("started_at")
        if existing[0] is None and isinstance(parent, str) and parent and parent != session_id and same:
            # The same session, imported by an earlier run that was interrupted before it
            # linked parents (they are linked last): its link is restored, nothing else.
            return "exists", parent
        return "exists", None

    record = {name: obj[name] for name in columns if name in obj}
    for name in ("model_config",):
        # Exported as stored (a JSON string); accept a decoded object from hand-made files.
        if name in record and record[name] is not None and not isinstance(record[name], str):
            record[name] = json.dumps(record[name])

    for name, value in record.items():
        if not _is_scalar(value):
            raise _BadLine(f"session field {name!r} is not a plain value")

    title = record.pop("title", None)
    parent = record.pop("parent_session_id", None)
    collision = None
    if title is not None:
        owner = conn.execute(
            "SELECT id FROM sessions WHERE title = ? AND id != ?", (title, session_id)
        ).fetchone()
        if owner:
            collision = (title, owner[0])
            title = None
    deferred = None
    if parent is not None:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent,)).fetchone():
            record["parent_session_id"] = parent
        else:
            deferred = parent
    if title is not None and "title" in column_set:
        record["title"] = title

    digest = record.get("system_prompt_hash")
    if digest is not None:
        # A store that keeps prompts by hash (v30): the prompt goes back into system_prompts
        # (the session row references it) and the row keeps only the hash, as upstream does.
        has_table = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'system_prompts'"
        ).fetchone()
        prompt = obj.get("system_prompt")
        if has_table and isinstance(prompt, str):
            conn.execute("INSERT OR IGNORE INTO system_prompts (hash, prompt) VALUES (?, ?)", (digest, prompt))
            record["system_prompt"] = None
        elif not has_table or not conn.execute(
            "SELECT 1 FROM system_prompts WHERE hash = ?", (digest,)
        ).fetchone():
            record["system_prompt_hash"] = None  # nothing to point at: keep the text instead

    names = list(record)
    quoted = ", ".join('"' + name.replace('"', '""') + '"' for name in names)
    conn.execute(
        f"INSERT INTO sessions ({quoted}) VALUES ({', '.join('?' for _ in names)})",
        [record[name] for name in names],
    )

    reassigned = 0
    tool_calls_total = 0
    # UC-5: an imported message is active, said explicitly (some upgraded upstream stores
    # added the column without a default, and a NULL is neither shown nor rewound).
    present = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
    has_active = "active" in present
    # The optional columns a message row carries after _MESSAGE_COLUMNS: those the store has.
    optional = [name in present for name in _OPTIONAL_MESSAGE_COLUMNS]
    names = [*_MESSAGE_COLUMNS, *(n for n, kept in zip(_OPTIONAL_MESSAGE_COLUMNS, optional) if kept)]
    columns = ", ".join(names) + (", active" if has_active else "")
    placeholders = ", ".join("?" for _ in names) + (", 1" if has_active else "")
    fixed = len(_MESSAGE_COLUMNS)
    for original_id, row_values, weight in rows:
        values = row_values[:fixed] + [v for v, kept in zip(row_values[fixed:], optional) if kept]
        tool_calls_total += weight
        if original_id is not None and not conn.execute(
            "SELECT 1 FROM messages WHERE id = ?", (original_id,)
        ).fetchone():
            conn.execute(
                f"INSERT INTO messages (id, {columns}) VALUES (?, {placeholders})",
                [original_id, *values],
            )
        else:
            if original_id is not None:
                reassigned += 1
            conn.execute(f"INSERT INTO messages ({columns}) VALUES ({placeholders})", values)
    conn.execute(
        "UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?",
        (len(rows), tool_calls_total, session_id),
    )
    return "imported", reassigned, collision, deferred


def _link_parents(conn: sqlite3.Connection, links: list[tuple[str, str]]) -> list[tuple[str, str]]:
    missing = []
    for child, parent in links:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent,)).fetchone():
            conn.execute(
                "UPDATE sessions SET parent_session_id = ? WHERE id = ? AND parent_session_id IS NULL",
                (parent, child),
            )
        else:
            missing.append((child, parent))
    return missing


__all__ = [
    "FORMATS",
    "ImportReport",
    "export_to_path",
    "export_to_stream",
    "fence_for",
    "fenced",
    "close_open_fence",
    "import_jsonl",
    "iter_export",
    "render_chunks",
    "session_to_jsonl",
    "session_to_markdown",
    "write_atomic",
]
