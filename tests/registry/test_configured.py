"""An entry's tags, defer and overrides: one set of rules, the same in every kind of source."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from pydantic import ValidationError

from registry import (
    BuiltinSource,
    BuiltinSourceConfig,
    McpSourceConfig,
    OpenApiSource,
    OpenApiSourceConfig,
    PythonClassSource,
    PythonClassSourceConfig,
    PythonSource,
    PythonSourceConfig,
    SourceSettings,
    Tool,
    ToolOverride,
    ToolRegistry,
    ToolSource,
)
from registry.configured import ConfiguredRegistry

OVERRIDE = {
    "tags": ["chosen"],
    "defer": True,
    "search_hint": "find me",
    "timeout_s": 7,
    "max_result_size": 99,
    "description": "Overridden.",
    "is_concurrency_safe": False,
}
ENTRY = {"namespace": "ns", "tags": ["entry"], "overrides": {"lookup": OVERRIDE}}

MODULE = '''
def lookup(key: str) -> str:
    """Look a key up."""
    return key


def other(key: str) -> str:
    """Another tool."""
    return key
'''

CLASS = '''
class Finder:
    @staticmethod
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    @staticmethod
    def other(key: str) -> str:
        """Another tool."""
        return key
'''

SPEC = {
    "openapi": "3.1.0",
    "info": {"title": "t", "version": "1"},
    "servers": [{"url": "http://127.0.0.1:9/"}],
    "paths": {
        "/lookup": {"post": {"operationId": "lookup", "responses": {"200": {"description": "ok"}}}},
        "/other": {"post": {"operationId": "other", "responses": {"200": {"description": "ok"}}}},
    },
}


def python_source(folder: Path, entry: dict[str, Any]) -> ToolSource:
    (folder / "finder.py").write_text(textwrap.dedent(MODULE))
    return PythonSource(
        PythonSourceConfig.model_validate({"python": "finder.py", **entry}), base_dir=folder
    )


def class_source(folder: Path, entry: dict[str, Any]) -> ToolSource:
    (folder / "finder.py").write_text(textwrap.dedent(CLASS))
    config = PythonClassSourceConfig.model_validate({"python_class": "finder.py:Finder", **entry})
    return PythonClassSource(config, base_dir=folder)


def openapi_source(folder: Path, entry: dict[str, Any]) -> ToolSource:
    (folder / "spec.json").write_bytes(orjson.dumps(SPEC))
    config = OpenApiSourceConfig.model_validate({"openapi": {"spec": "spec.json"}, **entry})
    return OpenApiSource(config, base_dir=folder, environ={})


@pytest.mark.parametrize("make", [python_source, class_source, openapi_source])
async def test_every_source_applies_an_override_the_same_way(tmp_path: Path, make: Any) -> None:
    registry = ToolRegistry()
    source = make(tmp_path, ENTRY)
    await source.start(registry)
    try:
        lookup, other = registry.get_tool("ns.lookup"), registry.get_tool("ns.other")
    finally:
        await source.aclose()
    assert {"entry", "chosen"} <= lookup.metadata.tags
    assert "chosen" not in other.metadata.tags and "entry" in other.metadata.tags
    assert lookup.description == "Overridden."
    chosen = (
        lookup.metadata.defer,
        lookup.metadata.search_hint,
        lookup.metadata.timeout_s,
        lookup.metadata.max_result_size,
        lookup.metadata.is_concurrency_safe,
    )
    assert chosen == (True, "find me", 7, 99, False)
    assert (other.metadata.defer, other.metadata.search_hint) == (False, None)
    assert other.metadata.is_concurrency_safe


@pytest.mark.parametrize("make", [python_source, class_source, openapi_source])
async def test_every_source_disables_what_the_entry_disables(tmp_path: Path, make: Any) -> None:
    registry = ToolRegistry()
    source = make(tmp_path, {"namespace": "ns", "overrides": {"other": {"enabled": False}}})
    await source.start(registry)
    await source.aclose()
    assert registry.disabled_reason("ns.other") == "disabled in config"
    assert registry.is_enabled("ns.lookup")


async def test_builtins_take_the_entry_s_tags_and_defer() -> None:
    registry = ToolRegistry()
    config = BuiltinSourceConfig.model_validate(
        {"builtin": {"tools": ["calculator"]}, "tags": ["entry"], "defer": True}
    )
    await BuiltinSource(config).start(registry)
    (calc,) = registry
    assert "entry" in calc.metadata.tags and calc.metadata.defer


def test_every_config_with_overrides_shares_the_settings_keys() -> None:
    for model in (PythonSourceConfig, PythonClassSourceConfig, OpenApiSourceConfig):
        assert issubclass(model, SourceSettings)


def test_an_override_field_named_like_a_metadata_field_needs_no_other_edit() -> None:
    class WiderOverride(ToolOverride):
        retries: int | None = None
        idempotent: bool | None = None

    settings = SourceSettings(overrides={"t": WiderOverride(retries=3, idempotent=True)})
    dressed = settings.dress(Tool.from_function(lambda: None, name="t"))
    assert (dressed.metadata.retries, dressed.metadata.idempotent) == (3, True)


def test_a_source_s_own_choices_sit_beneath_the_entry_s_overrides() -> None:
    settings = SourceSettings(defer=True, overrides={"a": ToolOverride(search_hint="x")})
    layered = settings.beneath({"a": ToolOverride(defer=False, search_hint="own")})
    registry = ToolRegistry()
    configured = ConfiguredRegistry(registry, layered)
    a = configured.register(Tool.from_function(lambda: None, name="a"))
    b = configured.register(Tool.from_function(lambda: None, name="b"))
    assert (a.metadata.defer, a.metadata.search_hint) == (False, "x")
    assert b.metadata.defer


def test_a_bare_pinning_off_in_yaml_is_off() -> None:
    """YAML 1.1 reads `pinning: off` as false; it means what it says."""
    assert SourceSettings.model_validate({"pinning": False}).pinning == "off"
    assert SourceSettings.model_validate({"pinning": "warn"}).pinning == "warn"
    with pytest.raises(ValidationError):
        SourceSettings.model_validate({"pinning": True})


def test_a_bare_protocol_revision_in_yaml_is_that_revision() -> None:
    """YAML reads `protocol: 2026-07-28` as a date; it names the revision."""
    entry = yaml.safe_load("mcp: {url: 'http://127.0.0.1:9/mcp', protocol: 2026-07-28}")
    assert McpSourceConfig.model_validate(entry).mcp.protocol == "2026-07-28"
