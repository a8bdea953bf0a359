"""Markdown tables from bench JSON results: ``python -m bench.summarize A.json [B.json …]``.

One table per file (every row: target, p50, p95, pass/fail, load average, overlap@20), then
the phase breakdowns and notes the run printed. For bench/README.md's tables.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _fmt(value: float) -> str:
    return f"{value:,.1f}" if value >= 100 else f"{value:.2f}"


def _overlap(row: dict[str, Any]) -> str:
    values = [c["overlap"] for c in row.get("cases", []) if isinstance(c.get("overlap"), (int, float))]
    if not values:
        return "—"
    mean = sum(values) / len(values)
    return f"{mean:.2f}" if min(values) == max(values) else f"{mean:.2f} (min {min(values):.2f})"


def table(report: dict[str, Any]) -> str:
    corpus = report.get("corpus", {})
    load = (report.get("machine") or {}).get("loadavg_before") or [float("nan")]
    lines = [
        f"`{report.get('command', '')}`" if report.get("command") else "",
        f"{corpus.get('messages', '?'):,} messages, {corpus.get('sessions', '?'):,} sessions, "
        f"schema {corpus.get('schema', 16)}; measured {report.get('measured_at')} at "
        f"{(report.get('git') or {}).get('commit')}, load average {load[0]:.2f} at the start",
        "",
        "| class | api | target | p50 | p95 | ok | load | overlap@20 |",
        "|---|---|---|---:|---:|---|---:|---|",
    ]
    last = None
    for row in report["results"]:
        title = row["title"] if row["class"] != last else ""
        last = row["class"]
        api = row["api"].replace("SessionDB.", "")
        row_load = row.get("loadavg")
        load_text = f"{row_load[0]:.2f}" if row_load else "—"
        if row["status"] != "ok":
            lines.append(f"| {title} | {api} | {row['target']} | — | — | {row['status'].upper()}: "
                         f"{row.get('detail', '')} | {load_text} | — |")
            continue
        mark = "—" if row["passed"] is None else ("pass" if row["passed"] else "**FAIL**")
        lines.append(f"| {title} | {api} | {row['target']} | {_fmt(row['p50_ms'])} | {_fmt(row['p95_ms'])} | "
                     f"{mark} | {load_text} | {_overlap(row) if api == 'search' else '—'} |")
    extra = []
    for row in report["results"]:
        if row.get("breakdown"):
            parts = [f"{phase} {v['p50_ms']:.1f} / {v['p95_ms']:.1f}" for phase, v in row["breakdown"].items()]
            extra.append(f"* `{row['class']}` phases, p50 / p95 ms: " + " · ".join(parts))
        for case in row.get("cases", []):
            if case.get("note"):
                extra.append(f"* `{row['class']}`: {case['note']}")
    if extra:
        lines += [""] + extra
    return "\n".join(line for line in lines if line is not None)


def main(argv: list[str] | None = None) -> int:
    paths = [Path(p) for p in (argv if argv is not None else sys.argv[1:])]
    if not paths:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    for path in paths:
        print(table(json.loads(path.read_text())))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
