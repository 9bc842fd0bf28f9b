"""Tools made of tools: run in sequence, fall back in order, or choose by a condition."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from registry.calls import ToolOutput
from registry.errors import RegistryError
from registry.sync_bridge import call_async
from registry.tags import Tag
from registry.tool import Tool, ToolMetadata

__all__ = ["ConditionalComposer", "FallbackComposer", "SequentialComposer", "invoke"]


class ToolReportedError(RegistryError):
    """A step returned a result that reports an error."""


async def invoke(tool: Tool, arguments: Mapping[str, Any]) -> Any:
    """Validate `arguments` for `tool` and call it (sync tools in a thread).

    Raises:
        InvalidArgumentsError: the arguments do not fit the tool.
        ToolReportedError: the tool returned an error result.
        Exception: whatever the tool raised.
    """
    if tool.fn is None:
        raise RegistryError(f"tool {tool.qualified_name!r} has no local function")
    value = await call_async(tool.fn, **tool.validate_arguments(dict(arguments)))
    if isinstance(value, ToolOutput) and value.is_error:
        raise ToolReportedError(value.text)
    return value


def _composite(
    steps: Sequence[Tool], fn: Callable[..., Any], name: str, description: str | None
) -> Tool:
    # The composite takes the first tool's arguments; it runs inline and calls its steps.
    first = steps[0]
    return dataclasses.replace(
        first,
        name=name,
        description=description or first.description,
        fn=fn,
        is_async=True,
        namespace=None,
        context_parameter=None,
        metadata=dataclasses.replace(
            _combined_metadata([step.metadata for step in steps]),
            execution_mode=None,
            source="composite",
        ),
    )


def _combined_metadata(steps: Sequence[ToolMetadata]) -> ToolMetadata:
    """What may run any of the steps: every step's tags (policies match them), and a
    guarantee (read-only, idempotent, safe to retry or run concurrently) only when every
    step gives it."""
    tags = frozenset().union(*(step.tags for step in steps))
    if not all(Tag.READ_ONLY in step.tags for step in steps):
        tags -= {Tag.READ_ONLY}
    timeouts = [step.timeout_s for step in steps]
    return dataclasses.replace(
        steps[0],
        tags=tags,
        idempotent=all(step.idempotent for step in steps),
        retries=_combined_retries(steps),
        is_concurrency_safe=all(step.is_concurrency_safe for step in steps),
        timeout_s=None if None in timeouts else sum(t for t in timeouts if t is not None),
    )


def _combined_retries(steps: Sequence[ToolMetadata]) -> int | None:
    # A retry re-runs every step. None leaves it to the combined idempotent and read-only
    # marks; an explicit count holds only if each step without one is safe to retry anyway.
    counts = [step.retries for step in steps if step.retries is not None]
    if not counts:
        return None
    unmarked_are_safe = all(
        step.idempotent or Tag.READ_ONLY in step.tags for step in steps if step.retries is None
    )
    return min(counts) if unmarked_are_safe else 0


class SequentialComposer:
    """Runs tools in order: the first gets the call's arguments, each next one the previous
    result (a dict whose keys are its parameters, or else the value of its one required
    parameter). The last result is the answer.

    Raises:
        RegistryError: no steps.
    """

    def __init__(self, *steps: Tool, name: str, description: str | None = None) -> None:
        if not steps:
            raise RegistryError("a sequence needs at least one tool")
        self.steps = steps
        self.tool = _composite(steps, self, name, description)

    async def __call__(self, **arguments: Any) -> Any:
        value = await invoke(self.steps[0], arguments)
        for step in self.steps[1:]:
            value = await invoke(step, _as_arguments(step, value))
        return value


class FallbackComposer:
    """Tries tools in order with the same arguments; the first success is the answer.

    Raises:
        RegistryError: no tools.
    """

    def __init__(self, *tools: Tool, name: str, description: str | None = None) -> None:
        if not tools:
            raise RegistryError("a fallback needs at least one tool")
        self.tools = tools
        self.tool = _composite(tools, self, name, description)

    async def __call__(self, **arguments: Any) -> Any:
        failures: list[str] = []
        for candidate in self.tools:
            try:
                return await invoke(candidate, arguments)
            except Exception as exc:
                failures.append(f"{candidate.qualified_name}: {type(exc).__name__}: {exc}")
        raise RegistryError("every tool failed: " + "; ".join(failures))


class ConditionalComposer:
    """Runs `if_true` when `predicate(arguments)` holds, else `if_false`; both take the
    same arguments."""

    def __init__(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        if_true: Tool,
        if_false: Tool,
        *,
        name: str,
        description: str | None = None,
    ) -> None:
        self.predicate = predicate
        self.if_true, self.if_false = if_true, if_false
        self.tool = _composite((if_true, if_false), self, name, description)

    async def __call__(self, **arguments: Any) -> Any:
        chosen = self.if_true if self.predicate(arguments) else self.if_false
        return await invoke(chosen, arguments)


def _as_arguments(step: Tool, value: Any) -> dict[str, Any]:
    properties = step.parameters.get("properties", {})
    if isinstance(value, dict) and set(value) <= set(properties):
        return value
    required = step.parameters.get("required", [])
    names = required if len(required) == 1 else list(properties)
    if len(names) != 1:
        raise RegistryError(
            f"cannot pass a result to {step.qualified_name!r}: it needs one parameter to "
            "receive it, or a dict result naming its parameters"
        )
    return {names[0]: value}
