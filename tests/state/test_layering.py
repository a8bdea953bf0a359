"""DESIGN layering: ``hermes_state`` is a plain library; ``hermes_workload`` sits on it.

* ``hermes_state`` never imports a UI toolkit (``textual``, ``rich``), the UI (``hermes_tui``)
  or the workload generators (``hermes_workload``): rendering and wording live in the UI,
  generators use the store and not the reverse.
* ``hermes_workload`` never imports ``hermes_tui``: the CLI calls the generators, not the
  reverse.

Checked twice: statically, on the source of every module (imports inside functions count,
imports under ``if TYPE_CHECKING:`` do not, since they never run), and dynamically, by
importing every module in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "hermes_state"
WORKLOAD = REPO / "hermes_workload"

#: Top-level packages each layer must never import.
FORBIDDEN = {
    "hermes_state": ("textual", "rich", "hermes_tui", "hermes_workload"),
    "hermes_workload": ("hermes_tui",),
}


def module_names(package: Path = PACKAGE) -> list[str]:
    return sorted(
        package.name if p.name == "__init__.py" else f"{package.name}.{p.stem}"
        for p in package.glob("*.py")
    )


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING`` (any module alias)."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _resolve_relative(module: str, level: int, importer: str, is_package: bool) -> str:
    """The absolute name of ``from <level dots><module> import …`` inside ``importer``."""
    parts = importer.split(".")
    if not is_package:
        parts = parts[:-1]
    base = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*base, module] if module else base)


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import that can run in ``path``.

    Module-level and function-level imports, ``from x import y`` (as ``x`` and ``x.y``),
    relative imports resolved against ``module``, and ``importlib.import_module("x")`` /
    ``__import__("x")`` with a literal name. Bodies of ``if TYPE_CHECKING:`` are skipped
    (their ``else`` branches are not).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _resolve_relative(node.module or "", node.level, module, is_package)
            else:
                base = node.module or ""
            found.append((node.lineno, base))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names if alias.name != "*")
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def offenders(package: Path) -> list[str]:
    banned = FORBIDDEN[package.name]
    bad = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent).with_suffix("")
        parts = list(relative.parts)
        if parts[-1] == "__init__":
            parts.pop()
        for line, name in imported_modules(path, ".".join(parts)):
            if name.split(".")[0] in banned:
                bad.append(f"{path.relative_to(REPO)}:{line} imports {name}")
    return bad


# ------------------------------------------------------------------------ the scanner itself


def _scan(tmp_path: Path, source: str) -> list[str]:
    path = tmp_path / "mod.py"
    path.write_text(source, encoding="utf-8")
    return [name for _line, name in imported_modules(path, "hermes_state.mod")]


def test_scanner_sees_function_level_and_dynamic_imports(tmp_path):
    names = _scan(tmp_path, (
        "import os\n"
        "def draw():\n"
        "    from rich.text import Text\n"
        "    import textual.app\n"
        "    importlib.import_module('hermes_tui.app')\n"
        "class C:\n"
        "    def m(self):\n"
        "        __import__('hermes_workload')\n"
    ))
    assert {"os", "rich.text", "textual.app", "hermes_tui.app", "hermes_workload"} <= set(names)


def test_scanner_skips_type_checking_blocks_but_not_their_else(tmp_path):
    names = _scan(tmp_path, (
        "import typing\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from rich.text import Text\n"
        "if typing.TYPE_CHECKING:\n"
        "    import textual\n"
        "else:\n"
        "    import hermes_tui\n"
    ))
    assert "rich.text" not in names and "textual" not in names
    assert "hermes_tui" in names


def test_scanner_resolves_relative_imports(tmp_path):
    assert "hermes_state.db" in _scan(tmp_path, "from .db import SessionDB\n")
    assert "hermes_state" in _scan(tmp_path, "from . import db\n")
    assert "hermes_state.db" in _scan(tmp_path, "from . import db\n")


# ------------------------------------------------------------------------------- the rules


def test_layering_no_forbidden_import_statement_in_hermes_state():
    assert "hermes_state.db" in module_names()
    assert offenders(PACKAGE) == []


def test_layering_hermes_workload_never_imports_the_ui():
    assert "hermes_workload.simulate" in module_names(WORKLOAD)
    assert offenders(WORKLOAD) == []


@pytest.mark.parametrize("package", [PACKAGE, WORKLOAD], ids=lambda p: p.name)
def test_layering_importing_every_module_loads_nothing_forbidden(package):
    names = module_names(package)
    banned = FORBIDDEN[package.name]
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {banned!r})\n"
        "print('LOADED:' + ','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "LOADED:"


# Kept from the first version of this file (names other tests and docs refer to).


def test_layering_importing_every_module_does_not_load_textual():
    names = module_names()
    assert "hermes_state.db" in names
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print('LOADED:' + ','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "LOADED:"


def test_layering_no_textual_import_statement_in_source():
    bad = [entry for entry in offenders(PACKAGE)
           if entry.split(" imports ")[1].split(".")[0] in ("textual", "hermes_tui")]
    assert bad == []
