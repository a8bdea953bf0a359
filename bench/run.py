"""``python -m bench``: build (or reuse) a corpus, time every registered benchmark, report.

    python -m bench --size 100k --runs 20
    python -m bench --size 1m --json /tmp/1m.json
    python -m bench --size 10k --classes selective_word,first_page
    python -m bench --size 1m --schema 30      # the same corpus in a store born at v30

The corpus is built once per (size, seed, generator version) under ``bench/.corpus/`` and
reused afterwards; ``--db PATH`` names another file instead (built there if it does not exist,
used as is otherwise — a copy of a real ``state.db`` works too). Results: a table on stdout and
JSON in ``bench/results/<size>.json`` (or ``--json PATH``).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import math
import os
import platform
import re
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from hermes_state import SessionDB
from hermes_workload.corpus import (
    ABSENT_CJK_TERMS,
    GENERATOR_VERSION,
    NO_MATCH_WORDS,
    generate_corpus,
)

from .registry import REGISTRY, Benchmark, Context, Missing, Samples

BENCH_DIR = Path(__file__).resolve().parent
CORPUS_DIR = BENCH_DIR / ".corpus"
RESULTS_DIR = BENCH_DIR / "results"

#: Modules whose import registers benchmarks. A new suite appends its own.
SUITES = ("bench.search_suite", "bench.browse_suite", "bench.ui_suite", "bench.export_suite", "bench.relevance_suite",
          "bench.chain_suite")

#: Every bench corpus is anchored at this instant (2026-01-01 00:00 UTC) so that a given
#: size and seed always produce the same database.
BENCH_NOW = 1767225600.0

#: Words whose share of messages the report states (to show the corpus has the intended shape).
SHARE_WORDS = ("the", "is", "for", "docker", "deploy", "python", "git", "kubernetes")
SHARE_CJK = ("服务", "部署", "配置", "서버", "数据库", "内存泄漏", "サーバー", "데이터베이스")


def parse_size(text: str) -> tuple[str, int]:
    """``"10k"`` → ``("10k", 10000)``; ``"1m"`` → ``("1m", 1000000)``; ``"2500"`` → as is."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"invalid size {text!r} (examples: 10k, 100k, 1m, 2500)")
    number = float(match.group(1))
    unit = match.group(2).lower()
    value = int(number * {"": 1, "k": 1000, "m": 1_000_000}[unit])
    if value < 1:
        raise argparse.ArgumentTypeError("size must be at least 1 message")
    label = f"{match.group(1)}{unit}" if unit else str(value)
    return label, value


def load_suites() -> list[Benchmark]:
    for name in SUITES:
        importlib.import_module(name)
    return list(REGISTRY)


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of a non-empty list."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


# ------------------------------------------------------------------------------- corpus


def corpus_path(label: str, seed: int, schema: int = 16) -> Path:
    layout = "" if schema == 16 else f"-schema{schema}"
    return CORPUS_DIR / f"corpus-{label}-seed{seed}-v{GENERATOR_VERSION}{layout}.db"


def _progress_printer(total_hint: int):
    start = time.perf_counter()
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if done < total and now - last[0] < 2.0:
            return
        last[0] = now
        rate = done / max(now - start, 1e-9)
        print(f"  building corpus: {done:,}/{total:,} messages ({rate:,.0f}/s)", file=sys.stderr, flush=True)

    return progress


def ensure_corpus(path: Path, messages: int, seed: int, *, rebuild: bool = False, quiet: bool = False,
                  schema: int = 16) -> dict[str, Any]:
    """Build the corpus at ``path`` unless it exists; return its metadata (sidecar JSON)."""
    meta_path = path.with_suffix(".json")
    if rebuild:
        for p in (path, meta_path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            if p.exists():
                p.unlink()
    if path.exists():
        if meta_path.exists():
            try:
                return json.loads(meta_path.read_text())
            except ValueError:
                pass
        return {"path": str(path), "prebuilt": True}
    path.parent.mkdir(parents=True, exist_ok=True)
    building = path.with_name(path.name + ".building")
    for p in (building, Path(f"{building}-wal"), Path(f"{building}-shm")):
        if p.exists():
            p.unlink()
    if not quiet:
        print(f"Building a {messages:,}-message corpus at {path} (seed {seed}) ...", file=sys.stderr, flush=True)
    stats = generate_corpus(
        building, messages=messages, seed=seed, now=BENCH_NOW, schema=schema,
        progress=None if quiet else _progress_printer(messages),
    )
    os.replace(building, path)  # only a complete build ever carries the final name
    meta = stats.as_dict()
    meta["path"] = str(path)
    # What the build cost besides its time: the file, and the builder's memory (this
    # process did nothing else before, so its high-water mark is the build's).
    meta["file_bytes"] = path.stat().st_size
    meta["builder_peak_rss_mb"] = round(_peak_rss_mb(), 1)
    meta["build_loadavg"] = _loadavg()
    t0 = time.perf_counter()
    meta["shares"] = corpus_shares(path)
    meta["shares_s"] = round(time.perf_counter() - t0, 1)
    meta_path.write_text(json.dumps(meta, indent=2, ensure_ascii=False))
    if not quiet:
        print(f"  built in {stats.elapsed_s:.1f} s: {meta['file_bytes'] / 1e9:.2f} GB, "
              f"builder peak RSS {meta['builder_peak_rss_mb']:.0f} MB", file=sys.stderr, flush=True)
    return meta


def _peak_rss_mb() -> float:
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except (ImportError, OSError):
        return float("nan")


def corpus_shares(path: Path) -> dict[str, float]:
    """Share of messages containing each reference word (FTS) or CJK term (substring)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        total = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] or 1
        shares: dict[str, float] = {}
        for word in SHARE_WORDS + NO_MATCH_WORDS:
            n = conn.execute(
                "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH ?", (f'"{word}"',)
            ).fetchone()[0]
            shares[word] = round(n / total, 5)
        # One pass over the messages for every term (a scan per term cost a minute at 5M).
        terms = SHARE_CJK + ABSENT_CJK_TERMS
        counts = conn.execute(
            "SELECT " + ", ".join("COALESCE(SUM(instr(content, ?) > 0), 0)" for _ in terms) + " FROM messages",
            terms,
        ).fetchone()
        for term, n in zip(terms, counts):
            shares[term] = round(n / total, 5)
        return shares
    finally:
        conn.close()


# ------------------------------------------------------------------------------- running


def run_benchmark(bench: Benchmark, ctx: Context) -> dict[str, Any]:
    bench = bench.at_size(ctx.messages)
    row: dict[str, Any] = {
        "key": bench.key,
        "class": bench.klass,
        "title": bench.title,
        "api": bench.api,
        "group": bench.group,
        "target_ms": bench.target_ms,
        "target": bench.target_note,
    }
    try:
        cases = bench.make_cases(ctx)
    except Missing as exc:
        row.update(status="missing", detail=str(exc), passed=None)
        return row
    except Exception as exc:  # a class that measures itself failed: report it, run the rest
        row.update(status="error", detail=f"{type(exc).__name__}: {exc}", passed=None)
        return row
    if isinstance(cases, Samples):
        samples, details = cases.samples, cases.details
        if not any(samples.values()):
            row.update(status="error", detail="no samples measured", passed=None)
            return row
        row = _finish_row(row, bench, samples, details)
        if cases.breakdown:
            row["breakdown"] = {
                phase: {"p50_ms": round(percentile(values, 0.50), 4),
                        "p95_ms": round(percentile(values, 0.95), 4), "samples": len(values)}
                for phase, values in cases.breakdown.items() if values
            }
        return row
    samples: dict[str, list[float]] = {case.label: [] for case in cases}
    details: dict[str, dict[str, Any]] = {}
    # As timeit does: no garbage-collector pauses inside the timed region.
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for case in cases:  # warm-up: first call per case (caches, lazy reader state)
            t0 = time.perf_counter()
            result = case.run()
            first_ms = (time.perf_counter() - t0) * 1000
            details[case.label] = dict(case.describe(result) if case.describe else {})
            details[case.label]["first_ms"] = round(first_ms, 4)
        for _ in range(ctx.runs):
            for case in cases:
                t0 = time.perf_counter()
                case.run()
                samples[case.label].append((time.perf_counter() - t0) * 1000)
    except Exception as exc:  # report, never crash the whole run
        row.update(status="error", detail=f"{type(exc).__name__}: {exc}", passed=None)
        return row
    finally:
        if gc_was_enabled:
            gc.enable()
    return _finish_row(row, bench, samples, details)


def _finish_row(
    row: dict[str, Any], bench: Benchmark, samples: dict[str, list[float]], details: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    samples = {label: values for label, values in samples.items() if values}
    pooled = [s for values in samples.values() for s in values]
    p50 = percentile(pooled, 0.50)
    if bench.higher_is_better:  # a throughput: the tail that matters is the slow end
        p95 = percentile(pooled, 0.05)
        passed = (p95 >= bench.target_ms) if bench.target_ms is not None else None
    else:
        p95 = percentile(pooled, 0.95)
        passed = (p95 <= bench.target_ms) if bench.target_ms is not None else None
    if passed is not None and bench.target_p50_ms is not None:
        passed = passed and p50 <= bench.target_p50_ms
    row.update(
        status="ok",
        samples=len(pooled),
        p50_ms=round(p50, 4),
        p95_ms=round(p95, 4),
        max_ms=round(max(pooled), 4),
        target_p50_ms=bench.target_p50_ms,
        passed=passed,
        cases=[
            {
                "query": label,
                "p50_ms": round(percentile(values, 0.50), 4),
                "p95_ms": round(percentile(values, 0.95), 4),
                **details.get(label, {}),
            }
            for label, values in samples.items()
        ],
    )
    return row


def _paths_of(row: dict[str, Any]) -> str:
    seen: list[str] = []
    for case in row.get("cases", []):
        path = case.get("path")
        if path is None:
            continue
        label = f"{path}/{case.get('ranking')}" if case.get("ranking") else str(path)
        if label not in seen:
            seen.append(label)
    return ", ".join(seen)


def _overlap_of(row: dict[str, Any]) -> str:
    """Mean overlap@20 with exact bm25 over the queries that have one (and the lowest)."""
    values = [c["overlap"] for c in row.get("cases", []) if isinstance(c.get("overlap"), (int, float))]
    if not values:
        return "—"
    mean = sum(values) / len(values)
    return f"{mean:.2f}" if min(values) == max(values) else f"{mean:.2f} (min {min(values):.2f})"


def format_table(report: dict[str, Any]) -> str:
    corpus = report["corpus"]
    head = (
        f"Hermes sessions bench — corpus {report['size']}: {corpus.get('messages', '?'):,} messages, "
        f"{corpus.get('sessions', '?'):,} sessions (seed {report['seed']}); SQLite {report['sqlite_version']}; "
        f"{report['runs']} runs per query, warm cache, limit 20"
        if isinstance(corpus.get("messages"), int)
        else f"Hermes sessions bench — {report['db_path']}; {report['runs']} runs per query"
    )
    with_overlap = any(_overlap_of(r) != "—" for r in report["results"])
    columns = ("class", "api", "target", "p50 ms", "p95 ms", "hits", "ok", "load")
    columns += ("overlap@20",) if with_overlap else ()
    columns += ("served by",)
    rows: list[tuple[str, ...]] = []
    last_class = None
    for row in report["results"]:
        klass = row["title"] if row["class"] != last_class else ""
        last_class = row["class"]
        api = row["api"].replace("SessionDB.", "")
        load = row.get("loadavg")
        load_text = f"{load[0]:.2f}" if load else "—"
        extra = (_overlap_of(row),) if with_overlap else ()
        if row["status"] != "ok":
            rows.append((klass, api, row["target"], "—", "—", "—", row["status"].upper(), load_text,
                         *(("—",) if with_overlap else ()), row.get("detail", "")))
            continue
        hits = "/".join(str(c.get("hits", "?")) for c in row["cases"])
        mark = "—" if row["passed"] is None else ("PASS" if row["passed"] else "FAIL")
        rows.append((klass, api, row["target"], f"{row['p50_ms']:.3f}", f"{row['p95_ms']:.3f}", hits, mark,
                     load_text, *extra, _paths_of(row)))
    widths = [max(len(columns[i]), *(len(r[i]) for r in rows)) for i in range(len(columns))] if rows else [len(c) for c in columns]
    widths[-1] = len(columns[-1])  # last column is free-form; do not pad it
    load = report.get("machine", {}).get("loadavg_before")
    if load:
        head += f"; load average {load[0]:.2f} on {report['machine'].get('cpus')} CPUs"
    lines = [head, ""]
    lines.append("  ".join(c.ljust(widths[i]) for i, c in enumerate(columns)).rstrip())
    lines.append("  ".join("-" * widths[i] for i in range(len(columns))))
    for r in rows:
        lines.append("  ".join(r[i].ljust(widths[i]) if i < len(r) - 1 else r[i] for i in range(len(r))).rstrip())
    ok = [r for r in report["results"] if r.get("passed") is True]
    failed = [r for r in report["results"] if r.get("passed") is False]
    other = [r for r in report["results"] if r["status"] != "ok"]
    lines.append("")
    lines.append(f"{len(ok)} pass, {len(failed)} fail, {len(other)} missing/error (hits: per query, in order; "
                 "load: 1-minute load average when the row finished)")
    for row in report["results"]:
        if row.get("breakdown"):
            parts = [f"{phase} {v['p50_ms']:.1f} / {v['p95_ms']:.1f}" for phase, v in row["breakdown"].items()]
            lines.append(f"{row['class']} phases, p50 / p95 ms: " + " · ".join(parts))
        per_query = [f"{c['query']} {c['overlap']:.2f} ({c.get('ranking') or '—'}; exact {c['exact_bm25_ms']:.0f} ms)"
                     for c in row.get("cases", []) if isinstance(c.get("overlap"), (int, float))]
        if per_query and row["api"] == "SessionDB.search":
            lines.append(f"{row['class']} overlap@20: " + ", ".join(per_query))
        notes = [c["note"] for c in row.get("cases", []) if c.get("note")]
        for note in notes:
            lines.append(f"{row['class']}: {note}")
    if with_overlap:
        lines.append("overlap@20: share of the top 20 hits of `search` that exact bm25 over the whole index "
                     "(the same MATCH, ORDER BY rank, no window) also puts in its top 20")
    return "\n".join(lines)


def _git_state() -> dict[str, Any] | None:
    """The commit measured (figures are only comparable between known code versions)."""
    import subprocess

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=BENCH_DIR, capture_output=True, text=True, timeout=5
        ).stdout.strip()
        dirty = subprocess.run(
            # hermes_workload too: the corpus generator shapes every figure.
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "hermes_state", "hermes_workload"],
            cwd=BENCH_DIR.parent, capture_output=True, text=True, timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit or None, "hermes_state_modified": bool(dirty)} if commit else None


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="10k", help="corpus size in messages: 10k, 100k, 1m, or a number (default 10k)")
    parser.add_argument("--runs", type=int, default=20, help="timed rounds per query after one warm-up call (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="corpus seed (default 0)")
    parser.add_argument("--schema", type=int, choices=(16, 30), default=16,
                        help="layout of the built corpus: 16 (default) or 30 (born at upstream v30)")
    parser.add_argument("--db", type=Path, help="database to measure (built there if missing) instead of the cached corpus")
    parser.add_argument("--json", type=Path, help="where to write results (default bench/results/<size>.json)")
    parser.add_argument("--classes", help="comma-separated class ids or benchmark keys to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the registered benchmarks and exit")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached corpus even if it exists")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a benchmark fails its target")
    parser.add_argument("--quiet", action="store_true", help="no progress output on stderr")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        label, messages = parse_size(args.size)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    benches = load_suites()
    if args.classes:
        wanted = {c.strip() for c in args.classes.split(",") if c.strip()}
        unknown = wanted - {b.klass for b in benches} - {b.key for b in benches}
        if unknown:
            parser.error(f"unknown class or key: {', '.join(sorted(unknown))}")
        benches = [b for b in benches if b.klass in wanted or b.key in wanted]
    if args.list:
        for b in benches:
            print(f"{b.key:40} {b.target_note:24} {b.title}")
        return 0

    db_path = args.db if args.db is not None else corpus_path(label, args.seed, args.schema)
    try:
        meta = ensure_corpus(db_path, messages, args.seed, rebuild=args.rebuild and args.db is None,
                             quiet=args.quiet, schema=args.schema)
    except (OSError, ValueError, sqlite3.Error) as exc:
        print(f"Error: cannot prepare the corpus at {db_path}: {exc}", file=sys.stderr)
        return 2

    load_before = _loadavg()
    git = _git_state()  # the code measured: taken before the run, as later commits may land
    db = SessionDB(db_path, read_only=True)
    try:
        counts = {
            "messages": db.message_count(),
            "sessions": db.session_count(),
        }
        ctx = Context(db=db, db_path=db_path, size_label=label, messages=counts["messages"],
                      sessions=counts["sessions"], seed=args.seed, runs=args.runs)
        results = []
        for bench in benches:
            if not args.quiet:
                print(f"  {bench.key} ...", file=sys.stderr, flush=True)
            row = run_benchmark(bench, ctx)
            row["loadavg"] = _loadavg()
            results.append(row)
    finally:
        db.close()

    corpus = dict(meta)
    corpus.update(counts)
    report = {
        "command": "python -m bench " + " ".join(sys.argv[1:] if argv is None else argv),
        "size": label,
        "seed": args.seed,
        "runs": args.runs,
        "limit": 20,
        "db_path": str(db_path),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "sqlite_version": sqlite3.sqlite_version,
        "python": platform.python_version(),
        "git": git,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            # Other processes competing for the CPUs inflate p95; keep the evidence.
            "loadavg_before": load_before,
            "loadavg_after": _loadavg(),
        },
        "corpus": corpus,
        "results": results,
    }
    name = f"{label}.json" if args.schema == 16 else f"{label}-schema{args.schema}.json"
    out = args.json if args.json is not None else RESULTS_DIR / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    print(format_table(report))
    print(f"\nJSON: {out}")
    if args.strict and any(r.get("passed") is False for r in results):
        return 1
    return 0
