"""Arguments models and JSON schemas built from Python function signatures."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace, UnionType
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, create_model
from pydantic.fields import FieldInfo

from registry.context import ToolContext
from registry.docstrings import read_docstring
from registry.errors import RegistryError
from registry.schema import flatten_schema

__all__ = ["FunctionSignature", "read_signature"]

_SKIPPED_FIRST = frozenset({"self", "cls"})
_ARGUMENTS_CONFIG = ConfigDict(extra="forbid", protected_namespaces=())


@dataclass(frozen=True, slots=True)
class FunctionSignature:
    """What a function's signature and docstring say about calling it as a tool."""

    description: str
    parameters: dict[str, Any]
    arguments_model: type[BaseModel]
    context_parameter: str | None = None
    """The parameter that receives the `ToolContext`, kept out of the schema."""


def read_signature(fn: Callable[..., Any], *, tool_name: str) -> FunctionSignature:
    """Build the arguments model, JSON schema and description of `fn`.

    Raises:
        RegistryError: the signature has *args/**kwargs or positional-only parameters, an
            annotation cannot be resolved, or a type has no JSON schema.
    """
    try:
        signature = _resolved_signature(fn)
    except (NameError, SyntaxError, TypeError, ValueError) as exc:
        raise RegistryError(f"tool {tool_name!r}: cannot read its signature: {exc}") from exc
    docs = read_docstring(fn)
    fields: dict[str, Any] = {}
    context_parameter: str | None = None
    for index, param in enumerate(signature.parameters.values()):
        if index == 0 and param.name in _SKIPPED_FIRST:
            continue
        if _is_context(param.annotation):
            context_parameter = param.name
            continue
        _check_kind(param, tool_name)
        field_name = _field_name(param.name, fields)
        fields[field_name] = _field(param, field_name, docs.params.get(param.name))
    try:
        model = create_model(  # type: ignore[call-overload]
            f"{_model_name(tool_name)}Arguments", __config__=_ARGUMENTS_CONFIG, **fields
        )
        schema = model.model_json_schema()
    except (PydanticUserError, NameError, TypeError, ValueError) as exc:
        raise RegistryError(f"tool {tool_name!r}: unsupported parameter type: {exc}") from exc
    return FunctionSignature(
        description=docs.description,
        parameters=_object_schema(flatten_schema(schema)),
        arguments_model=model,
        context_parameter=context_parameter,
    )


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _is_context(get_args(annotation)[0])
    if origin is Union or origin is UnionType:
        return any(arg is ToolContext for arg in get_args(annotation))
    return False


def _resolved_signature(fn: Callable[..., Any]) -> inspect.Signature:
    """The signature with parameter annotations resolved; the return annotation is not
    needed for a schema, so a name only imported for type checking there does no harm."""
    signature = inspect.signature(fn)
    annotations = {
        p.name: p.annotation
        for p in signature.parameters.values()
        if p.annotation is not inspect.Parameter.empty
    }
    unwrapped = inspect.unwrap(fn)
    # A callable object has no globals of its own; its __call__ method has.
    globalns = getattr(unwrapped, "__globals__", None)
    if globalns is None:
        globalns = getattr(type(unwrapped).__call__, "__globals__", {})
    holder = SimpleNamespace(__annotations__=annotations, __globals__=globalns)
    hints = get_type_hints(holder, include_extras=True)
    return signature.replace(
        parameters=[
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in signature.parameters.values()
        ]
    )


def _check_kind(param: inspect.Parameter, tool_name: str) -> None:
    if param.kind is inspect.Parameter.VAR_POSITIONAL:
        raise RegistryError(
            f"tool {tool_name!r}: *{param.name} is not supported; "
            "declare each argument as a named parameter"
        )
    if param.kind is inspect.Parameter.VAR_KEYWORD:
        raise RegistryError(
            f"tool {tool_name!r}: **{param.name} is not supported; "
            "declare each argument as a named parameter"
        )
    if param.kind is inspect.Parameter.POSITIONAL_ONLY:
        raise RegistryError(
            f"tool {tool_name!r}: positional-only parameter {param.name!r} is not supported; "
            "tools are called with keyword arguments"
        )


def _field_name(param_name: str, taken: dict[str, Any]) -> str:
    # Pydantic reserves underscored names and warns on names that shadow BaseModel
    # attributes (`json`, `copy`, `schema`); such parameters get a private field name and
    # keep their real name as the alias, which is what validation and the schema use.
    if not param_name.startswith("_") and not hasattr(BaseModel, param_name):
        return param_name
    candidate = f"arg_{param_name.lstrip('_')}"
    while candidate in taken or hasattr(BaseModel, candidate):
        candidate += "_"
    return candidate


def _field(param: inspect.Parameter, field_name: str, doc: str | None) -> tuple[Any, Any]:
    annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
    default = ... if param.default is inspect.Parameter.empty else param.default
    extra: list[FieldInfo] = []
    if doc and not _has_description(annotation) and not _has_description_info(default):
        extra.append(Field(description=doc))
    if field_name != param.name:
        extra.append(Field(alias=param.name))
    if extra:
        annotation = Annotated[(annotation, *extra)]  # type: ignore[valid-type]
    return annotation, default


def _has_description(annotation: Any) -> bool:
    if get_origin(annotation) is not Annotated:
        return False
    return any(_has_description_info(meta) for meta in get_args(annotation)[1:])


def _has_description_info(value: Any) -> bool:
    return isinstance(value, FieldInfo) and bool(value.description)


def _model_name(tool_name: str) -> str:
    return "".join(part.capitalize() for part in tool_name.replace(".", "_").split("_")) or "Tool"


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return schema
