"""A second process for live-refresh tests: ``python live_writer.py DB COUNT DELAY``.

Creates COUNT telegram sessions with one message each, DELAY seconds apart, through the
real SessionDB write path. Run as a script (not multiprocessing): Textual's test harness
replaces the standard streams, which multiprocessing's spawn cannot pass on.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hermes_state import SessionDB  # noqa: E402


def main() -> None:
    path, count, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    db = SessionDB(path)
    for i in range(count):
        sid = f"20261118_0800{i:02d}_live{i:02d}"
        db.create_session(sid, "telegram")
        db.append_message(sid, "user", f"live message number {i}")
        time.sleep(delay)
    db.close()


if __name__ == "__main__":
    main()
