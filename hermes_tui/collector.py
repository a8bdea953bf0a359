"""When Python's garbage collector may run in the browser (start-up and keystroke speed).

It runs as allocations come, which in a Textual app is exactly when somebody waits: while
modules are imported and the app starts (~100k long-lived objects made, each older-generation
collection walking them all again: ~0.1 s of a start that is ~0.8 s of work), and while a
keystroke's answer is built and drawn (young collections of ~1.2 ms, two a key). So:
:func:`collector_paused` turns it off for a stretch of start-up (the app turns it back on once
mounted, with thresholds and a frozen heap of its own: ``HermesApp._collect_garbage_between_keys``),
and :func:`hold_collection` / :func:`release_collection` keep it off from a keystroke to its
answer painted, so collections happen between keys.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off for the block, then as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


#: Set while :func:`hold_collection` holds the collector off (and it was on before).
_held = threading.Event()


def hold_collection() -> None:
    """No collection until :func:`release_collection`: from a keystroke to its answer painted.
    A young collection costs ~1.2 ms in the browser and typing made ~2 per keystroke, while
    the answer was built and drawn; held, they happen between keys instead."""
    if gc.isenabled():
        gc.disable()
        _held.set()


def release_collection() -> None:
    """The collector back on, if :func:`hold_collection` turned it off."""
    if _held.is_set():
        _held.clear()
        gc.enable()
