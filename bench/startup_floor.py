"""What a start of the browser costs before any of our work: the start-up row's floor.

    python -m bench.startup_floor [--size 1m] [--schema 30] [--db PATH] [--runs 15]

The start-up row (``ui.browse_startup``) times a fresh process from its spawn to the first
frame with the list's rows in it. This starts fresh processes that stop earlier, in turns
with the browser itself (the same minutes, the same page cache):

* ``interpreter``: Python itself (with the virtualenv's ``site``) up to its first statement;
* ``imports``: Textual's app, widgets and containers and pydantic imported, and one model
  of a summary's shape built -- what the browser imports from others, none of its own code
  (with the garbage collector off, as the browser imports);
* ``bare app``: those imports and the smallest Textual app of the browser's shape (a search
  field, a line-drawn list of 41 ready-made rows beside a detail pane, a status line, a
  footer with key hints; 160×48, headless, as the probe runs) to its first frame with the
  rows in it: Textual's start, its CSS, its first layout and paint -- nothing read, nothing
  of ours;
* ``browse``: the browser itself (``bench.ui_probe`` on the corpus, warm page cache), as the
  start-up row measures it.

``browse`` minus ``bare app`` is what the browser's own work adds: its modules, its CSS and
widgets, opening the store and reading the first page (in a thread, beside the imports).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

MODES = ("interpreter", "imports", "bare app", "browse")

# The child processes: each prints the seconds from its spawn (argv[1], the parent's
# time.time() just before it started the process) to its end point.
_INTERPRETER = "import sys, time; print(time.time() - float(sys.argv[1]))"

_IMPORTS = """
import gc, sys, time
gc.disable()  # (as the browser starts: no collection until the app is mounted)
from typing import Any
import pydantic
from textual.app import App
from textual.containers import Horizontal, Vertical
from textual.widgets import ContentSwitcher, Footer, Input, Static
from textual.scroll_view import ScrollView

class Summary(pydantic.BaseModel):
    id: str
    source: str | None = None
    title: str | None = None
    preview: str = ""
    started_at: float = 0.0
    ended_at: float | None = None
    last_active: float | None = None
    message_count: int = 0
    pinned: bool = False
    archived: bool = False
    hidden: bool = False
    parent_session_id: str | None = None
    extra: dict[str, Any] = {}

Summary(id="x")
print(time.time() - float(sys.argv[1]))
"""

_BARE_APP = _IMPORTS.replace("print(time.time() - float(sys.argv[1]))", "") + """
import asyncio
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.strip import Strip

spawned = float(sys.argv[1])
ROWS = [Summary(id=f"20261128_1200{n:02d}_abcdef{n:02d}", source="telegram", title=f"Conversation {n}",
                preview="the nginx config broke again after the deploy", message_count=n)
        for n in range(41)]

class Rows(ScrollView):
    DEFAULT_CSS = "Rows { width: 2fr; height: 1fr; border: round $accent; }"

    def on_mount(self) -> None:
        self.virtual_size = Size(self.size.width, len(ROWS))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y >= len(ROWS):
            return Strip.blank(width)
        row = ROWS[y]
        return Strip([Segment(" ○ "), Segment(row.title or "", Style(bold=True)),
                      Segment("  " + row.preview, Style(dim=True)),
                      Segment(f" {row.source:<10} {row.message_count:>4} msgs  2 hours ago")]).adjust_cell_length(width)

class Bare(App):
    CSS = '''
    #field { height: 3; }
    #side { width: 1fr; height: 1fr; border: round $panel; }
    #status { height: 1; }
    '''
    BINDINGS = [Binding(key, key, description) for key, description in (
        ("q", "Quit"), ("/", "Search"), ("enter", "Resume"), ("t", "Transcript"), ("r", "Rename"),
        ("d", "Delete"), ("a", "Archive"), ("e", "Export"), ("l", "Lineage"), ("question_mark", "Help"))]

    def compose(self):
        with Vertical():
            yield Input(placeholder="Search every message", id="field")
            with Horizontal():
                with ContentSwitcher(initial="rows"):
                    yield Rows(id="rows")
                yield Static("detail\\n" * 20, id="side")
            yield Static("41 conversations", id="status")
            yield Footer()

app = Bare()
shown = {}
display = app._display

def displayed(screen, update):
    display(screen, update)
    if "at" not in shown and update is not None and app.query("Rows"):
        shown["at"] = time.time() - spawned

app._display = displayed

async def main():
    async with app.run_test(size=(160, 48)):
        while "at" not in shown:
            await asyncio.sleep(0.002)

asyncio.run(main())
print(shown["at"])
"""


def _spawn(mode: str, db_path: Path, cache_dir: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(REPO), HERMES_SESSIONS_CACHE_DIR=str(cache_dir))
    spawned = time.time()
    if mode == "browse":
        argv = [sys.executable, "-m", "bench.ui_probe", str(db_path), repr(spawned)]
    else:
        code = {"interpreter": _INTERPRETER, "imports": _IMPORTS, "bare app": _BARE_APP}[mode]
        argv = [sys.executable, "-c", code, repr(spawned)]
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{mode}: " + (proc.stderr.strip().splitlines() or ["failed"])[-1])
    last = proc.stdout.strip().splitlines()[-1]
    return (json.loads(last)["first_page_s"] if mode == "browse" else float(last)) * 1000


def measure(db_path: Path, runs: int, modes: tuple[str, ...] = MODES) -> dict[str, list[float]]:
    """``runs`` starts of each mode, in turns (one unrecorded round first)."""
    from .ui_suite import _compile_bytecode

    _compile_bytecode()
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory(prefix="hermes-bench-cache-") as scratch:
        cache = Path(scratch)
        for round_index in range(runs + 1):
            for mode in modes:
                took = _spawn(mode, db_path, cache)
                if round_index:
                    samples[mode].append(took)
    return samples


def main(argv: list[str] | None = None) -> int:
    from .run import corpus_path, parse_size, percentile

    parser = argparse.ArgumentParser(prog="python -m bench.startup_floor", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="1m")
    parser.add_argument("--schema", type=int, choices=(16, 30), default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    path = args.db or corpus_path(parse_size(args.size)[0], args.seed, args.schema)
    samples = measure(path, args.runs)
    bare = percentile(samples["bare app"], 0.5)
    for mode in MODES:
        values = samples[mode]
        p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
        extra = f"  (+{p50 - bare:.0f} ms p50 over the bare app)" if mode == "browse" else ""
        print(f"{mode:<12} p50 {p50:7.0f} ms  p95 {p95:7.0f} ms  ({len(values)} starts){extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
