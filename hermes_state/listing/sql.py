"""The SQL of the human list: filters, row shapes, chains projected to their tips.

Pieces :class:`~hermes_state.listing.engine.Lister` builds its statements from. Every
function is pure (SQL text and parameters) or reads through a connection it is given.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from ..lenient_text import lenient_text, refused_as_undecodable
from ..lineage import compression_tip as lineage_compression_tip
from ..preview import compute_preview
from ..sql_ids import chunked
from ..unread import is_unread
from ..visibility import Rules
from .activity import padded_values, placeholders, straight_tips

if TYPE_CHECKING:  # pragma: no cover
    from .query import ListQuery


class Listed(list):
    """Rows of a list, and whether they are exactly what the store holds now (``exact``): a
    provisional first page (see :meth:`SessionDB.list_sessions_rich`) may not be."""

    def __init__(self, rows=(), *, exact: bool = True) -> None:
        super().__init__(rows)
        self.exact = exact


def list_filters(rules: Rules, query: "ListQuery", walk_source: bool = False) -> tuple[str, list[Any]]:
    """The WHERE clause of what is listed and from which sources (the flags, the minimum and
    the workspace are the Lister's: see :meth:`Lister.filters`)."""
    clauses: list[str] = []
    params: list[Any] = []
    source, exclude_sources = query.source, list(query.exclude_sources)
    include_delegates = query.include_delegates
    if not query.include_children:
        # UC-3: roots, orphans, branches and reset children; delegate runs never (they
        # stay hidden even once orphaned, as upstream v16 keeps them) unless asked for (BR-15).
        listed = rules.listed("s")
        clauses.append(f"({listed} OR {rules.delegate('s')})" if include_delegates else listed)
    if source:
        # ``walk_source``: tested on each row walked, not looked up through a source index
        # (the unary ``+`` keeps SQLite from using one; see SessionDB._walk_start_for).
        clauses.append("+s.source = ?" if walk_source else "s.source = ?")
        params.append(source)
    if exclude_sources:
        clauses.append(f"s.source NOT IN ({','.join('?' for _ in exclude_sources)})")
        params.extend(exclude_sources)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


def listed_chunks(
    conn: sqlite3.Connection, sql: str, params: list[Any], chunk: int,
    finish: Callable[[list[dict]], list[dict]],
) -> Iterator[list[dict]]:
    """The rows of ``sql`` as listing rows, ``chunk`` at a time, each chunk through
    ``finish``. Text that is not UTF-8 is read leniently (as ``read_leniently`` does for a
    whole read): the statement runs again so decoding and the rows already handed out are
    passed over (one snapshot: the same rows, in the same order)."""
    done = 0
    previous = conn.text_factory
    try:
        while True:
            try:
                cursor = conn.execute(sql, params)
                skip = done
                while skip > 0:
                    got = cursor.fetchmany(min(skip, chunk))
                    if not got:
                        break
                    skip -= len(got)
                while True:
                    batch = cursor.fetchmany(chunk)
                    if not batch:
                        return
                    rows = finish([rich_row(row) for row in batch])
                    done += len(batch)
                    yield rows
            except sqlite3.OperationalError as exc:
                if not refused_as_undecodable(conn, exc):
                    raise
                conn.text_factory = lenient_text
    finally:
        conn.text_factory = previous


#: The list by start (LI-2): newest start first; sessions started at the same instant in the
#: order they were written (the rowid), as the start index ``started_at DESC`` keeps them -- so
#: it still serves the order alone, nothing sorted -- and named, so that a page read with
#: ``OFFSET`` and a slice of :meth:`SessionDB.rank_listed`'s ranking agree whatever plan SQLite
#: picks for each (a source filter reads the source index and sorts).
BY_START = "s.started_at DESC, s.rowid"


#: A source with at least this many sessions is listed by start by walking the start index
#: (see SessionDB._walk_start_for); below it, by its count against the store's size.
SOURCE_WALK_CERTAIN = 5_000


#: What one row costs (relative; measured at 250k sessions, v30): walked on the start index
#: and its source tested (~0.4 us), or read through the source index with its preview and
#: last activity, then sorted (~5-9 us).
WALK_ROW_COST = 0.4


SORTED_ROW_COST = 7.0


#: The same through a compatibility view (an older file read as v11): a view's rowid is NULL.
BY_START_VIEW = "s.started_at DESC, s.id"


def pinned_and_rest(select: str, where: str, params: list[Any], pins: list[str]) -> list[tuple[str, list[Any]]]:
    """The start-ordered list with the pinned rows first, as two statements without their
    ORDER BY: the pinned rows, then the rest (which walk the start index); one, the whole
    list, when nothing is pinned."""
    if not pins:
        return [(f"{select} {where}", list(params))]
    marks = ",".join("?" for _ in pins)
    joiner = " AND " if where else "WHERE "
    return [
        (f"{select} {where}{joiner}s.id IN ({marks})", [*params, *pins]),
        (f"{select} {where}{joiner}s.id NOT IN ({marks})", [*params, *pins]),
    ]


def rich_row(row: sqlite3.Row) -> dict:
    # Not dict(row): that looks every column up by name (quadratic in the ~60 columns of a
    # v30 row; 1.1 ms for a page of 50, against 0.15 ms this way).
    return rich_tuple(row.keys(), row)


def rich_tuple(names: list[str], values: Iterable[Any]) -> dict:
    data = dict(zip(names, values))
    data["preview"] = compute_preview(data.pop("_preview_raw", None))
    return data


#: What a :class:`~hermes_state.models.SessionSummary` reads of a session row.
SUMMARY_COLUMNS = (
    "id", "source", "title", "started_at", "ended_at", "end_reason", "message_count", "tool_call_count",
    "model", "user_id", "parent_session_id", "input_tokens", "output_tokens", "estimated_cost_usd",
    "archived", "pinned", "hidden", "title_source", "cwd", "git_branch", "git_repo_root", "created_source", "last_read_at",
)


#: Summary columns read as their field's value when NULL (what ``_summary_fields`` did row by
#: row in Python), and the flags as 0 or 1 (any value but 0 sets one, as the filters read them).
SUMMARY_DEFAULTS = {
    "source": "''", "started_at": "0.0", "message_count": "0", "tool_call_count": "0",
    "input_tokens": "0", "output_tokens": "0",
}


SUMMARY_FLAGS = ("archived", "pinned", "hidden")


def summary_column(name: str) -> str:
    """One column of :meth:`SessionDB._summary_columns`: as the summary's field takes it
    (see :meth:`~hermes_state.models.SessionSummary.from_listing`)."""
    if name in SUMMARY_DEFAULTS:
        return f"COALESCE(s.{name}, {SUMMARY_DEFAULTS[name]}) AS {name}"
    if name in SUMMARY_FLAGS:
        return f"(COALESCE(s.{name}, 0) != 0) AS {name}"
    return f"s.{name}"


TIP_FIELDS = (
    "id",
    "ended_at",
    "end_reason",
    "message_count",
    "tool_call_count",
    "title",
    "model",
    "system_prompt",
    "cwd",
)


def rows_of(
    conn: sqlite3.Connection, ids: list[str], rules: Rules, file_pins: frozenset[str], project: bool,
    include_delegates: bool, columns: str,
) -> list[dict]:
    """The listing's rows of these sessions, in this order (with their previews and last
    activity, finished as every listing finishes them); ids not found are left out."""
    if not ids:
        return []
    by_id: dict[str, dict] = {}
    for chunk in chunked(ids):
        for row in conn.execute(
            f"SELECT {columns}, {rules.preview_sql()} AS _preview_raw, {rules.last_active_sql()} AS last_active"
            f" FROM sessions s WHERE s.id IN ({placeholders(len(chunk))})",
            padded_values(chunk),
        ).fetchall():
            data = rich_row(row)
            by_id[data["id"]] = data
    rows = [by_id[sid] for sid in ids if sid in by_id]
    return finish_listing(conn, rows, rules, file_pins, project, include_delegates, columns)


def finish_listing(
    conn: sqlite3.Connection, rows: list[dict], rules: Rules, file_pins: frozenset[str],
    project: bool, include_delegates: bool, columns: str = "s.*", tips: dict[str, str] | None = None,
) -> list[dict]:
    """What every listing does to its rows: pins from the settings file, compression roots
    shown at their tip (LI-5; ``tips``: those already known), delegate runs marked."""
    for row in rows:
        row.pop("_chain_last_active", None)
        if file_pins and "pinned" not in row:
            row["pinned"] = int(row["id"] in file_pins)
    if project:
        rows = project_tips(conn, rows, rules, columns, tips)
    if rows and "last_read_at" in rows[0]:
        # Upstream v30's rows say whether each is unread (the root's watermark -- lineage
        # stamped -- against the activity shown); only where the store keeps the watermark.
        for row in rows:
            row["unread"] = is_unread(row.get("last_read_at"), row.get("last_active"), row.get("started_at"))
    if include_delegates and rows:
        ids = [row["id"] for row in rows]
        marks = ",".join("?" for _ in ids)
        delegates = {
            r[0] for r in conn.execute(
                f"SELECT s.id FROM sessions s WHERE s.id IN ({marks}) AND {rules.delegate('s')}", ids
            )
        }
        for row in rows:
            row["_delegate"] = int(row["id"] in delegates)
    return rows


def project_tips(
    conn: sqlite3.Connection, rows: list[dict], rules: Rules, columns: str = "s.*",
    tips: dict[str, str] | None = None,
) -> list[dict]:
    """LI-5: show each compression root as its live tip (``tips``: those already known; the
    others found by :func:`straight_tips`, a fork by compression_tip). The tips' rows are
    read by one statement."""
    roots = [row["id"] for row in rows if row.get("end_reason") == "compression"]
    if not roots:
        return rows
    known = dict(tips) if tips is not None else straight_tips(conn, roots)
    for root in roots:
        if root not in known:
            known[root] = lineage_compression_tip(conn, root)
    wanted = sorted({known[root] for root in roots if known[root] != root})
    if not wanted:
        return rows
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(
        f"SELECT {columns}, {rules.preview_sql()} AS _preview_raw, {rules.last_active_sql()} AS last_active "
        f"FROM sessions s WHERE s.id IN ({placeholders(len(wanted))})",
        padded_values(wanted),
    )
    names = [d[0] for d in cursor.description]
    where = names.index("id")
    found = {row[where]: rich_tuple(names, row) for row in cursor.fetchall()}
    out = []
    for row in rows:
        tip_data = found.get(known.get(row["id"], row["id"])) if row.get("end_reason") == "compression" else None
        if tip_data is None:
            out.append(row)
            continue
        projected = dict(row)
        for field in TIP_FIELDS + ("last_active", "preview"):
            if field in tip_data:
                projected[field] = tip_data[field]
        projected["_lineage_root_id"] = row["id"]
        out.append(projected)
    return out
