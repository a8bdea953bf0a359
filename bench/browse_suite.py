"""The browser's first page: 50 conversations with previews, `tool` sessions hidden.

Target ≤ 2 ms p95 at 1M messages (issue #3; upstream v0.12 measured 1.2 ms).
"""

from __future__ import annotations

from .registry import Case, Context, register

PAGE = 50


@register(
    "browse.first_page",
    klass="first_page",
    title="first page of 50 sessions with previews",
    api="SessionDB.list_sessions_rich",
    target_ms=2.0,
    group="browse",
)
def first_page(ctx: Context) -> list[Case]:
    db = ctx.db
    return [
        Case(
            "limit=50, exclude tool",
            lambda: db.list_sessions_rich(limit=PAGE, exclude_sources=["tool"]),
            lambda rows: {"hits": len(rows)},
        )
    ]


@register(
    "browse.first_page_typed",
    klass="first_page",
    title="first page of 50 sessions with previews",
    api="SessionDB.list_summaries",
    target_ms=2.0,
    group="browse",
)
def first_page_typed(ctx: Context) -> list[Case]:
    db = ctx.db
    return [
        Case(
            "limit=50, exclude tool",
            lambda: db.list_summaries(exclude_sources=["tool"], limit=PAGE),
            lambda rows: {"hits": len(rows)},
        )
    ]
