"""Every private Textual name the UI relies on, in one place.

Textual is pinned exactly (pyproject.toml) because the UI reaches past its public API in a
few spots, each to make a keystroke's frame cheaper, to keep keys in the order they were
typed, or to judge a keymap by the keys Textual really binds. Those reaches live here and nowhere else (a wall in ``tests/test_architecture.py``
keeps it so), each behind a small function that says why it is needed. :data:`PRIVATE_NAMES`
lists what each one touches, with the shape expected of it; ``tests/tui/test_textual_compat.py``
checks that list against the installed Textual, so moving the pin fails in that one test, name
by name, rather than somewhere in a Pilot run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

import textual.keys as textual_keys

# A private module: Textual exports its footer but not the footer's keys, which KeyFooter
# makes itself (each with its final classes, so that it is styled once).
from textual.widgets._footer import FooterKey

if TYPE_CHECKING:
    from textual import events
    from textual.app import App
    from textual.binding import BindingsMap
    from textual.dom import DOMNode
    from textual.geometry import Size
    from textual.message_pump import MessagePump
    from textual.screen import Screen
    from textual.scrollbar import ScrollBar
    from textual.widget import Widget
    from textual.widgets import Footer, Input

__all__ = [
    "FooterKey", "PRIVATE_NAMES", "PrivateName", "begin_batch", "check_bindings", "check_refresh",
    "end_batch", "footer_bindings_ready", "forward_event", "input_cursor_visible",
    "input_suggestion", "is_alias", "key_press", "keymap", "mark_footer_bindings_ready", "merged_bindings", "reported_name",
    "run_after_this_frame", "scroll_update", "vertical_scrollbar",
]


@dataclass(frozen=True)
class PrivateName:
    """One private Textual name used here. ``owner``: where Textual defines it (a dotted
    class or module path). ``kind``: ``"method"``, ``"coroutine"`` (an ``async def``),
    ``"class"`` (called to make one), ``"attribute"`` (set by the owner's ``__init__``) or
    ``"reactive"`` (a class-level reactive). ``params``: the parameter names after ``self``
    that the call here passes, in order (methods and classes)."""

    owner: str
    name: str
    kind: str
    params: tuple[str, ...] = ()


#: What this module touches, checked against the installed Textual by the compat test.
PRIVATE_NAMES: tuple[PrivateName, ...] = (
    PrivateName("textual.app.App", "_begin_batch", "method"),
    PrivateName("textual.app.App", "_end_batch", "method"),
    PrivateName("textual.app.App", "_batch_count", "attribute"),
    PrivateName("textual.widget.Widget", "_check_refresh", "method"),
    PrivateName("textual.widget.Widget", "_vertical_scrollbar", "attribute"),
    PrivateName("textual.app.App", "_start_widget", "method", ("parent", "widget")),
    PrivateName("textual.widgets.Input", "_suggestion", "reactive"),
    PrivateName("textual.widgets.Input", "_cursor_visible", "reactive"),
    PrivateName("textual.widget.Widget", "_scroll_update", "method", ("virtual_size",)),
    PrivateName("textual.screen.Screen", "_invoke_later", "method", ("callback", "sender")),
    PrivateName("textual.widget.Widget", "_forward_event", "method", ("event",)),
    PrivateName("textual.screen.Screen", "_forward_event", "method", ("event",)),
    PrivateName("textual.app.App", "_check_bindings", "coroutine", ("key",)),
    PrivateName("textual.app.App", "_keymap", "attribute"),
    PrivateName("textual.keys", "_character_to_key", "method", ("character",)),
    PrivateName("textual.dom.DOMNode", "_merge_bindings", "method"),
    PrivateName("textual.widgets.Footer", "_bindings_ready", "reactive"),
    PrivateName(
        "textual.widgets._footer", "FooterKey", "class",
        ("key", "key_display", "description", "action", "disabled", "tooltip", "classes"),
    ),
)


# -- drawing: one frame for a key and its answer (hermes_tui.frames) -------------------------

def begin_batch(app: "App") -> None:
    """Hold the app's drawing. ``App.batch_update`` is a context manager, but a key's echo is
    held from the key's handler until its answer arrives in another handler (or a timer), so
    the hold has to begin and end in different calls."""
    app._begin_batch()


def end_batch(app: "App") -> bool:
    """End one hold begun with :func:`begin_batch`; True if no hold is left, so that the
    caller may wake the screen to draw now (from a timer nothing else would)."""
    app._end_batch()
    return not app._batch_count


def check_refresh(widget: "Widget") -> None:
    """Tell ``widget``'s screen now that it needs a repaint or a layout -- what the widget's
    next idle would do. A widget tells its screen only once its own queue is idle, which may
    be after the frame a released hold lets through."""
    widget._check_refresh()


def run_after_this_frame(screen: "Screen", callback: Callable[[], object], sender: "MessagePump") -> None:
    """Run ``callback`` once the frame being drawn now is written. ``call_after_refresh``
    posts a message that reaches the screen only after this frame, and then waits for the
    next refresh, a 60 Hz slot later."""
    screen._invoke_later(callback, sender)


# -- scrolling --------------------------------------------------------------------------------

def vertical_scrollbar(widget: "Widget", make: Callable[[], "ScrollBar"]) -> "ScrollBar":
    """``widget``'s vertical scrollbar, made with ``make`` the first time it is asked for and
    started as Textual starts its own: what ``Widget.vertical_scrollbar`` does, with a
    scrollbar class of ours (Textual offers no hook for the class)."""
    bar = widget._vertical_scrollbar
    if bar is None:
        bar = make()
        widget._vertical_scrollbar = bar
        widget.app._start_widget(widget, bar)
    return bar


def scroll_update(view: "Widget", size: "Size") -> None:
    """What a layout does for a scroll view whose virtual size changed but whose own size
    stayed (scrollbars, scroll limits, a repaint): without a layout of the whole screen,
    which cost ~10 ms of every search answer."""
    view._scroll_update(size)


# -- text fields ------------------------------------------------------------------------------

def input_suggestion(field: "Input") -> str:
    """The suggestion ``field`` shows after its text. Input keeps it in a private reactive;
    the quick line drawing gives way to Input's own when there is one."""
    return field._suggestion


def input_cursor_visible(field: "Input") -> bool:
    """Whether ``field``'s blinking cursor is in its visible phase (a private reactive of
    Input), so the quick line drawing shows the cursor exactly when Input would."""
    return field._cursor_visible


# -- keys -------------------------------------------------------------------------------------

def forward_event(node: "DOMNode", event: "events.Event") -> None:
    """Hand ``event`` to ``node`` (the focused widget, or the screen) as the app hands on a
    key from the terminal: marked as forwarded, and on a screen routed as the screen routes
    the app's own. Used for a key that reached a widget after the focus had left it, so that
    it goes on to the one focused now, in the order it was typed."""
    node._forward_event(event)  # type: ignore[attr-defined]


async def check_bindings(app: "App", key: str) -> bool:
    """Run the non-priority bindings for ``key`` (the focused widget first, then its
    parents) at once, as the app does once the key has bubbled up to it; True if one ran.
    Waiting for the bubble would let the next queued key act first."""
    return await app._check_bindings(key)


#: A key's other name -> the key press a terminal reports for both (Textual's ``KEY_ALIASES``:
#: Ctrl+I is the byte of Tab, Ctrl+M that of Enter).
_ALIAS_OF = {alias: key for key, aliases in textual_keys.KEY_ALIASES.items() for alias in aliases}


def key_press(key: str) -> str:
    """The key press a binding's or keymap's key name ``key`` answers, as Textual names it
    when it binds: a single character by its name (``?`` -> ``question_mark``, ``/`` ->
    ``slash``), a key's other name as the key press a terminal reports for both (``ctrl+i``
    -> ``tab``, ``ctrl+m`` -> ``enter``), any other name as written. Two names with one key
    press are one key: of two bindings given ``?`` and ``question_mark``, one silently never runs."""
    if len(key) == 1:
        return textual_keys._character_to_key(key)
    return _ALIAS_OF.get(key, key)


def is_alias(key: str) -> bool:
    """Whether ``key`` is another name of a key press a terminal reports by its first name
    (``ctrl+i`` of ``tab``): a binding on it runs only where the terminal tells them apart."""
    return key in _ALIAS_OF


def reported_name(key: str) -> str:
    """``key`` (modifiers, then one key's name) with its key named as Textual reports the
    key press: a character written by its Unicode name as Textual names that character
    (``solidus`` -> ``slash``, ``plus_sign`` -> ``plus``, ``ctrl+solidus`` -> ``ctrl+slash``,
    ``latin_small_letter_a`` -> ``a``). A binding on ``solidus`` never runs: no key press
    is named so."""
    if key == "+":
        return key
    mods, plus, last = key.rpartition("+")
    if len(last) < 2:
        return key
    character = textual_keys.key_to_character(last)
    if character is None or not character.isprintable():
        return key
    named = textual_keys._character_to_key(character)
    return f"{mods}{plus}{named}" if named != last else key


def merged_bindings(cls: type["DOMNode"]) -> "BindingsMap":
    """The bindings a widget or screen of class ``cls`` starts with, before any keymap, as
    Textual merges the BINDINGS of its classes (a class's key replaces the key of the same
    name its bases bind): its own and those it inherits -- an Input's editing keys, a Tree's.
    Keymap problems are judged against these, the keys that really answer."""
    return cls._merge_bindings()


def keymap(app: "App") -> Mapping[str, str]:
    """The user's keymap as set with ``App.set_keymap`` (binding id -> keys). Textual has
    no public getter; the help screen and the footer hints name the keys it remaps."""
    return getattr(app, "_keymap", None) or {}


# -- footer -----------------------------------------------------------------------------------

def footer_bindings_ready(footer: "Footer") -> bool:
    """Whether ``footer``'s screen has said its bindings at least once: before that the
    footer shows no keys (Footer's own rule, kept by KeyFooter)."""
    return footer._bindings_ready


def mark_footer_bindings_ready(footer: "Footer") -> None:
    """What ``Footer.bindings_changed`` records first; KeyFooter replaces that method (to
    recompose only when the keys change) and so must record it itself."""
    footer._bindings_ready = True
