"""fast_text_strip draws exactly what text_strip draws (cell by cell: character and style),
for the rows the search pane builds: English and CJK, cut with an ellipsis or padded."""

from __future__ import annotations

from rich.console import Console
from rich.style import Style
from rich.text import Text

from hermes_tui.widgets.lines import fast_text_strip, text_strip
from hermes_tui.widgets.search import snippet_text

CONSOLE = Console(width=200, color_system="truecolor", force_terminal=True)
MATCH = Style(bold=True, color="yellow", bgcolor="blue")
META = Style(color="grey50")
SNIPPETS = [
    "we tried to run docker compose up on the staging host but the docker daemon refused",
    "服务器的日志在哪里？现在 docker 部署失败了，请帮我看看配置文件和服务端的错误信息",
    "short docker",
    "",
]


def cells(strip) -> list[tuple[str, Style]]:
    return [(ch, seg.style or Style.null()) for seg in strip for ch in seg.text]


def rows() -> list[Text]:
    out = []
    for snippet in SNIPPETS:
        hit = Text("   ", no_wrap=True, overflow="ellipsis")
        hit.append(f"{'assistant':<9} ", style=META)
        hit.append(f"{'3d ago':>10}  ", style=META)
        hit.append_text(snippet_text(snippet, [(16, 22), (30, 36)], MATCH, 60))
        out.append(hit)
        header = Text(no_wrap=True, overflow="ellipsis")
        header.append(" ▌ ", style=META)
        header.append("Docker deploy 数据库 " + snippet[:20], style="bold")
        header.append("  cli · 3 hits", style=META)
        out.append(header)
    overlapping = Text("abcdefghij", style="italic")
    overlapping.stylize("bold", 1, 6)
    overlapping.stylize("red", 3, 8)
    out.append(overlapping)
    return out


def test_fast_strip_matches_the_general_path_cell_by_cell() -> None:
    for text in rows():
        before = text.plain
        for width in (1, 2, 9, 25, 40, 61, 120, 200):
            fast = fast_text_strip(text, width, CONSOLE)
            general = text_strip(text.copy(), width, CONSOLE)
            assert fast.cell_length == general.cell_length == width
            assert cells(fast) == cells(general), (text.plain, width)
        assert text.plain == before, "the row is not changed"
