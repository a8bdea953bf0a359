"""Fenced code in the transcript is shown as a code block, not as raw ``` lines; the code
is still user content: never markup, controls shown inert."""

from __future__ import annotations

from pathlib import Path

from hermes_state import SessionDB
from hermes_tui.render.fences import split_fences
from hermes_tui.widgets.transcript_view import TranscriptView

from .conftest import SIZE, make_app, settle
from .test_transcript import open_transcript, plain

SID = "20261118_075700_fence1"
ANSWER = "Run this:\n\n```python\nprint('[bold]hi[/bold]')\x1b[31m\n\nx = 1\n```\n\nThen it works."


async def test_fenced_code_shows_as_a_block_with_its_language_and_no_fence_lines(fixed_db: Path) -> None:
    db = SessionDB(fixed_db)
    try:
        db.create_session(SID, "cli")
        db.append_message(SID, "user", "how do I print?")
        db.append_message(SID, "assistant", ANSWER)
    finally:
        db.close()
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_transcript(pilot, SID)
        view = screen.query_one(TranscriptView)
        index = next(i for i, e in enumerate(view.entries) if e.message.role == "assistant")
        lines = plain(view, index)
        assert not any("```" in line for line in lines)
        assert any(line.strip() == "╭ python" for line in lines)
        code = next(line for line in lines if "print(" in line)
        assert code.startswith("     print('[bold]hi[/bold]')")  # markup shown as typed
        assert "\x1b" not in "".join(lines)  # the control is shown inert, never sent
        assert any(line.strip() == "Then it works." for line in lines)
        styled = view.block_lines(index)[lines.index(code)]
        code_style = view.get_component_rich_style("transcript--code", partial=True)
        assert any(span.style == code_style for span in styled.spans)


def test_split_fences_keeps_inline_backticks_and_runs_an_unclosed_fence_to_the_end() -> None:
    assert split_fences("use ``` inline ``` text") == [("text", "use ``` inline ``` text", "")]
    assert split_fences("a\n~~~sh\nls\n") == [("text", "a", ""), ("code", "ls\n", "sh")]
