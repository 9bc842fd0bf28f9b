"""The example to-do service works as an OpenAPI source, as the README shows."""

from __future__ import annotations

import json
from pathlib import Path

from examples.openapi_service import create_app
from registry import Executor, OpenApiSource, OpenApiSourceConfig, ToolCall, ToolRegistry
from testing.openapi_service import serve_app


async def test_the_example_service_as_tools() -> None:
    async with serve_app(create_app()) as url:
        config = OpenApiSourceConfig.model_validate(
            {"openapi": {"spec": f"{url}/openapi.json"}, "namespace": "todo"}
        )
        registry = ToolRegistry()
        source = OpenApiSource(config, base_dir=Path("."))
        await source.start(registry)
        try:
            with Executor() as executor:
                add = registry.get_tool("todo.add_todo")
                added = await executor.execute(add, ToolCall("1", "x", {"title": "buy milk"}))
                done = registry.get_tool("todo.update_todo")
                await executor.execute(done, ToolCall("2", "x", {"todo_id": 1, "done": True}))
                listing = registry.get_tool("todo.list_todos")
                listed = await executor.execute(listing, ToolCall("3", "x", {"done": True}))
        finally:
            await source.aclose()
    assert json.loads(added.content)["id"] == 1
    assert json.loads(listed.content) == [{"id": 1, "title": "buy milk", "due": None, "done": True}]
    assert [t.name for t in registry] == [
        "list_todos",
        "add_todo",
        "get_todo",
        "update_todo",
        "delete_todo",
    ]
