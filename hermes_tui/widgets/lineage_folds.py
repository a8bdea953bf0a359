"""Long compression chains in the lineage tree, folded (LI-13).

A gateway chat that compressed 200,000 times is a family of 200,000 sessions, each segment the
only continuation of the one before. Drawn as it is stored -- each segment a child of the one
before -- it was a tree 200,000 levels deep: 200,000 rows built on the UI thread (seconds in
which ``q`` did nothing), indented past any screen. So a straight run of more than
:data:`RUN_FOLD` continuations is shown as a list (its segments side by side under the row it
continues, in order) of which only a window is drawn: its first segments, its last ones (the
live tip), those around the session the tree was opened from, and any with a problem; the rest
are folded into rows that say how many segments they hold. Enter on a fold row shows
:data:`UNFOLD_STEP` more.

Pure functions over :class:`~hermes_state.models.LineageNode`: the widget draws what they plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes_state.lineage import EdgeKind
from hermes_state.models import LineageNode

#: A straight run of continuations longer than this is shown as a folded list.
RUN_FOLD = 40
#: Segments always shown at each end of a folded run.
HEAD = 3
TAIL = 8
#: Segments shown on either side of the session the tree was opened from (or the cursor's).
AROUND = 3
#: Segments one Enter on a fold row shows.
UNFOLD_STEP = 200


@dataclass(frozen=True)
class Fold:
    """Segments ``start`` … ``end - 1`` (positions in the run, 0-based) of the run that
    begins at ``run_id``, not drawn."""

    run_id: str
    start: int
    end: int
    #: Sessions they hold besides the segments themselves (their branches, delegates, …).
    others: int = 0
    #: The number, along its whole chain (its first session is #1), of the run's first segment.
    base: int = 1

    @property
    def size(self) -> int:
        return self.end - self.start

    def label(self) -> str:
        first, last = self.base + self.start, self.base + self.end - 1
        step = min(UNFOLD_STEP, self.size)
        more = f" and {self.others:,} other session{'s' if self.others != 1 else ''}" if self.others else ""
        return (f"⋯ {self.size:,} segment{'s' if self.size != 1 else ''} of this chain folded "
                f"(#{first:,}–#{last:,}){more} · Enter shows {step:,} more")


def next_segment(node: LineageNode) -> LineageNode | None:
    """The one compression continuation of ``node`` (None: none, or a fork of several)."""
    found = None
    for child in node.children:
        if child.edge is EdgeKind.COMPRESSION:
            if found is not None:
                return None
            found = child
    return found


def straight_run(start: LineageNode) -> list[LineageNode]:
    """``start`` and the continuations that follow it one by one (each the only compression
    child of the one before), each session once."""
    run = [start]
    seen = {start.id}
    node = next_segment(start)
    while node is not None and node.id not in seen:
        run.append(node)
        seen.add(node.id)
        node = next_segment(node)
    return run


def window(run: list[LineageNode], *, focus: set[str], shown: set[int], base: int = 1) -> list[int | Fold]:
    """What to draw of a long ``run``: positions of the segments drawn, in order, with a
    :class:`Fold` where segments are left out. Drawn: the ends, the segments around those in
    ``focus``, any segment with a problem or the live tip mark, and the positions ``shown``
    (unfolded before). ``base``: the number of ``run[0]`` along its chain."""
    n = len(run)
    keep = set(range(min(HEAD, n))) | set(range(max(0, n - TAIL), n)) | {i for i in shown if 0 <= i < n}
    for i, node in enumerate(run):
        if node.id in focus or node.is_live_tip or node.is_current or node.broken_parent or node.cycle:
            keep.update(range(max(0, i - AROUND), min(n, i + AROUND + 1)))
    out: list[int | Fold] = []
    i = 0
    while i < n:
        if i in keep:
            out.append(i)
            i += 1
            continue
        j = i
        while j < n and j not in keep:
            j += 1
        others = sum(_descendants_off_run(run[k], run[k + 1] if k + 1 < n else None) for k in range(i, j))
        out.append(Fold(run[0].id, i, j, others, base))
        i = j
    return out


def _descendants_off_run(node: LineageNode, successor: LineageNode | None) -> int:
    """Sessions under ``node`` other than the run's next segment and what hangs under it."""
    count = 0
    for child in node.children:
        if child is successor:
            continue
        count += sum(1 for _ in child.walk())
    return count
