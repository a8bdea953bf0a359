"""DESIGN layering: ``hermes_state`` is a plain library and never imports textual."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "hermes_state"


def module_names() -> list[str]:
    return sorted(
        "hermes_state" if p.name == "__init__.py" else f"hermes_state.{p.stem}"
        for p in PACKAGE.glob("*.py")
    )


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
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                mods = [node.module or ""] if node.level == 0 else []
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", ""))
                  in ("import_module", "__import__") and node.args
                  and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                mods = [node.args[0].value]
            else:
                continue
            for mod in mods:
                if mod == "textual" or mod.startswith("textual.") or mod.startswith("hermes_tui"):
                    offenders.append(f"{path.name}:{node.lineno} imports {mod}")
    assert offenders == []
