"""Search results that hold still while another process writes (BR-16).

After a commit the browser asks its query again. The fresh answer may hold matches the reader
has not seen -- a gateway's new message ranks first when the answer is newest first -- and
shown as they come they pushed the first group header, the explanation above the hits and the
highlighted hit out of place several times a second. Instead, the answer on screen keeps its
rows in the order the reader saw them (what changed in them -- a label, a snippet, a hit
deleted -- is taken in place), and the new matches wait, counted, until the reader takes them.

Plain functions of :class:`~hermes_tui.view_models.SearchView`: no widget, no store.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from .view_models import HitGroup, SearchView

#: What a results row points at: ``(session id, message id)`` for a hit, ``(session id, None)``
#: for a title/id match -- the rows' own ``target``.
Target = tuple[str, "int | None"]


def hit_targets(view: SearchView) -> list[Target]:
    """Every row target of ``view``, in the order its rows show them."""
    targets: list[Target] = [(summary.id, None) for summary in view.title_matches]
    for group in view.groups:
        targets += [(hit.session_id, hit.id) for hit in group.hits]
    return targets


@dataclass
class Held:
    """A fresh answer seen against the one on screen."""

    #: The answer to show now: the rows on screen in their order, as the fresh answer has them.
    steady: SearchView
    #: The fresh answer as it came (shown when the reader takes the new matches).
    fresh: SearchView
    #: Rows of the fresh answer that the screen does not show, in the fresh answer's order.
    new: list[Target]


def hold_still(shown: SearchView, fresh: SearchView) -> Held:
    """``fresh`` (the same query, asked again after a commit) against ``shown``.

    Rows keep the order they are shown in; a shown row missing from ``fresh`` is gone (deleted,
    or no longer matching) -- unless ``fresh`` was cut at its limit (``more``), when it may
    merely rank below the cut and stays as shown."""
    seen = set(hit_targets(shown))
    newer = shown.newest_id
    if fresh.answered != shown.answered:
        # The answer is to other words now (`kumquat zz` answered by `kumquat` until a message
        # holding `zz` came): the rows shown are kept whole while the new answer waits -- or,
        # when it holds nothing written since, it is simply the answer.
        new = [t for t in hit_targets(fresh)
               if t not in seen and (t[1] is None or newer is None or t[1] > newer)]
        return Held(shown if new else fresh, fresh, new)
    titles_seen = {summary.id for summary in shown.title_matches}
    new = [(summary.id, None) for summary in fresh.title_matches if summary.id not in titles_seen]
    hits = [(hit.session_id, hit.id) for group in fresh.groups for hit in group.hits]
    if shown.more:
        # The answer shown was one page or more of a longer one: what the fresh answer ranks
        # after the last hit shown is the next page (shown as the reader moves down), not new.
        last = max((i for i, target in enumerate(hits) if target in seen), default=len(hits) - 1)
        hits = hits[:last + 1]
    # A hit not shown that is of a message older than the answer shown merely ranks where it
    # did not (other messages changed the words' weights, a page went further): not new.
    new += [target for target in hits if target not in seen and (newer is None or target[1] > newer)]
    cut = fresh.more
    fresh_titles = {summary.id: summary for summary in fresh.title_matches}
    titles = [
        fresh_titles.get(summary.id, summary) for summary in shown.title_matches
        if summary.id in fresh_titles or cut
    ]
    fresh_groups = {group.root_id: group for group in fresh.groups}
    fresh_hits = {(hit.session_id, hit.id): hit for group in fresh.groups for hit in group.hits}
    # A page a keystroke's bounded walk ended (``short_page``, one store) says more may follow
    # without knowing: it holds every match from its oldest hit up, so a shown hit there that
    # it lacks is gone (deleted, rewound, no longer matching), not merely ranked past a cut.
    floor = (min(hit.id for group in fresh.groups for hit in group.hits)
             if fresh.short_page and fresh.hit_count else None)
    groups: list[HitGroup] = []
    for group in shown.groups:
        hits = [
            fresh_hits.get((hit.session_id, hit.id), hit) for hit in group.hits
            if (hit.session_id, hit.id) in fresh_hits or (cut and not (floor is not None and hit.id >= floor))
        ]
        if not hits:
            continue
        # The conversation as the fresh answer names it (a rename, an archive), its hits as shown.
        groups.append(replace(fresh_groups.get(group.root_id, group), hits=hits))
    kept = sum(len(group.hits) for group in groups)
    steady = replace(
        fresh, groups=groups, title_matches=titles, hit_count=kept,
        # (a title match kept as shown, cut from the fresh answer, keeps its conversation)
        title_roots={**shown.title_roots, **fresh.title_roots},
        offset=shown.offset, more=shown.more, newest_id=shown.newest_id,
        # (the note heads the hits on a line of its own: one that came or went with the
        # commit would move every row under it)
        note=shown.note, answered=shown.answered,
    )
    return Held(steady, fresh, new)


def ranked_anew(shown: SearchView, ranked: SearchView) -> Held:
    """``ranked`` (the query shown, ranked again over every match once typing paused, SR-18)
    against ``shown``: its rows take the new order -- the reader has not moved into them --
    but matches written since ``shown`` was read are not slipped in among them; they wait,
    announced, as after a commit (BR-16). Without this, a store a gateway writes to every few
    seconds would almost never show the pause's ranking.

    A match is new when ``shown`` does not show it and its message is newer than the newest
    ``shown`` was read at (a title match when ``shown`` did not have it); a message committed
    while ``shown`` was being read is on screen already with a newer id, and stays. With no
    such id (several stores, each numbering its own messages), nothing is known to be new and
    ``ranked`` is the answer."""
    if ranked.answered != shown.answered:
        return hold_still(shown, ranked)  # (an answer to other words: as after a commit)
    newer = shown.newest_id
    seen = set(hit_targets(shown))
    titles_seen = {summary.id for summary in shown.title_matches}
    new: list[Target] = [(summary.id, None) for summary in ranked.title_matches if summary.id not in titles_seen]
    titles = [summary for summary in ranked.title_matches if summary.id in titles_seen]
    groups: list[HitGroup] = []
    for group in ranked.groups:
        kept = []
        for one in group.hits:
            target = (one.session_id, one.id)
            if newer is not None and one.id > newer and target not in seen:
                new.append(target)
            else:
                kept.append(one)
        if kept:
            groups.append(group if len(kept) == len(group.hits) else replace(group, hits=kept))
    if not new:
        return Held(ranked, ranked, [])
    kept_hits = sum(len(group.hits) for group in groups)
    steady = replace(
        ranked, groups=groups, title_matches=titles, hit_count=kept_hits,
        # (the hits left out were read: the next page starts after them, as the store's does)
        skipped=ranked.skipped + ranked.hit_count - kept_hits, newest_id=newer,
    )
    return Held(steady, ranked, new)


def without_shown(shown: SearchView, page: SearchView) -> SearchView:
    """``page`` (the next page of ``shown``'s query) without the hits ``shown`` holds already:
    while the answer on screen holds still, commits move the pages under it, and the page read
    at its end starts with hits it shows. They count as ``skipped``, so that the page after
    starts where the store's pages do (:attr:`SearchView.next_offset`)."""
    seen = set(hit_targets(shown))
    groups: list[HitGroup] = []
    for group in page.groups:
        hits = [hit for hit in group.hits if (hit.session_id, hit.id) not in seen]
        if hits:
            groups.append(replace(group, hits=hits))
    kept = sum(len(group.hits) for group in groups)
    return replace(page, groups=groups, hit_count=kept, skipped=page.skipped + page.hit_count - kept)


def announcement(count: int, keys: str) -> str:
    """What the pane says while ``count`` new matches wait (``keys``: the key that shows them)."""
    return f"{count} new match{'es' if count != 1 else ''} — press {keys} to show"


def first_of(targets: Iterable[Target], wanted: Iterable[Target]) -> Target | None:
    """The first of ``targets`` that is one of ``wanted``."""
    wanted = set(wanted)
    return next((target for target in targets if target in wanted), None)
