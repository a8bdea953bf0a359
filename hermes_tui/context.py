"""What a screen needs, handed to it: the store door, the clock, the config, and signals.

The app builds one :class:`AppContext` and passes it to every screen it creates. Screens use
it to read and write (``ctx.store``), to open the screens below them (``ctx.screens``) and to
hear about the world (``ctx.signals``) — they never call back into the app. Data flows one way:
app → screens → modals/widgets → the store door → :mod:`hermes_state`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from textual.signal import Signal

from .config import AppConfig
from .data import BrowserData
from .operations import UndoStack

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen


@dataclass(frozen=True)
class StoreChange:
    """What changed since the last notice: the database (another process committed) and/or
    the gateway index (``sessions.json``). Coalesced: one notice may stand for many commits."""

    database: bool = False
    lanes: bool = False


@dataclass(frozen=True)
class StoreStatus:
    """A condition the status line shows while it lasts (``text`` None clears it); with
    ``activity``, what the store door is busy with instead (no warning: shown after one)."""

    text: str | None
    severity: str = "warning"
    activity: bool = False


@dataclass
class Access:
    """Whether this store can be changed from here, found once the reader is open."""

    #: Why writes are refused (None: they are allowed, or not known yet).
    read_only_reason: str | None = None
    #: Read as an immutable snapshot: other processes' changes are not seen.
    immutable: bool = False


class Lanes:
    """The gateway lanes, by the session they point at; replaced whole by a reader thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_session: dict[str, Any] = {}

    def replace(self, lanes: dict[str, Any]) -> None:
        with self._lock:
            self._by_session = dict(lanes)

    def lane_for(self, session_id: str | None) -> Any:
        if session_id is None:
            return None
        with self._lock:
            return self._by_session.get(session_id)

    def live_ids(self) -> set[str]:
        with self._lock:
            return set(self._by_session)


class Signals:
    """App-wide events. Publish on the event loop; subscribers are screens."""

    def __init__(self, owner: "App") -> None:
        #: Another process committed, or the gateway index changed (:class:`StoreChange`).
        self.store_changed: Signal[StoreChange] = Signal(owner, "store-changed")
        #: A wait for another process's lock began or ended (:class:`StoreStatus`).
        self.status: Signal[StoreStatus] = Signal(owner, "store-status")
        #: :attr:`AppContext.access` was found or changed.
        self.access: Signal[Access] = Signal(owner, "access")


@dataclass
class Screens:
    """Factories of the screens a screen may open; built by the app, so screens do not import
    each other (recap ↔ lineage would be a cycle)."""

    recap: Callable[..., "Screen"]
    transcript: Callable[..., "Screen"]
    lineage: Callable[[str], "Screen"]
    help: Callable[["Screen"], "Screen"]


@dataclass
class AppContext:
    store: BrowserData
    clock: Callable[[], float]
    config: AppConfig
    signals: Signals
    screens: Screens
    hermes_home: Path
    db_label: str
    lanes: Lanes = field(default_factory=Lanes)
    access: Access = field(default_factory=Access)
    #: Deletes made in this run of the app, for ``u``.
    undo: UndoStack = field(default_factory=UndoStack)
    #: Problems of config.yaml (bad values, keymap conflicts and unknown ids), one line each:
    #: shown by the status line and the help screen for as long as the app runs, not only
    #: as a toast that vanishes before it is read.
    config_problems: list[str] = field(default_factory=list)

    @property
    def sessions_dir(self) -> Path:
        return self.hermes_home / "sessions"
