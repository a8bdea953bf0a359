"""HermesApp and ``build_app``: the one factory used by the CLI and by every test.

``build_app(db_path, clock=..., config=...)`` takes everything from its arguments: no module
reads ``~/.hermes`` or the user's config at import time, and relative times come from the
injected clock so tests are deterministic.

The app result (``app.run()``'s return value) is the id of the session the user chose to
resume, or None when they cancelled (SPEC BR-7).
"""

from __future__ import annotations

import gc
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import ModalScreen, Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState, get_current_worker

from hermes_state.db import DatabaseError
from hermes_state.watch import ChangeWatcher

from .config import AppConfig
from .data import BrowserData
from .messages import DataChanged, StoreStatus
from .screens.browser import BrowserScreen
from .screens.help import HelpScreen

STYLES = Path(__file__).parent / "styles"

MIN_WIDTH = 40
MIN_HEIGHT = 10


class TooSmallScreen(ModalScreen[None]):
    """Shown instead of the screens while the terminal is under 40×10 (BR-5)."""

    def compose(self):
        yield Static("Terminal too small", id="too-small")


class HermesApp(App[str | None]):
    """The session browser."""

    TITLE = "Hermes Sessions"
    CSS_PATH = [STYLES / "app.tcss", STYLES / "screens.tcss", STYLES / "modals.tcss"]
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("ctrl+p", "command_palette", "Commands", id="command_palette", show=False),
    ]

    def __init__(
        self,
        db_path: Path,
        *,
        clock: Callable[[], float] = time.time,
        config: AppConfig | None = None,
        source: str | None = None,
        watch: bool = True,
        config_problems: Iterable[str] = (),
        db_label: str | None = None,
    ) -> None:
        super().__init__()
        self.db_path = Path(db_path)
        self.db_label = db_label or _home_relative(self.db_path)
        self.hermes_home = self.db_path.parent
        self.clock = clock
        self.config = config or AppConfig()
        self.initial_source = source
        self.watch_enabled = watch
        self.config_problems = list(config_problems)
        self.data = BrowserData(self.db_path, on_wait=self._wait_from_thread)
        self.read_only_reason: str | None = None
        self._frozen = False
        self._gc_threshold = gc.get_threshold()
        self._lanes: dict[str, Any] = {}
        self._lanes_lock = threading.Lock()
        if self.config.animations == "none":
            self.animation_level = "none"

    # ------------------------------------------------------------------ lifecycle

    async def on_mount(self) -> None:
        # Fewer, cheaper garbage collections: a full collection walks every live object
        # (tens of thousands of styles and segments in a Textual app) and showed up as
        # 50-100 ms stalls between a keystroke and its painted results. Startup objects
        # are frozen out of collection once the first page is drawn (see _gc_settle).
        self._gc_threshold = gc.get_threshold()
        gc.set_threshold(10_000, 50, 50)
        try:
            self.theme = self.config.theme
        except Exception:
            self.theme = "textual-dark"
        if self.config.keymap:
            self.set_keymap(self.config.keymap)
        await self.push_screen(BrowserScreen(source=self.initial_source))
        for problem in self.config_problems:
            self.notify(problem, severity="warning", timeout=8, markup=False)
        self.check_access()
        self.load_lanes()
        if self.watch_enabled:
            self.watch_store()
        self._check_size()

    def on_unmount(self) -> None:
        self.data.close()
        # Hand frozen objects back to the collector (tests run many apps in one process).
        gc.unfreeze()
        gc.set_threshold(*self._gc_threshold)

    def freeze_startup_objects(self) -> None:
        """Called once the first page is painted: keep startup objects out of collections."""
        if not self._frozen:
            self._frozen = True
            gc.collect()
            gc.freeze()

    @work(thread=True, group="access", exit_on_error=False)
    def check_access(self) -> None:
        try:
            reason = self.data.read_only_reason
        except DatabaseError as exc:
            self.call_from_thread(self._unavailable, str(exc))
            return
        self.call_from_thread(self._set_read_only, reason, list(self.data.warnings))

    # ------------------------------------------------------------------ unusable database

    def _unavailable(self, reason: str) -> None:
        """The database cannot be opened: show why (one line) instead of the browser."""
        from .screens.unavailable import UnavailableScreen

        for screen in self.screen_stack:
            if isinstance(screen, UnavailableScreen):
                screen.set_reason(reason)
                return
        self.push_screen(UnavailableScreen(reason))

    @work(thread=True, group="reopen", exclusive=True, exit_on_error=False)
    def retry_open(self) -> None:
        """Try to open the database again (after ``r`` or a change to the file)."""
        try:
            self.data.reader
        except DatabaseError as exc:
            self.call_from_thread(self._unavailable, str(exc))
            return
        self.call_from_thread(self._available)

    def _available(self) -> None:
        from .screens.unavailable import UnavailableScreen

        if isinstance(self.screen, UnavailableScreen):
            self.pop_screen()
        browser = self._browser()
        if browser is not None:
            browser.refresh_data()
        self.check_access()

    def _set_read_only(self, reason: str | None, warnings: list[str]) -> None:
        self.read_only_reason = reason
        for warning in warnings:
            self.notify(warning, severity="warning", timeout=8, markup=False)
        screen = self._browser()
        if screen is not None:
            screen._update_titles()

    def _browser(self) -> BrowserScreen | None:
        for screen in self.screen_stack:
            if isinstance(screen, BrowserScreen):
                return screen
        return None

    # ------------------------------------------------------------------ live refresh

    @work(thread=True, group="watch", exclusive=True, exit_on_error=False)
    def watch_store(self) -> None:
        """Poll ``PRAGMA data_version`` and ``sessions.json`` (BR-8); post DataChanged."""
        worker = get_current_worker()
        watcher = ChangeWatcher(self.db_path, self.hermes_home / "sessions" / "sessions.json")
        try:
            while not worker.is_cancelled:
                change = watcher.poll()
                if change.lanes:
                    self._load_lanes()
                if change:
                    self.post_message(DataChanged(database=change.database or change.reopened, lanes=change.lanes))
                deadline = time.monotonic() + self.config.poll_interval_s
                while not worker.is_cancelled and time.monotonic() < deadline:
                    time.sleep(0.02)
        finally:
            watcher.close()

    @work(thread=True, group="lanes", exit_on_error=False)
    def load_lanes(self) -> None:
        self._load_lanes()
        self.post_message(DataChanged(database=False, lanes=True))

    def _load_lanes(self) -> None:
        """Read the gateway index (tolerantly) and describe each lane for the detail pane."""
        try:
            from hermes_state.gateway import describe_lane, load_gateway_config, load_sessions_index

            entries = load_sessions_index(self.hermes_home / "sessions")
            config = load_gateway_config(self.hermes_home)
            now = datetime.fromtimestamp(self.clock())
            lanes = {entry.session_id: describe_lane(entry, config, now) for entry in entries.values()}
        except Exception:
            lanes = {}
        with self._lanes_lock:
            self._lanes = lanes

    def lane_for(self, session_id: str) -> Any:
        with self._lanes_lock:
            return self._lanes.get(session_id)

    def live_lane_ids(self) -> set[str]:
        with self._lanes_lock:
            return set(self._lanes)

    @on(DataChanged)
    def _data_changed(self, event: DataChanged) -> None:
        for screen in self.screen_stack:
            handler = getattr(screen, "store_changed", None)
            if handler is not None:
                handler(event)

    def _wait_from_thread(self, text: str | None) -> None:
        try:
            self.call_from_thread(self.post_message, StoreStatus(text))
        except RuntimeError:
            pass  # called from the event loop thread or after exit

    @on(StoreStatus)
    def _store_status(self, event: StoreStatus) -> None:
        screen = self._browser()
        if screen is not None:
            from .widgets.status import StatusLine

            screen.query_one(StatusLine).set_warning(event.text, event.severity)

    # ------------------------------------------------------------------ errors

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The single error path: a failed worker becomes a notice, never a traceback."""
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        if isinstance(error, DatabaseError) and not self.data.is_open:
            self._unavailable(str(error))  # shown on its own screen, not as a notice
            return
        if isinstance(error, DatabaseError):
            message = str(error)
        else:
            message = f"{type(error).__name__}: {error}"
        self.notify(message.splitlines()[0] if message else "error", severity="error", timeout=6, markup=False)

    # ------------------------------------------------------------------ size guard

    def on_resize(self, event) -> None:
        self._check_size(event.size)

    def _check_size(self, size=None) -> None:
        if self._browser() is None:
            return  # on_mount checks again once the browser is up
        size = size or self.size
        small = size.width < MIN_WIDTH or size.height < MIN_HEIGHT
        if small and not isinstance(self.screen, TooSmallScreen):
            self.push_screen(TooSmallScreen())
        elif not small and isinstance(self.screen, TooSmallScreen):
            self.pop_screen()

    # ------------------------------------------------------------------ palette

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every action bound on the current screen, plus Textual's own (BR-3)."""
        seen: set[str] = set()
        for key, active in screen.active_bindings.items():
            binding = active.binding
            if not binding.description or binding.action in seen:
                continue
            seen.add(binding.action)
            node = active.node
            yield SystemCommand(
                binding.description,
                f"{binding.description} (key: {self.get_key_display(binding)})",
                lambda node=node, action=binding.action: self.call_later(node.run_action, action),
            )
        yield from super().get_system_commands(screen)

    def action_show_help(self) -> None:
        self.push_screen(HelpScreen(self.screen))

    # ------------------------------------------------------------------ outcomes

    def action_cancel(self) -> None:
        self.exit(None)

    def resume(self, session_id: str) -> None:
        """The user chose a session: end the app and hand its id to the CLI (BR-7)."""
        self.exit(session_id)

    # ------------------------------------------------------------------ screens of the next issue

    def _not_built(self, what: str) -> None:
        self.notify(f"{what} is not built yet.", severity="warning", timeout=3)

    def open_recap(self, session_id: str) -> None:
        from .screens.recap import RecapScreen

        self.push_screen(RecapScreen(session_id))

    def open_transcript(self, session_id: str, *, message_id: int | None = None, query: str | None = None) -> None:
        from .screens.transcript import TranscriptScreen

        self.push_screen(TranscriptScreen(session_id, message_id=message_id, query=query))

    def open_lineage(self, session_id: str) -> None:
        from .screens.lineage import LineageScreen

        self.push_screen(LineageScreen(session_id))

    def rename_session(self, session_id: str) -> None:
        from .actions import session_actions

        session_actions(self).rename(session_id)

    def delete_session(self, session_id: str) -> None:
        from .actions import session_actions

        session_actions(self).delete(session_id)

    def undo_delete(self) -> None:
        from .actions import session_actions

        session_actions(self).undo()

    def export_sessions(self, session_id: str | None, *, query: str | None, source: str | None) -> None:
        from .actions import session_actions

        session_actions(self).export(session_id, query=query, source=source)


def build_app(
    db_path: Path | str,
    *,
    clock: Callable[[], float] = time.time,
    config: AppConfig | None = None,
    source: str | None = None,
    watch: bool = True,
    config_problems: Iterable[str] = (),
    db_label: str | None = None,
) -> HermesApp:
    """The browser for ``db_path`` with an injected clock and config.

    ``db_label`` is how the status line names the database (default: the path, with the
    home directory shown as ``~``); tests pass a fixed label.
    """
    return HermesApp(
        Path(db_path),
        clock=clock,
        config=config,
        source=source,
        watch=watch,
        config_problems=config_problems,
        db_label=db_label,
    )


def _home_relative(path: Path) -> str:
    try:
        return "~/" + str(path.resolve().relative_to(Path.home().resolve()))
    except (ValueError, OSError):
        return str(path)
