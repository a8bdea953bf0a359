"""RecapScreen: the resume recap of a session (§12 RC-1 … RC-10, BR-7).

What is shown, and why:

* **Which session.** The one asked for, redirected by LI-8 (``resolve_resume_session_id``): a
  compression can leave an empty head whose transcript lives in its child, and resuming the
  empty head would show nothing. We do *not* project forward to the compression tip here
  (LI-9's first step): the browser list already shows tips, and a node chosen in the lineage
  tree is shown as itself — the header then says which session is the live tip.
* **Which messages.** RC-1: the conversation of that target from
  ``get_messages_as_conversation(target)`` *without* ancestors (minus ``session_meta``). That
  is what the resumed agent has in its context: a compression child starts from the summary
  of its parent, not from the parent's messages.
* **Lineage position.** ``#k of n``: the target's place in the root-to-tip chain of its
  compression tip (LI-12 applied to the tip, so an intermediate segment reads ``#2 of 3``);
  when the target is not on its tip's chain, the chain of the target itself.
* **Minimal mode** (``recap.mode: minimal``, RC-9): upstream prints no recap; here the card
  holds the last exchange alone (a screen with no conversation at all left nothing to go on).

Keys: Enter resumes (the app exits with the session id, BR-7), ``t`` transcript, ``l`` lineage,
Esc back.
"""

from __future__ import annotations

from typing import Callable

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll


from ..widgets.footer import KeyFooter
from ..context import AppContext, StoreChange
from ..messages import Generation, Stamp, WorkerDone
from ..view_models import RecapData
from ..widgets.recap_view import RecapView, SessionHeader, recap_theme_for
from .base import HermesScreen


class RecapScreen(HermesScreen):
    """The header and "Previous Conversation" card of ``session_id``."""

    BINDINGS = [
        Binding("enter", "resume", "Resume", id="resume"),
        Binding("t", "transcript", "Transcript", id="transcript"),
        Binding("l", "lineage", "Lineage", id="lineage"),
        Binding("q,escape", "back", "Back", id="back"),
        Binding("question_mark", "help", "Help", id="help"),
    ]

    def __init__(self, ctx: AppContext, session_id: str, *, query: str | None = None) -> None:
        super().__init__(ctx)
        self.session_id = session_id
        #: The search that led here: the transcript opened from this recap highlights it (BR-19).
        self.search_query = query
        self.data: RecapData | None = None
        #: An action asked for before the first load came (Enter pressed at once): done when
        #: it comes, rather than dropped.
        self._after_load: Callable[[], None] | None = None
        #: Each load of the recap; only the newest one's answer shows.
        self.loads = Generation()

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="recap-scroll"):
            yield SessionHeader(clock=self.ctx.clock, id="recap-header")
            yield RecapView(id="recap-card")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#recap-scroll").focus()
        self.load()

    @property
    def minimal(self) -> bool:
        return self.ctx.config.recap.mode == "minimal"

    def load(self) -> None:
        self._load(self.loads.next())

    @work(thread=True, group="recap", exclusive=True, exit_on_error=False)
    def _load(self, stamp: Stamp) -> None:
        result = self.ctx.store.recap(self.session_id, self.ctx.config.recap)
        result.lane = self.ctx.lanes.lane_for(result.target_id)
        self.post_message(WorkerDone(self._loaded, result, stamp=stamp))

    def _loaded(self, data: RecapData) -> None:
        self.data = data
        self.query_one(SessionHeader).show(data)
        card = self.query_one(RecapView)
        if data.summary is None:
            card.display = False
        else:
            card.show(data.recap, minimal=self.minimal,
                      theme=recap_theme_for(self.app.current_theme, self.app.theme_variables))
        then, self._after_load = self._after_load, None
        if then is not None:
            then()

    def store_changed(self, change: StoreChange) -> None:
        self.load()

    # ------------------------------------------------------------------ actions

    def _target(self, action: Callable[[], None]) -> str | None:
        """The session ``action`` acts on; before the recap is loaded, None -- and the action
        is done once it is (a second Enter typed at once resumes, it is not lost)."""
        if self.data is None:
            self._after_load = action
            self.notify("Still loading…", timeout=1.5)
            return None
        if self.data.summary is None:
            self.notify("This session no longer exists.", severity="warning", timeout=2)
            return None
        return self.data.target_id

    def action_resume(self) -> None:
        target = self._target(self.action_resume)
        if target:
            # BR-7: the app ends with the chosen id; the CLI prints it and hands off.
            self.app.exit(target)

    def action_transcript(self) -> None:
        target = self._target(self.action_transcript)
        if target:
            self.app.push_screen(self.ctx.screens.transcript(target, query=self.search_query))

    def action_lineage(self) -> None:
        target = self._target(self.action_lineage)
        if target:
            self.app.push_screen(self.ctx.screens.lineage(target))

    def action_back(self) -> None:
        self.dismiss()

