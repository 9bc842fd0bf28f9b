"""SourceSet.reload: one source closed, its tools dropped and started again, the others
left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry import (
    BuiltinSourceConfig,
    PythonSourceConfig,
    SourceNotFoundError,
    SourceSet,
    ToolRegistry,
)

TOOL = '''
def {name}(x: int) -> int:
    """Return x.

    Args:
        x: a number.
    """
    return x
'''


async def test_only_the_reloaded_sources_tools_are_replaced(tmp_path: Path) -> None:
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text(TOOL.format(name="one"))
    second.write_text(TOOL.format(name="two"))
    configs = [
        PythonSourceConfig(python="first.py", namespace="a"),
        PythonSourceConfig(python="second.py", namespace="b"),
        BuiltinSourceConfig.model_validate({"builtin": {"tools": ["calculator"]}}),
    ]
    sources = SourceSet.from_configs(configs, base_dir=tmp_path)
    registry = ToolRegistry()
    await sources.start(registry)
    builtins = sorted(t.qualified_name for t in registry if t.metadata.source == "builtin")
    registry.disable("b.two", "under review")
    first.write_text(TOOL.format(name="one") + TOOL.format(name="uno"))
    second.write_text(TOOL.format(name="three"))

    status = await sources.reload("python:first.py", registry)

    assert (status.name, status.reachable, status.tool_count) == ("python:first.py", True, 2)
    assert [t.qualified_name for t in registry if t.namespace == "a"] == ["a.one", "a.uno"]
    assert "b.two" in registry and registry.disabled_reason("b.two") == "under review"
    await sources.reload("python:second.py", registry)
    assert "b.two" not in registry and registry.is_enabled("b.three")
    await sources.reload(sources.statuses()[2].name, registry)
    assert sorted(t.qualified_name for t in registry if t.metadata.source == "builtin") == builtins
    assert {"a.one", "a.uno", "b.three"} <= {t.qualified_name for t in registry}
    with pytest.raises(SourceNotFoundError, match=r"python:nowhere\.py"):
        await sources.reload("python:nowhere.py", registry)
    await sources.aclose()


async def test_a_failed_reload_is_its_status(tmp_path: Path) -> None:
    path = tmp_path / "tools.py"
    path.write_text(TOOL.format(name="one"))
    sources = SourceSet.from_configs([PythonSourceConfig(python="tools.py")], base_dir=tmp_path)
    registry = ToolRegistry()
    await sources.start(registry)
    path.write_text("raise RuntimeError('no tools today')\n")
    status = await sources.reload("python:tools.py", registry)
    assert not status.reachable and status.error is not None and "no tools today" in status.error
    assert len(registry) == 0
    path.write_text(TOOL.format(name="one"))
    assert (await sources.reload("python:tools.py", registry)).reachable
    assert "one" in registry
