"""Classes as tool sets: the public methods of a class or instance become tools in a namespace."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import FunctionType
from typing import Any

from pydantic import Field, field_validator

from registry.configured import ConfiguredRegistry, SourceSettings, ToolOverride
from registry.errors import RegistryError, SourceLoadError
from registry.python_source import _import as import_target
from registry.registry import ToolRegistry
from registry.source_status import SourceStatus
from registry.tool import Tool

__all__ = ["PythonClassSource", "PythonClassSourceConfig", "register_class", "snake_case"]

_TARGET = re.compile(r"^.+:[A-Za-z_][A-Za-z0-9_.]*$")
_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """`HTTPClient` → `http_client`: the default namespace of a class."""
    return _WORD_BOUNDARY.sub("_", name).lower()


def register_class(
    registry: ToolRegistry,
    target: type | object,
    *,
    namespace: str | None = None,
    include_inherited: bool = False,
    tags: Iterable[str] = (),
    defer: bool = False,
    overrides: Mapping[str, ToolOverride] | None = None,
    init_kwargs: Mapping[str, Any] | None = None,
    source: str | None = None,
) -> list[Tool]:
    """Register the public methods of a class or instance as tools, and return them.

    An instance's methods are bound to it. For a class, static and class methods need no
    instance; instance methods are bound to one instance made with `cls(**init_kwargs)`.
    `include_inherited` adds methods of base classes (along the MRO, never `object`'s).
    The namespace defaults to the class name in snake_case. Nothing is registered if any
    method fails.

    Raises:
        RegistryError: an override names no method, the class cannot be instantiated for
            its instance methods, a method cannot be described, or a name is taken.
    """
    cls = target if isinstance(target, type) else type(target)
    instance = None if isinstance(target, type) else target
    overrides = overrides or {}
    members = _public_members(cls, include_inherited)
    unknown = sorted(set(overrides) - {name for name, _ in members})
    if unknown:
        available = ", ".join(name for name, _ in members) or "none"
        raise RegistryError(
            f"class {cls.__qualname__}: overrides name unknown methods: {', '.join(unknown)} "
            f"(methods: {available})"
        )
    needs_instance = [name for name, raw in members if isinstance(raw, FunctionType)]
    if instance is None and needs_instance:
        instance = _instantiate(cls, init_kwargs or {}, needs_instance)
    label = source or f"class:{cls.__module__}.{cls.__qualname__}"
    tools = [
        Tool.from_function(
            getattr(instance if isinstance(raw, FunctionType) else cls, name),
            name=name,
            namespace=namespace or snake_case(cls.__name__),
            source=label,
        )
        for name, raw in members
    ]
    taken = [tool.qualified_name for tool in tools if tool.qualified_name in registry]
    if taken:
        raise RegistryError(
            f"class {cls.__qualname__}: tools already registered: {', '.join(taken)}"
        )
    settings = SourceSettings(tags=list(tags), defer=defer, overrides=dict(overrides))
    configured = ConfiguredRegistry(registry, settings)
    return [configured.register(tool) for tool in tools]


def _public_members(cls: type, include_inherited: bool) -> list[tuple[str, Any]]:
    """(name, raw attribute) of public plain, static and class methods, most derived first."""
    owners = [k for k in cls.__mro__ if k is not object] if include_inherited else [cls]
    found: dict[str, Any] = {}
    for owner in owners:
        for name, raw in vars(owner).items():
            if name.startswith("_") or name in found:
                continue
            # Shadowing counts even for non-methods: a base's method hidden by a
            # subclass attribute is not what the subclass offers.
            found[name] = raw
    return [
        (name, raw)
        for name, raw in found.items()
        if isinstance(raw, FunctionType | staticmethod | classmethod)
    ]


def _instantiate(cls: type, init_kwargs: Mapping[str, Any], methods: list[str]) -> object:
    try:
        inspect.signature(cls).bind(**init_kwargs)
    except TypeError as exc:
        raise RegistryError(
            f"class {cls.__qualname__}: its instance methods ({', '.join(methods)}) need an "
            f"instance, and {cls.__qualname__}(**{dict(init_kwargs)!r}) does not fit its "
            f"constructor ({exc}); register an instance instead, or pass init arguments"
        ) from exc
    except ValueError:
        pass  # no signature to check (a builtin base): let the call decide
    try:
        return cls(**init_kwargs)
    except Exception as exc:
        # The user's constructor may raise anything; it is reported as a registry error.
        raise RegistryError(
            f"class {cls.__qualname__}: creating an instance failed: {type(exc).__name__}: {exc}"
        ) from exc


class PythonClassSourceConfig(SourceSettings):
    """A `tools:` entry with a `python_class:` key: `module.path:Class` or `file.py:Class`.

    Its `namespace` defaults to the class name in snake_case.
    """

    python_class: str = Field(min_length=1)
    include_inherited: bool = False
    init: dict[str, Any] = {}
    """Keyword arguments for the class's constructor (needed by instance methods)."""

    @field_validator("python_class")
    @classmethod
    def _module_and_class(cls, value: str) -> str:
        if not _TARGET.match(value):
            raise ValueError("must be module.path:ClassName or path/to/file.py:ClassName")
        return value


class PythonClassSource:
    """A class whose public methods are tools."""

    def __init__(self, config: PythonClassSourceConfig, *, base_dir: Path) -> None:
        self.name = f"python_class:{config.python_class}"
        self._config = config
        self._base_dir = base_dir
        self._count = 0
        self._error: str | None = None

    async def start(self, registry: ToolRegistry) -> None:
        """Import the class and register its methods.

        Raises:
            SourceLoadError: the module or class cannot be found, or registration fails.
        """
        config = self._config
        try:
            cls = _find_class(config.python_class, self._base_dir)
            tools = register_class(
                registry,
                cls,
                namespace=config.namespace,
                include_inherited=config.include_inherited,
                tags=config.tags,
                defer=config.defer,
                overrides=config.overrides,
                init_kwargs=config.init,
                source=self.name,
            )
        except SourceLoadError as exc:
            self._error = str(exc)
            raise
        except RegistryError as exc:
            self._error = f"python_class source {config.python_class!r}: {exc}"
            raise SourceLoadError(self._error) from exc
        self._count = len(tools)

    async def aclose(self) -> None:
        return None

    def status(self) -> SourceStatus:
        return SourceStatus(self.name, self._error is None, self._count, self._error)


def _find_class(target: str, base_dir: Path) -> type:
    module_name, _, class_path = target.rpartition(":")
    found: Any = import_target(module_name, base_dir)
    for part in class_path.split("."):
        found = getattr(found, part, None)
    if not isinstance(found, type):
        raise SourceLoadError(f"python_class source {target!r}: {class_path} is not a class there")
    return found
