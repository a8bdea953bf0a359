"""Reliability harness: contention, kill -9 crashes, export faults, the browser's own faults.

``python -m bench.reliability`` (or ``python bench/reliability.py``) runs the long version and
prints a summary table:

* **contention** -- ``--writers`` simulator writer processes (``hermes_workload.simulate``, each
  its own OS process, writing as fast as they can) for ``--seconds``, while a headless
  browser (the real app under Textual's Pilot, real worker threads, live refresh on) renames,
  deletes and exports from its keys and modals. Afterwards every message each writer logged
  is in the database exactly once, nothing unlogged appeared, the FTS tables match the
  messages, the integrity checks pass, no writer saw an error, every rename either landed or
  was reported (never both), and every export parses and agrees with the store;
* **crashes** -- ``--kills`` times: two fast writers, one of them ``kill -9``-ed at a random
  moment; then the store must open, pass ``PRAGMA integrity_check`` and both FTS
  ``integrity-check``\\ s, and hold no half-written session (orphan message, counter that
  disagrees with the rows, FTS row missing); every message a writer logged (logged after the
  commit returned) must still be there;
* **exports** -- an export into a full file system (a 64 KiB tmpfs when this process may mount
  one, else a failing file object) leaves no partial file and keeps the previous file; an
  export of the contention database re-imported into an empty database gives identical rows;
* **hostile queries** (optional) -- when ``tests/reliability/hostile.py`` provides a query
  generator, that many queries are run through ``SessionDB.search`` on the contention
  database.

The CI tests in ``tests/reliability/`` use the same building blocks with small sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional

REPO = Path(__file__).resolve().parents[1]
if not __package__:  # ``python bench/reliability.py``: make the source tree importable
    sys.path.insert(0, str(REPO))

from hermes_state import SessionDB  # noqa: E402
from hermes_state.listing import ListQuery  # noqa: E402
from hermes_state.schema import FTS_TABLES, FTS_TEXT_EXPR  # noqa: E402
from hermes_workload.simulate import read_log, verify_simulation  # noqa: E402

# ---------------------------------------------------------------------------------------
# Writer processes
# ---------------------------------------------------------------------------------------

#: One simulator writer in its own process. SIGTERM stops it cleanly (it closes its sessions
#: and prints its WriterReport as JSON); SIGKILL is the crash. With a trace file, every
#: BEGIN / COMMIT / ROLLBACK of its connection is appended there unbuffered, with how long
#: the BEGIN IMMEDIATE waited for the write lock ("W <ms>"), so a kill can be placed
#: (inside a transaction or not) and lock waits can be counted.
WRITER_CODE = r"""
import json, os, signal, sys, threading, time
from pathlib import Path

signal.signal(signal.SIGINT, signal.SIG_IGN)
args = json.loads(sys.argv[1])
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())

import hermes_workload.simulate as simulate

trace_path = args.pop("trace", None)
if trace_path:
    fd = os.open(trace_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    class TracedDB(simulate.SessionDB):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            begun = [None]

            def trace(sql):
                now = time.perf_counter()
                if begun[0] is not None:
                    os.write(fd, b"W %.3f\n" % ((now - begun[0]) * 1000.0))
                    begun[0] = None
                word = sql.lstrip()[:8].split(None, 1)[0].upper() if sql.strip() else ""
                if word == "BEGIN":
                    begun[0] = now
                    os.write(fd, b"BEGIN\n")
                elif word in ("COMMIT", "ROLLBACK"):
                    os.write(fd, word.encode() + b"\n")

            self._conn.set_trace_callback(trace)

    simulate.SessionDB = TracedDB

home = Path(args.pop("home"))
log = Path(args.pop("log"))
report = simulate.run_writer(home, stop_event=stop, log_path=log, **args)
print(json.dumps(report.to_dict()), flush=True)
"""


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@dataclass
class Writer:
    """A running writer process (see :data:`WRITER_CODE`)."""

    index: int
    proc: subprocess.Popen
    log_path: Path
    trace_path: Optional[Path]
    report: Optional[dict] = None
    killed: bool = False
    stderr: str = ""

    @property
    def errors(self) -> int:
        return int(self.report.get("errors", 0)) if self.report else 0

    def describe_failure(self) -> str:
        samples = (self.report or {}).get("error_samples") or []
        return f"writer {self.index} (pid {self.proc.pid}): errors {self.errors} {samples} {self.stderr[-800:]}"


def spawn_writer(
    home: Path,
    index: int,
    *,
    log_dir: Path,
    seed: int = 0,
    rate: float = 0.0,
    duration: Optional[float] = None,
    max_events: Optional[int] = None,
    trace: bool = False,
    tag: str = "",
) -> Writer:
    """Start one simulator writer process on ``home`` (its log: ``log_dir/writer-<tag><i>.jsonl``)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"writer-{tag}{index}.jsonl"
    trace_path = log_dir / f"trace-{tag}{index}.txt" if trace else None
    args = {
        "home": str(home),
        "log": str(log_path),
        "trace": str(trace_path) if trace_path else None,
        "seed": seed,
        "rate": rate,
        "duration": duration,
        "max_events": max_events,
        "writer_index": index,
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER_CODE, json.dumps(args)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=_child_env(), cwd=str(REPO),
    )
    return Writer(index, proc, log_path, trace_path)


def _collect(writer: Writer, timeout: float) -> Writer:
    try:
        out, err = writer.proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        writer.proc.kill()
        out, err = writer.proc.communicate()
        writer.stderr = "did not stop in time; killed. " + err.decode(errors="replace")
        writer.report = {"errors": 1, "error_samples": ["did not stop in time"]}
        return writer
    writer.stderr = err.decode(errors="replace")
    lines = [line for line in out.decode(errors="replace").splitlines() if line.strip()]
    if writer.killed:
        return writer
    try:
        writer.report = json.loads(lines[-1])
    except (IndexError, ValueError):
        writer.report = {"errors": 1, "error_samples": [f"no report (exit {writer.proc.returncode})"]}
    return writer


def wait_writer(writer: Writer, timeout: float = 60.0) -> Writer:
    """Wait for a writer that stops by itself (duration / max_events) and read its report."""
    return _collect(writer, timeout)


def stop_writer(writer: Writer, timeout: float = 60.0) -> Writer:
    """Ask a writer to stop cleanly (SIGTERM) and read its report."""
    if writer.proc.poll() is None:
        writer.proc.send_signal(signal.SIGTERM)
    return _collect(writer, timeout)


def _stopped(pid: int, timeout: float = 1.0) -> None:
    """Wait until ``pid`` is in the stopped state (Linux /proc; elsewhere a short sleep)."""
    stat = Path(f"/proc/{pid}/stat")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            time.sleep(0.01)
            return
        if fields and fields[0] in ("T", "t", "Z", "X"):
            return
        time.sleep(0.0005)


def kill_inside_transaction(writer: Writer, rng: random.Random, attempts: int = 400) -> bool:
    """``kill -9`` a writer at a random moment that lies inside a write transaction.

    The writer is stopped (SIGSTOP) at random moments until its trace shows that it holds the
    write lock and is running a statement of an uncommitted transaction; it is killed right
    there, still stopped. Returns False (and kills it anyway) if no such moment was caught.
    """
    assert writer.trace_path is not None, "needs a traced writer"
    caught = False
    for _ in range(attempts):
        if writer.proc.poll() is not None:
            break
        os.kill(writer.proc.pid, signal.SIGSTOP)
        _stopped(writer.proc.pid)
        if read_trace(writer.trace_path).in_transaction:
            caught = True
            break
        os.kill(writer.proc.pid, signal.SIGCONT)
        time.sleep(rng.uniform(0.0, 0.004))
    kill_writer(writer)
    return caught


def kill_writer(writer: Writer) -> None:
    """``kill -9``: the crash."""
    writer.killed = True
    try:
        os.kill(writer.proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _collect(writer, 30.0)


def wait_until_writing(writer: Writer, timeout: float = 30.0) -> bool:
    """True once the writer has logged a first write (it is past start-up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if writer.log_path.stat().st_size > 0:
                return True
        except FileNotFoundError:
            pass
        if writer.proc.poll() is not None:
            return False
        time.sleep(0.01)
    return False


@dataclass
class TraceSummary:
    """What a writer's trace file says: where it stopped, and its lock waits (ms)."""

    last: Optional[str]
    in_transaction: bool
    waits_ms: list[float]


def read_trace(path: Path) -> TraceSummary:
    last: Optional[str] = None
    began_and_ran = False
    waits: list[float] = []
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return TraceSummary(None, False, [])
    for line in text.splitlines():
        if line.startswith("W "):
            try:
                waits.append(float(line[2:]))
            except ValueError:
                continue
            if last == "BEGIN":
                began_and_ran = True
        elif line in ("BEGIN", "COMMIT", "ROLLBACK"):
            last = line
            began_and_ran = False
    # Inside a transaction: BEGIN IMMEDIATE had the lock and a statement of it was running.
    return TraceSummary(last, last == "BEGIN" and began_and_ran, waits)


# ---------------------------------------------------------------------------------------
# Store checks
# ---------------------------------------------------------------------------------------


def _tool_call_weight(raw: Optional[str]) -> int:
    """MS-2 on the stored JSON text: a list counts its length, any other value one."""
    if raw is None:
        return 0
    try:
        value = json.loads(raw)
    except ValueError:
        return 1
    return len(value) if isinstance(value, list) else 1


def store_problems(db_path: Path, *, open_as_agent: bool = True) -> list[str]:
    """Everything wrong with the store at ``db_path``; [] means consistent.

    It must open through :class:`SessionDB` (as the next agent start would), pass
    ``PRAGMA integrity_check`` and the FTS5 ``integrity-check`` of both FTS tables, and in one
    read snapshot: no message without its session row, ``message_count`` and
    ``tool_call_count`` equal to the rows, each FTS table holding exactly one row per message
    (same rowids, same indexed text), no parent link to a missing session.
    """
    problems: list[str] = []
    if open_as_agent:
        try:
            SessionDB(db_path).close()
        except Exception as exc:  # noqa: BLE001 - that is the finding
            return [f"the store does not open: {type(exc).__name__}: {exc}"]
    conn = sqlite3.connect(str(db_path), timeout=30.0, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 30000")
        try:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
        except sqlite3.DatabaseError as exc:  # a damaged page can stop the check itself
            return problems + [f"PRAGMA integrity_check: {exc}"]
        if [tuple(r) for r in rows] != [("ok",)]:
            problems.append(f"PRAGMA integrity_check: {rows[:5]}")
        for table in FTS_TABLES:
            try:
                conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
            except sqlite3.DatabaseError as exc:
                problems.append(f"{table} integrity-check: {exc}")
        conn.execute("BEGIN")  # one snapshot for every count below
        try:
            orphans = conn.execute(
                "SELECT COUNT(*), MIN(session_id) FROM messages "
                "WHERE session_id NOT IN (SELECT id FROM sessions)"
            ).fetchone()
            if orphans[0]:
                problems.append(f"{orphans[0]} message(s) without a session row (e.g. {orphans[1]!r})")
            actual: dict[str, list[int]] = {}
            total = 0
            for session_id, tool_calls in conn.execute("SELECT session_id, tool_calls FROM messages"):
                counts = actual.setdefault(session_id, [0, 0])
                counts[0] += 1
                counts[1] += _tool_call_weight(tool_calls)
                total += 1
            bad = []
            for sid, message_count, tool_call_count in conn.execute(
                "SELECT id, message_count, tool_call_count FROM sessions"
            ):
                real = actual.get(sid, [0, 0])
                if (message_count, tool_call_count) != (real[0], real[1]):
                    bad.append(f"{sid}: counters {message_count}/{tool_call_count}, rows {real[0]}/{real[1]}")
            if bad:
                problems.append(f"{len(bad)} session(s) whose counters disagree with their rows: {bad[:5]}")
            expr = FTS_TEXT_EXPR.format(p="m.")
            for table in FTS_TABLES:
                n = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                if n != total:
                    problems.append(f"{table} has {n} rows for {total} messages")
                missing = conn.execute(
                    f"SELECT COUNT(*) FROM messages m WHERE NOT EXISTS "
                    f"(SELECT 1 FROM {table} f WHERE f.rowid = m.id)"
                ).fetchone()[0]
                if missing:
                    problems.append(f"{missing} message(s) missing from {table}")
                differ = conn.execute(
                    f"SELECT COUNT(*) FROM messages m JOIN {table} f ON f.rowid = m.id "
                    f"WHERE f.content IS NOT ({expr})"
                ).fetchone()[0]
                if differ:
                    problems.append(f"{differ} {table} row(s) index other text than their message")
            dangling = conn.execute(
                "SELECT COUNT(*), MIN(id) FROM sessions s WHERE parent_session_id IS NOT NULL AND "
                "NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id)"
            ).fetchone()
            if dangling[0]:
                problems.append(f"{dangling[0]} session(s) link to a missing parent (e.g. {dangling[1]!r})")
        finally:
            conn.execute("COMMIT")
    finally:
        conn.close()
    return problems


def counts(db_path: Path) -> tuple[int, int]:
    """``(sessions, messages)`` in the store."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30.0)
    try:
        return (
            conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0],
        )
    finally:
        conn.close()


#: verify_simulation findings that are not about the database: the gateway saves a lane in
#: sessions.json before the session row exists (as upstream does), so a writer killed in
#: between leaves a lane naming a session that was never created.
LANE_BEFORE_ROW = "points at missing session"
UNLOGGED = "was never logged"


def classify_verify(problems: list[str]) -> tuple[list[str], list[str], list[str]]:
    """``(real problems, unlogged messages, lanes without a row)`` of verify_simulation's list."""
    real, unlogged, lanes = [], [], []
    for text in problems:
        if UNLOGGED in text:
            unlogged.append(text)
        elif LANE_BEFORE_ROW in text:
            lanes.append(text)
        else:
            real.append(text)
    return real, unlogged, lanes


def sessions_json_problem(home: Path) -> Optional[str]:
    """sessions.json must stay parseable through crashes (it is replaced atomically)."""
    path = home / "sessions" / "sessions.json"
    if not path.exists():
        return None
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"sessions.json unreadable after a crash: {exc}"
    return None


# ---------------------------------------------------------------------------------------
# Crashes
# ---------------------------------------------------------------------------------------


@dataclass
class CrashResult:
    kills: int = 0
    #: kills that landed after BEGIN IMMEDIATE had the lock and before COMMIT
    mid_transaction: int = 0
    #: kills placed inside a transaction on purpose (every other one; the rest are blind)
    targeted: int = 0
    #: kills of the last process that had the store open (the next open recovers the WAL)
    last_process_kills: int = 0
    #: committed writes whose log line the kill prevented (allowed: at most one per kill)
    unlogged_messages: int = 0
    lanes_without_row: int = 0
    messages: int = 0
    sessions: int = 0
    survivor_errors: int = 0
    problems: list[str] = field(default_factory=list)
    elapsed: float = 0.0


def run_crashes(
    home: Path,
    *,
    kills: int,
    seed: int = 0,
    log_dir: Path,
    max_delay: float = 0.5,
    on_kill: Optional[Callable[[int, CrashResult], None]] = None,
) -> CrashResult:
    """``kill -9`` fast writers ``kills`` times at random moments; check the store after each.

    Each round starts two writers (rate 0: as fast as the lock allows) and kills one of them
    after a random delay. Kills alternate between blind (whatever the writer is doing) and
    placed inside a write transaction (:func:`kill_inside_transaction`), so torn
    transactions are certain, not just likely. Every third round the other writer is killed
    as well, so the next open has to recover from the WAL with no process left; otherwise it
    is stopped cleanly and must have seen no error (a peer's death must not disturb it).

    After each kill the store must pass :func:`store_problems`, sessions.json must parse,
    and every message logged so far (a writer logs after the commit returned) must be in the
    database exactly once. At the end :func:`verify_simulation` over every log allows only
    one unlogged message per kill (the write whose log line the kill prevented).
    """
    rng = random.Random(f"crash:{seed}")
    home.mkdir(parents=True, exist_ok=True)
    SessionDB(home / "state.db").close()
    result = CrashResult()
    started = time.monotonic()
    logs: list[Path] = []

    def check(when: str, *, survivor_running: bool) -> None:
        for problem in store_problems(home / "state.db"):
            result.problems.append(f"{when}: {problem}")
        json_problem = sessions_json_problem(home)
        if json_problem:
            result.problems.append(f"{when}: {json_problem}")
        real, _unlogged, _lanes = classify_verify(verify_simulation(home, logs))
        if survivor_running:
            # A running writer may be between its commit and its log line (or its counters
            # read across two statements): only lost or altered logged writes are conclusive.
            real = [p for p in real if "missing" in p or "differs" in p]
        result.problems.extend(f"{when}: {p}" for p in real)

    def kill(writer: Writer, targeted: bool) -> None:
        if targeted:
            result.targeted += 1
            if not kill_inside_transaction(writer, rng):
                result.problems.append(f"kill {result.kills + 1}: never caught the writer inside a transaction")
        else:
            kill_writer(writer)
        result.kills += 1
        if writer.trace_path is not None and read_trace(writer.trace_path).in_transaction:
            result.mid_transaction += 1

    round_index = 0
    while result.kills < kills:
        pair = [
            spawn_writer(home, i, log_dir=log_dir, seed=seed * 1000 + round_index, rate=0.0,
                         duration=120.0, trace=True, tag=f"r{round_index}-")
            for i in range(2)
        ]
        logs += [w.log_path for w in pair]
        try:
            for writer in pair:
                if not wait_until_writing(writer):
                    _collect(writer, 5.0)
                    result.problems.append(f"round {round_index}: {writer.describe_failure()}")
            time.sleep(rng.uniform(0.0, max_delay))
            victim, survivor = rng.sample(pair, 2)
            # Every other kill is placed inside a transaction on purpose (stop, look, kill).
            kill(victim, targeted=result.kills % 2 == 1)
            check(f"after kill {result.kills} (other writer running)", survivor_running=True)
            time.sleep(rng.uniform(0.0, 0.2))
            if round_index % 3 == 2 and result.kills < kills:
                # The last process that had the store open dies too: the next open must
                # recover from the WAL alone.
                kill(survivor, targeted=result.kills % 2 == 1)
                result.last_process_kills += 1
                check(f"after kill {result.kills} (no process left)", survivor_running=False)
            else:
                stop_writer(survivor)
                if survivor.errors or survivor.proc.returncode != 0:
                    result.survivor_errors += max(1, survivor.errors)
                    result.problems.append(f"round {round_index}: the other writer saw errors: "
                                           f"{survivor.describe_failure()}")
        finally:
            for writer in pair:
                if writer.proc.poll() is None:
                    kill_writer(writer)
        if on_kill is not None:
            on_kill(round_index, result)
        round_index += 1
    real, unlogged, lanes = classify_verify(verify_simulation(home, logs))
    result.problems += [f"final: {p}" for p in real]
    result.unlogged_messages = len(unlogged)
    result.lanes_without_row = len(lanes)
    if len(unlogged) > result.kills:
        result.problems.append(
            f"{len(unlogged)} messages were never logged, more than one per kill ({result.kills}): {unlogged[:3]}"
        )
    result.problems += [f"final: {p}" for p in store_problems(home / "state.db")]
    result.sessions, result.messages = counts(home / "state.db")
    result.elapsed = time.monotonic() - started
    return result


# ---------------------------------------------------------------------------------------
# Exports
# ---------------------------------------------------------------------------------------


def table_rows(db_path: Path, table: str) -> list[tuple]:
    """Every row of ``table`` with every column, ordered by id (for exact comparisons)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30.0)
    try:
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        return [tuple(r) for r in conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY id")]
    finally:
        conn.close()


def roundtrip_problems(original: Path, export_file: Path, fresh: Path) -> list[str]:
    """Import ``export_file`` into a new database ``fresh``; its rows must equal ``original``'s."""
    from hermes_state.export import import_jsonl

    problems: list[str] = []
    db = SessionDB(fresh)
    try:
        report = import_jsonl(db, export_file)
    finally:
        db.close()
    if not report.ok or report.skipped_existing or report.title_collisions or report.missing_parents:
        problems.append(f"import reported: {report.summary()} {report.errors[:3]}")
    if report.reassigned_message_ids:
        problems.append(f"{report.reassigned_message_ids} message ids reassigned in an empty database")
    for table in ("sessions", "messages"):
        before, after = table_rows(original, table), table_rows(fresh, table)
        if before != after:
            diff = [(a, b) for a, b in zip(before, after) if a != b][:2]
            problems.append(
                f"{table}: {len(before)} rows exported, {len(after)} imported; first differences {diff}"
            )
    problems += [f"imported store: {p}" for p in store_problems(fresh)]
    return problems


class DiskFull:
    """A 64 KiB tmpfs mounted on ``path`` (root only); ``available`` says whether it worked."""

    def __init__(self, path: Path, size: str = "64k") -> None:
        self.path = path
        self.size = size
        self.available = False
        self.reason = ""

    def __enter__(self) -> "DiskFull":
        self.path.mkdir(parents=True, exist_ok=True)
        if shutil.which("mount") is None:
            self.reason = "no mount command"
            return self
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={self.size}", "tmpfs", str(self.path)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
        )
        if proc.returncode != 0:
            self.reason = proc.stderr.decode(errors="replace").strip() or f"mount exit {proc.returncode}"
            return self
        self.available = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.available:
            subprocess.run(["umount", "-l", str(self.path)], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)


class FailAfter:
    """Chunks that raise ENOSPC after ``limit`` bytes: a disk filling up during an export."""

    def __init__(self, chunks: Iterable[str], limit: int) -> None:
        self.chunks = chunks
        self.limit = limit
        self.sent = 0

    def __iter__(self) -> Iterator[str]:
        for chunk in self.chunks:
            size = len(chunk.encode("utf-8"))
            if self.sent + size > self.limit:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            self.sent += size
            yield chunk


# ---------------------------------------------------------------------------------------
# Contention: writers + the browser driven from its keys
# ---------------------------------------------------------------------------------------

#: Pre-created sessions sort first (their start is in the future), so the UI finds them at
#: fixed rows whatever the writers add below.
FUTURE_S = 2 * 86400.0


@dataclass
class Targets:
    """Sessions the harness creates before the run: renamed and deleted from the UI only."""

    rename: list[str]
    victims: list[str]
    titles: dict[str, Optional[str]]
    messages: dict[str, list[tuple]]
    #: every column of each session row as created
    rows: dict[str, tuple] = field(default_factory=dict)


def prepare_targets(db_path: Path, *, renames: int = 3, victims: int = 3, now: Optional[float] = None) -> Targets:
    now = time.time() if now is None else now
    db = SessionDB(db_path)
    rename_ids, victim_ids, titles = [], [], {}
    try:
        for kind, count, ids in (("victim", victims, victim_ids), ("rename", renames, rename_ids)):
            for i in range(count):
                sid = f"reliability_{kind}_{i}"
                start = now + FUTURE_S + (1000 if kind == "victim" else 0) + i
                db.create_session(sid, "cli", model="reliability/model")
                db.append_message(sid, "user", f"{kind} {i}: keep [bold]this[/] exactly \u202e as data")
                db.append_message(
                    sid, "assistant", None, finish_reason="tool_calls",
                    tool_calls=[{"id": f"c{i}", "type": "function",
                                 "function": {"name": "grep", "arguments": json.dumps({"q": kind})}}],
                )
                db.append_message(sid, "tool", f"{kind} result {i} 日本語", tool_name="grep", tool_call_id=f"c{i}")
                db.append_message(sid, "assistant", f"Done with {kind} {i}.")
                title = f"reliability {kind} {i}"
                db.set_session_title(sid, title)
                titles[sid] = title
                db.end_session(sid, "user_exit")
                db._execute_write(
                    lambda c, sid=sid, start=start: (
                        c.execute("UPDATE sessions SET started_at = ?, ended_at = ? WHERE id = ?",
                                  (start, start + 60, sid)),
                        c.execute("UPDATE messages SET timestamp = ? + id * 0.001 WHERE session_id = ?",
                                  (start + 1, sid)),
                    )
                )
                ids.append(sid)
    finally:
        db.close()
    messages = {sid: _message_rows(db_path, sid) for sid in rename_ids + victim_ids}
    rows = {sid: _full_session_row(db_path, sid) for sid in rename_ids + victim_ids}
    return Targets(rename_ids, victim_ids, titles, messages, rows)


def _full_session_row(db_path: Path, session_id: str) -> Optional[tuple]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30.0)
    try:
        row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return tuple(row) if row else None
    finally:
        conn.close()


def _message_rows(db_path: Path, session_id: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30.0)
    try:
        return [tuple(r) for r in conn.execute("SELECT * FROM messages WHERE session_id = ? ORDER BY id", (session_id,))]
    finally:
        conn.close()


def _session_row(db_path: Path, session_id: str) -> Optional[tuple]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30.0)
    try:
        row = conn.execute("SELECT id, title FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return tuple(row) if row else None
    finally:
        conn.close()


@dataclass
class UiAction:
    kind: str  # rename | delete | export
    session_id: Optional[str]
    ok: bool
    detail: str = ""
    elapsed: float = 0.0
    #: rename: the title that should now be stored; export: (path, format, scope key, count)
    expect: Any = None
    #: rename: the title stored right after the outcome (checked against ``ok``)
    stored: Any = None
    #: seconds from the confirming key (enter / y / u / ctrl+s) to the outcome on screen
    confirm_elapsed: float = 0.0


class UiDriver:
    """Drives a running :class:`~hermes_tui.app.HermesApp` through a Pilot, from its keys."""

    def __init__(self, app: Any, pilot: Any, db_path: Path, export_dir: Path, *, seed: int = 0) -> None:
        self.app = app
        self.pilot = pilot
        self.db_path = db_path
        self.export_dir = export_dir
        self.rng = random.Random(f"ui:{seed}")
        self.actions: list[UiAction] = []
        self.harness_problems: list[str] = []
        self._seen: set[str] = set()
        self._exports = 0
        #: (severity, message) of every notification seen during the run
        self.notes: list[tuple[str, str]] = []

    # ---------------------------------------------------------------- helpers

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 30.0, step: float = 0.02) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if predicate():
                    return True
            except Exception:  # noqa: BLE001 - widgets may be mid-recompose; look again
                pass
            if time.monotonic() > deadline:
                return False
            await self.pilot.pause(step)

    @property
    def browser(self) -> Any:
        return self.app.screen_stack[0] if self.app.screen_stack else None

    @property
    def session_list(self) -> Any:
        return self.browser.session_list

    def _index_of(self, session_id: str, within: int = 60) -> Optional[int]:
        lst = self.session_list
        for i in range(min(lst.total, within)):
            row = lst.row(i)
            if row is not None and row.id == session_id:
                return i
        return None

    def first_other_row(self, prefix: str = "reliability_") -> int:
        """Index of the first row that is not a pre-created session (they sort first)."""
        lst = self.session_list
        for i in range(lst.total):
            row = lst.row(i)
            if row is None or not row.id.startswith(prefix):
                return i
        return lst.total

    def new_notifications(self) -> list[str]:
        """Notifications raised since the last call (all of them are kept in ``notes``)."""
        fresh = []
        for note in list(self.app._notifications):
            if note.identity not in self._seen:
                self._seen.add(note.identity)
                self.notes.append((str(note.severity), note.message))
                fresh.append(note.message)
        return fresh

    async def goto(self, session_id: str) -> bool:
        """Put the cursor on ``session_id`` with the list keys (home, then j)."""
        lst = self.session_list
        for _attempt in range(4):
            if not await self.wait_for(lambda: self._index_of(session_id) is not None, 10.0):
                return False
            index = self._index_of(session_id) or 0
            await self.pilot.press("home", *(["j"] * index))
            if await self.wait_for(lambda: lst.current is not None and lst.current.id == session_id, 3.0):
                return True
        return False

    async def goto_row(self, index: int) -> Optional[str]:
        lst = self.session_list
        await self.wait_for(lambda: lst.total > index and lst.row(index) is not None, 10.0)
        await self.pilot.press("home", *(["j"] * index))
        await self.pilot.pause(0.05)
        return lst.current.id if lst.current is not None else None

    async def _escape_modals(self) -> None:
        from textual.screen import ModalScreen

        for _ in range(3):
            if isinstance(self.app.screen, ModalScreen):
                await self.pilot.press("escape")
                await self.pilot.pause(0.05)

    # ---------------------------------------------------------------- actions

    async def rename(self, session_id: str, raw_title: str) -> UiAction:
        from textual.widgets import Input

        from hermes_state.titles import sanitize_title
        from hermes_tui.modals.rename import RenameModal

        app, pilot = self.app, self.pilot
        self.new_notifications()
        started = time.monotonic()
        if not await self.goto(session_id):
            self.harness_problems.append(f"rename: could not reach {session_id} in the list")
            return self._record(UiAction("rename", session_id, False, "not reached"))
        await pilot.press("r")
        if not await self.wait_for(lambda: isinstance(app.screen, RenameModal), 30.0):
            self.harness_problems.append(f"rename: no modal for {session_id}")
            return self._record(UiAction("rename", session_id, False, "no modal"))
        modal = app.screen
        if modal.session_id != session_id:
            self.harness_problems.append(f"rename: modal opened for {modal.session_id}, wanted {session_id}")
            await self._escape_modals()
            return self._record(UiAction("rename", modal.session_id, False, "wrong row"))
        modal.query_one("#rename-input", Input).value = raw_title
        confirmed = time.monotonic()
        await pilot.press("enter")
        await self.wait_for(lambda: app.screen is not modal or (modal.error and not modal.saving), 120.0)
        elapsed = time.monotonic() - started
        confirm_elapsed = time.monotonic() - confirmed
        expected = sanitize_title(raw_title)
        if app.screen is not modal:
            notes: list[str] = []

            def announced() -> bool:
                # the notification comes from the modal's dismiss callback, a moment later
                notes.extend(self.new_notifications())
                return any(n.startswith(("Renamed ", "Title cleared")) for n in notes)

            await self.wait_for(announced, 10.0)
            action = UiAction("rename", session_id, True, " | ".join(notes), elapsed, expected)
            if not any(n.startswith(f"Renamed {session_id} to") for n in notes):
                self.harness_problems.append(f"rename of {session_id} closed without its notification: {notes}")
        else:
            action = UiAction("rename", session_id, False, str(modal.error), elapsed, expected)
            await self._escape_modals()
            notes = self.new_notifications()
            if any(n.startswith(f"Renamed {session_id} to") for n in notes):
                self.harness_problems.append(f"rename of {session_id} reported both a failure and success")
        row = await asyncio.to_thread(_session_row, self.db_path, session_id)
        action.stored = row[1] if row else None
        action.confirm_elapsed = confirm_elapsed
        return self._record(action)

    async def delete(self, session_id: str) -> UiAction:
        from hermes_tui.modals.delete import ConfirmDeleteModal

        app, pilot = self.app, self.pilot
        self.new_notifications()
        started = time.monotonic()
        if not await self.goto(session_id):
            self.harness_problems.append(f"delete: could not reach {session_id} in the list")
            return self._record(UiAction("delete", session_id, False, "not reached"))
        await pilot.press("d")
        if not await self.wait_for(lambda: isinstance(app.screen, ConfirmDeleteModal), 30.0):
            self.harness_problems.append(f"delete: no confirmation for {session_id}")
            return self._record(UiAction("delete", session_id, False, "no modal"))
        modal = app.screen
        if modal.preview.session_id != session_id:
            self.harness_problems.append(f"delete: modal for {modal.preview.session_id}, wanted {session_id}")
            await self._escape_modals()
            return self._record(UiAction("delete", modal.preview.session_id, False, "wrong row"))
        confirmed = time.monotonic()
        await pilot.press("y")
        outcome: list[str] = []

        def reported() -> bool:
            outcome.extend(n for n in self.new_notifications() if n.startswith(("Deleted ", "Delete failed")))
            return bool(outcome)

        await self.wait_for(reported, 120.0)
        elapsed = time.monotonic() - started
        ok = bool(outcome) and outcome[0].startswith("Deleted ")
        if not outcome:
            self.harness_problems.append(f"delete of {session_id}: no outcome reported")
        return self._record(UiAction("delete", session_id, ok, " | ".join(outcome), elapsed,
                                     confirm_elapsed=time.monotonic() - confirmed))

    async def undo(self, session_id: str) -> UiAction:
        """``u`` on the list: the last delete comes back (exactly, or with a warning)."""
        self.new_notifications()
        started = time.monotonic()
        outcome: list[str] = []

        def reported() -> bool:
            outcome.extend(n for n in self.new_notifications()
                           if n.startswith(("Restored ", "Undo failed", "Nothing to undo")))
            return bool(outcome)

        await self.pilot.press("u")
        await self.wait_for(reported, 120.0)
        elapsed = time.monotonic() - started
        ok = bool(outcome) and outcome[0].startswith("Restored ") and "Could not restore" not in outcome[0]
        if ok:
            # the browser then puts its cursor on the restored session
            lst = self.session_list
            if not await self.wait_for(lambda: lst.current is not None and lst.current.id == session_id, 10.0):
                self.harness_problems.append(f"undo of {session_id}: the cursor did not move to it")
        if not outcome:
            self.harness_problems.append(f"undo of {session_id}: no outcome reported")
        return self._record(UiAction("undo", session_id, ok, " | ".join(outcome), elapsed))

    async def export(self, session_id: Optional[str], scope_key: str, fmt: str) -> UiAction:
        from textual.widgets import Input, RadioButton, RadioSet

        from hermes_tui.modals.export import ExportModal

        app, pilot = self.app, self.pilot
        self.new_notifications()
        started = time.monotonic()
        if session_id is not None and not await self.goto(session_id):
            self.harness_problems.append(f"export: could not reach {session_id} in the list")
            return self._record(UiAction("export", session_id, False, "not reached"))
        current = self.session_list.current
        await pilot.press("e")
        if not await self.wait_for(lambda: isinstance(app.screen, ExportModal), 30.0):
            self.harness_problems.append("export: no modal")
            return self._record(UiAction("export", session_id, False, "no modal"))
        modal = app.screen
        keys = [s.key for s in modal.scopes]
        if scope_key not in keys:
            self.harness_problems.append(f"export: scope {scope_key} not offered ({keys})")
            await self._escape_modals()
            return self._record(UiAction("export", session_id, False, "scope missing"))
        buttons = list(modal.query_one("#export-scope", RadioSet).query(RadioButton))
        buttons[keys.index(scope_key)].value = True
        fmt_buttons = list(modal.query_one("#export-format", RadioSet).query(RadioButton))
        fmt_buttons[("jsonl", "md").index(fmt)].value = True
        await self.wait_for(lambda: modal.scope.key == scope_key and modal.fmt == fmt, 10.0)
        self._exports += 1
        path = self.export_dir / f"ui-export-{self._exports:03d}-{scope_key}.{ 'jsonl' if fmt == 'jsonl' else 'md'}"
        modal.query_one("#export-path", Input).value = str(path)
        scope = modal.scope
        await pilot.press("ctrl+s")
        await self.wait_for(
            lambda: app.screen is not modal or (not modal.running and modal.query_one("#export-error").display),
            180.0,
        )
        elapsed = time.monotonic() - started
        ids = list(scope.session_ids) if scope.session_ids is not None else None
        if app.screen is not modal:
            notes: list[str] = []

            def announced() -> bool:
                notes.extend(self.new_notifications())
                return any(n.startswith("Exported ") for n in notes)

            ok = await self.wait_for(announced, 10.0)
            return self._record(UiAction("export", current.id if current else None, ok, " | ".join(notes),
                                         elapsed, (path, fmt, scope_key, ids)))
        from textual.widgets import Static

        error = str(modal.query_one("#export-error", Static).content)
        await self._escape_modals()
        return self._record(UiAction("export", current.id if current else None, False, error, elapsed,
                                     (path, fmt, scope_key, ids)))

    def _record(self, action: UiAction) -> UiAction:
        self.actions.append(action)
        return action


def _rewound_rows(conn: sqlite3.Connection, session_id: str) -> int:
    """Rows of the session rewound (``active = 0``) by now; 0 on a store without the flag."""
    try:
        return int(conn.execute(
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND active = 0", (session_id,)
        ).fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def export_file_problems(path: Path, fmt: str, db_path: Path, deleted: dict[str, list[tuple]]) -> list[str]:
    """An export written during the run must parse, and agree with the store afterwards.

    Messages are never edited by the workload, so every exported message must still exist
    with the same session, role, content and timestamp -- unless its session was deleted
    from the UI, in which case it must equal the rows the session had. The workload does
    rewind (``active = 0``, never undone): an export leaves rewound rows out (UC-3) while
    ``message_count`` counts every row, so a session may carry fewer messages than its count
    by at most the rows rewound by the end of the run.
    """
    problems: list[str] = []
    if not path.exists():
        return [f"{path.name}: reported written but missing"]
    if fmt == "md":
        text = path.read_text(encoding="utf-8")
        sessions = text.count("\n- **Session:** `") + text.startswith("- **Session:** `")
        if not text.startswith("# ") or sessions == 0:
            problems.append(f"{path.name}: not a Markdown export ({text[:80]!r})")
        return problems
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30.0)
    try:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                obj = json.loads(line)
            except ValueError as exc:
                problems.append(f"{path.name}:{number}: not JSON ({exc})")
                continue
            sid = obj.get("id")
            messages = obj.get("messages")
            if not isinstance(sid, str) or not isinstance(messages, list):
                problems.append(f"{path.name}:{number}: not a session object")
                continue
            count = obj.get("message_count")
            rewound = _rewound_rows(conn, sid)
            if not isinstance(count, int) or not count - rewound <= len(messages) <= count:
                # counters move in the same transaction as the rows: a snapshot always agrees
                problems.append(f"{path.name}: {sid} says message_count {count} but carries "
                                f"{len(messages)} messages ({rewound} rewound now)")
            if sid in deleted:
                rows = {r[0]: r for r in deleted[sid]}
                for m in messages:
                    row = rows.get(m.get("id"))
                    if row is None or row[2] != m.get("role") or row[3] != m.get("content"):
                        problems.append(f"{path.name}: deleted session {sid} message {m.get('id')} differs")
                continue
            for m in messages:
                row = conn.execute(
                    "SELECT session_id, role, content, timestamp FROM messages WHERE id = ?", (m.get("id"),)
                ).fetchone()
                if row is None:
                    problems.append(f"{path.name}: message {m.get('id')} of {sid} no longer in the store")
                elif tuple(row) != (sid, m.get("role"), m.get("content"), m.get("timestamp")):
                    problems.append(f"{path.name}: message {m.get('id')} of {sid} differs from the store")
    finally:
        conn.close()
    return problems


@dataclass
class ContentionResult:
    writers: int = 0
    seconds: float = 0.0
    events: int = 0
    messages_written: int = 0
    sessions_written: int = 0
    writer_errors: int = 0
    ui_actions: list[UiAction] = field(default_factory=list)
    lock_waits: list[float] = field(default_factory=list)
    transactions: int = 0
    ui_reads_retried: int = 0
    #: UI writes whose BEGIN IMMEDIATE outwaited the 1 s busy timeout (the status line said so)
    ui_write_waits: int = 0
    problems: list[str] = field(default_factory=list)
    messages_in_store: int = 0
    sessions_in_store: int = 0
    elapsed: float = 0.0

    def count(self, kind: str, ok: Optional[bool] = None) -> int:
        return sum(1 for a in self.ui_actions if a.kind == kind and (ok is None or a.ok == ok))


async def run_contention(
    home: Path,
    *,
    writers: int = 4,
    seconds: float = 10.0,
    rate: float = 0.0,
    seed: int = 0,
    renames: int = 3,
    victims: int = 3,
    size: tuple[int, int] = (120, 40),
    progress: Optional[Callable[[str], None]] = None,
) -> ContentionResult:
    """Writers + the browser + rename/delete/export from the UI for ``seconds``; then checks."""
    from hermes_tui.app import build_app
    from hermes_tui.config import AppConfig

    say = progress or (lambda _text: None)
    result = ContentionResult(writers=writers)
    home.mkdir(parents=True, exist_ok=True)
    (home / "sessions").mkdir(exist_ok=True)
    db_path = home / "state.db"
    log_dir = home.parent / f"{home.name}-logs"
    export_dir = home.parent / f"{home.name}-exports"
    export_dir.mkdir(parents=True, exist_ok=True)
    targets = prepare_targets(db_path, renames=renames, victims=victims)
    expected_titles = dict(targets.titles)
    config = AppConfig(animations="none", search_debounce_s=0.0, export_dir=str(export_dir))
    app = build_app(db_path, clock=time.time, config=config, watch=True, db_label="state.db")
    started = time.monotonic()
    procs: list[Writer] = []
    retried = [0]
    write_waits = [0]
    from hermes_tui import data as data_module

    write_wait_text = getattr(data_module, "WRITE_WAIT_TEXT", None)
    async with app.run_test(size=size) as pilot:
        driver = UiDriver(app, pilot, db_path, export_dir, seed=seed)
        on_wait = app.ctx.store._on_wait

        def counting_on_wait(text: Optional[str]) -> None:
            if text == write_wait_text:
                write_waits[0] += 1
            elif text:
                retried[0] += 1
            on_wait(text)

        app.ctx.store._on_wait = counting_on_wait
        await driver.wait_for(lambda: driver.session_list.loaded and driver.session_list.total >= renames + victims)
        procs = [
            spawn_writer(home, i, log_dir=log_dir, seed=seed, rate=rate, duration=seconds, trace=True)
            for i in range(writers)
        ]
        try:
            for writer in procs:
                await asyncio.to_thread(wait_until_writing, writer)
            say(f"{writers} writers running for {seconds:g} s")
            victims_left = list(targets.victims)
            step = 0
            rename_round = 0
            plan = ("rename", "export", "delete", "rename", "export")
            # Until the writers stop, and at least one full round of the plan (so a slow
            # machine still sees every kind of action: rename, refused rename, delete, undo,
            # export of each scope).
            while any(w.proc.poll() is None for w in procs) or step < len(plan):
                kind = plan[step % len(plan)]
                step += 1
                if kind == "rename":
                    sid = targets.rename[rename_round % len(targets.rename)]
                    rename_round += 1
                    other = targets.rename[rename_round % len(targets.rename)]
                    if rename_round % 3 == 2 and other != sid and expected_titles.get(other):
                        # another session's title (TI-2): must be refused in the modal
                        raw = expected_titles[other]
                    else:
                        raw = f"  reliability rename {rename_round} [b]x[/b]\u200b {sid[-1]}  "
                    action = await driver.rename(sid, raw)
                    if action.ok:
                        expected_titles[sid] = action.expect
                elif kind == "delete":
                    if not victims_left:
                        continue
                    victim = victims_left.pop(0)
                    action = await driver.delete(victim)
                    if action.ok and len(victims_left) % 2 == 0:
                        # every other delete is undone at once: it must come back exactly
                        await driver.undo(victim)
                else:
                    choice = driver.rng.random()
                    if choice < 0.3:
                        await driver.export(driver.rng.choice(targets.rename), "session", "jsonl")
                    elif choice < 0.55:
                        # a live writer session right below the pre-created rows
                        if await driver.goto_row(driver.first_other_row() + driver.rng.randint(0, 3)):
                            await driver.export(None, driver.rng.choice(["session", "lineage"]), "jsonl")
                    elif choice < 0.8:
                        await driver.export(driver.rng.choice(targets.rename), "all", "jsonl")
                    else:
                        await driver.export(driver.rng.choice(targets.rename), "lineage", "md")
                say(f"ui: {driver.actions[-1].kind} {'ok' if driver.actions[-1].ok else 'reported'}"
                    if driver.actions else "ui: -")
            reports = [await asyncio.to_thread(wait_writer, w) for w in procs]
            # The browser catches up with the final state (live refresh, no restart).
            final_total = await asyncio.to_thread(
                lambda: app.ctx.store.page(0, 1, ListQuery.from_options(exclude_sources=driver.browser.exclude_sources))[1]
            )
            if not await driver.wait_for(lambda: driver.session_list.total == final_total, 10.0):
                result.problems.append(
                    f"the browser shows {driver.session_list.total} sessions, the store lists {final_total}"
                )
        finally:
            for writer in procs:
                if writer.proc.poll() is None:
                    stop_writer(writer, 30.0)
        driver.new_notifications()
        result.ui_actions = list(driver.actions)
        result.problems += [f"ui harness: {p}" for p in driver.harness_problems]
        # Nothing in this run warrants a warning or an error notification (a refused
        # duplicate title is shown inside the rename modal, not as a notification).
        result.problems += [f"ui said ({sev}): {msg}" for sev, msg in driver.notes
                            if sev in ("warning", "error")]
    result.elapsed = time.monotonic() - started
    result.ui_reads_retried = retried[0]
    result.ui_write_waits = write_waits[0]
    result.seconds = seconds

    # ---- writers
    for writer in procs:
        report = writer.report or {}
        result.events += int(report.get("events", 0))
        result.messages_written += int(report.get("messages", 0))
        result.sessions_written += int(report.get("sessions", 0))
        result.writer_errors += writer.errors
        if writer.errors or writer.proc.returncode != 0:
            result.problems.append(f"writer saw errors: {writer.describe_failure()}")
        if writer.trace_path:
            trace = read_trace(writer.trace_path)
            result.lock_waits += trace.waits_ms
    result.transactions = len(result.lock_waits)

    # ---- the store against the writers' logs
    result.problems += [f"verify: {p}" for p in verify_simulation(home, [w.log_path for w in procs])]
    result.problems += [f"store: {p}" for p in store_problems(db_path)]
    result.sessions_in_store, result.messages_in_store = counts(db_path)
    logged = sum(1 for r in read_log([w.log_path for w in procs]) if r.get("kind") == "message")
    if logged != result.messages_written:
        result.problems.append(f"writers reported {result.messages_written} messages, logged {logged}")

    # ---- UI renames: landed or reported, never both
    for action in result.ui_actions:
        if action.kind != "rename" or action.detail in ("not reached", "no modal", "wrong row"):
            continue
        if action.ok and action.stored != action.expect:
            result.problems.append(f"rename of {action.session_id} reported done but stored {action.stored!r}")
        if not action.ok and action.stored == action.expect:
            result.problems.append(f"rename of {action.session_id} reported failed but landed: {action.detail}")
    for sid in targets.rename:
        row = _session_row(db_path, sid)
        if row is None or row[1] != expected_titles[sid]:
            result.problems.append(f"{sid}: title {row[1] if row else None!r}, expected {expected_titles[sid]!r}")
        if _message_rows(db_path, sid) != targets.messages[sid]:
            result.problems.append(f"{sid}: its messages changed")

    # ---- UI deletes: exactly the confirmed ones are gone; undone ones are back exactly
    deleted: set[str] = set()
    for action in result.ui_actions:
        if action.kind == "delete" and action.ok:
            deleted.add(action.session_id)
        elif action.kind == "undo" and action.ok:
            deleted.discard(action.session_id)
        elif action.kind == "undo" and action.detail.startswith("Restored "):
            result.problems.append(f"undo of {action.session_id} was not exact: {action.detail}")
    attempted = {a.session_id for a in result.ui_actions if a.kind == "delete"}
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30.0)
    try:
        for sid in targets.victims:
            present = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is not None
            rows = _message_rows(db_path, sid)
            if sid in deleted:
                # (its FTS rows: store_problems checks that FTS rowids are exactly the messages)
                if present or rows:
                    result.problems.append(f"{sid} was deleted from the UI but is still in the store")
            else:
                if not present or rows != targets.messages[sid]:
                    why = "deleted and undone" if sid in attempted else "never deleted"
                    result.problems.append(f"{sid} ({why}): its messages changed or it vanished")
                elif _full_session_row(db_path, sid) != targets.rows[sid]:
                    result.problems.append(f"{sid}: session row {_full_session_row(db_path, sid)} "
                                           f"is not the original {targets.rows[sid]}")
    finally:
        conn.close()

    # ---- exports
    deleted_rows = {sid: targets.messages[sid] for sid in deleted}
    for action in result.ui_actions:
        if action.kind == "export" and action.ok:
            path, fmt, _scope, _ids = action.expect
            result.problems += export_file_problems(path, fmt, db_path, deleted_rows)
        elif action.kind == "export" and action.expect is not None:
            path = action.expect[0]
            if path.exists():
                result.problems.append(f"export to {path.name} reported failed ({action.detail}) but a file exists")
    return result


# ---------------------------------------------------------------------------------------
# The long run
# ---------------------------------------------------------------------------------------


@dataclass
class HostileResult:
    tried: int = 0
    raised: int = 0
    #: api -> (slowest ms, that query)
    slowest: dict[str, tuple[float, str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _hostile_queries(db_path: Path, budget: int, seed: int = 0) -> HostileResult:
    """Queries of the hostile-input generator (``tests/reliability/hostile.py``), if present,
    through ``SessionDB.search`` (as a script asks it, and as a keystroke does) and
    ``search_messages``."""
    result = HostileResult()
    try:
        from tests.reliability.hostile import hostile_queries  # type: ignore[import-not-found]
    except Exception:  # noqa: BLE001 - optional part of the run
        return result
    db = SessionDB(db_path, read_only=True)
    try:
        for query in hostile_queries(seed=seed, n=budget):
            result.tried += 1
            for api, call in (("search", lambda q: db.search(q, limit=20)),
                              ("search while typing", lambda q: db.search(q, limit=20, sort="auto", prefix_last=True)),
                              ("search_messages", lambda q: db.search_messages(q, limit=20))):
                t0 = time.perf_counter()
                try:
                    call(query)
                except Exception as exc:  # noqa: BLE001 - that is the finding
                    result.raised += 1
                    result.problems.append(f"{api}({query[:60]!r}): {type(exc).__name__}: {exc}")
                ms = (time.perf_counter() - t0) * 1000.0
                if ms > result.slowest.get(api, (0.0, ""))[0]:
                    result.slowest[api] = (ms, query)
    finally:
        db.close()
    return result


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def export_faults(work: Path, source_db: Path) -> tuple[list[str], str, int]:
    """Disk-full export (tmpfs or failing iterator) + round trip of ``source_db``."""
    from hermes_state.export import export_to_path, iter_export, render_chunks, write_atomic

    problems: list[str] = []
    db = SessionDB(source_db, read_only=True)
    try:
        with DiskFull(work / "full") as disk:
            if disk.available:
                target = disk.path / "export.jsonl"
                target.write_text("previous export\n", encoding="utf-8")
                try:
                    export_to_path(db, target)
                    problems.append("an export larger than the file system succeeded")
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        problems.append(f"disk full raised {exc!r}")
                if target.read_text(encoding="utf-8") != "previous export\n":
                    problems.append("the previous export was damaged by a failed one")
                leftovers = sorted(p.name for p in disk.path.iterdir() if p.name != "export.jsonl")
                if leftovers:
                    problems.append(f"a failed export left {leftovers}")
                how = "64 KiB tmpfs"
            else:
                target = work / "export.jsonl"
                target.write_text("previous export\n", encoding="utf-8")
                try:
                    write_atomic(target, FailAfter(render_chunks(iter_export(db), "jsonl"), 64 * 1024))
                    problems.append("the failing writer did not fail")
                except OSError:
                    pass
                if target.read_text(encoding="utf-8") != "previous export\n":
                    problems.append("the previous export was damaged by a failed one")
                how = f"failing iterator (tmpfs: {disk.reason})"
        full = work / "all.jsonl"
        exported = export_to_path(db, full)
    finally:
        db.close()
    problems += roundtrip_problems(source_db, full, work / "reimported" / "state.db")
    return problems, how, exported


# ---------------------------------------------------------------------------- the browser's own faults


@dataclass
class FileFaultResult:
    rounds: int = 0
    replaced_seen: int = 0
    writes_to_new_file: int = 0
    writes_to_old_file: int = 0
    deleted_seen: int = 0
    writes_refused_after_delete: int = 0
    databases_created: int = 0
    undo_failed_first: int = 0
    undo_restored_exactly: int = 0
    disk_how: str = ""
    problems: list[str] = field(default_factory=list)


def _fixed_store(path: Path, sessions: int = 12) -> list[str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = SessionDB(path)
    ids = []
    try:
        for i in range(sessions):
            sid = f"20261118_{i:06d}_ff{i:02d}"
            db.create_session(sid, "cli")
            db.append_message(sid, "user", f"question number {i} about the fault run")
            db.append_message(sid, "assistant", f"answer number {i}")
            db.set_session_title(sid, f"fault run {i}")
            ids.append(sid)
    finally:
        db.close()
    return ids


def _title(path: Path, sid: str, *, moved_away: bool = False) -> Optional[str]:
    """The title in the live file (its WAL included), or in a moved-away copy read as a plain
    file (the -wal/-shm names beside it now belong to the file at the old path)."""
    uri = f"file:{path}?immutable=1" if moved_away else f"file:{path}?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    try:
        row = conn.execute("SELECT title FROM sessions WHERE id = ?", (sid,)).fetchone()
        return row[0] if row else None
    finally:
        conn.close()


async def _until(pilot: Any, condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        await pilot.pause(0.05)
    return condition()


async def run_file_faults(work: Path, rounds: int = 3) -> FileFaultResult:
    """Replace the database under the open browser (mv + cp) and rename; delete it and try to
    write; fill the disk between a delete and its undo. Everything through the real app."""
    from hermes_tui.app import build_app
    from hermes_tui.config import AppConfig
    from hermes_tui.modals.rename import RenameModal

    result = FileFaultResult()

    def notices(app: Any) -> list[str]:
        return [n.message for n in app._notifications]

    for r in range(rounds):
        home = work / f"replace-{r}"
        db_path = home / "state.db"
        ids = _fixed_store(db_path)
        app = build_app(db_path, config=AppConfig(animations="none", search_debounce_s=0.0),
                        watch=True, trash_dir=work / "trash")
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.5)
            result.rounds += 1
            subprocess.run(["sh", "-c", f"mv '{db_path}' '{db_path}.bak' && cp '{db_path}.bak' '{db_path}'"],
                           check=True)
            if await _until(pilot, lambda: any("was replaced" in n for n in notices(app))):
                result.replaced_seen += 1
            await pilot.pause(0.3)
            await pilot.press("r")
            await _until(pilot, lambda: isinstance(app.screen, RenameModal))
            if isinstance(app.screen, RenameModal):
                field = app.screen.query_one("#rename-input")
                field.value = f"renamed after restore {r}"
                await pilot.press("enter")
                await _until(pilot, lambda: not isinstance(app.screen, RenameModal))
                await pilot.pause(0.3)
            top = ids[-1]
            if _title(db_path, top) == f"renamed after restore {r}":
                result.writes_to_new_file += 1
            if _title(Path(f"{db_path}.bak"), top, moved_away=True) == f"renamed after restore {r}":
                result.writes_to_old_file += 1
                result.problems.append(f"round {r}: a rename went to the moved-away file (missing from the database)")
            # Now delete the file outright: writes refused, nothing created.
            db_path.unlink()
            if await _until(pilot, lambda: any("was deleted" in n for n in notices(app))):
                result.deleted_seen += 1
            await pilot.press("r")
            await pilot.pause(0.5)
            if any(n.startswith("Cannot rename") and "deleted" in n for n in notices(app)):
                result.writes_refused_after_delete += 1
            if db_path.exists():
                result.databases_created += 1
                result.problems.append(f"round {r}: the browser created a new database")
    # Disk full between a delete and its undo.
    with DiskFull(work / "full", size="16m") as disk:
        if not disk.available:
            result.disk_how = f"not run (tmpfs: {disk.reason})"
            return result
        db_path = disk.path / "state.db"
        _fixed_store(db_path)
        before = {r: table_rows(db_path, t) for r, t in (("s", "sessions"), ("m", "messages"))}
        app = build_app(db_path, config=AppConfig(animations="none"), watch=False, trash_dir=work / "trash2")
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.5)
            await pilot.press("j", "d")
            await pilot.pause(0.5)
            await pilot.press("y")
            await _until(pilot, lambda: any(n.startswith("Deleted") for n in notices(app)))
            filler = disk.path / "filler"
            fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while True:
                    os.write(fd, b"\0" * 65536)
            except OSError:
                pass
            finally:
                os.close(fd)
            await pilot.press("u")
            if await _until(pilot, lambda: any(n.startswith("Undo failed") for n in notices(app))):
                result.undo_failed_first += 1
            filler.unlink()
            await pilot.press("u")
            await _until(pilot, lambda: any(n.startswith("Restored") for n in notices(app)))
        after = {r: table_rows(db_path, t) for r, t in (("s", "sessions"), ("m", "messages"))}
        if after == before:
            result.undo_restored_exactly += 1
        else:
            result.problems.append("disk-full undo: the session vanished or messages changed")
        result.disk_how = "16 MiB tmpfs filled between delete and undo"
    return result


#: Findings that mean data was lost (a logged or confirmed write is not in the store).
LOSS_MARKERS = ("missing from the database", "no longer in the store", "vanished", "messages changed",
                "message(s) without", "missing from messages_fts")


def print_table(rows: list[tuple[str, str, str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    line = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    print(line)
    for index, row in enumerate(rows):
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |")
        if index == 0:
            print(line)
    print(line)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.reliability",
        description="Long reliability run: contention, kill -9 crashes, export faults, the browser's own "
        "faults.",
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="contention run length (default 60)")
    parser.add_argument("--writers", type=int, default=4, help="writer processes (default 4)")
    parser.add_argument("--rate", type=float, default=0.0, help="events/s per writer, 0 = flat out (default)")
    parser.add_argument("--kills", type=int, default=20, help="kill -9 rounds (default 20)")
    parser.add_argument("--hostile", type=int, default=2000, help="hostile queries to try, if a generator exists")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", help="keep the databases and logs here (default: a temporary directory)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)

    def say(text: str) -> None:
        if not args.quiet:
            print(f"  [{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    owned = args.workdir is None
    work = Path(tempfile.mkdtemp(prefix="hermes-reliability-")) if owned else Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    try:
        say(f"contention: {args.writers} writers x {args.seconds:g} s + browser (work dir {work})")
        contention = asyncio.run(
            run_contention(work / "contention", writers=args.writers, seconds=args.seconds,
                           rate=args.rate, seed=args.seed, renames=4, victims=6, progress=say)
        )
        say(f"crashes: {args.kills} kill -9 rounds")
        crashes = run_crashes(
            work / "crashes", kills=args.kills, seed=args.seed, log_dir=work / "crash-logs",
            on_kill=lambda i, r: say(f"kill {r.kills}: {len(r.problems)} problem(s) so far"),
        )
        say("exports: disk full + round trip of the contention store")
        export_problems, disk_how, exported = export_faults(work / "exports", work / "contention" / "state.db")
        say("hostile queries")
        hostile = _hostile_queries(work / "contention" / "state.db", args.hostile, args.seed)
        say("the browser's own faults: file replaced / deleted under it, disk full before undo")
        files = asyncio.run(run_file_faults(work / "file-faults"))
    finally:
        if owned:
            shutil.rmtree(work, ignore_errors=True)

    problems = contention.problems + crashes.problems + export_problems + hostile.problems + files.problems
    waits = [w for w in contention.lock_waits if w >= 5.0]
    ui_times = [a.elapsed * 1000 for a in contention.ui_actions if a.kind in ("rename", "delete")]
    ui_writes = [a.confirm_elapsed * 1000 for a in contention.ui_actions if a.kind in ("rename", "delete")]
    lost = sum(1 for p in problems if any(k in p for k in LOSS_MARKERS))

    def slowest(api: str) -> str:
        ms, query = hostile.slowest.get(api, (0.0, ""))
        return f"{ms:.0f} ms ({len(query)} chars)"

    rows = [
        ("part", "measure", "value"),
        ("load", "writer processes x seconds",
         f"{contention.writers} x {contention.seconds:g} s (rate {'max' if not args.rate else args.rate})"),
        ("load", "events / messages / sessions written",
         f"{contention.events} / {contention.messages_written} / {contention.sessions_written}"),
        ("load", "store at the end", f"{contention.sessions_in_store} sessions, {contention.messages_in_store} messages"),
        ("load", "UI actions rename / delete / undo / export",
         f"{contention.count('rename')} / {contention.count('delete')} / {contention.count('undo')} / "
         f"{contention.count('export')} (refused or failed, reported: {sum(1 for a in contention.ui_actions if not a.ok)})"),
        ("load", "UI rename/delete: first key to outcome p50 / max",
         f"{_pct(ui_times, 0.5):.0f} / {max(ui_times, default=0):.0f} ms"),
        ("load", "UI rename/delete: confirming key to outcome p50 / max",
         f"{_pct(ui_writes, 0.5):.0f} / {max(ui_writes, default=0):.0f} ms"),
        ("faults", "writer transactions that waited >= 5 ms for the lock",
         f"{len(waits)} of {contention.transactions} (p95 {_pct(waits, 0.95):.0f} ms, max {max(contention.lock_waits, default=0):.0f} ms)"),
        ("faults", "UI writes that outwaited the 1 s busy timeout / UI reads retried",
         f"{contention.ui_write_waits} / {contention.ui_reads_retried}"),
        ("faults", "kill -9 (inside a write transaction / no process left)",
         f"{crashes.kills} ({crashes.mid_transaction} / {crashes.last_process_kills})"),
        ("faults", "committed-but-unlogged writes at kills", f"{crashes.unlogged_messages} (allowed <= {crashes.kills})"),
        ("faults", "errors seen by the writer that survived a kill", str(crashes.survivor_errors)),
        ("faults", "disk-full export", disk_how),
        ("faults", "state.db replaced under the browser: noticed / renames to the new file / to the old",
         f"{files.replaced_seen} of {files.rounds} / {files.writes_to_new_file} / {files.writes_to_old_file}"),
        ("faults", "state.db deleted under the browser: noticed / writes refused / databases created",
         f"{files.deleted_seen} of {files.rounds} / {files.writes_refused_after_delete} / {files.databases_created}"),
        ("faults", "disk-full undo: first try failed / retried and restored exactly",
         f"{files.undo_failed_first} / {files.undo_restored_exactly} ({files.disk_how})"),
        ("inputs", "hostile queries tried / raised",
         f"{hostile.tried} / {hostile.raised}" if hostile.tried else "generator not available"),
        ("inputs", "slowest hostile query: search / search_messages",
         f"{slowest('search')} / {slowest('search_messages')}" if hostile.tried else "-"),
        ("inputs", "sessions exported and re-imported exactly", str(exported)),
        ("result", "writer errors", str(contention.writer_errors)),
        ("result", "data lost", str(lost)),
        ("result", "integrity ok", "yes" if not problems else f"NO ({len(problems)} problem(s))"),
    ]
    print_table(rows)
    for problem in problems[:40]:
        print(f"  ! {problem}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
