"""The `toolwire` command: run as a user runs it (a subprocess in the repository) where the
process is the subject (the entry point, exit codes, signals, what a fresh process prints), and
through `main` in this process where the subject is what a command prints (about 0.5 s of CPU
less a run: a `toolwire` process imports the registry, the policies and pydantic anew)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.tools import get_weather
from proxy import load_settings
from proxy.server.cli import main
from testing.ports import free_port

REPO = Path(__file__).resolve().parents[3]
TOOLWIRE = [sys.executable, "-m", "proxy"]
DEMO_TOOLS = [
    "demo.get_weather",
    "demo.get_current_time",
    "demo.calculate",
    "demo.convert_currency",
]
EXAMPLES = (REPO / "examples" / "tools.py").as_posix()
WAIT_S = 120
"""How long a command, a start, an answer or a stop may take: a deadline that must not
fire, however loaded the machine."""


def _environ() -> dict[str, str]:
    """The user's environment without the variables proxy.yaml reads."""
    hidden = {"TOOLWIRE_UPSTREAM_URL", "UPSTREAM_API_KEY", "TOOLWIRE_CONFIG"}
    return {k: v for k, v in os.environ.items() if k not in hidden}


def toolwire(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TOOLWIRE, *args],
        cwd=REPO,
        env=_environ(),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )


def toolwire_here(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """`toolwire ARGS` through `main` in this process, as `toolwire` would run in `cwd` with the
    environment of `_environ()`: its exit status, what it printed, and on stderr what
    it logged at WARNING and above (what a process with no logging configured prints there)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    logged = logging.StreamHandler(stderr)
    logged.setLevel(logging.WARNING)
    root = logging.getLogger()
    hidden = {k: os.environ[k] for k in os.environ.keys() - _environ().keys()}
    was = Path.cwd()
    root.addHandler(logged)
    try:
        for name in hidden:
            del os.environ[name]
        os.chdir(cwd)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            returncode = main(list(args))
    finally:
        os.chdir(was)
        os.environ.update(hidden)
        root.removeHandler(logged)
    return subprocess.CompletedProcess(
        [*TOOLWIRE, *args], returncode, stdout.getvalue(), stderr.getvalue()
    )


def write_config(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "proxy.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def assert_clean_failure(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    for text in expected:
        assert text in result.stderr, result.stderr


# --- tools ----------------------------------------------------------------------------------


TOOLS_HEADER = ["NAME", "SOURCE", "TAGS", "ENABLED", "DEFERRED"]


def tools_table(stdout: str) -> list[dict[str, str]]:
    """The rows of `toolwire tools`, each cell cut at its header's column."""
    header, *lines = stdout.splitlines()
    assert header.split() == TOOLS_HEADER
    starts = [header.index(name) for name in TOOLS_HEADER]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    rows: list[dict[str, str]] = []
    for line in lines:
        # Aligned: every cell starts at its header's column, after a blank.
        assert all(line[start - 1] == " " for start in starts[1:]), line
        cells = [line[start:end].strip() for start, end in bounds]
        assert all(cell and " " not in cell for cell in cells), line
        rows.append(dict(zip(TOOLS_HEADER, cells, strict=True)))
    return rows


def test_tools_prints_a_header_and_aligned_columns() -> None:
    result = toolwire("tools")
    assert result.returncode == 0, result.stderr
    rows = tools_table(result.stdout)
    assert [row["NAME"] for row in rows] == DEMO_TOOLS
    for row in rows:
        assert (row["SOURCE"], row["TAGS"], row["ENABLED"], row["DEFERRED"]) == (
            "python:examples/tools.py",
            "read_only",
            "yes",
            "no",
        )


def test_tools_with_no_match_prints_only_the_header() -> None:
    result = toolwire_here("tools", "--tag", "network")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == TOOLS_HEADER


def test_tools_json_parses() -> None:
    result = toolwire_here("tools", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [row["name"] for row in rows] == DEMO_TOOLS
    weather = rows[0]
    schema = weather.pop("schema")
    assert weather == {
        "name": "demo.get_weather",
        "wire_name": "demo_get_weather",
        "source": "python:examples/tools.py",
        "tags": ["read_only"],
        "enabled": True,
        "deferred": False,
    }
    # What the model is shown: the function under its wire name, with its parameters.
    assert schema["type"] == "function"
    assert schema["function"]["name"] == "demo_get_weather"
    assert "city" in schema["function"]["parameters"]["properties"]


def test_tools_filtered_by_tag(tmp_path: Path) -> None:
    rows = json.loads(toolwire_here("tools", "--tag", "read_only", "--json").stdout)
    assert [r["name"] for r in rows] == DEMO_TOOLS
    assert json.loads(toolwire_here("tools", "--tag", "network", "--json").stdout) == []
    config = write_config(
        tmp_path,
        "upstreams: [{name: d, base_url: demo}]\n"
        f"tools:\n  - python: {EXAMPLES}\n    namespace: demo\n"
        "    overrides: {get_weather: {tags: [network], defer: true, enabled: false}}\n",
    )
    rows = json.loads(
        toolwire_here("tools", "--tag", "network", "--json", "--config", config).stdout
    )
    assert [(r["name"], r["enabled"], r["deferred"]) for r in rows] == [
        ("demo.get_weather", False, True)
    ]
    text = toolwire_here("tools", "--tag", "network", "--config", config).stdout
    assert tools_table(text) == [
        {
            "NAME": "demo.get_weather",
            "SOURCE": f"python:{EXAMPLES}",
            "TAGS": "network",
            "ENABLED": "no",
            "DEFERRED": "yes",
        }
    ]


# --- check ----------------------------------------------------------------------------------


def test_check_accepts_the_repo_config() -> None:
    result = toolwire("check")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "proxy.yaml: 4 tools from 1 source"
    assert result.stderr == ""


def test_check_counts_in_singular_and_plural(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "upstreams: [{name: d, base_url: demo}]\n"
        f"tools:\n  - python: {EXAMPLES}\n  - builtin: {{tools: [calculator]}}\n",
    )
    result = toolwire_here("check", "--config", config)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        "ok    upstream d: demo",
        f"ok    python:{EXAMPLES}: 4 tools",
        "ok    builtin:calculator: 1 tool",
        f"{config}: 5 tools from 2 sources",
    ]


def test_check_probes_every_upstream_and_names_the_unreachable_one(tmp_path: Path) -> None:
    with socket.socket() as refusing:  # bound, not listening: connections are refused
        refusing.bind(("127.0.0.1", 0))
        port = refusing.getsockname()[1]
        config = write_config(
            tmp_path,
            "upstreams:\n  - {name: demo, base_url: demo, models: [toolwire-demo]}\n"
            f"  - {{name: vllm, base_url: 'http://127.0.0.1:{port}/v1'}}\n"
            f"tools:\n  - python: {EXAMPLES}\n",
        )
        result = toolwire_here("check", "--config", config)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.splitlines()[:2] == [
        "ok    upstream demo: demo",
        f"error upstream vllm: unreachable: cannot connect to 127.0.0.1:{port} "
        "(connection refused)",
    ]


BAD_CONFIGS = {
    "no source key": ("upstreams: [{name: d, base_url: demo}]\ntools: [{}]\n", "tools[0]: "),
    "empty python": (
        "upstreams: [{name: d, base_url: demo}]\ntools: [{python: ''}]\n",
        "tools[0].python: ",
    ),
    "bad upstream url": ("upstreams: [{name: d, base_url: 'ftp://x'}]\n", "upstreams[0].base_url"),
    "unknown key": ("upstreams: [{name: d, base_url: demo}]\nloops: {}\n", "loops: unknown key"),
    "no upstreams": ("server: {port: 8000}\n", "upstreams: required"),
    "unset env": ("upstreams: [{name: d, base_url: '${TW_NOT_SET_ANYWHERE}'}]\n", "TW_NOT_SET"),
    "yaml syntax": ("upstreams: [\n", "not valid YAML"),
    "not a mapping": ("- a\n- b\n", "the top level must be a mapping"),
}


# Every command loads the configuration the same way (`main`, before the command runs): each
# bad configuration under each command that takes no arguments (`call`: below).
BAD_CONFIG_RUNS = [
    (command, case) for command in ("check", "tools", "serve") for case in BAD_CONFIGS
]


@pytest.mark.parametrize(("command", "case"), BAD_CONFIG_RUNS)
def test_bad_config_exits_1_with_key_path_and_no_traceback(
    tmp_path: Path, case: str, command: str
) -> None:
    text, expected = BAD_CONFIGS[case]
    config = write_config(tmp_path, text)
    result = toolwire_here(command, "--config", config)
    assert_clean_failure(result, expected, f"{config}: invalid configuration")


def test_bad_config_for_call_is_reported_before_running(tmp_path: Path) -> None:
    config = write_config(tmp_path, BAD_CONFIGS["bad upstream url"][0])
    result = toolwire("call", "demo.calculate", "--args", "{}", "--config", config)
    assert_clean_failure(result, "upstreams[0].base_url: ")
    assert result.stdout == ""


def test_missing_config_file(tmp_path: Path) -> None:
    result = toolwire_here("check", "--config", str(tmp_path / "nope.yaml"))
    assert_clean_failure(result, "cannot read")


def test_source_that_cannot_load_is_reported(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "upstreams: [{name: d, base_url: demo}]\ntools: [{python: missing_tools.py}]\n",
    )
    result = toolwire_here("check", "--config", config)
    assert_clean_failure(result, "python source file not found")


def test_override_of_unknown_tool_is_reported(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        f"upstreams: [{{name: d, base_url: demo}}]\n"
        f"tools: [{{python: {EXAMPLES}, overrides: {{get_wether: {{defer: true}}}}}}]\n",
    )
    result = toolwire_here("check", "--config", config)
    assert_clean_failure(result, "get_wether")


def test_config_that_is_not_utf8_exits_1_without_traceback(tmp_path: Path) -> None:
    config = write_config(tmp_path, b"upstreams: [{name: d, base_url: demo}]\n# caf\xe9\n")
    assert_clean_failure(toolwire_here("check", "--config", config), config)


# --- call -----------------------------------------------------------------------------------


def test_call_runs_a_tool_and_prints_the_result() -> None:
    result = toolwire("call", "demo.calculate", "--args", '{"expression": "2*(3+4)"}')
    assert result.returncode == 0, result.stderr
    assert float(result.stdout.strip()) == 14


def test_call_by_wire_name_with_object_result() -> None:
    result = toolwire_here("call", "demo_get_weather", "--args", '{"city": "Paris"}')
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == get_weather("Paris")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"expr": "1"}', "field 'expression' is required"),
        ('{"expression": 5}', "invalid_arguments"),
        ("not json", "invalid_json"),
    ],
)
def test_call_with_bad_arguments_exits_1_with_the_validation_error(
    arguments: str, expected: str
) -> None:
    result = toolwire_here("call", "demo.calculate", "--args", arguments)
    assert result.returncode == 1
    assert expected in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_call_when_the_tool_raises_exits_1() -> None:
    result = toolwire("call", "demo.calculate", "--args", '{"expression": "1/0"}')
    assert result.returncode == 1
    assert "division by zero" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_call_unknown_tool_exits_1() -> None:
    result = toolwire_here("call", "demo.nothing", "--args", "{}")
    assert_clean_failure(result, "no tool named 'demo.nothing'")


def test_call_respects_the_policy(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "upstreams: [{name: d, base_url: demo}]\n"
        f"tools: [{{python: {EXAMPLES}, namespace: demo}}]\n"
        "policy:\n  rules:\n"
        "    - {match: {name: 'demo.calc*'}, action: deny, reason: no maths here}\n"
        "    - {match: {name: 'demo.get_weather'}, action: ask}\n",
    )
    denied = toolwire_here(
        "call", "demo.calculate", "--args", '{"expression": "1"}', "--config", config
    )
    assert_clean_failure(denied, "no maths here")
    assert denied.stdout == ""
    ask = toolwire_here(
        "call", "demo.get_weather", "--args", '{"city": "Oslo"}', "--config", config
    )
    assert_clean_failure(ask, "requires approval")
    allowed = toolwire_here("call", "demo.get_current_time", "--config", config)
    assert allowed.returncode == 0, allowed.stderr
    approved = toolwire_here(
        "call", "demo.get_weather", "--args", '{"city": "Oslo"}', "--approve", "--config", config
    )
    assert approved.returncode == 0, approved.stderr
    assert "Oslo" in approved.stdout


def test_call_acts_as_a_key(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "upstreams: [{name: d, base_url: demo}]\n"
        f"tools: [{{python: {EXAMPLES}, namespace: demo}}]\n"
        "auth:\n  keys:\n"
        "    - name: narrow\n      key: narrow-key-123456\n      tags: [nothing-has-this]\n"
        "    - name: strict\n      key: strict-key-123456\n"
        "      policy: [{match: {name: 'demo.*'}, action: deny, reason: not for strict}]\n",
    )
    hidden = toolwire_here("call", "demo.get_current_time", "--key", "narrow", "--config", config)
    assert_clean_failure(hidden, "no tool named")
    denied = toolwire_here("call", "demo.get_current_time", "--key", "strict", "--config", config)
    assert_clean_failure(denied, "not for strict")
    unknown = toolwire_here("call", "demo.get_current_time", "--key", "nobody", "--config", config)
    assert_clean_failure(unknown, "no key named 'nobody'")
    anyone = toolwire_here("call", "demo.get_current_time", "--config", config)
    assert anyone.returncode == 0, anyone.stderr


# --- serve ----------------------------------------------------------------------------------


def _wait_for_line(process: subprocess.Popen[str], needle: str, deadline: float) -> str:
    """Read the server's stderr until `needle` appears; fail at the deadline.

    Reads the raw descriptor: a buffered reader could hold the line while select() waits.
    """
    assert process.stderr is not None
    fd = process.stderr.fileno()
    seen = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while needle.encode() not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(timeout=left):
                break
            data = os.read(fd, 65536)
            if not data:
                break
            seen += data
        else:
            return seen.decode("utf-8", "replace")
    raise AssertionError(f"server never logged {needle!r}: {seen.decode('utf-8', 'replace')}")


@pytest.fixture
def server() -> Iterator[tuple[subprocess.Popen[str], str]]:
    port = free_port()
    process = subprocess.Popen(
        [*TOOLWIRE, "serve", "--port", str(port)],
        cwd=REPO,
        env=_environ(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_line(process, "Uvicorn running on", time.monotonic() + WAIT_S)
        yield process, f"http://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        assert process.stderr is not None
        process.stderr.close()


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=WAIT_S) as response:
        assert response.status == 200
        return json.loads(response.read())


def _post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer anything"},
    )
    with urllib.request.urlopen(request, timeout=WAIT_S) as response:
        assert response.status == 200
        return json.loads(response.read())


def _stop(process: subprocess.Popen[str], signum: int) -> str:
    """Send `signum`; the server must shut down gracefully and exit within the deadline."""
    process.send_signal(signum)
    process.wait(timeout=WAIT_S)
    assert process.stderr is not None
    stderr = process.stderr.read()
    # uvicorn re-raises the signal after its graceful shutdown, so the parent sees either a
    # plain exit or death by that same signal; anything else is a crash.
    assert process.returncode in (0, -signum, 128 + signum), stderr
    assert "Application shutdown complete" in stderr
    assert "Traceback" not in stderr
    return stderr


def test_serve_answers_health_and_a_tool_using_chat_then_stops_on_sigterm(
    server: tuple[subprocess.Popen[str], str],
) -> None:
    process, base = server
    assert _get(f"{base}/healthz") == {"status": "ok"}
    ready = _get(f"{base}/readyz")
    assert (ready["status"], ready["tools"]) == ("ready", 4)
    models = _get(f"{base}/v1/models")
    assert "toolwire-demo" in [m["id"] for m in models["data"]]

    body = {
        "model": "toolwire-demo",
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
    }
    answer = _post(f"{base}/v1/chat/completions", body)
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "stop"
    content = choice["message"]["content"]
    assert "Paris" in content
    # The figures come from running demo.get_weather, so the answer shows the tool ran.
    weather = get_weather("Paris")
    assert str(weather["temperature"]) in content
    assert weather["condition"] in content
    assert "tool_calls" not in choice["message"]

    _stop(process, signal.SIGTERM)


def test_serve_stops_on_sigint(server: tuple[subprocess.Popen[str], str]) -> None:
    process, base = server
    assert _get(f"{base}/healthz") == {"status": "ok"}
    assert "KeyboardInterrupt" not in _stop(process, signal.SIGINT)


# --- examples ----------------------------------------------------------------------------


def test_example_client_gets_answers_that_used_tools(
    server: tuple[subprocess.Popen[str], str],
) -> None:
    _, url = server
    result = subprocess.run(
        [sys.executable, "examples/client.py"],
        cwd=REPO,
        env={**_environ(), "TOOLWIRE_URL": f"{url}/v1"},
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert result.returncode == 0, result.stderr
    assert "The weather in Paris is" in result.stdout
    assert "17 * 23 = 391" in result.stdout
    assert "tokens over every upstream call" in result.stdout


def test_example_config_with_every_kind_of_source_checks_out() -> None:
    result = toolwire_here("check", "--config", "examples/everything.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    for source in ("python:tools.py", "mcp:time", "mcp:notes", "builtin:"):
        assert source in result.stdout


def test_example_config_serves_beside_the_default_config() -> None:
    default = load_settings(REPO / "proxy.yaml", environ={})
    everything = load_settings(REPO / "examples" / "everything.yaml", environ={})
    assert everything.server.port == 8010
    assert everything.server.port != default.server.port
    header = (REPO / "examples" / "everything.yaml").read_text(encoding="utf-8")
    assert ".venv/bin/pip install mcp-server-time" in header
    assert "8010" in header


def test_quickstart_installs_the_openai_sdk_the_client_examples_need() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "openai>=1.40" in project["optional-dependencies"]["client"]
    assert not any(dep.startswith("openai") for dep in project["dependencies"])
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    quickstart = " ".join(quickstart.split())
    assert '.venv/bin/pip install -e ".[client]" && .venv/bin/toolwire serve' in quickstart
    assert "second terminal" in quickstart


# --- stdio MCP servers that do not start ----------------------------------------------------


BROKEN_MCP = (
    "upstreams: [{name: d, base_url: demo}]\ntools:\n"
    "  - {mcp: {command: [python, -m, no_such_module_xyz]}, namespace: time}\n"
    "  - {mcp: {command: [no-such-command-xyz, --stdio]}, namespace: other}\n"
)


def test_check_says_why_a_stdio_mcp_server_did_not_start(tmp_path: Path) -> None:
    config = write_config(tmp_path, BROKEN_MCP)
    result = toolwire_here("check", "--config", config)

    assert result.returncode == 1, result.stdout + result.stderr
    _, module, command, summary = result.stdout.splitlines()
    assert module.startswith(
        "error mcp:time: unreachable: python -m no_such_module_xyz exited before the MCP "
        "handshake; its stderr ends: "
    )
    assert module.endswith("No module named no_such_module_xyz")
    assert command == (
        "error mcp:other: unreachable: command not found: no-such-command-xyz "
        "(No such file or directory)"
    )
    assert summary == f"{config}: 0 tools from 2 sources"
    assert "Connection closed" not in result.stdout + result.stderr


def test_serve_says_why_a_stdio_mcp_server_did_not_start(tmp_path: Path) -> None:
    config = write_config(tmp_path, BROKEN_MCP.split("  - {mcp: {command: [no-such")[0])
    result = toolwire("serve", "--config", config, "--port", str(free_port()))

    assert_clean_failure(result, "error: MCP server time: python -m no_such_module_xyz exited")
    last = result.stderr.strip().splitlines()[-1]
    assert last.endswith("No module named no_such_module_xyz"), result.stderr


def test_readme_says_how_to_run_each_example() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    note = " ".join(readme.split("**The examples**", 1)[1].split("\n\n", 1)[0].split())
    for example in sorted((REPO / "examples").glob("*.*")):
        assert f"examples/{example.name}" in note
    assert ".venv/bin/pip install mcp-server-time" in note
    assert ".venv/bin/toolwire serve --config examples/everything.yaml" in note
