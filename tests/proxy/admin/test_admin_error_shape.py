"""Every admin error has the proxy's error shape, OpenAI's, whatever refused the request."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx

from tests.proxy.admin.test_admin_api import ADMIN, CLIENT, _no_proxy_env, admin_proxy
from tests.proxy.admin.test_admin_cli import toolwire, url_of

__all__ = ["_no_proxy_env"]  # the autouse fixture, shared


def assert_error(response: httpx.Response, status: int, code: str, *words: str) -> dict[str, Any]:
    """The response is `status` with OpenAI's error body whose message has `words`."""
    assert response.status_code == status, response.text
    body = response.json()
    assert list(body) == ["error"], body
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert (error["type"], error["code"]) == ("invalid_request_error", code), error
    for word in words:
        assert word in error["message"], error
    return error


async def test_every_admin_refusal_has_the_error_shape(make_proxy) -> None:
    async with admin_proxy(make_proxy, server={"max_body_bytes": 4096}) as (_, admin):
        no_key = await admin.get("/api/tools", headers={"authorization": ""})
        assert_error(no_key, 401, "invalid_api_key", "admin or master key")
        assert no_key.headers["www-authenticate"] == "Bearer"
        unknown = await admin.get("/api/tools", headers={"authorization": "Bearer nope-nope"})
        assert_error(unknown, 401, "invalid_api_key", "the key is not valid")
        client = await admin.get("/api/tools", headers={"authorization": f"Bearer {CLIENT}"})
        assert_error(client, 403, "forbidden", "client key")
        foreign = await admin.get("/api/tools", headers={"origin": "http://evil.example"})
        assert_error(foreign, 403, "forbidden", "evil.example")

        assert_error(await admin.get("/api/tools/t.nothing"), 404, "not_found", "t.nothing")
        assert_error(await admin.get("/api/no-such-route"), 404, "not_found")
        assert_error(await admin.get("/assets/no-such-file.js"), 404, "not_found")
        kept = await admin.patch("/api/tools/t.add", json={"tags": []})
        assert_error(kept, 409, "conflict", "'read_only'")
        big = await admin.post("/api/tools/t.add/disable", json={"reason": "x" * 5000})
        assert_error(big, 413, "request_too_large", "4096 bytes")
        plain = await admin.post("/api/tools/t.add/disable", headers={"content-type": "text/plain"})
        assert_error(plain, 415, "unsupported_media_type", "application/json")
        invalid = await admin.patch("/api/tools/t.add", json={"timeout_s": 0, "owner": "me"})
        error = assert_error(invalid, 422, "invalid_value", "body.timeout_s: ", "body.owner: ")
        assert error["param"] == "body.timeout_s"
        limit = await admin.get("/api/log", params={"limit": "many"})
        assert assert_error(limit, 422, "invalid_value")["param"] == "query.limit"
        method = await admin.delete("/api/tools")
        assert_error(method, 405, "method_not_allowed")

        # The API's own document says so, for the generated clients.
        document = (await admin.get("/api/openapi.json", headers={"authorization": ""})).json()
        answers = document["paths"]["/api/tools/{name}"]["patch"]["responses"]
        for status in ("401", "403", "404", "409", "413", "415", "422"):
            schema = answers[status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (status, schema)
        assert "HTTPValidationError" not in document["components"]["schemas"]


async def test_the_admin_command_prints_the_message(make_proxy, capsys) -> None:
    async with admin_proxy(make_proxy) as (proxy, _):
        url = url_of(proxy)
        status, _, err = await toolwire(capsys, "admin", "deny", "call_x", "--url", url)
        assert status == 1 and err == "error: 401 send the admin or master key as a Bearer token\n"
        args = ("admin", "deny", "call_x", "--url", url, "--key", ADMIN)
        status, _, err = await toolwire(capsys, *args)
        assert status == 1 and err.startswith("error: 404 ") and "call_x" in err
