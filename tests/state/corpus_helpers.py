"""Generated corpora for tests that compare answers across both store layouts."""

from __future__ import annotations

from pathlib import Path


def corpora_in_both_layouts(tmp_path_factory, name: str, *, messages: int, seed: int) -> dict[int, Path]:
    """One generated corpus (archived, hidden, pinned, rewound rows, chains) in the v16 and
    the v30 layout, by schema."""
    from hermes_workload.corpus import generate_corpus

    out = {}
    for schema in (16, 30):
        path = tmp_path_factory.mktemp(f"{name}{schema}") / "state.db"
        generate_corpus(path, messages=messages, seed=seed, now=1767225600.0, schema=schema)
        out[schema] = path
    return out
