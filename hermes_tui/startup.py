"""What a start of the browser does before its first frame, made cheap (issue 15).

Python's garbage collector runs as allocations come: while modules are imported and a Textual
app starts, ~100k long-lived objects are made and each older-generation collection walks all of
them again -- ~0.1 s of collections in a start that is ~0.8 s of work. :func:`collector_paused`
turns the collector off for such a stretch (and back on after it, whatever happens); the app
turns it back on itself once it is mounted, with thresholds and a frozen heap of its own (see
``HermesApp._collect_garbage_between_keys``).
"""

from __future__ import annotations

import gc
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
