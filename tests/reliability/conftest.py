"""Shared fixtures of the contention, crash and export-fault tests.

The machinery (writer processes, the kill -9 loop, the store checks, the UI driver) lives in
``bench/reliability.py``, which runs the same scenarios at full size; these tests call it
with CI sizes. Helpers of the lock / environment / hostile-input tests are in
``helpers_env.py`` and ``hostile.py`` of this directory.

Fixtures
--------
``home``
    A fresh ``HERMES_HOME`` directory (``tmp_path / "home"``) with its ``sessions/`` folder.
``sim_store``
    ``tmp_path / "sim" / "state.db"``: a store written by the gateway simulator (one writer,
    300 events: gateway lanes, CLI sessions, compressions, branches, delegates, titles, tool
    calls, English and CJK), built once per test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # ``bench.reliability`` is imported from the source tree
    sys.path.insert(0, str(REPO))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    (path / "sessions").mkdir(parents=True)
    return path


@pytest.fixture
def sim_store(tmp_path: Path) -> Path:
    from hermes_workload.simulate import run_writer

    sim_home = tmp_path / "sim"
    report = run_writer(sim_home, seed=5, rate=0.0, max_events=300)
    assert report.errors == 0, report.error_samples
    return sim_home / "state.db"
