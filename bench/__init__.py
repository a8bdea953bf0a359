"""Benchmark harness: ``python -m bench --size 10k|100k|1m`` (see bench/README.md)."""
