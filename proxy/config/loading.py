"""Reading proxy.yaml: `${VAR}` expansion, validation, and errors that name the key path."""

from __future__ import annotations

import difflib
import os
import re
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Union

import yaml
from pydantic import AliasChoices, BaseModel, Tag, ValidationError
from pydantic.fields import FieldInfo

from registry import SOURCE_KINDS

from .settings import Settings

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(Exception):
    """proxy.yaml is unreadable or invalid; the message names each bad key path."""


def load_settings(path: str | Path, environ: dict[str, str] | None = None) -> Settings:
    """Read, expand and validate a proxy.yaml.

    Raises:
        ConfigError: the file is missing, not YAML, or invalid; every problem is listed.
    """
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as file:
            raw = yaml.safe_load(file)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return parse_settings(raw, base_dir=path.resolve().parent, environ=environ)


def parse_settings(
    raw: dict[str, Any], *, base_dir: Path, environ: dict[str, str] | None = None
) -> Settings:
    """Validate an already-loaded mapping.

    Raises:
        ConfigError: a value is invalid or an environment reference is unset.
    """
    env = os.environ if environ is None else environ
    if "base_dir" in raw:
        raise ConfigError("base_dir: unknown key")
    expanded = _expand(raw, env, "")
    try:
        return Settings.model_validate({**expanded, "base_dir": base_dir})
    except ValidationError as exc:
        raise ConfigError("\n".join(_describe(err) for err in exc.errors())) from exc


def _expand(value: Any, env: Any, where: str) -> Any:
    if isinstance(value, str):
        return _ENV_REF.sub(lambda m: _lookup(m, env, where), value)
    if isinstance(value, dict):
        return {k: _expand(v, env, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, env, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def _lookup(match: re.Match[str], env: Any, where: str) -> str:
    # As in the shell: ${VAR:-d} is d when VAR is unset or empty; ${VAR} needs VAR set.
    name, default = match.group(1), match.group(2)
    value = env.get(name)
    if default is not None and not value:
        return default
    if value is None:
        raise ConfigError(f"{where}: environment variable {name} is not set")
    return str(value)


def _describe(error: Any) -> str:
    loc = list(error["loc"])
    path = ""
    for part in _walk(loc)[0]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    reason = error["msg"]
    if error["type"] == "missing":
        reason = "required"
    elif error["type"] == "extra_forbidden":
        reason = "unknown key" + _suggestion(str(loc[-1]), _keys(_walk(loc[:-1])[1]))
    elif error["type"] == "source_kind" and isinstance(error["input"], dict):
        unknown = [str(k) for k in error["input"] if str(k) not in _keys(_walk(loc)[1])]
        named = ", ".join(f"{k!r}" + _suggestion(k, SOURCE_KINDS) for k in unknown)
        reason = f"unknown key {named}; {reason}" if unknown else reason
    elif error["type"] == "value_error":
        reason = str(error["ctx"]["error"])
    return f"{path or '(top level)'}: {reason}"


def _suggestion(key: str, allowed: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(allowed), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _walk(loc: list[Any]) -> tuple[list[Any], Any]:
    """The key path of an error's `loc` as the user wrote it, without the union members
    pydantic names (a `tools:` entry's kind, `list[...]`), and the type the settings models
    expect at its end (None past them)."""
    here: Any = Settings
    path: list[Any] = []
    named = False  # the previous part named a member of the union `here` is
    for part in loc:
        members = _members(here)
        if part in members:
            here = members[part]
            continue
        if members:
            taking = [m for m in members.values() if _child(m, part) is not _NOTHING]
            if not taking and isinstance(part, str) and not named:
                named = True  # the next part finds its member
                continue
            here = taking[0] if taking else None
        named = False
        path.append(part)
        child = _child(here, part)
        here = None if child is _NOTHING else child
    return path, here


_NOTHING = object()
"""`_child` of a part the type has no place for."""


def _child(hint: Any, part: Any) -> Any:
    """The type expected at `part` (a key or an index) inside `hint`, or `_NOTHING`."""
    hint = _unwrap(hint)
    origin = typing.get_origin(hint)
    if _is_model(hint) and part in _fields(hint):
        return _fields(hint)[part].annotation
    if (origin is list and isinstance(part, int)) or (origin is dict and isinstance(part, str)):
        return typing.get_args(hint)[-1]
    return _NOTHING


def _unwrap(hint: Any) -> Any:
    """`hint` without `Annotated`, and without `None` in a union of one type and `None`."""
    while typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) in (Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(rest) == 1:
            return _unwrap(rest[0])
    return hint


def _members(hint: Any) -> dict[str, Any]:
    """A union's members by their tag (`Tag`) or name; {} for anything else."""
    hint = _unwrap(hint)
    members: dict[str, Any] = {}
    if typing.get_origin(hint) not in (Union, types.UnionType):
        return members
    for arg in typing.get_args(hint):
        member = _unwrap(arg)
        if member is not type(None):
            tags = [m.tag for m in getattr(arg, "__metadata__", ()) if isinstance(m, Tag)]
            members[tags[0] if tags else getattr(member, "__name__", str(member))] = member
    return members


def _keys(hint: Any) -> set[str]:
    """The keys a mapping may have where the settings models expect `hint`."""
    hint = _unwrap(hint)
    if _is_model(hint):
        return set(_fields(hint))
    return set().union(*(_keys(m) for m in _members(hint).values()))


def _fields(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """A model's fields by each key they are read from (name, aliases); hidden ones left out."""
    found: dict[str, FieldInfo] = {}
    for name, field in model.model_fields.items():
        alias = field.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias, field.alias]
        found |= {key: field for key in [name, *choices] if isinstance(key, str)}
    return {key: field for key, field in found.items() if not field.exclude}


def _is_model(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, BaseModel)
