"""The tool-loop benchmark's REST service (aiohttp) and its OpenAPI document: `POST /echo`.

    python bench/loop_openapi_service.py --port PORT   # spec at http://127.0.0.1:PORT/openapi.json

The operation `echo` takes `{"text": ...}` and answers `{"text": "echo: ..."}`, the same work
as the Python tool in `bench/loop_tools.py`.
"""

from __future__ import annotations

import argparse
from typing import Any

import orjson
import uvloop
from aiohttp import web

SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Toolwire tool-loop bench", "version": "1.0"},
    "paths": {
        "/echo": {
            "post": {
                "operationId": "echo",
                "summary": 'Return the text, prefixed with "echo: ".',
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"text": {"type": "string"}},
                                "required": ["text"],
                            }
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "The echoed text.",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {"text": {"type": "string"}},
                                }
                            }
                        },
                    }
                },
            }
        }
    },
}


def create_app(port: int) -> web.Application:
    """The service; its spec names `http://127.0.0.1:PORT` as the server."""
    spec = orjson.dumps({**SPEC, "servers": [{"url": f"http://127.0.0.1:{port}"}]})

    async def openapi(request: web.Request) -> web.Response:
        return web.Response(body=spec, content_type="application/json")

    async def echo(request: web.Request) -> web.Response:
        try:
            body = orjson.loads(await request.read())
            text = body["text"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return web.Response(status=400, body=b'{"error":"text required"}')
        answer = orjson.dumps({"text": f"echo: {text}"})
        return web.Response(body=answer, content_type="application/json")

    app = web.Application()
    app.router.add_get("/openapi.json", openapi)
    app.router.add_post("/echo", echo)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvloop.install()
    web.run_app(create_app(args.port), host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()
