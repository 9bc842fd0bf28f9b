"""What the official MCP conformance suite expects a server under test to serve, for the
test that runs the suite against `/mcp` (test-only: the product serves none of it).

Two parts. Tools that only return content are registry tools (`conformance_registry`),
so their calls take Toolwire's own path: listed by `/mcp`, admitted by the gate, run by
the executor, their results turned into MCP content by `/mcp`. What Toolwire's registry
has no way to express is added to the MCP server itself (`install`, a `ServerExtra`):
tools that talk to the client mid-call (log messages, progress, sampling, elicitation),
tools whose results embed resources, and the suite's resources, prompts, completions and
`logging/setLevel`.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server

from registry import Tool, ToolOutput, ToolRegistry

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg"
    "=="
)
"""A 1x1 red PNG."""
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
"""An empty 8 kHz mono WAV."""
SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


def conformance_registry() -> ToolRegistry:
    """The suite's content tools, under their bare names (no namespace)."""
    registry = ToolRegistry()

    def test_simple_text() -> str:
        """Returns simple text."""
        return "This is a simple text response for testing."

    def test_image_content() -> ToolOutput:
        """Returns an image."""
        part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
        return ToolOutput(text="", attachments=(part,))

    def test_audio_content() -> ToolOutput:
        """Returns audio."""
        part = {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}}
        return ToolOutput(text="", attachments=(part,))

    def test_error_handling() -> str:
        """Always fails."""
        raise RuntimeError("This tool intentionally returns an error for testing")

    def json_schema_2020_12_tool(**arguments: Any) -> str:
        return json.dumps(arguments)

    for fn in (test_simple_text, test_image_content, test_audio_content, test_error_handling):
        registry.register(fn)
    registry.register(
        Tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            SCHEMA_2020_12,
            fn=json_schema_2020_12_tool,
        )
    )
    return registry


# ---- what the registry cannot express: served by the MCP server itself ----

Context = ServerRequestContext[Any, Any]
Handler = Callable[[Context, dict[str, Any]], Awaitable[types.CallToolResult]]


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def _with_logging(ctx: Context, arguments: dict[str, Any]) -> types.CallToolResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the logging capability is deprecated in 2026-07-28
        for step, message in enumerate(
            ("Tool execution started", "Tool processing data", "Tool execution completed")
        ):
            if step:
                await asyncio.sleep(0.05)
            await ctx.session.send_log_message("info", message, related_request_id=ctx.request_id)
    return _text("Tool with logging executed successfully")


async def _with_progress(ctx: Context, arguments: dict[str, Any]) -> types.CallToolResult:
    meta = (ctx.params or {}).get("_meta") or {}
    token = meta.get("progressToken")
    for step, progress in enumerate((0, 50, 100)):
        if step:
            await asyncio.sleep(0.05)
        if token is not None:
            await ctx.session.send_progress_notification(
                token, progress, 100, related_request_id=str(ctx.request_id)
            )
    return _text(f"Tool with progress executed successfully ({token})")


async def _sampling(ctx: Context, arguments: dict[str, Any]) -> types.CallToolResult:
    prompt = types.TextContent(type="text", text=str(arguments.get("prompt", "")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sampling is deprecated in 2026-07-28
        answer = await ctx.session.create_message(
            [types.SamplingMessage(role="user", content=prompt)],
            max_tokens=100,
            related_request_id=ctx.request_id,
        )
    content = answer.content
    said = content.text if isinstance(content, types.TextContent) else str(content)
    return _text(f"LLM response: {said}")


async def _elicit(ctx: Context, message: str, schema: dict[str, Any]) -> types.ElicitResult:
    return await ctx.session.elicit_form(message, schema, ctx.request_id)


async def _elicitation(ctx: Context, arguments: dict[str, Any]) -> types.CallToolResult:
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    answer = await _elicit(ctx, str(arguments.get("message", "")), schema)
    return _text(f"User response: action={answer.action}, content={answer.content}")


async def _sep1034(ctx: Context, arguments: dict[str, Any]) -> types.CallToolResult:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {
                "type": "string",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "default": True},
        },
    }
    answer = await _elicit(ctx, "Please review your details", schema)
    return _text(f"Elicitation completed: action={answer.action}, content={answer.content}")


async def _sep1330(ctx: Context, arguments: dict[str, Any]) -> types.CallToolResult:
    options = ["option1", "option2", "option3"]
    titled = [
        {"const": f"value{i}", "title": title}
        for i, title in enumerate(("First Option", "Second Option", "Third Option"), 1)
    ]
    choices = [
        {"const": f"value{i}", "title": title}
        for i, title in enumerate(("First Choice", "Second Choice", "Third Choice"), 1)
    ]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": options},
            "titledSingle": {"type": "string", "oneOf": titled},
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
            "titledMulti": {"type": "array", "items": {"anyOf": choices}},
        },
    }
    answer = await _elicit(ctx, "Please choose", schema)
    return _text(f"Elicitation completed: action={answer.action}, content={answer.content}")


async def _reconnection(ctx: Context, arguments: dict[str, Any]) -> types.CallToolResult:
    """Ends the call's SSE stream mid-call; the client gets the result by resuming it."""
    if ctx.close_sse_stream is not None:
        await ctx.close_sse_stream()
    await asyncio.sleep(0.1)
    return _text("Reconnection test completed successfully")


def _resource(uri: str, mime_type: str, text: str) -> types.EmbeddedResource:
    contents = types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)
    return types.EmbeddedResource(type="resource", resource=contents)


async def _embedded(ctx: Context, arguments: dict[str, Any]) -> types.CallToolResult:
    text = "This is an embedded resource content."
    return types.CallToolResult(content=[_resource("test://embedded-resource", "text/plain", text)])


async def _mixed(ctx: Context, arguments: dict[str, Any]) -> types.CallToolResult:
    data = json.dumps({"test": "data", "value": 123}, separators=(",", ":"))
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text="Multiple content types test:"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            _resource("test://mixed-content-resource", "application/json", data),
        ]
    )


def _string_arguments(*names: str) -> dict[str, Any]:
    properties = {name: {"type": "string"} for name in names}
    return {"type": "object", "properties": properties, "required": list(names)}


SESSION_TOOLS: dict[str, tuple[dict[str, Any], Handler]] = {
    "test_tool_with_logging": (NO_ARGUMENTS, _with_logging),
    "test_tool_with_progress": (NO_ARGUMENTS, _with_progress),
    "test_sampling": (_string_arguments("prompt"), _sampling),
    "test_elicitation": (_string_arguments("message"), _elicitation),
    "test_elicitation_sep1034_defaults": (NO_ARGUMENTS, _sep1034),
    "test_elicitation_sep1330_enums": (NO_ARGUMENTS, _sep1330),
    "test_embedded_resource": (NO_ARGUMENTS, _embedded),
    "test_multiple_content_types": (NO_ARGUMENTS, _mixed),
    "test_reconnection": (NO_ARGUMENTS, _reconnection),
}


async def _session_tools(ctx: Context, call_next: CallNext) -> HandlerResult:
    """Serves `SESSION_TOOLS`: listed after the registry's, called here."""
    params: Mapping[str, Any] = ctx.params or {}
    if ctx.method == "tools/call" and params.get("name") in SESSION_TOOLS:
        _, handler = SESSION_TOOLS[str(params["name"])]
        result = await handler(ctx, dict(params.get("arguments") or {}))
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    listed = await call_next(ctx)
    if ctx.method == "tools/list" and isinstance(listed, dict) and "nextCursor" not in listed:
        extra = [
            {"name": name, "description": name.replace("_", " "), "inputSchema": schema}
            for name, (schema, _) in SESSION_TOOLS.items()
        ]
        return {**listed, "tools": [*listed.get("tools", []), *extra]}
    return listed


STATIC_TEXT = "This is the content of the static text resource."
RESOURCES = [
    types.Resource(
        uri="test://static-text",
        name="static-text",
        description="A static text resource",
        mime_type="text/plain",
    ),
    types.Resource(
        uri="test://static-binary",
        name="static-binary",
        description="A static binary resource",
        mime_type="image/png",
    ),
    types.Resource(
        uri="test://watched-resource",
        name="watched-resource",
        description="A resource to subscribe to",
        mime_type="text/plain",
    ),
]


async def _list_resources(ctx: Context, params: types.PaginatedRequestParams) -> Any:
    return types.ListResourcesResult(resources=RESOURCES)


async def _list_templates(ctx: Context, params: types.PaginatedRequestParams) -> Any:
    template = types.ResourceTemplate(
        uri_template="test://template/{id}/data",
        name="template",
        description="A resource template",
        mime_type="application/json",
    )
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def _read_resource(ctx: Context, params: types.ReadResourceRequestParams) -> Any:
    uri = str(params.uri)
    contents: types.TextResourceContents | types.BlobResourceContents
    if uri == "test://static-binary":
        contents = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG)
    elif uri.startswith("test://template/") and uri.endswith("/data"):
        item = uri.removeprefix("test://template/").removesuffix("/data")
        body = {"id": item, "templateTest": True, "data": f"Data for ID: {item}"}
        contents = types.TextResourceContents(
            uri=uri, mime_type="application/json", text=json.dumps(body)
        )
    else:
        contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text=STATIC_TEXT)
    return types.ReadResourceResult(contents=[contents])


async def _subscription(ctx: Context, params: Any) -> Any:
    return types.EmptyResult()


PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A simple prompt"),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with arguments",
        arguments=[
            types.PromptArgument(name="arg1", description="First test argument", required=True),
            types.PromptArgument(name="arg2", description="Second test argument", required=True),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt with an embedded resource",
        arguments=[types.PromptArgument(name="resourceUri", required=True)],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt with an image"),
]


async def _list_prompts(ctx: Context, params: types.PaginatedRequestParams) -> Any:
    return types.ListPromptsResult(prompts=PROMPTS)


def _user(content: Any) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=content)


async def _get_prompt(ctx: Context, params: types.GetPromptRequestParams) -> Any:
    arguments = params.arguments or {}
    please = "Please process the embedded resource above."
    messages = {
        "test_simple_prompt": [
            _user(types.TextContent(type="text", text="This is a simple prompt for testing."))
        ],
        "test_prompt_with_arguments": [
            _user(
                types.TextContent(
                    type="text",
                    text="Prompt with arguments: "
                    f"arg1='{arguments.get('arg1')}', arg2='{arguments.get('arg2')}'",
                )
            )
        ],
        "test_prompt_with_embedded_resource": [
            _user(
                _resource(
                    str(arguments.get("resourceUri", "test://embedded")),
                    "text/plain",
                    "Embedded resource content for testing.",
                )
            ),
            _user(types.TextContent(type="text", text=please)),
        ],
        "test_prompt_with_image": [
            _user(types.ImageContent(type="image", data=PNG, mime_type="image/png")),
            _user(types.TextContent(type="text", text="Please analyze the image above.")),
        ],
    }
    return types.GetPromptResult(messages=messages.get(params.name, []))


async def _complete(ctx: Context, params: types.CompleteRequestParams) -> Any:
    return types.CompleteResult(completion=types.Completion(values=[], total=0, has_more=False))


async def _set_level(ctx: Context, params: types.SetLevelRequestParams) -> Any:
    return types.EmptyResult()


def install(server: Server[Any]) -> None:
    """Add the fixtures the registry cannot hold to `/mcp`'s MCP server."""
    server.middleware.append(_session_tools)
    handlers: list[tuple[str, type[Any], Any]] = [
        ("resources/list", types.PaginatedRequestParams, _list_resources),
        ("resources/templates/list", types.PaginatedRequestParams, _list_templates),
        ("resources/read", types.ReadResourceRequestParams, _read_resource),
        ("resources/subscribe", types.SubscribeRequestParams, _subscription),
        ("resources/unsubscribe", types.UnsubscribeRequestParams, _subscription),
        ("prompts/list", types.PaginatedRequestParams, _list_prompts),
        ("prompts/get", types.GetPromptRequestParams, _get_prompt),
        ("completion/complete", types.CompleteRequestParams, _complete),
        ("logging/setLevel", types.SetLevelRequestParams, _set_level),
    ]
    for method, params_type, handler in handlers:
        server.add_request_handler(method, params_type, handler)
