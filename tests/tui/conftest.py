"""UI test fixtures: a fixed database, a frozen clock, UTC, and a way to let workers settle."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from devtools.pilot import settle  # noqa: F401 - (the tests' way to let work settle, as the screenshots')

from .dataset import NOW, build_fixed_db

os.environ["TZ"] = "UTC"
if hasattr(time, "tzset"):
    time.tzset()

SIZE = (120, 32)


@pytest.fixture
def fixed_db(tmp_path: Path) -> Path:
    return build_fixed_db(tmp_path / "state.db")


def frozen_clock() -> float:
    return NOW


def make_app(db_path: Path, **kwargs):
    from hermes_tui.app import build_app
    from hermes_tui.config import AppConfig

    kwargs.setdefault("clock", frozen_clock)
    kwargs.setdefault("config", AppConfig(animations="none", search_debounce_s=0.0))
    kwargs.setdefault("watch", False)
    kwargs.setdefault("db_label", "~/.hermes/state.db")
    return build_app(db_path, **kwargs)
