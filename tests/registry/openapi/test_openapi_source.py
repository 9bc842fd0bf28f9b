"""The OpenAPI source against a live FastAPI service: calls, errors, auth, limits, reload."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from registry import (
    Executor,
    OpenApiSource,
    OpenApiSourceConfig,
    SourceLoadError,
    ToolCall,
    ToolRegistry,
    ToolResult,
)
from tests.registry.openapi.conftest import Shop


def config(spec: str, **settings: Any) -> OpenApiSourceConfig:
    entry = settings.pop("entry", {})
    return OpenApiSourceConfig.model_validate(
        {"openapi": {"spec": spec, **settings}, "namespace": "shop", **entry}
    )


@pytest.fixture
async def executor() -> AsyncIterator[Executor]:
    with Executor(default_timeout_s=10) as running:
        yield running


async def started(
    cfg: OpenApiSourceConfig, *, base_dir: Path = Path("."), environ: dict[str, str] | None = None
) -> tuple[OpenApiSource, ToolRegistry]:
    registry = ToolRegistry()
    source = OpenApiSource(cfg, base_dir=base_dir, environ=environ or {})
    await source.start(registry)
    return source, registry


async def call(
    executor: Executor, registry: ToolRegistry, name: str, arguments: dict[str, Any]
) -> ToolResult:
    tool = registry.get_tool(name)
    return await executor.execute(tool, ToolCall("call-1", name, json.dumps(arguments)))


async def test_operations_become_tagged_tools(shop: Shop) -> None:
    source, registry = await started(config(shop.spec_url))
    try:
        names = {tool.qualified_name: tool for tool in registry}
        assert {"shop.get_item", "shop.create_item", "shop.update_item", "shop.delete_item"} <= set(
            names
        )
        assert "shop.get_files_name" in names  # the operation without an operationId
        assert names["shop.get_item"].metadata.tags == {"read_only", "network"}
        assert names["shop.delete_item"].metadata.tags == {"destructive", "network"}
        assert names["shop.update_item"].metadata.tags == {"network"}
        assert names["shop.get_item"].description == "Get one item"
        assert names["shop.get_item"].metadata.extra["openapi"]["path"] == "/items/{item_id}"
        assert source.status().reachable and source.status().tool_count == len(registry)
    finally:
        await source.aclose()


async def test_get_post_patch_delete_reach_the_service(shop: Shop, executor: Executor) -> None:
    source, registry = await started(config(shop.spec_url))
    try:
        got = await call(executor, registry, "shop.get_item", {"item_id": 1, "verbose": True})
        assert json.loads(got.content) == {
            "id": 1,
            "name": "kettle",
            "price": 25.0,
            "tags": [],
            "verbose": True,
        }
        created = await call(
            executor, registry, "shop.create_item", {"name": "mug", "price": 4.5, "dry_run": False}
        )
        assert not created.is_error and json.loads(created.content)["id"] == 2
        patched = await call(executor, registry, "shop.update_item", {"item_id": 2, "price": 5})
        assert json.loads(patched.content)["price"] == 5
        deleted = await call(executor, registry, "shop.delete_item", {"item_id": 2})
        assert not deleted.is_error and "204" in deleted.content
    finally:
        await source.aclose()
    seen = [(r.method, r.path, r.query, r.body) for r in shop.state.received[-4:]]
    assert seen == [
        ("GET", "/items/1", [("verbose", "true")], None),
        ("POST", "/items", [("dry_run", "false")], {"name": "mug", "price": 4.5}),
        ("PATCH", "/items/2", [], {"price": 5}),
        ("DELETE", "/items/2", [], None),
    ]
    assert shop.state.items.keys() == {1}


async def test_a_path_value_arrives_intact_as_one_segment(shop: Shop, executor: Executor) -> None:
    source, registry = await started(config(shop.spec_url))
    value = "../admin?x=1#y"
    try:
        result = await call(executor, registry, "shop.get_files_name", {"name": value})
    finally:
        await source.aclose()
    assert json.loads(result.content) == {
        "name": value,
        "raw_path": "/files/..%2Fadmin%3Fx%3D1%23y",
    }


async def test_error_statuses_are_tool_errors_with_the_message(
    shop: Shop, executor: Executor
) -> None:
    source, registry = await started(config(shop.spec_url))
    try:
        missing = await call(executor, registry, "shop.get_item", {"item_id": 99})
        invalid = await call(executor, registry, "shop.get_item", {"item_id": "abc"})
    finally:
        await source.aclose()
    assert missing.is_error and missing.error_kind == "tool_error"
    assert missing.content == "Error (tool_error): HTTP 404 Not Found: item 99 not found"
    # Checked against the schema before any request is made.
    assert invalid.is_error and invalid.error_kind == "invalid_arguments"
    assert "'abc' is not of type 'integer'" in invalid.content


async def test_configured_auth_is_sent_and_nothing_else(shop: Shop, executor: Executor) -> None:
    cfg = config(
        shop.spec_url,
        auth={"bearer_env": "SHOP_TOKEN"},
        headers={"X-Api-Key": "k-1"},
    )
    source, registry = await started(cfg, environ={"SHOP_TOKEN": "operator-token"})
    try:
        result = await call(executor, registry, "shop.whoami", {"x-trace-id": "t-9"})
    finally:
        await source.aclose()
    assert json.loads(result.content) == {
        "authorization": "Bearer operator-token",
        "x_api_key": "k-1",
        "x_trace_id": "t-9",
    }


async def test_no_auth_configured_sends_no_credentials(shop: Shop, executor: Executor) -> None:
    source, registry = await started(config(shop.spec_url))
    try:
        result = await call(executor, registry, "shop.whoami", {})
    finally:
        await source.aclose()
    assert json.loads(result.content)["authorization"] is None
    assert "authorization" not in shop.state.received[-1].headers
    assert "cookie" not in shop.state.received[-1].headers


async def test_header_auth_from_env_and_a_missing_variable(shop: Shop, executor: Executor) -> None:
    cfg = config(shop.spec_url, auth={"header": "X-Api-Key", "value_env": "SHOP_KEY"})
    source, registry = await started(cfg, environ={"SHOP_KEY": "from-env"})
    try:
        result = await call(executor, registry, "shop.whoami", {})
    finally:
        await source.aclose()
    assert json.loads(result.content)["x_api_key"] == "from-env"
    with pytest.raises(SourceLoadError, match="SHOP_KEY is not set"):
        await started(cfg, environ={})


async def test_a_yaml_spec_file_with_base_url(
    shop: Shop, executor: Executor, tmp_path: Path
) -> None:
    spec = create_spec_from(shop)
    (tmp_path / "shop.yaml").write_text(yaml.safe_dump(spec))
    source, registry = await started(config("shop.yaml", base_url=shop.url), base_dir=tmp_path)
    try:
        result = await call(executor, registry, "shop.get_item", {"item_id": 1})
    finally:
        await source.aclose()
    assert json.loads(result.content)["name"] == "kettle"


async def test_relative_servers_resolve_against_the_spec_url(shop: Shop) -> None:
    spec = create_spec_from(shop)
    spec["servers"] = [{"url": "/api/{version}", "variables": {"version": {"default": "v2"}}}]
    async with SpecServer(spec) as (url, _):
        source, registry = await started(config(url))
        await source.aclose()
    base = url.split("/spec")[0]
    assert (
        registry.get_tool("shop.get_item").metadata.extra["openapi"]["base_url"] == f"{base}/api/v2"
    )


async def test_a_relative_server_in_a_file_needs_base_url(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps({"openapi": "3.0.0", "paths": {"/a": {"get": {}}}}))
    with pytest.raises(SourceLoadError, match="set base_url"):
        await started(config("s.json"), base_dir=tmp_path)


@pytest.mark.timeout(10)  # a missing timeout fails here, not at the suite's limit
async def test_a_slow_call_times_out_within_its_deadline(shop: Shop, executor: Executor) -> None:
    source, registry = await started(config(shop.spec_url, timeout_s=0.3))
    try:
        result = await call(executor, registry, "shop.hang", {})
    finally:
        await source.aclose()
    assert result.is_error and ("0.3 seconds" in result.content)


async def test_a_large_body_is_capped(shop: Shop, executor: Executor) -> None:
    source, registry = await started(config(shop.spec_url, max_response_bytes=1000))
    try:
        result = await call(executor, registry, "shop.big", {"size": 50_000})
    finally:
        await source.aclose()
    assert result.content.startswith("x" * 1000)
    assert "truncated" in result.content and len(result.content) < 1200


async def test_private_targets_can_be_refused(shop: Shop, executor: Executor) -> None:
    with pytest.raises(SourceLoadError, match="not a public address"):
        await started(config(shop.spec_url, allow_private=False))
    (host_spec := create_spec_from(shop))["servers"] = [{"url": "http://localhost:9/"}]
    async with SpecServer(host_spec) as (url, _):
        source, registry = await started(config(url, allow_private=False))
        try:
            result = await call(executor, registry, "shop.get_item", {"item_id": 1})
        finally:
            await source.aclose()
    assert result.is_error and "non-public" in result.content


async def test_a_spec_from_elsewhere_naming_another_host_is_guarded_by_default(
    shop: Shop, executor: Executor
) -> None:
    spec = create_spec_from(shop)
    spec["servers"] = [{"url": shop.url.replace("127.0.0.1", "localhost")}]
    async with SpecServer(spec) as (url, _):
        source, registry = await started(config(url))
        try:
            guarded = await call(executor, registry, "shop.get_item", {"item_id": 1})
        finally:
            await source.aclose()
    assert guarded.is_error and "non-public" in guarded.content


@pytest.mark.parametrize("server", ["//169.254.169.254/latest", "http://169.254.169.254/latest"])
async def test_a_fetched_spec_cannot_name_a_private_host_scheme_relative(
    shop: Shop, server: str
) -> None:
    spec = create_spec_from(shop)
    spec["servers"] = [{"url": server}]
    async with SpecServer(spec) as (url, _):
        with pytest.raises(SourceLoadError, match=r"169\.254\.169\.254/latest is not a public"):
            await started(config(url))


async def test_auth_goes_only_to_the_spec_origin_or_the_configured_base_url(
    shop: Shop, executor: Executor
) -> None:
    other_host = shop.url.replace("http://127.0.0.1", "//localhost")
    auth = {"auth": {"bearer_env": "SHOP_TOKEN"}, "headers": {"X-Api-Key": "k-1"}}
    environ = {"SHOP_TOKEN": "operator-token"}
    spec = create_spec_from(shop)
    seen: dict[tuple[str, tuple[str, ...]], ToolResult] = {}
    async with SpecServer(spec) as (url, _):
        for server, settings in [
            (other_host, {}),
            (other_host, {"allow_private": True}),
            (other_host, {"base_url": shop.url}),
        ]:
            spec["servers"] = [{"url": server}]
            source, registry = await started(config(url, **auth, **settings), environ=environ)
            try:
                result = await call(executor, registry, "shop.whoami", {})
            finally:
                await source.aclose()
            seen[server, tuple(settings)] = result
    guarded = seen[other_host, ()]
    assert guarded.is_error and "non-public" in guarded.content
    allowed = json.loads(seen[other_host, ("allow_private",)].content)
    # A host the spec names gets neither the configured auth nor the configured headers.
    assert allowed == {"authorization": None, "x_api_key": None, "x_trace_id": None}
    configured = json.loads(seen[other_host, ("base_url",)].content)
    assert configured["authorization"] == "Bearer operator-token"


async def test_overrides_apply_and_unknown_names_are_refused(shop: Shop) -> None:
    cfg = config(
        shop.spec_url,
        entry={
            "tags": ["shop"],
            "overrides": {
                "delete_item": {"enabled": False, "tags": ["privileged"], "timeout_s": 2}
            },
        },
    )
    source, registry = await started(cfg)
    await source.aclose()
    tool = registry.get_tool("shop.delete_item")
    assert tool.metadata.tags == {"destructive", "network", "shop", "privileged"}
    assert tool.metadata.timeout_s == 2
    assert not registry.is_enabled("shop.delete_item")
    with pytest.raises(SourceLoadError, match="unknown tools: nope"):
        await started(config(shop.spec_url, entry={"overrides": {"nope": {}}}))


async def test_a_name_taken_by_another_source_is_refused(shop: Shop) -> None:
    registry = ToolRegistry()
    registry.register(lambda: 1, name="get_item", namespace="shop")
    source = OpenApiSource(config(shop.spec_url), base_dir=Path("."), environ={})
    with pytest.raises(SourceLoadError, match=re.escape("already registered: shop.get_item")):
        await source.start(registry)
    assert not source.status().reachable


async def test_closed_source_answers_with_an_error(shop: Shop, executor: Executor) -> None:
    source, registry = await started(config(shop.spec_url))
    await source.aclose()
    result = await call(executor, registry, "shop.get_item", {"item_id": 1})
    assert result.is_error and "closed" in result.content


async def test_reload_uses_the_etag_and_replaces_changed_tools(shop: Shop) -> None:
    spec = create_spec_from(shop)
    async with SpecServer(spec) as (url, counts):
        source, registry = await started(config(url))
        changes: list[int] = []
        registry.on_change(lambda r: changes.append(r.version))
        try:
            assert await source.reload() is False
            assert (counts["200"], counts["304"]) == (1, 1)
            assert changes == []
            del spec["paths"]["/big"]
            spec["paths"]["/items/{item_id}"]["get"]["summary"] = "Fetch one item"
            counts["etag"] += 1
            assert await source.reload() is True
        finally:
            await source.aclose()
    assert counts["200"] == 2
    assert "shop.big" not in registry
    assert registry.get_tool("shop.get_item").description == "Fetch one item"
    assert registry.wire_name("shop.get_item") == "shop_get_item"
    assert changes


def create_spec_from(shop: Shop) -> dict[str, Any]:
    from testing.openapi_service import create_shop

    return json.loads(json.dumps(create_shop().openapi()))


class SpecServer:
    """Serve a spec dict at /spec/openapi.json with an ETag; count 200s and 304s."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.counts: dict[str, int] = {"200": 0, "304": 0, "etag": 1}
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> tuple[str, dict[str, int]]:
        async def handler(request: web.Request) -> web.Response:
            etag = f'"v{self.counts["etag"]}"'
            if request.headers.get("If-None-Match") == etag:
                self.counts["304"] += 1
                return web.Response(status=304, headers={"ETag": etag})
            self.counts["200"] += 1
            return web.json_response(self.spec, headers={"ETag": etag})

        app = web.Application()
        app.router.add_get("/spec/openapi.json", handler)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        return f"http://127.0.0.1:{port}/spec/openapi.json", self.counts

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


async def test_a_failed_reload_keeps_the_tools_and_is_retried(shop: Shop) -> None:
    spec = create_spec_from(shop)
    async with SpecServer(spec) as (url, counts):
        source, registry = await started(config(url))
        try:
            spec["openapi"] = "2.0"
            counts["etag"] += 1
            with pytest.raises(SourceLoadError, match=r"only OpenAPI 3\.0 and 3\.1"):
                await source.reload()
            assert "shop.get_item" in registry
            assert not source.status().reachable
            spec["openapi"] = "3.1.0"
            spec["paths"]["/items/{item_id}"]["get"]["summary"] = "Fixed"
            # The failed version's ETag was not kept, so this is a full fetch, not a 304.
            assert await source.reload() is True
            assert source.status().reachable
        finally:
            await source.aclose()
    assert counts["304"] == 0
    assert registry.get_tool("shop.get_item").description == "Fixed"
