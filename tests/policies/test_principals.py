"""Client keys in memory: who a key is, what it may see, and keys refused at load."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from policies import CallContext, Principal
from policies.principals import AuthConfig, KeyRing
from registry import ToolRegistry


def launch(target: str) -> str:
    """Launch something."""
    return target


def read(target: str) -> str:
    """Read something."""
    return target


def tools() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(launch, namespace="ops", tags=["destructive"])
    registry.register(read, namespace="docs", tags=["read_only"])
    return registry


AUTH = AuthConfig.model_validate(
    {
        "master_key": "master-secret",
        "keys": [
            {"name": "ops", "key": "ops-secret-1", "namespaces": ["ops"]},
            {"name": "reader", "key": "reader-secret", "tags": ["read_only"]},
            {
                "name": "busy",
                "key": "busy-secret",
                "rate_limit": {"requests_per_minute": 5, "tool_calls_per_minute": 7},
            },
        ],
    }
)


def test_each_key_authenticates_as_its_own_principal() -> None:
    ring = KeyRing.from_config(AUTH)
    names = {k: ring.authenticate(k) for k in ("master-secret", "ops-secret-1", "busy-secret")}
    assert {k: p.name if p else None for k, p in names.items()} == {
        "master-secret": "master",
        "ops-secret-1": "ops",
        "busy-secret": "busy",
    }
    master = ring.authenticate("master-secret")
    assert master is not None and master.master
    ops = ring.authenticate("ops-secret-1")
    assert ops is not None and not ops.master
    assert ring.authenticate("ops-secret-") is None and ring.authenticate("") is None


def test_a_keys_scope_and_limits_come_from_its_config() -> None:
    ring = KeyRing.from_config(AUTH)
    ops, reader, busy = (ring.principal(n) for n in ("ops", "reader", "busy"))
    assert ops == Principal("ops", namespaces=frozenset({"ops"}))
    assert reader == Principal("reader", tags=frozenset({"read_only"}))
    assert busy == Principal("busy", requests_per_minute=5, tool_calls_per_minute=7)
    assert ring.principal("nobody") is None
    assert ring.principal("master") == Principal("master", master=True)


def test_a_key_sees_only_its_namespaces_and_tags() -> None:
    registry = tools()
    launch_tool, read_tool = registry.resolve("ops.launch"), registry.resolve("docs.read")
    assert launch_tool is not None and read_tool is not None
    ring = KeyRing.from_config(AUTH)
    ops, reader, busy = (ring.principal(n) for n in ("ops", "reader", "busy"))
    assert ops is not None and reader is not None and busy is not None
    assert (ops.sees(launch_tool), ops.sees(read_tool)) == (True, False)
    assert (reader.sees(launch_tool), reader.sees(read_tool)) == (False, True)
    assert busy.sees(launch_tool) and busy.sees(read_tool)
    both = Principal("both", namespaces=frozenset({"ops"}), tags=frozenset({"read_only"}))
    assert not both.sees(launch_tool) and not both.sees(read_tool)


def test_a_call_context_names_its_caller() -> None:
    assert CallContext().caller is None
    assert CallContext(Principal("ops")).caller == "ops"


def test_no_master_key_means_only_the_named_keys() -> None:
    ring = KeyRing.from_config(AuthConfig.model_validate({"keys": AUTH.model_dump()["keys"]}))
    assert ring.principal("master") is None
    assert ring.authenticate("master-secret") is None


@pytest.mark.parametrize("master_key", ["", "short", "1234567"])
def test_a_master_key_shorter_than_eight_characters_is_refused(master_key: str) -> None:
    with pytest.raises(ValidationError, match="at least 8 characters"):
        AuthConfig(master_key=master_key)


def test_a_master_key_of_eight_characters_or_none_is_accepted() -> None:
    assert AuthConfig(master_key="12345678").master_key == "12345678"
    assert AuthConfig().master_key is None


@pytest.mark.parametrize(
    "names", [["ops", "ops"], ["master"]], ids=["duplicate", "the-master-keys-name"]
)
def test_key_names_are_unique_and_not_the_master_keys(names: list[str]) -> None:
    # What a key's requests leave behind (stored responses, approvals) is its name's.
    keys = [{"name": name, "key": f"secret-key-{i}"} for i, name in enumerate(names)]
    with pytest.raises(ValidationError, match="named"):
        AuthConfig.model_validate({"master_key": "master-secret", "keys": keys})
