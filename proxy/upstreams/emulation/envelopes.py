"""Where a call sits in a model's text: the markers around it and the rules that say when they
count (`Envelope`), read by the tagged parser (parser.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .repairs import Decoded, Repair
from .scanning import BodyScanner

Decoder = Callable[[str, bool], Decoded | None]
"""(body, lenient) -> calls and repairs, or None when the body is not a valid call."""


@dataclass(frozen=True, slots=True)
class Envelope:
    """Where a call sits in the text: between `open` and `close`."""

    open: str
    close: str
    scanner: Callable[[bool], BodyScanner]
    """Builds a boundary scanner; the flag says lenient."""
    keep_markers: bool = False
    """The decoder reads the markers too (the open marker is part of the call's syntax)."""
    repair: Repair | None = None
    """Set for an envelope only a lenient parser accepts."""
    at_start: bool = False
    """`open` counts only as the reply's first non-blank text (or right after a call): a bare
    `{` that starts a Llama reply is a call, one inside prose is not."""
    after: str = ""
    """When set, `open` counts only where the text before it ends (blanks aside) with one of
    these characters: Llama's `Here is the result: {"name": …}` is a call, `You would send
    {"name": …}` is not."""
    finished: Decoder | None = None
    """For a body holding several calls (a JSON list): the calls it finished before the
    length limit cut it off, which run; None: a cut-off body runs nothing."""
    chain: Callable[[str], bool | None] | None = None
    """Right after a call of this envelope, whether the text opens another one without the
    open marker (True), does not (False) or cannot tell yet (None): Mistral v11's parallel
    calls chained as `…}ping[ARGS]{}`, their `[TOOL_CALLS]` left out."""
    at_end: bool = False
    """The calls count only when nothing but blanks follows them to the reply's end (they are
    held until then): Mistral v3's call array after prose, its `[TOOL_CALLS]` stripped by the
    server, is a call; the same array quoted inside prose is not."""
