"""An operation as a registry `Tool`: tags by method, and the function that calls it."""

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
    """The tool that calls `operation` (the entry's tags, defer and overrides are applied
    when it is registered); its arguments are checked against its JSON schema.

    Raises:
        SpecError: the operation's parameters are not a valid JSON Schema.
    """
    tags = {Tag.NETWORK.value}
    if operation.method in _READ_ONLY_METHODS:
        tags.add(Tag.READ_ONLY.value)
    elif operation.method == "DELETE":
        tags.add(Tag.DESTRUCTIVE.value)
    # An overridden timeout bounds the HTTP request too, not only the call.
    timeout_s = config.override(operation.name).timeout_s or config.openapi.timeout_s
    metadata = ToolMetadata(
        tags=frozenset(tags),
        timeout_s=timeout_s,
        source=source,
        extra=MappingProxyType({"openapi": _described(operation, base_url)}),
    )
    call = _OperationCall(client, operation, base_url, headers, timeout_s)
    return Tool(
        name=operation.name,
        description=operation.description,
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
