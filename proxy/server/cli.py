"""The `toolwire` command: serve, tools, check, call, admin."""

# Each command imports what it runs, inside its function: `admin` loads no configuration,
# and `tools`, `check` and `call` no server (uvicorn, Starlette, the fronts, the state
# stores), which would double their start-up time.

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ..admin.cli import add_admin_parser, run_admin

if TYPE_CHECKING:
    from ..config import Settings

DEFAULT_CONFIG = "proxy.yaml"
NO_CONFIG_HINT = "run from the folder that holds it, or pass --config PATH"
"""Added when ./proxy.yaml, the default, is not there."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "admin":  # a running proxy's API: no configuration to load
        return run_admin(args)
    from registry import RegistryError

    from ..config import ConfigError, load_settings

    default = args.config is None
    if default:
        args.config = DEFAULT_CONFIG
    try:
        settings = load_settings(args.config)
        return int(args.run(args, settings) or 0)
    except ConfigError as exc:
        print(_config_problem(args.config, exc, default=default), file=sys.stderr)
        return 1
    except RegistryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _config_problem(path: str, exc: Exception, *, default: bool) -> str:
    """What to print when the configuration cannot be loaded."""
    if isinstance(exc.__cause__, FileNotFoundError) and default:
        return f"{exc} ({NO_CONFIG_HINT})"
    if isinstance(exc.__cause__, OSError):
        return str(exc)  # unreadable, not invalid
    return f"{path}: invalid configuration\n{exc}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolwire", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the proxy")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument("--log-level", default="info")
    serve.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="json: one JSON object per line (time, level, logger, message, request_id, ...)",
    )
    serve.add_argument(
        "--access-log", action="store_true", help="log every request (costs throughput)"
    )
    serve.set_defaults(run=_serve)

    tools = commands.add_parser("tools", help="list the registered tools")
    tools.add_argument("--tag", action="append", default=[])
    tools.add_argument("--json", action="store_true")
    tools.set_defaults(run=_tools)

    check = commands.add_parser("check", help="validate the config and load every source")
    check.set_defaults(run=_check)

    call = commands.add_parser("call", help="run one tool through the gate (scope, policy...)")
    call.add_argument("name")
    call.add_argument("--args", default="{}")
    call.add_argument("--key", help="act as this key of auth.keys (its scope and rules)")
    call.add_argument("--approve", action="store_true", help="approve an `ask` tool's call")
    call.set_defaults(run=_call)

    add_admin_parser(commands)

    for sub in (serve, tools, check, call):
        sub.add_argument("--config", help=f"default: ./{DEFAULT_CONFIG}")
    return parser


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    # The server (uvicorn, Starlette, the fronts) loads only for the command that serves.
    from .serving import serve

    return serve(args, settings)


def _tools(args: argparse.Namespace, settings: Settings) -> int:
    return asyncio.run(_list_tools(args, settings))


async def _list_tools(args: argparse.Namespace, settings: Settings) -> int:
    from .sources import started

    async with started(settings) as (registry, _):
        tools = registry.list_tools(tags=set(args.tag) or None, include_disabled=True)
        rows: list[dict[str, Any]] = [
            {
                "name": tool.qualified_name,
                "wire_name": registry.wire_name(tool),
                "source": tool.metadata.source,
                "tags": sorted(tool.metadata.tags),
                "enabled": registry.is_enabled(tool.qualified_name),
                "deferred": tool.metadata.defer,
                "schema": registry.openai_schema(tool),
            }
            for tool in tools
        ]
    if args.json:
        print(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode())
        return 0
    table = [
        [
            row["name"],
            row["source"],
            ",".join(row["tags"]) or "-",
            "yes" if row["enabled"] else "no",
            "yes" if row["deferred"] else "no",
        ]
        for row in rows
    ]
    for line in _aligned([["NAME", "SOURCE", "TAGS", "ENABLED", "DEFERRED"], *table]):
        print(line)
    return 0


def _aligned(table: list[list[str]]) -> list[str]:
    """Lines with each column padded to its widest cell, two spaces apart."""
    widths = [max(len(cell) for cell in column) for column in zip(*table, strict=True)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in table
    ]


def _count(number: int, noun: str) -> str:
    """`1 tool`, `2 tools`."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _relisting(settings: Settings) -> contextlib.AbstractContextManager[None]:
    """Lists the servers started on first use afresh, if any is configured (the MCP SDK is
    loaded only then)."""
    if not any(getattr(entry, "lazy", False) for entry in settings.tools):
        return contextlib.nullcontext()
    from registry import relisting

    return relisting()


def _check(args: argparse.Namespace, settings: Settings) -> int:
    return asyncio.run(_check_sources(args, settings))


async def _check_sources(args: argparse.Namespace, settings: Settings) -> int:
    from ..upstreams import probe_all
    from .sources import hosted_problems, started

    async with asyncio.TaskGroup() as group:
        # The upstreams are probed while the sources start.
        reached = group.create_task(probe_all(settings.upstreams))
        # Servers started on first use are listed here, and their manifests cached.
        with _relisting(settings):
            async with started(settings, fail_fast=False) as (registry, sources):
                statuses = sources.statuses()
                problems = [
                    f"{tool.qualified_name}: parameters must be a JSON object schema"
                    for tool in registry.list_tools(include_disabled=True)
                    if tool.parameters.get("type") != "object"
                ]
                problems += hosted_problems(settings.hosted_tools, registry)
    failed = False
    for upstream in reached.result():
        if upstream.reachable:
            print(f"ok    upstream {upstream.name}: {upstream.address}")
        else:
            failed = True
            print(f"error upstream {upstream.name}: unreachable: {upstream.error}")
    for status in statuses:
        if status.reachable and status.error is None:
            lazy = " (started on first use; manifest cached)" if status.lazy else ""
            print(f"ok    {status.name}: {_count(status.tool_count, 'tool')}{lazy}")
        elif status.reachable:
            failed = True
            print(f"error {status.name}: {_count(status.tool_count, 'tool')}; {status.error}")
        else:
            failed = True
            print(f"error {status.name}: unreachable: {status.error}")
    for problem in problems:
        print(f"error {problem}")
    summary = f"{_count(len(registry), 'tool')} from {_count(len(statuses), 'source')}"
    print(f"{args.config}: {summary}")
    return 1 if failed or problems else 0


def _call(args: argparse.Namespace, settings: Settings) -> int:
    return asyncio.run(_call_tool(args, settings))


async def _call_tool(args: argparse.Namespace, settings: Settings) -> int:
    from policies import (
        CallContext,
        Gate,
        GateDecision,
        Guards,
        KeyRing,
        MemoryRateLimiter,
        RulePolicy,
    )
    from registry import Executor, ToolCall

    from .sources import started

    principal = None
    if args.key is not None:
        keys = KeyRing.from_config(settings.auth) if settings.auth is not None else KeyRing()
        principal = keys.principal(args.key)
        if principal is None:
            print(f"error: no key named {args.key!r} in auth.keys", file=sys.stderr)
            return 1
    context = CallContext(principal, request_id="cli")
    async with started(settings, pinned=True) as (registry, _):
        tool = registry.resolve(args.name)
        held = registry.resolve(args.name, include_disabled=True)
        if tool is None and held is not None and registry.held_reason(held.qualified_name):
            reason = registry.held_reason(held.qualified_name)
            print(f"error: the tool {args.name!r} is held back: {reason}", file=sys.stderr)
            return 1
        with Executor.from_config(settings.execution) as executor:
            gate = Gate(
                RulePolicy(settings.policy),
                executor,
                guards=Guards(settings.guards, MemoryRateLimiter()),
                registry=registry,
            )
            if tool is None or not gate.in_scope(tool, context):
                print(f"error: no tool named {args.name!r}", file=sys.stderr)
                return 1
            call = ToolCall(id="cli", name=args.name, arguments=args.args)
            admission = await gate.admit(tool, call, context, approved=args.approve)
            if admission.verdict is GateDecision.ASK:
                await gate.ask(admission, context)
                print(f"error: ask: {admission.reason} (run again with --approve)", file=sys.stderr)
                return 1
            if admission.result is not None:
                print(f"error: {admission.result.content}", file=sys.stderr)
                return 1
            (result,) = await gate.run([admission], context)
    print(result.content)
    return 1 if result.is_error else 0
