"""An OpenAPI service's operations as tools through the real proxy, streamed and not."""

from __future__ import annotations

import json

import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask, tool_messages, tool_names
from tests.registry.openapi.conftest import Shop

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

USER = [{"role": "user", "content": "Put the kettle on sale for 19.5"}]


async def test_an_operation_with_path_query_and_body(
    make_proxy, upstream: FakeUpstream, shop: Shop, stream: bool
) -> None:
    arguments = {"item_id": 1, "reason": "sale", "price": 19.5}
    upstream.script(
        Reply.tool_calls([("shop_update_item", arguments)]), Reply.text("The kettle is 19.5 now.")
    )
    tools = [{"openapi": {"spec": shop.spec_url}, "namespace": "shop"}]
    async with make_proxy(tools=tools) as proxy:
        out = await ask(
            proxy.client,
            stream=stream,
            messages=USER,
            extra_headers={"Authorization": "Bearer client-secret"},
        )
    assert out.content == "The kettle is 19.5 now."
    offered = tool_names(upstream.requests[0])
    assert {"shop_get_item", "shop_update_item", "shop_delete_item"} <= set(offered)
    (received,) = [r for r in shop.state.received if r.method == "PATCH"]
    assert (received.path, received.query, received.body) == (
        "/items/1",
        [("reason", "sale")],
        {"price": 19.5},
    )
    # The client's credential stays with the proxy; the service sees none.
    assert "authorization" not in received.headers
    (result,) = tool_messages(upstream.requests[1])
    assert json.loads(result["content"]) == {
        "id": 1,
        "name": "kettle",
        "price": 19.5,
        "tags": [],
        "reason": "sale",
    }


async def test_an_error_status_reaches_the_model(
    make_proxy, upstream: FakeUpstream, shop: Shop, stream: bool
) -> None:
    upstream.script(
        Reply.tool_calls([("shop_get_item", {"item_id": 42})]), Reply.text("No such item.")
    )
    tools = [{"openapi": {"spec": shop.spec_url}, "namespace": "shop"}]
    async with make_proxy(tools=tools) as proxy:
        out = await ask(proxy.client, stream=stream, messages=USER)
    assert out.content == "No such item."
    (result,) = tool_messages(upstream.requests[1])
    assert result["content"] == "Error (tool_error): HTTP 404 Not Found: item 42 not found"
