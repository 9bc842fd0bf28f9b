"""Fake llama.cpp, Ollama, vLLM and SGLang servers whose chat template shows `tools` to the
model, or accepts them and drops them without a word, for tests of how `auto` tells the two
apart.

Each renders a request's messages (and its tools, when its template has a tools section) into
a prompt, and says so where the real server does:

- `llama.cpp`: `GET /props` (the template and, for a build with `--jinja` whose template
  takes tools, `chat_template_caps` unless `capabilities=False` as in builds before them),
  `POST /apply-template`, `POST /tokenize`. Without `shows_tools` it is a build that ignores
  `tools` (no `--jinja`, from before llama.cpp refused them without it).
- `ollama`: `POST /api/show` (the template and, unless `capabilities=False` as before
  Ollama 0.6, the `capabilities` list).
- `vllm`: `GET /version`; `sglang`: `GET /get_model_info`.

All of them answer `/v1/chat/completions` with `usage.prompt_tokens` counted from the rendered
prompt. A one-token request (`max_tokens: 1`) is answered with one token and is recorded in
`probes`, not `requests`; other requests take the scripted turns in order: text, or a
`Native` call, which comes back as a native tool call when the template showed the tools.
With `refuses_tools`, a request with tools is refused with a 400 instead, as vLLM without
`--enable-auto-tool-choice` does.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import time
import uuid
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from aiohttp import web

Kind = Literal["llama.cpp", "ollama", "vllm", "sglang"]

_SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
# llama.cpp's built-in ChatML, as used without --jinja: nothing in it can show tools.
LEGACY_TEMPLATE = "chatml"
JINJA_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n# Tools\n{{ tools | tojson }}<|im_end|>\n{%- endif %}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}"
)
OLLAMA_TOOLS_TEMPLATE = (
    "{{- if .Tools }}<|im_start|>system\n{{ range .Tools }}{{ . }}\n{{ end }}<|im_end|>\n"
    "{{ end }}{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}"
)
OLLAMA_PLAIN_TEMPLATE = (
    "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}"
)


@dataclass(frozen=True)
class Native:
    """A scripted tool call, answered natively (as `tool_calls`) when the tools were shown."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


class TemplateServer:
    """One fake server of `kind`; `shows_tools` says whether its template renders `tools`."""

    def __init__(
        self,
        kind: Kind,
        *,
        shows_tools: bool,
        capabilities: bool = True,
        failing: str | None = None,
        refuses_tools: str | None = None,
    ) -> None:
        """`capabilities`: Ollama's /api/show and llama.cpp's /props list them; `failing`: a
        path answered 500;
        `refuses_tools`: a chat request with `tools` is answered 400 with this message."""
        self.kind, self.shows_tools = kind, shows_tools
        self.capabilities, self.failing = capabilities, failing
        self.refuses_tools = refuses_tools
        self.requests: list[dict[str, Any]] = []
        """Chat requests that took a scripted turn."""
        self.probes: list[dict[str, Any]] = []
        """One-token chat requests."""
        self.refused: list[dict[str, Any]] = []
        """Chat requests refused for their tools (`refuses_tools`)."""
        self.hits: Counter[str] = Counter()
        """Requests per path, every path."""
        self.base_url = ""
        self.hold: asyncio.Event | None = None
        """When set to an event, the server's own endpoints answer once it is set."""
        self.holding = asyncio.Event()
        """Set once a request waits for `hold`."""
        self._turns: deque[str | Native] = deque()
        self._last: str | Native = "(nothing scripted)"
        self._runner: web.ServerRunner | None = None

    def script(self, *turns: str | Native) -> None:
        """Queue the model's answers, one per chat request (then the last one again)."""
        self._turns.extend(turns)

    async def __aenter__(self) -> TemplateServer:
        server = web.Server(self._handle, handler_cancellation=True, access_log=None)
        self._runner = web.ServerRunner(server, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(self._runner, sock).start()
        host, port = sock.getsockname()[:2]
        self.base_url = f"http://{host}:{port}/v1"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def render(self, body: dict[str, Any]) -> str:
        """The prompt the server's template makes of a request."""
        parts = []
        tools = body.get("tools")
        if tools and self.shows_tools:
            parts.append(f"<|im_start|>system\n# Tools\n{json.dumps(tools)}<|im_end|>")
        for message in body.get("messages") or []:
            parts.append(f"<|im_start|>{message.get('role')}\n{_text(message)}<|im_end|>")
        return "\n".join([*parts, "<|im_start|>assistant\n"])

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        self.hits[path] += 1
        if path == self.failing:
            return _error(500, "internal server error")
        body: Any = None
        if request.method == "POST":
            try:
                body = orjson.loads(await request.read())
            except orjson.JSONDecodeError:
                return _error(400, "request body is not valid JSON")
            if not isinstance(body, dict):
                return _error(400, "request body must be a JSON object")
        route = (request.method, path)
        if route == ("GET", "/v1/models"):
            return _json({"object": "list", "data": [{"id": "local-model", "object": "model"}]})
        if route == ("POST", "/v1/chat/completions"):
            return await self._complete(request, body)
        answer = self._document(route, body)
        if answer is None:
            return _error(404, f"File Not Found: {request.method} {path}")
        if self.hold is not None:
            self.holding.set()
            await self.hold.wait()
        return _json(answer)

    def _document(self, route: tuple[str, str], body: Any) -> dict[str, Any] | None:
        """What the server's own endpoints answer; None where it has no such endpoint."""
        if self.kind == "llama.cpp":
            if route == ("GET", "/props"):
                return self._props()
            if route == ("POST", "/apply-template"):
                return {"prompt": self.render(body)}
            if route == ("POST", "/tokenize"):
                return {"tokens": list(range(_count(str(body.get("content") or ""))))}
        if self.kind == "ollama" and route == ("POST", "/api/show"):
            return self._shown()
        if self.kind == "vllm" and route == ("GET", "/version"):
            return {"version": "0.33.0"}
        if self.kind == "sglang" and route == ("GET", "/get_model_info"):
            return {"model_path": "org/local-model", "is_generation": True}
        return None

    def _props(self) -> dict[str, Any]:
        props: dict[str, Any] = {
            "default_generation_settings": {"n_ctx": 4096, "params": {}},
            "total_slots": 1,
            "model_path": "models/local-model.gguf",
            "chat_template": JINJA_TEMPLATE if self.shows_tools else LEGACY_TEMPLATE,
            "build_info": "b4500-fake",
        }
        if self.capabilities and self.shows_tools:
            props["chat_template_caps"] = {"supports_tools": True, "supports_tool_calls": True}
        return props

    def _shown(self) -> dict[str, Any]:
        template = OLLAMA_TOOLS_TEMPLATE if self.shows_tools else OLLAMA_PLAIN_TEMPLATE
        shown: dict[str, Any] = {
            "modelfile": f'FROM local-model\nTEMPLATE """{template}"""',
            "template": template,
            "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7B"},
        }
        if self.capabilities:
            shown["capabilities"] = ["completion", "tools"] if self.shows_tools else ["completion"]
        return shown

    async def _complete(self, request: web.BaseRequest, body: dict[str, Any]) -> web.StreamResponse:
        if self.refuses_tools and body.get("tools"):
            self.refused.append(body)
            return _error(400, self.refuses_tools)
        prompt_tokens = _count(self.render(body))
        if body.get("max_tokens") == 1 or body.get("max_completion_tokens") == 1:
            self.probes.append(body)
            reply = _Reply(body, "Hi", None, prompt_tokens, "length")
            return _json(reply.completion())
        self.requests.append(body)
        turn = self._turns.popleft() if self._turns else self._last
        self._last = turn
        if isinstance(turn, Native):
            if body.get("tools") and self.shows_tools:
                reply = _Reply(body, None, turn, prompt_tokens, "tool_calls")
            else:
                reply = _Reply(body, f"I cannot call {turn.name} here.", None, prompt_tokens)
        else:
            reply = _Reply(body, turn, None, prompt_tokens)
        if not body.get("stream"):
            return _json(reply.completion())
        response = web.StreamResponse(headers=_SSE_HEADERS)
        await response.prepare(request)
        for chunk in reply.chunks():
            await response.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
            await asyncio.sleep(0)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


class _Reply:
    """One answer rendered as a completion or as chunks."""

    def __init__(
        self,
        body: dict[str, Any],
        text: str | None,
        call: Native | None,
        prompt_tokens: int,
        finish_reason: str = "stop",
    ) -> None:
        self.body, self.text, self.call = body, text, call
        self.prompt_tokens, self.finish_reason = prompt_tokens, finish_reason
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())

    def completion(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.call is not None:
            message["tool_calls"] = [self._call()]
        choice = {"index": 0, "message": message, "finish_reason": self.finish_reason}
        return self._envelope("chat.completion", choices=[choice], usage=self._usage())

    def chunks(self) -> Iterator[dict[str, Any]]:
        yield self._chunk({"role": "assistant", "content": ""})
        text = self.text or ""
        for start in range(0, len(text), 4):
            yield self._chunk({"content": text[start : start + 4]})
        if self.call is not None:
            yield self._chunk({"tool_calls": [{"index": 0, **self._call()}]})
        yield self._chunk({}, self.finish_reason)
        options = self.body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            yield self._envelope("chat.completion.chunk", choices=[], usage=self._usage())

    def _call(self) -> dict[str, Any]:
        assert self.call is not None
        arguments = json.dumps(self.call.arguments)
        function = {"name": self.call.name, "arguments": arguments}
        return {"id": f"call_{uuid.uuid4().hex[:8]}", "type": "function", "function": function}

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return self._envelope("chat.completion.chunk", choices=[choice])

    def _usage(self) -> dict[str, int]:
        completion = max(1, _count(self.text or ""))
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion,
        }

    def _envelope(self, kind: str, **fields: Any) -> dict[str, Any]:
        model = self.body.get("model") or "local-model"
        return {"id": self.id, "object": kind, "created": self.created, "model": model, **fields}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _count(text: str) -> int:
    """Tokens, roughly: words and single punctuation marks."""
    return len(re.findall(r"\w+|[^\w\s]", text))


def _json(body: dict[str, Any], status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def _error(status: int, message: str) -> web.Response:
    return _json({"error": {"message": message, "type": "server_error", "code": status}}, status)
