"""What a front's renderer is, and the two that serve every front built on a builder.

A turn is answered as an event stream or as one JSON body: a `StreamRenderer` or a
`JsonRenderer` turns its events into the front's wire format. A front whose stream events
and final object come from one `Builder` (Responses, Messages) is served by `BuilderStream`
and `BuilderJson`, so its streamed answer and its JSON body always agree. Chat implements
the two renderers itself: its stream frames are encoded straight from the events (one cached
head per response), and its body needs none of a builder's stream events.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

import orjson

from .. import sse
from ..errors import ProxyError
from ..turn.events import ContentDelta, ToolsStarted

Event = dict[str, Any]
"""One stream event of a front's wire format, as its builder makes it."""

E = TypeVar("E")
E_contra = TypeVar("E_contra", contravariant=True)


class StreamRenderer(Protocol[E_contra]):
    """Renders a turn's events as the frames of one event stream."""

    def start(self) -> bytes:
        """The frames that open the stream."""
        ...

    def frames(self, event: E_contra) -> list[bytes]:
        """The frames for one event (possibly none)."""
        ...

    def error(self, exc: ProxyError) -> list[bytes]:
        """The frames that end a stream that failed after its first byte."""
        ...


class JsonRenderer(Protocol[E_contra]):
    """Folds a turn's events into one JSON body."""

    def feed(self, event: E_contra) -> None: ...

    def encoded(self) -> bytes:
        """The body, serialised."""
        ...


class Builder(Protocol[E_contra]):
    """Folds a turn's events into a front's stream events and its final object."""

    def start(self) -> list[Event]:
        """The events that open the answer."""
        ...

    def feed(self, event: E_contra) -> list[Event]:
        """The events one turn event makes (possibly none)."""
        ...

    def fail(self, exc: ProxyError) -> list[Event]:
        """The events that end an answer that failed after it started."""
        ...

    def final(self) -> dict[str, Any] | None:
        """The finished object; None until the turn's end was fed."""
        ...

    def text_frame(self, delta: ContentDelta) -> bytes | None:
        """The SSE frame `feed` and `sse.event` make of a delta of the open text alone, made
        without the event (None for any other delta: `feed` takes it)."""
        ...


class BuilderStream(Generic[E]):
    """Sends a builder's events as SSE, each with an `event:` line naming its type."""

    __slots__ = ("_builder", "_start")

    def __init__(self, builder: Builder[E]) -> None:
        self._builder = builder
        # Made now: the stream's first events are numbered before it is started.
        self._start = b"".join(sse.event(e["type"], e) for e in builder.start())

    def start(self) -> bytes:
        return self._start

    def frames(self, event: E) -> list[bytes]:
        if event.__class__ is ContentDelta:  # the most frequent event: a template's frame
            frame = self._builder.text_frame(event)  # type: ignore[arg-type]
            if frame is not None:
                return [frame]
        frames = [sse.event(e["type"], e) for e in self._builder.feed(event)]
        if not frames and isinstance(event, ToolsStarted):
            # A tool round the client is not shown still says the stream is alive.
            frames.append(sse.comment("tools running"))
        return frames

    def error(self, exc: ProxyError) -> list[bytes]:
        return [sse.event(e["type"], e) for e in self._builder.fail(exc)]


class BuilderJson(Generic[E]):
    """Folds a builder's events into its final object."""

    __slots__ = ("_builder",)

    def __init__(self, builder: Builder[E]) -> None:
        self._builder = builder
        builder.start()  # what opens the stream (Responses' tool listings) opens the body too

    def feed(self, event: E) -> None:
        self._builder.feed(event)

    def encoded(self) -> bytes:
        """The whole answer, serialised."""
        return orjson.dumps(self.body())

    def body(self) -> dict[str, Any]:
        """The whole answer.

        Raises:
            RuntimeError: the turn's end was never fed.
        """
        final = self._builder.final()
        if final is None:
            raise RuntimeError("the turn ended without a Finished event")
        return final
