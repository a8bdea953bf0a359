"""The relevance bench as a row of ``python -m bench`` (class ``relevance``, informative).

    python -m bench --size 1m --classes relevance

The needles are planted into a cached copy of the measured store (:mod:`bench.relevance`);
the row's samples are the browser search's first page for each needle query, one call each
(typed as if for the first time), split by query kind; its ``hits`` are the queries of each
kind whose conversation is among the first 10 shown; the notes under the table give each
kind's success@1/5/10 and MRR for the browser's search, exact message-level bm25 and newest
first. ``python -m bench.relevance`` prints the full tables (by age, language and shape too).
"""

from __future__ import annotations

from .needle_model import KINDS
from .registry import Context, Samples, register
from .relevance import KS, METHODS, run, store_now, summarize


def _cell(s: dict[str, float]) -> str:
    return "/".join(f"{s[f's@{k}']:.2f}" for k in KS) + f" MRR {s['mrr']:.2f}"


@register("relevance.browser_search", klass="relevance", title="relevance: needle queries (informative)",
          api="BrowserData.search", target_ms=None, group="relevance")
def relevance(ctx: Context) -> Samples:
    _, outcomes = run(ctx.db_path, now=store_now(ctx.db_path), quiet=True)
    summary = summarize(outcomes)
    samples: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for o in outcomes:
        samples[o.kind].append(o.browser["ms"])
    details = {}
    for kind in KINDS:
        row = summary["kind"][kind]
        found = sum(1 for o in outcomes if o.kind == kind and o.ranks["browser"] is not None and o.ranks["browser"] <= 10)
        details[kind] = {
            "hits": found,  # queries whose conversation is among the first 10 shown
            "note": f"{kind} ({row['n']} queries), s@1/5/10: " + "; ".join(f"{m} {_cell(row[m])}" for m in METHODS),
            "scores": {m: row[m] for m in METHODS},
        }
    return Samples(samples=samples, details=details)
