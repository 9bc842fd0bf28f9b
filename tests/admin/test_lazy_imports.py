"""FastAPI and the MCP SDK's server load only for the fronts that need them: `import
proxy.app` (every `toolwire` command) stays without them."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

HEAVY = ("fastapi", "mcp.server")
PROBE = """
import json, sys
{body}
print(json.dumps([name for name in {heavy!r} if name in sys.modules]))
"""


def _loaded(body: str) -> list[str]:
    """The heavy modules loaded after running `body` in a fresh interpreter."""
    code = PROBE.format(body=body, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_importing_the_app_loads_neither_fastapi_nor_the_mcp_server() -> None:
    assert _loaded("import proxy.app, proxy.cli, proxy.admin") == []


def test_an_app_with_both_fronts_off_loads_neither() -> None:
    body = """
from pathlib import Path
from proxy import create_app, parse_settings
upstreams = [{"name": "demo", "base_url": "demo"}]
config = {"upstreams": upstreams, "admin": {"enabled": False}, "mcp_server": {"enabled": False}}
create_app(parse_settings(config, base_dir=Path("."), environ={}))
"""
    assert _loaded(body) == []


def test_each_front_loads_its_own_when_on() -> None:
    body = """
from pathlib import Path
from proxy import create_app, parse_settings
upstreams = [{"name": "demo", "base_url": "demo"}]
create_app(parse_settings({"upstreams": upstreams}, base_dir=Path("."), environ={}))
"""
    assert _loaded(body) == list(HEAVY)
