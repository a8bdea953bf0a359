"""The browser's first page: 50 conversations with previews, `tool` sessions hidden.

Target ≤ 2 ms p95 at 1M messages (upstream v0.12 measured 1.2 ms on the same corpus).
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
    from hermes_state.listing import ListQuery

    db = ctx.db
    return [
        Case(
            "limit=50, exclude tool",
            lambda: db.list_summaries(ListQuery(exclude_sources=("tool",)), limit=PAGE),
            lambda rows: {"hits": len(rows)},
        )
    ]


@register(
    "browse.first_page_by_activity",
    klass="first_page_by_activity",
    title="first page of 50 conversations by last activity (BR-10)",
    api="hermes_state.listing.page(by_activity=True)",
    target_ms=2.0,
    group="browse",
)
def first_page_by_activity(ctx: Context) -> list[Case]:
    """The browser's default list (BR-10): the 50 most recently active conversations, internal
    runs left out, and the list's length -- as the browser asks for it."""
    from hermes_state import listing
    from hermes_state.listing import ListQuery, Order
    from hermes_state.visibility import INTERNAL_SOURCES

    db = ctx.db
    excluded = list(INTERNAL_SOURCES)
    return [
        Case(
            "limit=50, exclude internal, by activity",
            lambda: db.list_sessions_rich(limit=PAGE, exclude_sources=excluded, order_by_last_active=True),
            lambda rows: {"hits": len(rows)},
        ),
        Case(
            "page + count (listing.page)",
            lambda: listing.page(db.store, ListQuery(exclude_sources=excluded, order=Order.ACTIVITY), 0, PAGE),
            lambda result: {"hits": len(result[0])},
        ),
    ]


@register(
    "browse.deep_page_by_activity",
    klass="deep_page_by_activity",
    title="a page deep in the list by last activity (End, a dragged scrollbar; informative)",
    api="listing.page(by_activity=True) · listing.rank · BrowserData.page",
    target_ms=None,
    group="browse",
)
def deep_page_by_activity(ctx: Context) -> list[Case]:
    """Pages past the first thousand conversations by last activity: the middle of the list
    and its last page from the general query (which ranks every listed conversation for each
    page), the whole ranking made once (``listing.rank``), and the browser's deep page: a
    slice of that ranking, its rows read by id (``BrowserData.page``, its ranking made in the
    warm-up call)."""
    return _deep_page_cases(ctx, by_activity=True)


def _deep_page_cases(ctx: Context, *, by_activity: bool) -> list[Case]:
    """A deep page as the list reads it (middle and last), the whole ranking once, and the
    browser's slice of it -- in one order."""
    from hermes_state import listing
    from hermes_state.listing import ListQuery, Order
    from hermes_state.visibility import INTERNAL_SOURCES
    from hermes_tui.data import BrowserData

    db = ctx.db
    excluded = list(INTERNAL_SOURCES)
    total = listing.count_listed(db.store, ListQuery(exclude_sources=excluded))
    middle, last = max(0, total // 2), max(0, total - PAGE)
    store = BrowserData(ctx.db_path)
    read = "general query" if by_activity else "the start index walked"
    order = "" if by_activity else " by start"
    cases = []
    for label, offset in (("middle", middle), ("last page", last)):
        cases.append(Case(
            f"{read}, {label} (offset {offset:,} of {total:,})",
            lambda offset=offset: listing.page(db.store, ListQuery.from_options(exclude_sources=excluded, by_activity=by_activity),
                                               offset, PAGE, count=False),
            lambda result: {"hits": len(result[0])},
        ))
    cases.append(Case(
        f"the whole ranking{order}, once (listing.rank)",
        lambda: listing.rank(db.store, ListQuery.from_options(exclude_sources=excluded, by_activity=by_activity)),
        lambda ids: {"hits": len(ids)},
    ))
    cases.append(Case(
        f"browser: a slice of the ranking, offset {middle:,} (BrowserData.page)",
        lambda: store.page(middle, PAGE, ListQuery.from_options(exclude_sources=excluded, by_activity=by_activity), count=False),
        lambda result: {"hits": len(result[0])},
    ))
    return cases


@register(
    "browse.deep_page_by_start",
    klass="deep_page_by_start",
    title="a page deep in the list by start (End, a dragged scrollbar; informative)",
    api="listing.page(by_activity=False) · listing.rank(by_activity=False) · BrowserData.page",
    target_ms=None,
    group="browse",
)
def deep_page_by_start(ctx: Context) -> list[Case]:
    """Pages deep in the list by start: the middle of the list and its last page read as the
    list reads a page (the start index walked up to the offset), the whole ranking by start
    made once (``listing.rank(by_activity=False)``), and the browser's deep page: a slice of
    that ranking, its rows read by id (``BrowserData.page``, its ranking made in the warm-up
    call)."""
    return _deep_page_cases(ctx, by_activity=False)
