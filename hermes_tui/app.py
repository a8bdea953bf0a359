"""HermesApp and ``build_app``: the one factory used by the CLI and by every test.

``build_app(db_path, clock=..., config=...)`` takes everything from its arguments: no module
reads ``~/.hermes`` or the user's config at import time, and relative times come from the
injected clock so tests are deterministic.

The app is small on purpose: it builds the :class:`~hermes_tui.context.AppContext`, shows the
first screen, runs the watcher that publishes "store changed", and owns the one path by which
a failed worker becomes a notice. Screens own their flows; nothing calls back into the app.

The app result (``app.run()``'s return value) is the id of the session the user chose to
resume, or None when they cancelled (BR-7).
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from textual import events, on, work
from textual.app import App, SystemCommand
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState, get_current_worker

from hermes_state.errors import DatabaseError
from hermes_state.paths import cache_dir as default_cache_dir, default_trash_dir

from .config import DEFAULT_THEME, AppConfig, config_path, save_setting, theme_problem
from .keys import APP_BINDINGS, checked_keymap, keymap_problems
from .context import Access, AppContext, Screens, Signals, StoreChange, StoreStatus
from .live import LiveFeed
from .messages import WorkerDone, apply_result
from .data import BrowserData, FirstWindow
from .view_models import FileState
from .legible import legible_variables
from .screens.base import WorkerFailed
from .collector import release_collection
from .screens.browser import BrowserScreen
from .screens.unavailable import UnavailableScreen
from .widgets.text_field import drop_held_keys, hold_key, hold_keys, release_held_keys_later

def _styles_dir() -> Path:
    """Where the ``.tcss`` files are: ``styles/`` at the repository top is their one source;
    a built wheel carries them inside this package (pyproject's ``force-include``), while a
    source tree or an editable install finds them beside the package."""
    shipped = Path(__file__).parent / "styles"
    return shipped if shipped.is_dir() else Path(__file__).parent.parent / "styles"


STYLES = _styles_dir()

MIN_WIDTH = 40
MIN_HEIGHT = 10


class _StatusPosted(Message):
    """A :class:`StoreStatus` from the store door's threads, for the event loop."""

    def __init__(self, status: StoreStatus) -> None:
        super().__init__()
        self.status = status


class TooSmallScreen(Screen[None]):
    """Shown instead of the screens while the terminal is under 40×10 (BR-5).

    A full screen, not a modal: nothing of the screens below is composited through it."""

    def compose(self):
        yield Static("Terminal too small", id="too-small")


class HermesApp(App[str | None]):
    """The session browser."""

    TITLE = "Hermes Sessions"
    CSS_PATH = [STYLES / "app.tcss", STYLES / "screens.tcss", STYLES / "modals.tcss"]
    ENABLE_COMMAND_PALETTE = True
    # (in keys.py, which checks the keymap against them: Ctrl+P, Ctrl+C cancels)
    BINDINGS = APP_BINDINGS

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
        trash_dir: Path | None = None,
        save_settings: bool = False,
        cache_dir: Path | None = None,
        first_window: FirstWindow | None = None,
        profiles: list | None = None,
        profile: str | None = None,
    ) -> None:
        super().__init__()
        #: Write settings the user changes in the app (the theme) to the config file.
        self.save_settings = save_settings
        self.db_path = Path(db_path)
        self.initial_source = source
        self.watch_enabled = watch
        self.config_problems = list(config_problems)
        config = config or AppConfig()
        if config.keymap:
            # A key name no key press has is said and left out: the binding keeps its keys.
            keymap, bad_keys = checked_keymap(config.keymap, str(config_path()))
            if keymap != config.keymap:  # (keys left out; a character's Unicode name, named as Textual does)
                config = config.model_copy(update={"keymap": keymap})
            if bad_keys:
                self.config_problems += bad_keys
        door = dict(
            on_wait=self._wait_from_thread,
            on_file_event=self._file_event,
            on_activity=self._activity_from_thread,
            trash_dir=trash_dir if trash_dir is not None else default_trash_dir(),
            cache_dir=cache_dir if cache_dir is not None else default_cache_dir(),
        )
        if profiles:
            # Every profile's store at once (PF-6): one door fanning out to each.
            from .data_profiles import ProfilesData

            # (first_window: each profile's read-ahead, by name, when the caller made them)
            store: Any = ProfilesData(list(profiles), page_size=config.page_size,
                                      first_windows=first_window if isinstance(first_window, dict) else None,
                                      **door)
            db_label = db_label or f"{len(profiles)} profiles"
        else:
            store = BrowserData(self.db_path, first_window=first_window, profile=profile, **door)
        self.ctx = AppContext(
            store=store,
            clock=clock,
            config=config,
            signals=Signals(self),
            screens=Screens(
                recap=lambda session_id, **kw: _recap_screen(self.ctx, session_id, **kw),
                transcript=lambda session_id, **kw: _transcript_screen(self.ctx, session_id, **kw),
                lineage=lambda session_id: _lineage_screen(self.ctx, session_id),
                help=lambda origin: _help_screen(origin, self.ctx.config_problems),
            ),
            hermes_home=self.db_path.parent,
            db_label=db_label or _home_relative(self.db_path),
        )
        if config.keymap:
            # Said here, naming the file and the key: a problem in config.yaml is not silent.
            self.config_problems += keymap_problems(config.keymap, str(config_path()))
        if config.theme not in self.available_themes:
            # Said, not silently replaced: the default theme is used until the name is fixed.
            self.config_problems.append(theme_problem(config.theme, self.available_themes, str(config_path())))
        self.ctx.config_problems = self.config_problems
        self._frozen = False
        self._gc_threshold = gc.get_threshold()
        self._gc_was_enabled = gc.isenabled()
        self.live = LiveFeed(self.ctx, self._deliver, self._store_changed)
        if config.animations == "none":
            self.animation_level = "none"

    def get_css_variables(self) -> dict[str, str]:
        """The theme's variables plus the app's legible text colours ``$hs-*`` (BR-18)."""
        variables = super().get_css_variables()
        extra = legible_variables(variables)
        variables.update(extra)
        self.theme_variables = {**self.theme_variables, **extra}
        return variables

    def action_cancel(self) -> None:
        """Leave without choosing a session (the CLI exits 130)."""
        self.exit(None)

    # ------------------------------------------------------------------ lifecycle

    def get_default_screen(self) -> Screen:
        return BrowserScreen(self.ctx, source=self.initial_source, on_first_page=self._first_page_painted)

    def on_mount(self) -> None:
        self._collect_garbage_between_keys()
        try:
            self.theme = self.ctx.config.theme if self.ctx.config.theme in self.available_themes else DEFAULT_THEME
        except Exception:
            self.theme = DEFAULT_THEME
        self.theme_changed_signal.subscribe(self, self._keep_theme)
        self.screen_change_signal.subscribe(self, self._screen_changed, immediate=True)
        if self.ctx.config.keymap:
            self.set_keymap(self.ctx.config.keymap)
        for problem in self.config_problems:
            self.notify(problem, severity="warning", timeout=8, markup=False)
        self.check_access()
        if self.watch_enabled:
            self.watch_store()
        self.call_after_refresh(self._check_size)

    def _keep_theme(self, theme) -> None:
        """The theme chosen (command palette) is kept for the next launch (BR-18)."""
        name = getattr(theme, "name", None)
        if not name or name == self.ctx.config.theme or not self.save_settings:
            return
        self.ctx.config.theme = name
        problem = save_setting("theme", name)
        if problem:
            self.notify(problem, severity="warning", timeout=6, markup=False)

    def on_unmount(self) -> None:
        release_collection()  # (a keystroke's hold, if the app ends before its answer)
        self.ctx.store.close()
        # Hand frozen objects back to the collector (tests run many apps in one process).
        gc.unfreeze()
        gc.set_threshold(*self._gc_threshold)
        if not self._gc_was_enabled:
            gc.disable()

    # ------------------------------------------------------------------ garbage collection

    #: Input within this many seconds: the person is busy, collect later.
    GC_IDLE_S = 0.75

    def _collect_garbage_between_keys(self) -> None:
        """Garbage collection where nobody waits for it.

        Python's collector runs when allocations say so, which in a Textual app is while a
        keystroke's answer is drawn: a collection of the older generations walks every object
        that survived the young one -- Textual's strip and style caches -- and took 65 ms on
        average, 240-256 ms at worst, in the middle of typing. So: what the imports made is
        frozen out of collection at once (and what the start made, once the first page is
        drawn); the young generation is collected as usual (10,000 allocations, ~1 ms); the
        older ones only when the person has not typed or clicked for ``GC_IDLE_S`` -- or, for
        someone who never pauses, after 200 young collections.
        """
        self._gc_threshold = gc.get_threshold()
        self._gc_was_enabled = gc.isenabled()  # (the CLI pauses it while the app starts)
        gc.freeze()
        gc.set_threshold(10_000, 200, 1_000_000)
        gc.enable()
        self._last_input = time.monotonic()
        self._gc_ticks = 0
        self.set_interval(0.5, self._collect_if_idle, name="gc-when-idle")

    async def on_event(self, event) -> None:
        if isinstance(event, (events.Key, events.MouseDown, events.MouseScrollDown,
                              events.MouseScrollUp, events.Paste)):
            self._last_input = time.monotonic()
            if isinstance(event, events.Key) and not event.is_forwarded and hold_key(self, event):
                return  # typed ahead of a screen on its way: handed to it once it is there
        await super().on_event(event)

    # ------------------------------------------------------------------ typed ahead

    def _screen_changed(self, screen: Screen) -> None:
        """A screen pushed takes the keys typed behind the key that opened it (they reached
        the app, or the widget focused before, ahead of the new screen's field); a screen
        shown again (a dialog dismissed) takes those held while the dialog saved."""
        if not screen.is_mounted:
            hold_keys(self)
            # The new screen composes and mounts (its field focused) before its queue runs;
            # the release then waits behind what its mount asked of the app (a ``focus()``).
            screen.call_later(release_held_keys_later, self)
        else:
            release_held_keys_later(self)

    def _collect_if_idle(self) -> None:
        if time.monotonic() - self._last_input < self.GC_IDLE_S:
            return
        young, older, _oldest = gc.get_count()
        self._gc_ticks += 1
        if self._gc_ticks >= 60:  # every ~30 s of quiet: the whole heap, cycles and all
            self._gc_ticks = 0
            gc.collect()
        elif older or young > 2_000:
            gc.collect(1)

    def _first_page_painted(self) -> None:
        """Keep what the start made out of later collections, read the gateway's lanes and
        ready the search for the first key (once). The lanes (``sessions.json``,
        ``config.yaml``) only annotate the detail pane: read beside the first page they took
        the interpreter from it; the search engine and its models are not needed for it."""
        self.live.first_page_shown.set()
        if not self._frozen:
            self._frozen = True
            gc.collect(1)
            gc.freeze()
            self.load_lanes()
            self.warm_search()

    # ------------------------------------------------------------------ access

    @work(thread=True, group="access", exclusive=True, exit_on_error=False)
    def check_access(self) -> None:
        """Open the reader and ask whether the store can be written (off the event loop)."""
        store = self.ctx.store
        try:
            reason = store.write_problem()
        except DatabaseError as exc:
            self.post_message(WorkerDone(self._unavailable, str(exc)))
            return
        access = Access(read_only_reason=reason, immutable=store.immutable)
        self.post_message(WorkerDone(self._set_access, access, list(store.warnings)))

    def _set_access(self, access: Access, warnings: list[str]) -> None:
        self.ctx.access = access
        if isinstance(self.screen, UnavailableScreen):
            self.pop_screen()
            self.ctx.signals.store_changed.publish(StoreChange(database=True))
        for warning in warnings:
            self.notify(warning, severity="warning", timeout=8, markup=False)
        self.ctx.signals.access.publish(access)

    def _unavailable(self, reason: str) -> None:
        """The database cannot be opened: show why (one line) instead of the browser."""
        if isinstance(self.screen, UnavailableScreen):
            self.screen.set_reason(reason)
            return
        self.push_screen(UnavailableScreen(reason, retry=self.check_access))

    # ------------------------------------------------------------------ live refresh

    @work(thread=True, group="watch", exclusive=True, exit_on_error=False)
    def watch_store(self) -> None:
        """The live feed's watch loop (BR-8), until the app ends."""
        worker = get_current_worker()
        self.live.run(lambda: worker.is_cancelled)

    @work(thread=True, group="lanes", exit_on_error=False)
    def load_lanes(self) -> None:
        self.live.load_lanes()

    @work(thread=True, group="warm", exit_on_error=False)
    def warm_search(self) -> None:
        self.ctx.store.warm_search()

    def _store_changed(self, change: StoreChange) -> None:
        """A coalesced change reaches the screens -- or, while the database cannot be opened,
        is a reason to try again."""
        if isinstance(self.screen, UnavailableScreen):
            if change.database:
                self.check_access()
            return
        self.ctx.signals.store_changed.publish(change)

    def _file_event(self, kind: str, text: str) -> None:
        """From a worker: the database file was replaced (reopened) or deleted. Said once.
        (Posted: an app that is closing drops it.)"""
        self.post_message(WorkerDone(self._file_changed, kind, text))

    def _file_changed(self, kind: str, text: str) -> None:
        self.notify(text, severity="warning", timeout=10, markup=False)
        if kind == FileState.DELETED.value:
            self.ctx.access = Access(read_only_reason=self.ctx.store.gone, immutable=self.ctx.access.immutable)
            self.ctx.signals.access.publish(self.ctx.access)
        else:
            self.check_access()  # the new file may differ (read-only, another version)
            self.ctx.signals.store_changed.publish(StoreChange(database=True))

    def _wait_from_thread(self, text: str | None) -> None:
        self._status_from_thread(StoreStatus(text))

    def _activity_from_thread(self, text: str | None) -> None:
        self._status_from_thread(StoreStatus(text, activity=True))

    def _status_from_thread(self, status: StoreStatus) -> None:
        """Queued, never waited for: the store door says this while it holds its own locks
        (a write's lock wait, a ranking), and a thread that waited for the event loop there
        would hang the day the loop asked the door for anything. From the loop's own thread
        it is queued as well (``call_from_thread`` refused that: the status was lost)."""
        self.post_message(_StatusPosted(status))

    @on(_StatusPosted)
    def _status_posted(self, message: _StatusPosted) -> None:
        self.ctx.signals.status.publish(message.status)

    def _deliver(self, apply: Callable[[], None]) -> None:
        """The live feed's way to the event loop: posted, so its watch thread never waits."""
        self.post_message(WorkerDone(apply))

    @on(WorkerDone)
    def _worker_done(self, message: WorkerDone) -> None:
        """The app's own workers' results (access, file events, the live feed)."""
        apply_result(message, self.report_error)

    # ------------------------------------------------------------------ errors

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.report_error(event.worker.error)

    @on(WorkerFailed)
    def _worker_failed(self, event: WorkerFailed) -> None:
        event.stop()
        self.report_error(event.error)

    def report_error(self, error: BaseException) -> None:
        """The single error path: a failed worker becomes a notice, never a traceback."""
        drop_held_keys(self)  # (a dialog being opened for them will not open)
        if isinstance(error, DatabaseError) and not self.ctx.store.is_open:
            self._unavailable(str(error))  # shown on its own screen, not as a notice
            return
        message = str(error) if isinstance(error, DatabaseError) else f"{type(error).__name__}: {error}"
        first = message.splitlines()[0] if message else type(error).__name__
        self.notify(first, severity="error", timeout=6, markup=False)

    # ------------------------------------------------------------------ screenshot

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """The palette's Screenshot: saved where exports go (a folder that exists, else the
        home directory -- Textual's default ~/Downloads failed silently where it is missing),
        and the notice says where."""
        from .config import default_export_dir

        directory = Path(path).expanduser() if path else default_export_dir(self.ctx.config)
        if not directory.is_dir():
            directory = Path.home()
        try:
            saved = self.save_screenshot(filename, str(directory))
        except OSError as exc:
            self.notify(f"Screenshot not saved: {exc.strerror or exc} ({directory})",
                        severity="error", timeout=8, markup=False)
            return
        self.notify(f"Screenshot saved to {saved}", timeout=8, markup=False)

    # ------------------------------------------------------------------ size guard

    def on_resize(self, event) -> None:
        self._check_size(event.size)

    def _check_size(self, size=None) -> None:
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
            if binding.action == "screen.copy_text":
                # Textual's Ctrl+C copies a mouse selection, if any, else it falls through to
                # our Ctrl+C (cancel): from the palette there is never a selection, and
                # "Copy selected text (^c)" beside a Ctrl+C that quits misleads.
                continue
            seen.add(binding.action)
            node = active.node
            yield SystemCommand(
                binding.description,
                f"{binding.description} (key: {self.get_key_display(binding)})",
                lambda node=node, action=binding.action: self.call_later(node.run_action, action),
            )
        for command in super().get_system_commands(screen):
            if command.title == "Screenshot":
                # Textual's own saves to ~/Downloads through deliver_screenshot, and says only
                # "Failed to save screenshot" where that folder is missing: ours saves where
                # exports go and says where (or why not).
                command = SystemCommand(command.title, command.help, lambda: self.action_screenshot())
            yield command


def build_app(
    db_path: Path | str,
    *,
    clock: Callable[[], float] = time.time,
    config: AppConfig | None = None,
    source: str | None = None,
    watch: bool = True,
    config_problems: Iterable[str] = (),
    db_label: str | None = None,
    trash_dir: Path | None = None,
    save_settings: bool = False,
    cache_dir: Path | None = None,
    first_window: FirstWindow | None = None,
    profiles: list | None = None,
    profile: str | None = None,
) -> HermesApp:
    """The browser for ``db_path`` with an injected clock and config.

    ``db_label`` is how the status line names the database (default: the path, with the
    home directory shown as ``~``); tests pass a fixed label. ``trash_dir`` is where deleted
    sessions are kept for ``hermes sessions restore`` (default: the user data directory);
    ``cache_dir`` where the list's recency index is kept between runs (default: the user
    cache directory); ``first_window`` the first pages read ahead while the UI was imported
    (see :func:`hermes_tui.browse.start_first_window`); ``profiles`` several Hermes profiles
    (:class:`hermes_state.profiles.Profile`) browsed as one list (PF-6), ``db_path`` then the
    first one's store; ``profile`` the name of ``db_path``'s profile when the commands the
    browser prints must name it (PF-7: it was named, or is not the default).
    """
    return HermesApp(
        Path(db_path),
        clock=clock,
        config=config,
        source=source,
        watch=watch,
        config_problems=config_problems,
        db_label=db_label,
        trash_dir=trash_dir,
        save_settings=save_settings,
        cache_dir=cache_dir,
        first_window=first_window,
        profiles=profiles,
        profile=profile,
    )


def _home_relative(path: Path) -> str:
    try:
        return "~/" + str(path.resolve().relative_to(Path.home().resolve()))
    except (ValueError, OSError):
        return str(path)


# The screens a person opens from the list are imported when first opened, not with the app:
# together ~35 ms of every start (the lineage tree's widgets alone ~20), before the first page.


def _recap_screen(ctx: AppContext, session_id: str, **kw) -> Screen:
    from .screens.recap import RecapScreen

    return RecapScreen(ctx, session_id, **kw)


def _transcript_screen(ctx: AppContext, session_id: str, **kw) -> Screen:
    from .screens.transcript import TranscriptScreen

    return TranscriptScreen(ctx, session_id, **kw)


def _lineage_screen(ctx: AppContext, session_id: str) -> Screen:
    from .screens.lineage import LineageScreen

    return LineageScreen(ctx, session_id)


def _help_screen(origin: Screen, problems: list[str]) -> Screen:
    from .screens.help import HelpScreen

    return HelpScreen(origin, problems=problems)
