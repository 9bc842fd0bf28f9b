"""FastAPI and the MCP SDK's server load only for the fronts that need them: `import
proxy.server.app` stays without them; and `toolwire tools`, `check`, `call` and `admin` load no
server at all (Starlette, uvicorn, the fronts, the state stores), nor aiohttp when no source
uses it."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO

HEAVY = ("fastapi", "mcp.server", "jwt")
PROBE = """
import json, sys
{body}
print(json.dumps([name for name in {heavy!r} if name in sys.modules]))
"""


def _loaded(body: str, heavy: tuple[str, ...] = HEAVY) -> list[str]:
    """The `heavy` modules loaded after running `body` in a fresh interpreter."""
    code = PROBE.format(body=body, heavy=heavy)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_importing_the_app_loads_neither_fastapi_nor_the_mcp_server() -> None:
    assert _loaded("import proxy.server.app, proxy.server.cli, proxy.admin") == []


def test_an_app_with_both_fronts_off_loads_neither() -> None:
    body = """
from pathlib import Path
from proxy import create_app, parse_settings
upstreams = [{"name": "demo", "base_url": "demo"}]
config = {"upstreams": upstreams, "admin": {"enabled": False}, "mcp_server": {"enabled": False}}
create_app(parse_settings(config, base_dir=Path("."), environ={}))
"""
    assert _loaded(body) == []


@functools.cache
def _default_app_loads() -> tuple[list[str], list[str]]:
    """What an app on the default fronts loads (of HEAVY), then the server too (aiohttp): one
    interpreter for the two tests below (a process is ~1.7 s of CPU)."""
    app = """
from pathlib import Path
from proxy import create_app, parse_settings
upstreams = [{"name": "demo", "base_url": "demo"}]
create_app(parse_settings({"upstreams": upstreams}, base_dir=Path("."), environ={}))
"""
    snapshot = f"print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))\n"
    body = app + snapshot + "import proxy.server.serving\n"
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(body=body, heavy=("aiohttp",))],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    app, server = done.stdout.strip().splitlines()[-2:]
    return json.loads(app), json.loads(server)


def test_each_front_loads_its_own_when_on() -> None:
    # PyJWT (with cryptography's backends) loads only when /mcp takes OAuth tokens.
    assert _default_app_loads()[0] == ["fastapi", "mcp.server"]


def test_the_server_loads_no_aiohttp_without_a_webhook_or_oauth_tokens() -> None:
    # aiohttp is the client of an approval webhook and of an OAuth issuer; loaded with them.
    assert _default_app_loads()[1] == []


# --- what each `toolwire` command imports ---------------------------------------------------

SERVER = (
    *("starlette", "uvicorn", "uvloop", "redis", "fastapi", "mcp.server", "prometheus_client"),
    *("proxy.server.app", "proxy.server.serving", "proxy.fronts", "proxy.state", "proxy.telemetry"),
)
"""The HTTP server and what only it uses (with their submodules): only `serve` needs them."""


RUN = """
import atexit, json, runpy, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))
sys.argv = ["toolwire", *json.loads(sys.argv[1])]
runpy.run_module("proxy", run_name="__main__", alter_sys=True)
"""


def _imported_by(*args: str, cwd: Path, status: int = 0) -> set[str]:
    """Every module loaded when `toolwire ARGS` exits (`sys.modules`, printed at exit)."""
    done = subprocess.run(
        [sys.executable, "-c", RUN, json.dumps(args)],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},  # this checkout, from any folder
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == status, done.stderr
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def _server_modules(imported: set[str]) -> list[str]:
    return sorted(n for n in imported if any(n == s or n.startswith(f"{s}.") for s in SERVER))


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., set[str]]:
    """What `toolwire COMMAND --config CONFIG` loads, run once a command for this file's tests,
    from a folder with CONFIG."""
    folder = tmp_path_factory.mktemp("commands")
    examples = (REPO / "examples" / "tools.py").as_posix()
    config = folder / "proxy.yaml"
    config.write_text(
        f"upstreams: [{{name: d, base_url: demo}}]\ntools: [{{python: {examples}}}]\n",
        encoding="utf-8",
    )

    @functools.cache
    def run(*command: str) -> set[str]:
        return _imported_by(*command, "--config", str(config), cwd=folder)

    return run


@pytest.mark.parametrize(
    "command",
    [["tools"], ["check"], ["call", "calculate", "--args", '{"expression": "1+2"}']],
    ids=["tools", "check", "call"],
)
def test_commands_without_a_server_load_none_of_it(
    command: list[str], imported: Callable[..., set[str]]
) -> None:
    loaded = imported(*command)
    assert _server_modules(loaded) == []
    # aiohttp loads with the sources that use it (OpenAPI specs, built-in HTTP tools) only.
    assert "aiohttp" not in loaded


def test_check_probes_the_upstreams_without_their_adapters(
    imported: Callable[..., set[str]],
) -> None:
    loaded = imported("check")
    assert "proxy.upstreams.probe" in loaded
    assert [name for name in loaded if name.split(".")[0] == "llm_rosetta"] == []


def test_admin_loads_no_configuration_and_no_server(tmp_path: Path) -> None:
    # Nothing listens on port 9 of loopback (discard): the command fails after its imports.
    imported = _imported_by("admin", "tools", "--url", "http://127.0.0.1:9", cwd=tmp_path, status=1)
    assert "httpx2" in imported
    assert _server_modules(imported) == []
    assert [n for n in ("proxy.config", "registry", "policies", "pydantic") if n in imported] == []
