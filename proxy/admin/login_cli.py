"""`toolwire admin login SOURCE`: an operator's OAuth login to an MCP source from the
command line. It starts the login, prints the authorization URL to open, and waits (up to
`--timeout`) until the proxy has the tokens. Speaks HTTP only, like the rest of `admin`."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    import httpx2

POLL_S = 0.5
"""How often the login's progress is asked for."""


def add_login_parser(actions: Any, common: argparse.ArgumentParser) -> None:
    login = actions.add_parser(
        "login", parents=[common], help="log in to an MCP source that uses OAuth"
    )
    login.add_argument("source", help="the source's name (mcp:NAME, see `toolwire check`)")
    login.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for the login (300)"
    )
    login.add_argument(
        "--redirect-uri",
        help="the proxy's callback as the authorization server knows it, when it is reached "
        "under another address: https://HOST/admin/oauth/callback",
    )
    login.add_argument(
        "--for-key",
        help="log in for this client key (a source acting for its callers with a login per key)",
    )
    login.set_defaults(admin=(login_source, print_login))


def login_source(client: httpx2.Client, args: argparse.Namespace) -> Any:
    """Start the login, show its URL, wait for its end; the login's last state."""
    path = f"/sources/{quote(args.source, safe='')}/login"
    body = {"redirect_uri": args.redirect_uri} if args.redirect_uri else {}
    if args.for_key:
        body["for_key"] = args.for_key
    started = client.post(path, json=body).raise_for_status().json()
    whom = f" for the key {started['for_key']}" if started.get("for_key") else ""
    print(f"Open this URL to log in to {started['source']}{whom}:", flush=True)
    print(f"  {started['authorization_url']}", flush=True)
    print(f"Waiting up to {args.timeout:g} s for the login to complete...", flush=True)
    deadline = time.monotonic() + args.timeout
    while True:
        state = client.get(f"/logins/{started['state']}").raise_for_status().json()
        if state["status"] != "pending":
            return state
        if time.monotonic() >= deadline:
            raise SystemExit(f"error: the login to {args.source} was not completed in time")
        time.sleep(POLL_S)


def print_login(answer: Any) -> list[str]:
    if answer["status"] == "done":
        whom = f" for the key {answer['for_key']}" if answer.get("for_key") else ""
        return [f"Logged in to {answer['source']}{whom}: its tokens are kept and refreshed."]
    raise SystemExit(f"error: the login to {answer['source']} failed: {answer['error']}")
