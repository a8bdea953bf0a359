"""A second process that commits N times: ``python commit_writer.py DB MODE ARG COUNT DELAY``.

MODE ``sessions``: each commit creates a new cli session whose one message contains ARG.
MODE ``append``: each commit appends one message to the existing session ARG.
Through the real SessionDB write path; run as a script (Textual's test harness replaces the
standard streams, which multiprocessing's spawn cannot pass on).
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hermes_state import SessionDB  # noqa: E402


def main() -> None:
    path, mode, arg, count, delay = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    db = SessionDB(path)
    try:
        for i in range(count):
            if mode == "sessions":
                sid = f"20261118_0900{i:02d}_new{i:02d}"
                db.create_session(sid, "cli")
                db.append_message(sid, "user", f"a new note about {arg} number {i}")
            else:
                db.append_message(arg, "assistant", f"live line {i} appended by another process")
            time.sleep(delay)
    finally:
        db.close()


if __name__ == "__main__":
    main()
