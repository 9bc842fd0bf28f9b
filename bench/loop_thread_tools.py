"""The tool-loop benchmark's Python tool as most real tools are: `bench/loop_tools.py`'s
`echo`, its work done through a call.

A sync tool that only returns an expression of its arguments and constants runs inline on
the event loop (`registry/bounded.py`), as `bench/loop_tools.py`'s does; one that makes any
call runs in the executor's thread pool. This one joins its strings with `str.join`, so the
`python-thread` kind of `bench/tool_loop.py` measures the thread hand-off that real tools pay.
"""

from __future__ import annotations


def echo(text: str) -> str:
    """Return the text, prefixed with "echo: "."""
    return "".join(("echo: ", text))
