"""A response's renderers: `ResponseStream` sends its builder's events as SSE, `ResponseJson`
only the final object, so a streamed response and its completed object always agree.
"""

from __future__ import annotations

from ...turn.events import Finished, LoopEvent
from ..renderers import BuilderStream
from .builder import ResponseBuilder, Stored


class ResponseStream(BuilderStream[LoopEvent | Stored]):
    """`BuilderStream` of a response: its opening frames are the builder's `opening`."""

    __slots__ = ()

    def __init__(self, builder: ResponseBuilder) -> None:
        self._builder = builder
        self._start = builder.opening()

    def frames(self, event: LoopEvent | Stored) -> list[bytes]:
        if event.__class__ is Finished:  # a plain text's end: its frames from a template
            frames = self._builder.finish_frames(event)  # type: ignore[attr-defined, arg-type]
            if frames is not None:
                return [frames] if frames else []
        elif event.__class__ is Stored:
            frames = self._builder.stored_frames()  # type: ignore[attr-defined]
            if frames is not None:
                return [frames]
        return BuilderStream.frames(self, event)


class ResponseJson:
    """Folds a turn's events into the final object of a quiet builder whose `start` was
    taken; its body is the builder's (serialized once, for the store too)."""

    __slots__ = ("_builder",)

    def __init__(self, builder: ResponseBuilder) -> None:
        self._builder = builder

    def feed(self, event: LoopEvent | Stored) -> None:
        self._builder.feed(event)

    def encoded(self) -> bytes:
        """The whole response, serialised.

        Raises:
            RuntimeError: the turn's end was never fed.
        """
        if self._builder.final() is None:
            raise RuntimeError("the turn ended without a Finished event")
        return self._builder.body()
