"""The demo model in code mode: offered `run_code`, it writes one program that runs every call
it planned at once and prints each result as a JSON line, then answers from those lines."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from typing import Any

import orjson

RUN_CODE = "run_code"
_SIGNATURE = re.compile(r"^async def (\w+)\(([^)]*)\)", re.MULTILINE)
_PARAMETER = re.compile(r"(\w+)\s*:")


def program_tools(body: dict[str, Any]) -> dict[str, frozenset[str]]:
    """The functions `run_code`'s description offers (name → parameter names); empty when the
    request offers no `run_code`."""
    for tool in body.get("tools") or []:
        function = (tool.get("function") or {}) if isinstance(tool, dict) else {}
        if function.get("name") == RUN_CODE:
            description = str(function.get("description") or "")
            return {
                name: frozenset(_PARAMETER.findall(parameters))
                for name, parameters in _SIGNATURE.findall(description)
            }
    return {}


def program_call(calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """A `run_code` call whose program awaits `calls` (function, arguments) together and
    prints one JSON line per result, in order."""
    awaited = "".join(
        f"    {name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())}),\n"
        for name, arguments in calls
    )
    code = (
        "import asyncio\nimport json\n\n"
        f"calls = {[[name, arguments] for name, arguments in calls]!r}\n"
        f"results = await asyncio.gather(\n{awaited})\n"
        "for (tool, arguments), result in zip(calls, results):\n"
        '    print(json.dumps({"tool": tool, "arguments": arguments, "result": result}))\n'
    )
    return {
        "index": 0,
        "id": f"call_{secrets.token_hex(12)}",
        "type": "function",
        "function": {"name": RUN_CODE, "arguments": orjson.dumps({"code": code}).decode()},
    }


def program_results(output: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    """Each result a demo program printed: (tool, arguments, the result as JSON text)."""
    for line in output.splitlines():
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("tool"), str):
            arguments = entry.get("arguments")
            result = entry.get("result")
            content = result if isinstance(result, str) else orjson.dumps(result).decode()
            yield entry["tool"], arguments if isinstance(arguments, dict) else {}, content


__all__ = ["RUN_CODE", "program_call", "program_results", "program_tools"]
