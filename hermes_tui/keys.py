"""The browser's keys as a person sees them: labels, per-screen groups, keymap problems.

Used by the help screen and by the app at start, which reports keymap problems
from ``config.yaml`` once: an id that names no binding, and a key given to two
bindings that are active at the same time (``copy_id: "d"`` silently took Delete's key).
"""

from __future__ import annotations

from functools import cache

from textual.binding import Binding
from textual.keys import REPLACED_KEYS, Keys, key_to_character
from textual.screen import ModalScreen
from textual.widgets import Input

from .compat import is_alias, key_press, merged_bindings, reported_name
from .keynames import KEY_NAMES, key_label, keys_label  # noqa: F401  (re-exported)

#: Ids that are not in a screen's BINDINGS but may be remapped (the app's own: a conflict
#: with one names it, so the person must be able to give it another key).
APP_BINDING_IDS = {"command_palette", "cancel"}

#: The app's own bindings (``HermesApp.BINDINGS``), beside those it inherits from Textual's
#: App (Ctrl+Q quits). Here so that the keymap's check sees them without importing the app.
APP_BINDINGS = [
    Binding("ctrl+p", "command_palette", "Commands", id="command_palette", show=False),
    # Ctrl+C cancels, like q (BR-17), instead of Textual's "Press ctrl+q to quit".
    Binding("ctrl+c", "cancel", "Cancel", id="cancel", show=False, system=True),
]

#: What a priority key of the app does, as a problem says it.
_APP_KEY_DOES = {"quit": "quits the browser"}


def sections() -> list[tuple[str, list[type]]]:
    """Each screen's name and the classes whose bindings it offers (screen, then widgets)."""
    # Imported here: this module is imported by the app and by the help screen; the screens
    # it lists import neither.
    from .modals.delete import ConfirmDeleteModal
    from .modals.export import ExportModal
    from .modals.rename import RenameModal
    from .modals.time_picker import TimePicker
    from .modals.workspace_picker import WorkspacePicker
    from .screens.browser import BrowserScreen
    from .screens.lineage import LineageScreen
    from .screens.recap import RecapScreen
    from .screens.transcript import TranscriptScreen
    from .widgets.lineage_tree import LineageTree
    from .widgets.search import SearchInput, SearchResults
    from .widgets.session_list import SessionList
    from .widgets.transcript_view import TranscriptView

    return [
        ("Session list", [BrowserScreen, SessionList]),
        ("Search (after /)", [SearchInput, SearchResults]),
        ("Recap", [RecapScreen]),
        ("Transcript", [TranscriptScreen, TranscriptView]),
        ("Lineage", [LineageScreen, LineageTree]),
        ("Rename, delete and export dialogs, time and workspace pickers",
         [RenameModal, ConfirmDeleteModal, ExportModal, TimePicker, WorkspacePicker]),
    ]


#: A dialog as the help names it beside each of its keys (one section lists every dialog's).
DIALOG_NAMES = {
    "RenameModal": "Rename", "ConfirmDeleteModal": "Delete", "ExportModal": "Export",
    "TimePicker": "Time picker", "WorkspacePicker": "Workspace picker",
}


def dialog_text_fields() -> dict[type, tuple[type, str]]:
    """Each dialog whose text field has the focus while it is used: the field's class and
    its name as a problem says it. There a key that types a character is typed, and runs
    none of the dialog's bindings (``rename_cancel: x`` types ``x`` into the title)."""
    from .modals.export import ExportModal
    from .modals.rename import RenameModal
    from .modals.time_picker import TimePicker
    from .modals.workspace_picker import WorkspacePicker
    from .widgets.text_field import TextField

    return {
        RenameModal: (TextField, "rename dialog's title field"),
        ExportModal: (TextField, "export dialog's file field"),
        TimePicker: (TextField, "time picker's field"),
        WorkspacePicker: (TextField, "workspace picker's field"),
    }


def _active_together() -> list[tuple[str, list[type], str | None, tuple[type, ...]]]:
    """Classes whose bindings answer the same key press (a screen and its focused widget),
    as ``(where, classes, field, typed_over)``: where a text field has the focus (the last
    class), ``field`` names it and ``typed_over`` are the classes whose bindings a key it
    types leaves without that key (the search field's own; a dialog's and its field's)."""
    from .screens.browser import BrowserScreen
    from .widgets.search import SearchInput, SearchResults

    fields = dialog_text_fields()
    groups = []
    for title, classes in sections():
        if title.startswith("Search"):
            groups.append(("search field", [BrowserScreen, SearchInput], "search field", (SearchInput,)))
            groups.append(("search results", [BrowserScreen, SearchResults], None, ()))
        elif title.startswith("Rename"):
            for cls in classes:
                if cls in fields:
                    field_cls, field = fields[cls]
                    groups.append((cls.__name__, [cls, field_cls], field, (cls, field_cls)))
                else:
                    groups.append((cls.__name__, [cls], None, ()))
        else:
            groups.append((title.lower(), classes, None, ()))
    return groups


def bindings_of(classes: list[type]) -> list[Binding]:
    return [b for cls in classes for b in cls.BINDINGS if isinstance(b, Binding)]


def known_ids() -> set[str]:
    ids = set(APP_BINDING_IDS)
    for _title, classes in sections():
        ids |= {b.id for b in bindings_of(classes) if b.id}
    return ids


#: How the help shows a binding left with no key.
NO_KEY = "(no key)"


#: Modifiers a key name may carry (``ctrl+shift+up``).
_MODIFIERS = {"ctrl", "shift", "alt", "meta", "super", "hyper"}
#: Names of keys that are no character (``enter``, ``pageup``, ``f5``), as Textual names them.
_NAMED_KEYS = {key.value.rsplit("+", 1)[-1] for key in Keys if not key.value.startswith("<")}


def is_key_name(key: str) -> bool:
    """Whether Textual can report a key press named ``key``: modifiers, then one printable
    character (``r``, ``R``, ``?``), a key's name (``enter``, ``f5``) or a character's
    (``question_mark``, ``slash``; its Unicode name too, ``solidus``, which
    :func:`checked_keymap` writes as Textual names it). ``notakey!!`` is none: bound to it,
    a binding never runs."""
    if key == "+":
        return True
    *mods, last = key.split("+")
    if not last or any(mod not in _MODIFIERS for mod in mods):
        return False
    if len(last) == 1:
        return last.isprintable() and not last.isspace()
    return last in _NAMED_KEYS or last in REPLACED_KEYS or key_to_character(last) is not None


def checked_keymap(keymap: dict[str, str], source: str) -> tuple[dict[str, str], list[str]]:
    """``keymap`` without the key names Textual cannot produce, and one problem line per
    binding that had any; a character written by its Unicode name named as Textual reports
    its key press (``solidus`` is ``slash``: as written, no key press would run the binding).
    A binding left with no key is taken out of the keymap, so it keeps
    its own keys rather than none that work -- an entry given no key at all (``rename:``,
    ``rename: null``) too: it is said, and a binding is never left without a key."""
    kept: dict[str, str] = {}
    problems: list[str] = []
    ids = None
    for binding_id, keys in keymap.items():
        names = [k.strip() for k in keys.split(",") if k.strip()]
        if not names:
            ids = ids if ids is not None else known_ids()
            if binding_id not in ids:
                kept[binding_id] = keys  # named as an unknown id by keymap_problems
                continue
            own = default_keys(binding_id)
            problems.append(
                f"{source}: keymap: {binding_id}: no key given (ignored; it keeps "
                f"{keys_label(own) if own else 'its own key'}); a binding cannot be left without a key."
            )
            continue
        good = [k for k in names if is_key_name(k)]
        bad = [k for k in names if not is_key_name(k)]
        if good:
            kept[binding_id] = ",".join(dict.fromkeys(reported_name(k) for k in good))
        if bad:
            what = ", ".join(f"'{k}'" for k in bad)
            left = (f"it keeps {keys_label(kept[binding_id])}" if good
                    else "it keeps its own key")
            problems.append(
                f"{source}: keymap: {binding_id}: {what} is no key name (ignored; {left}); "
                "keys are named like r, R, ctrl+r, f5, enter, question_mark."
            )
    return kept, problems


def default_keys(binding_id: str) -> str | None:
    """The keys binding ``binding_id`` has when no keymap names it (as its BINDINGS write
    them), or None for an id no screen's binding has (the app's own, ``command_palette``)."""
    for _title, classes in sections():
        for binding in bindings_of(classes):
            if binding.id == binding_id:
                return binding.key
    return None


def keymap_problems(keymap: dict[str, str], source: str) -> list[str]:
    """One line per problem of ``keymap`` (read from ``source``, a path): unknown ids, and
    keys that two bindings active at the same time would share."""
    problems: list[str] = []
    ids = known_ids()
    for binding_id in keymap:
        if binding_id not in ids:
            problems.append(
                f"{source}: keymap: unknown binding id '{binding_id}' (ignored); "
                "the help screen (?) lists the ids."
            )
    # A pair of bindings that meet on several screens is one problem naming every one of them
    # (``back: ctrl+q`` loses Back on the recap, transcript and lineage screens alike).
    lines: list = []
    meetings: dict[tuple, list] = {}
    fields = {where: field for where, _classes, field, _over in _active_together()}
    for where, key, first, binding, won, lost in _conflicts(keymap):
        if binding is None:  # a key the focused text field types
            lines.append(
                f"{source}: keymap: {key_label(key)} is typed into the {fields[where]}, so "
                f"{_named(first)} has no key there — give it a key that types no "
                "character (ctrl+…, f1…, enter…)."
            )
            continue
        app_key = won.priority and any(won is b for b in _app_bindings())
        if app_key:
            # Ctrl+Q: no keymap entry moves it, so the other binding is the one to change.
            pair: tuple = ("app", won.action, lost.id or lost.action)
        else:
            pair = (*sorted((first.id or first.action, binding.id or binding.action)), won.id or won.action)
        meeting = meetings.get(pair)
        if meeting is None:
            meeting = meetings[pair] = [app_key, key, first, binding, won, lost, []]
            lines.append(meeting)
        if where not in meeting[6]:
            meeting[6].append(where)
    for line in lines:
        if isinstance(line, str):
            problems.append(line)
            continue
        app_key, key, first, binding, won, lost, wheres = line
        places = _places(wheres)
        if app_key:
            does = _APP_KEY_DOES.get(won.action, f"runs {_described(won)}")
            problems.append(
                f"{source}: keymap: {key_label(key)} {does} on every screen (Textual's own key, "
                f"which runs before any screen's), so {_named(lost)} has no key on {places} "
                "— give it another key."
            )
            continue
        problems.append(
            f"{source}: keymap: {key_label(key)} is given to both {_named(first)} and "
            f"{_named(binding)} on {places}{_alias_note(keymap, (first, binding), key)}; "
            f"{_named(won)} wins, {_described(lost)} has no key there — change one."
        )
    return problems


def _places(wheres: list[str]) -> str:
    """``the recap screen, the transcript screen and the lineage screen``."""
    named = [_place(where) for where in wheres]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def _place(where: str) -> str:
    """Where a problem's keys are pressed, as a person names it (``the rename dialog``, not
    its class ``RenameModal``; ``the search field``, not a "search field screen")."""
    if where in DIALOG_NAMES:
        name = DIALOG_NAMES[where].lower()
        return f"the {name}" if name.endswith("picker") else f"the {name} dialog"
    if where.startswith("search"):
        return f"the {where}"
    return f"the {where} screen"


def _described(binding: Binding) -> str:
    return binding.description or binding.action


def _named(binding: Binding) -> str:
    """``Delete (delete)``: a binding as a problem names it, by its description and its id
    (one a keymap can give another key); a key Textual's widget gives itself (an Input's Ctrl+A) has none."""
    return f"{_described(binding)} ({binding.id or 'built-in key, no id'})"


def _node_bindings(cls: type) -> list[Binding]:
    """Every binding of a screen or widget of class ``cls`` before the keymap, one per key,
    its inherited ones too (a text field's editing keys), in the order Textual looks them up."""
    return [b for bs in merged_bindings(cls).key_to_bindings.values() for b in bs]


@cache
def _app_bindings() -> list[Binding]:
    """The app's bindings as Textual merges them: Textual App's (Ctrl+Q quits, a priority
    binding) with :data:`APP_BINDINGS` over them."""
    from textual.app import App

    return _node_bindings(type("BrowserAppBindings", (App,), {"BINDINGS": APP_BINDINGS}))


def _typed(key: str) -> bool:
    """Whether a text field takes the key press ``key`` as text (``d``, ``?``, ``space``)
    rather than looking its bindings up."""
    character = key_to_character(key)
    return character is not None and character.isprintable()


def _conflicts(keymap: dict[str, str]):
    """``(where, key, first, second, winner, loser)`` for each key that two bindings active
    at the same time share because of ``keymap`` (the app's own shared defaults are by design).
    Where a text field has the focus (the search field, a dialog's field) a key that types a
    character runs no binding but a priority one: a binding the keymap gives such a key there
    (the field's own, a dialog's) comes as ``(where, key, binding, None, None, binding)``.
    The app's own bindings answer on every screen, outermost: its priority ones (Ctrl+Q)
    before any screen's, dialogs too; the others last, and not past a dialog."""
    for where, classes, _field, typed_over in _active_together():
        owner: dict[str, tuple[int, Binding]] = {}
        text_field = issubclass(classes[-1], Input)
        modal = issubclass(classes[0], ModalScreen)
        app = [b for b in _app_bindings() if b.priority or not modal]
        chain = [(0, None, app)] + [(rank, cls, _node_bindings(cls)) for rank, cls in enumerate(classes, 1)]
        for rank, cls, bindings in chain:
            for binding in bindings:
                for key in _presses(keymap, binding):
                    if text_field and not binding.priority and _typed(key):
                        if cls in typed_over and binding.id in keymap:
                            yield where, key, binding, None, None, binding
                        continue
                    first_rank, first = owner.setdefault(key, (rank, binding))
                    if first is binding or first.action == binding.action:
                        continue
                    if binding.id not in keymap and first.id not in keymap:
                        continue  # the app's own defaults: screen and widget keys by design
                    won = _winner(keymap, (first_rank, first), (rank, binding), key)
                    yield where, key, first, binding, won, (binding if won is first else first)


def _keys_of(keymap: dict[str, str], binding: Binding) -> list[str]:
    """The keys ``binding`` has under ``keymap``, each as written: its keymap entry's, else
    its own."""
    keys = keymap.get(binding.id, binding.key) if binding.id else binding.key
    return [k.strip() for k in keys.split(",") if k.strip()]


def _presses(keymap: dict[str, str], binding: Binding) -> list[str]:
    """The key presses that run ``binding`` under ``keymap`` (its keymap's keys, else its own),
    each named as Textual names it (:func:`~hermes_tui.compat.key_press`), once each."""
    return list(dict.fromkeys(key_press(k) for k in _keys_of(keymap, binding)))


def group_of(title: str, cls: type) -> str:
    """The name of the bindings group (as :func:`_active_together` names them) in which the
    help's section ``title`` lists the bindings of ``cls``."""
    if title.startswith("Search"):
        return "search field" if issubclass(cls, Input) else "search results"
    if title.startswith("Rename"):
        return cls.__name__
    return title.lower()


def shadowed_keys(keymap: dict[str, str]) -> dict[tuple[str, str], set[str]]:
    """``(group, binding id)`` → the keys that binding has in ``keymap`` but loses there to
    another binding (the one that runs when the key is pressed)."""
    lost_keys: dict[tuple[str, str], set[str]] = {}
    for where, key, _first, _second, _won, lost in _conflicts(keymap):
        lost_keys.setdefault((where, lost.id or lost.action), set()).add(key)
    return lost_keys


def working_keys_label(keymap: dict[str, str], shadowed: dict[tuple[str, str], set[str]],
                       title: str, cls: type, binding: Binding) -> str:
    """The keys that run ``binding`` (of ``cls``, listed in the help's section ``title``) as
    a person reads them: its keymap's or own keys, less those another binding wins there;
    ``(no key)`` when none is left."""
    lost = shadowed.get((group_of(title, cls), binding.id or binding.action), set())
    return keys_label(",".join(k for k in _keys_of(keymap, binding) if key_press(k) not in lost)) or NO_KEY


def _spelled(keymap: dict[str, str], binding: Binding, press: str) -> list[str]:
    """The names under which ``binding`` has the key press ``press`` (``?`` and
    ``question_mark``; ``ctrl+m`` for ``enter``)."""
    return [k for k in _keys_of(keymap, binding) if key_press(k) == press]


def _by_alias_only(keymap: dict[str, str], binding: Binding, press: str) -> bool:
    """Whether ``binding`` has ``press`` only under another name of it (``ctrl+i`` for
    ``tab``): a terminal reports the press by its first name, so the binding never sees it."""
    spelled = _spelled(keymap, binding, press)
    return bool(spelled) and all(is_alias(k) for k in spelled)


def _alias_note(keymap: dict[str, str], bindings: tuple[Binding, Binding], press: str) -> str:
    """`` (Ctrl+M is Enter in a terminal)`` when one of ``bindings`` has ``press`` under
    another of its names, else nothing."""
    aliases = [k for b in bindings for k in _spelled(keymap, b, press) if is_alias(k)]
    return f" ({key_label(aliases[0])} is {key_label(press)} in a terminal)" if aliases else ""


def _winner(keymap: dict[str, str], a: tuple[int, Binding], b: tuple[int, Binding], press: str) -> Binding:
    """Which of two bindings sharing the key press ``press`` Textual runs, as it looks them
    up: one that has it under its first name (``tab``, as a terminal reports it) before one
    that has it only under another (``ctrl+i``); then priority bindings from the screen down;
    else from the focused widget (a later class of the group) up to its screen; within one
    class, a remapped binding replaces the default one that had its key, and of two remapped
    ones the one listed first is found first."""
    (rank_a, first), (rank_b, second) = a, b
    alias_a, alias_b = _by_alias_only(keymap, first, press), _by_alias_only(keymap, second, press)
    if alias_a != alias_b:
        return second if alias_a else first
    if first.priority != second.priority:
        return first if first.priority else second
    if rank_a != rank_b:
        outer_first = first.priority  # both priority: the screen's; neither: the widget's
        return (first if rank_a < rank_b else second) if outer_first else (second if rank_a < rank_b else first)
    if (first.id in keymap) != (second.id in keymap):
        return first if first.id in keymap else second
    return first
