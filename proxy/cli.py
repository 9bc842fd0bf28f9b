"""The `toolwire` command: serve, tools, check, call."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from policies import Action, RulePolicy
from registry import Executor, RegistryError, ToolCall, ToolRegistry

from .app import build_registry, create_app
from .config import ConfigError, Settings, load_settings


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        settings = load_settings(args.config)
        return int(args.run(args, settings) or 0)
    except ConfigError as exc:
        print(f"{args.config}: invalid configuration\n{exc}", file=sys.stderr)
        return 1
    except RegistryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolwire", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the proxy")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(run=_serve)

    tools = commands.add_parser("tools", help="list the registered tools")
    tools.add_argument("--tag", action="append", default=[])
    tools.add_argument("--json", action="store_true")
    tools.set_defaults(run=_tools)

    check = commands.add_parser("check", help="validate the config and load every source")
    check.set_defaults(run=_check)

    call = commands.add_parser("call", help="run one tool through registry and policy")
    call.add_argument("name")
    call.add_argument("--args", default="{}")
    call.set_defaults(run=_call)

    for sub in (serve, tools, check, call):
        sub.add_argument("--config", default="proxy.yaml", help="default: ./proxy.yaml")
    return parser


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    host = args.host or settings.server.host
    port = args.port if args.port is not None else settings.server.port
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    if args.workers > 1:
        # Each worker process builds its own app from the same file.
        os.environ["TOOLWIRE_CONFIG"] = str(Path(args.config).resolve())
        uvicorn.run(
            "proxy.cli:app_from_env",
            factory=True,
            host=host,
            port=port,
            workers=args.workers,
            http="httptools",
            loop="uvloop",
            log_level=args.log_level,
            env_file=None,
        )
        return 0
    registry = build_registry(settings)
    app = create_app(settings, registry=registry)
    uvicorn.run(
        app, host=host, port=port, http="httptools", loop="uvloop", log_level=args.log_level
    )
    return 0


def app_from_env() -> object:
    """The app for worker processes: the config path comes from TOOLWIRE_CONFIG."""
    settings = load_settings(os.environ.get("TOOLWIRE_CONFIG", "proxy.yaml"))
    return create_app(settings)


def _tools(args: argparse.Namespace, settings: Settings) -> int:
    registry = build_registry(settings)
    tools = registry.list_tools(tags=set(args.tag) or None, include_disabled=True)
    rows: list[dict[str, Any]] = [
        {
            "name": tool.qualified_name,
            "wire_name": registry.wire_name(tool),
            "source": tool.metadata.source,
            "tags": sorted(tool.metadata.tags),
            "enabled": registry.is_enabled(tool.qualified_name),
            "deferred": tool.metadata.defer,
        }
        for tool in tools
    ]
    if args.json:
        print(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode())
        return 0
    for row in rows:
        flags = ("" if row["enabled"] else " [disabled]") + (
            " [deferred]" if row["deferred"] else ""
        )
        tags = ",".join(row["tags"]) or "-"
        print(f"{row['name']:<32} {row['source']:<28} {tags}{flags}")
    return 0


def _check(args: argparse.Namespace, settings: Settings) -> int:
    registry = build_registry(settings)
    problems = [
        f"{tool.qualified_name}: parameters must be a JSON object schema"
        for tool in registry.list_tools(include_disabled=True)
        if tool.parameters.get("type") != "object"
    ]
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    print(f"{Path(args.config)}: {len(registry)} tools from {len(settings.tools)} sources")
    return 1 if problems else 0


def _call(args: argparse.Namespace, settings: Settings) -> int:
    registry = build_registry(settings)
    tool = registry.resolve(args.name)
    if tool is None:
        print(f"error: no tool named {args.name!r}", file=sys.stderr)
        return 1
    decision = RulePolicy(settings.policy).check(tool)
    if decision.action is not Action.ALLOW:
        print(f"error: {decision.action}: {decision.reason}", file=sys.stderr)
        return 1
    result = asyncio.run(_run_one(registry, settings, args.name, args.args))
    print(result.content)
    return 1 if result.is_error else 0


async def _run_one(registry: ToolRegistry, settings: Settings, name: str, arguments: str):  # type: ignore[no-untyped-def]
    tool = registry.resolve(name)
    assert tool is not None
    executor = Executor(default_timeout_s=settings.execution.timeout_s)
    try:
        return await executor.execute(tool, ToolCall(id="cli", name=name, arguments=arguments))
    finally:
        executor.close()
