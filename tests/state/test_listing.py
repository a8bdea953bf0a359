"""The human list's count: kept on a viewer until another process commits."""

from __future__ import annotations

from pathlib import Path

from hermes_state import SessionDB, listing


def test_count_is_kept_until_another_process_commits_and_then_read_again(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    writer = SessionDB(path)
    for i in range(3):
        writer.create_session(f"s{i}", "cli")
    viewer = SessionDB(path, read_only=True)
    try:
        assert listing.page(viewer, 0, 10)[1] == 3
        statements: list[str] = []
        viewer._conn.set_trace_callback(statements.append)
        assert listing.page(viewer, 0, 10)[1] == 3
        assert not any("COUNT(*)" in s for s in statements)  # answered from what it knew
        writer.create_session("s3", "cli")  # another connection commits
        assert listing.page(viewer, 0, 10)[1] == 4
        assert any("COUNT(*)" in s for s in statements)
    finally:
        viewer._conn.set_trace_callback(None)
        viewer.close()
        writer.close()
