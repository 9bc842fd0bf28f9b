"""Whether an upstream accepts `tools` for a model and silently drops them, found once per model.

Some servers answer 200 to a request with `tools` without ever showing them to the model:
llama.cpp without `--jinja` (old builds ignore them whatever the flags), an Ollama model whose
template has no tools section, a vLLM or SGLang model whose chat template ignores them. The
signs, the first that answers:

- Ollama, `POST /api/show`: the model's `capabilities` (with or without "tools"), else its
  template (whether it renders `.Tools`).
- llama.cpp, `GET /props`: `chat_template_caps.supports_tools` when true; else llama.cpp's own
  rendering, `POST /apply-template` with and without the tools (the same prompt: dropped).
- A server known to render chat templates (llama.cpp, Ollama, vLLM's `GET /version`, SGLang's
  `GET /get_model_info`): `usage.prompt_tokens` of a one-token completion with and without
  the tools (the same count: dropped).

Nothing else is a sign: a server none of these recognise (a hosted API) is never sent a
completion of its own, and a model without a sign stays native.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

from ...config import UpstreamConfig
from ...errors import ProxyError, UpstreamError, UpstreamStatusError, UpstreamTimeoutError
from ..base import Chunk
from ..openai_chat import bearer
from ..transport import Transport

__all__ = ["DETECT_TIMEOUT_S", "DroppedTools", "Finding", "ServerProbe", "ToolsProbe", "probe_for"]

log = logging.getLogger("toolwire.emulation")

DETECT_TIMEOUT_S = 15.0
"""The longest the first request for a model waits for the signs (then it goes native)."""
_REMEMBERED = 1024
"""Models whose finding is kept (then the memory starts over)."""
PROBE_MESSAGES = [{"role": "user", "content": "Hello"}]
"""The conversation the prompts are rendered for: the tools are the only difference."""


@dataclass(frozen=True, slots=True)
class Finding:
    """What a server showed about whether a model's tools reach it."""

    drops: bool | None
    """True: the tools never reach the model; False: they do; None: no sign either way."""
    why: str
    """The sign, in words, for the log."""


class ToolsProbe(Protocol):
    """Looks at a server for signs that it drops a model's `tools` (one look, no memory)."""

    async def look(
        self, model: str, tools: list[Any], headers: Mapping[str, str] | None
    ) -> Finding:
        """The finding for `model` with these `tools`.

        Raises:
            ProxyError: a request of the look failed (unreachable, an error status, a stall).
        """
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class DroppedTools:
    """Whether each model of one upstream drops `tools`: looked for once per model, never twice
    at once for the same model, within `timeout_s`; a look that fails counts as native."""

    def __init__(
        self, name: str, probe: ToolsProbe, *, timeout_s: float = DETECT_TIMEOUT_S
    ) -> None:
        self._name, self._probe, self._timeout_s = name, probe, timeout_s
        self._known: dict[str, bool] = {}
        self._looking: dict[str, asyncio.Lock] = {}

    async def drops(
        self, model: str, tools: list[Any], headers: Mapping[str, str] | None = None
    ) -> bool:
        """Whether `model` drops tools; the first caller looks (the others wait for it)."""
        known = self._known.get(model)
        if known is not None:
            return known
        lock = self._looking.setdefault(model, asyncio.Lock())
        async with lock:
            known = self._known.get(model)
            if known is None:
                known = await self._look(model, tools, headers)
                if len(self._known) >= _REMEMBERED:
                    self._known.clear()
                self._known[model] = known
        # Kept while unanswered: a look cancelled with its request is taken up by the next.
        self._looking.pop(model, None)
        return known

    async def aclose(self) -> None:
        """Close the probe's connections."""
        await self._probe.aclose()

    async def _look(self, model: str, tools: list[Any], headers: Mapping[str, str] | None) -> bool:
        name = self._name
        try:
            async with asyncio.timeout(self._timeout_s):
                finding = await self._probe.look(model, tools, headers)
        except (TimeoutError, UpstreamTimeoutError):
            log.warning(
                "upstream %r: no sign whether model %r drops tools within %g s; "
                "calling it natively",
                name,
                model,
                self._timeout_s,
            )
            return False
        except ProxyError as exc:
            log.warning(
                "upstream %r: could not tell whether model %r drops tools (%s); "
                "calling it natively",
                name,
                model,
                exc.message[:200],
            )
            return False
        if finding.drops:
            log.warning(
                "upstream %r drops tools for model %r (%s); emulating from now on",
                name,
                model,
                finding.why,
            )
        elif finding.drops is None:
            log.info(
                "upstream %r: no sign whether model %r drops tools (%s); calling it natively",
                name,
                model,
                finding.why,
            )
        else:
            log.info("upstream %r keeps tools for model %r (%s)", name, model, finding.why)
        return bool(finding.drops)


class ServerProbe:
    """Looks for the signs on an OpenAI-compatible server (llama.cpp, Ollama, vLLM, SGLang)."""

    def __init__(self, config: UpstreamConfig) -> None:
        self._api_key = config.api_key
        self._base = config.base_url.rstrip("/")
        self._root = self._base.removesuffix("/v1")
        # Its own pool, opened on the first look: most models are looked at once.
        self._transport = Transport(config)

    async def look(
        self, model: str, tools: list[Any], headers: Mapping[str, str] | None
    ) -> Finding:
        """The first sign of Ollama's, then llama.cpp's, then vLLM's or SGLang's.

        Raises:
            ProxyError: a request failed other than by its endpoint being absent.
        """
        sent, credential = bearer(self._api_key, headers)
        server = _Server(self._transport, sent, credential, self._root, self._base)
        looks: tuple[Callable[[str, list[Any]], Awaitable[Finding | None]], ...] = (
            server.ollama,
            server.llama_cpp,
            server.vllm_or_sglang,
        )
        for look in looks:
            finding = await look(model, tools)
            if finding is not None:
                return finding
        return Finding(None, "not llama.cpp, Ollama, vLLM or SGLang, by their endpoints")

    async def aclose(self) -> None:
        """Close the probe's connections."""
        await self._transport.aclose()


def probe_for(config: UpstreamConfig) -> ServerProbe | None:
    """A probe of the upstream's server when one of its modes is `auto` and it speaks Chat
    (where llama.cpp, Ollama, vLLM and SGLang are); else None."""
    modes = {config.tool_calling, *config.models_tool_calling.values()}
    if "auto" not in modes or config.format != "openai-chat" or config.base_url == "demo":
        return None
    return ServerProbe(config)


class _Server:
    """One look's requests to one server: its documents, its renderings, its token counts."""

    def __init__(
        self, transport: Transport, headers: dict[str, str], credential: str, root: str, base: str
    ) -> None:
        self._transport, self._headers, self._credential = transport, headers, credential
        self._root, self._base = root, base

    async def ollama(self, model: str, tools: list[Any]) -> Finding | None:
        shown = await self._post(f"{self._root}/api/show", {"model": model}, absent_ok=True)
        if shown is None or not shown.keys() & {"capabilities", "template", "modelfile"}:
            return None
        capabilities = shown.get("capabilities")
        if isinstance(capabilities, list):
            if "tools" in capabilities:
                return Finding(False, "Ollama's /api/show lists the 'tools' capability")
            listed = ", ".join(str(c) for c in capabilities) or "none"
            return Finding(True, f"Ollama's /api/show lists no 'tools' capability ({listed})")
        template = shown.get("template")
        if isinstance(template, str) and template:
            if ".Tools" in template:
                return Finding(False, "its Ollama template renders .Tools")
            return Finding(True, "its Ollama template (/api/show) has no tools section")
        return await self._counted("Ollama", model, tools)

    async def llama_cpp(self, model: str, tools: list[Any]) -> Finding | None:
        # `model` picks the model of a llama.cpp router; a single-model server ignores it.
        props = await self._get(f"{self._root}/props?{urlencode({'model': model})}")
        if props is None or not props.keys() & {"chat_template", "default_generation_settings"}:
            return None
        caps = props.get("chat_template_caps")
        if isinstance(caps, dict) and caps.get("supports_tools") is True:
            return Finding(False, "llama.cpp's /props: the chat template supports tools")
        # Without that, llama.cpp may still show the tools (its generic tool prompt), or drop
        # them (no --jinja): its own rendering says which.
        url = f"{self._root}/apply-template"
        request = {"model": model, "messages": PROBE_MESSAGES}
        with_tools = await self._post(url, {**request, "tools": tools}, absent_ok=True)
        without = await self._post(url, request, absent_ok=True) if with_tools else None
        if with_tools and without:
            shown, plain = with_tools.get("prompt"), without.get("prompt")
            if isinstance(shown, str) and isinstance(plain, str):
                if shown == plain:
                    return Finding(True, "llama.cpp renders the same prompt with and without them")
                return Finding(False, "llama.cpp renders them into the prompt (/apply-template)")
        return await self._counted("llama.cpp", model, tools)

    async def vllm_or_sglang(self, model: str, tools: list[Any]) -> Finding | None:
        version = await self._get(f"{self._root}/version")
        if version is not None and isinstance(version.get("version"), str):
            return await self._counted(f"vLLM {version['version']}", model, tools)
        info = await self._get(f"{self._root}/get_model_info")
        if info is not None and "model_path" in info:
            return await self._counted("SGLang", model, tools)
        return None

    async def _counted(self, server: str, model: str, tools: list[Any]) -> Finding:
        """The prompt's token count with and without the tools, from one-token completions."""
        url = f"{self._base}/chat/completions"
        request = {"model": model, "messages": PROBE_MESSAGES, "max_tokens": 1, "stream": False}
        try:
            shown = _prompt_tokens(await self._post(url, {**request, "tools": tools}))
        except UpstreamStatusError as exc:
            # Refused outright (vLLM without --enable-auto-tool-choice): not dropped, and the
            # request's own refusal switches the model.
            return Finding(None, f"{server} refuses them: {exc.message[:200]}")
        plain = _prompt_tokens(await self._post(url, request)) if shown is not None else None
        if shown is None or plain is None:
            return Finding(None, f"{server} reports no usage.prompt_tokens")
        if shown == plain:
            return Finding(True, f"{server} counts {plain} prompt tokens with and without them")
        return Finding(False, f"{server} counts {shown} prompt tokens with them, {plain} without")

    async def _post(
        self, url: str, payload: dict[str, Any], *, absent_ok: bool = False
    ) -> dict[str, Any] | None:
        """The JSON object answered; None for an answer that is not one, or (`absent_ok`) a
        4xx, the status of an endpoint this server does not have or refuses.

        Raises:
            ProxyError: the request failed.
        """
        exchange = self._transport.exchange(
            url,
            payload,
            self._headers,
            stream=False,
            codec=_Document,
            credential=self._credential,
        )
        try:
            async with exchange as answer:
                documents = [document async for document in answer]
        except UpstreamStatusError:
            if absent_ok:
                return None
            raise
        return documents[0] if documents else None

    async def _get(self, url: str) -> dict[str, Any] | None:
        """The JSON object at `url`; None when there is none (an error status, not JSON).

        Raises:
            UpstreamTimeoutError: no answer in time.
        """
        try:
            document = await self._transport.get_json(url, self._headers)
        except UpstreamTimeoutError:
            raise
        except UpstreamError:
            # Unreachable too: the look's POSTs say so, this only says "not this server".
            return None
        return document if isinstance(document, dict) else None


class _Document:
    """A codec that hands the answer's JSON object over as it is."""

    finished = True

    def event(self, payload: dict[str, Any]) -> list[Chunk]:
        return [payload]

    def whole(self, payload: Any) -> list[Chunk]:
        return [payload] if isinstance(payload, dict) else []


def _prompt_tokens(answer: dict[str, Any] | None) -> int | None:
    usage = answer.get("usage") if answer is not None else None
    count = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else None
