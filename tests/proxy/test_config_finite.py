"""proxy.yaml's numbers are finite: `.inf` and `.nan` are config errors naming the key path,
whichever model the key belongs to."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from proxy.config import ConfigError, Settings, parse_settings
from tests.proxy.server.test_cli import assert_clean_failure, toolwire_here, write_config

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = {"name": "local", "base_url": "http://127.0.0.1:8001/v1"}
INF, NAN = float("inf"), float("nan")


def error_of(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_settings({"upstreams": [UPSTREAM], **raw}, base_dir=REPO, environ={})
    return str(caught.value)


def _at(path: str, value: float) -> dict[str, Any]:
    """A config holding `value` at the dotted `path` (`tools[0]` sections given whole)."""
    sections = {
        "tools.overrides": lambda v: {
            "tools": [{"python": "m", "overrides": {"f": {"timeout_s": v}}}]
        },
        "tools.mcp": lambda v: {"tools": [{"mcp": {"url": "http://h/mcp"}, "timeout_s": v}]},
        "tools.mcp.connect": lambda v: {
            "tools": [{"mcp": {"url": "http://h/mcp", "connect_timeout_s": v}}]
        },
        "tools.openapi": lambda v: {"tools": [{"openapi": {"spec": "s.json", "timeout_s": v}}]},
        "tools.builtin": lambda v: {
            "tools": [{"builtin": {"tools": ["http"], "timeouts": {"http": v}}}]
        },
        "guards": lambda v: {"guards": [{"match": {}, "rate_limit": {"calls": 1, "per_s": v}}]},
        "webhook": lambda v: {
            "policy": {"approval_webhook": {"url": "http://h/a", "timeout_s": v}}
        },
    }
    if path in sections:
        return sections[path](value)
    *parents, leaf = path.split(".")
    raw: dict[str, Any] = {leaf: value}
    for parent in reversed(parents):
        raw = {parent: raw}
    return raw


CASES = [
    ("server.body_timeout_s", "server.body_timeout_s"),
    ("server.header_timeout_s", "server.header_timeout_s"),
    ("server.keep_alive_s", "server.keep_alive_s"),
    ("loop.timeout_s", "loop.timeout_s"),
    ("loop.keepalive_s", "loop.keepalive_s"),
    ("execution.timeout_s", "execution.timeout_s"),
    ("execution.retry.backoff_s", "execution.retry.backoff_s"),
    ("state.response_ttl_s", "state.response_ttl_s"),
    ("policy.approval_ttl_s", "policy.approval_ttl_s"),
    ("webhook", "policy.approval_webhook.timeout_s"),
    ("guards", "guards[0].rate_limit.per_s"),
    ("tools.overrides", "tools[0].overrides.f.timeout_s"),
    ("tools.mcp", "tools[0].timeout_s"),
    ("tools.mcp.connect", "tools[0].mcp.connect_timeout_s"),
    ("tools.openapi", "tools[0].openapi.timeout_s"),
    ("tools.builtin", "tools[0].builtin.timeouts.http"),
]


@pytest.mark.parametrize("value", [INF, NAN], ids=["inf", "nan"])
@pytest.mark.parametrize(("where", "path"), CASES, ids=[path for _, path in CASES])
def test_a_non_finite_number_is_a_config_error_naming_its_path(
    where: str, path: str, value: float
) -> None:
    lines = error_of(_at(where, value)).splitlines()
    assert f"{path}: Input should be a finite number" in lines, lines


def test_an_upstream_timeout_of_inf_is_refused() -> None:
    raw = {"upstreams": [UPSTREAM | {"timeout_s": INF, "idle_timeout_s": NAN}]}
    with pytest.raises(ConfigError) as caught:
        parse_settings(raw, base_dir=REPO, environ={})
    lines = str(caught.value).splitlines()
    assert "upstreams[0].timeout_s: Input should be a finite number" in lines
    assert "upstreams[0].idle_timeout_s: Input should be a finite number" in lines


def _models(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        for field in annotation.model_fields.values():
            yield from _models(field.annotation)
    for argument in typing.get_args(annotation):
        yield from _models(argument)


def _has_float(annotation: Any) -> bool:
    return annotation is float or any(_has_float(a) for a in typing.get_args(annotation))


def test_every_config_model_with_a_float_refuses_inf_and_nan() -> None:
    # A float field added later to any section is finite too, without a test of its own.
    models = set(_models(Settings))
    with_floats = {
        model
        for model in models
        if any(_has_float(field.annotation) for field in model.model_fields.values())
    }
    assert len(with_floats) >= 10
    assert [
        m.__name__ for m in with_floats if m.model_config.get("allow_inf_nan") is not False
    ] == []


def test_check_refuses_inf_and_nan_with_the_key_path(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "upstreams: [{name: d, base_url: demo, timeout_s: .inf}]\n"
        "loop: {timeout_s: .nan}\n"
        "tools: [{python: examples/tools.py, overrides: {get_weather: {timeout_s: .inf}}}]\n",
    )
    assert_clean_failure(
        toolwire_here("check", "--config", config),
        "upstreams[0].timeout_s: Input should be a finite number",
        "loop.timeout_s: Input should be a finite number",
        "tools[0].overrides.get_weather.timeout_s: Input should be a finite number",
    )
