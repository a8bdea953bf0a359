"""The private Textual names of ``hermes_tui.compat`` are there, with the shape it expects.

Textual is pinned exactly; when the pin moves, this is the test that says which private name
went away or changed, one parametrized case per name -- before any Pilot test fails
somewhere less telling.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
from textual.reactive import Reactive

from hermes_tui import compat
from hermes_tui.compat import PRIVATE_NAMES, PrivateName

COMPAT_SOURCE = Path(compat.__file__).read_text(encoding="utf-8")


def _owner(entry: PrivateName):
    module_name, _, attr = entry.owner.rpartition(".")
    try:  # a class, "package.module.Class"
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        return importlib.import_module(entry.owner)  # a module


def _params_after_self(func) -> tuple[str, ...]:
    params = list(inspect.signature(func).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    return tuple(p.name for p in params)


@pytest.mark.parametrize("entry", PRIVATE_NAMES, ids=lambda e: f"{e.owner}.{e.name}")
def test_private_textual_name_is_there_as_expected(entry: PrivateName) -> None:
    owner = _owner(entry)
    if entry.kind == "attribute":
        # A real instance, unmounted: instance attributes are set by ``__init__``.
        assert hasattr(owner(), entry.name), f"{entry.owner}() no longer sets {entry.name}"
        return
    assert entry.name in {n for k in getattr(owner, "__mro__", [owner]) for n in vars(k)}, (
        f"{entry.owner} no longer defines {entry.name}"
    )
    member = getattr(owner, entry.name)
    if entry.kind == "reactive":
        assert isinstance(inspect.getattr_static(owner, entry.name), Reactive)
        return
    assert callable(member)
    if entry.kind == "class":
        assert inspect.isclass(member)
        params = _params_after_self(member.__init__)
    else:
        assert inspect.iscoroutinefunction(member) == (entry.kind == "coroutine"), (
            f"{entry.owner}.{entry.name} is{' no longer' if entry.kind == 'coroutine' else ' now'} async"
        )
        params = _params_after_self(member)
    # The parameters passed here come first, in order; what follows them must have defaults.
    assert params[: len(entry.params)] == entry.params, f"{entry.owner}.{entry.name}{params}"
    rest = list(inspect.signature(member.__init__ if entry.kind == "class" else member).parameters.values())
    rest = [p for p in rest if p.name != "self"][len(entry.params):]
    assert all(
        p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in rest
    ), f"{entry.owner}.{entry.name} now requires {[p.name for p in rest]}"


def _private_names_compat_touches() -> set[str]:
    """Every ``x._name`` read, written or called in compat.py, and ``getattr(x, "_name")``,
    plus the names imported from a private Textual module."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(COMPAT_SOURCE)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            names.add(node.attr)
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
        ):
            names.add(node.args[1].value)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("textual.") and any(
            part.startswith("_") for part in node.module.split(".")
        ):
            names |= {alias.name for alias in node.names}
    return names


def test_every_private_name_compat_touches_is_listed_and_no_more() -> None:
    touched = _private_names_compat_touches()
    assert "_begin_batch" in touched and "FooterKey" in touched  # the scan sees both kinds
    assert touched == {entry.name for entry in PRIVATE_NAMES}


def test_the_compat_check_fails_for_a_name_textual_lacks() -> None:
    """The check is not vacuous: a name Textual does not have fails it."""
    with pytest.raises(AssertionError, match="no longer defines"):
        test_private_textual_name_is_there_as_expected(
            PrivateName("textual.app.App", "_no_such_private_name", "method")
        )
    with pytest.raises(AssertionError):
        test_private_textual_name_is_there_as_expected(
            PrivateName("textual.app.App", "_start_widget", "method", ("widget", "parent"))
        )
