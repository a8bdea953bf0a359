"""Reading and encoding one batch of an export -- and, run as a script, a worker process that
does it for :mod:`hermes_state.export_parallel`.

Only the standard library is imported here, and :mod:`hermes_state.lenient_text` and
:mod:`hermes_state.inert_text` (the standard library only too; a worker reads them from
beside this file): a worker runs this file by its
path (``python -I .../export_batch.py``), so it never imports the ``hermes_state`` package
(pydantic and all: ~20 MB a process), and a large export on two CPUs stays within 150 MB.

Worker protocol, one line of JSON per request on stdin: first ``{"database": path,
"sessions_sql": …, "messages_sql": …}`` (the statements as the store's rules make them, with
``__IDS__`` where the ids' placeholders go), then one list of session ids per batch. For each batch, on stdout:
``OK <bytes> <sessions>\\n`` and that many bytes of UTF-8 JSONL, or ``ERR <sentence>\\n``.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from itertools import groupby
from operator import itemgetter
from typing import Any, Callable, Iterator

try:
    from .inert_text import escape_json_text
    from .lenient_text import BLOB_TYPES, lenient_text, read_leniently
except ImportError:  # run by its path in a worker: no package, the modules beside this one
    import sys
    from pathlib import Path

    sys.path.append(str(Path(__file__).parent))  # after the standard library's own
    from inert_text import escape_json_text  # type: ignore[no-redef]
    from lenient_text import BLOB_TYPES, lenient_text, read_leniently  # type: ignore[no-redef]

#: The column that carries a session's system prompt read by hash (dropped from the row).
PROMPT_ALIAS = "__hermes_export_prompt"
#: Where the statements of a batch take their ids' placeholders.
IDS = "__IDS__"


def read_batch(conn: sqlite3.Connection, sessions_sql: str, messages_sql: str, ids: list[str]) -> dict[str, dict]:
    """The export dicts of ``ids`` (those that exist), from ``conn`` as it is now (the caller
    holds the read snapshot). Rows are read as tuples and zipped with the column names:
    ``sqlite3.Row`` → ``dict`` cost more than the query."""
    cursor = _cursor(conn)
    found = _sessions(cursor, sessions_sql, ids)
    for session in found.values():
        session["messages"] = []
    for owner, message in _messages(cursor, messages_sql, ids):
        session = found.get(owner)
        if session is not None:
            session["messages"].append(message)
    return found


def encode_batch_lines(
    conn: sqlite3.Connection, sessions_sql: str, messages_sql: str, ids: list[str],
    render: "Callable[[dict], bytes] | None" = None,
) -> tuple[list[bytes], int]:
    """The UTF-8 JSONL lines of the sessions of ``ids`` that exist, in the order of ``ids``:
    the lines :func:`jsonl_line` makes of what :func:`read_batch` reads, but each session is encoded as
    soon as its last message is read (messages come ordered by session), so only one session's
    rows are held as dicts at a time -- a batch's dicts took ~25 MB in each worker process."""
    cursor = _cursor(conn)
    waiting = _sessions(cursor, sessions_sql, ids)
    lines: dict[str, bytes] = {}

    def encode(session_id: str, messages: list[dict]) -> None:
        session = waiting.pop(session_id, None)
        if session is not None:
            session["messages"] = messages
            lines[session_id] = render(session) if render is not None else jsonl_line(session).encode("utf-8")

    for owner, group in groupby(_messages(cursor, messages_sql, ids), key=itemgetter(0)):
        encode(owner, [message for _owner, message in group])
    for session_id in list(waiting):  # sessions without messages
        encode(session_id, [])
    ordered = [lines[sid] for sid in ids if sid in lines]
    return ordered, len(ordered)


def _cursor(conn: sqlite3.Connection) -> sqlite3.Cursor:
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor


def _sessions(cursor: sqlite3.Cursor, sessions_sql: str, ids: list[str]) -> dict[str, dict]:
    """The session rows of ``ids`` that exist, by id, without their messages."""
    cursor.execute(sessions_sql.replace(IDS, ",".join("?" for _ in ids)), ids)
    names = [d[0] for d in cursor.description]
    found: dict[str, dict] = {}
    for row in cursor.fetchall():
        session = dict(zip(names, row))
        prompt = session.pop(PROMPT_ALIAS)
        # As export_read.with_prompt: a v30 prompt kept once, by hash, travels inline.
        if session.get("system_prompt") is None and session.get("system_prompt_hash"):
            session["system_prompt"] = prompt
        found[session["id"]] = session
    return found


def _messages(cursor: sqlite3.Cursor, messages_sql: str, ids: list[str]) -> Iterator[tuple[str, dict]]:
    """``(session id, message)`` for the messages of ``ids``, in the statement's order (by
    session), read one row at a time."""
    cursor.execute(messages_sql.replace(IDS, ",".join("?" for _ in ids)), ids)
    names = [d[0] for d in cursor.description]
    session_at = names.index("session_id")
    calls_at = names.index("tool_calls") if "tool_calls" in names else None
    for row in cursor:
        message = dict(zip(names, row))
        if calls_at is not None and row[calls_at]:
            message["tool_calls"] = decode_tool_calls(row[calls_at], message.get("id"))
        yield row[session_at], message


def decode_tool_calls(raw: str, message_id: Any) -> Any:
    """As :func:`hermes_state.messages_read.get_messages`: JSON decoded, ``[]`` (with a
    warning, on that module's logger) when it is not."""
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        logging.getLogger("hermes_state.messages_read").warning("message %s has undecodable tool_calls", message_id)
        return []


def jsonl_line(obj: dict) -> str:
    """One EX-3 line: the session dict as JSON (non-ASCII kept as is) plus a newline.

    JSON escapes C0 controls itself; DEL, the C1 controls (U+009B is a CSI on many
    terminals) and the bidi controls are escaped too (``\\u009b``), in files as on stdout:
    the same JSON value, so an import reads back exactly what was stored, while ``cat``,
    ``head`` or ``less`` of an export -- or the export itself on a terminal -- cannot
    drive the terminal. Other text is byte for byte EX-3's ``ensure_ascii=False``."""
    return escape_json_text(json.dumps(obj, ensure_ascii=False, default=blob_text)) + "\n"


def blob_text(value: Any) -> str:
    """A blob as JSON text (``json.dumps``'s ``default``): SQLite does not enforce a column's
    type, so a message's content may be a blob (written by another tool), and JSON has no
    bytes. Its UTF-8 text, an invalid byte as U+FFFD (:func:`lenient_text`) -- an export of a
    whole history must not fail on one value."""
    if isinstance(value, BLOB_TYPES):
        return lenient_text(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


#: What a worker writes before each Markdown document (the writer drops the first one): the
#: rule one process writes between documents (:func:`hermes_state.export.render_chunks`).
MARKDOWN_SEPARATOR = b"---\n\n"


def renderer(fmt: str, options: dict, visible_controls: bool = False) -> "Callable[[dict], bytes] | None":
    """How a worker encodes one session for an export of ``fmt`` shaped by ``options``
    (``{"only": …, "redact": …}``, as :class:`hermes_state.export_units.ExportOptions`
    without lineage); None for plain JSONL (the fastest path, as before). ``md-dir``: per
    session one line of JSON (its file's facts, :func:`hermes_state.export_mddir.unit_facts`,
    and ``bytes``, the document's length) and then the document; ``html``: per session a line
    ``<article bytes> <sidebar entry bytes>`` and then the two
    (:func:`hermes_state.export_html.html_parts`, the anchor left for the page to number)."""
    if fmt == "jsonl" and not options.get("only") and not options.get("redact"):
        return None
    try:
        from .export_markdown import session_to_markdown
        from .export_units import ExportOptions, shape
        from .inert_text import inert_document
    except ImportError:  # run by its path in a worker
        from export_markdown import session_to_markdown  # type: ignore[no-redef]
        from export_units import ExportOptions, shape  # type: ignore[no-redef]
        from inert_text import inert_document  # type: ignore[no-redef]
    shaping = ExportOptions(only=options.get("only"), redact=bool(options.get("redact")))
    if fmt == "jsonl":
        return lambda session: jsonl_line(shape(session, shaping)).encode("utf-8")
    if fmt == "md-dir":
        try:
            from .export_mddir import unit_facts
        except ImportError:  # run by its path in a worker
            from export_mddir import unit_facts  # type: ignore[no-redef]

        def record(session: dict) -> bytes:
            shaped = shape(session, shaping)
            document = session_to_markdown(shaped).encode("utf-8")
            facts = unit_facts([shaped])
            facts["bytes"] = len(document)
            return json.dumps(facts, default=blob_text).encode("utf-8") + b"\n" + document

        return record
    if fmt == "html":
        try:
            from .export_html import html_parts
        except ImportError:  # run by its path in a worker
            from export_html import html_parts  # type: ignore[no-redef]

        def parts(session: dict) -> bytes:
            article, entry = (part.encode("utf-8") for part in html_parts([shape(session, shaping)]))
            return f"{len(article)} {len(entry)}\n".encode() + article + entry

        return parts
    if fmt != "md":
        raise ValueError(f"workers do not write {fmt!r}")

    def markdown(session: dict) -> bytes:
        document = session_to_markdown(shape(session, shaping))
        if visible_controls:
            document = inert_document(document)
        return MARKDOWN_SEPARATOR + document.encode("utf-8")

    return markdown


def _serve() -> None:  # pragma: no cover - run in worker processes (tests drive it through them)
    import signal
    import sys
    from urllib.parse import quote

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    requests, out = sys.stdin, sys.stdout.buffer
    try:
        config = json.loads(requests.readline())
        conn = sqlite3.connect(
            f"file:{quote(config['database'])}?mode=ro", uri=True, timeout=5.0, isolation_level=None
        )
    except Exception as exc:
        out.write(f"ERR cannot open the store: {exc}\n".encode("utf-8", "replace"))
        out.flush()
        return
    try:
        render = renderer(config.get("format", "jsonl"), config.get("options") or {},
                          bool(config.get("visible_controls")))
    except Exception as exc:
        out.write(f"ERR cannot export: {exc}\n".encode("utf-8", "replace"))
        out.flush()
        return
    for line in requests:
        try:
            ids = json.loads(line)
            conn.execute("BEGIN")  # one snapshot per batch, as the one-process export reads it
            try:
                lines, sessions = read_leniently(conn, lambda: encode_batch_lines(
                    conn, config["sessions_sql"], config["messages_sql"], ids, render))
            finally:
                conn.execute("COMMIT")
        except Exception as exc:
            message = " ".join(str(exc).split()) or type(exc).__name__
            out.write(f"ERR {message}\n".encode("utf-8", "replace"))
            out.flush()
            return
        out.write(f"OK {sum(len(line) for line in lines)} {sessions}\n".encode())
        out.writelines(lines)
        del lines
        out.flush()


if __name__ == "__main__":  # pragma: no cover
    _serve()
