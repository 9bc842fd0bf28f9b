"""`toolwire admin`: the admin API of a running proxy from the command line.

    toolwire admin tools [--namespace NS] [--tag T] [--source S] [--enabled|--disabled]
    toolwire admin log [--tool NAME] [--outcome O] [--limit N]
    toolwire admin approvals
    toolwire admin approve ID [--reason TEXT]
    toolwire admin deny ID [--reason TEXT]
    toolwire admin pins [list | show NAME | accept NAME | reject NAME] [--digest D]
    toolwire admin login SOURCE [--timeout S]

Each takes `--url` (default `$TOOLWIRE_URL`, else http://127.0.0.1:8000), `--key` (default
`$TOOLWIRE_ADMIN_KEY`: the admin or master key) and `--json` (the API's answer as is).
Loads no configuration and no FastAPI: it only speaks HTTP.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson

from .login_cli import add_login_parser

if TYPE_CHECKING:
    import httpx2

DEFAULT_URL = "http://127.0.0.1:8000"
TIMEOUT_S = 30.0

Command = Callable[["httpx2.Client", argparse.Namespace], Any]
"""Asks the API; returns its JSON answer."""


def add_admin_parser(commands: Any) -> None:
    """Add `admin` and its subcommands to the `toolwire` parser's subcommands."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", help=f"the proxy (default: $TOOLWIRE_URL or {DEFAULT_URL})")
    common.add_argument("--key", help="admin or master key (default: $TOOLWIRE_ADMIN_KEY)")
    common.add_argument("--json", action="store_true", help="print the API's JSON answer")
    admin = commands.add_parser("admin", help="steer a running proxy through its admin API")
    actions = admin.add_subparsers(dest="action", required=True)

    tools = actions.add_parser("tools", parents=[common], help="list the tools")
    tools.add_argument("--namespace")
    tools.add_argument("--tag")
    tools.add_argument("--source", help="a source's name or kind (python, mcp, openapi, ...)")
    tools.add_argument("--search", help="words in the name, description, tags or hint")
    state = tools.add_mutually_exclusive_group()
    state.add_argument("--enabled", dest="enabled", action="store_const", const="true")
    state.add_argument("--disabled", dest="enabled", action="store_const", const="false")
    tools.set_defaults(admin=(_tools, _print_tools))

    log = actions.add_parser("log", parents=[common], help="the execution log, newest first")
    log.add_argument("--tool")
    log.add_argument("--outcome", help="ok, error, or one outcome (timeout, denied, ...)")
    log.add_argument("--limit", type=int, default=20)
    log.set_defaults(admin=(_log, _print_log))

    pending = actions.add_parser("approvals", parents=[common], help="calls awaiting approval")
    pending.set_defaults(admin=(_approvals, _print_approvals))

    for verdict in ("approve", "deny"):
        sub = actions.add_parser(verdict, parents=[common], help=f"{verdict} a paused call")
        sub.add_argument("id", help="the call's id (see `toolwire admin approvals`)")
        sub.add_argument("--reason", default="")
        sub.set_defaults(admin=(_verdict(verdict), _print_verdict))

    pins = actions.add_parser(
        "pins", parents=[common], help="pinned tool definitions: list, show, accept, reject"
    )
    verbs = ("list", "show", "accept", "reject")
    pins.add_argument("verb", nargs="?", default="list", choices=verbs)
    pins.add_argument("name", nargs="?", help="the tool's name (show, accept, reject)")
    pins.add_argument("--digest", help="accept or reject only this served definition")
    pins.set_defaults(admin=(_pins, _print_pins))

    add_login_parser(actions, common)


def run_admin(args: argparse.Namespace) -> int:
    """Run the parsed `toolwire admin` command; the exit status."""
    # The HTTP client loads here, not with the parser every `toolwire` command builds.
    import httpx2

    ask, show = args.admin
    url = (args.url or os.environ.get("TOOLWIRE_URL") or DEFAULT_URL).rstrip("/")
    key = args.key or os.environ.get("TOOLWIRE_ADMIN_KEY") or ""
    headers = {"authorization": f"Bearer {key}"} if key else {}
    try:
        with httpx2.Client(
            base_url=f"{url}/admin/api", headers=headers, timeout=TIMEOUT_S, trust_env=False
        ) as client:
            answer = ask(client, args)
    except httpx2.HTTPStatusError as exc:
        print(f"error: {_problem(exc.response)}", file=sys.stderr)
        return 1
    except httpx2.HTTPError as exc:
        print(f"error: cannot reach the proxy at {url}: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(orjson.dumps(answer, option=orjson.OPT_INDENT_2).decode())
    else:
        for line in show(answer):
            print(line)
    return 0


def _get(client: httpx2.Client, path: str, params: dict[str, Any]) -> Any:
    response = client.get(path, params={k: v for k, v in params.items() if v is not None})
    return response.raise_for_status().json()


def _tools(client: httpx2.Client, args: argparse.Namespace) -> Any:
    filters = {
        "namespace": args.namespace,
        "tag": args.tag,
        "source": args.source,
        "search": args.search,
        "enabled": args.enabled,
    }
    return _get(client, "/tools", filters)


def _log(client: httpx2.Client, args: argparse.Namespace) -> Any:
    filters = {"tool": args.tool, "outcome": args.outcome, "limit": args.limit}
    return _get(client, "/log", filters)


def _approvals(client: httpx2.Client, args: argparse.Namespace) -> Any:
    return _get(client, "/approvals", {})


def _verdict(verdict: str) -> Command:
    def decide(client: httpx2.Client, args: argparse.Namespace) -> Any:
        path = f"/approvals/{args.id}/{verdict}"
        return client.post(path, json={"reason": args.reason}).raise_for_status().json()

    return decide


def _pins(client: httpx2.Client, args: argparse.Namespace) -> Any:
    if args.verb == "list":
        return _get(client, "/pins", {})
    if not args.name:
        raise SystemExit(f"toolwire admin pins {args.verb}: name the tool")
    path = f"/pins/{quote(args.name, safe='')}"
    if args.verb == "show":
        return _get(client, path, {})
    body = {"digest": args.digest} if args.digest else {}
    return client.post(f"{path}/{args.verb}", json=body).raise_for_status().json()


def _print_pins(answer: Any) -> list[str]:
    if isinstance(answer, dict):
        return _print_pin(answer)
    if not answer:
        return ["no source pins its tools (set pinning: warn or block on a source)"]
    rows = [
        [pin["name"], pin["source"], pin["mode"], pin["status"], "yes" if pin["held"] else "no"]
        for pin in answer
    ]
    waiting = sum(pin["status"] != "pinned" for pin in answer)
    table = aligned([["NAME", "SOURCE", "MODE", "STATUS", "HELD"], *rows])
    return [*table, f"{waiting} of {len(rows)} pinned tools await review"]


def _print_pin(pin: Any) -> list[str]:
    held = "held back (not injected, not run)" if pin["held"] else "served"
    lines = [
        f"{pin['name']} ({pin['source']}, pinning: {pin['mode']}): {pin['status']}, {held}",
        f"served: {pin['digest']}",
    ]
    record = pin["pin"]
    if record is not None and record["digest"] is not None:
        lines.append(
            f"pinned: {record['digest']} by {record['pinned_by']} at {_clock(record['pinned_at'])}"
        )
    if record is not None and record["rejected"] is not None:
        lines.append(
            f"rejected: {record['rejected']} by {record['rejected_by']} "
            f"at {_clock(record['rejected_at'])}"
        )
    if pin["diff"]:
        lines += ["", *pin["diff"].rstrip("\n").splitlines()]
    return lines


def _print_tools(answer: Any) -> list[str]:
    rows = [
        [
            tool["name"],
            tool["source"],
            ",".join(tool["tags"]) or "-",
            "yes" if tool["enabled"] else f"no ({tool['disabled_reason']})",
            "yes" if tool["deferred"] else "no",
        ]
        for tool in answer["tools"]
    ]
    table = aligned([["NAME", "SOURCE", "TAGS", "ENABLED", "DEFERRED"], *rows])
    return [*table, f"{len(rows)} of the registry's tools (version {answer['version']})"]


def _print_log(answer: Any) -> list[str]:
    rows = [
        [
            _clock(record["started_at"]),
            record["tool"],
            record["outcome"],
            f"{record['duration_ms']:.1f}",
            record["call_id"],
            record["request_id"] or "-",
        ]
        for record in answer["records"]
    ]
    table = aligned([["TIME (UTC)", "TOOL", "OUTCOME", "MS", "CALL", "REQUEST"], *rows])
    return [*table, f"{len(rows)} of {answer['total']} records"]


def _print_approvals(answer: Any) -> list[str]:
    if not answer:
        return ["no calls await approval"]
    rows = [
        [
            approval["call_id"],
            approval["tool"],
            orjson.dumps(approval["arguments"]).decode(),
            approval["reason"],
            _verdict_text(approval),
        ]
        for approval in answer
    ]
    return aligned([["ID", "TOOL", "ARGUMENTS", "WHY", "DECIDED"], *rows])


def _print_verdict(answer: Any) -> list[str]:
    return [f"{answer['call_id']} ({answer['tool']}): {_verdict_text(answer)}"]


def _verdict_text(approval: Any) -> str:
    if approval["approved"] is None:
        return "-"
    verdict = "approved" if approval["approved"] else "denied"
    return f"{verdict} by {approval['decided_by']}"


def _clock(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch))


def _problem(response: httpx2.Response) -> str:
    """What the API said went wrong, with its status."""
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return f"{response.status_code} {message or response.reason_phrase}"


def aligned(table: Sequence[Sequence[str]]) -> list[str]:
    """Lines with each column padded to its widest cell, two spaces apart."""
    widths = [max(len(cell) for cell in column) for column in zip(*table, strict=True)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in table
    ]
