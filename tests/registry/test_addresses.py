"""The one address guard, as the HTTP built-ins and OpenAPI sources use it."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import orjson
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from registry import (
    Executor,
    OpenApiSource,
    OpenApiSourceConfig,
    SourceLoadError,
    ToolCall,
    ToolRegistry,
)
from registry.addresses import AddressGuard, BlockedAddressError, is_forbidden
from registry.builtins import BuiltinOptions, builtin_tools
from registry.openapi.binding import HttpRequest
from registry.openapi.http import ServiceClient
from registry.resolver import GuardedResolver

# Each written the way a resolver or a URL could spell it.
FORBIDDEN = [
    "127.0.0.1",
    "169.254.169.254",
    "10.0.0.1",
    "172.16.5.4",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:10.0.0.1",
    "::127.0.0.1",  # IPv4-compatible
    "::ffff:0:7f00:1",  # IPv4-translated (SIIT)
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of the metadata service
    "64:ff9b:1::808:808",  # local-use NAT64: the local network decides where it goes
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
    "fc00::1",
    "fd00:ec2::254",
    "fe80::1",
    "fec0::1",  # site-local
    "ff02::1",
    "100::1",
    "2001:db8::1",
]
PUBLIC = [
    "8.8.8.8",
    "2001:4860:4860::8888",
    "::ffff:8.8.8.8",
    "2002:808:808::",
    "64:ff9b::808:808",
]


@pytest.mark.parametrize("address", FORBIDDEN)
def test_non_public_addresses_are_forbidden_in_every_spelling(address: str) -> None:
    assert is_forbidden(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed_in_every_spelling(address: str) -> None:
    assert not is_forbidden(ipaddress.ip_address(address))


def test_one_bad_address_among_many_refuses_the_host() -> None:
    guard = AddressGuard()
    with pytest.raises(BlockedAddressError, match=r"resolves to 127\.0\.0\.1"):
        guard.check_resolved("rebind.example", ["8.8.8.8", "127.0.0.1"])
    AddressGuard(allow_hosts=("*.internal",)).check_resolved("api.internal", ["10.0.0.5"])
    AddressGuard(allow_private=True).check_resolved("any.example", ["127.0.0.1"])


class FixedResolver(AbstractResolver):
    """Answers every name with the same addresses."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=0,
                flags=0,
            )
            for address in self.addresses
        ]

    async def close(self) -> None:
        return None


async def test_the_resolver_refuses_a_mixed_answer() -> None:
    resolver = GuardedResolver(AddressGuard(), FixedResolver("8.8.8.8", "64:ff9b::7f00:1"))
    with pytest.raises(BlockedAddressError, match="64:ff9b::7f00:1"):
        await resolver.resolve("rebind.example", 80)
    assert len(await GuardedResolver(AddressGuard(), FixedResolver("8.8.8.8")).resolve("a")) == 1


@pytest.mark.parametrize("address", ["2002:7f00:1::", "64:ff9b::7f00:1", "::127.0.0.1"])
async def test_the_http_tool_refuses_tunnelled_loopback(address: str) -> None:
    (get,) = [t for t in builtin_tools(BuiltinOptions(tools=["http"])) if t.name == "get"]
    arguments = orjson.dumps({"url": f"http://[{address}]:9/"}).decode()
    with Executor(default_timeout_s=10) as executor:
        result = await executor.execute(get, ToolCall("c1", "http_get", arguments))
    assert result.is_error and "non-public address" in result.content


@pytest.mark.parametrize("address", ["2002:7f00:1::", "64:ff9b::7f00:1", "::127.0.0.1"])
async def test_an_openapi_call_refuses_tunnelled_loopback(address: str) -> None:
    client = ServiceClient(allow_private=False, max_response_bytes=1000)
    await client.open()
    try:
        output = await client.send(HttpRequest("GET", f"http://[{address}]:9/", {}), timeout_s=5)
    finally:
        await client.aclose()
    assert output.is_error and "non-public address" in output.text


async def test_an_openapi_call_refuses_a_host_with_any_non_public_address() -> None:
    # The old OpenAPI guard dropped the private address and connected to the public one.
    resolver = FixedResolver("192.0.2.1", "93.184.215.14", "::127.0.0.1")
    client = ServiceClient(allow_private=False, max_response_bytes=1000, resolver=resolver)
    await client.open()
    try:
        output = await client.send(HttpRequest("GET", "http://rebind.test/", {}), timeout_s=5)
    finally:
        await client.aclose()
    assert output.is_error
    assert output.text == "refused: rebind.test resolves to 192.0.2.1, a non-public address"


@pytest.mark.parametrize("address", ["2002:a9fe:a9fe::1", "64:ff9b::a9fe:a9fe"])
async def test_an_openapi_spec_cannot_name_a_tunnelled_private_host(
    tmp_path: Path, address: str
) -> None:
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": f"http://[{address}]/"}],
        "paths": {"/x": {"get": {"operationId": "x", "responses": {"200": {"description": ""}}}}},
    }
    config = OpenApiSourceConfig.model_validate(
        {"openapi": {"spec": "spec.json", "allow_private": False}}
    )
    (tmp_path / "spec.json").write_bytes(orjson.dumps(spec))
    source = OpenApiSource(config, base_dir=tmp_path, environ={})
    with pytest.raises(SourceLoadError, match="is not a public address"):
        await source.start(ToolRegistry())
