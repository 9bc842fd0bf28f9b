"""llm-rosetta at the adapters' edge: a Chat body to a provider's, a provider's answer back.

Rosetta reports dropped parameters as Python warnings, and raises its own or builtin errors
on input it cannot read; both are handled here, in the one module that calls it.
"""

from __future__ import annotations

import functools
import logging
import warnings
from typing import Any

from llm_rosetta import ConversionPipeline, get_converter_for_provider

from ..errors import BadRequestError
from .base import Chunk, Fault

log = logging.getLogger("toolwire.upstream")


@functools.cache
def _without_self_checks(*providers: str) -> None:
    """Turn off rosetta's re-validation of its own intermediate form in the converters its
    pipelines share: the input is the loop's own Chat body, and the check cost 2-3x the
    rest of a conversion (measured: anthropic 5.9 -> 1.8 ms, 10 messages and 10 tools)."""
    for provider in providers:
        get_converter_for_provider(provider).validate_output = False


class Conversion:
    """One request's conversion to `target` and its answer's conversion back to Chat."""

    def __init__(self, chat: dict[str, Any], target: str, upstream: str) -> None:
        """Convert `chat`; the provider body is `self.body`.

        Raises:
            BadRequestError: rosetta cannot convert the request.
        """
        _without_self_checks("openai_chat", target)
        self._pipeline = ConversionPipeline("openai_chat", target)
        self._upstream = upstream
        with warnings.catch_warnings(record=True) as dropped:
            warnings.simplefilter("always")
            try:
                self.body: dict[str, Any] = self._pipeline.convert_request(chat)
            except Exception as exc:  # rosetta's ConversionError and what its validators raise
                message = f"the request cannot be converted for upstream {upstream!r}: {exc}"
                raise BadRequestError(message) from exc
        for warning in dropped:
            log.debug("upstream %s: %s", upstream, warning.message)

    def stream(self) -> Any:
        """A fresh stream processor: its `process_chunk(event)` gives Chat chunks."""
        return self._pipeline.create_stream_processor()

    def chunks(self, processor: Any, event: dict[str, Any]) -> list[Chunk]:
        """The Chat chunks of one provider stream event.

        Raises:
            Fault: rosetta cannot read the event.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return list(processor.process_chunk(event))
            except Exception as exc:  # rosetta's own errors and builtin ones alike
                message = f"an event of upstream {self._upstream!r} is unusable: {exc}"
                raise Fault(message) from exc

    def answer(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The `chat.completion` of a whole provider answer.

        Raises:
            Fault: rosetta cannot read the answer.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return dict(self._pipeline.convert_response(payload))
            except Exception as exc:  # rosetta's own errors and builtin ones alike
                raise Fault(
                    f"the answer of upstream {self._upstream!r} is unusable: {exc}"
                ) from exc
