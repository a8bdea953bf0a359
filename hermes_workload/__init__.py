"""Workload generators for Hermes session stores: not storage, so not in ``hermes_state``.

* :mod:`hermes_workload.corpus` — a deterministic synthetic ``state.db`` (benchmarks, demo
  mode, tests): ``generate_corpus`` / ``generate_demo`` with a ``progress(done, total)``
  callback.
* :mod:`hermes_workload.simulate` — a gateway-like concurrent writer (``run_simulation``,
  ``run_writer``, ``verify_simulation``) for live demos, contention tests and the bench.

Layering: this package uses ``hermes_state`` (through its write path) and never imports
``hermes_tui``; the command line (``hermes sessions simulate`` / ``generate``, and
``browse --demo``) lives in ``hermes_tui`` and calls the plain functions here. Submodules are
not imported eagerly, so ``import hermes_workload`` stays cheap.
"""

__all__ = ["corpus", "simulate"]
