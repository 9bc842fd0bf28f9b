"""Tools as typed Python function signatures, written from their JSON schemas, for the
model's side of code mode: the `run_code` description lists them, and a program calls them.

A tool's parameters become keyword-only arguments (`async def f(*, city: str) -> Any`):
required ones first, optional ones defaulting to None. Names that are not Python
identifiers are made into ones (`get-weather` → `get_weather`); the map back is kept.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_NOT_IDENTIFIER = re.compile(r"\W")
_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_DOC_WIDTH = 96


@dataclass(frozen=True, slots=True)
class Stub:
    """One tool as the program sees it."""

    function: str
    """Its Python name in the sandbox."""
    tool: str
    """Its wire name, under which the gate knows it."""
    signature: str
    """The `async def` line and docstring, as the model reads them."""


def python_name(name: str, taken: Iterable[str] = ()) -> str:
    """`name` as a Python identifier that is not a keyword nor in `taken`."""
    ident = _NOT_IDENTIFIER.sub("_", name)
    if not ident or ident[0].isdigit() or keyword.iskeyword(ident):
        ident = f"_{ident}"
    taken = set(taken)
    base, n = ident, 2
    while ident in taken:
        ident, n = f"{base}_{n}", n + 1
    return ident


def type_of(schema: Any) -> str:
    """The Python annotation a JSON schema stands for (`Any` where it says nothing)."""
    if not isinstance(schema, Mapping):
        return "Any"
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return "Literal[" + ", ".join(repr(v) for v in schema["enum"]) + "]"
    if "const" in schema:
        return f"Literal[{schema['const']!r}]"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return _union(type_of(option) for option in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union(type_of({**schema, "type": k}) for k in kind)
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        items = schema.get("items")
        return f"list[{type_of(items)}]" if items else "list[Any]"
    if kind == "object" or "properties" in schema:
        return "dict[str, Any]"
    return "Any"


def _union(types: Iterable[str]) -> str:
    unique = list(dict.fromkeys(types))
    if "Any" in unique:
        return "Any"
    if "None" in unique and len(unique) > 1:
        unique = [t for t in unique if t != "None"] + ["None"]
    return " | ".join(unique)


def signature(function: str, description: str, parameters: Mapping[str, Any]) -> str:
    """`async def function(*, …) -> Any:` and a docstring from the schema's descriptions."""
    properties = parameters.get("properties") or {}
    required = [p for p in parameters.get("required") or () if p in properties]
    optional = [p for p in properties if p not in required]
    arguments = []
    for name in required:
        arguments.append(f"{name}: {type_of(properties[name])}")
    for name in optional:
        annotation = type_of(properties[name])
        if annotation not in ("Any", "None") and not annotation.endswith("| None"):
            annotation += " | None"
        arguments.append(f"{name}: {annotation} = None")
    head = f"async def {function}(" + (("*, " + ", ".join(arguments)) if arguments else "")
    lines = [head + ") -> Any:"]
    doc = [*_wrapped(description.strip())] if description.strip() else []
    described = [
        (name, str(properties[name].get("description", "")).strip())
        for name in [*required, *optional]
        if isinstance(properties[name], Mapping) and properties[name].get("description")
    ]
    if described:
        doc += ["", "Args:"] + [f"    {name}: {text}" for name, text in described]
    if len(doc) == 1:
        lines.append(f'    """{doc[0]}"""')
    elif doc:
        lines.append('    """' + doc[0])
        lines += [f"    {line}" if line else "" for line in doc[1:]]
        lines.append('    """')
    else:
        lines.append("    ...")
    return "\n".join(lines)


def _wrapped(text: str) -> list[str]:
    out: list[str] = []
    for paragraph in text.replace('"""', "'''").splitlines():
        line = ""
        for word in paragraph.split():
            if line and len(line) + 1 + len(word) > _DOC_WIDTH:
                out.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        out.append(line)
    return out


def stubs(
    tools: Iterable[tuple[str, str, Mapping[str, Any]]], taken: Iterable[str] = ()
) -> list[Stub]:
    """Each tool (wire name, description, parameters schema) as a stub, its Python name
    unique among the others and `taken`."""
    out: list[Stub] = []
    taken = {"search_tools", "print", *taken}
    for name, description, parameters in tools:
        function = python_name(name, taken)
        taken.add(function)
        out.append(Stub(function, name, signature(function, description, parameters)))
    return out


__all__ = ["Stub", "python_name", "signature", "stubs", "type_of"]
