"""Quality tools beyond the test suite, each a script run by path (`.venv/bin/python qa/X.py`):
the soak (`qa/soak.py`: does a server under long mixed load keep its resources bounded?) and
mutation testing (`qa/mutation.py`: does the suite notice a small bug?)."""
