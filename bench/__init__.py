"""Toolwire's performance benches, each a script run by path (`.venv/bin/python bench/X.py`),
on one shared harness (`bench/harness.py`, `bench/cpu.py`); the README's Benchmarks section
lists each bench's command and its newest figures, docs/benchmarks.md each bench in full."""
