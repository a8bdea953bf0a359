"""The browser's store door over every Hermes profile's store at once (PF-3, PF-5, PF-6).

:class:`ProfilesData` answers what the screens ask :class:`~hermes_tui.data.BrowserData`
(the same methods, the same blocking calls from worker threads) by fanning each question out
to one ``BrowserData`` per profile -- each keeping all of its guarantees on its own store: a
read never migrates, a replaced or deleted file is noticed, a lock is waited for and said --
and merging the answers:

* **Rows are known by profile and id.** Ids may collide across profiles, so every id this door
  hands out is *qualified*, ``<profile>:<session id>`` (a profile name never holds a ``:``),
  and every id it is given is split back to the store it belongs to: a rename, delete,
  archive, pin or export reaches that store and no other. The profile of each row is on the
  row (``SessionSummary.profile``) while rows of more than one profile are shown: the list
  draws a profile column then.
* **One list, one answer.** Pages are a k-way merge, by the list's order key, of each store's
  own pages (:func:`hermes_state.across_profiles.list_key`), kept per filters until a store
  commits; search asks every store in turn (:meth:`ProfilesData._search_each`) and its
  conversations are ranked together by their best hit's score
  (:func:`hermes_state.across_profiles.best_head`), one ranking read a page at a time. Counts are sums of each store's counts
  under the same filters; each profile's own count feeds the profile filter.
* **One broken store is one line.** A profile whose store cannot be opened (corrupt, not
  SQLite, unreadable) is named once through ``on_file_event("left-out", line)`` and left out;
  the others work.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, TypeVar

from hermes_state.across_profiles import best_head, first_line, list_key
from hermes_state.errors import DatabaseError
from hermes_state.listing import ListQuery
from hermes_state.models import LineageNode, SessionSummary
from hermes_state.profiles import Profile

from .data import BrowserData
from .view_models import Census, FileState, HitGroup, SearchView
from .wording import counted

T = TypeVar("T")

#: Between a profile's name and a session id in the ids this door hands out.
SEPARATOR = ":"

#: Rows read from one store at a time while merging pages (the list's page size, by default).
CHUNK = 50

#: Merged lists kept (filters switched back and forth).
KEPT_MERGES = 4

#: The fewest of its newest matches a store's keystroke answer ranks when several are searched.
WINDOW_SHARE_MIN = 100


def window_shares(sizes: dict[str, int | None]) -> dict[str, int | None]:
    """How many of its newest matches each store ranks at a keystroke (when it cannot rank
    them all), by store: its share of what one store's answer ranks (``TUNING.WINDOW``), in
    proportion to its messages (``sizes``: each store's newest message id, None when not
    known yet: equal shares then), at least :data:`WINDOW_SHARE_MIN` -- so that the answer
    over all of them ranks about as many, and costs about as much, as one store's: each
    store's window is read and scored in Python, and three of them took three times one. A
    large profile beside small ones keeps most of the window. One store: its own (None)."""
    if len(sizes) <= 1:
        return {name: None for name in sizes}
    # (imported here: the search package is not imported before the first page is painted)
    from hermes_state.search.tuning import TUNING

    known = {name: size for name, size in sizes.items() if isinstance(size, int) and size > 0}
    if len(known) < len(sizes):
        equal = max(WINDOW_SHARE_MIN, TUNING.WINDOW // len(sizes))
        return {name: equal for name in sizes}
    total = sum(known.values())
    return {name: max(WINDOW_SHARE_MIN, TUNING.WINDOW * size // total) for name, size in known.items()}


#: Hits a store's first page holds past its share of the page (:func:`page_shares`).
PAGE_SHARE_SLACK = 8


def page_shares(limit: int, windows: dict[str, int | None]) -> dict[str, int]:
    """How many hits each store's first page of a keystroke holds: its share of the page, in
    proportion to its window (:func:`window_shares`), and ``PAGE_SHARE_SLACK`` more, at most
    ``limit``. Each store's hits are made whole (snippets, marks, names) before the merge
    keeps the best ``limit`` of all: a full page from every store made three pages' hits
    for one (~1 ms a store). A store whose hits fill more than its share is read further,
    a page at a time, as any store whose next hit could be shown next (:meth:`_SearchStream.take`).
    One store: the page."""
    known = {name: window for name, window in windows.items() if isinstance(window, int) and window > 0}
    if len(windows) <= 1 or len(known) < len(windows):
        return {name: limit for name in windows}
    total = sum(known.values())
    return {name: min(limit, -(-limit * window // total) + PAGE_SHARE_SLACK) for name, window in known.items()}


def qualify(profile: str, session_id: str | None) -> str | None:
    """``profile:session_id`` (None stays None)."""
    return None if session_id is None else f"{profile}{SEPARATOR}{session_id}"


def split(qualified: str) -> tuple[str, str]:
    """``(profile, session id)`` of a qualified id (profile names hold no ``:``)."""
    profile, sep, session_id = qualified.partition(SEPARATOR)
    if not sep:
        raise DatabaseError(f"session {qualified!r} names no profile")
    return profile, session_id


@dataclass
class _Merge:
    """One list merged from every store shown, as far as it has been read."""

    versions: tuple
    rows: list[SessionSummary] = field(default_factory=list)
    buffers: dict[str, list[SessionSummary]] = field(default_factory=dict)
    position: dict[str, int] = field(default_factory=dict)
    consumed: dict[str, int] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


#: Rounds of reading more store pages one page of a search may take when the stores' pages
#: hold few conversations the list's time window, unread-only or status filter keeps: past
#: them the page comes back short, still saying more may follow (the next page goes on).
REFILL_ROUNDS = 4


class _SearchStream:
    """One search over several stores as one ranked stream of conversations, read a page at
    a time: each store's groups wait in their store's order, and the next one shown is the
    best head of all (by its best hit, :func:`~hermes_state.across_profiles.best_head`). A
    store whose waiting groups are used up is read at its next page before anything else is
    chosen: its next conversation may rank above the others' -- except within a keystroke,
    where a store whose page a bounded walk cut short ends the page instead (:meth:`take`).

    Offsets differ from one store's: a store's ``next_offset`` counts the hits it *read*
    (conversations its filters then dropped included); :attr:`position` counts the hits of
    the merged answer given out, which is the offset the screen asks the next page at."""

    def __init__(self, door: "ProfilesData", query: str, listed: ListQuery, page_size: int,
                 kwargs: dict, across: bool, figures: SearchView, versions: dict[str, int], generation: int,
                 windows: dict[str, int | None]) -> None:
        self.door, self.query, self.listed, self.page_size, self.kwargs = door, query, listed, page_size, kwargs
        self.across = across
        #: Each store's share of the newest matches a keystroke ranks (:func:`window_shares`),
        #: by profile: its later pages rank as its first did.
        self.windows = windows
        #: The answer's figures (path, ranking, estimates, notes, title matches), of the
        #: stores' first pages.
        self.figures = figures
        #: The stores' data_version when their first pages were read, by profile: a commit
        #: to one since makes the next page start again from the top (as a single store's
        #: page would read the store as it is now); a store left out since does not.
        self.versions = versions
        #: :attr:`ProfilesData.interrupts` when this stream was last asked: a newer one means
        #: a newer search superseded it.
        self.generation = generation
        self.waiting: dict[str, list[HitGroup]] = {}
        self.next_offset: dict[str, int] = {}
        self.done: set[str] = set()
        #: Where the next page starts in the merged answer, the offset the screen asks it at:
        #: the hits handed out so far, and one more for each page the filters left empty
        #: (so that the page after it is not taken for the first page again).
        self.position = 0
        self.interrupted = False
        self.lock = threading.Lock()
        #: Conversations (qualified ids) the list's conversation filters left out, of every
        #: page the stores read so far (an answer they emptied says how many).
        self.filtered_out: frozenset[str] = frozenset()
        #: Stores whose last page a keystroke's bounded walk ended (``short_page``): reading
        #: on is the walk the keystroke was spared (~50 ms at 5M), so a keystroke's page ends
        #: where such a store's hits do (:meth:`take`), as one store's page would.
        self.short_pages: set[str] = set()

    def add_page(self, name: str, answer: SearchView) -> None:
        """A store's page read: its groups wait, and where its next page starts is kept."""
        self.waiting.setdefault(name, []).extend(answer.groups)
        self.filtered_out |= {qualify(name, root) for root in answer.filtered_out}
        self.next_offset[name] = answer.next_offset
        if answer.short_page:
            self.short_pages.add(name)
        else:
            self.short_pages.discard(name)
        if not answer.more or not answer.hit_count:
            self.done.add(name)

    def _superseded(self) -> bool:
        if self.door.interrupts != self.generation:
            self.interrupted = True
        return self.interrupted

    def _refill(self, empty: list[str]) -> None:
        """Read the next page of these stores (their waiting groups are used up)."""
        for name in empty:
            if name in self.door.left_out:
                self.done.add(name)  # (left out since: its conversations end here)
        parts = [(name, self.door.parts[name]) for name in empty if name not in self.done]
        if not parts or self._superseded():
            return
        answers = self.door._search_each(
            lambda name, part: part.search(self.query, self.listed, limit=self.page_size,
                                           offset=self.next_offset[name], window=self.windows.get(name),
                                           **self.kwargs),
            parts, self.generation)
        if answers is None:
            self.interrupted = True
            return
        read = {name for name, _a in answers}
        for name, _part in parts:
            if name not in read:
                self.done.add(name)  # (left out while reading)
        for name, answer in answers:
            if answer.interrupted:
                self.interrupted = True
                return
            self.add_page(name, answer)

    def take(self, hits: int, rounds: int | None = REFILL_ROUNDS, *, keystroke: bool = False) -> list[HitGroup]:
        """The next conversations of the one ranking, whole, until ``hits`` hits are taken,
        every store is used up, or ``rounds`` rounds of reading stores' next pages did not
        fill the page (None: no limit); a conversation met again on a later page of its
        store joins its group when both are in this page (as :meth:`SearchView.merged`
        joins pages). ``keystroke`` (a keystroke's first page): once the page holds a hit,
        it also ends when a store whose page was short (:attr:`short_pages`) is used up --
        its next conversation may rank above the others' and only its walk would tell; the
        pane reads on. (A page with nothing yet reads on: an empty answer says nothing.)"""
        with self.lock:
            page: dict[str, HitGroup] = {}
            taken = 0
            while taken < hits and not self._superseded():
                empty = [name for name in self.next_offset if not self.waiting.get(name) and name not in self.done]
                if empty:
                    if rounds is not None and rounds <= 0:
                        break  # (a short page; more follows)
                    if keystroke and taken and self.short_pages.intersection(empty):
                        break  # (as above)
                    rounds = None if rounds is None else rounds - 1
                    self._refill(empty)
                    continue
                name = best_head([(name, groups[0].hits[0] if groups[0].hits else None)
                                  for name, groups in self.waiting.items() if groups])
                if name is None:
                    break
                group = self.door._group(name, self.waiting[name].pop(0), self.across)
                if group.root_id in page:
                    page[group.root_id].hits.extend(group.hits)
                else:
                    page[group.root_id] = group
                taken += len(group.hits)
            self.position += taken if taken else (1 if self.more else 0)
            return list(page.values())

    @property
    def more(self) -> bool:
        return any(self.waiting.values()) or any(name not in self.done for name in self.next_offset)


class ProfilesData:
    """Blocking access to several profiles' stores as one (one instance per app)."""

    def __init__(
        self,
        profiles: list[Profile],
        *,
        on_wait: Callable[[str | None], None] | None = None,
        on_file_event: Callable[[str, str], None] | None = None,
        on_activity: Callable[[str | None], None] | None = None,
        trash_dir: Path | None = None,
        cache_dir: Path | None = None,
        first_windows: dict[str, Any] | None = None,
        page_size: int = CHUNK,
    ) -> None:
        """``first_windows``: each profile's first pages read ahead while the UI was imported
        (:class:`~hermes_tui.data.FirstWindow`, by profile name); ``page_size`` the list's page,
        which is what is read from each store at a time (so a read-ahead page is used as is)."""
        if not profiles:
            raise DatabaseError("no profile has a session database")
        self.chunk = max(1, int(page_size))
        first_windows = first_windows or {}
        self.profiles = {profile.name: profile for profile in profiles}
        self._order = [profile.name for profile in profiles]
        self._on_file_event = on_file_event or (lambda _kind, _text: None)
        self.parts: dict[str, BrowserData] = {
            profile.name: BrowserData(
                profile.db_path, on_wait=on_wait, on_activity=on_activity, trash_dir=trash_dir,
                cache_dir=cache_dir, first_window=first_windows.get(profile.name), titles_beside=False,
                on_file_event=lambda kind, text, name=profile.name: self._on_file_event(kind, f"profile '{name}': {text}"),
            )
            for profile in profiles
        }
        self.trash_dir = trash_dir
        self.cache_dir = cache_dir
        #: Profiles left out, with the one line that said why.
        self.left_out: dict[str, str] = {}
        #: The profile the list, search and counts are narrowed to (None: every profile).
        self.profile_filter: str | None = None
        #: Each profile's count under the list's other filters, from the last census.
        self.profile_counts: dict[str, int] = {}
        self._merges: dict[tuple, _Merge] = {}
        #: Searches whose later pages may be asked for, by (profile chosen, query, filters, ...).
        self._searches: dict[tuple, _SearchStream] = {}
        #: Each store's newest message id when it last answered a search: its size, for its
        #: share of a keystroke's window (:func:`window_shares`).
        self._sizes: dict[str, int] = {}
        #: How many times searches were interrupted (a newer keystroke): a search reading on
        #: after a newer one was asked stops at its next read.
        self.interrupts = 0
        self._lock = threading.Lock()
        # A pool for each kind of work fanned out to the stores (a search, asked store by
        # store in its own worker, never queues behind them: _search_each).
        workers = max(1, len(profiles))
        self._pools = {kind: ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"hermes-profiles-{kind}")
                       for kind in ("census", "pages")}
        #: Deletes' snapshots as handed out → (profile, the store's own snapshot), for undo.
        self._snapshots: dict[int, tuple[str, Any]] = {}
        #: Export scopes handed out → the (profile, the store's own scope) pairs they stand for.
        self._scopes: dict[int, list] = {}
        self._said: set[str] = set()

    # ------------------------------------------------------------------ the stores

    @property
    def names(self) -> list[str]:
        """The profiles whose stores are read (left-out ones not among them)."""
        return [name for name in self._order if name not in self.left_out]

    def _shown(self) -> list[tuple[str, BrowserData]]:
        """The profiles the list shows: the one chosen, else every one not left out."""
        names = self.names
        if self.profile_filter in names:
            names = [self.profile_filter]
        return [(name, self.parts[name]) for name in names]

    @property
    def across(self) -> bool:
        """Rows of more than one profile are shown (the list draws a profile column)."""
        return len(self._shown()) > 1

    def _call(self, name: str, fn: Callable[[BrowserData], T], default: T) -> T:
        """``fn`` on one profile's door; a store that never opened is left out (named once)
        and answers ``default``; any other error is that of the read, raised."""
        part = self.parts[name]
        try:
            return fn(part)
        except Exception as exc:
            if part.is_open:
                raise
            self._leave_out(name, exc)
            return default

    def _leave_out(self, name: str, exc: BaseException) -> None:
        with self._lock:
            if name in self.left_out:
                return
            line = f"profile '{name}' left out: {first_line(exc)}"
            self.left_out[name] = line
            self._merges.clear()
        self._on_file_event("left-out", line)

    def _each(self, fn: Callable[[str, BrowserData], T], parts: list[tuple[str, BrowserData]] | None = None,
              *, parallel: str | None = None) -> list[tuple[str, T]]:
        """``fn(name, door)`` on each shown profile (``parts``), those left out skipped;
        ``parallel``: at once, in that kind's pool (``census``, ``pages``)."""
        parts = self._shown() if parts is None else parts
        if parallel and len(parts) > 1:
            pool = self._pools[parallel]
            futures = [(name, pool.submit(self._call, name, lambda p, n=name: fn(n, p), _LEFT)) for name, _p in parts]
            answers = [(name, future.result()) for name, future in futures]
        else:
            answers = [(name, self._call(name, lambda p, n=name: fn(n, p), _LEFT)) for name, _p in parts]
        return [(name, answer) for name, answer in answers if answer is not _LEFT]

    def _search_each(self, fn: Callable[[str, BrowserData], T], parts: list[tuple[str, BrowserData]],
                     generation: int) -> list[tuple[str, T]] | None:
        """``fn(name, door)`` on each of ``parts`` in turn, in the calling thread (those left
        out skipped); None as soon as a newer search was asked (``generation`` is no longer
        :attr:`interrupts`): the stores not yet asked are not.

        In turn, not a thread each: a search's time is mostly Python (ranking, grouping,
        labels), which the GIL runs one thread at a time, and three searches in three
        threads took longer than the same three one after the other (bench/README.md,
        "Across three profiles")."""
        answers: list[tuple[str, T]] = []
        for name, _part in parts:
            if self.interrupts != generation:
                return None
            answer = self._call(name, lambda p, n=name: fn(n, p), _LEFT)
            if answer is not _LEFT:
                answers.append((name, answer))
        return None if self.interrupts != generation else answers

    def session_id_of(self, qualified: str) -> str:
        """The session's own id (what ``hermes -p PROFILE --resume`` takes)."""
        return split(qualified)[1]

    def for_commands(self, qualified: str) -> tuple[str | None, str]:
        """``(profile, the session's own id)``: what a command printed for a person names
        (PF-7: ``-p PROFILE ID``, never the ``profile:id`` of this door, which no command
        takes)."""
        return split(qualified)

    def _part_of(self, qualified: str) -> tuple[str, BrowserData, str]:
        name, session_id = split(qualified)
        part = self.parts.get(name)
        if part is None:
            raise DatabaseError(f"no profile '{name}' is open")
        return name, part, session_id

    # ------------------------------------------------------------------ ids

    def _row(self, name: str, row: SessionSummary | None, shown: bool | None = None) -> SessionSummary | None:
        if row is None:
            return None
        return row.model_copy(update={
            "id": qualify(name, row.id),
            "parent_session_id": qualify(name, row.parent_session_id),
            "lineage_root_id": qualify(name, row.lineage_root_id),
            "profile": name if (self.across if shown is None else shown) else None,
        })

    def _node(self, name: str, node: LineageNode) -> LineageNode:
        update: dict[str, Any] = {"id": qualify(name, node.id), "parent_session_id": qualify(name, node.parent_session_id)}
        children = getattr(node, "children", None)
        if children:
            update["children"] = [self._node(name, child) for child in children]
        return node.model_copy(update=update)

    # ------------------------------------------------------------------ the door's own state

    @property
    def db_path(self) -> Path:
        return self.profiles[self._order[0]].db_path

    @property
    def profile_homes(self) -> list[tuple[str, Path, Path]]:
        """``(profile, store, Hermes home)`` of every profile read: the live feed watches each
        store and each home's gateway index (``sessions/sessions.json``)."""
        return [(name, self.profiles[name].db_path, self.profiles[name].home) for name in self._order]

    @property
    def warnings(self) -> list[str]:
        """Each store's warnings, each said once (the app asks again after every notice of a
        left-out profile): a store newer than this program knows is named in one line."""
        fresh = [f"profile '{name}': {warning}" for name in self.names for warning in self.parts[name].warnings]
        with self._lock:
            fresh = [line for line in fresh if line not in self._said]
            self._said.update(fresh)
        return fresh

    @property
    def is_open(self) -> bool:
        return any(part.is_open for part in self.parts.values())

    @property
    def immutable(self) -> bool:
        opened = [part for part in self.parts.values() if part.is_open]
        return bool(opened) and all(part.immutable for part in opened)

    @property
    def gone(self) -> str | None:
        gone = [part.gone for name, part in self.parts.items() if part.gone and name not in self.left_out]
        return gone[0] if gone and len(gone) == len(self.names) else None

    def write_problem(self) -> str | None:
        """None: each store says for itself when a write to it is refused. Asked once the app
        starts: every store is opened here, so that one that cannot be read is named (once)
        and each one's warnings (a schema newer than this program knows) are said."""
        self._each(lambda _n, part: part.reader, [(name, self.parts[name]) for name in self.names], parallel="pages")
        return None

    def check_file(self) -> FileState:
        outcomes = [self.parts[name].check_file() for name in self.names]
        if any(outcome is not FileState.SAME for outcome in outcomes):
            self._forget()
        return FileState.REPLACED if FileState.REPLACED in outcomes else FileState.SAME

    def changed_since_first_read(self) -> bool:
        return any(self.parts[name].changed_since_first_read() for name in self.names)

    def _versions(self) -> dict[str, int]:
        """Each shown store's ``data_version``, by profile."""
        return dict(self._each(lambda _n, part: part.read(lambda db: db.data_version())))

    def data_versions(self) -> tuple:
        """Each shown store's ``data_version`` (a merged list is kept while they stay)."""
        return tuple(self._versions().items())

    def interrupt_search(self) -> None:
        # (counted first: a search between two statements, which SQLite's interrupt cannot
        # reach, sees it before reading on)
        self.interrupts += 1
        for part in self.parts.values():
            part.interrupt_search()

    def forget_search_answers(self) -> None:
        with self._lock:
            self._searches.clear()
        for part in self.parts.values():
            part.forget_search_answers()

    def warm_search(self) -> None:
        self.parts[self._order[0]].warm_search()

    def warm_titles(self) -> None:
        for name in self.names:
            self.parts[name].warm_titles()

    def close(self) -> None:
        for part in self.parts.values():
            part.close()
        for pool in self._pools.values():
            pool.shutdown(wait=False, cancel_futures=True)

    def read(self, fn: Callable[[Any], T]) -> T:
        """``fn`` on the first shown store (for what every store answers alike)."""
        shown = self._shown()
        if not shown:
            raise DatabaseError("no profile's store could be read")
        return shown[0][1].read(fn)

    def _forget(self) -> None:
        with self._lock:
            self._merges.clear()
            self._searches.clear()

    # ------------------------------------------------------------------ list

    def page(self, offset: int, limit: int, query: ListQuery, *, count: bool = True,
             provisional: bool = False) -> tuple[list[SessionSummary], int | None]:
        """A page of every shown profile's list merged in the list's order (PF-6)."""
        shown = self._shown()
        key = (tuple(name for name, _p in shown), query)
        versions = self.data_versions()
        with self._lock:
            merge = self._merges.pop(key, None)
            if merge is None or merge.versions != versions:
                merge = _Merge(versions)
            self._merges[key] = merge
            while len(self._merges) > KEPT_MERGES:
                del self._merges[next(iter(self._merges))]
        by_activity = query.by_activity
        across = len(shown) > 1
        chunk = self.chunk

        def fetch(name: str, part: BrowserData) -> None:
            start = merge.consumed.get(name, 0)
            rows, _n = self._call(name, lambda p: p.page(
                start, chunk, query, count=False, provisional=provisional), ([], None))
            merge.buffers[name], merge.position[name] = rows, 0
            merge.consumed[name] = start + len(rows)
            if len(rows) < chunk:
                merge.done.add(name)

        with merge.lock:
            # The first rows of every store at once (a thread each: SQLite lets go of the GIL).
            empty = [(name, part) for name, part in shown
                     if name not in merge.buffers and name not in merge.done]
            if len(empty) > 1 and len(merge.rows) < offset + limit:
                for future in [self._pools["pages"].submit(fetch, name, part) for name, part in empty]:
                    future.result()
            while len(merge.rows) < offset + limit:
                heads = []
                for index, (name, part) in enumerate(shown):
                    buffer = merge.buffers.get(name, [])
                    at = merge.position.get(name, 0)
                    if at >= len(buffer) and name not in merge.done:
                        fetch(name, part)
                        buffer, at = merge.buffers[name], 0
                    if at < len(buffer):
                        heads.append((list_key(buffer[at], by_activity), index, name))
                if not heads:
                    break
                _key, _index, name = min(heads)
                row = merge.buffers[name][merge.position[name]]
                merge.position[name] += 1
                merge.rows.append(self._row(name, row, across))
            rows = merge.rows[offset:offset + limit]
        total = None
        if count:
            totals = self._each(lambda _n, part: part.page(0, 1, query, count=True, provisional=provisional)[1])
            total = sum(n or 0 for _name, n in totals)
        return rows, total

    def page_of_ids(self, session_ids: set[str], offset: int, limit: int,
                    query: ListQuery) -> tuple[list[SessionSummary], int]:
        by_profile: dict[str, set[str]] = {}
        for qualified in session_ids:
            # (a bare id is the first profile's, as a single store's ids are)
            name, session_id = split(qualified) if SEPARATOR in qualified else (self._order[0], qualified)
            by_profile.setdefault(name, set()).add(session_id)
        rows: list[tuple[str, SessionSummary]] = []
        shown = {name for name, _p in self._shown()}  # (the profile chosen, or every one)
        for name, ids in by_profile.items():
            if name in shown:
                found, _total = self._call(name, lambda p, i=ids: p.page_of_ids(i, 0, offset + limit, query), ([], 0))
                rows += [(name, row) for row in found]
        rows.sort(key=lambda pair: list_key(pair[1], True))
        return [self._row(name, row) for name, row in rows[offset:offset + limit]], len(rows)

    def census(self, query: ListQuery, *, count: bool) -> Census:
        """Each profile's census under the same filters (every profile, so the profile filter
        has its counts); the list's figures are the sums over the shown ones."""
        every = [(name, self.parts[name]) for name in self.names]
        answers = dict(self._each(lambda _n, part: part.census(query, count=count), every, parallel="census"))
        shown = [name for name, _p in self._shown() if name in answers]
        sources: dict[str, int] = {}
        listed: dict[str, int] | None = {} if count else None
        for name in shown:
            for source, n in answers[name].source_counts.items():
                sources[source] = sources.get(source, 0) + n
            for source, n in (answers[name].listed_by_source or {}).items():
                if listed is not None:
                    listed[source] = listed.get(source, 0) + n
        self.profile_counts = {name: census.total or 0 for name, census in answers.items() if census.total is not None}
        revised = any(census.revised for census in answers.values())
        if revised:
            self._forget()
        waits = [census.again_in for census in answers.values() if census.again_in is not None]
        return Census(
            sum(answers[name].total or 0 for name in shown) if count else None,
            sources,
            revised=revised,
            ranking_s=sum(census.ranking_s for census in answers.values()),
            again_in=min(waits) if waits else None,
            listed_by_source=listed,
        )

    def count_by_profile(self, query: ListQuery) -> dict[str, int]:
        """Each profile's conversations under the list's other filters (the profile filter's
        counts), every profile read, whichever is shown."""
        every = [(name, self.parts[name]) for name in self.names]
        counts = self._each(lambda _n, part: part.page(0, 1, query, count=True)[1], every,
                            parallel="census")
        self.profile_counts = {name: n or 0 for name, n in counts}
        return dict(self.profile_counts)

    def conversations_by_source(self, query: ListQuery) -> dict[str, int]:
        """The source picker's numbers over the shown profiles (their sum by source)."""
        sources: dict[str, int] = {}
        for _name, counts in self._each(lambda _n, part: part.conversations_by_source(query), parallel="census"):
            for source, n in counts.items():
                sources[source] = sources.get(source, 0) + n
        return sources

    def source_counts(self) -> dict[str, int]:
        sources: dict[str, int] = {}
        for _name, counts in self._each(lambda _n, part: part.source_counts()):
            for source, n in counts.items():
                sources[source] = sources.get(source, 0) + n
        return sources

    def workspace_counts(self, query: ListQuery) -> list:
        totals: dict[str, int] = {}
        first: dict[str, Any] = {}
        for _name, counts in self._each(lambda _n, part: part.workspace_counts(query)):
            for item in counts:
                totals[item.workspace] = totals.get(item.workspace, 0) + item.count
                first.setdefault(item.workspace, item)
        merged = [replace(first[workspace], count=n) for workspace, n in totals.items()]
        return sorted(merged, key=lambda item: (-item.count, item.workspace))

    def summary(self, qualified: str) -> SessionSummary | None:
        name, part, session_id = self._part_of(qualified)
        return self._row(name, part.summary(session_id))

    def messages(self, qualified: str) -> list:
        _name, part, session_id = self._part_of(qualified)
        return part.messages(session_id)

    def lineage(self, qualified: str) -> LineageNode | None:
        name, part, session_id = self._part_of(qualified)
        node = part.lineage(session_id)
        return None if node is None else self._node(name, node)

    def recap(self, qualified: str, config) -> Any:
        name, part, session_id = self._part_of(qualified)
        data = part.recap(session_id, config)
        return replace(
            data, requested_id=qualified, target_id=qualify(name, data.target_id),
            summary=self._row(name, data.summary), tip_id=qualify(name, data.tip_id),
            chain=[qualify(name, sid) for sid in data.chain],
        )

    # ------------------------------------------------------------------ search

    def match_sessions(self, text: str, query: ListQuery, *, limit: int = 8) -> list[SessionSummary]:
        found = self._each(lambda n, part: [self._row(n, row) for row in part.match_sessions(text, query, limit=limit)])
        rows = [row for _name, rows in found for row in rows]
        rows.sort(key=lambda row: list_key(row, True))
        return rows[:limit]

    def search(self, query: str, listed: ListQuery, *, limit: int = 40, offset: int = 0, keystroke: bool = False,
               **kwargs: Any) -> SearchView:
        """Every shown store searched (in turn), conversations ranked together by the score of
        their best hit (:func:`~hermes_state.across_profiles.best_head`), PF-6: one ranking
        across pages. A page holds about ``limit`` hits of that ranking, from ``offset``
        (hits of the merged answer handed out before it); each store's hits beyond what a
        page took wait for the next page, and a store is read further only when its next
        conversation could be the next one shown. ``keystroke``: a key typed (not a refresh
        after a commit): its page may end where a store's bounded walk ended its page."""
        started = time.perf_counter()
        # The stream is found again by what was asked -- not by ``now`` (each page is asked
        # at its own clock; the stream goes on at its first page's, so recency weighs alike
        # on every page) nor by ``limit`` (a refresh asks for as many hits as are shown) --
        # and by the profile chosen, not the profiles read (a store left out between two
        # pages must not start the answer again).
        key = (self.profile_filter, query, listed,
               tuple(sorted(((k, v) for k, v in kwargs.items() if k != "now"), key=str)))
        generation = self.interrupts
        versions = self._versions()
        with self._lock:
            stream = self._searches.pop(key, None)
        if (offset == 0 or stream is None or stream.position != offset
                or any(stream.versions.get(name) != version for name, version in versions.items())):
            stream = self._open_search(query, listed, limit, kwargs, versions, generation)
            if stream.interrupted:
                return SearchView(query=query, offset=offset, interrupted=True)
            if offset:
                stream.take(offset, rounds=None)  # (replayed up to the page asked for, then dropped)
        stream.generation = generation
        before = stream.position
        # (a keystroke's first page only: a refresh after a commit must read on, or a hit
        # gone from a short store's page would look merely cut -- search_hold's floor is one
        # store's message ids)
        page = stream.take(limit, keystroke=keystroke and offset == 0)
        if stream.interrupted:
            return SearchView(query=query, offset=offset, interrupted=True)  # (and not kept)
        more = stream.more
        with self._lock:
            self._searches[key] = stream
            while len(self._searches) > KEPT_MERGES:
                del self._searches[next(iter(self._searches))]
        figures = stream.figures
        view = SearchView(query=query, offset=offset)
        view.path, view.ranking, view.order = figures.path, figures.ranking, figures.order
        view.total_estimate = figures.total_estimate
        view.filtered_out = stream.filtered_out
        view.note, view.answered, view.newest_id = figures.note, figures.answered, figures.newest_id
        if offset == 0:
            view.stamps = dict(figures.stamps)
            view.elapsed_ms = figures.elapsed_ms
            view.title_matches = figures.title_matches
            view.title_roots = figures.title_roots
        else:
            view.elapsed_ms = (time.perf_counter() - started) * 1000
        view.groups = page
        view.hit_count = sum(len(group.hits) for group in page)
        view.skipped = stream.position - before - view.hit_count  # (a page left empty: 1)
        view.more = more
        # (worked out from what each store has left: a page the stores' filters left short
        # still has more, which the screen's rule for a short answer must not undo)
        view.more_certain = True
        return view

    def _open_search(self, query: str, listed: ListQuery, limit: int, kwargs: dict,
                     versions: dict[str, int], generation: int) -> "_SearchStream":
        """Each shown store's first page, read in turn; the answer's figures (path, ranking,
        estimates, notes, title matches) are of these pages, and ``versions`` the stores'
        data_version read before them."""
        shown = self._shown()
        windows = window_shares({name: self._sizes.get(name) for name, _part in shown})
        limits = page_shares(limit, windows)
        answers = self._search_each(
            lambda name, part: part.search(query, listed, limit=limits[name], offset=0, window=windows[name],
                                           **kwargs),
            shown, generation)
        figures = SearchView(query=query)
        if answers is None:
            stream = _SearchStream(self, query, listed, limit, kwargs, len(shown) > 1, figures, versions, generation,
                                   windows)
            stream.interrupted = True
            return stream
        across = len(answers) > 1
        stream = _SearchStream(self, query, listed, limit, kwargs, across, figures, versions, generation, windows)
        for name, answer in answers:
            if answer.newest_id is not None:  # (how many messages each store holds, about)
                self._sizes[name] = answer.newest_id
        if not answers:
            return stream
        views = [answer for _name, answer in answers]
        figures.stamps = dict(views[0].stamps)
        for stamp in ("query", "grouped", "done"):
            stamps = [v.stamps[stamp] for v in views if stamp in v.stamps]
            if stamps:
                figures.stamps[stamp] = max(stamps)
        stream.interrupted = any(v.interrupted for v in views)
        if stream.interrupted:
            return stream
        figures.path = "+".join(dict.fromkeys(v.path for v in views if v.path))
        figures.ranking = "+".join(dict.fromkeys(v.ranking for v in views if v.ranking))
        figures.order = next((v.order for v in views if v.order), "")
        figures.elapsed_ms = max(v.elapsed_ms for v in views)
        estimates = [v.total_estimate for v in views if v.total_estimate is not None]
        figures.total_estimate = sum(estimates) if estimates else None
        # A store that found nothing explains its own empty answer ("no message holds..."):
        # above another store's hits that would be wrong, so its note is said only when no
        # store found anything.
        found = [v for v in views if v.groups]
        figures.note = next((v.note for v in (found or views) if v.note), None)
        figures.answered = next((v.answered for v in (found or views) if v.answered), None)
        # One store's message ids say which hits are new since the answer; several stores'
        # cannot (each numbers its own messages).
        figures.newest_id = views[0].newest_id if len(views) == 1 else None
        titles = [row for name, answer in answers for row in (self._row(name, r, across) for r in answer.title_matches)]
        titles.sort(key=lambda row: list_key(row, True))
        figures.title_matches = titles[:8]
        figures.title_roots = {
            qualify(name, session_id): qualify(name, root)
            for name, answer in answers for session_id, root in answer.title_roots.items()
        }
        for name, answer in answers:
            stream.add_page(name, answer)
        return stream

    def _group(self, name: str, group: HitGroup, across: bool) -> HitGroup:
        hits = [hit.model_copy(update={"session_id": qualify(name, hit.session_id)}) for hit in group.hits]
        # (across profiles the pane names each conversation with its profile first, as its
        # qualified id does: the same name may be a conversation of two profiles)
        return replace(group, root_id=qualify(name, group.root_id), hits=hits,
                       label=f"{name}: {group.label}" if across else group.label)

    # ------------------------------------------------------------------ writes (each to its own store)

    def rename(self, qualified: str, raw: str, *, expected: str | None):
        _name, part, session_id = self._part_of(qualified)
        try:
            return part.rename(session_id, raw, expected=expected)
        finally:
            self._forget()

    def archive_unavailable(self) -> str | None:
        reasons = [reason for _name, reason in self._each(lambda _n, part: part.archive_unavailable())]
        return reasons[0] if reasons and all(reasons) else None

    def set_archived(self, qualified: str, archived: bool) -> bool:
        _name, part, session_id = self._part_of(qualified)
        try:
            return part.set_archived(session_id, archived)
        finally:
            self._forget()

    def unread_problem(self, qualified: str | None = None) -> str | None:
        """Why the store of ``qualified`` cannot be marked read or unread (no
        ``last_read_at``: naming its profile), or None. Without a session: the reason when no
        store shown keeps read state (then nothing can be unread anywhere), else None."""
        if qualified is not None:
            name, part, _session_id = self._part_of(qualified)
            problem = part.unread_problem()
            return f"{problem} (profile '{name}')" if problem else None
        problems = [problem for _name, problem in self._each(lambda _n, part: part.unread_problem())]
        return problems[0] if problems and all(problems) else None

    def set_read(self, qualified: str, read: bool) -> bool:
        """Mark the conversation read or unread in its own profile's store (refused there,
        before any writer opens, when that store has no ``last_read_at``)."""
        _name, part, session_id = self._part_of(qualified)
        try:
            return part.set_read(session_id, read)
        finally:
            self._forget()

    def set_pinned(self, qualified: str, pinned: bool) -> bool:
        _name, part, session_id = self._part_of(qualified)
        try:
            return part.set_pinned(session_id, pinned)
        finally:
            self._forget()

    def delete_preview(self, qualified: str, *, now: float, live_window_s: float):
        _name, part, session_id = self._part_of(qualified)
        preview = part.delete_preview(session_id, now=now, live_window_s=live_window_s)
        return None if preview is None else replace(preview, session_id=qualified)

    def delete(self, qualified: str, *, sessions_dir: Path | None):
        """Delete from the row's own store, its transcripts from its own profile's
        ``sessions/`` (never the directory of the profile the browser was started in)."""
        name, part, session_id = self._part_of(qualified)
        try:
            outcome = part.delete(session_id, sessions_dir=self.profiles[name].home / "sessions")
        finally:
            self._forget()
        if outcome.deleted is None:
            return outcome
        shown = replace(outcome.deleted, session_id=qualified)
        self._snapshots[id(shown)] = (name, outcome.deleted)
        return replace(outcome, deleted=shown)

    def undo(self, snapshot):
        name, original = self._snapshots.get(id(snapshot), (None, None))
        if name is None:
            name, _sid = split(snapshot.session_id)
            original = replace(snapshot, session_id=_sid)
        try:
            report = self.parts[name].undo(original)
        finally:
            self._forget()
        return replace(report, session_id=qualify(name, report.session_id))

    # ------------------------------------------------------------------ export

    def plan_export(self, qualified: str | None, **kwargs: Any):
        """The export dialog's choices across the shown profiles: this session and its
        lineage from the row's own store; the marked conversations, the search's sessions,
        a workspace, a source or everything from every shown store that has some -- one file,
        each session carrying its profile when several stores write it."""
        from .operations import ExportScope

        marked = kwargs.pop("marked", None) or []
        row_name, session_id = split(qualified) if qualified is not None else (None, None)
        plans: list[tuple[str, Any]] = []
        for name, part in self._shown():
            own_marks = [sid for q in marked for n, sid in [split(q)] if n == name]
            plan = self._call(name, lambda p, n=name, m=own_marks: p.plan_export(
                session_id if n == row_name else None, marked=m or None, **kwargs), None)
            if plan is not None:
                plans.append((name, plan))
        if not plans:
            raise DatabaseError("no profile's store could be read")
        keys: list[str] = []
        for _name, plan in plans:
            for scope in plan.scopes:
                if scope.key not in keys:
                    keys.append(scope.key)
        scopes = []
        for key in keys:
            found = [(name, scope) for name, plan in plans for scope in plan.scopes
                     if scope.key == key and (key != "marked" or scope.count)]
            found = [(n, sc) for n, sc in found if not sc.unavailable] or found[:1]
            if not found:
                continue
            if len(found) == 1:
                name, scope = found[0]
                scope = replace(scope, label=f"{scope.label} (profile {name})", stem=f"{name}-{scope.stem}")
            else:
                first = found[0][1]
                total = sum(sc.count for _n, sc in found)
                head = first.label.split(" — ")[0]
                if key == "listed":  # (counted in the list's unit, as on one store)
                    k = sum(sc.conversations or 0 for _n, sc in found)
                    said = counted(k, "conversation")
                else:
                    said = f"{total:,} sessions"
                scope = ExportScope(key, f"{head} — {said} in {len(found)} profiles",
                                    f"profiles-{first.stem}", total, None, first.source)
            self._scopes[id(scope)] = found
            scopes.append(scope)
        return replace(plans[0][1], scopes=scopes)

    def run_export(self, scope, fmt, path, *, progress=None, cancelled=lambda: False):
        """Write the scope's sessions: from one store as a store on its own writes them, or
        from several into one file, profile after profile, each session with its profile."""
        found = self._scopes.get(id(scope))
        if found is None:
            name = self._shown()[0][0]
            return self.parts[name].run_export(scope, fmt, path, progress=progress, cancelled=cancelled)
        if len(found) == 1:
            name, original = found[0]
            return self.parts[name].run_export(original, fmt, path, progress=progress, cancelled=cancelled)
        return _export_several(self, found, fmt, path, progress, cancelled)


def _export_several(door: "ProfilesData", found: list, fmt: str, path: Path, progress, cancelled):
    """One export file from several profiles' stores (atomic, owner-only, as one store's)."""
    from hermes_state.export import iter_export, render_chunks
    from hermes_state.paths import write_atomic

    from .operations import (
        ExportCancelled, ExportOutcome, NothingExported, check_destination, describe_write_error, scope_session_ids,
    )

    problem = check_destination(path)
    if problem:
        return ExportOutcome(False, path, error=problem)
    total = sum(scope.count for _name, scope in found)
    done = [0]

    def sessions():
        for name, scope in found:
            reader = door.parts[name].reader
            ids = scope_session_ids(reader, scope)
            for obj in iter_export(reader, scope.source, ids):
                if cancelled():
                    raise ExportCancelled()
                obj["profile"] = name
                done[0] += 1
                if progress:
                    progress(done[0], max(total, done[0]))
                yield obj
        if done[0] == 0:
            raise NothingExported()

    try:
        written = write_atomic(path, render_chunks(sessions(), fmt), mode=0o600)
    except ExportCancelled:
        return ExportOutcome(False, path, cancelled=True, error="Export cancelled; no file was written.")
    except NothingExported:
        return ExportOutcome(False, path, error="Nothing to export: the sessions no longer exist. No file was written.")
    except OSError as exc:
        return ExportOutcome(False, path, error=f"Cannot write {path}: {exc.strerror or exc}. No file was written.")
    except Exception as exc:
        return ExportOutcome(False, path, error=describe_write_error(exc, "No file was written."))
    return ExportOutcome(True, path, sessions=done[0], bytes=written)


#: A profile left out answered nothing.
_LEFT = object()
