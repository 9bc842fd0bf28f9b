"""What a new user trips over in the first hour, as they meet it: a model server that is not
up yet, an SDK's base URL with `/v1` missing or doubled, a model name that nothing serves, a
port that is taken."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
import yaml

from testing.asgi_serving import STARTUP_S
from testing.ports import free_port
from testing.upstream import FakeUpstream, Reply
from tests.conftest import REPO, serve_proxy

TOOLWIRE = [sys.executable, "-m", "proxy"]
USER: Any = [{"role": "user", "content": "What is the weather in Paris?"}]


def _environ() -> dict[str, str]:
    """The user's environment without the variables proxy.yaml reads."""
    hidden = {"TOOLWIRE_UPSTREAM_URL", "UPSTREAM_API_KEY", "TOOLWIRE_CONFIG"}
    return {k: v for k, v in os.environ.items() if k not in hidden}


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A loopback port that is bound but not listening: connections to it are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def _http(url: str, method: str = "GET") -> tuple[int, Any]:
    request = urllib.request.Request(url, method=method, headers={"accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@contextlib.contextmanager
def toolwire_serve(config: Path, log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`toolwire serve --config CONFIG` on a free port, its stderr in `log`; yields its root
    URL once `/healthz` answers."""
    port = free_port()
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [*TOOLWIRE, "serve", "--config", str(config), "--port", str(port)],
            cwd=REPO,
            env=_environ(),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            with contextlib.suppress(OSError):
                if _http(f"{root}/healthz")[0] == 200:
                    break
            time.sleep(0.05)
        yield root, process
    finally:
        process.kill()
        process.wait(10)


def test_a_user_on_the_default_config_with_a_model_server_not_up_yet(tmp_path: Path) -> None:
    """The repository's proxy.yaml (its demo upstream) with a second upstream that is down."""
    config = yaml.safe_load((REPO / "proxy.yaml").read_text(encoding="utf-8"))
    config["tools"][0]["python"] = (REPO / "examples" / "tools.py").as_posix()
    with refused_port() as port:
        down = {"name": "vllm", "base_url": f"http://127.0.0.1:{port}/v1", "models": ["qwen*"]}
        config["upstreams"].append(down)
        (tmp_path / "proxy.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        log = tmp_path / "stderr.log"
        with toolwire_serve(tmp_path / "proxy.yaml", log) as (root, _):
            why = f"cannot connect to 127.0.0.1:{port} (connection refused)"
            # Start-up says so, before it says it is ready, and serves anyway.
            text = log.read_text()
            warning = f"WARNING toolwire [-]: upstream 'vllm' is unreachable: {why}; serving"
            assert warning in text, text
            assert text.index(warning) < text.index("toolwire ready")

            # /readyz: ready (the demo answers), and names the one that does not.
            status, ready = _http(f"{root}/readyz")
            assert (status, ready["status"]) == (200, "ready")
            assert ready["upstreams"] == [
                {"name": "default", "address": "demo", "reachable": True, "error": None},
                {
                    "name": "vllm",
                    "address": f"127.0.0.1:{port}",
                    "reachable": False,
                    "error": why,
                },
            ]
            # /v1/models: what could be listed, and which upstream could not be, and why.
            status, models = _http(f"{root}/v1/models")
            assert status == 200
            assert [m["id"] for m in models["data"]] == ["toolwire-demo"]
            [unlisted] = models["toolwire"]["unlisted"]
            assert unlisted["upstream"] == "vllm" and why in unlisted["error"]

            _sdks_with_the_right_and_wrong_base_urls(root)

            # GET /: what this is and where to go, for a person or a script.
            status, index = _http(f"{root}/")
            assert status == 200 and index["name"] == "Toolwire" and index["version"]
            assert index["openai_base_url"] == f"{root}/v1"
            assert index["anthropic_base_url"] == root
            assert index["admin_panel"] == f"{root}/admin/"
            paths = [route["path"] for route in index["routes"]]
            assert {"/v1/chat/completions", "/v1/messages", "/v1/models", "/mcp"} <= set(paths)


def _sdks_with_the_right_and_wrong_base_urls(root: str) -> None:
    right = openai.OpenAI(base_url=f"{root}/v1", api_key="unused", max_retries=0)
    wrong = openai.OpenAI(base_url=root, api_key="unused", max_retries=0)
    doubled = anthropic.Anthropic(base_url=f"{root}/v1", api_key="unused", max_retries=0)
    with right, wrong, doubled:
        # The quickstart's model answers; a typo is a 404 that says what is served.
        answer = right.chat.completions.create(model="toolwire-demo", messages=USER)
        assert "Paris" in (answer.choices[0].message.content or "")
        with pytest.raises(openai.NotFoundError) as typo:
            right.chat.completions.create(model="gpt-4o", messages=USER)
        assert _message(typo.value) == (
            "the model 'gpt-4o' does not exist; served here: toolwire-demo (upstream "
            "'default'); qwen* (upstream 'vllm')"
        )
        assert typo.value.code == "model_not_found"
        with pytest.raises(openai.APIStatusError) as down:
            right.chat.completions.create(model="qwen-7b", messages=USER)
        assert down.value.status_code == 502
        assert "upstream 'vllm' is unreachable" in _message(down.value)

        # The OpenAI SDK without /v1 in its base_url.
        hint = "The OpenAI SDK's base_url ends in /v1: use " + f"{root}/v1"
        calls = {
            "/v1/chat/completions": lambda: wrong.chat.completions.create(
                model="toolwire-demo", messages=USER
            ),
            "/v1/responses": lambda: wrong.responses.create(model="toolwire-demo", input="hi"),
            "/v1/models": lambda: wrong.models.list(),
        }
        for meant, call in calls.items():
            with pytest.raises(openai.NotFoundError) as missing:
                call()
            assert f"did you mean {meant}? {hint}" in _message(missing.value), meant

        # The Anthropic SDK with /v1 in its base_url: told in Anthropic's own error shape.
        with pytest.raises(anthropic.NotFoundError) as twice:
            doubled.messages.create(model="toolwire-demo", max_tokens=64, messages=USER)
        body = twice.value.body
        assert isinstance(body, dict) and body["type"] == "error", body
        assert body["error"]["type"] == "not_found_error"
        assert body["error"]["message"] == (
            "no route POST /v1/v1/messages; did you mean /v1/messages? The Anthropic SDK's "
            f"base_url has no /v1: use {root}"
        )


def _message(error: openai.APIStatusError) -> str:
    """The error body's message, as the server wrote it (the SDK prefixes its own)."""
    assert isinstance(error.body, dict), error.body
    return str(error.body["message"])


async def test_with_every_upstream_down_nothing_claims_to_be_ready() -> None:
    with refused_port() as port:
        config = {"upstreams": [{"name": "vllm", "base_url": f"http://127.0.0.1:{port}/v1"}]}
        async with serve_proxy(config) as proxy:
            root = proxy.base_url.removesuffix("/v1")
            why = f"cannot connect to 127.0.0.1:{port} (connection refused)"
            status, ready = await _get(f"{root}/readyz")
            assert (status, ready["status"]) == (503, "upstreams unreachable")
            assert ready["upstreams"][0] == {
                "name": "vllm",
                "address": f"127.0.0.1:{port}",
                "reachable": False,
                "error": why,
            }
            assert ready["tools"] == 0 and ready["sources"] == []
            with pytest.raises(openai.APIStatusError) as listing:
                await proxy.client.models.list()
            assert listing.value.status_code == 502
            assert _message(listing.value) == (
                f"cannot list models: upstream 'vllm' is unreachable: {why}"
            )


async def test_a_404_names_what_an_upstream_lists_within_its_globs() -> None:
    served = ["qwen2.5-7b", "qwen2.5-72b", "llama-3"]
    async with FakeUpstream(Reply.text("hi"), models=served) as fake:
        config = {"upstreams": [{"name": "vllm", "base_url": fake.base_url, "models": ["qwen*"]}]}
        async with serve_proxy(config) as proxy:
            with pytest.raises(openai.NotFoundError) as before:
                await proxy.client.chat.completions.create(model="llama-3", messages=USER)
            assert _message(before.value).endswith("served here: qwen* (upstream 'vllm')")
            # The server lists llama-3 too, but no request for it would reach it.
            listed = [m.id async for m in proxy.client.models.list()]
            assert listed == ["qwen2.5-7b", "qwen2.5-72b"]
            with pytest.raises(openai.NotFoundError) as after:
                await proxy.client.chat.completions.create(model="llama-3", messages=USER)
            assert _message(after.value).endswith(
                "served here: qwen* (upstream 'vllm', which lists qwen2.5-7b, qwen2.5-72b)"
            )


async def _get(url: str) -> tuple[int, Any]:
    return await asyncio.to_thread(_http, url)


async def test_with_keys_the_index_is_open_and_a_wrong_base_url_is_said_before_the_key() -> None:
    config = {
        "upstreams": [{"name": "demo", "base_url": "demo"}],
        "auth": {"master_key": "master-key-0001"},
    }
    async with serve_proxy(config) as proxy:
        root = proxy.base_url.removesuffix("/v1")
        status, index = await _get(f"{root}/")
        assert status == 200 and index["openai_base_url"] == proxy.base_url
        async with openai.AsyncOpenAI(base_url=root, api_key="wrong", max_retries=0) as wrong:
            with pytest.raises(openai.NotFoundError) as missing:
                await wrong.chat.completions.create(model="toolwire-demo", messages=USER)
        assert "did you mean /v1/chat/completions?" in _message(missing.value)
        doubled = anthropic.AsyncAnthropic(base_url=proxy.base_url, api_key="no", max_retries=0)
        async with doubled:
            with pytest.raises(anthropic.NotFoundError) as twice:
                await doubled.messages.create(model="toolwire-demo", max_tokens=9, messages=USER)
        assert "The Anthropic SDK's base_url has no /v1" in str(twice.value.body)
        # Elsewhere the key is checked first, as before.
        with pytest.raises(openai.AuthenticationError):
            await proxy.client.models.list()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_taken_port_is_said_first_and_alone(workers: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*TOOLWIRE, "serve", "--port", str(port), "--workers", workers],
            cwd=REPO,
            env=_environ(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1, result
    assert result.stderr == (
        f"error: port {port} is in use: stop what runs there or pass --port (or set server.port)\n"
    )
