"""LineageTree: a session family as a Textual ``Tree`` (LI-1, LI-13).

Each node is one session; its label (built as rich ``Text`` from data, never markup) shows the
kind of edge from its parent, the title, the id, the message count, the time span (started →
last active, relative to the injected clock), the status/end reason and markers: ``● live tip``
for the live end of a compression chain, ``◀ you came from here`` for the session the tree was
opened from, and a warning for a broken chain (missing parent, cycle).
"""

from __future__ import annotations

from typing import Callable

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from hermes_state.lineage import EdgeKind
from hermes_state.models import LineageNode
from ..shown_time import relative as relative_time

from ..textsafe import inert_line
from .lineage_folds import RUN_FOLD, UNFOLD_STEP, Fold, straight_run, window

#: Short edge tags for the tree (the detail pane shows the full LI-1 label).
EDGE_TAGS = {
    None: "◉ root",
    EdgeKind.COMPRESSION: "⟳ compression",
    EdgeKind.BRANCH: "↱ branch",
    EdgeKind.DELEGATE: "⇢ delegate",
    EdgeKind.RESET: "↻ reset",
    EdgeKind.OTHER: "· child",
}

LIVE_TIP = "● live tip"
CAME_FROM = "◀ you came from here"
BROKEN_PARENT = "⚠ parent missing"
CYCLE = "⚠ parent links loop"


def node_status(node: LineageNode) -> str:
    if node.ended_at is None:
        return "live"
    return f"ended: {inert_line(node.end_reason)}" if node.end_reason else "ended"


def time_span(node: LineageNode, now: float) -> str:
    started = relative_time(node.started_at, now=now)
    last = relative_time(node.last_active or node.started_at, now=now)
    return started if started == last else f"{started} → {last}"


def node_problems(node: LineageNode) -> list[str]:
    problems = []
    if node.broken_parent:
        problems.append(f"{BROKEN_PARENT} ({inert_line(node.parent_session_id)})")
    if node.cycle:
        problems.append(f"{CYCLE} (cycle)")
    return problems


class LineageTree(Tree[LineageNode]):
    """The family of a session; Enter posts ``NodeSelected`` (the screen opens the recap)."""

    BINDINGS = [
        Binding("enter", "select_cursor", "Open recap", id="lineage_open"),
        # The list's and the transcript's moving keys, with ids of their own to remap (Tree's
        # own up/down/home/end bindings have none and know no j/k/g/G).
        Binding("up,k", "cursor_up", "Up", show=False, id="lineage_up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="lineage_down"),
        Binding("home,g", "scroll_home", "First", show=False, id="lineage_first"),
        Binding("end,G", "scroll_end", "Last", show=False, id="lineage_last"),
        Binding("pageup", "page_up", "Page up", show=False, id="lineage_page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="lineage_page_down"),
        # Tree's own keys, the same actions with ids of their own (Tree's bindings have none,
        # so a keymap could not move them and the help did not list them).
        Binding("shift+left", "cursor_parent", "To the parent", show=False, id="lineage_parent"),
        Binding("shift+right", "cursor_parent_next_sibling", "To the parent's next sibling", show=False,
                id="lineage_parent_next_sibling"),
        Binding("shift+up", "cursor_previous_sibling", "Previous sibling", show=False,
                id="lineage_previous_sibling"),
        Binding("shift+down", "cursor_next_sibling", "Next sibling", show=False, id="lineage_next_sibling"),
        Binding("space", "toggle_node", "Fold / unfold", show=False, id="lineage_toggle"),
        Binding("shift+space", "toggle_expand_all", "Fold / unfold all below", show=False,
                id="lineage_toggle_all"),
    ]

    COMPONENT_CLASSES = Tree.COMPONENT_CLASSES | {
        "lineage-tree--title",
        "lineage-tree--meta",
        "lineage-tree--edge",
        "lineage-tree--edge-compression",
        "lineage-tree--edge-branch",
        "lineage-tree--edge-delegate",
        "lineage-tree--live-tip",
        "lineage-tree--current",
        "lineage-tree--broken",
    }

    def __init__(self, *, clock: Callable[[], float], id: str | None = None) -> None:
        super().__init__("", id=id)
        self.clock = clock
        self.auto_expand = False
        self.guide_depth = 3
        self.family: LineageNode | None = None
        #: Fold rows by tree node id, as drawn now.
        self._folds: dict = {}
        #: Positions shown of each long chain (by its first segment's id), kept while the
        #: same family is shown again (a commit re-reads it).
        self._unfolded: dict[str, set[int]] = {}

    # ------------------------------------------------------------------ labels

    def _part(self, name: str) -> Style:
        return self.get_component_rich_style(f"lineage-tree--{name}", partial=True)

    def render_label(self, node, base_style: Style, style: Style) -> Text:
        """The cursor row is drawn in the cursor's own text colour: the label's edge, meta and
        marker colours would otherwise sit on the cursor background below 4.5:1 (BR-18)."""
        text = super().render_label(node, base_style, style)
        if node is self.cursor_node:
            cursor = self.get_component_rich_style("tree--cursor")
            if cursor.color is not None:
                text.stylize(Style(color=cursor.color))
        room = self._label_room(node)
        if room is not None and text.cell_len > room:
            # Cut at the pane's edge with "…" (an id cut bare read as another id); the
            # detail pane under the tree has every value of the highlighted node whole.
            text.truncate(room, overflow="ellipsis")
        return text

    def _label_room(self, node) -> int | None:
        """Cells left for ``node``'s label after its guides (``guide_depth`` a level)."""
        width = self.scrollable_content_region.width
        if width <= 0:
            return None
        depth, parent = 0, node.parent
        while parent is not None:
            depth, parent = depth + 1, parent.parent
        return max(8, width - depth * self.guide_depth)

    def get_label_width(self, node) -> int:
        # Labels are cut to the pane (render_label): no sideways scrolling to an id's end.
        width = super().get_label_width(node)
        room = self._label_room(node)
        return width if room is None else min(width, room)

    def node_label(self, node: LineageNode) -> Text:
        now = self.clock()
        text = Text(no_wrap=True, end="")
        edge_class = {
            EdgeKind.COMPRESSION: "edge-compression",
            EdgeKind.BRANCH: "edge-branch",
            EdgeKind.DELEGATE: "edge-delegate",
            EdgeKind.RESET: "edge-branch",
        }.get(node.edge, "edge")
        text.append(f"{EDGE_TAGS.get(node.edge, '· child')}  ", style=self._part(edge_class))
        text.append(inert_line(node.title) or "(untitled)", style=self._part("title"))
        count = f"{node.message_count} msg" + ("" if node.message_count == 1 else "s")
        text.append(f"  · {count} · {time_span(node, now)} · {node_status(node)}", style=self._part("meta"))
        if node.is_live_tip:
            text.append(f"  {LIVE_TIP}", style=self._part("live-tip"))
        if node.is_current:
            text.append(f"  {CAME_FROM}", style=self._part("current"))
        for problem in node_problems(node):
            text.append(f"  {problem}", style=self._part("broken"))
        # The id comes last: on a narrow terminal it is what gets cut (the detail pane has it).
        text.append(f"  {inert_line(node.id)}", style=self._part("meta"))
        return text

    # ------------------------------------------------------------------ data

    def show_family(self, family: LineageNode, *, select: str | None = None) -> None:
        """Replace the tree with ``family``; put the cursor on ``select`` (else the current
        node, else the root). A long straight compression chain is drawn as a folded list
        (:mod:`.lineage_folds`): only a window of its segments becomes rows."""
        if self.family is None or family.id != self.family.id:
            self._unfolded = {}  # (another family; a re-read of this one keeps what was shown)
        self.family = family
        self.clear()
        self._folds = {}
        self.root.set_label(self.node_label(family))
        self.root.data = family
        nodes: dict[str, TreeNode[LineageNode]] = {family.id: self.root}
        focus = {sid for sid in (select,) if sid}
        # Iterative, each node placed once (build_tree does; stay safe regardless): a chain
        # is as deep as it is long, past Python's recursion limit.
        # (tree row, session, its continuation drawn beside it, its number along its chain)
        pending: list[tuple[TreeNode[LineageNode], LineageNode, LineageNode | None, int]] = [
            (self.root, family, None, 1)]
        while pending:
            parent, node, skip, number = pending.pop()
            for child in node.children:
                if child is skip or child.id in nodes:
                    continue
                continues = child.edge is EdgeKind.COMPRESSION
                base = number + 1 if continues else 1
                run = straight_run(child) if continues else [child]
                if len(run) <= RUN_FOLD:
                    branch = parent.add(self.node_label(child), data=child, expand=True,
                                        allow_expand=bool(child.children))
                    nodes[child.id] = branch
                    pending.append((branch, child, None, base))
                    continue
                # A long chain: its segments side by side under ``parent``, a window of them.
                shown = self._unfolded.setdefault(run[0].id, set())
                for part in window(run, focus=focus, shown=shown, base=base):
                    if isinstance(part, Fold):
                        row = parent.add_leaf(Text(part.label(), style=self._part("meta")))
                        self._folds[row.id] = part
                        continue
                    segment = run[part]
                    successor = run[part + 1] if part + 1 < len(run) else None
                    has_more = any(c is not successor for c in segment.children)
                    branch = parent.add(self.node_label(segment), data=segment, expand=True, allow_expand=has_more)
                    nodes[segment.id] = branch
                    pending.append((branch, segment, successor, base + part))
                # The segments folded away are still the family's: never placed twice.
                for segment in run:
                    nodes.setdefault(segment.id, parent)
        self.root.allow_expand = bool(family.children)
        self.root.expand_all()
        current = next((n.id for n in family.walk() if n.is_current), None)
        target = nodes.get(select or "") or nodes.get(current or "") or self.root
        _ = self.last_line  # lay the lines out now so the cursor can be placed
        self.move_cursor(target)
        # The scroll above is for the pane as it is now; the detail pane under the tree is
        # filled next and takes rows from it (17 rows became 12 at 80×24, and the row you
        # came from, the last, went below the pane): once laid out, show the cursor again.
        self.call_after_refresh(self._reveal_cursor)

    def on_resize(self) -> None:
        # (The detail pane's height follows the highlighted node: the tree's follows it.)
        self.call_after_refresh(self._reveal_cursor)

    def _reveal_cursor(self) -> None:
        if self.cursor_node is not None:
            self.scroll_to_node(self.cursor_node, animate=False)

    def fold_at(self, node: TreeNode[LineageNode] | None) -> Fold | None:
        """The fold ``node`` stands for (None: a session's row)."""
        return None if node is None else self._folds.get(node.id)

    def unfold(self, node: TreeNode[LineageNode] | None) -> bool:
        """Show :data:`UNFOLD_STEP` more segments of the fold at ``node`` (its first ones); the
        cursor goes to the first of them. False: ``node`` is not a fold row."""
        fold = self.fold_at(node)
        if fold is None or self.family is None:
            return False
        end = min(fold.end, fold.start + UNFOLD_STEP)
        self._unfolded.setdefault(fold.run_id, set()).update(range(fold.start, end))
        first = self._segment_id(fold.run_id, fold.start)
        self.show_family(self.family, select=first)
        return True

    def _segment_id(self, run_id: str, position: int) -> str | None:
        start = next((n for n in self.family.walk() if n.id == run_id), None) if self.family else None
        if start is None:
            return None
        run = straight_run(start)
        return run[position].id if 0 <= position < len(run) else None

    def folded_segments(self) -> int:
        """How many segments the fold rows hold now."""
        return sum(fold.size for fold in self._folds.values())

    @property
    def highlighted(self) -> LineageNode | None:
        node = self.cursor_node
        return node.data if node is not None else None
