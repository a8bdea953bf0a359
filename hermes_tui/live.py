"""Live data: the thread that watches the store and the gateway index, and what it hands over.

:class:`LiveFeed` runs in one app worker. It polls ``PRAGMA data_version`` and
``sessions.json`` (BR-8), asks the store door whether the file is still the one it reads
(a replaced file is reopened, a deleted one stops writes), keeps the lanes described for the
detail pane, and hands changes to the event loop **coalesced**: while one notice waits to be
delivered, later changes merge into it instead of queueing up behind it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Callable

from hermes_state.gateway import describe_lane, load_gateway_config, load_sessions_index
from hermes_state.watch import Change, ChangeWatcher

from .context import AppContext, StoreChange
from .data_profiles import qualify
from .view_models import FileState


class LiveFeed:
    def __init__(self, ctx: AppContext, deliver: Callable[[Callable[[], None]], None],
                 publish: Callable[[StoreChange], None]) -> None:
        """``deliver(fn)`` has ``fn`` run on the event loop, without waiting for it (the
        app posts it); ``publish(change)`` is called there with each coalesced change."""
        self.ctx = ctx
        self._deliver = deliver
        self._publish = publish
        self._pending: StoreChange | None = None
        self._lock = threading.Lock()
        #: Set by the app once the browser's first page is on screen.
        self.first_page_shown = threading.Event()

    def run(self, cancelled: Callable[[], bool]) -> None:
        """The watch loop (in a thread worker) until ``cancelled()``."""
        ctx = self.ctx
        # Across profiles (PF-6) every profile's store and gateway index is watched: a commit
        # to any store is a change of the list, an edit of any profile's ``sessions.json`` a
        # change of the lanes.
        watchers = [(name, home, ChangeWatcher(db_path, home / "sessions")) for name, db_path, home in self.homes()]
        asked = False
        try:
            while not cancelled():
                change = Change()
                for _name, _home, each in watchers:
                    seen = each.poll()
                    change = replace(change, database=change.database or seen.database,
                                     reopened=change.reopened or seen.reopened, lanes=change.lanes or seen.lanes)
                if not asked and self.first_page_shown.is_set():
                    # The first pages were read before the watcher took its baseline (ahead,
                    # while the UI loaded): a commit in between shows now, not with the next
                    # commit (which may never come). Asked once the browser shows them, so
                    # that the notice has a screen to reach.
                    asked = True
                    if ctx.store.changed_since_first_read():
                        change = replace(change, database=True)
                if ctx.store.check_file() is FileState.REPLACED:  # (deleted: writes stop, the view stays)
                    # Every connection reads the file now at the path: so does what is shown
                    # (the watcher may have opened the new file already and seen no change).
                    change = replace(change, database=True, reopened=True)
                if change.lanes:
                    self.describe_lanes([(name, home, each.lanes) for name, home, each in watchers])
                if change:
                    self.post(StoreChange(database=bool(change.database or change.reopened), lanes=change.lanes))
                deadline = time.monotonic() + ctx.config.poll_interval_s
                while not cancelled() and time.monotonic() < deadline:
                    time.sleep(0.02)
        finally:
            for _name, _home, each in watchers:
                each.close()

    def homes(self) -> list[tuple[str | None, Path, Path]]:
        """``(profile, store, Hermes home)`` of each store shown: one profile's own home, or
        across profiles every profile's (whose lanes' ids are then qualified as the door's
        rows are, ``profile:session_id``)."""
        profiles = getattr(self.ctx.store, "profile_homes", None)
        if profiles:
            return list(profiles)
        return [(None, Path(self.ctx.store.db_path), self.ctx.hermes_home)]

    def load_lanes(self) -> None:
        """Read every gateway index once (at start, and when no watcher runs)."""
        self.describe_lanes([(name, home, load_sessions_index(home / "sessions")) for name, _db, home in self.homes()])
        self.post(StoreChange(lanes=True))

    def describe_lanes(self, indexes: list[tuple[str | None, Path, dict]]) -> None:
        """Describe each lane of each gateway index for the detail pane and the lanes view,
        each under its own profile's gateway config (tolerantly: an index or config that
        cannot be read describes no lanes, the others still do)."""
        now = datetime.fromtimestamp(self.ctx.clock())
        lanes: dict = {}
        for name, home, entries in indexes:
            try:
                config = load_gateway_config(home)
                described = {entry.session_id: describe_lane(entry, config, now) for entry in entries.values()}
            except Exception:
                continue
            for session_id, lane in described.items():
                lanes[session_id if name is None else qualify(name, session_id)] = lane
        self.ctx.lanes.replace(lanes)

    def post(self, change: StoreChange) -> None:
        """From a thread: one pending notice at a time, merged."""
        with self._lock:
            pending = self._pending
            self._pending = StoreChange(
                database=change.database or bool(pending and pending.database),
                lanes=change.lanes or bool(pending and pending.lanes),
            )
        if pending is None:
            self._deliver(self._flush)

    def _flush(self) -> None:
        with self._lock:
            change, self._pending = self._pending, None
        if change is not None:
            self._publish(change)
