"""What Textual itself costs to paint a keystroke's answer on this machine: the frame's floor.

    python -m bench.frame_floor [--rounds 3] [--fresh | --same]

The keystroke row (``ui.keystroke_to_paint``) times a key from the moment it reaches the
search field to the frame that shows the field's echo and the new answer. This measures the
same span in the smallest Textual app with the browser's geometry (a one-line field on top, a
bordered 2:1 pair of panes, a status line, a footer; 160×48, headless as in the bench) that
does no work of its own: each key swaps the pane's 41 lines for another answer's, whose
segments were made in advance; the pane hands Textual a new ``Strip`` per line (as any widget
drawing new text must). Nothing is searched, grouped, laid out or styled by us, so what it
times is Textual's share: the key's dispatch, the echo, the changed message, the repaint of
the pane and the field, the compositor, and the write of the frame.

``--fresh`` (default): every key shows a different answer (a fresh search's frame); ``--same``
repaints only the field and the pane's cursor line (a narrowed answer's frame, most of the
pane unchanged).

The same keys as the keystroke row are typed (``bench.ui_suite.TYPED_QUERIES``, 0.15 s apart,
one unrecorded round first), so the figures compare: the keystroke's p50 minus this p50 is
what the browser's own path (search included) adds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input, Static

from .ui_suite import KEY_GAP_S, TYPED_QUERIES, empty_and_focus, press_and_wait

LINES = 41
ANSWERS = 8


class _Field(Input):
    def on_key(self, event: events.Key) -> None:
        # The answer is swapped in before the field handles the key, so that the echo and the
        # answer are drawn in one frame (as the browser holds the echo for its answer): a
        # second frame would wait for Textual's next 1/60 s slot.
        if event.is_printable:
            self.app.swap(time.perf_counter())


class _Pane(Widget):
    """41 lines of ready-made segments; a new Strip for each line drawn."""

    DEFAULT_CSS = "_Pane { width: 2fr; height: 1fr; border: round $accent; }"

    def __init__(self, answers: list[list[list[Segment]]]) -> None:
        super().__init__()
        self.answers = answers
        self.answer = 0
        self.cursor = 0
        self.waiting: list = []

    def render_lines(self, crop):
        lines = super().render_lines(crop)
        callbacks, self.waiting = self.waiting, []
        for callback in callbacks:
            # After the frame being drawn is written, as the browser's results pane stamps it.
            self.screen._invoke_later(callback, self)
        return lines

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        segments = self.answers[self.answer][y] if y < LINES else []
        strip = Strip(segments).adjust_cell_length(width)
        if y == self.cursor:
            strip = strip.apply_style(Style(reverse=True))
        return strip


class FloorApp(App):
    CSS = """
    #field { height: 3; }
    #side { width: 1fr; height: 1fr; border: round $panel; }
    #status, #footer { height: 1; }
    """

    def __init__(self, fresh: bool) -> None:
        super().__init__()
        self.fresh = fresh
        self.latencies: list[float] = []
        match = Style(bold=True, color="black", bgcolor="yellow")
        meta = Style(color="grey50")
        answers = []
        for n in range(ANSWERS):
            lines = []
            for y in range(LINES):
                if y % 8 == 0:
                    lines.append([Segment(" ▌ ", meta), Segment(f"Conversation {n}-{y} about nginx config", Style(bold=True)),
                                  Segment("  telegram · 3 hits", meta)])
                else:
                    lines.append([Segment(f"   user      2025-12-{10 + y % 20:02d}  ", meta), Segment("…the "),
                                  Segment("nginx", match), Segment(f" config broke again after deploy {n} {y}; 服务器又出问题了 …")])
            answers.append(lines)
        self.pane = _Pane(answers)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield _Field(id="field")
            with Horizontal():
                yield self.pane
                yield Static("detail\n" * 20, id="side")
            yield Static("status", id="status")
            yield Static("footer", id="footer")

    def swap(self, started: float) -> None:
        pane = self.pane
        if self.fresh:
            pane.answer = (pane.answer + 1) % ANSWERS
            pane.refresh()
        else:
            old = pane.cursor
            pane.cursor = (pane.cursor + 1) % LINES
            width = pane.size.width
            pane.refresh(Region(0, old, width, 1), Region(0, pane.cursor, width, 1))
        pane.waiting.append(lambda: self.latencies.append((time.perf_counter() - started) * 1000))


async def measure(fresh: bool, rounds: int) -> list[float]:
    app = FloorApp(fresh)
    samples: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.5)
        field = app.query_one(_Field)
        for round_index in range(rounds + 1):
            for query in TYPED_QUERIES:
                await empty_and_focus(pilot, field)
                for ch in query:
                    if await press_and_wait(pilot, ch, app.latencies) and round_index:
                        samples.append(app.latencies[-1])
                    await asyncio.sleep(KEY_GAP_S)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.frame_floor", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--fresh", dest="fresh", action="store_true", default=True,
                      help="every key shows another answer (default)")
    kind.add_argument("--same", dest="fresh", action="store_false",
                      help="every key moves the pane's cursor only (a narrowed answer's frame)")
    args = parser.parse_args(argv)
    samples = sorted(asyncio.run(measure(args.fresh, args.rounds)))
    p95 = samples[min(len(samples) - 1, int(round(0.95 * (len(samples) - 1))))]
    kind = "a new 41-line answer per key" if args.fresh else "the field and two pane lines per key"
    print(f"Textual frame floor, {kind}: {len(samples)} keys, p50 {statistics.median(samples):.2f} ms, "
          f"p95 {p95:.2f} ms, max {samples[-1]:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
