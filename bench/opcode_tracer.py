"""Runs a server under CPython's opcode trace: every bytecode it executes counted by the
function that runs it, and every call (or coroutine resumption) of each function. The first
SIGUSR1 starts the trace (start-up and whatever ran before are not traced: the trace slows
them several times over) and each SIGUSR1 writes the counts so far to `OUT.N` (N: 1, 2, ...
in order; the first empty), as JSON of `{"file:line:qualname": [bytecodes, calls]}`. Used by
`bench/opcodes.py`.

    python bench/opcode_tracer.py OUT --module proxy -- serve --config proxy.yaml
    python bench/opcode_tracer.py OUT --script bench/passthrough.py -- --port 8100 ...

The trace (`sys.settrace` with `f_trace_opcodes`, on the main thread, where the event loop
runs) counts what runs, not how fast: a frame already running when it starts is traced from
its next resumption.
"""

from __future__ import annotations

import json
import runpy
import signal
import sys
from collections import Counter
from types import CodeType, FrameType
from typing import Any

_bytecodes: Counter[CodeType] = Counter()
_calls: Counter[CodeType] = Counter()
_written = [0]


def _local(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "opcode":
        _bytecodes[frame.f_code] += 1
    return _local


def _global(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "call":  # a call, or a generator's or coroutine's resumption
        frame.f_trace_opcodes = True
        _calls[frame.f_code] += 1
        return _local
    return None


def _write(out: str) -> None:
    sys.settrace(None)  # what writing runs is not counted (a frame begun now is not traced)
    bytecodes, calls = dict(_bytecodes), dict(_calls)
    _written[0] += 1
    found = {
        f"{code.co_filename}:{code.co_firstlineno}:{code.co_qualname}": [n, calls.get(code, 0)]
        for code, n in bytecodes.items()
    }
    with open(f"{out}.{_written[0]}", "w") as file:
        json.dump(found, file)
    sys.settrace(_global)


def main() -> None:
    out, how, target, dashes, *argv = sys.argv[1:]
    if how not in ("--module", "--script") or dashes != "--":
        raise SystemExit(__doc__)
    signal.signal(signal.SIGUSR1, lambda signum, frame: _write(out))
    sys.argv = [target, *argv]
    if how == "--module":
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    main()
