"""An example REST service to point Toolwire's OpenAPI source at: a small to-do list.

Run it, then add it to proxy.yaml's `tools:`:

    .venv/bin/python examples/openapi_service.py            # http://127.0.0.1:9100

    tools:
      - openapi: {spec: http://127.0.0.1:9100/openapi.json}
        namespace: todo

Each operation becomes a tool (`todo.list_todos`, `todo.add_todo`, ...). Needs fastapi.
"""

from __future__ import annotations

import argparse
import itertools
from typing import Annotated

import uvicorn
from fastapi import FastAPI, HTTPException, Query
from pydantic import BaseModel, Field


class NewTodo(BaseModel):
    title: str = Field(description="What to do.")
    due: str | None = Field(default=None, description="Due date, YYYY-MM-DD.")


class TodoPatch(BaseModel):
    title: str | None = None
    done: bool | None = None


class Todo(BaseModel):
    id: int
    title: str
    due: str | None = None
    done: bool = False


def create_app() -> FastAPI:
    """The to-do service, with its own in-memory list."""
    app = FastAPI(title="Todo", version="1.0")
    todos: dict[int, Todo] = {}
    ids = itertools.count(1)

    def find(todo_id: int) -> Todo:
        if todo_id not in todos:
            raise HTTPException(404, detail=f"no to-do with id {todo_id}")
        return todos[todo_id]

    @app.get("/todos", operation_id="list_todos", summary="List to-dos")
    def list_todos(
        done: Annotated[bool | None, Query(description="Only done (true) or open (false).")] = None,
    ) -> list[Todo]:
        return [t for t in todos.values() if done is None or t.done == done]

    @app.post("/todos", operation_id="add_todo", summary="Add a to-do", status_code=201)
    def add_todo(todo: NewTodo) -> Todo:
        created = Todo(id=next(ids), **todo.model_dump())
        todos[created.id] = created
        return created

    @app.get("/todos/{todo_id}", operation_id="get_todo", summary="Get one to-do")
    def get_todo(todo_id: int) -> Todo:
        return find(todo_id)

    @app.patch("/todos/{todo_id}", operation_id="update_todo", summary="Rename or tick off")
    def update_todo(todo_id: int, patch: TodoPatch) -> Todo:
        todo = find(todo_id)
        todos[todo_id] = todo.model_copy(update=patch.model_dump(exclude_none=True))
        return todos[todo_id]

    @app.delete("/todos/{todo_id}", operation_id="delete_todo", summary="Delete a to-do")
    def delete_todo(todo_id: int) -> dict[str, int]:
        find(todo_id)
        del todos[todo_id]
        return {"deleted": todo_id}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9100)
    args = parser.parse_args()
    uvicorn.run(create_app(), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
