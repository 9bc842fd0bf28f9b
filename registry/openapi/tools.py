"""An operation as a registry `Tool`: tags by method, overrides, and the function that calls it."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from jsonschema import Draft202012Validator, SchemaError

from registry.calls import ToolOutput
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
_MAX_REPORTED_ERRORS = 8


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
    call = _OperationCall(client, operation, base_url, headers, timeout_s, _validator(operation))
    return Tool(
        name=operation.name,
        description=override.description or operation.description,
        parameters=operation.parameters,
        fn=call,
        is_async=True,
        namespace=config.namespace,
        metadata=metadata,
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
        validator: Draft202012Validator,
    ) -> None:
        self._client = client
        self._operation = operation
        self._base_url = base_url
        self._headers = headers
        self._timeout_s = timeout_s
        self._validator = validator

    async def __call__(self, **arguments: Any) -> ToolOutput:
        problems = _problems(self._validator, arguments)
        if problems:
            return ToolOutput(f"invalid arguments: {problems}", is_error=True)
        try:
            request = bind_request(self._operation, self._base_url, arguments, self._headers)
        except ArgumentError as exc:
            return ToolOutput(f"invalid arguments: {exc}", is_error=True)
        return await self._client.send(request, timeout_s=self._timeout_s)


def _validator(operation: Operation) -> Draft202012Validator:
    try:
        Draft202012Validator.check_schema(operation.parameters)
    except SchemaError as exc:
        raise SpecError(f"its parameters are not a valid JSON Schema: {exc.message}") from exc
    return Draft202012Validator(operation.parameters)


def _problems(validator: Draft202012Validator, arguments: dict[str, Any]) -> str:
    errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.path])
    parts = []
    for error in errors[:_MAX_REPORTED_ERRORS]:
        path = ".".join(str(part) for part in error.absolute_path)
        parts.append(f"field '{path}': {error.message}" if path else error.message)
    if len(errors) > _MAX_REPORTED_ERRORS:
        parts.append(f"and {len(errors) - _MAX_REPORTED_ERRORS} more errors")
    return "; ".join(parts)


def _described(operation: Operation, base_url: str) -> dict[str, Any]:
    return {
        "method": operation.method,
        "path": operation.path,
        "base_url": base_url,
        "operation_id": operation.operation_id,
        "tags": list(operation.spec_tags),
    }
