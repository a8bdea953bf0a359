"""LineageScreen: the whole family of a session (LI-1, LI-13).

The tree comes from ``SessionDB.lineage_tree`` (root, compression continuations, branches,
delegates, with edge kinds, live tips, the current node and broken-chain flags), read in a
thread worker. It opens with the cursor on the session it was opened from; Enter opens the
recap of the highlighted node, ``t`` its transcript, Esc goes back. When another process
commits (``store_changed``) the tree is re-read and rebuilt with the cursor kept on the same
session, so a new compression child appears without reopening.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static, Tree


from hermes_state.lineage import EDGE_LABELS, EdgeKind
from hermes_state.models import LineageNode
from ..shown_time import stamp_and_relative as _when

from ..widgets.footer import KeyFooter
from ..context import AppContext, StoreChange
from ..messages import Generation, Stamp, WorkerDone
from ..textsafe import inert_line
from .base import HermesScreen
from .browser_reading import mark_opened
from ..legible import muted
from ..widgets.lineage_tree import (
    CAME_FROM,
    LIVE_TIP,
    LineageTree,
    node_problems,
    node_status,
)



def family_summary(family: LineageNode, secondary: Style | str = "dim") -> Text:
    """One line about the whole family: sizes, edge kinds, and whether a chain is broken.
    ``secondary`` styles the figures (the screen passes the theme's legible muted colour)."""
    nodes = list(family.walk())
    kinds = {kind: 0 for kind in EdgeKind}
    for node in nodes:
        if node.edge is not None:
            kinds[node.edge] += 1
    messages = sum(n.message_count for n in nodes)
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("Lineage of ", style=secondary)
    text.append(inert_line(family.title) or inert_line(family.id), style="bold")
    text.append(f"   {len(nodes):,} session{'s' if len(nodes) != 1 else ''} · {messages:,} messages", style=secondary)
    parts = []
    for kind, one, many in ((EdgeKind.COMPRESSION, "compression", "compressions"),
                            (EdgeKind.BRANCH, "branch", "branches"),
                            (EdgeKind.DELEGATE, "delegate", "delegates"),
                            (EdgeKind.RESET, "reset", "resets"), (EdgeKind.OTHER, "other", "others")):
        if kinds[kind]:
            parts.append(f"{kinds[kind]:,} {one if kinds[kind] == 1 else many}")
    if parts:
        text.append(" · " + ", ".join(parts), style=secondary)
    broken = [n for n in nodes if n.broken_parent or n.cycle]
    if broken:
        text.append(f"   ⚠ broken chain ({len(broken)} node{'s' if len(broken) != 1 else ''})", style="bold")
    return text


class LineageScreen(HermesScreen):
    """The family tree of ``session_id`` with a detail pane for the highlighted node."""


    BINDINGS = [
        Binding("t", "transcript", "Transcript", id="transcript"),
        Binding("q,escape", "back", "Back", id="back"),
        Binding("question_mark", "help", "Help", id="help"),
    ]

    def __init__(self, ctx: AppContext, session_id: str) -> None:
        super().__init__(ctx)
        self.session_id = session_id
        self.family: LineageNode | None = None
        #: Each load of the family; only the newest one's answer shows.
        self.loads = Generation()
        self.loaded = False
        #: A read of the family is under way; another was asked for meanwhile.
        self.loading = False
        self.reload_pending = False

    def compose(self) -> ComposeResult:
        yield Static(Text("Loading lineage…", style=muted(self)), id="lineage-header")
        with Vertical(id="lineage-panes"):
            yield LineageTree(clock=self.ctx.clock, id="lineage-tree")
            yield Static("", id="lineage-detail")
        yield KeyFooter()

    @property
    def tree(self) -> LineageTree:
        return self.query_one(LineageTree)

    def on_mount(self) -> None:
        self.tree.focus()
        self.load()

    # ------------------------------------------------------------------ loading

    def load(self) -> None:
        if self.loading:
            # A family of 200,000 sessions takes seconds to read, and a gateway commits more
            # often than that: one more read once this one is done, not one a commit (each
            # would hold the reader meanwhile, and the list behind this screen waits for it).
            self.reload_pending = True
            return
        self.loading = True
        self._load(self.loads.next())

    @work(thread=True, group="lineage", exclusive=True, exit_on_error=False)
    def _load(self, stamp: Stamp) -> None:
        try:
            family = self.ctx.store.lineage(self.session_id)
        except BaseException:
            self.post_message(WorkerDone(self._load_finished, stamp=stamp))  # (the next may work)
            raise
        self.post_message(WorkerDone(self._loaded, family, stamp=stamp))

    def _load_finished(self) -> None:
        self.loading = False
        if self.reload_pending:
            self.reload_pending = False
            self.load()

    def _loaded(self, family: LineageNode | None) -> None:
        try:
            self._show_family(family)
        finally:
            self._load_finished()

    def _show_family(self, family: LineageNode | None) -> None:
        header = self.query_one("#lineage-header", Static)
        tree = self.tree
        if family is None:
            self.family = None
            tree.clear()
            tree.root.set_label(Text(f"Session {inert_line(self.session_id)} no longer exists.", style="bold"))
            header.update(Text(f"Lineage of {inert_line(self.session_id)}: not found", style="bold"))
            self._show_detail(None)
            return
        keep = tree.highlighted.id if (self.loaded and tree.highlighted is not None) else None
        self.family = family
        self.loaded = True
        tree.show_family(family, select=keep)
        self._show_header()
        self._describe(tree.cursor_node)

    def _show_header(self) -> None:
        if self.family is None:
            return
        text = family_summary(self.family, muted(self))
        folded = self.tree.folded_segments()
        if folded:
            # A long chain is shown as a window of its segments (lineage_folds): say so.
            text.append(f" · {folded:,} chain segments folded", style=muted(self))
        self.query_one("#lineage-header", Static).update(text)

    def store_changed(self, change: StoreChange) -> None:
        if change.database:
            self.load()

    # ------------------------------------------------------------------ detail

    @on(Tree.NodeHighlighted)
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        self._describe(event.node)

    def _describe(self, row) -> None:
        """The detail of the tree's ``row``: a fold row says what it holds."""
        fold = self.tree.fold_at(row)
        if fold is not None:
            self.query_one("#lineage-detail", Static).update(Text(fold.label(), style=muted(self)))
            return
        self._show_detail(row.data if row is not None else None)

    def _show_detail(self, node: LineageNode | None) -> None:
        detail = self.query_one("#lineage-detail", Static)
        if node is None:
            detail.update(Text("No session.", style=muted(self)))
            return
        now = self.ctx.clock()
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(style=muted(self), no_wrap=True)
        grid.add_column(overflow="fold", ratio=1)
        grid.add_column(style=muted(self), no_wrap=True)
        grid.add_column(overflow="fold", ratio=1)
        edge = EDGE_LABELS[node.edge] if node.edge is not None else "root"
        grid.add_row("id", Text(inert_line(node.id)), "source", Text(inert_line(node.source)))
        grid.add_row("edge", Text(edge), "parent", Text(inert_line(node.parent_session_id) or "—"))
        grid.add_row("started", Text(_when(node.started_at, now)), "status", Text(node_status(node)))
        grid.add_row("active", Text(_when(node.last_active, now)), "ended",
                     Text(_when(node.ended_at, now) if node.ended_at is not None else "—"))
        grid.add_row("messages", Text(f"{node.message_count:,}"), "children", Text(str(len(node.children))))
        title = Text(inert_line(node.title) or "(untitled)", style="bold")
        markers = []
        if node.is_live_tip:
            markers.append(LIVE_TIP)
        if node.is_current:
            markers.append(CAME_FROM)
        markers.extend(node_problems(node))
        if markers:
            title.append("   " + "   ".join(markers), style="bold")
        parts = [title, grid]
        detail.update(Group(*parts))

    # ------------------------------------------------------------------ actions

    @on(Tree.NodeSelected)
    def _selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        if self.tree.unfold(event.node):
            # The first segment unfolded takes the fold row's line: the cursor's line is the
            # same, so the tree posts no NodeHighlighted and the detail is described here.
            self._show_header()
            self._describe(self.tree.cursor_node)
            return
        if event.node.data is not None:
            self.app.push_screen(self.ctx.screens.recap(event.node.data.id))
            mark_opened(self, event.node.data.id)

    def action_transcript(self) -> None:
        node = self.tree.highlighted
        if node is not None:
            self.app.push_screen(self.ctx.screens.transcript(node.id))
            mark_opened(self, node.id)

    def action_back(self) -> None:
        self.dismiss()

