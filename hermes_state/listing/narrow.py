"""What narrows a list by the conversations' own fields: time, title, model, cost, ...

:class:`Narrow` is one field of :class:`~hermes_state.listing.query.ListQuery` (so it is part
of every cache key of a list) holding the filters of upstream's ``hermes sessions``
option group; :func:`narrow_clauses` is their SQL, added by the listing engine to the WHERE
clause every list, count, ranking and workspace count is read with.

What each filter is matched against
-----------------------------------
* the **time window** (``since`` / ``until``) is the conversation's **last activity**, the
  instant the list's "Last Active" column shows: the newest visible message or activity stamp
  along the whole compression chain (a conversation compressed a month ago and continued
  today is active today). A conversation is in the window when that instant is in
  ``[since, until]``. (Last activity rather than start: "the last 7 days" finds the
  conversation someone is still working in, and "until 30 days ago" -- an archive or a prune
  of old conversations -- never takes one that is still going on.)
* every other filter is matched against the row the list has for the conversation (a
  compression chain's root, as ``min_messages`` always was): ``title`` a substring of the
  title, ``model`` a substring of the model, ``branch`` a substring of the git branch (all
  case-insensitive for ASCII, as SQLite's LIKE), ``provider`` the billing provider
  (case-insensitive), ``cwd`` the working directory or one under it, ``end_reason`` exactly,
  tokens input + output, cost the actual cost where known else the estimate (none: 0), and
  the counters as stored (none: 0). Bounds are inclusive.

A filter on a column the store does not have (``git_branch`` before v30, ``cwd`` before
v16, ``title`` or the billing columns before v5) matches nothing; :func:`missing_columns`
names them so a command can say so instead of answering with an empty list.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Callable

from ..query import escape_like
from ..sql_ids import in_chunks
from ..visibility import Rules, continuation_sql


@dataclass(frozen=True)
class Narrow:
    """The conversation filters of a list (see the module docstring). Frozen and hashable;
    the default narrows nothing."""

    since: float | None = None
    until: float | None = None
    title: str | None = None
    model: str | None = None
    provider: str | None = None
    cwd: str | None = None
    branch: str | None = None
    end_reason: str | None = None
    max_messages: int | None = None
    min_tokens: int | None = None
    max_tokens: int | None = None
    min_cost: float | None = None
    max_cost: float | None = None
    min_tool_calls: int | None = None
    max_tool_calls: int | None = None

    def __post_init__(self) -> None:
        # Equal filters are equal keys: an empty text narrows nothing, a path's last "/" is
        # not part of it, numbers are numbers.
        for name in ("title", "model", "provider", "branch", "end_reason"):
            value = getattr(self, name)
            if value is not None and not str(value):
                object.__setattr__(self, name, None)
        if self.cwd is not None:
            path = str(self.cwd)
            stripped = path.rstrip("/") or "/"
            object.__setattr__(self, "cwd", stripped if path else None)
        for name in ("since", "until", "min_cost", "max_cost"):
            value = getattr(self, name)
            if value is not None and type(value) is not float:
                object.__setattr__(self, name, float(value))
        for name in ("max_messages", "min_tokens", "max_tokens", "min_tool_calls", "max_tool_calls"):
            value = getattr(self, name)
            if value is not None and type(value) is not int:
                object.__setattr__(self, name, int(value))

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    def with_(self, **changes: Any) -> "Narrow":
        return replace(self, **changes)

    @property
    def windowed(self) -> bool:
        return self.since is not None or self.until is not None


#: The default: nothing narrowed.
NO_NARROW = Narrow()


#: The column each filter needs (cost needs only the estimate; the actual cost is used where
#: the store has it).
NEEDS: dict[str, tuple[str, ...]] = {
    "title": ("title",),
    "model": ("model",),
    "provider": ("billing_provider",),
    "cwd": ("cwd",),
    "branch": ("git_branch",),
    "end_reason": ("end_reason",),
    "max_messages": ("message_count",),
    "min_tokens": ("input_tokens", "output_tokens"),
    "max_tokens": ("input_tokens", "output_tokens"),
    "min_cost": ("estimated_cost_usd",),
    "max_cost": ("estimated_cost_usd",),
    "min_tool_calls": ("tool_call_count",),
    "max_tool_calls": ("tool_call_count",),
}


def missing_columns(narrow: Narrow, has_column: Callable[[str], bool]) -> list[tuple[str, str]]:
    """``(filter, column)`` for each filter set in ``narrow`` whose column the store lacks."""
    out = []
    for name, columns in NEEDS.items():
        if getattr(narrow, name) is None:
            continue
        for column in columns:
            if not has_column(column):
                out.append((name, column))
                break
    return out


def conversation_last_active_sql(rules: Rules, s: str = "s") -> str:
    """A listed row's conversation's last activity: its own (see
    :meth:`~hermes_state.visibility.Rules.last_active_sql`), or for a compression root the
    newest along its chain of continuations (walked only for those: one correlated walk)."""
    walk = (
        f"(WITH RECURSIVE nw_chain(cur, depth) AS (SELECT {s}.id, 0 UNION ALL"
        " SELECT nw_c.id, nw_chain.depth + 1 FROM nw_chain"
        " JOIN sessions nw_p ON nw_p.id = nw_chain.cur"
        " JOIN sessions nw_c ON nw_c.parent_session_id = nw_p.id"
        f" WHERE {continuation_sql('nw_p', 'nw_c')} AND nw_chain.depth < 100)"
        f" SELECT MAX({rules.last_active_sql('nw_s')}) FROM nw_chain JOIN sessions nw_s ON nw_s.id = nw_chain.cur)"
    )
    return f"(CASE WHEN {s}.end_reason = 'compression' THEN {walk} ELSE {rules.last_active_sql(s)} END)"


def narrow_clauses(
    narrow: Narrow, rules: Rules, has_column: Callable[[str], bool], s: str = "s",
) -> tuple[list[str], list[Any]]:
    """The WHERE terms (AND-ed) and their parameters of ``narrow`` over rows aliased ``s``.
    The cheap tests on the row's own columns come first; the time window, which reads
    messages, last."""
    if not narrow:
        return [], []
    clauses: list[str] = []
    params: list[Any] = []
    missing = {name for name, _column in missing_columns(narrow, has_column)}

    def add(name: str, sql: str, *values: Any) -> None:
        if getattr(narrow, name) is None:
            return
        if name in missing:
            clauses.append("0")  # (the command says which column is missing)
            return
        clauses.append(sql)
        params.extend(values)

    def like(value: str | None) -> str:
        return f"%{escape_like(value or '')}%"

    add("end_reason", f"{s}.end_reason = ?", narrow.end_reason)
    add("provider", f"lower({s}.billing_provider) = lower(?)", narrow.provider)
    add("title", f"{s}.title LIKE ? ESCAPE '\\'", like(narrow.title))
    add("model", f"{s}.model LIKE ? ESCAPE '\\'", like(narrow.model))
    add("branch", f"{s}.git_branch LIKE ? ESCAPE '\\'", like(narrow.branch))
    if narrow.cwd is not None:
        under = "/%" if narrow.cwd != "/" else "%"
        add("cwd", f"({s}.cwd = ? OR {s}.cwd LIKE ? ESCAPE '\\')",
            narrow.cwd, escape_like(narrow.cwd if narrow.cwd != "/" else "") + under)
    add("max_messages", f"COALESCE({s}.message_count, 0) <= ?", narrow.max_messages)
    tokens = f"(COALESCE({s}.input_tokens, 0) + COALESCE({s}.output_tokens, 0))"
    add("min_tokens", f"{tokens} >= ?", narrow.min_tokens)
    add("max_tokens", f"{tokens} <= ?", narrow.max_tokens)
    actual = f"{s}.actual_cost_usd, " if has_column("actual_cost_usd") else ""
    cost = f"COALESCE({actual}{s}.estimated_cost_usd, 0)"
    add("min_cost", f"{cost} >= ?", narrow.min_cost)
    add("max_cost", f"{cost} <= ?", narrow.max_cost)
    add("min_tool_calls", f"COALESCE({s}.tool_call_count, 0) >= ?", narrow.min_tool_calls)
    add("max_tool_calls", f"COALESCE({s}.tool_call_count, 0) <= ?", narrow.max_tool_calls)
    if narrow.windowed:
        last = conversation_last_active_sql(rules, s)
        if narrow.since is not None and narrow.until is not None:
            clauses.append(f"{last} BETWEEN ? AND ?")
            params.extend([narrow.since, narrow.until])
        elif narrow.since is not None:
            clauses.append(f"{last} >= ?")
            params.append(narrow.since)
        else:
            clauses.append(f"{last} <= ?")
            params.append(narrow.until)
    return clauses, params


def narrowed_ids(
    conn, narrow: Narrow, rules: Rules, has_column: Callable[[str], bool], session_ids: list[str],
) -> set[str]:
    """Those of ``session_ids`` whose rows ``narrow`` keeps (each read as a listed row: a
    search hit's conversation root, a title match), a statement's worth of ids at a time (:mod:`hermes_state.sql_ids`)."""
    ids = list(dict.fromkeys(session_ids))
    if not narrow:
        return set(ids)
    clauses, params = narrow_clauses(narrow, rules, has_column)
    where = " AND ".join(clauses)
    kept: set[str] = set()
    for chunk, marks in in_chunks(ids):
        kept.update(row[0] for row in conn.execute(
            f"SELECT s.id FROM sessions s WHERE s.id IN ({marks}) AND {where}", [*chunk, *params]))
    return kept
