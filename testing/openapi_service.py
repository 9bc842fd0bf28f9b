"""A FastAPI shop service for OpenAPI source tests; it records every request it receives."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request, Response
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from testing import asgi_serving


@dataclass
class Received:
    """One request as the service saw it: raw path, query pairs, headers, JSON body."""

    method: str
    path: str
    raw_path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: Any = None


@dataclass
class ShopState:
    """What the service holds: items, and the requests it received, in order."""

    items: dict[int, dict[str, Any]] = field(
        default_factory=lambda: {1: {"id": 1, "name": "kettle", "price": 25.0, "tags": []}}
    )
    received: list[Received] = field(default_factory=list)
    released: asyncio.Event = field(default_factory=asyncio.Event)


class NewItem(BaseModel):
    name: str
    price: float
    tags: list[str] = []


class ItemPatch(BaseModel):
    name: str | None = None
    price: float | None = None


def create_shop(state: ShopState | None = None) -> FastAPI:
    """The shop app; pass a `ShopState` to inspect what it received."""
    shop = state or ShopState()

    async def record(request: Request) -> None:
        raw = await request.body()
        shop.received.append(
            Received(
                method=request.method,
                path=request.url.path,
                raw_path=request.scope["raw_path"].decode("latin-1"),
                query=list(request.query_params.multi_items()),
                headers={k.lower(): v for k, v in request.headers.items()},
                body=await request.json() if raw else None,
            )
        )

    app = FastAPI(title="Shop", version="1.0", dependencies=[Depends(record)])
    app.state.shop = shop
    _item_routes(app, shop)
    _other_routes(app, shop)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
            # One operation without an operationId: its tool is named from method and path.
            del schema["paths"]["/files/{name}"]["get"]["operationId"]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _item_routes(app: FastAPI, shop: ShopState) -> None:
    @app.get("/items/{item_id}", operation_id="get_item", summary="Get one item")
    async def get_item(item_id: int, verbose: bool = False) -> dict[str, Any]:
        if item_id not in shop.items:
            raise HTTPException(404, detail=f"item {item_id} not found")
        item = shop.items[item_id]
        return {**item, "verbose": verbose} if verbose else item

    @app.get("/items", operation_id="list_items", summary="List items")
    async def list_items(
        tag: Annotated[list[str] | None, Query()] = None, limit: int = 10
    ) -> list[dict[str, Any]]:
        items = [i for i in shop.items.values() if not tag or set(tag) & set(i["tags"])]
        return items[:limit]

    @app.post("/items", operation_id="create_item", status_code=201, summary="Create an item")
    async def create_item(item: NewItem, dry_run: bool = False) -> dict[str, Any]:
        new = {"id": max(shop.items, default=0) + 1, **item.model_dump()}
        if not dry_run:
            shop.items[new["id"]] = new
        return new

    @app.patch("/items/{item_id}", operation_id="update_item", summary="Change an item")
    async def update_item(
        item_id: int, patch: ItemPatch, reason: str | None = None
    ) -> dict[str, Any]:
        if item_id not in shop.items:
            raise HTTPException(404, detail=f"item {item_id} not found")
        shop.items[item_id].update(patch.model_dump(exclude_none=True))
        return {**shop.items[item_id], "reason": reason}

    @app.delete(
        "/items/{item_id}", operation_id="delete_item", status_code=204, summary="Delete an item"
    )
    async def delete_item(item_id: int) -> Response:
        shop.items.pop(item_id, None)
        return Response(status_code=204)


def _other_routes(app: FastAPI, shop: ShopState) -> None:
    @app.get("/files/{name:path}", summary="Read a file by name")
    async def read_file(name: str, request: Request) -> dict[str, str]:
        return {"name": name, "raw_path": request.scope["raw_path"].decode("latin-1")}

    @app.get("/whoami", operation_id="whoami", summary="Echo the credentials received")
    async def whoami(
        request: Request, x_trace_id: Annotated[str | None, Header()] = None
    ) -> dict[str, str | None]:
        return {
            "authorization": request.headers.get("authorization"),
            "x_api_key": request.headers.get("x-api-key"),
            "x_trace_id": x_trace_id,
        }

    @app.get("/big", operation_id="big", summary="A very long answer")
    async def big(size: int = 100_000) -> Response:
        return Response("x" * size, media_type="text/plain")

    @app.get("/hang", operation_id="hang", summary="Never answers until released")
    async def hang() -> dict[str, str]:
        await shop.released.wait()
        return {"status": "released"}


def serve_app(app: Any) -> contextlib.AbstractAsyncContextManager[str]:
    """Serve an ASGI app on an ephemeral loopback port (no lifespan); yields its base URL."""
    return asgi_serving.serve_app(app, lifespan="off", timeout_graceful_shutdown=1)
