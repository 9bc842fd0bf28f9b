"""Toolwire's performance benches, each a script run by path (`.venv/bin/python bench/X.py`),
on one shared harness (`bench/harness.py`, `bench/cpu.py`); the README gives each bench's
command beside its figures."""
