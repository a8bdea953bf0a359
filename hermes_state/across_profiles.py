"""Reading several profiles' stores as one (PF-3, PF-5, PF-6).

Each store keeps every guarantee of its own (it is opened by the same policy as a store on
its own: a read never migrates, a newer schema is never written); what this module adds is
the two things only a reader of several stores needs:

* **Opening each, apart.** :func:`open_each` opens every profile's store and keeps the ones
  that open; one that does not (corrupt, newer than this program knows, locked past the
  wait, unreadable) is left out with one line saying which and why -- the others still work.
* **One order over all of them.** Ids may collide across profiles, so a row is known by
  ``(profile, id)``; the rows of the stores come out as one list by the list's own order key
  (:func:`merge_listed`), and search answers as one answer by the score their hits carry,
  every store's message-level hits before any conversation found across messages
  (:func:`best_head`: the one place hits of several stores are ranked together).

Each merge is a k-way merge of lists each store already gives in order, and it keeps each
store's own order (a store's rows are never reordered among themselves, even where a key is
missing or ties). A list reads no more of a store than it shows; a search reads a store a
page ahead (its next conversation must be known to be ranked against the others').

Ranking hits of several stores together is a heuristic: each store scores its hits with its
own word statistics (bm25's rarity is the store's), blended with recency; the scores are
compared as they come.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, Iterator, Sequence, TypeVar

from .profiles import Profile

T = TypeVar("T")
S = TypeVar("S")


@dataclass
class Opened(Generic[S]):
    """A profile whose store opened, and the store."""

    profile: Profile
    store: S


@dataclass(frozen=True)
class LeftOut:
    """A profile whose store could not be read, and why (one line)."""

    profile: Profile
    reason: str

    def line(self) -> str:
        where = "" if str(self.profile.db_path) in self.reason else f" ({self.profile.db_path})"
        return f"profile '{self.profile.name}'{where} left out: {self.reason}"


def open_each(
    profiles: Iterable[Profile], opener: Callable[[Profile], S],
) -> tuple[list[Opened[S]], list[LeftOut]]:
    """Open each profile's store with ``opener``; a profile whose open raises is left out
    with the first line of what it raised. Nothing opened is lost on the way: the caller
    closes what it got."""
    opened: list[Opened[S]] = []
    left: list[LeftOut] = []
    for profile in profiles:
        try:
            opened.append(Opened(profile, opener(profile)))
        except Exception as exc:  # (one profile's failure, whatever it is, is that profile's)
            left.append(LeftOut(profile, first_line(exc)))
    return opened, left


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _number(value: Any) -> float:
    """A stored time or score as a number to order by (a value that is not one sorts last)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("-inf")


def list_key(row: Any, by_activity: bool) -> tuple[int, float]:
    """Where a listed row goes in the list of every profile: pinned conversations first,
    then the newest start (or the newest last activity, ``by_activity``) first -- the order
    each store lists its own rows in. Rows are dicts (``hermes sessions list``) or
    :class:`~hermes_state.models.SessionSummary`-like objects."""
    get = row.get if isinstance(row, dict) else (lambda name: getattr(row, name, None))
    pinned = 1 if get("pinned") else 0
    when = _number(get("last_active") if by_activity else get("started_at"))
    if by_activity and when == float("-inf"):
        when = _number(get("started_at"))
    return (-pinned, -when)


def merge_listed(
    streams: Sequence[tuple[T, Iterable[Any]]], *, by_activity: bool,
) -> Iterator[tuple[T, Any]]:
    """The rows of several stores' lists as one list: ``(owner, row)`` in :func:`list_key`
    order, each store's rows in their own order. ``owner`` is whatever names the store
    (its profile)."""

    def tagged(index: int, owner: T, rows: Iterable[Any]) -> Iterator[tuple[tuple, int, T, Any]]:
        for row in rows:
            yield list_key(row, by_activity), index, owner, row

    merged = heapq.merge(*(tagged(i, owner, rows) for i, (owner, rows) in enumerate(streams)))
    for _key, _index, owner, row in merged:
        yield owner, row


def hit_key(hit: Any) -> tuple[int, int, float]:
    """Where a search hit goes in an answer over several stores: a hit of a message holding
    the words before one of a conversation found across messages (SR-17: each store's answer
    is so; their scores are not on one scale -- bm25 against a share of the query's words),
    then scored hits by their score (higher first), then hits ranked by recency alone by
    their time (newest first) -- the order each store's own answer has."""
    spread = 1 if _number(getattr(hit, "across", 0) or 0) > 0 else 0
    score = getattr(hit, "score", None)
    if score is not None:
        return (spread, 0, -_number(score))
    return (spread, 1, -_number(getattr(hit, "timestamp", None)))


def best_head(heads: Sequence[tuple[T, Any]]) -> T | None:
    """Which store's next item comes next in an answer over several stores: ``heads`` holds
    each store's next item (owner, item) -- a hit, or a conversation by its best hit -- and
    the one whose :func:`hit_key` ranks first wins, the earlier store on a tie. Taking one
    item at a time keeps each store's own order (its ranking may not be :func:`hit_key`'s).
    The one rule that ranks hits of several stores together: a change in how a store scores
    its hits is followed here through the score. None when no store has an item."""
    best: tuple | None = None
    for index, (owner, item) in enumerate(heads):
        key = (hit_key(item), index)
        if best is None or key < best[0]:
            best = (key, owner)
    return None if best is None else best[1]


def merge_ranked(
    answers: Sequence[tuple[T, Sequence[Any]]], *, key_of: Callable[[Any], Any] = lambda item: item,
    limit: int | None = None,
) -> list[tuple[T, Any]]:
    """Several stores' ranked answers as one, ``(owner, item)``: the next item is always the
    best head (:func:`best_head`, by ``key_of(item)`` -- a conversation's best hit), each
    store's items in their own order; at most ``limit`` items."""
    waiting = {owner: list(items) for owner, items in answers}
    merged: list[tuple[T, Any]] = []
    while limit is None or len(merged) < limit:
        owner = best_head([(owner, key_of(items[0])) for owner, items in waiting.items() if items])
        if owner is None:
            break
        merged.append((owner, waiting[owner].pop(0)))
    return merged
