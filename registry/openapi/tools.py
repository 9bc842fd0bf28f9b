"""An operation as a registry `Tool`: tags by method, and the function that calls it."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from registry.callers import HIDDEN_WITHOUT, CallerCredentialError, caller_headers
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
    chosen_by_operator: bool = True,
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
        extra=MappingProxyType(_extra(operation, base_url, config)),
    )
    call = _OperationCall(client, operation, base_url, headers, timeout_s)
    if config.caller_credentials is not None:
        call = _CallerCall(call, config, source, to_operators_host=chosen_by_operator)
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


class _CallerCall(_OperationCall):
    """An operation that sends each call with its caller's credential (never to a host that
    a fetched spec named: there the call is refused)."""

    def __init__(
        self,
        call: _OperationCall,
        config: OpenApiSourceConfig,
        source: str,
        *,
        to_operators_host: bool,
    ) -> None:
        super().__init__(
            call._client, call._operation, call._base_url, call._headers, call._timeout_s
        )
        assert config.caller_credentials is not None and config.namespace is not None
        self._settings = config.caller_credentials
        self._namespace = config.namespace
        self._source = source
        self._chosen = to_operators_host

    async def __call__(self, **arguments: Any) -> ToolOutput:
        if not self._chosen:
            return ToolOutput(
                f"{self._source}: the caller's credential goes only to the operator's hosts, "
                f"and {self._base_url} was named by the fetched spec; set base_url",
                is_error=True,
            )
        try:
            sent = caller_headers(self._settings, self._namespace, self._source)
        except CallerCredentialError as exc:
            return ToolOutput(str(exc), is_error=True)
        replaced = {name.lower() for name in sent.headers}
        own = {k: v for k, v in self._headers.items() if k.lower() not in replaced}
        try:
            request = bind_request(
                self._operation, self._base_url, arguments, {**own, **sent.headers}
            )
        except ArgumentError as exc:
            return ToolOutput(f"invalid arguments: {exc}", is_error=True)
        return await self._client.send(request, timeout_s=self._timeout_s)


def _extra(operation: Operation, base_url: str, config: OpenApiSourceConfig) -> dict[str, Any]:
    extra: dict[str, Any] = {"openapi": _described(operation, base_url)}
    acting = config.caller_credentials
    if acting is not None and acting.hide:
        extra[HIDDEN_WITHOUT] = config.namespace
    return extra


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
