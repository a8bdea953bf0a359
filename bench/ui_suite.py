"""The browser's own latencies against their targets, measured on the real app, headless.

* ``ui.keystroke_to_paint`` — from a key typed in the search field to highlighted results
  painted (the screen records ``(query, seconds)`` once the results are on screen). Keys
  are typed ~150 ms apart, a brisk typist, so each key runs its own search. Each sample is
  split into phases (see :data:`PHASES`) from stamps the data layer and the results widget
  record.
* ``ui.browse_startup`` / ``_first`` / ``_cold`` — a fresh process started as ``hermes
  sessions browse`` starts (the first pages read ahead while the UI is imported): interpreter
  start, imports, opening the database, first page of sessions painted; warm (the database's
  pages in the OS page cache, the recency index kept by an earlier run), a first run (no
  recency index kept yet), then cold (the database's pages dropped before every run:
  :mod:`bench.pagecache`). The project's bytecode is written first, as an install does.
* ``ui.browse_rss`` — peak RSS of those processes, each of which also searches and opens the
  transcript of the longest session after its first page (``bench.ui_probe``).
* ``ui.refresh_lag`` — 4 writer processes append sessions to a copy of the corpus while the
  browser watches it; lag = first seen in the browser's list − the writer's commit time (and
  the browser's CPU while they commit, in the note).
* ``ui.keystroke_while_writing`` — the keystroke row's keys typed into a browser watching a
  copy of the corpus while one writer commits every 0.2 s (informative).

Textual runs headless here (``App.run_test``): the same code paths as in a terminal, minus
the terminal's own drawing time.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .registry import Context, Samples, register

REPO = Path(__file__).resolve().parents[1]
TYPED_QUERIES = ("docker", "kubernetes", "deploy fail", "the server", "服务器", "nginx conf")
KEY_GAP_S = 0.15
#: The query each probe process searches for after its first page (for its peak RSS).
PROBE_QUERY = "docker"

#: Phases of keystroke → painted, each between two stamps: the key handled by the screen
#: (``search.keystroke_at``), the search worker starting ``BrowserData.search`` (``start``),
#: ``SessionDB.search`` returned (``query``), hits grouped by conversation with their labels
#: (``grouped``), the title/id match joined (``done``), the screen showing the answer
#: (widget ``show``), the rows built (``built``), the widget's first repaint after that
#: (``render`` … ``rendered``), and the callback the widget then queues, run once that frame is
#: written (painted; see ``SearchResults.after_paint``).
PHASES = (
    ("dispatch", "key", "start"),  # Input.Changed → search.start → thread worker running
    ("query", "start", "query"),  # SQL: SessionDB.search (FTS / trigram / LIKE)
    ("group+labels", "query", "grouped"),  # lineage roots, grouping, conversation labels
    ("titles wait", "grouped", "done"),  # the title/id match, run beside the query
    ("handoff", "done", "show"),  # post_message → the UI thread handles SearchFinished
    ("build rows", "show", "built"),  # SearchResults.show: rows as Text, cursor
    ("to render", "built", "render"),  # other UI work, layout, widgets repainted before it
    ("render", "render", "rendered"),  # the results widget's render_lines
    ("paint", "rendered", "painted"),  # the rest of that frame, until it is written
)


async def empty_and_focus(pilot, field) -> None:
    """Empty the field and focus it, a key gap before the first letter: a person's first
    letter comes a while after the `/` that focused the field, and a key pressed in the same
    instant as focus() waits for the focus's own frame (in a bare Textual app that made the
    first key 28-33 ms instead of 7-8: bench.frame_floor)."""
    field.value = ""
    await pilot.pause(0.1)
    field.focus()
    await pilot.pause(KEY_GAP_S)


async def press_and_wait(pilot, ch: str, latencies: list) -> bool:
    """Type ``ch``; wait (up to 3 s) until ``latencies`` has a new entry. True if it has."""
    before = len(latencies)
    await pilot.press(ch if ch != " " else "space")
    deadline = time.monotonic() + 3
    while len(latencies) == before and time.monotonic() < deadline:
        await asyncio.sleep(0.001)
    return len(latencies) > before


def _phase_stamps(screen, seconds: float) -> dict[str, float] | None:
    """The stamps of the answer just painted, or None if it is not the one measured."""
    view = screen.results.view
    if view is None or not getattr(view, "stamps", None):
        return None
    key = screen.search.keystroke_at
    stamps = {"key": key, "painted": key + seconds, **view.stamps, **screen.results.stamps}
    if any(name not in stamps for _p, a, b in PHASES for name in (a, b)):
        return None
    return stamps


def _forget_search_memos(app) -> None:
    """Each query typed as if for the first time: what the search connection kept from the
    last round's keys (window scans, rankings, probes) is dropped; only the prefix
    expansions stay, as before (``forget_answers``). Within a query, each key may narrow
    the previous key's answer, as it does for anybody typing."""
    app.ctx.store.forget_search_answers()


async def _type_queries(
    db_path: Path, queries: tuple[str, ...], rounds: int, watch: bool = False, profiles: list | None = None,
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    from hermes_tui.app import build_app
    from hermes_tui.config import AppConfig
    from hermes_tui.widgets.search import SearchInput

    samples: dict[str, list[float]] = {q: [] for q in queries}
    phases: dict[str, list[float]] = {name: [] for name, _a, _b in PHASES}
    keys: list[tuple[float, str, str]] = []  # (ms, text typed so far, its longest phase)
    app = build_app(db_path, config=AppConfig(animations="none"), watch=watch, profiles=profiles)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.5)
        screen = app.screen
        # One unrecorded round first, as the other classes warm up: the first searches of a
        # freshly opened database read its index pages from disk. A single round (``--runs
        # 1``: a smoke run, as the test suite's) is recorded cold instead: the warm-up
        # doubled the minute these classes take there.
        warm_up = 1 if rounds > 1 else 0
        for round_index in range(rounds + warm_up):
            record = round_index >= warm_up
            for query in queries:
                _forget_search_memos(app)
                field = screen.query_one(SearchInput)
                await empty_and_focus(pilot, field)
                for ch in query:
                    if await press_and_wait(pilot, ch, screen.search.latencies):
                        typed, seconds = screen.search.latencies[-1]
                        if typed.strip() and record:
                            samples[query].append(seconds * 1000)
                            stamps = _phase_stamps(screen, seconds)
                            longest = ""
                            if stamps is not None:
                                split = {name: max(0.0, stamps[b] - stamps[a]) * 1000 for name, a, b in PHASES}
                                for name, ms in split.items():
                                    phases[name].append(ms)
                                name, ms = max(split.items(), key=lambda item: item[1])
                                longest = f"{name} {ms:.0f}"
                            keys.append((seconds * 1000, typed, longest))
                    await asyncio.sleep(KEY_GAP_S)
    _SLOWEST.clear()
    _SLOWEST.extend(sorted(keys, reverse=True)[:5])
    return samples, phases


#: The slowest keystrokes of the last ``_type_queries`` run, for the report's note.
_SLOWEST: list[tuple[float, str, str]] = []


@register(
    "ui.keystroke_to_paint",
    klass="ui_keystroke",
    title="keystroke to highlighted results painted",
    api="browser search pane",
    target_ms=33.0,  # painted within one frame at 60 Hz (p50), two at p95
    target_p50_ms=17.0,
    group="ui",
)
def keystroke_to_paint(ctx: Context):
    rounds = max(1, min(ctx.runs, 3))
    samples, phases = asyncio.run(_type_queries(ctx.db_path, TYPED_QUERIES, rounds))
    details = {q: {"hits": len(v)} for q, v in samples.items()}
    if _SLOWEST and samples:
        slowest = ", ".join(f"{typed!r} {ms:.0f} ms ({longest})" for ms, typed, longest in _SLOWEST)
        details[next(iter(samples))]["note"] = f"slowest keystrokes: {slowest}"
    return Samples(samples, details, breakdown=phases)


@register(
    "ui.keystroke_while_writing",
    klass="ui_keystroke_live",
    title="keystroke to results painted while a gateway commits (informative)",
    api="browser search pane, watching",
    target_ms=None,
    group="ui",
)
def keystroke_while_writing(ctx: Context):
    """The keystroke row's keys typed into a browser watching a copy of the corpus while one
    writer process commits a new session every 0.2 s (as a busy gateway does): what a
    commit between two keys costs them (each commit invalidates what the last answer kept)."""
    rounds = max(1, min(ctx.runs, 2))
    workdir = Path(tempfile.mkdtemp(prefix="hermes-bench-typing-"))
    try:
        copy = workdir / "state.db"
        shutil.copyfile(ctx.db_path, copy)  # the writer must not change the cached corpus
        env = dict(os.environ, PYTHONPATH=str(REPO))
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(copy), "0", "100000", "0.2", str(workdir / "commits.jsonl")],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        try:
            samples, phases = asyncio.run(_type_queries(copy, TYPED_QUERIES, rounds, watch=True))
        finally:
            writer.kill()
            writer.wait(timeout=30)
        commits = len((workdir / "commits.jsonl").read_text().splitlines())
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    details = {q: {"hits": len(v)} for q, v in samples.items()}
    if samples:
        details[next(iter(samples))]["note"] = f"{commits} commits while the keys were typed"
    return Samples(samples, details, breakdown=phases)


def _longest_session(db_path: Path) -> str | None:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT id FROM sessions ORDER BY message_count DESC, id LIMIT 1").fetchone()
        return row[0] if row else None
    finally:
        conn.close()


def _probe(ctx: Context, longest: str | None, cache_dir: Path, profiles_home: Path | None = None) -> dict:
    # The browser keeps its recency index in the user cache directory between runs: here a
    # directory of the bench's own (a fresh one for a first run).
    env = dict(os.environ, PYTHONPATH=str(REPO), HERMES_SESSIONS_CACHE_DIR=str(cache_dir))
    spawned = time.time()
    argv = [sys.executable, "-m", "bench.ui_probe", str(ctx.db_path), repr(spawned), "--query", PROBE_QUERY]
    if longest:
        argv += ["--transcript", longest]
    if profiles_home is not None:
        argv += ["--profiles-home", str(profiles_home)]
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "probe failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _compile_bytecode() -> None:
    """Write the project's bytecode, as ``pip install`` does for an installed package: run
    from the repository with ``PYTHONDONTWRITEBYTECODE`` set (as on this box) every start
    would compile ~60 modules first (~0.2 s) -- a cost no installed browser pays."""
    import compileall

    for package in ("hermes_state", "hermes_tui", "hermes_workload"):
        compileall.compile_dir(str(REPO / package), quiet=1)


def _startup_runs(ctx: Context) -> dict[str, list[dict]]:
    """First runs (no recency cache yet), warm runs (after one unrecorded run), then cold
    runs (page cache dropped before each)."""
    from . import pagecache

    _compile_bytecode()
    longest = _longest_session(ctx.db_path)
    count = max(1, min(ctx.runs, 5))
    with tempfile.TemporaryDirectory(prefix="hermes-bench-cache-") as scratch:
        cache = Path(scratch) / "kept"
        _probe(ctx, longest, cache)  # warm-up: pages, imports, and the recency cache written
        first = [_probe(ctx, longest, Path(scratch) / f"first-{n}") for n in range(count)]
        warm = [_probe(ctx, longest, cache) for _ in range(count)]
        cold = _cold_runs(ctx, longest, cache, count, pagecache)
    for run in first + warm + cold:
        run["longest_session"] = longest
    return {"first": first, "warm": warm, "cold": cold}


def _cold_runs(ctx: Context, longest: str | None, cache: Path, count: int, pagecache) -> list[dict]:
    cold = []
    for _ in range(count):
        try:
            left = pagecache.drop(ctx.db_path)
        except OSError as exc:
            cold.append({"error": f"cannot drop the page cache: {exc}"})
            break
        run = _probe(ctx, longest, cache)
        # The -shm file is mapped by every open connection (this bench's own included), so
        # its 32 KB stay; what matters is the database and its WAL.
        run["resident_after_drop"] = max((v for k, v in left.items() if not k.endswith("-shm")), default=0.0)
        cold.append(run)
    return cold


_STARTUP_CACHE: dict[str, dict[str, list[dict]]] = {}


def _startup(ctx: Context) -> dict[str, list[dict]]:
    key = str(ctx.db_path)
    if key not in _STARTUP_CACHE:
        _STARTUP_CACHE[key] = _startup_runs(ctx)
    return _STARTUP_CACHE[key]


def _startup_samples(runs: list[dict], label: str) -> Samples:
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        raise RuntimeError(errors[0])
    details: dict = {"hits": runs[0]["rows"]}
    left = [r["resident_after_drop"] for r in runs if "resident_after_drop" in r]
    if left:
        details["note"] = (f"{label}: at most {max(left):.1%} of the database file and its WAL still "
                           "cached after each drop (mincore)")
    return Samples({label: [r["first_page_s"] * 1000 for r in runs if r["first_page_s"]]}, {label: details})


@register(
    "ui.browse_startup",
    klass="ui_startup",
    title="`browse` to first painted page",
    api="hermes sessions browse (warm)",
    target_ms=1000.0,
    group="ui",
)
def browse_startup(ctx: Context):
    return _startup_samples(_startup(ctx)["warm"], "fresh process, 160×48, warm page cache")


@register(
    "ui.browse_startup_first",
    klass="ui_startup",
    title="`browse` to first painted page",
    api="hermes sessions browse (first run)",
    target_ms=1000.0,
    group="ui",
)
def browse_startup_first(ctx: Context):
    return _startup_samples(
        _startup(ctx)["first"], "fresh process, 160×48, warm page cache, no recency cache yet (first run)")


@register(
    "ui.browse_startup_cold",
    klass="ui_startup",
    title="`browse` to first painted page",
    api="hermes sessions browse (cold)",
    target_ms=1000.0,
    group="ui",
)
def browse_startup_cold(ctx: Context):
    return _startup_samples(_startup(ctx)["cold"], "fresh process, 160×48, cold page cache")


@register(
    "ui.browse_rss",
    klass="ui_rss",
    title="browser peak RSS: browse + search + longest transcript (MB, not ms)",
    api="hermes sessions browse",
    target_ms=150.0,
    target_note="≤ 150 MB",
    group="ui",
)
def browse_rss(ctx: Context):
    found = _startup(ctx)
    runs = [r for r in found["first"] + found["warm"] + found["cold"] if "error" not in r]
    first = runs[0]
    label = "peak RSS, MB"
    note = (f"first page {max(r['rss_first_page_mb'] for r in runs):.0f} MB, after `{PROBE_QUERY}` "
            f"({first.get('search_hits', '?')} hits) {max(r.get('rss_search_mb', 0) for r in runs):.0f} MB, "
            f"after the transcript of {first.get('longest_session')} "
            f"({first.get('transcript_entries', '?')} messages) {max(r['rss_mb'] for r in runs):.0f} MB; "
            f"search painted in {_median([r['search_ms'] for r in runs if 'search_ms' in r]):.0f} ms, "
            f"transcript in {_median([r['transcript_ms'] for r in runs if 'transcript_ms' in r]):.0f} ms (p50)")
    return Samples({label: [r["rss_mb"] for r in runs]}, {label: {"hits": first["rows"], "note": note}})


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")


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


async def _watch_lag(
    db_path: Path, writers: int, count: int, gap: float, log: Path, cpu: list[float] | None = None,
) -> list[float]:
    """Each commit's lag until the browser shows it; ``cpu`` gets the browser's CPU time over
    the writers' run as a share of one core (the process's CPU: the browser's threads and
    this loop looking at its rows)."""
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
        cpu_start, wall_start = time.process_time(), time.monotonic()
        deadline = time.monotonic() + count * gap + 30
        while time.monotonic() < deadline:
            now = time.time()
            # New sessions land right after the pinned ones (at most a dozen in the corpus);
            # a slow refresh may bring all of them at once, so look as far as they can reach.
            for index in range(min(lst.total, writers * count + 24)):
                row = lst.row(index)
                if row is not None and row.id.startswith("lag_") and row.id not in seen:
                    seen[row.id] = now
            if all(p.poll() is not None for p in procs) and len(seen) >= writers * count:
                break
            await asyncio.sleep(0.005)
        if cpu is not None:
            cpu.append((time.process_time() - cpu_start) / max(time.monotonic() - wall_start, 1e-9))
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
        cpu: list[float] = []
        lags = asyncio.run(_watch_lag(copy, writers=4, count=10, gap=0.3, log=workdir / "commits.jsonl", cpu=cpu))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    label = "4 writers × 10 sessions, 0.3 s apart"
    details: dict[str, Any] = {"hits": len(lags)}
    if cpu:
        details["note"] = f"the browser's CPU while the writers committed: {cpu[0] * 100:.0f} % of one core"
    return Samples({label: lags}, {label: details})


# ---------------------------------------------------------------------------- across profiles

#: Profiles of the bench's Hermes root (each a copy of the corpus): ``browse --all-profiles``
#: over three stores of the corpus's size (PF-6).
PROFILE_COPIES = ("default", "work", "personal")

_PROFILES_ROOT: dict[str, Path] = {}


def _profiles_root(ctx: Context) -> Path:
    """A Hermes root whose default profile and two named ones each hold a copy of the corpus
    (copies, not links: three files, each with pages of its own to read), made once per
    bench process and removed when it ends."""
    key = str(ctx.db_path)
    if key not in _PROFILES_ROOT:
        import atexit

        root = Path(tempfile.mkdtemp(prefix="hermes-bench-profiles-"))
        atexit.register(shutil.rmtree, root, True)
        for name in PROFILE_COPIES:
            home = root if name == "default" else root / "profiles" / name
            home.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ctx.db_path, home / "state.db")
        _PROFILES_ROOT[key] = root
    return _PROFILES_ROOT[key]


@register(
    "ui.profiles_first_page",
    klass="ui_profiles_startup",
    title="`browse --all-profiles` over three stores of this size: first page painted",
    api="hermes sessions browse --all-profiles (ProfilesData)",
    target_ms=1000.0,
    group="ui",
)
def profiles_first_page(ctx: Context):
    """A fresh process per run, as ``hermes sessions browse --all-profiles`` starts: the
    pages of three stores merged into the first page. First runs (no recency index kept for
    any store yet), then warm runs (each store's index kept by an earlier run)."""
    root = _profiles_root(ctx)
    count = max(1, min(ctx.runs, 5))
    _compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-cache-") as scratch:
        kept = Path(scratch) / "kept"
        _probe(ctx, None, kept, root)  # warm-up: pages, imports, recency indexes written
        first = [_probe(ctx, None, Path(scratch) / f"first-{n}", root) for n in range(count)]
        warm = [_probe(ctx, None, kept, root) for _ in range(count)]
    samples, details = {}, {}
    for label, runs in (("3 profiles, first run (no recency index kept)", first),
                        ("3 profiles, warm (recency indexes kept)", warm)):
        samples[label] = [r["first_page_s"] * 1000 for r in runs if r.get("first_page_s")]
        details[label] = {"hits": runs[0]["rows"],
                          "note": f"search {PROBE_QUERY!r} painted in "
                                  f"{min(r.get('search_ms', 0) for r in runs):.0f}-{max(r.get('search_ms', 0) for r in runs):.0f} ms; "
                                  f"peak RSS {max(r['rss_mb'] for r in runs):.0f} MB"}
    return Samples(samples, details)


@register(
    "ui.profiles_keystroke",
    klass="ui_profiles_keystroke",
    title="keystroke to highlighted results painted, across three profiles of this size",
    api="browser search pane over ProfilesData",
    target_ms=33.0,
    target_p50_ms=17.0,
    group="ui",
)
def profiles_keystroke(ctx: Context):
    """The keystroke row's keys typed into the browser over three stores of the corpus: each
    key searches the three in turn, each its share of the window (``window_shares``), and ranks
    their conversations together."""
    from hermes_state.profiles import discover

    root = _profiles_root(ctx)
    profiles = discover({"HERMES_HOME": str(root)}).with_stores()
    rounds = max(1, min(ctx.runs, 3))
    samples, phases = asyncio.run(_type_queries(profiles[0].db_path, TYPED_QUERIES, rounds, profiles=profiles))
    details = {q: {"hits": len(v)} for q, v in samples.items()}
    if _SLOWEST and samples:
        slowest = ", ".join(f"{typed!r} {ms:.0f} ms ({longest})" for ms, typed, longest in _SLOWEST)
        details[next(iter(samples))]["note"] = f"slowest keystrokes: {slowest}"
    return Samples(samples, details, breakdown=phases)
