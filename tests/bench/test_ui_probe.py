"""bench.ui_probe times `browse` to the first page as a person sees it: the first frame handed
to the terminal driver with the list's rows in it -- not a callback that runs frames later,
after whatever the app queued before it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from hermes_workload.corpus import generate_corpus

ROOT = Path(__file__).resolve().parents[2]


def test_the_first_page_is_timed_at_the_frame_that_draws_it(tmp_path):
    path = tmp_path / "state.db"
    generate_corpus(path, messages=2000, seed=5, now=1767225600.0, schema=30)
    spawned = time.time()
    out = subprocess.run(
        [sys.executable, "-m", "bench.ui_probe", str(path), repr(spawned)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["rows"] > 0
    frame, callback = report["first_page_s"], report["first_page_callback_s"]
    # Both after the spawn and before the probe ended; the frame never after the callback
    # that was queued once the rows were loaded (that callback runs after a refresh).
    assert 0 < frame <= callback < time.time() - spawned
