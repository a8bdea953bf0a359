"""Text colours that stay legible on every theme, light ones included (BR-18).

Textual's ``$text-*`` colours are tuned for looks, not for contrast: on ``textual-light``
``$text-warning`` is 2.6:1 against ``$surface``, and ``$text-muted`` is an "auto" colour that
a component class (which has no background of its own) resolves against the wrong colour, so
previews and dates came out near-white on light grey.

:func:`legible_variables` derives the app's own text colours (``$hs-*``) from a theme's
variables: each starts from the theme's colour and is blended toward the foreground just
until its WCAG contrast reaches 4.5:1 against every background the app draws text on
(``$background``, ``$surface``, ``$panel``). The stylesheets use only these for text.

A dialog's button draws its label on a background of its own that changes under the mouse
and with the focus: :func:`button_colours` gives each variant one label colour for all those
states (``$hs-on-<variant>``) and, where Textual's shade under the mouse leaves no colour that
does, a shade that does (``$hs-hover-<variant>``).
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from textual.color import Color

#: WCAG AA for body text.
MINIMUM_CONTRAST = 4.5

#: ``$hs-<name>`` → the theme variable it starts from.
TEXT_COLOURS = {
    "muted": "foreground-muted",
    "faint": "foreground-disabled",
    "user": "text-warning",
    "assistant": "text-success",
    "tool": "text-secondary",
    "primary": "text-primary",
    "secondary": "text-secondary",
    "accent": "text-accent",
    "success": "text-success",
    "warning": "text-warning",
    "error": "text-error",
}

BACKGROUNDS = ("background", "surface", "panel")

#: A button's variant → the theme variables of its background, of the shade Textual gives it
#: under the mouse, and of the mirror shade (the other way, as far). ``default`` is the
#: variant without a colour, drawn on ``$surface``.
BUTTONS = {
    "default": ("surface", "surface-darken-1", "surface-lighten-1"),
    "primary": ("primary", "primary-darken-2", "primary-lighten-2"),
    "success": ("success", "success-darken-2", "success-lighten-2"),
    "warning": ("warning", "warning-darken-2", "warning-lighten-2"),
    "error": ("error", "error-darken-1", "error-lighten-1"),
}

#: A focused button's background is tinted this far toward ``$foreground`` (Textual's
#: ``background-tint: $foreground 5%``), in every state.
FOCUS_TINT = 0.05

#: ``$hs-<name>`` also drawn on ``$surface`` tinted with ``$<name>`` at this opacity: a
#: dialog's warning and error notes (``styles/modals.tcss``).
TINTED = {"warning": 0.15, "error": 0.15}


def luminance(color: Color) -> float:
    def channel(value: int) -> float:
        v = value / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(color.r) + 0.7152 * channel(color.g) + 0.0722 * channel(color.b)


def contrast(a: Color, b: Color) -> float:
    """WCAG 2 contrast ratio of two opaque colours (1 … 21)."""
    la, lb = luminance(a), luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def _parse(value: str | None, under: Color | None = None) -> Color | None:
    if not value or value.startswith("auto"):
        return None
    try:
        color = Color.parse(value)
    except Exception:
        return None
    if color.a < 1 and under is not None:
        color = under + color  # alpha colours are drawn over the background
    return color


def eight_bit(color: Color) -> Color:
    """``color`` as a 256-colour terminal draws it (Rich's nearest colour of its palette)."""
    from rich.color import Color as RichColor, ColorSystem

    triplet = RichColor.from_rgb(color.r, color.g, color.b).downgrade(ColorSystem.EIGHT_BIT).get_truecolor()
    return Color(triplet.red, triplet.green, triplet.blue)


def legible(start: Color, foreground: Color, backgrounds: list[Color], minimum: float = MINIMUM_CONTRAST,
            *, eight_bit_too: bool = False) -> Color:
    """``start`` blended toward ``foreground`` (or, if that cannot do it, toward black or
    white) just until its contrast with every background is at least ``minimum``;
    ``eight_bit_too``: also once both are drawn by a 256-colour terminal (its nearest colours
    can lose what truecolor had: white on solarized-light's orange is 4.6:1, on the 256-colour
    orange 3.8:1)."""
    black, white = Color(0, 0, 0), Color(255, 255, 255)
    grounds = [*backgrounds, *(eight_bit(bg) for bg in backgrounds)] if eight_bit_too else backgrounds
    worst = lambda c: min(contrast(c, bg) for bg in grounds)  # noqa: E731
    extreme = black if worst(black) >= worst(white) else white

    def enough(color: Color) -> bool:
        if not all(contrast(color, bg) >= minimum for bg in backgrounds):
            return False
        return not eight_bit_too or all(contrast(eight_bit(color), eight_bit(bg)) >= minimum for bg in backgrounds)

    for target in (foreground, extreme):
        for step in range(0, 41):
            color = start.blend(target, step / 40)
            if enough(color):
                return color
    return extreme


def legible_variables(variables: dict[str, str]) -> dict[str, str]:
    """The ``hs-*`` text colours for a theme's CSS variables (names without ``$``).

    ANSI themes name the terminal's own colours (``ansi_default`` …), whose values only the
    terminal knows: there every text colour is the terminal's foreground (its default
    pairing with the background is legible by definition), on highlights Textual's "auto",
    on a search match (the terminal's yellow) its black.
    """
    background = _parse(variables.get("background"))
    if background is None or str(variables.get("background")).startswith("ansi_"):
        plain = variables.get("foreground") or "ansi_default"
        out = {f"hs-{name}": plain for name in TEXT_COLOURS}
        out.update({"hs-text": plain, "hs-input": plain, "hs-on-accent": "auto 100%", "hs-on-cursor": "auto 100%",
                    "hs-on-match": "ansi_black",  # on the terminal's yellow: dark in every palette
                    "footer-key-foreground": plain, "footer-description-foreground": plain})
        # A button's label is the terminal's foreground on its background in every state (the
        # variant shows in the border): Textual's own drew the terminal's red as the label, on
        # its black under the mouse (1.9:1 in the standard palette).
        for variant in BUTTONS:
            out[f"hs-on-{_button_name(variant)}"] = plain
            out[f"hs-hover-{_button_name(variant)}"] = variables.get("background") or "ansi_default"
        return out
    backgrounds = [c for name in BACKGROUNDS if (c := _parse(variables.get(name), background))]
    foreground = _parse(variables.get("foreground"), background) or background.get_contrast_text(1.0)
    out: dict[str, str] = {}
    surface = backgrounds[1] if len(backgrounds) > 1 else background
    for name, source in TEXT_COLOURS.items():
        start = _parse(variables.get(source), surface)
        if start is None:
            start = foreground
        grounds = backgrounds
        if name in TINTED:  # also on a dialog's note, $surface tinted with its own colour
            tint = _parse(variables.get(name), surface)
            if tint is not None:
                grounds = [*backgrounds, surface.blend(tint, TINTED[name])]
        out[f"hs-{name}"] = legible(start, foreground, grounds).hex
    out["hs-text"] = legible(foreground, foreground, backgrounds).hex
    # Text on the highlighted row: the list's cursor is $accent when focused, else
    # $secondary-muted. A search match is drawn on $warning, opaque: a component class's
    # background loses its alpha (``$warning 40%`` was drawn as $warning itself), and the
    # text under it kept its own colour -- 1.2:1 on solarized-light, 1.5:1 on textual-dark.
    for name, source in (("hs-on-accent", "accent"), ("hs-on-cursor", "secondary-muted"),
                         ("hs-on-match", "warning")):
        under = _parse(variables.get(source), background)
        # (a match must also hold in a 256-colour terminal: its orange is where it failed)
        out[name] = (legible(foreground, foreground, [under], eight_bit_too=name == "hs-on-match").hex
                     if under is not None else "auto 87%")
    # Text typed into an input: Textual draws $foreground on $surface, tinted 5 % toward the
    # foreground while focused (4.1:1 on solarized-light).
    out["hs-input"] = legible(foreground, foreground, [surface, surface.blend(foreground, 0.05)]).hex
    # A button's label and its background under the mouse (Textual's are 3.0:1 on nord's
    # error red, 2.3:1 under the mouse): see button_colours.
    for variant, names in BUTTONS.items():
        label, hover = button_colours(variables, *names, background=background, foreground=foreground)
        out[f"hs-on-{_button_name(variant)}"] = label.hex
        out[f"hs-hover-{_button_name(variant)}"] = hover.hex
    # Textual's footer draws its keys and descriptions in its own colours: same rule.
    footer_bg = _parse(variables.get("footer-background"), background)
    if footer_bg is not None:
        for name in ("footer-key-foreground", "footer-description-foreground"):
            start = _parse(variables.get(name), footer_bg)
            if start is not None:
                out[name] = legible(start, foreground, [footer_bg]).hex
    return out


def _button_name(variant: str) -> str:
    """``$hs-on-<name>`` / ``$hs-hover-<name>``: the colourless variant is plain "button"."""
    return "button" if variant == "default" else variant


def button_colours(variables: dict[str, str], normal: str, hover: str, mirror: str, *,
                   background: Color, foreground: Color) -> tuple[Color, Color]:
    """A button's label colour and its background under the mouse, for the variant drawn on
    ``$<normal>``: one label colour that reaches 4.5:1 in every state a person reads it in
    (normal, under the mouse, focused -- tinted toward the foreground -- and both).

    The label starts from Textual's own and moves toward black or white just as far as
    needed. Textual's shade under the mouse is kept where one label can reach 4.5:1 on it and
    on the normal background; where none can (a mid-tone red such as nord's: black reaches
    it on the red, only white on the darker red) the shade goes the other way, away from the
    label; failing that the background stays and only the border marks the mouse.
    """
    base = _parse(variables.get(normal), background) or background
    if normal == "surface":
        start = _parse(variables.get("button-foreground"), base) or foreground
    else:  # Textual's $button-color-foreground, by default $text: "auto 87%"
        start = _parse(variables.get("button-color-foreground"), base) or base + base.get_contrast_text(0.87)
    black, white = Color(0, 0, 0), Color(255, 255, 255)
    shades = [_parse(variables.get(name), background) for name in (hover, mirror)]
    for shade in [s for s in shades if s is not None] + [base]:
        grounds = [base, shade]
        grounds += [ground.blend(foreground, FOCUS_TINT) for ground in grounds]
        worst = lambda c: min(contrast(c, g) for g in grounds)  # noqa: E731
        extreme = black if worst(black) >= worst(white) else white
        label = legible(start, extreme, grounds)
        if all(contrast(label, ground) >= MINIMUM_CONTRAST for ground in grounds):
            return label, shade
    return label, base


def text_style(widget: Any, name: str = "hs-muted", *, italic: bool = False) -> Style:
    """A style with the current theme's colour ``$<name>`` for text built in Python; plain
    when the theme names a terminal colour Rich cannot draw by name (ANSI themes)."""
    try:
        value = widget.app.theme_variables.get(name)
    except Exception:
        value = None
    try:
        style = Style(color=value) if value else Style()
    except Exception:
        style = Style()
    return style + Style(italic=True) if italic else style


def muted(widget: Any, *, italic: bool = False) -> Style:
    """Secondary text built in Python (labels, ids, hints): the legible muted colour of the
    current theme, instead of Rich's ``dim`` (which halves the contrast, BR-18)."""
    return text_style(widget, "hs-muted", italic=italic)
