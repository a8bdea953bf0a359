"""bench.startup_floor starts fresh processes that stop earlier than the browser does: each
mode's child runs on this machine and reports a time after its spawn; Python alone is far
quicker than anything that imports Textual (a single sample each: only that wide a gap is
compared, so a busy machine does not make it flaky)."""

from __future__ import annotations

from bench import startup_floor
from hermes_workload.corpus import generate_corpus


def test_every_mode_starts_and_the_floors_nest(tmp_path):
    path = tmp_path / "state.db"
    generate_corpus(path, messages=2000, seed=5, now=1767225600.0, schema=30)
    samples = startup_floor.measure(path, runs=1)
    assert set(samples) == set(startup_floor.MODES)
    first = {mode: values[0] for mode, values in samples.items()}
    assert all(value > 0 for value in first.values()), first
    assert first["interpreter"] < first["imports"] and first["interpreter"] < first["bare app"], first
