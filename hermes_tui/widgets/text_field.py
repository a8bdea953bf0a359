"""Keys typed in one burst act in the order they were typed, and go where the focus went.

A terminal delivers what was typed since its last read at once: a fast typist, a held-down
Backspace, a paste of keys, any keys typed while the app is busy (a search running). Textual
hands every key of such a burst to the widget focused when the burst arrives, and runs a
key's binding only once the key has bubbled up through every parent's message queue to the
app -- by then the keys typed after it are in. Two consequences, both met by users:

* In a text field, the editing keys (Backspace, Delete, Ctrl+U, Ctrl+W, the arrows, Home,
  End) are bindings: "dockr", Backspace, "er" became "docke"; "ab", Ctrl+U, "xyz" became "".
  Textual's own report: Textualize/textual#6605 (open, a fix proposed in #6631).
* A key that moves the focus (``/`` on the list opens the search field) did so after the
  keys typed behind it had reached the widget it left, which ran them as its own keys:
  "/docker" typed on the list opened the delete dialog (``d``), changed the order (``o``),
  opened the export dialog (``e``) and the rename dialog (``r``).

* A key that opens a dialog or a screen: the keys typed behind it reached the list before
  the dialog was there (a rename dialog is opened once the session's row is read, in a
  thread), and ran as the list's keys -- "r" and a new title "plan" typed in one read opened
  the lineage screen (``l``) -- or reached the new screen before its field had the focus, and
  were lost.

So a widget here looks a key's binding up at once, from itself up (the chain and the keymap
the app would use after the bubbling), and a key that reaches a widget the focus has left
since it was sent there is handed on to the widget focused now. Actions that move the focus
for a key (:func:`focus_now`) do it at once rather than after the queued keys. A key that
opens a dialog or screen holds the keys typed after it (:func:`hold_keys`): they are kept,
in the order typed, until the new screen has focused its field, and then handed to it
(:func:`release_held_keys`); if the dialog does not open, they are dropped
(:func:`drop_held_keys`), never run as the list's keys.

When a pinned Textual runs bindings inline itself and hands queued keys on, this can go.
"""

from __future__ import annotations

from textual import events
from textual.app import App
from textual.widget import Widget
from textual.widgets import Input

from ..compat import check_bindings, forward_event

#: How many times one key is handed on (the focus moving again meanwhile) before it is let go.
_MOST_HANDS = 4

#: Keys held for a dialog that has not opened by then are dropped (a safety net: every flow
#: releases or drops them itself).
HOLD_MOST_S = 5.0


class _Held:
    """The keys held for a screen on its way, on its app (``app._hermes_held``)."""

    def __init__(self, app: App) -> None:
        self.keys: list[events.Key] = []
        self.timer = app.set_timer(HOLD_MOST_S, lambda: drop_held_keys(app), name="typed-ahead")


def hold_keys(app: App) -> None:
    """Hold the keys typed from now on (and those already queued behind the key being
    handled) for the screen or dialog this key opens. Idempotent."""
    if getattr(app, "_hermes_held", None) is None:
        app._hermes_held = _Held(app)  # type: ignore[attr-defined]


def holding_keys(app: App) -> bool:
    return getattr(app, "_hermes_held", None) is not None


def hold_key(app: App, event: events.Key) -> bool:
    """Keep ``event`` if keys are held (True), to be handed on when they are released."""
    held: _Held | None = getattr(app, "_hermes_held", None)
    if held is None:
        return False
    held.keys.append(event)
    event.stop()
    event.prevent_default()
    return True


def drop_held_keys(app: App) -> None:
    """The screen the keys were held for is not coming: forget them."""
    held: _Held | None = getattr(app, "_hermes_held", None)
    if held is not None:
        app._hermes_held = None  # type: ignore[attr-defined]
        held.timer.stop()


def release_held_keys(app: App) -> None:
    """Hand the held keys, in the order they were typed, to the widget focused now."""
    held: _Held | None = getattr(app, "_hermes_held", None)
    if held is None:
        return
    drop_held_keys(app)
    # A key held by the app and one held by a widget whose queue it reached earlier may have
    # been kept out of order: the order they were typed in is their time stamps'.
    for event in sorted(held.keys, key=lambda event: event.time):
        _send_on(app, event, hands=0)


def release_held_keys_later(app: App) -> None:
    """Release the held keys once what is queued for the app now has run (a focus that
    ``Widget.focus`` asked for among it)."""
    if holding_keys(app):
        app.call_later(release_held_keys, app)


def _send_on(app: App, event: events.Key, *, hands: int) -> None:
    copy = events.Key(event.key, event.character)
    copy.time = event.time  # (the order it was typed in, should it be held again)
    copy._hermes_hands = hands  # type: ignore[attr-defined]
    forward_event(app.focused or app.screen, copy)


def focus_now(widget: Widget) -> None:
    """Focus ``widget`` before the next queued key is looked at (``Widget.focus`` does it after
    every message already queued: the keys of the same burst)."""
    widget.screen.set_focus(widget)


def _handed_on(widget: Widget, event: events.Key) -> bool:
    """If keys are held for a screen on its way, keep ``event`` with them; if the focus has
    left ``widget`` since ``event`` was sent to it, send a copy of the key to the widget
    focused now (or its screen), as the app would have. True if either."""
    app = widget.app
    if hold_key(app, event):
        return True
    focused = app.focused
    if focused is widget:
        return False
    hands = getattr(event, "_hermes_hands", 0)
    if hands >= _MOST_HANDS:
        return False
    _send_on(app, event, hands=hands + 1)
    event.stop()
    event.prevent_default()
    return True


async def _run_binding(widget: Widget, event: events.Key) -> bool:
    if await check_bindings(widget.app, event.key):
        event.stop()
        event.prevent_default()  # (the widget's own handlers are not to see it again)
        return True
    return False


class KeysFollowFocus:
    """Mix in first, for a focusable widget that is not a text field (lists, panes): its keys'
    bindings run at once, and keys that arrive after the focus left it are handed on."""

    # Textual runs the key handler of each class in the MRO that defines one, in MRO order
    # (the subclass's own first): this one runs before the widget's base class's.
    async def on_key(self, event: events.Key) -> None:
        if not _handed_on(self, event):  # type: ignore[arg-type]
            await _run_binding(self, event)  # type: ignore[arg-type]


class KeysInOrder:
    """Mix in before :class:`~textual.widgets.Input`: its editing keys act in order, and keys
    that arrive after the focus left it are handed on."""

    # As KeysFollowFocus's: run before Input's own key handler, which comes next in the MRO.
    async def on_key(self, event: events.Key) -> None:
        if _handed_on(self, event):  # type: ignore[arg-type]
            return
        if event.is_printable:
            return  # Input's own handler, next in the MRO, inserts it
        await _run_binding(self, event)  # type: ignore[arg-type]


class TextField(KeysInOrder, Input):
    """An :class:`~textual.widgets.Input` whose editing keys act in order.

    ``holds_keys_on_submit``: Enter closes what the field is in (a dialog that saves): the
    keys typed behind it are held for what comes next (:func:`hold_keys`; the dialog
    releases them), not typed into the field nor lost."""

    def __init__(self, *args, holds_keys_on_submit: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.holds_keys_on_submit = holds_keys_on_submit

    async def action_submit(self) -> None:
        if self.holds_keys_on_submit:
            hold_keys(self.app)
        await super().action_submit()
