"""Prompt-emulated tool calling for models and servers without function calling."""

from __future__ import annotations

from .call_ids import NumberedIds
from .formats import FORMAT_NAMES, EmulationFormat, get_format
from .modes import AutoUpstream, MemoryModeStore, ModeStore, PerModelUpstream, with_tool_calling
from .parser import Call, Event, Parser, Reasoning, Text, run
from .prompt import Rewritten, catalog, keep_tools, rewrite
from .reasoning import ThinkingParser
from .repairs import Refusal, Repair
from .toolspecs import ToolSpecs
from .upstream import EmulatedUpstream, translate

__all__ = [
    "FORMAT_NAMES",
    "AutoUpstream",
    "Call",
    "EmulatedUpstream",
    "EmulationFormat",
    "Event",
    "MemoryModeStore",
    "ModeStore",
    "NumberedIds",
    "Parser",
    "PerModelUpstream",
    "Reasoning",
    "Refusal",
    "Repair",
    "Rewritten",
    "Text",
    "ThinkingParser",
    "ToolSpecs",
    "catalog",
    "get_format",
    "keep_tools",
    "rewrite",
    "run",
    "translate",
    "with_tool_calling",
]
