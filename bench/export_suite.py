"""Export of every session through the real CLI, in each format (JSONL, Markdown, HTML, a
directory of Markdown files).

``hermes sessions export OUT`` runs in a fresh process on the corpus (``HERMES_HOME`` is a
temporary directory whose ``state.db`` is a symbolic link to it: SQLite resolves the link, so
the WAL and shared memory are the corpus's own). Its stderr is a pseudo-terminal, so the
progress bar is drawn as a person at a terminal sees it and its cost counts. Reported:

* ``export.throughput`` — messages written per second (wall clock of the process, from spawn
  to exit: start-up, the session order, every session, the ``fsync`` and rename of the
  atomic write), target ≥ 50,000/s; ``export.md.throughput`` the same for ``--format md``
  (≥ 50,000/s), ``export.html.throughput`` and ``export.mddir.throughput`` for ``--format
  html`` and ``--format md-dir`` (≥ 20,000/s);
* ``export.rss`` — the export's peak RSS, target ≤ 150 MB: the largest of the CLI's own ``VmHWM``
  as it exits (written by the few lines that call the CLI's ``main``) and the sum of the RSS of
  the CLI and every process it started (a large export encodes on worker processes), sampled
  every 20 ms. Not ``wait4``'s ``ru_maxrss``: Linux carries the parent's high-water mark
  across ``fork``/``exec``, so a child of a bench process holding 130 MB would report 130 MB
  whatever it used; ``export.md.rss``, ``export.html.rss``, ``export.mddir.rss`` likewise.

The output is checked (JSONL: one line per session; Markdown: one document per session; HTML:
one article per session; md-dir: one manifest line per session) and deleted at once: it is
about as large as the text of the corpus (a few GB at 5M messages), in the system's temporary
directory.
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from .registry import Context, Samples, register

REPO = Path(__file__).resolve().parents[1]
#: A run taking longer than this is not repeated (5M messages export in minutes).
REPEAT_UNDER_S = 60.0

#: The CLI as ``hermes`` runs it, plus its own peak RSS (kB) written on the way out.
_RUN_CLI = """
import os, sys
from hermes_tui.cli import main
try:
    code = main()
finally:
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(os.environ["HERMES_BENCH_PEAK_FILE"], "w") as out:
        out.write(peak)
sys.exit(code)
"""


def _expected(db_path: Path) -> tuple[int, int]:
    """(sessions, messages) an export of everything writes: every session, its active rows."""
    from hermes_state import SessionDB

    db = SessionDB(db_path, read_only=True)
    try:
        sessions = int(db._fetchone("SELECT COUNT(*) FROM sessions")[0])
        messages = int(db._fetchone(f"SELECT COUNT(*) FROM messages WHERE 1 = 1{db._active_clause(False)}")[0])
    finally:
        db.close()
    return sessions, messages


def _drain(fd: int, sink: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        if len(sink) < 64:
            sink.append(chunk[-512:])


def _tree_rss_kb(pid: int) -> int:
    """The RSS of ``pid`` and all its descendants, in kB (0 for processes gone meanwhile)."""
    total = 0
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status") as status:
                total += next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
            with open(f"/proc/{current}/task/{current}/children") as children:
                todo.extend(int(child) for child in children.read().split())
        except (OSError, ValueError):
            continue
    return total


def _sample_tree(pid: int, peak: list[int], done: threading.Event) -> None:
    while not done.wait(0.02):
        peak[0] = max(peak[0], _tree_rss_kb(pid))


#: Per format: the ``--format`` value, the output's name and how many sessions it holds.
def _jsonl_count(out: Path) -> int:
    return _count_in_file(out, b"\n")


def _md_count(out: Path) -> int:
    # documents are separated by a rule line; every document starts with its title
    return _count_in_file(out, b"\n---\n\n# ") + 1 if out.stat().st_size else 0


def _html_count(out: Path) -> int:
    return _count_in_file(out, b'<article id="')


def _mddir_count(out: Path) -> int:
    return _count_in_file(out / "manifest.jsonl", b"\n")


def _count_in_file(path: Path, needle: bytes) -> int:
    count, carry = 0, b""
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            data = carry + chunk
            count += data.count(needle)
            carry = data[-(len(needle) - 1):] if len(needle) > 1 else b""
    return count


def _size(out: Path) -> int:
    if out.is_dir():
        return sum(entry.stat().st_size for entry in os.scandir(out))
    return out.stat().st_size


FORMATS: dict[str, tuple[str, Any]] = {
    "jsonl": ("export.jsonl", _jsonl_count),
    "md": ("export.md", _md_count),
    "html": ("export.html", _html_count),
    "md-dir": ("export-dir", _mddir_count),
}


def _export_once(db_path: Path, workdir: Path, fmt: str = "jsonl") -> dict[str, Any]:
    home = workdir / "home"
    home.mkdir(exist_ok=True)
    link = home / "state.db"
    if not link.exists():
        link.symlink_to(Path(db_path).resolve())
    name, counter = FORMATS[fmt]
    out = workdir / name
    env = dict(os.environ, PYTHONPATH=str(REPO), HERMES_HOME=str(home), COLUMNS="120")
    master, slave = pty.openpty()
    tail: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(master, tail), daemon=True)
    reader.start()
    started = time.perf_counter()
    peak_file = workdir / "peak-rss"
    env["HERMES_BENCH_PEAK_FILE"] = str(peak_file)
    proc = subprocess.Popen(
        [sys.executable, "-c", _RUN_CLI, "sessions", "export", str(out), "--format", fmt],
        cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
    )
    os.close(slave)
    tree_peak = [0]
    finished = threading.Event()
    sampler = threading.Thread(target=_sample_tree, args=(proc.pid, tree_peak, finished), daemon=True)
    sampler.start()
    _pid, status, _usage = os.wait4(proc.pid, 0)
    finished.set()
    sampler.join(timeout=5)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    stdout = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    reader.join(timeout=5)
    os.close(master)
    if proc.returncode != 0:
        shown = b"".join(tail).decode(errors="replace").strip().splitlines()
        raise RuntimeError(f"export exited {proc.returncode}: {(shown or [stdout.strip()])[-1]}")
    lines = counter(out)
    size = _size(out)
    if out.is_dir():
        shutil.rmtree(out)
    else:
        out.unlink()
    rss_mb = max(int(peak_file.read_text()), tree_peak[0]) / 1024
    return {"elapsed_s": elapsed, "rss_mb": rss_mb, "lines": lines, "bytes": size,
            "progress_drawn": any(b"exporting" in t for t in tail), "stdout": stdout.strip()}


_CACHE: dict[str, dict[str, Any]] = {}


def _runs(ctx: Context, fmt: str = "jsonl") -> dict[str, Any]:
    key = f"{ctx.db_path}|{fmt}"
    if key in _CACHE:
        return _CACHE[key]
    sessions, messages = _expected(ctx.db_path)
    workdir = Path(tempfile.mkdtemp(prefix="hermes-bench-export-"))
    runs = []
    try:
        for _ in range(max(1, min(ctx.runs, 3))):
            run = _export_once(ctx.db_path, workdir, fmt)
            if run["lines"] != sessions:
                raise RuntimeError(f"{fmt} export wrote {run['lines']} sessions of {sessions}")
            runs.append(run)
            if run["elapsed_s"] > REPEAT_UNDER_S:
                break
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    _CACHE[key] = {"sessions": sessions, "messages": messages, "runs": runs}
    return _CACHE[key]


@register(
    "export.throughput",
    klass="export_jsonl",
    title="export every session to JSONL (k messages/s, not ms)",
    api="hermes sessions export",
    target_ms=50.0,
    target_note="≥ 50 k msg/s",
    group="export",
    higher_is_better=True,
)
def export_throughput(ctx: Context):
    found = _runs(ctx)
    label = "CLI, JSONL file, progress on a terminal"
    rates = [found["messages"] / r["elapsed_s"] / 1000 for r in found["runs"]]
    first = found["runs"][0]
    note = (f"{found['messages']:,} messages in {found['sessions']:,} sessions, "
            f"{first['bytes'] / 1e6:,.0f} MB of JSONL, "
            f"{', '.join('%.1f' % r['elapsed_s'] for r in found['runs'])} s per run; "
            f"progress bar drawn: {'yes' if first['progress_drawn'] else 'no'}")
    return Samples({label: rates}, {label: {"hits": found["sessions"], "note": note}})


@register(
    "export.rss",
    klass="export_jsonl",
    title="export every session to JSONL (k messages/s, not ms)",
    api="hermes sessions export (peak RSS, MB)",
    target_ms=150.0,
    target_note="≤ 150 MB",
    group="export",
)
def export_rss(ctx: Context):
    found = _runs(ctx)
    label = "peak RSS, MB"
    return Samples({label: [r["rss_mb"] for r in found["runs"]]}, {label: {"hits": found["sessions"]}})


def _register_format(fmt: str, key: str, klass: str, label: str, target: float) -> None:
    """``export.<key>.throughput`` and ``export.<key>.rss`` for ``--format fmt``."""
    title = f"export every session to {label} (k messages/s, not ms)"

    @register(f"export.{key}.throughput", klass=klass, title=title, api=f"hermes sessions export --format {fmt}",
              target_ms=target, target_note=f"≥ {target:g} k msg/s", group="export", higher_is_better=True)
    def throughput(ctx: Context):
        found = _runs(ctx, fmt)
        name = f"CLI, {label}, progress on a terminal"
        rates = [found["messages"] / r["elapsed_s"] / 1000 for r in found["runs"]]
        first = found["runs"][0]
        note = (f"{found['messages']:,} messages in {found['sessions']:,} sessions, "
                f"{first['bytes'] / 1e6:,.0f} MB, "
                f"{', '.join('%.1f' % r['elapsed_s'] for r in found['runs'])} s per run; "
                f"progress bar drawn: {'yes' if first['progress_drawn'] else 'no'}")
        return Samples({name: rates}, {name: {"hits": found["sessions"], "note": note}})

    @register(f"export.{key}.rss", klass=klass, title=title,
              api=f"hermes sessions export --format {fmt} (peak RSS, MB)", target_ms=150.0,
              target_note="≤ 150 MB", group="export")
    def rss(ctx: Context):
        found = _runs(ctx, fmt)
        name = "peak RSS, MB"
        return Samples({name: [r["rss_mb"] for r in found["runs"]]}, {name: {"hits": found["sessions"]}})


_register_format("md", "md", "export_md", "Markdown", 50.0)
_register_format("html", "html", "export_html", "HTML", 20.0)
_register_format("md-dir", "mddir", "export_mddir", "a directory of Markdown files", 20.0)
