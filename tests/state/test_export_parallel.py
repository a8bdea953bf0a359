"""A large JSONL export encoded by worker processes (hermes_state.export_parallel) writes the
very bytes one process writes, says what went wrong in one line, and stops cleanly on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_state import SessionDB, export_parallel
from hermes_state.errors import DatabaseError
from hermes_state.export import export_to_path, export_to_stream
from hermes_state.export_parallel import export_to_path as export_to_path_fast
from hermes_state.export_parallel import export_to_stream as export_to_stream_fast

from corpus_helpers import corpora_in_both_layouts

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[int, Path]:
    return corpora_in_both_layouts(tmp_path_factory, "export", messages=6000, seed=8)


@pytest.fixture
def always_parallel(monkeypatch):
    monkeypatch.setattr(export_parallel, "PARALLEL_MIN_MESSAGES", 0)
    monkeypatch.setattr(export_parallel, "BATCH_MESSAGES", 300)  # many batches, every worker used
    monkeypatch.setenv(export_parallel.WORKERS_ENV, "3")



def test_a_worker_encodes_each_session_as_its_messages_end(tmp_path):
    """A worker's batch, encoded session by session, is line for line what the one-process
    reader and encoder make: in the order asked (not the store's), non-ASCII kept, a session
    without messages included, an id that is gone skipped."""
    import sqlite3

    from hermes_state.export import batch_statements
    from hermes_state.export_batch import encode_batch_lines, jsonl_line, read_batch

    db = SessionDB(tmp_path / "state.db")
    try:
        db.create_session("b-first", "cli")
        db.append_message("b-first", "user", "数据库 migration — ünïcode")
        db.append_message("b-first", "assistant", "done", tool_calls=[{"id": "c1", "type": "function"}])
        db.create_session("a-empty", "telegram")
        db.create_session("c-last", "cli")
        db.append_message("c-last", "user", "hello")
        ids = ["c-last", "gone", "a-empty", "b-first"]
        sessions_sql, messages_sql = batch_statements(db)
        conn = sqlite3.connect(db.db_path)
        try:
            lines, count = encode_batch_lines(conn, sessions_sql, messages_sql, ids)
            found = read_batch(conn, sessions_sql, messages_sql, ids)
        finally:
            conn.close()
    finally:
        db.close()
    assert count == 3
    assert lines == [jsonl_line(found[sid]).encode("utf-8") for sid in ("c-last", "a-empty", "b-first")]
    assert "数据库" in lines[2].decode("utf-8") and b'"messages": []' in lines[1]

@pytest.mark.parametrize("schema", [16, 30])
@pytest.mark.parametrize("source", [None, "telegram"])
def test_the_workers_write_the_bytes_one_process_writes(corpora, tmp_path, always_parallel, schema, source):
    db = SessionDB(corpora[schema], read_only=True)
    try:
        assert export_parallel.suitable(db, source)
        one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
        counted_one = export_to_path(db, one, source=source)
        progress: list[tuple[int, int]] = []
        counted_many = export_to_path_fast(db, many, source=source,
                                           progress=lambda done, total: progress.append((done, total)))
        assert counted_many == counted_one > 0
        assert many.read_bytes() == one.read_bytes()
        assert progress[0][0] == 0 and progress[-1][0] == counted_one and len(progress) >= 3
    finally:
        db.close()


def test_a_stream_export_by_workers_is_the_same_text(corpora, tmp_path, always_parallel):
    import io

    db = SessionDB(corpora[30], read_only=True)
    try:
        one, many = io.StringIO(), io.StringIO()
        export_to_stream(db, one)
        export_to_stream_fast(db, many)
        assert many.getvalue() == one.getvalue()
    finally:
        db.close()


def test_small_exports_and_one_cpu_stay_in_one_process(corpora, monkeypatch):
    db = SessionDB(corpora[30], read_only=True)
    try:
        assert not export_parallel.suitable(db, None), "6,000 messages: not worth a worker"
        monkeypatch.setattr(export_parallel, "PARALLEL_MIN_MESSAGES", 0)
        monkeypatch.setenv(export_parallel.WORKERS_ENV, "1")
        assert not export_parallel.suitable(db, None)
    finally:
        db.close()



@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux CPU affinity")
def test_workers_follow_the_cpus_up_to_what_memory_allows(monkeypatch):
    """One worker per CPU, never more than MAX_WORKERS (each ~25 MB: the 150 MB budget), and
    the environment variable says otherwise when set."""
    monkeypatch.delenv(export_parallel.WORKERS_ENV, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(16)))
    assert export_parallel.default_workers() == export_parallel.MAX_WORKERS == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    assert export_parallel.default_workers() == 2
    monkeypatch.setenv(export_parallel.WORKERS_ENV, "6")
    assert export_parallel.default_workers() == 6

def test_a_worker_that_cannot_read_says_why_in_one_line(tmp_path):
    """A file that is not a database (a sync tool replaced the store meanwhile): the worker
    answers with one sentence, which the export raises as a DatabaseError."""
    broken = tmp_path / "junk.db"
    broken.write_bytes(b"not a database" * 1000)
    config = '{"database": "%s", "sessions_sql": "SELECT * FROM sessions s WHERE s.id IN (__IDS__)", ' \
             '"messages_sql": "SELECT 1"}' % broken
    worker = export_parallel._Worker(config)
    try:
        worker.send('["a"]')
        with pytest.raises(DatabaseError) as caught:
            worker.receive()
    finally:
        worker.close()
    assert "\n" not in str(caught.value) and "database" in str(caught.value)
    assert worker.proc.returncode is not None, "the worker ended"


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="reads /proc")
def test_ctrl_c_stops_a_parallel_export_leaving_nothing_behind(corpora, tmp_path):
    """The export of the CLI, interrupted while workers encode: exit 130, one line, no file,
    no temp file, no worker left running."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "state.db").symlink_to(corpora[16])
    target = tmp_path / "out.jsonl"
    script = (
        "import sys, time\n"
        "from hermes_state import export_parallel, export_batch\n"
        "export_parallel.PARALLEL_MIN_MESSAGES = 0\n"
        "export_parallel.BATCH_MESSAGES = 50\n"
        "from hermes_tui.cli import main\n"
        "sys.exit(main(['sessions', 'export', sys.argv[1]]))\n"
    )
    env = dict(os.environ, HERMES_HOME=str(home), PYTHONPATH=str(REPO), **{export_parallel.WORKERS_ENV: "2"})
    # Ctrl-C as a terminal delivers it, even when these tests run as a background job (a
    # shell starts those with SIGINT ignored, which every process started from them inherits).
    proc = subprocess.Popen([sys.executable, "-c", script, str(target)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_children(proc.pid)) < 2:
        time.sleep(0.01)
    workers = _children(proc.pid)
    assert len(workers) >= 2, "the workers started"
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C
    out, err = proc.communicate(timeout=30)
    if proc.returncode == 0:
        pytest.skip("the export finished before the interrupt arrived")
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "Interrupted."
    assert not target.exists() and not any(p.name.startswith(".out.jsonl") for p in tmp_path.iterdir())
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "State:\tZ" in Path(f"/proc/{pid}/status").read_text()


@pytest.mark.parametrize("odd", [
    "CAST(content || X'FF' AS BLOB)",  # a blob: JSON has no bytes
    "content || X'FF'",  # text that is not UTF-8: sqlite3 refuses to read it as it is
], ids=["blob", "not-utf8"])
def test_the_workers_export_odd_content_as_one_process_does(corpora, tmp_path, always_parallel, odd):
    """Content SQLite holds as a blob or as text that is not UTF-8 (another tool wrote it) is
    exported as its text with U+FFFD for each invalid byte, by the workers as by one process."""
    import shutil

    path = tmp_path / "odd.db"
    shutil.copyfile(corpora[30], path)
    writer = SessionDB(path)
    try:
        writer._execute_write(lambda conn: conn.execute(
            f"UPDATE messages SET content = {odd} WHERE id % 97 = 0 AND content IS NOT NULL"))
    finally:
        writer.close()
    db = SessionDB(path, read_only=True)
    try:
        one, many = tmp_path / "one.jsonl", tmp_path / "many.jsonl"
        counted = export_to_path(db, one)
        assert export_to_path_fast(db, many) == counted > 0
        assert many.read_bytes() == one.read_bytes()
        assert "\ufffd" in one.read_text(encoding="utf-8")
    finally:
        db.close()


@pytest.mark.parametrize("schema", [16, 30])
@pytest.mark.parametrize("options", [
    {}, {"only": "user-prompts"}, {"redact": True},
], ids=["plain", "prompts", "redacted"])
def test_the_workers_write_the_markdown_one_process_writes(corpora, tmp_path, always_parallel, schema, options):
    """Markdown (and JSONL shaped by --only / --redact) on workers: the very bytes of one
    process, documents separated as one process separates them, the first with no rule."""
    from hermes_state.export_units import ExportOptions

    shaping = ExportOptions(**options)
    db = SessionDB(corpora[schema], read_only=True)
    try:
        for fmt in ("md", "jsonl"):
            one, many = tmp_path / f"one.{fmt}", tmp_path / f"many.{fmt}"
            counted_one = export_to_path(db, one, fmt, options=shaping)
            progress: list[tuple[int, int]] = []
            counted_many = export_to_path_fast(db, many, fmt, options=shaping,
                                               progress=lambda done, total: progress.append((done, total)))
            assert counted_many == counted_one > 0
            assert many.read_bytes() == one.read_bytes()
            assert len(progress) > 3 and progress[-1][0] == counted_one  # a batch at a time
        assert many.read_bytes()[:2] == b"{\"" and one.with_suffix(".md").read_bytes().startswith(b"# ")
    finally:
        db.close()


def test_markdown_for_a_terminaluses_workers_shows_controls_as_one_process_does(corpora, tmp_path, always_parallel):
    import io

    db = SessionDB(corpora[30], read_only=True)
    try:
        one, many = io.StringIO(), io.StringIO()
        export_to_stream(db, one, "md", visible_controls=True)
        export_to_stream_fast(db, many, "md", visible_controls=True)
    finally:
        db.close()
    assert many.getvalue() == one.getvalue() and len(one.getvalue()) > 1000


def test_a_lineage_export_is_ordered_by_one_process(corpora, tmp_path, always_parallel):
    from hermes_state.export_units import ExportOptions

    db = SessionDB(corpora[30], read_only=True)
    try:
        assert not export_parallel.uses_workers(db, "md", None, None, ExportOptions(lineage=True))
        assert not export_parallel.uses_workers(db, "html", None, ["one"], ExportOptions())
        assert export_parallel.uses_workers(db, "md", None, None, ExportOptions(redact=True))
    finally:
        db.close()


@pytest.mark.parametrize("schema", [16, 30])
@pytest.mark.parametrize("options", [{}, {"redact": True}], ids=["plain", "redacted"])
def test_the_workers_render_the_markdown_directory_one_process_writes(corpora, tmp_path, always_parallel, schema, options):
    """md-dir on workers: the same file names, the same bytes in each file, the same manifest."""
    from hermes_state.export_units import ExportOptions

    shaping = ExportOptions(**options)
    db = SessionDB(corpora[schema], read_only=True)
    try:
        assert export_parallel.uses_workers(db, "md-dir", None, None, shaping)
        one, many = tmp_path / "one", tmp_path / "many"
        counted_one = export_to_path(db, one, "md-dir", options=shaping)
        counted_many = export_to_path_fast(db, many, "md-dir", options=shaping)
    finally:
        db.close()
    assert counted_many == counted_one > 0
    names = sorted(os.listdir(one))
    assert names == sorted(os.listdir(many)) and len(names) == counted_one + 1
    for name in names:
        assert (many / name).read_bytes() == (one / name).read_bytes(), name
    assert (many.stat().st_mode & 0o777) == 0o700


@pytest.mark.parametrize("schema", [16, 30])
def test_the_workers_render_the_html_page_one_process_writes(corpora, tmp_path, always_parallel, schema):
    """HTML on workers: each conversation's article and sidebar entry rendered there, the
    anchors numbered here -- the very page one process writes."""
    db = SessionDB(corpora[schema], read_only=True)
    try:
        assert export_parallel.uses_workers(db, "html", None, None, export_parallel.PLAIN)
        one, many = tmp_path / "one.html", tmp_path / "many.html"
        counted_one = export_to_path(db, one, "html")
        counted_many = export_to_path_fast(db, many, "html")
    finally:
        db.close()
    assert counted_many == counted_one > 0
    assert many.read_bytes() == one.read_bytes()
    assert one.read_text().count("<article ") == counted_one
