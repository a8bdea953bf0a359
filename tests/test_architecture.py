"""The walls of "one door to the store" (the layering of docs/architecture.md), checked on
the source so they stay up.

* no import cycle inside ``hermes_state`` or ``hermes_tui`` (function-level imports count;
  imports under ``if TYPE_CHECKING:`` do not);
* no module of ``hermes_tui`` uses a private name of ``hermes_state`` (an imported ``_name``,
  or ``._name`` called on a store object);
* no screen, modal or widget calls a method defined on the app class (screens own their flows);
* no module but ``hermes_tui.compat`` touches a private Textual name;
* widgets, screens and dialogs never import the store door (``hermes_tui.data``);
* the browser screen composes its parts, mixing nothing in;
* the app does not reach into screens (no walking ``screen_stack``).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(package: str) -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((ROOT / package).rglob("*.py"))}


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _imports(tree: ast.AST):
    """Every import node, skipping the bodies of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if _is_type_checking(node):
            stack.extend(node.orelse)  # type: ignore[attr-defined]
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(package: str) -> dict[str, set[str]]:
    modules = _modules(package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                target = _resolve(name, is_package, node)
                # ``from . import x`` runs the package's __init__ before it finds x: an edge to
                # both (a module its package imports must name its siblings directly).
                targets = [target]
                targets += [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


@pytest.mark.parametrize("package", ["hermes_state", "hermes_tui"])
def test_walls_no_import_cycle(package):
    assert find_cycles(import_graph(package)) == []


def test_walls_cycle_finder_finds_a_cycle():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _state_private_names() -> set[str]:
    """Private names defined anywhere in hermes_state (module level and on classes)."""
    names: set[str] = set()
    for path in _modules("hermes_state").values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = node.name
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id.startswith("_"):
                        names.add(target.id)
                    elif isinstance(target, ast.Attribute) and target.attr.startswith("_"):
                        names.add(target.attr)
                continue
            else:
                continue
            if name.startswith("_") and not name.startswith("__"):
                names.add(name)
    return names


def test_walls_ui_uses_no_private_name_of_the_store():
    private = _state_private_names()
    assert "_execute_write" in private and "_fetchall" in private  # the check sees them
    offenders = []
    for name, path in _modules("hermes_tui").items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hermes_state"):
                for alias in node.names:
                    if alias.name.startswith("_"):
                        offenders.append(f"{name}:{node.lineno} imports {alias.name}")
            elif isinstance(node, ast.Attribute) and node.attr in private:
                # self._x is the module's own state; anything else names the store's.
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    offenders.append(f"{name}:{node.lineno} uses .{node.attr}")
    assert offenders == []


def _app_methods() -> set[str]:
    tree = ast.parse((ROOT / "hermes_tui" / "app.py").read_text(encoding="utf-8"))
    methods: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "HermesApp":
            methods |= {
                item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
    return methods - {"__init__"}


def test_walls_screens_never_call_the_apps_own_methods():
    methods = _app_methods()
    assert "report_error" in methods
    offenders = []
    for name, path in _modules("hermes_tui").items():
        if name.split(".")[1:2] not in (["screens"], ["modals"], ["widgets"]):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in methods
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "app"
            ):
                offenders.append(f"{name}:{node.lineno} self.app.{node.attr}")
    assert offenders == []


def test_walls_app_does_not_reach_into_screens():
    source = (ROOT / "hermes_tui" / "app.py").read_text(encoding="utf-8")
    assert "screen_stack" not in source
    tree = ast.parse(source)
    private_calls = [
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "screen"
    ]
    assert private_calls == []


def test_walls_widget_messages_name_their_widget():
    """Every message a widget posts has a ``control``, so ``@on(Message, "#id")`` works."""
    import inspect

    import textual.message

    from hermes_tui.widgets import search, session_list, transcript_view
    from hermes_tui.widgets.intent import WidgetMessage

    found = []
    for module in (search, session_list, transcript_view):
        for _, widget in inspect.getmembers(module, inspect.isclass):
            if widget.__module__ != module.__name__:
                continue
            for name, member in vars(widget).items():
                if inspect.isclass(member) and issubclass(member, textual.message.Message):
                    found.append(f"{widget.__name__}.{name}")
                    assert issubclass(member, WidgetMessage), f"{widget.__name__}.{name} has no control"
    assert "SessionList.Highlighted" in found and "SearchResults.Chosen" in found


# -- Textual's private names stay in hermes_tui.compat ---------------------------------------

@functools.cache
def _textual_source_scan() -> tuple[frozenset[str], dict[tuple[str, str], frozenset[str]]]:
    """Private names Textual defines anywhere (functions, classes, module- and class-level
    names, attributes set on ``self``), and per class ``(module, name)`` those its own body
    sets on ``self``. One pass over Textual's source."""
    import textual

    root = Path(textual.__file__).parent
    names: set[str] = set()
    per_class: dict[tuple[str, str], frozenset[str]] = {}
    for path in root.rglob("*.py"):
        module = ".".join(("textual", *path.relative_to(root).with_suffix("").parts))
        module = module.removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            if isinstance(node, ast.ClassDef):
                per_class[(module, node.name)] = frozenset(
                    inner.attr for inner in ast.walk(node)
                    if isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store)
                    and isinstance(inner.value, ast.Name) and inner.value.id == "self"
                    and inner.attr.startswith("_")
                )
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__")), per_class


def _textual_private_names() -> frozenset[str]:
    return _textual_source_scan()[0]


def _own_private_names() -> set[str]:
    """Private names hermes_tui defines for itself: functions, classes, module- and
    class-level names, and attributes it sets on ``self``."""
    names: set[str] = set()
    for path in _modules("hermes_tui").values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif (
                isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name) and node.value.id == "self"
            ):
                names.add(node.attr)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _textual_privates_of(cls: type) -> set[str]:
    """The private names a Textual class in ``cls``'s bases defines or sets on ``self``:
    what ``self._x`` in ``cls`` would reach (or, defined in ``cls``, replace)."""
    per_class = _textual_source_scan()[1]
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] == "textual":
            names |= {n for n in vars(klass) if n.startswith("_") and not n.startswith("__")}
            names |= per_class.get((klass.__module__, klass.__name__), frozenset())
    return names


def _all_subclasses(cls: type) -> list[type]:
    found, stack = [], [cls]
    while stack:
        for sub in stack.pop().__subclasses__():
            found.append(sub)
            stack.append(sub)
    return found


def private_textual_uses(source: str, namespace: dict, textual_private: set[str], own: set[str]) -> list[str]:
    """Where ``source`` (whose classes are found by name in ``namespace``) touches a private
    Textual name: imports from a private Textual module or of a private name; ``x._name`` or
    ``getattr(x, "_name")`` on anything but ``self`` for a Textual name hermes_tui does not
    define itself; and, in a class, ``self._name`` or a method or attribute it defines, for a
    private name of the Textual classes it derives from -- or that the classes mixing it in
    derive from."""
    offenders: list[str] = []
    tree = ast.parse(source)
    self_scopes: dict[int, set[str]] = {}  # id of a class's node -> the Textual names of its self
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and isinstance(namespace.get(node.name), type):
            cls = namespace[node.name]
            privates = set()
            for klass in (cls, *_all_subclasses(cls)):
                privates |= _textual_privates_of(klass)
            for inner in ast.walk(node):
                self_scopes.setdefault(id(inner), privates)
            for item in node.body:
                defined = (
                    [item.name] if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                    else [t.id for t in getattr(item, "targets", [getattr(item, "target", None)])
                          if isinstance(t, ast.Name)]
                )
                offenders += [f"{item.lineno}: {node.name} defines {n}" for n in defined if n in privates]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "textual":
            if any(part.startswith("_") for part in node.module.split(".")) or any(
                alias.name.startswith("_") for alias in node.names
            ):
                offenders.append(f"{node.lineno}: imports from {node.module}")
        elif isinstance(node, ast.Import):
            offenders += [
                f"{node.lineno}: imports {alias.name}" for alias in node.names
                if alias.name.split(".")[0] == "textual" and any(p.startswith("_") for p in alias.name.split("."))
            ]
        name, target = None, None
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            name, target = node.attr, node.value
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
        ):
            name, target = node.args[1].value, node.args[0]
        if name is None or not name.startswith("_") or name.startswith("__"):
            continue
        if isinstance(target, ast.Name) and target.id in ("self", "cls"):
            if name in self_scopes.get(id(node), set()):
                offenders.append(f"{node.lineno}: self.{name}")
        elif name in textual_private and name not in own:
            offenders.append(f"{node.lineno}: .{name}")
    return offenders


def test_walls_only_the_compat_module_touches_private_textual_names():
    import importlib

    textual_private, own = _textual_private_names(), _own_private_names()
    assert {"_begin_batch", "_forward_event", "_vertical_scrollbar"} <= textual_private  # the scan sees them
    offenders = []
    for name, path in _modules("hermes_tui").items():
        if name == "hermes_tui.compat":
            continue
        namespace = vars(importlib.import_module(name))
        found = private_textual_uses(path.read_text(encoding="utf-8"), namespace, textual_private, own)
        offenders += [f"{name}:{where}" for where in found]
    assert offenders == []


def test_walls_private_textual_use_finder_finds_each_kind():
    """The wall is not vacuous: each kind of private use in a sample module is found."""
    source = '''
from textual.widgets._footer import FooterKey
from textual.widgets import Input

class Keys:
    async def _on_key(self, event):
        return self._cursor_visible

class Field(Keys, Input):
    def _on_paste(self, event):
        self._mine = self._suggestion

def hold(app, screen):
    app._begin_batch()
    return getattr(app, "_keymap", None), screen._invoke_later
'''
    namespace: dict = {}
    exec(compile(source, "<sample>", "exec"), namespace)
    found = private_textual_uses(source, namespace, _textual_private_names(), _own_private_names())
    assert found == [
        "6: Keys defines _on_key",
        "10: Field defines _on_paste",
        "2: imports from textual.widgets._footer",
        "7: self._cursor_visible",
        "11: self._suggestion",
        "14: ._begin_batch",
        "15: ._keymap",
        "15: ._invoke_later",
    ]


def test_walls_widgets_screens_and_dialogs_never_import_the_store_door():
    """What they show comes from :mod:`hermes_tui.view_models`; the door (``hermes_tui.data``,
    its connections and threads) is reached through the context they are handed."""
    graph = import_graph("hermes_tui")
    assert "hermes_tui.view_models" in graph["hermes_tui.widgets.search"]  # the graph sees imports
    offenders = sorted(
        name for name, targets in graph.items()
        if name.split(".")[1:2] in (["widgets"], ["screens"], ["modals"]) and "hermes_tui.data" in targets
    )
    assert offenders == []


def test_walls_the_browser_composes_its_parts_and_mixes_nothing_in():
    """BrowserScreen owns its parts (the list window and its count, search as you type, the
    actions) as plain objects: no mixin reaching into the screen, none a DOM node of its own."""
    from textual.dom import DOMNode

    from hermes_tui.screens.base import HermesScreen
    from hermes_tui.screens.browser import BrowserScreen
    from hermes_tui.screens.browser_search import SearchAsYouType
    from hermes_tui.screens.browser_window import ListWindow
    from hermes_tui.screens.flows import SessionActions

    assert BrowserScreen.__bases__ == (HermesScreen,)
    assert not any(issubclass(part, DOMNode) for part in (ListWindow, SearchAsYouType, SessionActions))
    for module in ("browser", "browser_search", "browser_window", "flows"):
        source = (ROOT / "hermes_tui" / "screens" / f"{module}.py").read_text(encoding="utf-8")
        assert "type: ignore" not in source, f"{module}: a part that needs type: ignore reaches past its host"
