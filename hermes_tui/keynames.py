"""Keys as a person reads them (``ctrl+p`` → ``Ctrl+P``): a leaf module, so that a screen can
name its keys without importing :mod:`hermes_tui.keys`, which imports every screen."""

from __future__ import annotations

from textual.keys import REPLACED_KEYS, key_to_character

#: Names of keys as a person reads them on a keyboard.
KEY_NAMES = {
    "enter": "Enter", "escape": "Esc", "space": "Space", "tab": "Tab", "backspace": "Backspace",
    "delete": "Del", "up": "↑", "down": "↓", "left": "←", "right": "→", "home": "Home",
    "end": "End", "pageup": "PgUp", "pagedown": "PgDn", "slash": "/", "question_mark": "?",
}


def key_label(key: str) -> str:
    """``ctrl+p`` → ``Ctrl+P``, ``question_mark`` → ``?``, ``plus`` → ``+``, ``N`` → ``N``
    (shift is the case)."""
    *mods, last = key.split("+")
    name = KEY_NAMES.get(last)
    if name is None and len(last) > 1:  # a character's name (full_stop, plus): the character
        character = key_to_character(REPLACED_KEYS.get(last, last))
        if character is not None and character.isprintable() and not character.isspace():
            name = character
    if name is None:
        name = last.upper() if (mods and len(last) == 1) or (last[:1] == "f" and last[1:].isdigit()) else last
    return "+".join([m.capitalize() for m in mods] + [name])


def keys_label(keys: str) -> str:
    return " / ".join(key_label(k.strip()) for k in keys.split(",") if k.strip())


def bound_keys_label(app, binding_id: str | None, default: str) -> str:
    """The keys of binding ``binding_id`` as the user's keymap has them (``default``, the
    binding's own keys, when it does not remap it), as a person reads them."""
    # Imported here: this is a leaf module, and the compat module imports Textual.
    from .compat import keymap

    remapped = keymap(app).get(binding_id) if binding_id else None
    return keys_label(remapped or default)
