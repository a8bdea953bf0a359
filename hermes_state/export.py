"""Export and import of sessions: JSONL (EX-3), Markdown transcripts, a self-contained HTML
page, a directory of Markdown files; atomic file writes.

Everything here streams: sessions are read a batch at a time (:func:`iter_export_all_batched`,
the order and content of :func:`hermes_state.export_read.iter_export_all`) and written as they come, so exporting
a large store needs memory for one batch of sessions, not all of them. Files are written atomically (:func:`write_atomic`): a temporary file in the destination
directory, ``fsync``, owner-only permissions, then ``os.replace`` -- a reader never sees a
half-written export and a failure leaves no partial file behind.

Public API
----------
``session_to_jsonl(obj) -> str``
    One EX-3 line (``json.dumps(obj, ensure_ascii=False) + "\\n"``, with DEL, C1 and bidi
    controls escaped as ``\\uXXXX``: the same JSON value, nothing raw to drive a terminal).
``session_to_markdown(obj) -> str``
    A readable transcript of one exported session (:mod:`hermes_state.export_markdown`).
``iter_export(store, source=None, session_ids=None, progress=None, options=PLAIN) -> Iterator[dict]``
    Exported session dicts one at a time, reporting ``progress(done, total)``; shaped by
    ``options`` (lineage, prompts only, redaction: :mod:`hermes_state.export_units`).
``render_chunks(sessions, fmt, visible_controls=False) -> Iterator[str]``
    Text chunks of a JSONL, Markdown or HTML export of ``sessions`` (Markdown for a
    terminal with ``visible_controls``; HTML: :mod:`hermes_state.export_html`).
``export_to_path(store, path, fmt="jsonl", ...) -> int`` / ``export_to_stream(store, stream, ...)``
    Write an export; return the number of sessions written (``md-dir``, a directory:
    :mod:`hermes_state.export_mddir`).
``write_atomic(path, chunks, mode=0o600) -> int``
    The atomic writer (bytes written).
``import_jsonl(store, path_or_lines) -> ImportReport``
    Read an EX-3 export back (sessions INSERT OR IGNORE, messages with their timestamps and,
    when free, their original ids; counters recomputed; parent links restored).

Every function takes a :class:`~hermes_state.store.Store` or an object holding one (a
``SessionDB``: :data:`~hermes_state.store.StoreLike`). This module never imports the UI.
"""

from __future__ import annotations

import json
import os
import sqlite3
from array import array
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator

from .export_batch import IDS, PROMPT_ALIAS, jsonl_line, read_batch
from .export_markdown import (  # (the Markdown writer's names, where they were first)
    close_open_fence,
    fence_for,
    fenced,
    format_timestamp,
    lineage_to_markdown,
    session_to_markdown,
)
from .export_read import export_session
from .export_units import PLAIN, ExportOptions, chain_of, group_units, lineage_order, mark, shaped
from .inert_text import inert_document
from .listing.engine import lister_of
from .listing.query import ListQuery
from .messages_write import tool_call_weight
from .paths import write_atomic
from .store import StoreLike, store_of

if TYPE_CHECKING:
    from .store import Store

ProgressCallback = Callable[[int, int], None]

#: ``md-dir`` writes a directory (:func:`export_to_path` only); the others a file or a stream.
FORMATS = ("jsonl", "md", "html", "md-dir")
STREAM_FORMATS = ("jsonl", "md", "html")



# ---------------------------------------------------------------------------- JSONL


def session_to_jsonl(obj: dict) -> str:
    """One EX-3 line: the session dict as JSON (non-ASCII kept as is) plus a newline; no
    control raw (see :func:`~hermes_state.export_batch.jsonl_line`)."""
    return jsonl_line(obj)


# ---------------------------------------------------------------------------- streaming export


#: Sessions read per snapshot by :func:`iter_export_all_batched` (and at most this many
#: messages): a few statements per batch instead of several per session.
EXPORT_BATCH_SESSIONS = 200
EXPORT_BATCH_MESSAGES = 8000


def export_plan(store: StoreLike, source: str | None) -> "tuple[list[str], array[int]]":
    """Ids of every session (of ``source``), most recently used first -- the order of
    :func:`~hermes_state.export_read.iter_export_all` (a test holds the two to the same
    output) -- and each one's message count as the same statement read it (what
    :func:`plan_batches` cuts batches by, without a statement per batch)."""
    store = store_of(store)
    where = "WHERE s.source = ?" if source else ""
    # CAST: a count stored as text or a blob (nothing enforces the column's type) plans as 0.
    sql = (
        f"SELECT s.id, CAST(s.message_count AS INTEGER) FROM sessions s {where} "
        f"ORDER BY {store.rules.last_active_sql()} DESC, s.started_at DESC, s.id DESC"
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

    return store.read(read)


def batch_statements(store: StoreLike) -> tuple[str, str]:
    """The two statements that read a batch of sessions of ``store`` (sessions, then their
    messages), with :data:`~hermes_state.export_batch.IDS` where the ids go."""
    store = store_of(store)
    sessions_sql = (
        f"SELECT s.*, {store.rules.last_active_sql()} AS last_active, "
        f"{store.rules.system_prompt_sql('s')} AS {PROMPT_ALIAS} FROM sessions s WHERE s.id IN ({IDS})"
    )
    messages_sql = (
        f"SELECT * FROM messages WHERE session_id IN ({IDS}){store.active_clause(False)} "
        "ORDER BY session_id, timestamp, id"
    )
    return sessions_sql, messages_sql


def _read_batch(store: "Store", ids: list[str]) -> dict[str, dict]:
    """The export dicts of ``ids`` (those that still exist), read in one snapshot so each
    session's row and messages agree."""
    sessions_sql, messages_sql = batch_statements(store)
    return store.read_snapshot(lambda: store.read(lambda conn: read_batch(conn, sessions_sql, messages_sql, ids)))


def iter_export_all_batched(store: StoreLike, source: str | None = None, *, lineage: bool = False) -> Iterator[dict]:
    """Every session (of ``source``), most recently used first, exactly as
    :func:`~hermes_state.export_read.iter_export_all` yields them, read a batch of sessions
    per snapshot.

    Memory stays bounded by one batch (``EXPORT_BATCH_SESSIONS`` sessions, fewer when they
    are long); the order is read once, as ids, so sessions written meanwhile neither repeat
    nor shift others, and a session deleted meanwhile is skipped. No snapshot is held across
    a ``yield``. (Reading the next batch in a thread while this one is encoded was measured:
    no gain, the GIL serialises the Python both sides do.)

    ``lineage``: each compression chain's segments together, root to tip, each carrying its
    place (:func:`hermes_state.export_units.lineage_order`).
    """
    store = store_of(store)
    ids, counts = export_plan(store, source)
    marks: dict = {}
    if lineage:
        ids, counts, marks = store.read(lambda conn: lineage_order(conn, ids, counts))
    for batch, found in _batches(store, ids, counts):
        for session_id in batch:
            obj = found.get(session_id)
            if obj is not None:
                yield mark(obj, marks) if marks else obj


def _batches(
    store: "Store", ids: list[str], counts: "array[int]"
) -> Iterator[tuple[list[str], dict[str, dict]]]:
    for batch in plan_batches(ids, counts):
        yield batch, _read_batch(store, batch)


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
    store: StoreLike,
    source: str | None = None,
    session_ids: list[str] | None = None,
    progress: ProgressCallback | None = None,
    options: ExportOptions = PLAIN,
) -> Iterator[dict]:
    """Exported sessions one at a time: the given ids (EX-1), else ``export_all`` (EX-2),
    shaped by ``options`` (see :mod:`hermes_state.export_units`; with ``lineage`` a given id
    brings its whole compression chain).

    ``progress(done, total)`` is called once before the first session (``done = 0``) and after
    each one. Unknown ids in ``session_ids`` are skipped.
    """
    store = store_of(store)
    if session_ids is not None:
        marks: dict = {}
        if options.lineage:
            session_ids, marks = _chains_of(store, session_ids)
        total = len(session_ids)
        if progress:
            progress(0, total)
        for done, session_id in enumerate(session_ids, 1):
            obj = export_session(store, session_id)
            if obj is not None:
                yield from shaped([mark(obj, marks) if marks else obj], options)
            if progress:
                progress(done, total)
        return
    total = sessions_counted(store, source)
    if progress:
        progress(0, total)
    done = 0
    for obj in shaped(iter_export_all_batched(store, source, lineage=options.lineage), options):
        yield obj
        done += 1
        if progress:
            progress(done, max(total, done))


def sessions_counted(store: "Store", source: str | None) -> int:
    """The total a progress report starts from (upstream's ``session_count(source)``: the
    sessions the list counts, children included, archived left out); an export of every
    session may write more, and its report grows to what it wrote."""
    return lister_of(store).count_listed(ListQuery.from_options(source, None, include_children=True))


def _chains_of(store: "Store", session_ids: list[str]) -> "tuple[list[str], dict]":
    """The compression chains of ``session_ids``, each once, root to tip, and each
    member's place (as :func:`~hermes_state.export_units.lineage_order` marks them)."""
    order: list[str] = []
    marks: dict[str, tuple[str, int, int]] = {}
    for session_id in session_ids:
        if session_id in marks:
            continue
        chain = [sid for sid in store.read(lambda conn: chain_of(conn, session_id)) if sid not in marks]
        for number, member in enumerate(chain, 1):
            marks[member] = (chain[0], number, len(chain))
        order.extend(chain)
    return order, marks


def render_chunks(
    sessions: Iterable[dict], fmt: str = "jsonl", *, visible_controls: bool = False
) -> Iterator[str]:
    """Text chunks of an export: one JSONL line per session, Markdown documents separated
    by a horizontal rule, or one HTML page (:func:`hermes_state.export_html.html_chunks`).
    A lineage export's segments (see :mod:`hermes_state.export_units`) make one Markdown
    document or HTML article per conversation.

    JSONL never carries a control raw (:func:`session_to_jsonl`) and stays exact. Markdown
    is exact by default (a file keeps every byte of content); with ``visible_controls``
    every control in it but newline and tab is shown as a visible character
    (:func:`~hermes_state.inert_text.inert_document`): Markdown read on a terminal, where an
    ESC in a message would retitle it or write the clipboard. HTML shows every control as
    a visible character always (a browser is a screen)."""
    if fmt not in STREAM_FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (expected one of {', '.join(STREAM_FORMATS)})")
    if fmt == "jsonl":
        for obj in sessions:
            yield session_to_jsonl(obj)
        return
    if fmt == "html":
        from .export_html import html_chunks  # (its own module: only an HTML export loads it)

        yield from html_chunks(group_units(sessions))
        return
    first = True
    for unit in group_units(sessions):
        if not first:
            yield "---\n\n"
        # The whole document at once: content, title, model, tool names, cwd and ids
        # alike, whatever field a control came in.
        document = lineage_to_markdown(unit)
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
    store: StoreLike,
    path: str | os.PathLike[str],
    fmt: str = "jsonl",
    *,
    source: str | None = None,
    session_ids: list[str] | None = None,
    progress: ProgressCallback | None = None,
    mode: int = 0o600,
    options: ExportOptions = PLAIN,
) -> int:
    """Export to a file, atomically and owner-only; return the number of sessions written.
    (:func:`hermes_state.export_parallel.export_to_path` writes the same on several cores.)
    ``md-dir``: a directory of one Markdown file per conversation and its manifest
    (:func:`hermes_state.export_mddir.write_md_dir`; owner-only, atomic too)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (expected one of {', '.join(FORMATS)})")
    counter = _Counter(iter_export(store, source, session_ids, progress, options))
    if fmt == "md-dir":
        from .export_mddir import write_md_dir

        write_md_dir(path, group_units(counter))
    else:
        write_atomic(path, render_chunks(counter, fmt), mode=mode)
    return counter.count


def export_to_stream(
    store: StoreLike,
    stream: IO[str],
    fmt: str = "jsonl",
    *,
    source: str | None = None,
    session_ids: list[str] | None = None,
    progress: ProgressCallback | None = None,
    visible_controls: bool = False,
    options: ExportOptions = PLAIN,
) -> int:
    """Export to an open text stream (e.g. stdout); return the number of sessions written.
    ``visible_controls``: Markdown to be read on a terminal (see :func:`render_chunks`)."""
    if fmt not in STREAM_FORMATS:
        raise ValueError(f"an export to a stream is one of {', '.join(STREAM_FORMATS)}, not {fmt!r}")
    counter = _Counter(iter_export(store, source, session_ids, progress, options))
    for chunk in render_chunks(counter, fmt, visible_controls=visible_controls):
        stream.write(chunk)
    stream.flush()
    return counter.count


# ---------------------------------------------------------------------------- import


def _counted(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


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
            parts.append(_counted(len(self.title_collisions), "title collision"))
        if self.missing_parents:
            parts.append(_counted(len(self.missing_parents), "missing parent"))
        if self.relinked_existing:
            parts.append(_counted(len(self.relinked_existing), "parent link") + " restored on sessions already present")
        if self.errors:
            parts.append(_counted(len(self.errors), "bad line"))
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
    store: StoreLike,
    path_or_lines: str | os.PathLike[str] | Iterable[str],
    progress: ProgressCallback | None = None,
) -> ImportReport:
    """Import an EX-3 JSONL export into ``store``: :func:`import_jsonl_into`."""
    return import_jsonl_into(store_of(store), path_or_lines, progress)


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
        rows.append((original_id, values, tool_call_weight(msg.get("tool_calls"))))
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
    """Insert one session and its messages; runs inside the store's write transaction.

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
    "STREAM_FORMATS",
    "ExportOptions",
    "format_timestamp",
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
