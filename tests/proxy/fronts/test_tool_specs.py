"""One think-augmented spec, each front's shape of it: the bytes Chat-shaped schemas gave."""

from __future__ import annotations

import ast
from pathlib import Path

import orjson

from policies import NO_FILTER, Gate, PolicyConfig, RulePolicy, ThinkAugment
from proxy.fronts.mcp.content import mcp_tool
from proxy.fronts.responses.handler import _listings
from proxy.fronts.responses.tools_plan import McpEntry, ToolsPlan
from proxy.turn.catalog import SEARCH_CHAT_TOOL, Catalog, Toolset, chat_tool
from proxy.upstreams.base import ChatTool
from registry import Executor, Tool, ToolRegistry

REASON = (
    b'"reason":{"type":"string",'
    b'"description":"Optional: in one sentence, why this call helps with the task."}'
)
LAUNCH_PARAMETERS = (
    b'{"additionalProperties":false,"properties":{"target":{"type":"string"},'
    b'"count":{"default":1,"type":"integer"},' + REASON + b'},"required":["target"],'
    b'"type":"object"}'
)
LAND_PARAMETERS = (
    b'{"additionalProperties":false,"properties":{"where":{"type":"string"},'
    + REASON
    + b'},"required":["where"],"type":"object"}'
)


def launch(target: str, count: int = 1) -> str:
    """Launch something at a target."""
    return target


def land(where: str) -> str:
    """Land somewhere."""
    return where


def read(path: str) -> str:
    """Read a file."""
    return path


def augmented() -> tuple[ToolRegistry, Toolset, Tool, Tool]:
    registry = ToolRegistry()
    now = registry.register(launch, namespace="ops")
    later = registry.register(land, namespace="ops", defer=True)
    registry.register(read, namespace="docs")
    gate = Gate(RulePolicy(PolicyConfig()), Executor(), think=ThinkAugment(namespaces=["ops"]))
    return registry, Catalog(registry, gate).toolset(NO_FILTER), now, later


def test_the_chat_tools_the_loop_injects_are_the_chat_schemas_of_before() -> None:
    registry, toolset, _, _ = augmented()
    launch_chat, read_chat = toolset.chat_tools
    assert orjson.dumps(launch_chat) == (
        b'{"type":"function","function":{"name":"ops_launch",'
        b'"description":"Launch something at a target.","parameters":' + LAUNCH_PARAMETERS + b"}}"
    )
    assert orjson.dumps(toolset.deferred_chat_tools["ops_land"]) == (
        b'{"type":"function","function":{"name":"ops_land","description":"Land somewhere.",'
        b'"parameters":' + LAND_PARAMETERS + b"}}"
    )
    # A spec the gate leaves alone shares the registry's own Chat schema (its parts; the
    # tool itself with its JSON, made once per registry version).
    registered = registry.openai_schema("docs.read")
    assert read_chat == registered and read_chat["function"] is registered["function"]
    assert isinstance(read_chat, ChatTool)
    assert orjson.dumps(read_chat.json) == orjson.dumps(registered)
    assert [chat_tool(spec) for spec in toolset.specs] == list(toolset.chat_tools)


def test_the_tool_search_chat_tool_is_the_one_of_before() -> None:
    assert orjson.dumps(SEARCH_CHAT_TOOL) == (
        b'{"type":"function","function":{"name":"tool_search","description":"Search the '
        b"catalog of additional tools by what they do. Matching tools become callable from "
        b'your next step on.","parameters":{"type":"object","properties":{"query":{"type":'
        b'"string","description":"words describing the task"},"limit":{"type":"integer",'
        b'"minimum":1,"maximum":20,"description":"most tools to return (default 5)"}},'
        b'"required":["query"],"additionalProperties":false}}}'
    )


def test_mcp_tools_are_the_ones_of_before() -> None:
    _, toolset, now, later = augmented()
    shown = mcp_tool(now, toolset.specs[0]).model_dump_json(by_alias=True, exclude_none=True)
    assert shown.encode() == (
        b'{"name":"ops_launch","description":"Launch something at a target.","inputSchema":'
        + LAUNCH_PARAMETERS
        + b',"_meta":{"toolwire/name":"ops.launch","toolwire/tags":[],'
        b'"toolwire/deferred":false}}'
    )
    found = mcp_tool(later, toolset.deferred_specs["ops_land"])
    assert found.model_dump_json(by_alias=True, exclude_none=True).encode() == (
        b'{"name":"ops_land","description":"Land somewhere.","inputSchema":'
        + LAND_PARAMETERS
        + b',"_meta":{"toolwire/name":"ops.land","toolwire/tags":[],"toolwire/deferred":true}}'
    )


def test_responses_tool_listings_are_the_ones_of_before() -> None:
    _, toolset, now, later = augmented()
    plan = ToolsPlan(entries=(McpEntry("ops", (now, later), frozenset()),))
    labels = {"ops_launch": "ops", "ops_land": "ops", "docs_read": "docs"}
    (listing,) = _listings(plan, toolset, labels, set())
    assert orjson.dumps(listing["tools"]) == (
        b'[{"name":"ops_launch","description":"Launch something at a target.",'
        b'"input_schema":' + LAUNCH_PARAMETERS + b',"annotations":null}]'
    )


def test_no_one_outside_the_loop_and_the_upstreams_reads_a_chat_tool_schema() -> None:
    """The gate, /mcp and the Responses front read specs: no `x["function"]`, no
    `x.get("function")` and no `chat_tools` in them."""
    root = Path(__file__).resolve().parents[3]
    files = [
        *(root / "policies").rglob("*.py"),
        *(root / "proxy" / "fronts" / "mcp").rglob("*.py"),
        *(root / "proxy" / "fronts" / "responses").rglob("*.py"),
    ]
    readers = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if _reads_function(node) or (
                isinstance(node, ast.Attribute) and "chat_tools" in node.attr
            ):
                readers.append(f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}")
    assert files and readers == []


def _reads_function(node: ast.AST) -> bool:
    if isinstance(node, ast.Subscript):
        key = node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr != "get" or not node.args:
            return False
        key = node.args[0]
    else:
        return False
    return isinstance(key, ast.Constant) and key.value == "function"
