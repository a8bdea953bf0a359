"""A large JSONL export on several cores: byte for byte what one process writes (EX-3).

One process exports ~35-40k messages a second on a 2-CPU box: ~45% of it is encoding JSON (C,
holding the GIL) and ~35% reading rows (SQLite plus building dicts) -- no thread helps. Here
worker processes (:mod:`hermes_state.export_batch` run by its path: the standard library only,
~12 MB each) open the store read-only, each read a batch of sessions in one snapshot -- as the
one-process export does -- and encode it; this process computes the order, hands out the
batches in turn and writes what comes back in order. Workers run in sessions of their own (a
Ctrl-C at the terminal reaches this process only, which stops them) and end when their input
closes, whatever becomes of this process.

Used for exports of every session to JSONL of at least :data:`PARALLEL_MIN_MESSAGES` messages
(starting a worker costs ~50 ms) on stores of schema 11 and later read normally (the statements
are this process's; older stores are read through views a worker's connection lacks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import deque
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None  # type: ignore[assignment]

from . import export
from .errors import DatabaseError
from .export import ProgressCallback, batch_statements, export_plan, plan_batches, sessions_counted
from .export_batch import MARKDOWN_SEPARATOR
from .export_html import html_page
from .export_mddir import write_md_dir_records
from .export_units import PLAIN, ExportOptions
from .paths import write_atomic
from .store import Store, StoreLike, store_of

#: Exports of fewer messages than this run in one process.
PARALLEL_MIN_MESSAGES = 150_000
#: Messages of a batch (at most): a worker holds one session's rows and the batch's text at a
#: time, ~0.9 MB, which the widened pipe takes whole (see PIPE_BYTES).
BATCH_MESSAGES = 1000
#: Batches handed to each worker ahead of the one being written.
AHEAD_PER_WORKER = 2
#: Overrides the number of worker processes (``0`` or ``1``: one process, no workers).
WORKERS_ENV = "HERMES_SESSIONS_EXPORT_WORKERS"
#: Each worker peaks at ~25 MB (the interpreter, SQLite's page cache, one batch) beside the
#: writer's ~63 MB: three keep an export of 5M messages under 150 MB (measured: 135 MB with
#: three, a fourth adds ~25 MB); on two CPUs four were ~10% faster than two, within the noise.
MAX_WORKERS = 3

_WORKER = Path(__file__).with_name("export_batch.py")


def default_workers() -> int:
    """Worker processes for this machine: one per CPU the process may use, at most
    :data:`MAX_WORKERS`; ``$HERMES_SESSIONS_EXPORT_WORKERS`` overrides."""
    override = os.environ.get(WORKERS_ENV, "").strip()
    if override.isdigit():
        return int(override)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cpus))


def suitable(store: StoreLike, source: str | None) -> bool:
    """Whether an export of every session (of ``source``) of ``store`` is worth workers."""
    store = store_of(store)
    if default_workers() < 2 or store.immutable or (store.opened_version or 0) < 11:
        return False
    where, params = ("WHERE source = ?", [source]) if source else ("", [])
    row = store.fetchone(f"SELECT COALESCE(SUM(message_count), 0) FROM sessions {where}", params)
    return int(row[0] or 0) >= PARALLEL_MIN_MESSAGES  # type: ignore[index]


class _Worker:
    def __init__(self, config: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(_WORKER)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        _widen_pipe(self.proc.stdout)
        self.send(config)

    def send(self, line: str) -> None:
        stdin: IO[bytes] = self.proc.stdin  # type: ignore[assignment]
        stdin.write(line.encode("utf-8") + b"\n")
        stdin.flush()

    def receive(self) -> tuple[bytes, int]:
        stdout: IO[bytes] = self.proc.stdout  # type: ignore[assignment]
        header = stdout.readline().decode("utf-8", "replace").rstrip("\n")
        if header.startswith("OK "):
            _ok, size, sessions = header.split(" ")
            data = stdout.read(int(size))
            if len(data) == int(size):
                return data, int(sessions)
            header = ""
        if header.startswith("ERR "):
            raise DatabaseError(header[4:])
        code = self.proc.poll()
        raise DatabaseError(f"an export worker stopped{'' if code is None else f' (exit status {code})'}")

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


#: Bytes the pipe from a worker holds (Linux; the default is 64 KiB, 1 MiB is what an
#: unprivileged process may ask for): a worker writes most of a batch (~0.9 MB at 1,000
#: messages) without waiting for the writer to read it, and starts on the next.
PIPE_BYTES = 1 << 20


def _widen_pipe(stream: IO[bytes] | None) -> None:
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if stream is None or setsize is None:
        return
    try:
        fcntl.fcntl(stream.fileno(), setsize, PIPE_BYTES)
    except OSError:
        pass  # over the system's limit: the default pipe works, a little slower


#: Formats the workers write. For ``md-dir`` they render the documents (this process names,
#: writes and lists the files); for ``html`` each conversation's article and sidebar entry
#: (this process numbers the anchors and writes the page).
PARALLEL_FORMATS = ("jsonl", "md", "md-dir", "html")


def iter_jsonl_parallel(
    store: StoreLike,
    source: str | None = None,
    *,
    workers: int | None = None,
    on_batch: Callable[[int], None] | None = None,
    fmt: str = "jsonl",
    options: ExportOptions = PLAIN,
    visible_controls: bool = False,
) -> Iterator[bytes]:
    """JSONL chunks (UTF-8) of every session (of ``source``) in the order of
    :func:`~hermes_state.export.iter_export_all_batched`, encoded by ``workers`` processes.
    ``on_batch(sessions)`` is called as each chunk is handed out. ``fmt="md"``: the Markdown
    documents instead, separated as one process separates them; ``options`` (not lineage)
    shape each session as :func:`~hermes_state.export.iter_export` does."""
    count = workers if workers is not None else default_workers()
    if count < 1:
        raise ValueError("a parallel export needs at least one worker")
    if fmt not in PARALLEL_FORMATS or options.lineage:
        raise ValueError(f"workers write {', '.join(PARALLEL_FORMATS)} without lineage")
    store = store_of(store)
    sessions_sql, messages_sql = batch_statements(store)
    config = json.dumps({
        "database": str(Path(store.path).resolve()), "sessions_sql": sessions_sql, "messages_sql": messages_sql,
        "format": fmt, "options": {"only": options.only, "redact": options.redact},
        "visible_controls": visible_controls,
    })
    pooled = _pooled(config, store, source, count, on_batch)
    try:
        yield from (_without_first_separator(pooled) if fmt == "md" else pooled)
    finally:
        pooled.close()  # (the workers stop now, not when the generator is collected)


def _without_first_separator(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Each worker's document starts with the rule written between documents: the export's
    first one is dropped, as one process writes none before its first document."""
    first = True
    for chunk in chunks:
        if first and chunk:
            chunk = chunk[len(MARKDOWN_SEPARATOR):] if chunk.startswith(MARKDOWN_SEPARATOR) else chunk
            first = False
        yield chunk


def _pooled(
    config: str, store: Store, source: str | None, count: int, on_batch: Callable[[int], None] | None
) -> Iterator[bytes]:
    pool: list[_Worker] = []
    try:
        # The workers start (~50 ms each: an interpreter, sqlite3, json) while the order is read.
        pool.extend(_Worker(config) for _ in range(count))
        ids, counts = export_plan(store, source)
        pending: deque[_Worker] = deque()
        for n, batch in enumerate(plan_batches(ids, counts, BATCH_MESSAGES)):
            worker = pool[n % count]
            worker.send(json.dumps(batch))
            pending.append(worker)
            if len(pending) > count * AHEAD_PER_WORKER:
                yield from _written(pending.popleft(), on_batch)
        while pending:
            yield from _written(pending.popleft(), on_batch)
    except OSError as exc:  # a worker could not be started, or went away mid-request
        raise DatabaseError(f"an export worker failed: {exc.strerror or exc}") from None
    finally:
        for worker in pool:
            worker.close()


def _written(worker: _Worker, on_batch: Callable[[int], None] | None) -> Iterator[bytes]:
    text, sessions = worker.receive()
    if on_batch is not None:
        on_batch(sessions)
    if text:
        yield text


# ---------------------------------------------------------------------------- the export's doors


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
    """:func:`hermes_state.export.export_to_path`, on several cores when :func:`suitable`
    (JSONL or Markdown of every session, without ``--lineage``: its chains are ordered by
    one process)."""
    store = store_of(store)
    if not uses_workers(store, fmt, source, session_ids, options):
        return export.export_to_path(store, path, fmt, source=source, session_ids=session_ids,
                                     progress=progress, mode=mode, options=options)
    chunks, counted = _counted_chunks(store, source, progress, fmt, options)
    if fmt == "md-dir":
        write_md_dir_records(path, _records(chunks))
    elif fmt == "html":
        write_atomic(path, html_page(_html_parts(chunks)), mode=mode)
    else:
        write_atomic(path, chunks, mode=mode)
    return counted()


def _html_parts(chunks: Iterable[bytes]) -> Iterator[tuple[str, str]]:
    """``(article, sidebar entry)`` of each session from the workers' ``html`` chunks."""
    for chunk in chunks:
        start = 0
        while start < len(chunk):
            end = chunk.index(b"\n", start)
            article, entry = (int(size) for size in chunk[start:end].split())
            middle = end + 1 + article
            yield chunk[end + 1:middle].decode("utf-8"), chunk[middle:middle + entry].decode("utf-8")
            start = middle + entry


def _records(chunks: Iterable[bytes]) -> Iterator[tuple[dict, bytes]]:
    """``(facts, document)`` of each session from the workers' ``md-dir`` chunks."""
    for chunk in chunks:
        view = memoryview(chunk)
        start = 0
        while start < len(chunk):
            end = chunk.index(b"\n", start)
            facts = json.loads(view[start:end].tobytes())
            size = facts.pop("bytes")
            yield facts, view[end + 1:end + 1 + size].tobytes()
            start = end + 1 + size


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
    """:func:`hermes_state.export.export_to_stream`, on several cores when :func:`suitable`
    (the bytes go to the stream's binary buffer when it has one). ``visible_controls``
    changes Markdown only: JSONL never carries a control raw."""
    store = store_of(store)
    if fmt in ("md-dir", "html") or not uses_workers(store, fmt, source, session_ids, options):
        return export.export_to_stream(store, stream, fmt, source=source, session_ids=session_ids,
                                       progress=progress, visible_controls=visible_controls,
                                       options=options)
    chunks, counted = _counted_chunks(store, source, progress, fmt, options, visible_controls)
    binary = getattr(stream, "buffer", None)
    stream.flush()  # (what the text layer holds goes first)
    for chunk in chunks:
        if binary is None:
            stream.write(chunk.decode("utf-8"))
        else:
            binary.write(chunk)
    stream.flush()
    if binary is not None:
        binary.flush()
    return counted()


def uses_workers(
    store: StoreLike, fmt: str, source: str | None, session_ids: list[str] | None, options: ExportOptions
) -> bool:
    """Whether this export is written by worker processes (see :func:`suitable`)."""
    return fmt in PARALLEL_FORMATS and not options.lineage and session_ids is None and suitable(store, source)


def _counted_chunks(
    store: Store, source: str | None, progress: ProgressCallback | None, fmt: str = "jsonl",
    options: ExportOptions = PLAIN, visible_controls: bool = False,
) -> tuple[Iterable[bytes], Callable[[], int]]:
    total = sessions_counted(store, source)
    done = [0]
    if progress:
        progress(0, total)

    def on_batch(sessions: int) -> None:
        done[0] += sessions
        if progress:
            progress(done[0], max(total, done[0]))

    chunks = iter_jsonl_parallel(store, source, on_batch=on_batch, fmt=fmt, options=options,
                                 visible_controls=visible_controls)
    return chunks, lambda: done[0]
