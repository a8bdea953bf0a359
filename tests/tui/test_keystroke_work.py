"""Issue 15: a keystroke that changes the answer repaints the panes it changes and lays out
nothing. Counted, not timed: a layout of the whole screen cost ~10 ms at 160x48 and was done
once or twice per key (the query field's virtual size, the results' virtual size and their
scrollbar coming and going), and the detail pane rebuilt the same details answer after answer."""

from __future__ import annotations

from pathlib import Path

from textual.screen import Screen

from hermes_tui.widgets.detail import DetailPane

from .conftest import SIZE, make_app, settle


async def test_typing_a_query_lays_out_nothing(fixed_db: Path, monkeypatch) -> None:
    app = make_app(fixed_db)
    layouts: list[bool] = []
    builds: list[object] = []
    original_layout = Screen._refresh_layout
    original_build = DetailPane.build

    def counting_layout(self, size=None, scroll=False):
        layouts.append(scroll)
        return original_layout(self, size, scroll)

    def counting_build(self):
        builds.append(self.summary)
        return original_build(self)

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("/", "d")  # the first answer switches the pane: that may lay out
        await settle(pilot)
        monkeypatch.setattr(Screen, "_refresh_layout", counting_layout)
        monkeypatch.setattr(DetailPane, "build", counting_build)
        typed = 0
        for key in "ocker":
            await pilot.press(key)
            await settle(pilot)
            typed += 1
        results = app.screen.results
        assert results.view is not None and results.view.query == "docker" and results.view.hit_count
        assert layouts == [], f"{len(layouts)} layouts for {typed} keys"
        # The same first hit answer after answer: its details are not rebuilt each time.
        assert len(builds) <= 2, builds
