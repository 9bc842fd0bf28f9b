"""The README's sample outputs are what the code prints: docs/samples.py makes each one with
the real CLI and server, and README.md must hold it, up to the parts that change per run.

Benchmark figure tables are measurements, not command outputs: they are not samples.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _samples_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_samples", REPO / "docs" / "samples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


samples = _samples_module()


def test_every_readme_sample_is_what_the_code_prints() -> None:
    problems = samples.stale(README, samples.produce())

    assert not problems, (
        "README.md's samples differ from what the code prints; if the new output is right, "
        "run `.venv/bin/python docs/samples.py --write`\n\n" + "\n\n".join(problems)
    )


def test_every_console_block_is_a_sample() -> None:
    fence = re.compile(r"^(<!-- sample: [a-z0-9-]+ -->\n)?```(\w*)\n(.*?)^```$", re.M | re.S)
    fences = fence.findall(README)
    unmarked = [
        body.splitlines()[0]
        for marker, lang, body in fences
        if not marker and (lang == "console" or re.search(r"^\$ ", body, re.M))
    ]

    assert not unmarked, f"command lines whose output no sample makes: {unmarked}"
    assert len(samples.blocks(README)) == sum(1 for marker, _, _ in fences if marker)


def test_variable_parts_are_masked_and_nothing_else() -> None:
    a = "2026-11-30 15:09:14  demo.calculate  asked  0.0  call_tw9e1755713f3f27891d1d8f3774ad2d56"
    b = "2026-12-01 01:02:03  demo.calculate  asked  12.5  call_tw0123456789abcdef0123456789abcdef"

    assert samples.normalised(a) == samples.normalised(b)
    assert samples.normalised(a) != samples.normalised(a.replace("asked", "ok"))
    assert samples.normalised(": tools running\n\n") == ": tools running\n\n"


def test_what_the_prose_quotes_is_in_a_sample() -> None:
    held = samples.blocks(README)
    tool_message = re.search(r"`(Error \(invalid_arguments\): [^`]*)`", README)
    assert tool_message is not None
    assert tool_message[1] in held["command-line"].text
    loop = README.split("## How the loop behaves", 1)[1].split("\n## ", 1)[0]
    assert "`: tools running`" in loop
    assert "\n: tools running\n" in held["quickstart-stream"].text


def test_a_server_that_exits_fails_at_once_with_what_it_logged(tmp_path: Path) -> None:
    # Not after the deadline (minutes, so that a loaded machine never hits it): at its exit.
    config = {"upstreams": "not a list"}
    exited = pytest.raises(RuntimeError, match="the server exited without a line")
    with exited as raised, samples._serving(tmp_path, config):
        pass
    assert "invalid configuration" in str(raised.value)
