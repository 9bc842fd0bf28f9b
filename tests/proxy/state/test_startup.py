"""Start-up with Redis: unreachable is a clean exit 1 (or memory with a loud warning when
not required); `--workers N` on memory says what the workers do not share."""

from __future__ import annotations

import logging
import logging.config
from pathlib import Path
from typing import Any

import pytest
import uvicorn
import yaml

import proxy.server.cli
import proxy.server.serving
from proxy import ConfigError, parse_settings
from proxy.state import build_stores
from tests.proxy.state.conftest import RedisServer

NOWHERE = "redis://127.0.0.1:1/0"


@pytest.fixture(autouse=True)
def _logging_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """`toolwire serve` configures logging for its process; not for the test run's."""
    monkeypatch.setattr(logging.config, "dictConfig", lambda config: None)


def _config(tmp_path: Path, **state: Any) -> str:
    path = tmp_path / "proxy.yaml"
    config = {"upstreams": [{"name": "demo", "base_url": "demo"}], "state": state}
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _supervised(monkeypatch: pytest.MonkeyPatch) -> list[uvicorn.Config]:
    """`toolwire serve`'s `--workers` supervisor replaced by one that starts nothing; the
    configs it was given. (Replaced where serve looks it up: should that name go, setattr
    fails at once rather than the test starting real workers that never stop.)"""
    ran: list[uvicorn.Config] = []

    class Supervisor:
        def __init__(self, config: uvicorn.Config, sockets: list[Any]) -> None:
            ran.append(config)

        def run(self) -> None:
            pass

    monkeypatch.setattr(proxy.server.serving, "Supervisor", Supervisor)
    for name in ("TOOLWIRE_CONFIG", "TOOLWIRE_BOUND"):  # set by serve: restored after the test
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    return ran


def test_serve_with_redis_unreachable_exits_1_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, backend="redis", url="redis://user:s3cret@127.0.0.1:1/0")
    assert proxy.server.cli.main(["serve", "--port", "0", "--config", config]) == 1
    err = capsys.readouterr().err
    assert "state.url: cannot reach Redis at redis://user:***@127.0.0.1:1/0" in err
    assert "state.required: false" in err and "s3cret" not in err


def test_workers_on_memory_say_what_is_not_shared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = _supervised(monkeypatch)
    config = _config(tmp_path)
    assert (
        proxy.server.cli.main(["serve", "--workers", "2", "--port", "0", "--config", config]) == 0
    )
    err = capsys.readouterr().err
    assert "2 workers with state.backend: memory" in err
    for kept in ("pending turns", "approvals", "stored responses", "rate-limit windows"):
        assert kept in err
    assert ran and ran[0].workers == 2


def test_workers_on_redis_say_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    redis_server: RedisServer,
) -> None:
    _supervised(monkeypatch)
    config = _config(tmp_path, backend="redis", url=redis_server.url)
    assert (
        proxy.server.cli.main(["serve", "--workers", "2", "--port", "0", "--config", config]) == 0
    )
    assert "not shared" not in capsys.readouterr().err


async def test_not_required_falls_back_to_memory_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    raw = {"upstreams": [{"name": "demo", "base_url": "demo"}]}
    settings = parse_settings(
        {**raw, "state": {"backend": "redis", "url": NOWHERE, "required": False}},
        base_dir=tmp_path,
    )
    with caplog.at_level(logging.WARNING, "toolwire.state"):
        stores = await build_stores(settings)
    assert stores.backend == "memory"
    assert "STATE NOT SHARED" in caplog.text and "127.0.0.1:1" in caplog.text


async def test_required_redis_unreachable_is_a_config_error(tmp_path: Path) -> None:
    raw = {"upstreams": [{"name": "demo", "base_url": "demo"}]}
    settings = parse_settings(
        {**raw, "state": {"backend": "redis", "url": NOWHERE}}, base_dir=tmp_path
    )
    with pytest.raises(ConfigError, match=r"state\.url: cannot reach Redis"):
        await build_stores(settings)


def test_state_url_must_be_a_redis_url(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"state\.url: .*redis://"):
        parse_settings(
            {"upstreams": [{"name": "d", "base_url": "demo"}], "state": {"url": "http://x"}},
            base_dir=tmp_path,
        )
