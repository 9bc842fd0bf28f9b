"""One upstream adapter for every wire format: a dialect says what the formats differ in.

Every provider call is the same recipe: the loop's Chat body becomes the provider's request,
headers carry the key, the transport POSTs it, and a codec reads the answer back as Chat
chunks. `ProviderUpstream` runs that recipe once; each wire format (openai_chat,
openai_responses, anthropic, gemini) is a `Dialect`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .base import Chunk, Codec
from .exchange import Exchange
from .transport import Transport


@dataclass(slots=True)
class Request:
    """One completion as the provider takes it.

    A plain dataclass, as one is made per request: a frozen one sets each field through
    `object.__setattr__`, a named tuple is built by a generated `__new__`; both cost more.
    """

    url: str
    payload: dict[str, Any]
    stream: bool
    codec: Callable[[], Codec]
    """Makes the codec that reads the answer (a fresh one for each response)."""


class Dialect(Protocol):
    """What one wire format says: where and how a completion is sent, and how it is read."""

    models_url: str
    """Where the model list is (`GET`)."""

    def request(self, body: dict[str, Any]) -> Request:
        """The provider's request for a Chat body.

        Raises:
            BadRequestError: the body cannot be converted.
        """
        ...

    def headers(self, incoming: Mapping[str, str] | None) -> tuple[dict[str, str], str]:
        """The headers to send, given the request's own (None when there is no request), and
        the secret among them (never shown in an error)."""
        ...

    def models(self, payload: Any) -> list[str]:
        """The model ids of the model list's answer (None lists nothing).

        Raises:
            UpstreamError: the payload is not a model list.
        """
        ...


class ProviderUpstream:
    """An `Upstream` speaking `dialect` over `transport`."""

    def __init__(self, transport: Transport, dialect: Dialect) -> None:
        self.name = transport.name
        self._transport = transport
        self._dialect = dialect

    def complete(
        self,
        body: dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> Exchange:
        """Send the body as the dialect's request; yield the answer as Chat chunks.

        Raises:
            BadRequestError: the body cannot be converted.
            UpstreamError, UpstreamTimeoutError, UpstreamStatusError: as `Transport.exchange`.
        """
        request = self._dialect.request(body)
        sent, credential = self._dialect.headers(headers)
        return self._transport.exchange(
            request.url,
            request.payload,
            sent,
            stream=request.stream,
            codec=request.codec,
            credential=credential,
            deadline=deadline,
        )

    def answer(
        self,
        body: dict[str, Any],
        headers: Mapping[str, str] | None = None,
        deadline: float | None = None,
    ) -> Coroutine[Any, Any, list[Chunk]]:
        """An unstreamed completion's Chat chunks (see `Upstream.answer`): the transport's
        coroutine, this no layer of its own.

        Raises:
            BadRequestError: the body cannot be converted (here, not when awaited).
            UpstreamError, UpstreamTimeoutError, UpstreamStatusError: as `Transport.exchange`.
        """
        request = self._dialect.request(body)
        sent, credential = self._dialect.headers(headers)
        # By position: a call with keywords is not specialized (Python 3.11).
        return self._transport.answer(
            request.url, request.payload, sent, request.codec, credential, deadline
        )

    async def list_models(self) -> list[str]:
        """Ask the server's model list.

        Raises:
            UpstreamError: the server is unreachable, answered an error status, or
                something that is not a model list.
        """
        sent, _ = self._dialect.headers(None)
        payload = await self._transport.get_json(self._dialect.models_url, sent)
        return self._dialect.models(payload)

    async def aclose(self) -> None:
        await self._transport.aclose()
