"""The edge, through the real server: a route asked with the wrong method answers 405 with
`Allow` in its front's error shape."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx


async def test_a_wrong_method_is_405_with_allow_in_the_fronts_shape(make_proxy: Any) -> None:
    async with make_proxy() as proxy, httpx.AsyncClient() as http:
        root = proxy.base_url.removesuffix("/v1")
        for method, path, allow in (
            ("GET", "/v1/chat/completions", "POST"),
            ("PUT", "/v1/responses", "POST"),
            ("DELETE", "/v1/chat/completions", "POST"),
            ("POST", "/v1/models", "GET, HEAD"),
            ("PUT", "/v1/responses/resp_1", "DELETE, GET, HEAD"),
            ("POST", "/healthz", "GET, HEAD"),
        ):
            answer = await http.request(method, root + path)
            assert answer.status_code == 405, (method, path)
            assert ", ".join(sorted(answer.headers["allow"].split(", "))) == allow
            error = answer.json()["error"]
            assert (
                error["type"] == "invalid_request_error" and error["code"] == "method_not_allowed"
            )
            assert f"{method} is not allowed on {path}" in error["message"]
            assert answer.headers["x-request-id"]
        for method, path in (("GET", "/v1/messages"), ("PUT", "/v1/messages/count_tokens")):
            answer = await http.request(method, root + path)
            assert answer.status_code == 405 and answer.headers["allow"] == "POST"
            body = answer.json()
            assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        # Unknown paths stay 404, in the front's shape too.
        assert (await http.get(f"{root}/v1/nowhere")).status_code == 404
        missing = await http.get(f"{root}/v1/messages/nowhere")
        assert missing.status_code == 404 and missing.json()["type"] == "error"
