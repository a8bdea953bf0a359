"""The browser's own latencies (issue #4 targets), measured on the real app, headless.

* ``ui.keystroke_to_paint`` — from a key typed in the search field to highlighted results
  painted (the screen records ``(query, seconds)`` once the results are on screen). Keys
  are typed ~150 ms apart, a brisk typist, so each key runs its own search.
* ``ui.browse_startup`` — a fresh process: interpreter start, imports, opening the database,
  first page of sessions painted. Peak RSS of that process is reported by ``ui.browse_rss``.
* ``ui.refresh_lag`` — 4 writer processes append sessions to a copy of the corpus while the
  browser watches it; lag = first seen in the browser's list − the writer's commit time.

Textual runs headless here (``App.run_test``): the same code paths as in a terminal, minus
the terminal's own drawing time.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .registry import Context, Samples, register

REPO = Path(__file__).resolve().parents[1]
TYPED_QUERIES = ("docker", "kubernetes", "deploy fail", "the server", "服务器", "nginx conf")
KEY_GAP_S = 0.15


async def _type_queries(db_path: Path, queries: tuple[str, ...], rounds: int) -> dict[str, list[float]]:
    from hermes_tui.app import build_app
    from hermes_tui.config import AppConfig
    from hermes_tui.widgets.search import SearchInput

    samples: dict[str, list[float]] = {q: [] for q in queries}
    app = build_app(db_path, config=AppConfig(animations="none"), watch=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.5)
        screen = app.screen
        # One unrecorded round first, as the other classes warm up: the first searches of a
        # freshly opened database read its index pages from disk.
        for round_index in range(rounds + 1):
            record = round_index > 0
            for query in queries:
                field = screen.query_one(SearchInput)
                field.value = ""
                await pilot.pause(0.1)
                field.focus()
                for ch in query:
                    before = len(screen.search_latencies)
                    await pilot.press(ch if ch != " " else "space")
                    deadline = time.monotonic() + 3
                    while len(screen.search_latencies) == before and time.monotonic() < deadline:
                        await asyncio.sleep(0.001)
                    if len(screen.search_latencies) > before:
                        typed, seconds = screen.search_latencies[-1]
                        if typed.strip() and record:
                            samples[query].append(seconds * 1000)
                    await asyncio.sleep(KEY_GAP_S)
    return samples


@register(
    "ui.keystroke_to_paint",
    klass="ui_keystroke",
    title="keystroke to highlighted results painted",
    api="browser search pane",
    target_ms=50.0,
    group="ui",
)
def keystroke_to_paint(ctx: Context):
    rounds = max(1, min(ctx.runs, 3))
    samples = asyncio.run(_type_queries(ctx.db_path, TYPED_QUERIES, rounds))
    return Samples(samples, {q: {"hits": len(v)} for q, v in samples.items()})


def _startup_runs(ctx: Context) -> list[dict]:
    runs = []
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for _ in range(max(1, min(ctx.runs, 5))):
        spawned = time.time()
        proc = subprocess.run(
            [sys.executable, "-m", "bench.ui_probe", str(ctx.db_path), repr(spawned)],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
        )
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "probe failed")
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return runs


_STARTUP_CACHE: dict[str, list[dict]] = {}


def _startup(ctx: Context) -> list[dict]:
    key = str(ctx.db_path)
    if key not in _STARTUP_CACHE:
        _STARTUP_CACHE[key] = _startup_runs(ctx)
    return _STARTUP_CACHE[key]


@register(
    "ui.browse_startup",
    klass="ui_startup",
    title="`browse` to first painted page",
    api="hermes sessions browse",
    target_ms=1000.0,
    group="ui",
)
def browse_startup(ctx: Context):
    runs = _startup(ctx)
    return Samples(
        {"fresh process, 160×48": [r["first_page_s"] * 1000 for r in runs if r["first_page_s"]]},
        {"fresh process, 160×48": {"hits": runs[0]["rows"]}},
    )


@register(
    "ui.browse_rss",
    klass="ui_rss",
    title="browser peak RSS (MB, not ms)",
    api="hermes sessions browse",
    target_ms=150.0,
    target_note="≤ 150 MB",
    group="ui",
)
def browse_rss(ctx: Context):
    runs = _startup(ctx)
    return Samples({"peak RSS, MB": [r["rss_mb"] for r in runs]}, {"peak RSS, MB": {"hits": runs[0]["rows"]}})


WRITER = '''
import json, sys, time
from hermes_state import SessionDB
path, index, count, gap, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
db = SessionDB(path)
with open(log, "a") as out:
    for i in range(count):
        sid = f"lag_{index}_{i:04d}"
        def write(conn, sid=sid):
            conn.execute("INSERT INTO sessions (id, source, started_at) VALUES (?, 'telegram', ?)", (sid, time.time()))
            conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
                         (sid, f"live message {i} from writer {index}", time.time()))
            conn.execute("UPDATE sessions SET message_count = 1 WHERE id = ?", (sid,))
        db._execute_write(write)
        out.write(json.dumps({"id": sid, "committed": time.time()}) + "\\n")
        out.flush()
        time.sleep(gap)
db.close()
'''


async def _watch_lag(db_path: Path, writers: int, count: int, gap: float, log: Path) -> list[float]:
    from hermes_tui.app import build_app
    from hermes_tui.config import AppConfig
    from hermes_tui.widgets.session_list import SessionList

    app = build_app(db_path, config=AppConfig(animations="none"), watch=True)
    seen: dict[str, float] = {}
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(1.0)
        env = dict(os.environ, PYTHONPATH=str(REPO))
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(db_path), str(i), str(count), str(gap), str(log)],
                cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for i in range(writers)
        ]
        lst = app.screen.query_one(SessionList)
        deadline = time.monotonic() + count * gap + 30
        while time.monotonic() < deadline:
            now = time.time()
            # New sessions land right after the pinned ones (at most a dozen in the corpus).
            for index in range(min(lst.total, writers * 3 + 24)):
                row = lst.row(index)
                if row is not None and row.id.startswith("lag_") and row.id not in seen:
                    seen[row.id] = now
            if all(p.poll() is not None for p in procs) and len(seen) >= writers * count:
                break
            await asyncio.sleep(0.005)
        for proc in procs:
            proc.wait(timeout=30)
            if proc.returncode:
                raise RuntimeError(f"writer failed: {proc.stderr.read().decode().strip()[-300:]}")
    committed = {}
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        committed[entry["id"]] = entry["committed"]
    missing = set(committed) - set(seen)
    if missing:
        raise RuntimeError(f"{len(missing)} sessions never appeared in the browser")
    return [max(0.0, (seen[sid] - committed[sid]) * 1000) for sid in committed]


@register(
    "ui.refresh_lag",
    klass="ui_refresh",
    title="another process's commit visible in the browser (4 writers)",
    api="browser live refresh",
    target_ms=1000.0,
    group="ui",
)
def refresh_lag(ctx: Context):
    workdir = Path(tempfile.mkdtemp(prefix="hermes-bench-lag-"))
    try:
        copy = workdir / "state.db"
        shutil.copyfile(ctx.db_path, copy)  # writers must not change the cached corpus
        lags = asyncio.run(_watch_lag(copy, writers=4, count=10, gap=0.3, log=workdir / "commits.jsonl"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    label = "4 writers × 10 sessions, 0.3 s apart"
    return Samples({label: lags}, {label: {"hits": len(lags)}})
