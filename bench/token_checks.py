"""Instructions per caller check on `/mcp` with `mcp_server.oauth`: a client key, JWT access
tokens (ES256, EdDSA, RS256) each checked for the first time, one ES256 token checked again
(`cached-jwt`: kept once verified) and an introspected opaque token (its cached answer),
counted, not timed.

    .venv/bin/python bench/token_checks.py               # every kind, 200 checks each
    .venv/bin/python bench/token_checks.py --checks 500 --kind es256

Each kind runs in a child Python under valgrind's callgrind, counting switched on (by
`callgrind_control`) only around N checks, after the set-up: imports, keys, a loopback
issuer, the tokens, and one check that fetches the key set or introspects. A check is
`Authenticator.authenticate` as the edge calls it for `/mcp`: a key is looked for first,
then the token is checked and mapped to its caller. Needs `valgrind`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("key", "es256", "rs256", "eddsa", "cached-jwt", "introspected")
KEY = "bench-key-0123456789"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checks", type=int, default=200)
    parser.add_argument("--kind", choices=KINDS, action="append")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        asyncio.run(_checks(args.child[0], int(args.child[1])))
        return
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("valgrind is not installed")
    print(f"{'check':<14}{'instructions':>14}   (per check, {args.checks} checks)", flush=True)
    for kind in args.kind or KINDS:
        print(f"{kind:<14}{_counted(kind, args.checks) / args.checks:>14,.0f}", flush=True)


def _counted(kind: str, checks: int) -> int:
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
    command += ["--callgrind-out-file=/dev/null"]
    command += [sys.executable, __file__, "--child", kind, str(checks)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count from callgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1))


async def _checks(kind: str, checks: int) -> None:
    sys.path.insert(0, str(ROOT))
    from policies import AuthConfig, MemoryRateLimiter
    from proxy.server.auth import Authenticator
    from proxy.server.bearer_tokens import BearerTokens
    from proxy.server.oauth_config import OAuthResourceConfig
    from testing.token_issuer import INTROSPECTOR, serve_token_issuer

    fresh: list[str] = []
    async with serve_token_issuer() as issuer:
        issuer.resource = "https://tools.example.com/mcp"
        oauth: dict[str, Any] = {
            "issuer": issuer.issuer,
            "resource": issuer.resource,
            "scopes_required": ["tools"],
            "callers": {"default": {}},
        }
        if kind == "introspected":
            user, secret = INTROSPECTOR
            url = f"{issuer.issuer}/introspect"
            oauth["introspection"] = {"url": url, "client_id": user, "client_secret": secret}
            credential = issuer.mint_opaque("alice")
        elif kind == "key":
            oauth["jwks_url"] = f"{issuer.issuer}/jwks"
            credential = KEY
        else:
            oauth["jwks_url"] = f"{issuer.issuer}/jwks"
            algorithm = {"es256": "ES256", "eddsa": "EdDSA", "rs256": "RS256"}.get(kind, "ES256")
            kid = issuer.rotate(algorithm)
            credential = issuer.mint("alice", kid=kid)
            if kind != "cached-jwt":  # a token of its own for each check: each one verified
                fresh = [issuer.mint("alice", kid=kid, jti=str(n)) for n in range(checks)]
        config = OAuthResourceConfig.model_validate(oauth)
        tokens = BearerTokens(config, "/.well-known/oauth-protected-resource")
        auth = AuthConfig.model_validate({"keys": [{"name": "bench", "key": KEY}]})
        keys = Authenticator(auth, MemoryRateLimiter(), tokens)
        headers = {"authorization": f"Bearer {credential}"}
        each = [{"authorization": f"Bearer {token}"} for token in fresh] or [headers] * checks
        try:
            await keys.authenticate(headers, bearer=True)  # the key set's fetch, or introspection
            _counting("on")
            for presented in each:
                await keys.authenticate(presented, bearer=True)
            _counting("off")
        finally:
            await keys.aclose()


def _counting(state: str) -> None:
    """Switch callgrind's counting for this process (run natively: children are not traced)."""
    control = ["callgrind_control", "--instr=" + state, str(os.getpid())]
    subprocess.run(control, check=False, capture_output=True)


if __name__ == "__main__":
    main()
