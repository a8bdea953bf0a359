"""Pydantic's plugins are not looked for in this program: ``browse`` starts sooner.

Pydantic looks for plugins (the ``pydantic`` entry-point group) when it builds its first
model, and its loader imports :mod:`importlib.metadata` to do so -- with ``email``,
``zipfile``, ``csv`` and ``socket`` behind it: 35-70 ms of every start of the browser, the
first page needing two models (a session's summary, the settings), for a group no package
here fills. :func:`skip_discovery` puts a loader in its place that finds none, before
pydantic is imported; anything else asked of the loader comes from the real one.

A person who uses a pydantic plugin says so with pydantic's own ``PYDANTIC_DISABLE_PLUGINS``
(any value, even one naming no plugin): pydantic then loads them as it always does.
"""

from __future__ import annotations

import importlib
import os
import sys
import types

LOADER = "pydantic.plugin._loader"


def skip_discovery() -> bool:
    """Register the loader that finds no plugin; False when pydantic's own is (or will be)
    used: already imported, or plugins asked about through ``PYDANTIC_DISABLE_PLUGINS``."""
    if LOADER in sys.modules or "PYDANTIC_DISABLE_PLUGINS" in os.environ:
        return False
    module = types.ModuleType(LOADER, __doc__)

    def get_plugins() -> tuple:
        return ()

    def real(name: str):
        # Another name of the loader (a later pydantic may ask for one): the real module.
        # (Not a module's own dunder, which the import system looks up: `__path__`.)
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if sys.modules.get(LOADER) is module:
            del sys.modules[LOADER]
        return getattr(importlib.import_module(LOADER), name)

    module.get_plugins = get_plugins  # type: ignore[attr-defined]
    module.__getattr__ = real  # type: ignore[attr-defined]
    sys.modules[LOADER] = module
    return True
