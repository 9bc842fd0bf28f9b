"""What the registry keeps of a tool whatever is changed later, and the timeouts it takes."""

from __future__ import annotations

import math

import pytest

from registry import RegistryError, ToolMetadata, ToolRegistry


def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: the key.
    """
    return key


def test_registered_tags_stay_what_the_tool_came_with() -> None:
    registry = ToolRegistry()
    registry.register(lookup, tags=["read_only"])
    registry.update("lookup", tags=frozenset({"audited"}))
    assert registry.get_tool("lookup").metadata.tags == {"audited"}
    assert registry.registered_tags("lookup") == {"read_only"}


@pytest.mark.parametrize("timeout_s", [math.inf, math.nan, 0.0, -1.0])
def test_a_timeout_is_positive_and_finite(timeout_s: float) -> None:
    with pytest.raises(RegistryError, match="positive finite number"):
        ToolMetadata(timeout_s=timeout_s)
