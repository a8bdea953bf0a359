"""BR-18: every built-in theme keeps all text legible, and the chosen theme is kept.

Contrast is WCAG 2's (relative luminance), 4.5:1 for body text. It is checked three ways:

* the app's own text colours (``$hs-*``), derived per theme from the theme's variables,
  against every background the app draws text on;
* the stylesheets use only those for text (no ``$text-muted`` and friends, which Textual
  tunes for looks and which fail on light themes);
* what is actually drawn: every text cell of the session list, detail pane, search field,
  footer and transcript, in every built-in theme (box-drawing and block characters — borders,
  scrollbars — are decoration, not text).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.color import Color as RichColor
from textual.color import Color
from textual.theme import BUILTIN_THEMES

from hermes_tui.legible import BUTTONS, FOCUS_TINT, MINIMUM_CONTRAST, contrast, legible_variables

from .conftest import SIZE, make_app, settle

STYLES = Path(__file__).resolve().parents[2] / "styles"
THEMES = sorted(BUILTIN_THEMES)
DECORATION = re.compile(r"^[\u2500-\u259f\s]*$")
DIM_FACTOR = 0.66  # how much of the colour a terminal's "dim" keeps (Textual's factor)
BUTTON_NAMES = {("button" if variant == "default" else variant): variant for variant in BUTTONS}


@pytest.mark.parametrize("theme", THEMES)
def test_br18_text_colours_reach_4_5_on_every_background(theme: str) -> None:
    variables = BUILTIN_THEMES[theme].to_color_system().generate()
    ours = legible_variables(variables)
    if variables["background"].startswith("ansi"):
        # The terminal's own colours: text is its default foreground (checked as drawn below).
        assert ({v for k, v in ours.items() if not k.startswith(("hs-on-", "hs-hover-"))}
                == {variables["foreground"]})
        assert {ours["hs-on-accent"], ours["hs-on-cursor"]} == {"auto 100%"}
        assert ours["hs-on-match"] == "ansi_black"  # on the terminal's yellow
        # A button: the terminal's foreground on its own background, under the mouse too.
        assert {ours[f"hs-on-{name}"] for name in BUTTON_NAMES} == {variables["foreground"]}
        assert {ours[f"hs-hover-{name}"] for name in BUTTON_NAMES} == {variables["background"]}
        return
    background = Color.parse(variables["background"])
    grounds = {name: background + Color.parse(variables[name]) for name in ("background", "surface", "panel")}
    for name, value in ours.items():
        if name.startswith("hs-hover-"):
            continue  # a background (its label is checked on it below)
        if name.removeprefix("hs-on-") in BUTTON_NAMES:
            # A button's label: on its background and its shade under the mouse, each also
            # tinted 5 % toward $foreground while the button has the focus.
            normal = BUTTONS[BUTTON_NAMES[name.removeprefix("hs-on-")]][0]
            shade = Color.parse(ours["hs-hover-" + name.removeprefix("hs-on-")])
            plain = {"button": background + Color.parse(variables[normal]), "mouse": shade}
            grounds_for = {**plain, **{f"focused {k}": c.blend(Color.parse(variables["foreground"]), FOCUS_TINT)
                                       for k, c in plain.items()}}
        elif name.startswith("footer-"):
            grounds_for = {"footer": background + Color.parse(variables["footer-background"])}
        elif name == "hs-on-accent":
            grounds_for = {"accent": background + Color.parse(variables["accent"])}
        elif name == "hs-on-cursor":
            grounds_for = {"cursor": background + Color.parse(variables["secondary-muted"])}
        elif name == "hs-input":  # an input's $surface, tinted 5 % toward $foreground when focused
            surface = grounds["surface"]
            grounds_for = {"input": surface, "focused input": surface.blend(Color.parse(variables["foreground"]), 0.05)}
        elif name == "hs-on-match":
            grounds_for = {"warning": background + Color.parse(variables["warning"])}
        else:
            grounds_for = grounds
            if name in ("hs-warning", "hs-error"):  # a dialog's note: $surface tinted 15 %
                tint = background + Color.parse(variables[name[3:]])
                grounds_for = {**grounds, "tinted surface": grounds["surface"].blend(tint, 0.15)}
        for ground, color in grounds_for.items():
            ratio = contrast(Color.parse(value), color)
            assert ratio >= MINIMUM_CONTRAST, f"{theme}: ${name} {value} on ${ground} {color.hex}: {ratio:.2f}"


@pytest.mark.parametrize("theme", THEMES)
def test_br18_a_search_match_is_legible_in_a_256_colour_terminal_too(theme: str) -> None:
    """A 256-colour terminal draws the nearest colours of its palette: solarized-light's
    white on orange, 4.6:1 in truecolor, was 3.8:1 there (#d75f00)."""
    from hermes_tui.legible import eight_bit

    variables = BUILTIN_THEMES[theme].to_color_system().generate()
    if variables["background"].startswith("ansi"):
        return  # (the terminal's own black on its own yellow: see above)
    ours = legible_variables(variables)
    match = Color.parse(ours["hs-on-match"])
    warning = Color.parse(variables["background"]) + Color.parse(variables["warning"])
    ratio = contrast(eight_bit(match), eight_bit(warning))
    assert ratio >= MINIMUM_CONTRAST, f"{theme}: {match.hex} on {warning.hex} in 256 colours: {ratio:.2f}"


def test_br18_every_theme_the_app_offers_is_checked(fixed_db) -> None:
    """The checks here run over every theme the command palette offers (Textual's own)."""
    assert set(make_app(fixed_db).available_themes) <= set(THEMES)


def test_br18_stylesheets_colour_text_only_with_legible_variables() -> None:
    loose = re.compile(r"(?<![-\w])color:\s*\$(text-[a-z]+|success|error|warning|accent|primary|secondary)\b")
    for sheet in STYLES.glob("*.tcss"):
        for number, line in enumerate(sheet.read_text().splitlines(), 1):
            assert not loose.search(line), f"{sheet.name}:{number}: {line.strip()}"


def _truecolor(color: RichColor) -> Color:
    triplet = color.get_truecolor()
    return Color(triplet.red, triplet.green, triplet.blue)


def _illegible(app, region=None) -> dict[str, float]:
    """Text drawn on the current screen (or in ``region`` of it) below 4.5:1: {text: ratio}."""
    bad: dict[str, float] = {}
    strips = app.screen._compositor.render_strips()
    if region is not None:
        strips = [strip.crop(region.x, region.right) for strip in strips[region.y:region.bottom]]
    for strip in strips:
        for segment in strip:
            style = segment.style
            if style is None or DECORATION.match(segment.text) or style.color is None or style.bgcolor is None:
                continue
            if style.color.is_default:
                continue  # the terminal's own foreground on its background (ANSI themes)
            fg, bg = _truecolor(style.color), _truecolor(style.bgcolor)
            if style.dim:
                fg = bg.blend(fg, DIM_FACTOR)
            ratio = contrast(fg, bg)
            if ratio < MINIMUM_CONTRAST:
                bad.setdefault(segment.text.strip()[:40], round(ratio, 2))
    return bad


@pytest.mark.parametrize("theme", THEMES)
async def test_br18_every_drawn_text_is_legible_in_every_theme(fixed_db, theme: str) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        app.theme = theme
        await settle(pilot)
        assert _illegible(app) == {}, f"{theme}: session list"
        await pilot.press("t")
        await settle(pilot)
        assert _illegible(app) == {}, f"{theme}: transcript"


@pytest.mark.parametrize("theme", THEMES)
async def test_br18_recap_and_lineage_text_is_legible_in_every_theme(fixed_db, theme: str) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        app.theme = theme
        await settle(pilot)
        await pilot.press("enter")  # the recap of the first conversation
        await settle(pilot)
        assert _illegible(app) == {}, f"{theme}: recap"
        await pilot.press("l")
        await settle(pilot)
        assert _illegible(app) == {}, f"{theme}: lineage"


async def test_br18_chosen_theme_is_kept_in_config_yaml(fixed_db, tmp_path, monkeypatch) -> None:
    from hermes_tui.config import load_config

    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "config.yaml").write_text("# mine\nresume_command: \"hermes --resume {id}\"\ntheme: nord\n")
    monkeypatch.setenv("HERMES_SESSIONS_CONFIG_DIR", str(config_dir))
    config, problems = load_config()
    assert problems == [] and config.theme == "nord"
    app = make_app(fixed_db, config=config.model_copy(update={"animations": "none"}), save_settings=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "nord"
        app.theme = "textual-light"  # as the command palette's "Change theme" does
        await settle(pilot)
    text = (config_dir / "config.yaml").read_text()
    assert text == '# mine\nresume_command: "hermes --resume {id}"\ntheme: "textual-light"\n'
    again, problems = load_config()
    assert problems == [] and again.theme == "textual-light" and again.resume_command == "hermes --resume {id}"


async def test_br18_theme_is_added_to_a_config_without_one(fixed_db, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_SESSIONS_CONFIG_DIR", str(tmp_path / "new"))
    app = make_app(fixed_db, save_settings=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.theme = "solarized-light"
        await settle(pilot)
    assert (tmp_path / "new" / "config.yaml").read_text() == 'theme: "solarized-light"\n'


def _match_cells(app) -> list[tuple[str, float]]:
    """Every drawn search highlight (the match style: bold on a background of its own) with
    its contrast, foreground against background."""
    found = []
    for strip in app.screen._compositor.render_strips():
        for segment in strip:
            style = segment.style
            if (style is None or not style.bold or style.color is None or style.bgcolor is None
                    or style.color.is_default or not segment.text.strip()
                    or "docker" not in segment.text.lower() and "compose" not in segment.text.lower()):
                continue
            fg, bg = _truecolor(style.color), _truecolor(style.bgcolor)
            found.append((segment.text, round(contrast(fg, bg), 2)))
    return found


@pytest.mark.parametrize("theme", THEMES)
async def test_br18_search_highlights_are_legible_in_every_theme(fixed_db, theme: str) -> None:
    """The match style (hits pane and transcript) reaches 4.5:1 whatever the theme's warning
    colour: solarized-light drew its highlights at 1.6:1."""
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        app.theme = theme
        await settle(pilot)
        await pilot.press("/", *"docker compose")
        await settle(pilot)
        hits = _match_cells(app)
        if not variables_are_ansi(app):
            assert hits, f"{theme}: no highlight drawn in the hits pane"
        assert [hit for hit in hits if hit[1] < MINIMUM_CONTRAST] == [], f"{theme}: hits pane"
        assert _illegible(app) == {}, f"{theme}: hits pane"
        await pilot.press("down", "enter")  # the first hit's transcript, its terms highlighted
        await settle(pilot)
        shown = _match_cells(app)
        if not variables_are_ansi(app):
            assert shown, f"{theme}: no highlight drawn in the transcript"
        assert [hit for hit in shown if hit[1] < MINIMUM_CONTRAST] == [], f"{theme}: transcript"
        assert _illegible(app) == {}, f"{theme}: transcript"


def variables_are_ansi(app) -> bool:
    return str(app.get_css_variables().get("background", "")).startswith("ansi")


@pytest.mark.parametrize("theme", THEMES)
async def test_br18_warnings_are_legible_in_every_theme(tmp_path, theme: str) -> None:
    """A warning's own tinted background (the status line's, a dialog's note) still leaves
    its text at 4.5:1."""
    from hermes_tui.screens.browser import BrowserScreen
    from hermes_tui.widgets.status import StatusLine

    from .test_delete_undo import family_db

    app = make_app(family_db(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        app.theme = theme
        await settle(pilot)
        app.screen.query_one(StatusLine).set_warning("waiting for a lock held by another process")
        await settle(pilot)
        assert _illegible(app) == {}, f"{theme}: status line warning"
        app.screen.query_one(StatusLine).set_warning(None)
        await pilot.press("d")  # the first conversation is live: the dialog warns
        await settle(pilot)
        assert not isinstance(app.screen, BrowserScreen)
        assert app.screen.query("#delete-live"), "the live warning is shown"
        warning = app.screen.query_one("#delete-live").region
        assert _illegible(app, warning) == {}, f"{theme}: delete dialog's warning"


def _button_label(app, button) -> list[tuple[str, float | None]]:
    """Each text cell run of ``button`` as drawn, with its contrast against the background it
    is drawn on (reversed when focused: the same pair); ``None`` when the terminal's own
    colours are used, as ANSI themes do. Textual's tall borders above and below the label are
    half blocks on a colour of their own: decoration, skipped."""
    region = button.region
    found = []
    for strip in app.screen._compositor.render_strips()[region.y:region.bottom]:
        for segment in strip.crop(region.x, region.right):
            style = segment.style
            if style is None or DECORATION.match(segment.text):
                continue
            fg, bg = style.color, style.bgcolor
            assert fg is not None and bg is not None, f"{segment.text!r}: {style}"
            if fg.is_default and bg.is_default:
                found.append((segment.text.strip(), None))  # the terminal's own pairing
                continue
            assert not fg.is_default and not bg.is_default, f"{segment.text!r}: half the terminal's: {style}"
            found.append((segment.text.strip(), contrast(_truecolor(fg), _truecolor(bg))))
    return found


async def _button_states(pilot, button, elsewhere) -> dict[str, list[tuple[str, float | None]]]:
    """The label of ``button`` in each state a person reads it in: neither focused nor under
    the mouse, under the mouse, focused, both. (``elsewhere`` takes the focus away; disabled
    buttons are exempt in WCAG, and a press shows for a fifth of a second as the dialog
    closes.)"""
    app = pilot.app
    states = {}
    for state in ("normal", "mouse", "focus", "focus+mouse"):
        (button if "focus" in state else elsewhere).focus()
        if "mouse" in state:
            await pilot.hover(button)
        else:
            await pilot.hover(offset=(0, 0))  # the dimmed browser behind the dialog
        await settle(pilot)
        assert button.has_focus == ("focus" in state) and button.mouse_hover == ("mouse" in state), state
        states[state] = _button_label(app, button)
        assert states[state] and str(button.label) in "".join(text for text, _ in states[state]), state
    return states


@pytest.mark.parametrize("theme", THEMES)
async def test_br18_dialog_buttons_are_legible_in_every_state_in_every_theme(tmp_path, theme: str) -> None:
    """Every button variant the dialogs use -- the red Delete, the primary Export, the plain
    Cancel -- keeps its label at 4.5:1 as drawn, under the mouse and focused too. Textual's own
    styles drew nord's Delete at 3.0:1 (2.3:1 under the mouse) and the ANSI themes' at the
    terminal's red on its black."""
    from textual.widgets import Button

    from .test_delete_undo import family_db

    app = make_app(family_db(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        app.theme = theme
        await settle(pilot)
        ansi = variables_are_ansi(app)
        for key, ids in (("d", ("#delete-yes", "#delete-no")), ("e", ("#export-go", "#export-close"))):
            await pilot.press(key)
            await settle(pilot)
            buttons = [app.screen.query_one(selector, Button) for selector in ids]
            for button, other in (buttons, buttons[::-1]):
                for state, cells in (await _button_states(pilot, button, other)).items():
                    where = f"{theme}: {button.label} ({button.variant}), {state}"
                    if ansi:  # the terminal's foreground on its background, whatever its palette
                        assert {ratio for _, ratio in cells} == {None}, f"{where}: {cells}"
                    else:
                        assert all(ratio is not None and ratio >= MINIMUM_CONTRAST for _, ratio in cells), \
                            f"{where}: {cells}"
            await pilot.press("escape")
            await settle(pilot)
