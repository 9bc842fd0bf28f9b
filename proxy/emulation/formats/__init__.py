"""The emulated tool-call formats, by the name `emulation_format` takes."""

from __future__ import annotations

from .base import EmulationFormat
from .hermes import Hermes
from .json_envelope import JsonEnvelope
from .pythonic import Pythonic
from .xml import Xml

FORMAT_NAMES = ("hermes", "xml", "pythonic", "json")


def get_format(name: str) -> EmulationFormat:
    """The format called `name`.

    Raises:
        KeyError: no format has that name.
    """
    formats: dict[str, EmulationFormat] = {
        "hermes": Hermes(),
        "xml": Xml(),
        "pythonic": Pythonic(),
        "json": JsonEnvelope(),
    }
    return formats[name]


__all__ = ["FORMAT_NAMES", "EmulationFormat", "get_format"]
