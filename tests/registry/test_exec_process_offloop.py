"""The process backend keeps its blocking work (spawning, pickling, reaping) off the loop."""

from __future__ import annotations

import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from registry import ProcessBackend, ThreadBackend, Tool

SEEN: list[tuple[str, int]] = []
"""(what, thread id) of each blocking step observed in this process."""


def _rebuilt() -> Witness:
    SEEN.append(("unpickle", threading.get_ident()))
    return Witness()


class Witness:
    """Notes the thread that pickles or unpickles it."""

    def __reduce__(self) -> tuple[Any, ...]:
        SEEN.append(("pickle", threading.get_ident()))
        return (_rebuilt, ())


def echo(value: Any) -> Any:
    return Witness()


class RecordingPopen(subprocess.Popen[bytes]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        SEEN.append(("spawn", threading.get_ident()))
        super().__init__(*args, **kwargs)

    def wait(self, timeout: float | None = None) -> int:
        SEEN.append(("wait", threading.get_ident()))
        return super().wait(timeout)


async def test_spawning_pickling_and_reaping_happen_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(subprocess, "Popen", RecordingPopen)
    SEEN.clear()
    loop_thread = threading.get_ident()
    tool = Tool.from_function(echo, execution_mode="process")
    with ThreadPoolExecutor(max_workers=1) as pool:
        backend = ProcessBackend(workers=1, fallback=ThreadBackend(pool))
        try:
            assert isinstance(await backend.run(tool, {"value": Witness()}), Witness)
        finally:
            backend.close()
    assert {"spawn", "pickle", "unpickle"} <= {what for what, _ in SEEN}
    assert [what for what, thread in SEEN if thread == loop_thread] == []
