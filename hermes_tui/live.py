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
from typing import Callable

from hermes_state.gateway import describe_lane, load_gateway_config, load_sessions_index
from hermes_state.watch import ChangeWatcher

from .context import AppContext, StoreChange
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
        watcher = ChangeWatcher(ctx.store.db_path, ctx.sessions_dir)
        # Across profiles (PF-6) every other profile's store is watched too: a commit to any
        # of them is a change of the list.
        others = [ChangeWatcher(path) for path in getattr(ctx.store, "watch_paths", ())[1:]]
        asked = False
        try:
            while not cancelled():
                change = watcher.poll()
                for other in others:
                    seen = other.poll()
                    if seen.database or seen.reopened:
                        change = replace(change, database=True)
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
                    self.describe_lanes(watcher.lanes)
                if change:
                    self.post(StoreChange(database=bool(change.database or change.reopened), lanes=change.lanes))
                deadline = time.monotonic() + ctx.config.poll_interval_s
                while not cancelled() and time.monotonic() < deadline:
                    time.sleep(0.02)
        finally:
            for each in (watcher, *others):
                each.close()

    def load_lanes(self) -> None:
        """Read the gateway index once (at start, and when no watcher runs)."""
        self.describe_lanes(load_sessions_index(self.ctx.sessions_dir))
        self.post(StoreChange(lanes=True))

    def describe_lanes(self, entries: dict) -> None:
        """Describe each lane of the gateway index for the detail pane (tolerantly)."""
        try:
            config = load_gateway_config(self.ctx.hermes_home)
            now = datetime.fromtimestamp(self.ctx.clock())
            lanes = {entry.session_id: describe_lane(entry, config, now) for entry in entries.values()}
        except Exception:
            lanes = {}
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
