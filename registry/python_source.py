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
from pydantic import Field

from registry.configured import ConfiguredRegistry, SourceSettings, ToolOverride
from registry.decorators import ToolMark, tool_mark
from registry.errors import RegistryError, SourceLoadError
from registry.registry import ToolRegistry
from registry.tool import Tool

__all__ = ["PythonSourceConfig", "load_python_source"]


class PythonSourceConfig(SourceSettings):
    """A `tools:` entry with a `python:` key: a file path or an importable module."""

    python: str = Field(min_length=1)


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
    # A function's @tool mark may choose defer; the entry's overrides win over it.
    marked = {
        _tool_name(fn): ToolOverride(defer=mark.metadata["defer"])
        for fn in functions
        if (mark := tool_mark(fn)) is not None and "defer" in mark.metadata
    }
    configured = ConfiguredRegistry(registry, config.beneath(marked))
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
    added: list[Tool] = []
    try:
        for tool in tools:
            added.append(configured.register(tool))
    except RegistryError as exc:
        for done in added:
            registry.unregister(done.qualified_name)
        raise SourceLoadError(f"python source {config.python!r}: {exc}") from exc
    return added


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
    """The tool as the function and its @tool mark describe it (the entry's tags, defer and
    overrides are applied when it is registered)."""
    mark = tool_mark(fn) or ToolMark()
    try:
        tool = Tool.from_function(
            fn,
            name=mark.name,
            namespace=config.namespace,
            description=mark.description,
            tags=mark.tags,
            source=f"python:{config.python}",
        )
        marked = {k: v for k, v in mark.metadata.items() if k != "defer"}
        if marked:
            tool = tool.with_metadata(**marked)
    except RegistryError as exc:
        raise SourceLoadError(f"python source {config.python!r}: {exc}") from exc
    return tool
