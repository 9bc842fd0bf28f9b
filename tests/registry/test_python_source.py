from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from registry import (
    Executor,
    PythonSourceConfig,
    RegistryError,
    SourceLoadError,
    SourceSet,
    SourceStatus,
    ToolCall,
    ToolOverride,
    ToolRegistry,
    load_python_source,
)

TOOLS = '''
from __future__ import annotations

from dataclasses import dataclass
from os.path import join


@dataclass
class Place:
    city: str
    country: str = "NO"


def get_weather(place: Place, days: int = 1) -> str:
    """Weather for a place.

    Args:
        place: Where.
        days: How many days.
    """
    return f"{place.city},{place.country},{days}"


async def delete_note(note_id: int) -> str:
    """Delete a note."""
    return f"deleted {note_id}"


def _private_helper() -> None:
    pass


class NotATool:
    pass


CONSTANT = 3
'''


def write(tmp_path: Path, text: str, name: str = "tools.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_public_functions_become_tools_with_overrides(tmp_path: Path) -> None:
    write(tmp_path, TOOLS)
    registry = ToolRegistry()
    config = PythonSourceConfig.model_validate(
        {
            "python": "tools.py",
            "namespace": "demo",
            "tags": ["read_only"],
            "overrides": {
                "get_weather": {
                    "tags": ["network"],
                    "defer": True,
                    "search_hint": "forecast rain",
                    "timeout_s": 10,
                    "max_result_size": 500,
                    "description": "Forecast.",
                },
                "delete_note": {"enabled": False, "is_concurrency_safe": False},
            },
        }
    )
    tools = load_python_source(registry, config, base_dir=tmp_path)
    assert [t.qualified_name for t in tools] == ["demo.get_weather", "demo.delete_note"]
    assert [t.qualified_name for t in registry] == ["demo.get_weather", "demo.delete_note"]

    weather = registry.get_tool("demo.get_weather")
    assert weather.metadata.tags == {"read_only", "network"}
    assert weather.metadata.defer
    assert weather.metadata.search_hint == "forecast rain"
    assert weather.metadata.timeout_s == 10
    assert weather.metadata.max_result_size == 500
    assert weather.metadata.source == "python:tools.py"
    assert weather.description == "Forecast."
    assert weather.parameters["properties"]["place"]["properties"]["city"] == {"type": "string"}

    note = registry.get_tool("demo.delete_note")
    assert note.is_async
    assert note.metadata.tags == {"read_only"}
    assert not note.metadata.defer
    assert not note.metadata.is_concurrency_safe
    assert registry.disabled_reason("demo.delete_note") == "disabled in config"
    assert [t.name for t in registry.list_tools()] == ["get_weather"]


async def test_loaded_tools_run(tmp_path: Path) -> None:
    write(tmp_path, TOOLS)
    registry = ToolRegistry()
    load_python_source(registry, PythonSourceConfig(python="tools.py"), base_dir=tmp_path)
    with Executor() as executor:
        result = await executor.execute(
            registry.get_tool("get_weather"),
            ToolCall(id="1", name="get_weather", arguments='{"place": {"city": "Oslo"}}'),
        )
    assert result.content == "Oslo,NO,1"


def test_source_defer_applies_to_every_tool(tmp_path: Path) -> None:
    path = write(tmp_path, TOOLS)
    registry = ToolRegistry()
    config = PythonSourceConfig(
        python=str(path), defer=True, overrides={"delete_note": ToolOverride(defer=False)}
    )
    load_python_source(registry, config, base_dir=Path("/nonexistent"))
    assert registry.get_tool("get_weather").metadata.defer
    assert not registry.get_tool("delete_note").metadata.defer


def test_all_selects_the_exported_functions(tmp_path: Path) -> None:
    write(
        tmp_path,
        """
        from os.path import basename

        __all__ = ["b", "basename"]

        def a() -> None: ...
        def b() -> None: ...
        """,
    )
    registry = ToolRegistry()
    load_python_source(registry, PythonSourceConfig(python="tools.py"), base_dir=tmp_path)
    assert [t.name for t in registry] == ["b", "basename"]


def test_unknown_override_names_the_function(tmp_path: Path) -> None:
    write(tmp_path, TOOLS)
    registry = ToolRegistry()
    config = PythonSourceConfig(python="tools.py", overrides={"get_wether": ToolOverride()})
    with pytest.raises(SourceLoadError, match="unknown tools: get_wether") as info:
        load_python_source(registry, config, base_dir=tmp_path)
    assert "get_weather, delete_note" in str(info.value)
    assert len(registry) == 0


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("def broken(:\n    pass\n", "SyntaxError"),
        ("import no_such_module_for_toolwire\n", "ModuleNotFoundError"),
        ("raise RuntimeError('config missing')\n", "RuntimeError: config missing"),
        ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
    ],
)
def test_import_errors_are_source_load_errors(tmp_path: Path, source: str, reason: str) -> None:
    write(tmp_path, source, "bad.py")
    with pytest.raises(SourceLoadError, match=r"'bad\.py' failed to import") as info:
        load_python_source(ToolRegistry(), PythonSourceConfig(python="bad.py"), base_dir=tmp_path)
    assert reason in str(info.value)
    assert "Traceback" not in str(info.value)


def test_missing_file_and_missing_module(tmp_path: Path) -> None:
    with pytest.raises(SourceLoadError, match="file not found"):
        load_python_source(ToolRegistry(), PythonSourceConfig(python="x.py"), base_dir=tmp_path)
    with pytest.raises(SourceLoadError, match="No module named 'toolwire_missing_mod'"):
        load_python_source(
            ToolRegistry(), PythonSourceConfig(python="toolwire_missing_mod"), base_dir=tmp_path
        )


@pytest.fixture
def importable_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = "toolwire_test_importable_tools"
    write(tmp_path, "def hello(who: str) -> str:\n    return who\n", f"{name}.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_dotted_module(importable_module: str, tmp_path: Path) -> None:
    registry = ToolRegistry()
    tools = load_python_source(
        registry, PythonSourceConfig(python=importable_module, namespace="m"), base_dir=tmp_path
    )
    assert [t.qualified_name for t in tools] == ["m.hello"]
    assert tools[0].metadata.source == f"python:{importable_module}"


def test_bad_function_and_taken_names_register_nothing(tmp_path: Path) -> None:
    write(tmp_path, "def ok() -> None: ...\ndef bad(*args: int) -> None: ...\n", "va.py")
    registry = ToolRegistry()
    with pytest.raises(SourceLoadError, match=r"tool 'bad': \*args is not supported"):
        load_python_source(registry, PythonSourceConfig(python="va.py"), base_dir=tmp_path)
    assert len(registry) == 0

    write(tmp_path, TOOLS)
    registry.register(lambda: None, name="delete_note")
    with pytest.raises(SourceLoadError, match="already registered: delete_note"):
        load_python_source(registry, PythonSourceConfig(python="tools.py"), base_dir=tmp_path)
    assert [t.name for t in registry] == ["delete_note"]


DUPLICATES = """
from registry import tool

def first() -> str:
    return "first"

@tool(name="lookup")
def lookup_a() -> str:
    return "a"

@tool(name="lookup")
def lookup_b() -> str:
    return "b"
"""


def test_two_functions_with_one_name_register_nothing(tmp_path: Path) -> None:
    write(tmp_path, DUPLICATES, "dup.py")
    registry = ToolRegistry()
    with pytest.raises(SourceLoadError, match="more than one function is named lookup"):
        load_python_source(registry, PythonSourceConfig(python="dup.py"), base_dir=tmp_path)
    assert len(registry) == 0


class BrokenSource:
    """A source whose start fails with something other than SourceLoadError."""

    def __init__(self, name: str, error: Exception | None) -> None:
        self.name = name
        self.error = error
        self.closed = False

    async def start(self, registry: ToolRegistry) -> None:
        if self.error is not None:
            raise self.error

    async def aclose(self) -> None:
        self.closed = True

    def status(self) -> SourceStatus:
        return SourceStatus(self.name, True, 0)


async def test_a_source_failing_any_way_is_a_load_error_and_everything_closes(
    tmp_path: Path,
) -> None:
    write(tmp_path, DUPLICATES, "dup.py")
    registry = ToolRegistry()
    fine = BrokenSource("fine", None)
    odd = BrokenSource("odd", RegistryError("name clash"))
    with pytest.raises(SourceLoadError, match="odd failed to start: RegistryError: name clash"):
        await SourceSet([fine, odd]).start(registry)
    assert fine.closed and odd.closed
    dup = SourceSet.from_configs([PythonSourceConfig(python="dup.py")], base_dir=tmp_path)
    with pytest.raises(SourceLoadError, match="named lookup"):
        await dup.start(registry)
    assert len(registry) == 0

    tolerant = SourceSet([fine, odd])
    await tolerant.start(registry, fail_fast=False)
    assert tolerant.statuses() == [
        SourceStatus("fine", True, 0),
        SourceStatus("odd", False, 0, "odd failed to start: RegistryError: name clash"),
    ]


def test_config_is_strict() -> None:
    with pytest.raises(ValidationError):
        PythonSourceConfig.model_validate({"python": "x.py", "namesapce": "x"})
    with pytest.raises(ValidationError):
        ToolOverride.model_validate({"timeout_s": 0})
    with pytest.raises(ValidationError):
        ToolOverride.model_validate({"enable": False})
