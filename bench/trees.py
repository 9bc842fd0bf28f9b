"""A Toolwire of another source tree (`--toolwire-tree DIR`, `--goal-tree DIR`) configured as
this tree's is, with its own copy of a Python tool source.

A bench's config names Python tool sources of this tree (`examples/tools.py`,
`bench/loop_tools.py`); such a file may import what an older tree's packages lack (the example
tools import `registry.parse_python`, which 134e72f has not), so the older server would not
start. Where DIR holds the same file, its server loads DIR's copy; the tools' schemas, which
are what a plain request carries, are the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.harness import ROOT


def tree_tools(tools: list[dict[str, Any]], tree: Path) -> list[dict[str, Any]]:
    """`tools:` entries for a server of `tree`: a Python source of this tree taken from `tree`
    where it has that file; every other entry as it is."""
    out = []
    for source in tools:
        own = Path(source.get("python", ""))
        if own.is_absolute() and own.is_relative_to(ROOT):
            theirs = tree / own.relative_to(ROOT)
            if theirs.is_file():
                source = {**source, "python": str(theirs)}
        out.append(source)
    return out
