"""The emulated tool-call formats, by the name `emulation_format` takes."""

from __future__ import annotations

from typing import get_args

from ....config import EmulationFormatName
from .base import EmulationFormat
from .deepseek import DeepSeek
from .dsml import DeepSeekDsml
from .gemma import Gemma
from .glm import Glm
from .harmony import Harmony
from .hermes import Hermes
from .json_envelope import JsonEnvelope
from .kimi import Kimi
from .llama import Llama
from .mistral import Mistral
from .pythonic import Pythonic
from .xml import Xml

FORMAT_NAMES: tuple[str, ...] = get_args(EmulationFormatName)


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
        "mistral": Mistral(),
        "llama": Llama(),
        "gpt-oss": Harmony(),
        "deepseek": DeepSeek(),
        "deepseek-v3.2": DeepSeekDsml(),
        "glm": Glm(),
        "kimi": Kimi(),
        "gemma": Gemma(),
    }
    return formats[name]


__all__ = ["FORMAT_NAMES", "EmulationFormat", "get_format"]
