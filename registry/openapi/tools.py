"""An operation as a registry `Tool`: tags by method, overrides, and the function that calls it."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from registry.calls import ToolOutput
from registry.errors import RegistryError
from registry.json_schemas import SchemaArguments
from registry.openapi.binding import ArgumentError, bind_request
from registry.openapi.config import OpenApiSourceConfig
from registry.openapi.document import SpecError
from registry.openapi.http import ServiceClient
from registry.openapi.operations import Operation
from registry.python_source import ToolOverride
from registry.tags import Tag
from registry.tool import Tool, ToolMetadata

__all__ = ["describe_operation"]

_READ_ONLY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def describe_operation(
    operation: Operation,
    config: OpenApiSourceConfig,
    *,
    client: ServiceClient,
    base_url: str,
    headers: dict[str, str],
    source: str,
) -> Tool:
    """The tool that calls `operation`; its arguments are checked against its JSON schema.

    Raises:
        SpecError: the operation's parameters are not a valid JSON Schema.
    """
    override = config.overrides.get(operation.name) or ToolOverride()
    tags = {Tag.NETWORK.value, *config.tags, *(override.tags or ())}
    if operation.method in _READ_ONLY_METHODS:
        tags.add(Tag.READ_ONLY.value)
    elif operation.method == "DELETE":
        tags.add(Tag.DESTRUCTIVE.value)
    timeout_s = override.timeout_s or config.openapi.timeout_s
    metadata = ToolMetadata(
        tags=frozenset(tags),
        timeout_s=timeout_s,
        is_concurrency_safe=(
            True if override.is_concurrency_safe is None else override.is_concurrency_safe
        ),
        defer=config.defer if override.defer is None else override.defer,
        search_hint=override.search_hint,
        max_result_size=override.max_result_size,
        source=source,
        extra=MappingProxyType({"openapi": _described(operation, base_url)}),
    )
    call = _OperationCall(client, operation, base_url, headers, timeout_s)
    return Tool(
        name=operation.name,
        description=override.description or operation.description,
        parameters=operation.parameters,
        fn=call,
        is_async=True,
        namespace=config.namespace,
        metadata=metadata,
        arguments_check=_checker(operation),
    )


class _OperationCall:
    """A tool's function: check the arguments, bind them into a request, and send it."""

    def __init__(
        self,
        client: ServiceClient,
        operation: Operation,
        base_url: str,
        headers: dict[str, str],
        timeout_s: float,
    ) -> None:
        self._client = client
        self._operation = operation
        self._base_url = base_url
        self._headers = headers
        self._timeout_s = timeout_s

    async def __call__(self, **arguments: Any) -> ToolOutput:
        try:
            request = bind_request(self._operation, self._base_url, arguments, self._headers)
        except ArgumentError as exc:
            return ToolOutput(f"invalid arguments: {exc}", is_error=True)
        return await self._client.send(request, timeout_s=self._timeout_s)


def _checker(operation: Operation) -> SchemaArguments:
    try:
        return SchemaArguments(operation.parameters)
    except RegistryError as exc:
        raise SpecError(f"its parameters are not {exc}") from exc


def _described(operation: Operation, base_url: str) -> dict[str, Any]:
    return {
        "method": operation.method,
        "path": operation.path,
        "base_url": base_url,
        "operation_id": operation.operation_id,
        "tags": list(operation.spec_tags),
    }
