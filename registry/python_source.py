"""The python tool source: the public functions of a file or module become tools."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import cloudpickle
from pydantic import BaseModel, ConfigDict, Field

from registry.decorators import ToolMark, tool_mark
from registry.errors import RegistryError, SourceLoadError
from registry.registry import ToolRegistry
from registry.tool import Tool

__all__ = ["PythonSourceConfig", "ToolOverride", "load_python_source"]

DISABLED_IN_CONFIG = "disabled in config"


class ToolOverride(BaseModel):
    """Per-tool settings in a source's `overrides`; unset fields keep the tool's values."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tags: list[str] | None = None
    defer: bool | None = None
    search_hint: str | None = None
    timeout_s: float | None = Field(default=None, gt=0)
    enabled: bool | None = None
    description: str | None = None
    max_result_size: int | None = Field(default=None, gt=0)
    is_concurrency_safe: bool | None = None


class PythonSourceConfig(BaseModel):
    """A `tools:` entry with a `python:` key: a file path or an importable module."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    python: str = Field(min_length=1)
    namespace: str | None = None
    tags: list[str] = []
    defer: bool = False
    overrides: dict[str, ToolOverride] = {}


def load_python_source(
    registry: ToolRegistry, config: PythonSourceConfig, *, base_dir: Path
) -> list[Tool]:
    """Import the source, register its public functions as tools, and return them.

    Override tags are added to the source's tags. Nothing is registered if any tool fails.

    Raises:
        SourceLoadError: the file or module cannot be imported, an override names no
            function of the source, a function cannot be described, or a name is taken.
    """
    module = _import(config.python, base_dir)
    functions = _public_functions(module)
    unknown = sorted(set(config.overrides) - {_tool_name(fn) for fn in functions})
    if unknown:
        available = ", ".join(_tool_name(fn) for fn in functions) or "none"
        raise SourceLoadError(
            f"python source {config.python!r}: overrides name unknown tools: "
            f"{', '.join(unknown)} (functions: {available})"
        )
    tools = [_describe(fn, config) for fn in functions]
    counts = Counter(tool.qualified_name for tool in tools)
    twice = sorted(name for name, count in counts.items() if count > 1)
    if twice:
        raise SourceLoadError(
            f"python source {config.python!r}: more than one function is named {', '.join(twice)}"
        )
    taken = [tool.qualified_name for tool in tools if tool.qualified_name in registry]
    if taken:
        raise SourceLoadError(
            f"python source {config.python!r}: tools already registered: {', '.join(taken)}"
        )
    added: list[str] = []
    try:
        for tool in tools:
            registry.register(tool)
            added.append(tool.qualified_name)
            override = config.overrides.get(tool.name)
            if override is not None and override.enabled is False:
                registry.disable(tool.qualified_name, DISABLED_IN_CONFIG)
    except RegistryError as exc:
        for name in added:
            registry.unregister(name)
        raise SourceLoadError(f"python source {config.python!r}: {exc}") from exc
    return tools


def _import(target: str, base_dir: Path) -> ModuleType:
    try:
        if _is_path(target):
            return _import_file((base_dir / target).expanduser().resolve())
        return importlib.import_module(target)
    except SourceLoadError:
        raise
    except (Exception, SystemExit) as exc:
        # Any failure inside the user's module (syntax, missing import, a raise at import
        # time, sys.exit) is reported as a load error naming the source.
        raise SourceLoadError(
            f"python source {target!r} failed to import: {type(exc).__name__}: {exc}"
        ) from exc


def _is_path(target: str) -> bool:
    return target.endswith(".py") or "/" in target or "\\" in target


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise SourceLoadError(f"python source file not found: {path}")
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"toolwire_source_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SourceLoadError(f"python source {path} cannot be imported as a module")
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: dataclasses and pydantic models defined in the file look
    # their module up in sys.modules.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    # A worker process cannot import the module by this made-up name, so its functions
    # travel to process-mode workers by value.
    cloudpickle.register_pickle_by_value(module)
    return module


def _public_functions(module: ModuleType) -> list[Any]:
    exported = getattr(module, "__all__", None)
    if exported is not None:
        candidates = [getattr(module, name, None) for name in exported]
        return [fn for fn in candidates if inspect.isfunction(fn)]
    return [
        value
        for key, value in vars(module).items()
        if not key.startswith("_")
        and inspect.isfunction(value)
        and value.__module__ == module.__name__
    ]


def _tool_name(fn: Any) -> str:
    mark = tool_mark(fn)
    return (mark.name if mark is not None else None) or fn.__name__


def _describe(fn: Any, config: PythonSourceConfig) -> Tool:
    # Precedence: the config's override, then the function's @tool mark, then the source.
    mark = tool_mark(fn) or ToolMark()
    override = config.overrides.get(_tool_name(fn)) or ToolOverride()
    marked_defer = mark.metadata.get("defer")
    try:
        tool = Tool.from_function(
            fn,
            name=mark.name,
            namespace=config.namespace,
            description=override.description or mark.description,
            tags=[*config.tags, *mark.tags, *(override.tags or ())],
            defer=override.defer
            if override.defer is not None
            else (config.defer if marked_defer is None else marked_defer),
            source=f"python:{config.python}",
        )
        marked = {k: v for k, v in mark.metadata.items() if k != "defer"}
        if marked:
            tool = tool.with_metadata(**marked)
        changes = {
            key: value
            for key, value in (
                ("search_hint", override.search_hint),
                ("timeout_s", override.timeout_s),
                ("max_result_size", override.max_result_size),
                ("is_concurrency_safe", override.is_concurrency_safe),
            )
            if value is not None
        }
        if changes:
            tool = tool.with_metadata(**changes)
    except RegistryError as exc:
        raise SourceLoadError(f"python source {config.python!r}: {exc}") from exc
    return tool
