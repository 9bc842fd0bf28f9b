"""The Tool model: what a tool is, how it is described and how it is called."""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel

from registry.arguments import bind_arguments, parse_arguments
from registry.errors import RegistryError
from registry.signatures import read_signature

__all__ = ["EXECUTION_MODES", "ExecutionMode", "Tool", "ToolMetadata", "ToolSpec"]

ExecutionMode = Literal["inline", "thread", "process"]
EXECUTION_MODES: tuple[ExecutionMode, ...] = ("inline", "thread", "process")


@dataclass(frozen=True, slots=True)
class ToolMetadata:
    """How a tool is governed and run: tags, limits, deferral, where it came from.

    Raises:
        RegistryError: a timeout that is not a positive finite number, a result size that
            is not positive, a negative retry count, or an unknown execution mode.
    """

    tags: frozenset[str] = frozenset()
    timeout_s: float | None = None
    is_concurrency_safe: bool = True
    defer: bool = False
    search_hint: str | None = None
    max_result_size: int | None = None
    source: str = "python"
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    execution_mode: ExecutionMode | None = None
    """Where the tool runs; None follows the executor's default (see `Executor`)."""
    retries: int | None = None
    """Retries after a transient error; set, it marks the tool safe to retry. None: the
    executor's default applies to idempotent tools only."""
    idempotent: bool = False
    pinning: Literal["off", "warn", "block"] = "off"
    """Whether the tool's definition is pinned, and what drift from the pin does (its
    source's `pinning`): `warn` serves it flagged, `block` holds it back until accepted."""
    review_new: bool = False
    """A tool first seen after its source was pinned waits for an operator's acceptance."""

    def __post_init__(self) -> None:
        if isinstance(self.tags, str):
            raise RegistryError(f"tags must be a collection of strings, not {self.tags!r}")
        # str() turns Tag members into plain strings so tags print and serialize as values.
        object.__setattr__(self, "tags", frozenset(str(tag) for tag in self.tags))
        # NaN passes a `<= 0` test and infinity would switch the deadline off.
        if self.timeout_s is not None and not (
            math.isfinite(self.timeout_s) and self.timeout_s > 0
        ):
            raise RegistryError(f"timeout_s must be a positive finite number, got {self.timeout_s}")
        if self.max_result_size is not None and self.max_result_size <= 0:
            raise RegistryError(f"max_result_size must be positive, got {self.max_result_size}")
        if self.retries is not None and self.retries < 0:
            raise RegistryError(f"retries must not be negative, got {self.retries}")
        if self.execution_mode is not None and self.execution_mode not in EXECUTION_MODES:
            raise RegistryError(
                f"execution_mode must be one of {', '.join(EXECUTION_MODES)}, "
                f"got {self.execution_mode!r}"
            )


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a caller is shown of a tool, in no API's shape: each front renders it as its
    API spells a tool (a Chat function, an MCP tool, a Responses listing)."""

    name: str
    """The wire name, the one a call names the tool by."""
    description: str
    parameters: dict[str, Any]
    """The JSON schema of the arguments; shared, never mutated."""


@dataclass(frozen=True, slots=True)
class Tool:
    """A callable tool: its name, description, JSON schema and implementation.

    Raises:
        RegistryError: an empty name or namespace, or parameters that are not an object schema.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any] | None = None
    is_async: bool = False
    namespace: str | None = None
    metadata: ToolMetadata = field(default_factory=ToolMetadata)
    arguments_model: type[BaseModel] | None = None
    context_parameter: str | None = None
    """The parameter of `fn` that receives a `ToolContext`; it is not in `parameters`."""
    arguments_check: Callable[[dict[str, Any]], None] | None = None
    """For tools with no arguments model: raises InvalidArgumentsError on bad arguments."""
    qualified_name: str = field(init=False, repr=False, compare=False)
    """`namespace.name`, or `name` when the tool has no namespace. Worked out when the tool
    is made (a copy made by `dataclasses.replace` works it out again): a call reads it
    several times (the gate, the executor, its log, the listeners, the loop's guard)."""

    def __post_init__(self) -> None:
        if not self.name:
            raise RegistryError("a tool needs a non-empty name")
        if self.namespace == "":
            raise RegistryError(f"tool {self.name!r}: namespace must be None or non-empty")
        if self.parameters.get("type", "object") != "object":
            raise RegistryError(f"tool {self.name!r}: parameters must be an object schema")
        qualified = f"{self.namespace}.{self.name}" if self.namespace else self.name
        object.__setattr__(self, "qualified_name", qualified)

    def with_metadata(self, **changes: Any) -> Tool:
        """Return a copy whose metadata has `changes` applied.

        Raises:
            TypeError: a change names no metadata field.
            RegistryError: a changed value is invalid.
        """
        return dataclasses.replace(self, metadata=dataclasses.replace(self.metadata, **changes))

    def validate_arguments(self, raw: str | Mapping[str, Any]) -> dict[str, Any]:
        """Parse and validate a call's raw arguments into the keyword arguments for `fn`.

        Raises:
            InvalidArgumentsError: the arguments are not JSON, not an object, or do not match.
        """
        arguments = bind_arguments(self.arguments_model, parse_arguments(raw))
        if self.arguments_check is not None:
            self.arguments_check(arguments)
        return arguments

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        namespace: str | None = None,
        tags: Iterable[str] = (),
        timeout_s: float | None = None,
        is_concurrency_safe: bool = True,
        defer: bool = False,
        search_hint: str | None = None,
        max_result_size: int | None = None,
        source: str = "python",
        execution_mode: ExecutionMode | None = None,
        retries: int | None = None,
        idempotent: bool = False,
    ) -> Tool:
        """Describe a Python function as a tool from its signature, type hints and docstring.

        Raises:
            RegistryError: the function cannot be described (see `read_signature`) or a
                metadata value is invalid.
        """
        tool_name = name or getattr(fn, "__name__", None)
        if not tool_name:
            raise RegistryError(f"{fn!r} has no __name__; pass name=")
        if isinstance(tags, str):
            raise RegistryError(f"tool {tool_name!r}: tags must be a collection, not {tags!r}")
        signature = read_signature(fn, tool_name=tool_name)
        metadata = ToolMetadata(
            tags=frozenset(tags),
            timeout_s=timeout_s,
            is_concurrency_safe=is_concurrency_safe,
            defer=defer,
            search_hint=search_hint,
            max_result_size=max_result_size,
            source=source,
            execution_mode=execution_mode,
            retries=retries,
            idempotent=idempotent,
        )
        return cls(
            name=tool_name,
            description=signature.description if description is None else description,
            parameters=signature.parameters,
            fn=fn,
            is_async=_is_async(fn),
            namespace=namespace,
            metadata=metadata,
            arguments_model=signature.arguments_model,
            context_parameter=signature.context_parameter,
        )


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    # Callable objects with an `async def __call__`.
    return inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004
