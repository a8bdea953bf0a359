"""``python -m devtools.screenshots`` (the README's screenshots, made by the app): run as a person
runs it, in a subprocess from the checkout, into a temporary directory. What the SVG says is
read back from its text rows; a second run must write the very same bytes."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "devtools.screenshots", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def screen_rows(svg: Path) -> list[str]:
    """The terminal's rows as text: the runs of each row (one ``y``) joined in order."""
    rows: dict[float, list[tuple[float, str]]] = defaultdict(list)
    for attrs, body in re.findall(r"<text ([^>]*)>([^<]*)</text>", svg.read_text(encoding="utf-8")):
        x, y = re.search(r'\bx="([\d.]+)"', attrs), re.search(r'\by="([\d.]+)"', attrs)
        if x and y:
            rows[float(y.group(1))].append((float(x.group(1)), html.unescape(body).replace("\xa0", " ")))
    return ["".join(text for _x, text in sorted(runs)) for _y, runs in sorted(rows.items())]


def test_export_and_unread_screenshots_show_what_the_readme_says_and_a_second_run_is_identical(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    made = run_script("--out", str(first), "export", "unread")
    assert made.returncode == 0, made.stderr
    # stdout: the files written, one a line.
    assert made.stdout.splitlines() == [str(first / "export.svg"), str(first / "unread.svg")]
    assert sorted(p.name for p in first.iterdir()) == ["export.svg", "unread.svg"]

    export = "\n".join(screen_rows(first / "export.svg"))
    assert "The list — " in export and " conversations, " in export
    assert "The whole database — 300 sessions, hidden ones too" in export  # (the demo's 300)
    assert "Every session — " not in export  # (the label of old)

    unread = screen_rows(first / "unread.svg")
    marked = [row for row in unread if "◆ " in row and " msgs" in row]
    assert len(marked) >= 3  # conversations with activity since they were read
    assert any("!" in row and "Publish the docs site" in row for row in unread)  # an error
    assert any("∅" in row and "scratch" in row for row in unread)  # an empty one
    assert any("unread: activity since" in row for row in unread)  # the detail pane's line

    again = run_script("--out", str(second), "export")
    assert again.returncode == 0, again.stderr
    assert (second / "export.svg").read_bytes() == (first / "export.svg").read_bytes()


def test_an_unknown_name_is_one_line_on_stderr_and_nothing_is_written(tmp_path):
    made = run_script("--out", str(tmp_path / "out"), "export", "no-such-shot")
    assert made.returncode == 2
    assert made.stdout == ""
    assert len(made.stderr.splitlines()) == 1 and "no screenshot named no-such-shot" in made.stderr
    assert not (tmp_path / "out").exists()
