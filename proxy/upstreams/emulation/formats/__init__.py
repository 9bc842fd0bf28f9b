"""The emulated tool-call formats, by the name `emulation_format` takes.

A family's name reads every version's syntax of that family. A version that writes another
syntax has a name of its own (in `VERSIONS`): its prompt and history are that version's, and
its parser is the family's.
"""

from __future__ import annotations

from typing import get_args

from ....config import EmulationFormatName
from .apertus import Apertus
from .base import EmulationFormat
from .beam import Beam
from .cohere import Cohere, CommandR
from .deepseek import DeepSeek
from .dots import Dots
from .dsml import DeepSeekDsml, DeepSeekV4
from .ernie import Ernie
from .gemma import FunctionGemma, Gemma
from .gigachat import GIGACHAT_31, GIGACHAT_35, GigaChat
from .glm import Glm, Glm47
from .granite import Granite
from .harmony import Harmony
from .hermes import Hermes
from .hunyuan import Hunyuan
from .hy import Hy, HyV3
from .inkling import Inkling
from .internlm import InternLM
from .iquest import IQuest
from .jamba import Jamba
from .json_envelope import JsonEnvelope
from .k2_horizon import K2Horizon
from .kimi import Kimi, KimiK3
from .lfm2 import Lfm2
from .ling import Ling
from .llama import Llama, Llama4Pythonic
from .longcat import LongCat
from .mimo import Mimo
from .minicpm import MiniCpm
from .minimax import MiniMax, MiniMaxM3
from .mistral import Mistral
from .muse import Muse, MuseGlimmer
from .nemotron import Nemotron
from .olmo3 import Olmo3
from .phi4_mini import Phi4Mini
from .plamo import Plamo
from .poolside import Poolside
from .pythonic import Pythonic
from .seed_oss import SeedOss
from .spark import Spark
from .step import Step, Step3
from .trinity import Trinity
from .versions import Version
from .xlam import Xlam
from .xml import Xml

FORMAT_NAMES: tuple[str, ...] = get_args(EmulationFormatName)

FORMATS: dict[str, EmulationFormat] = {
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
    "qwen3-coder": Version("qwen3-coder", Xml(), Xml()),
    "glm-4.7": Glm47(),
    "kimi-k3": KimiK3(),
    "deepseek-v3.1": Version("deepseek-v3.1", DeepSeek(), DeepSeek()),
    "deepseek-v4": DeepSeekV4(),
    "llama3-json": Version("llama3-json", Llama(), Llama()),
    "llama4-pythonic": Llama4Pythonic(),
    "functiongemma": FunctionGemma(),
    "jamba": Jamba(),
    "hunyuan": Hunyuan(),
    "xlam": Xlam(),
    "phi4-mini": Phi4Mini(),
    "internlm": InternLM(),
    "gigachat": GigaChat(),
    "gigachat-3.1": GIGACHAT_31,
    "gigachat-3.5": GIGACHAT_35,
    "longcat": LongCat(),
    "ernie": Ernie(),
    "granite": Granite(),
    "granite4": Granite("granite4"),
    "granite-20b-fc": Granite("granite-20b-fc"),
    "apertus": Apertus(),
    "dots": Dots(),
    "poolside": Poolside(),
    "ling": Ling(),
    "hy": Hy(),
    "hy-v3": HyV3(),
    "lfm2": Lfm2(),
    "olmo3": Olmo3(),
    "cohere": Cohere(),
    "plamo": Plamo(),
    "seed-oss": SeedOss(),
    "mimo": Mimo(),
    "step": Step(),
    "step3": Step3(),
    "minimax": MiniMax(),
    "minimax-m3": MiniMaxM3(),
    "minicpm": MiniCpm(),
    "k2-horizon": K2Horizon(),
    "beam": Beam(),
    "iquest": IQuest(),
    "spark": Spark(),
    "inkling": Inkling(),
    "nemotron": Nemotron(),
    "trinity": Trinity(),
    "muse": Muse(),
    "muse-glimmer": MuseGlimmer(),
    "command-r": CommandR(),
}
"""Every format by name (formats hold no state: one instance serves every request)."""

VERSIONS: dict[str, str] = {
    "deepseek-v3.2": "deepseek",
    "qwen3-coder": "xml",
    "glm-4.7": "glm",
    "kimi-k3": "kimi",
    "deepseek-v3.1": "deepseek",
    "deepseek-v4": "deepseek",
    "llama3-json": "llama",
    "llama4-pythonic": "llama",
    "functiongemma": "gemma",
    "granite4": "granite",
    "granite-20b-fc": "granite",
    "hy-v3": "hy",
    "gigachat-3.1": "gigachat",
    "gigachat-3.5": "gigachat",
    "step3": "step",
    "minimax-m3": "minimax",
    "muse-glimmer": "muse",
    "command-r": "cohere",
}
"""The names of one version's syntax, each with its family's name."""

GENERIC = ("json",)
"""Toolwire's own formats, which no model family was trained on (pythonic is what Llama 3.2/4,
OLMo and LFM2 write: a native family, tested as one)."""


def get_format(name: str) -> EmulationFormat:
    """The format called `name`.

    Raises:
        KeyError: no format has that name.
    """
    return FORMATS[name]


def family_of(name: str) -> str:
    """The family a format name belongs to (a family's own name is its family)."""
    return VERSIONS.get(name, name)


__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "GENERIC",
    "VERSIONS",
    "EmulationFormat",
    "family_of",
    "get_format",
]
