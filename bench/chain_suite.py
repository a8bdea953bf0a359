"""A gateway chat that compressed 10,000 and 200,000 times.

Each class builds (once, under ``bench/.corpus/``) a store holding only that chain
(``bench.long_chain``) and measures, on it, what a person waits for:

* ``long_chain_first_page`` — the browser's first page by last activity, from a reader opened
  for the sample (as a browser starts: ``BrowserData.page``); the chain listed at its live tip;
* ``long_chain_search`` — the browser's search (``BrowserData.search``) for a word of every
  1,000th segment and for one of every segment, the engine's answers forgotten before each;
  ``…_first`` the same in a browser just opened (nothing walked yet);
* ``long_chain_lineage`` — the lineage screen opened on a segment in the middle, until the
  tree is drawn (headless app), and ``SessionDB.lineage_tree`` alone;
* ``long_chain_quit`` — ``hermes-sessions browse`` on a real pseudo-terminal: ``q`` typed
  while the first page is still being read, after a search, and with the lineage screen
  loading (Esc then ``q``): until the process has exited (``bench.tty_quit``).

Targets: at 10,000 segments the first page ≤ 1 s and a search ≤ 100 ms; at 200,000
the browser stays responsive: ``q`` gives the terminal back within 1 s.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path

from .long_chain import CHAIN_WORD, EVERY_SEGMENT_WORD, build_chain, segment_id
from .registry import Context, Samples, register
from .run import BENCH_NOW

SIZES = {"10k": 10_000, "200k": 200_000}
#: Below this corpus size (the harness's own smoke runs) each chain is a hundredth as long:
#: the classes still run end to end without building a 200,000-segment store for it.
FULL_CHAINS_FROM = 100_000


def segments_for(ctx: Context, segments: int) -> int:
    return segments if ctx.messages >= FULL_CHAINS_FROM else max(100, segments // 100)


def chain_home(ctx: Context, segments: int, beside: Path | None = None) -> Path:
    """``HERMES_HOME`` of the chain's store, built once beside the run's corpus (the cached
    corpora's directory, or wherever ``--db`` put it); ``beside``: the chain added to a copy
    of that store (the bench's corpus)."""
    root = Path(ctx.db_path).resolve().parent
    home = root / (f"chain-{segments}" if beside is None else f"chain-{segments}-beside-{beside.stem}")
    db = home / "state.db"
    if not db.exists():
        home.mkdir(parents=True, exist_ok=True)
        building = home / "building.db"
        for leftover in home.glob("building.db*"):
            leftover.unlink()
        # Beside a corpus, the chain is the chat still going on: its tip the newest activity.
        build_chain(building, segments, beside=beside, tip_at=None if beside is None else BENCH_NOW + 3600)
        building.rename(db)
    return home


def _ms(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    result = fn()
    return (time.perf_counter() - t0) * 1000, result


def _browser_list():
    """The list the browser opens on: by last activity, internal runs left out."""
    from hermes_state.listing import ListQuery
    from hermes_state.visibility import INTERNAL_SOURCES

    return ListQuery.from_options(exclude_sources=list(INTERNAL_SOURCES), by_activity=True)


def _first_page(ctx: Context, segments: int) -> Samples:
    segments = segments_for(ctx, segments)
    from hermes_tui.data import BrowserData

    out: dict[str, list[float]] = {}
    details: dict[str, dict] = {}
    for where, beside in (("alone", None), (f"beside the {ctx.size_label} corpus", Path(ctx.db_path))):
        db = chain_home(ctx, segments, beside) / "state.db"
        label = f"first page, fresh reader, chain {where}"
        out[label] = []
        for _ in range(max(3, min(ctx.runs, 5))):
            store = BrowserData(db)
            try:
                ms, (rows, _total) = _ms(lambda: store.page(0, 50, _browser_list(), count=False))
            finally:
                store.close()
            out[label].append(ms)
            chain_rows = [row.id for row in rows if row.id.startswith("chain-")]
            details[label] = {"hits": len(rows), "chain_listed_at": chain_rows[0] if chain_rows else None,
                              "tip": segment_id(segments - 1)}
    return Samples(out, details)


def _search(ctx: Context, segments: int, *, fresh: bool) -> Samples:
    segments = segments_for(ctx, segments)
    from hermes_tui.data import BrowserData

    db = chain_home(ctx, segments) / "state.db"
    out: dict[str, list[float]] = {}
    details: dict[str, dict] = {}
    store = None if fresh else BrowserData(db)
    try:
        for word in (CHAIN_WORD, EVERY_SEGMENT_WORD):
            label = f"{word} ({segments:,} segments)"
            out[label] = []
            rounds = max(3, min(ctx.runs, 5)) if fresh else ctx.runs
            if store is not None:
                store.search(word, _browser_list())  # warm-up
            for _ in range(rounds):
                one = BrowserData(db) if fresh else store
                try:
                    one.forget_search_answers()
                    ms, view = _ms(lambda: one.search(word, _browser_list()))
                finally:
                    if fresh:
                        one.close()
                out[label].append(ms)
                details[label] = {"hits": view.hit_count, "groups": len(view.groups)}
    finally:
        if store is not None:
            store.close()
    return Samples(out, details)


async def _open_lineage(db: Path, session_id: str) -> float:
    from hermes_tui.app import build_app
    from hermes_tui.config import AppConfig

    app = build_app(db, config=AppConfig(animations="none"), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause(0.5)
        t0 = time.perf_counter()
        app.push_screen(app.ctx.screens.lineage(session_id))
        while not getattr(app.screen, "loaded", False):
            await asyncio.sleep(0.005)
        done = asyncio.get_running_loop().create_future()
        app.call_after_refresh(lambda: done.set_result(time.perf_counter()))
        return (await done - t0) * 1000


def _lineage(ctx: Context, segments: int) -> Samples:
    segments = segments_for(ctx, segments)
    from hermes_state import SessionDB

    db = chain_home(ctx, segments) / "state.db"
    middle = segment_id(segments // 2)
    drawn = [asyncio.run(_open_lineage(db, middle)) for _ in range(max(1, min(ctx.runs, 3)))]
    reader = SessionDB(db, read_only=True)
    try:
        built = [_ms(lambda: reader.lineage_tree(middle))[0] for _ in range(max(1, min(ctx.runs, 3)))]
    finally:
        reader.close()
    # ("hits": the sessions of the family drawn, the whole chain)
    drawn_label, built_label = f"screen opened to tree drawn ({segments:,})", f"SessionDB.lineage_tree ({segments:,})"
    return Samples({drawn_label: drawn, built_label: built},
                   {drawn_label: {"hits": segments}, built_label: {"hits": segments}})


def _quit(ctx: Context, segments: int) -> Samples:
    segments = segments_for(ctx, segments)
    from .tty_quit import quit_after

    home = chain_home(ctx, segments)
    config = Path(tempfile.mkdtemp(prefix="hermes-bench-config-"))
    runs = max(1, min(ctx.runs, 3))
    plans = {
        "q during the first page": dict(after=0.0, keys=[]),
        "q after a search (Esc, q)": dict(after=1.0, keys=["/", EVERY_SEGMENT_WORD, "\x1b"], gap=1.0),
        "q while the lineage loads (l, Esc, q)": dict(after=1.0, keys=["l", "\x1b"], gap=0.5),
    }
    out: dict[str, list[float]] = {}
    details: dict[str, dict] = {}
    try:
        for label, plan in plans.items():
            out[label] = []
            for _ in range(runs):
                result = quit_after(home, config_dir=config, **plan)
                if result.get("quit_s") is not None:
                    out[label].append(result["quit_s"] * 1000)
                # ("hits": the segments of the chain the browser had open)
                details[label] = {"exit": result.get("exit"), "first_frame_s": result.get("first_frame_s"),
                                  "hits": segments}
    finally:
        shutil.rmtree(config, ignore_errors=True)  # (each run's own: left behind, they piled up in /tmp)
    return Samples(out, details)


for _label, _n in SIZES.items():
    big = _n > 10_000
    register(f"chain.first_page_{_label}", klass="long_chain_first_page",
             title=f"first page with a {_n:,}-segment chain, fresh reader", api="BrowserData.page",
             target_ms=None if big else 1000.0, group="chain")(lambda ctx, n=_n: _first_page(ctx, n))
    register(f"chain.search_{_label}", klass="long_chain_search",
             title=f"search hitting a {_n:,}-segment chain", api="BrowserData.search",
             target_ms=None if big else 100.0, group="chain")(lambda ctx, n=_n: _search(ctx, n, fresh=False))
    register(f"chain.search_first_{_label}", klass="long_chain_search_first",
             title=f"first search in a fresh browser, {_n:,}-segment chain", api="BrowserData.search",
             target_ms=None, group="chain")(lambda ctx, n=_n: _search(ctx, n, fresh=True))
    register(f"chain.lineage_{_label}", klass="long_chain_lineage",
             title=f"lineage of a {_n:,}-segment chain", api="LineageScreen · SessionDB.lineage_tree",
             target_ms=None, group="chain")(lambda ctx, n=_n: _lineage(ctx, n))
    register(f"chain.quit_{_label}", klass="long_chain_quit",
             title=f"q gives the terminal back, {_n:,}-segment chain", api="hermes-sessions browse (pty)",
             target_ms=1000.0, group="chain")(lambda ctx, n=_n: _quit(ctx, n))
