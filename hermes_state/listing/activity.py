"""The list by last activity: which conversations the newest messages belong to.

Ordering every conversation by its last activity costs a read of every session; the first
pages need only the conversations of the newest messages. These helpers walk the newest
messages, gather the conversations they belong to, and page through them; what is too deep
for the walk falls back to the general query (see :class:`~hermes_state.listing.engine.Lister`).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Iterable

from ..preview import compute_preview
from ..query import escape_like
from ..sql_ids import chunked
from ..visibility import Rules, continuation_sql
from .recency import RecencyWalk as _RecencyWalk


#: The fast last-activity path serves pages ending within this many conversations; deeper
#: pages use the general query (BR-10).
ACTIVITY_WALK_ROWS = 1000


#: New sessions gathered by the walk before their conversations are looked up, at least.
ACTIVITY_WALK_BATCH = 8


#: A walk that took this many sessions per conversation wanted (plus a few hundred) without
#: filling the page gives up: a selective filter (the archived view, one source) lists few
#: conversations, which the general query ranks faster than the walk would find them.
ACTIVITY_WALK_SELECTIVE = 10


#: ... or, in a large store, this share of its sessions (1/40): the general query ranks every
#: session the filter lists, after scanning them all for it (0.15-0.7 s at 250k sessions for a
#: source or a workspace with 1-7 % of the conversations; 14-94 ms by the walk), and a walk of
#: 1/40 of them that finds too few costs ~0.1 s more (the archived view: 0.47 -> 0.61 s).
#: At 50k sessions the floor above is the larger.
ACTIVITY_WALK_SHARE = 40


#: More candidates than this (bound parameters of one statement) go to the general query.
ACTIVITY_MAX_CANDIDATES = 16_384


def activity_candidates(
    conn: sqlite3.Connection, walk: _RecencyWalk, met: "MetConversations", wanted: int,
    pinned: Iterable[str] = (), guess_ok: bool = False,
) -> float | None:
    """Find the listed conversations (compression roots that ``met`` lists) that can be among
    the ``wanted`` most recently active, without ranking every session (BR-10): they are read
    into ``met``. Returns ``floor``.

    Sessions are taken from ``walk`` (newest message first) until ``wanted`` conversations are
    found, and then every session with the same bound. ``floor`` is the last one's bound: a
    session not taken has no message newer than it, so its conversation can only rank higher
    through a start or a ``last_activity_at`` at or after ``floor`` -- both looked up by index
    and added, as are the ``pinned`` sessions (pinned conversations come first whatever their
    activity; they count towards ``wanted``). A conversation taken may still rank below
    ``floor`` (its newest messages rewound): :func:`activity_page` checks the page against
    ``floor``.

    None: the walk went through every session it keeps, or took ``ACTIVITY_WALK_SELECTIVE``
    sessions per conversation wanted (in a large store, a share of its sessions:
    ``ACTIVITY_WALK_SHARE``), without finding ``wanted`` conversations (a small store,
    one of mostly empty sessions, a selective filter): the general query answers.
    """
    most_seen = ACTIVITY_WALK_SELECTIVE * wanted + 256
    shared = not ACTIVITY_WALK_SHARE  # (the store's share looked at, once, when reached)
    # Pinned conversations come first whatever their activity: looked up with the first
    # batch, they count towards the page (the page check in activity_page holds either way).
    pins = list(dict.fromkeys(pinned))
    walk.refresh(conn, guess_ok=guess_ok)
    order = walk.order
    taken = 0
    while len(met.rows) < wanted or taken == 0:
        # Ask for enough new sessions to fill the set at the rate seen so far (some are
        # internal runs, continuations of a conversation already found, ...); at first the rest
        # of the page after the pinned conversations plus a quarter (usually one look-up), then
        # while none was found twice as many as taken (a selective filter: few rounds).
        found = len(met.rows)
        if found and taken:
            need = int((wanted - found) * 1.1 * taken / found) + 1
        else:
            first = max(wanted - len(pins), 0)
            need = max(first + first // 4 + 4, taken)
        need = max(ACTIVITY_WALK_BATCH, min(need, most_seen + 1 - taken))
        batch = [sid for _negated, sid in order[taken:taken + need]]
        taken += len(batch)
        if batch or pins:
            met.read(conn, batch + pins)
            pins = []
        if taken > most_seen and not shared and taken < len(order):
            # About to give up: in a large store, walk on through a share of its sessions
            # (how many it has had: the rowid only grows; one seek, only here).
            shared = True
            sessions = conn.execute("SELECT MAX(rowid) FROM sessions").fetchone()[0] or 0
            most_seen = max(most_seen, sessions // ACTIVITY_WALK_SHARE)
        if taken >= len(order) or taken > most_seen:
            break
    if len(met.rows) < wanted or not taken:
        return None
    floor = -order[taken - 1][0]
    looked = {sid for _negated, sid in order[:taken]} | set(pinned)
    # Sessions tied with the last one taken are as recent: take them too. Then every session
    # not taken has a bound below the floor -- those not kept too, unless the walk went
    # through all it keeps with the floor still within their bound.
    tied = []
    while taken < len(order) and -order[taken][0] >= floor:
        tied.append(order[taken][1])
        taken += 1
    if taken >= len(order) and walk.bound >= floor:
        return None
    extra = tied + [sid for sid in dict.fromkeys(started_after(conn, floor, met.rules)) if sid not in looked]
    if extra:
        met.read(conn, list(dict.fromkeys(extra)))
    return floor


class MetConversations:
    """The listed conversations the last-activity walk met (BR-10), each read once, by the
    statement that checks it is listed, with all that ranking it and showing it needs: the
    listing's ``columns``, its own last activity, its pinned rank and its start.

    ``rows`` maps each conversation's id to that row: the columns (:attr:`names`), then its
    own last activity, its pinned rank, its start, whether it ended with ``compression`` (a
    chain to walk), with ``previews`` its preview, and its id. A session met that is not listed
    may continue a conversation after a compression: the conversation is followed back to its
    root, which is read in its place when listed.

    ``previews``: read each conversation's preview with it (for the first page, whose
    conversations are nearly all those met: one statement fewer than reading the page's
    previews apart)."""

    def __init__(
        self, columns: str, where: str, params: list[Any], rules: Rules, pinned_rank: str | None,
        previews: bool = False,
    ) -> None:
        filters = where[len("WHERE "):] if where else "1"
        self.rules = rules
        self.params = list(params)
        self.rows: dict[str, tuple] = {}
        #: Sessions read and not listed (a continuation, a delegate run, filtered out): the
        #: snapshot does not change, so they are not read again when a walk up meets them.
        self.refused: set[str] = set()
        self.names: list[str] = []
        self.previews = previews
        #: The values each row carries after the listing's columns (and before its id).
        self.extra = 5 if previews else 4
        preview = f", {rules.preview_sql()}" if previews else ""
        self._select = (
            f"SELECT {columns}, {rules.last_active_sql()}, {pinned_rank or '0'}, s.started_at, "
            f"s.end_reason = 'compression'{preview}, s.id FROM sessions s WHERE s.id IN ({{marks}}) AND {filters}"
        )

    def read(self, conn: sqlite3.Connection, session_ids: list[str]) -> None:
        """Read those of ``session_ids`` (not read yet) that are listed, then the listed
        conversations the others continue."""
        rows, refused = self.rows, self.refused
        unread = [sid for sid in dict.fromkeys(session_ids) if sid not in rows and sid not in refused]
        listed = self._read_listed(conn, unread)
        unlisted = [sid for sid in unread if sid not in listed]
        refused.update(unlisted)
        if unlisted:
            roots = [sid for sid in continued_roots(conn, unlisted) if sid not in rows and sid not in refused]
            if roots:
                listed = self._read_listed(conn, roots)
                refused.update(sid for sid in roots if sid not in listed)

    def _read_listed(self, conn: sqlite3.Connection, session_ids: list[str]) -> set[str]:
        found: set[str] = set()
        cursor = conn.cursor()
        cursor.row_factory = None
        for chunk in chunked(session_ids):
            cursor.execute(self._select.format(marks=placeholders(len(chunk))), padded_values(chunk) + self.params)
            if not self.names:
                self.names = [d[0] for d in cursor.description][:-self.extra - 1]  # and the id
            for row in cursor.fetchall():
                self.rows[row[-1]] = row
                found.add(row[-1])
        return found


def continued_roots(conn: sqlite3.Connection, session_ids: list[str]) -> list[str]:
    """The sessions that ``session_ids`` continue after a compression, followed back through
    every continuation (the roots among them are the conversations listed)."""
    out: list[str] = []
    cont = continuation_sql("p", "c")
    cursor = conn.cursor()
    cursor.row_factory = None
    for chunk in chunked(session_ids):
        # The walk up starts at the parents (most sessions have none).
        cursor.execute(
            # UNION, no depth: each session is visited once, so a chain of any length is
            # walked to its root (a cap of 100 once listed a 150-segment chat at #101) and a
            # loop of parent links ends.
            "WITH RECURSIVE up(cur) AS ("
            " SELECT p.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id"
            f" WHERE c.id IN ({placeholders(len(chunk))}) AND {cont}"
            " UNION"
            " SELECT p.id FROM up JOIN sessions c ON c.id = up.cur"
            " JOIN sessions p ON p.id = c.parent_session_id"
            f" WHERE {cont})"
            " SELECT cur FROM up",
            padded_values(chunk),
        )
        out.extend(row[0] for row in cursor.fetchall())
    return list(dict.fromkeys(out))


def started_after(conn: sqlite3.Connection, floor: float, rules: Rules) -> list[str]:
    """Sessions with a start or a ``last_activity_at`` at or after ``floor`` (by index)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    if rules.last_activity_at:
        # One statement (the two index ranges OR-ed), each row read once.
        cursor.execute(
            "SELECT id FROM sessions WHERE started_at >= ?1 OR COALESCE(last_activity_at, started_at) >= ?1",
            (floor,),
        )
    else:
        cursor.execute("SELECT id FROM sessions WHERE started_at >= ?", (floor,))
    return [row[0] for row in cursor.fetchall()]


def activity_page(
    conn: sqlite3.Connection, met: MetConversations, floor: float, pins: frozenset[str], limit: int,
    offset: int, rules: Rules,
) -> tuple[list[dict], dict[str, str]] | int | None:
    """Rows ``offset`` … ``offset + limit`` of the conversations ``met`` read, ranked as
    :func:`chain_list_sql` ranks by activity: pinned first, then the newest activity along
    the compression chain (then start, then id); and the compression tips the ranking walked
    to.

    Only a compression root has a chain to walk (continuations follow a segment that ended
    with ``compression``): one statement walks those few; any other conversation's chain
    activity is its own, read with its row. The ranking is made here, ordering values as
    SQLite orders them (:func:`sqlite_order`); the page's previews were read with its rows
    (``met.previews``) or are read by one more statement. A chain that goes straight (one
    continuation per segment, no cycle) ends at the tip
    :func:`~hermes_state.lineage.compression_tip` would find; other chains are left to it.

    A number when the page cannot be vouched for: its last row is neither pinned nor active
    at or after ``floor``, so a conversation the walk did not see might rank above it; the
    number of candidates below the floor is how many more conversations the walk should
    find. None: too many candidates."""
    rows = met.rows
    if len(rows) > ACTIVITY_MAX_CANDIDATES:
        return None
    own, pin, started, compressed = range(len(met.names), len(met.names) + 4)
    chains = chain_activity(conn, sorted(sid for sid, row in rows.items() if row[compressed]), rules)
    ranking = []
    for sid, row in rows.items():
        last, members = chains.get(sid, (None, None))
        if last is None:
            last = row[own] if row[own] is not None else row[started]
        ranking.append((sid, last, members, row[pin], row[started]))
    if all(type(r[1]) in NUMBERS and type(r[3]) in NUMBERS and type(r[4]) in NUMBERS for r in ranking):
        ranking.sort(key=lambda r: (r[3], r[1], r[4], r[0]), reverse=True)  # as SQLite would, quicker
    else:
        ranking.sort(key=lambda r: (sqlite_order(r[3]), sqlite_order(r[1]), sqlite_order(r[4]),
                                    sqlite_order(r[0])), reverse=True)
    ranked = ranking[offset:offset + limit]
    if len(ranked) < limit:
        return None  # the walk found enough conversations, so this cannot be; be safe

    def below(sid: str, act: Any) -> bool:
        return sid not in pins and not (isinstance(act, (int, float)) and act >= floor)

    if below(ranked[-1][0], ranked[-1][1]):
        # Every candidate below the floor took the place of one the walk has not reached.
        return sum(1 for sid, act, *_rest in ranking if below(sid, act))
    if met.previews:
        previews = {sid: rows[sid][compressed + 1] for sid, *_rest in ranked}
    else:
        page = [entry[0] for entry in ranked]
        cursor = conn.cursor()
        cursor.row_factory = None
        cursor.execute(
            f"SELECT s.id, {rules.preview_sql()} FROM sessions s WHERE s.id IN ({placeholders(len(page))})",
            padded_values(page),
        )
        previews = dict(cursor.fetchall())
    names = met.names
    tips: dict[str, str] = {}
    out = []
    for sid, chain_last, members, _pin, _started in ranked:
        row = rows[sid]
        data = dict(zip(names, row))  # the columns (zip stops at the names)
        if row[compressed]:
            data["last_active"] = row[own]  # the tip's, once projected
            if members is not None and (tip := straight_tip(members)) is not None:
                tips[sid] = tip
        else:
            data["last_active"] = chain_last
        data["preview"] = compute_preview(previews.get(sid))
        out.append(data)
    return out, tips


def chain_activity(conn: sqlite3.Connection, roots: list[str], rules: Rules) -> dict[str, tuple[Any, str]]:
    """Each compression root's newest activity along its chain and the chain's members (a
    JSON array of ``[parent, id]``; see :func:`straight_tip`)."""
    out: dict[str, tuple[Any, str]] = {}
    cursor = conn.cursor()
    cursor.row_factory = None
    for chunk in chunked(roots):
        cursor.execute(
            chain_cte(f"WHERE s.id IN ({placeholders(len(chunk))}) AND s.end_reason = 'compression'", rules,
                       "json_group_array(json_array(chain.parent_id, chain.cur_id))")
            + "SELECT root_id, last, members FROM activity",
            padded_values(chunk),
        )
        out.update((root, (last, members)) for root, last, members in cursor.fetchall())
    return out


NUMBERS = (int, float)


def sqlite_order(value: Any) -> tuple[int, Any]:
    """A sort key ordering values as SQLite's ORDER BY does: NULL, then numbers (integers and
    reals together), then text (by code point: UTF-8's byte order), then blobs."""
    if value is None:
        return (0, 0)
    if isinstance(value, NUMBERS):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, bytes(value))


def straight_tips(conn: sqlite3.Connection, roots: list[str]) -> dict[str, str]:
    """The tip of each compression root whose chain goes straight (see :func:`straight_tip`),
    all walked by one statement instead of two look-ups per segment and root."""
    if not roots:
        return {}
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(
        "WITH RECURSIVE chain(root_id, cur_id, parent_id) AS ("
        f" SELECT s.id, s.id, NULL FROM sessions s WHERE s.id IN ({placeholders(len(roots))})"
        " UNION"
        " SELECT chain.root_id, c.id, p.id FROM chain"
        " JOIN sessions p ON p.id = chain.cur_id"
        " JOIN sessions c ON c.parent_session_id = p.id"
        f" WHERE {continuation_sql('p', 'c')})"
        " SELECT root_id, json_group_array(json_array(parent_id, cur_id)) FROM chain GROUP BY root_id",
        padded_values(roots),
    )
    return {root: tip for root, members in cursor.fetchall() if (tip := straight_tip(members)) is not None}


def straight_tip(members: str) -> str | None:
    """The last segment of a chain (a JSON array of ``[parent, id]``, the root's parent null)
    that goes straight: each segment continued by at most one, none twice. None otherwise (a
    fork, a cycle)."""
    try:
        pairs = json.loads(members)
    except ValueError:
        return None
    ids = [sid for _parent, sid in pairs]
    if len(set(ids)) != len(ids):
        return None
    next_of: dict[Any, Any] = {}
    root = None
    for parent, sid in pairs:
        if parent is None:
            root = sid
        elif parent in next_of:
            return None  # a fork
        else:
            next_of[parent] = sid
    if root is None:
        return None
    current, steps = root, 1
    while current in next_of:
        current = next_of[current]
        steps += 1
    return current if steps == len(pairs) else None


def placeholders(n: int) -> str:
    """``?`` placeholders for an IN list of ``n`` values, padded (see :func:`padded_values`)."""
    return ",".join("?" * padded_size(n))


def padded_size(n: int) -> int:
    if n <= 256:
        return max(16, -(-n // 16) * 16)
    size = 512
    while size < n:
        size *= 2
    return size


def padded_values(values: list[Any]) -> list[Any]:
    """``values`` padded with NULLs (which no ``IN`` matches) to a multiple of 16 (a power of
    two past 256): a few statement texts instead of one per length, so the connection's
    prepared statements are reused (preparing the ranking query costs more than running it)."""
    return values + [None] * (padded_size(len(values)) - len(values))


def chain_cte(where: str, rules: Rules, members: str | None = None) -> str:
    """``chain`` (each listed row of ``where`` and its compression continuations, forward) and
    ``activity`` (each listed row's newest activity along its chain, and ``members`` when
    given: an aggregate over the chain's rows).

    Each chain row carries what the next step and the activity need of its session (how it
    ended, when, its own last activity), read with the row: the walk looks a session's
    continuations up only when it ended ``compression`` (one index seek, none for the other
    sessions), and no session is read twice. Reading each member again by id, twice, took
    half of a page deep in the list by last activity (0.5 of 1.0 s at 1M messages)."""
    return (
        # UNION and no depth: a chain of any length is walked whole (a cap of 100 once
        # stopped a 150-segment chat at #101) and a loop of parent links ends.
        "WITH RECURSIVE chain(root_id, cur_id, parent_id, end_reason, ended_at, last) AS ("
        f" SELECT s.id, s.id, NULL, s.end_reason, s.ended_at, {rules.last_active_sql('s')} FROM sessions s {where}"
        " UNION"
        f" SELECT chain.root_id, c.id, chain.cur_id, c.end_reason, c.ended_at, {rules.last_active_sql('c')}"
        " FROM chain JOIN sessions c ON c.parent_session_id = chain.cur_id"
        f" WHERE {continuation_sql('chain', 'c')}),"
        f" activity(root_id, last{', members' if members else ''}) AS ("
        f" SELECT chain.root_id, MAX(chain.last){', ' + members if members else ''}"
        " FROM chain GROUP BY chain.root_id) "
    )


def activity_order(pinned_first: str, activity: str = "COALESCE(a.last, s.started_at)") -> str:
    """The order by last activity (BR-10): pinned first, newest chain activity, then start."""
    return f" ORDER BY {pinned_first}{activity} DESC, s.started_at DESC, s.id DESC"


def chain_list_sql(
    where: str, params: list[Any], needle: str, by_activity: bool, rules: Rules, pinned_first: str,
    columns: str = "s.*", previews: bool = True,
) -> tuple[str, list[Any]]:
    """The listing query walking each listed row's compression chain forward: for ordering
    by the chain's newest activity and for matching ``needle`` against any id along it.
    Without ``previews``: ``columns`` and the chain's last activity only."""
    own = f", {rules.preview_sql()} AS _preview_raw, {rules.last_active_sql()} AS last_active" if previews else ""
    select = (
        f"SELECT {columns}{own}, COALESCE(a.last, s.started_at) AS _chain_last_active "
        "FROM sessions s JOIN activity a ON a.root_id = s.id"
    )
    all_params = list(params)
    if needle:
        select += (
            " WHERE EXISTS (SELECT 1 FROM chain q WHERE q.root_id = s.id"
            " AND lower(q.cur_id) LIKE ? ESCAPE '\\')"
        )
        all_params.append("%" + escape_like(needle) + "%")
    order = activity_order(pinned_first) if by_activity else f" ORDER BY {pinned_first}s.started_at DESC"
    return chain_cte(where, rules) + select + order, all_params
