from __future__ import annotations

import re

from registry import Tool, ToolRegistry

WIRE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def noop() -> None:
    """Do nothing."""


def tool(name: str, namespace: str | None = None) -> Tool:
    return Tool.from_function(noop, name=name, namespace=namespace)


def test_dots_become_underscores() -> None:
    registry = ToolRegistry()
    registry.register(tool("get_time", "time"))
    assert registry.wire_name("time.get_time") == "time_get_time"


def test_invalid_characters_are_replaced() -> None:
    registry = ToolRegistry()
    registry.register(tool("get weather!", "météo"))
    wire = registry.wire_name("météo.get weather!")
    assert WIRE.match(wire)
    assert wire == "m_t_o_get_weather_"


def test_collision_gets_a_digest_suffix_and_both_resolve() -> None:
    registry = ToolRegistry()
    first = registry.register(tool("b", "a"))
    second = registry.register(tool("a_b"))
    assert registry.wire_name(first) == "a_b"
    other = registry.wire_name(second)
    assert other != "a_b"
    assert re.fullmatch(r"a_b_[0-9a-f]{8}", other)
    assert registry.resolve("a_b") is first
    assert registry.resolve(other) is second


def test_long_names_are_truncated_uniquely() -> None:
    registry = ToolRegistry()
    long_a = "x" * 80 + "a"
    long_b = "x" * 80 + "b"
    registry.register(tool(long_a, "ns"))
    registry.register(tool(long_b, "ns"))
    wire_a = registry.wire_name(f"ns.{long_a}")
    wire_b = registry.wire_name(f"ns.{long_b}")
    assert WIRE.match(wire_a)
    assert WIRE.match(wire_b)
    assert len(wire_a) == 64
    assert wire_a != wire_b
    assert registry.resolve(wire_a).name == long_a  # type: ignore[union-attr]
    assert registry.resolve(wire_b).name == long_b  # type: ignore[union-attr]


def test_names_are_stable_across_fresh_registries() -> None:
    names = [("b", "a"), ("a_b", None), ("y" * 90, "long"), ("q/r", "s.t")]

    def wire_names() -> list[str]:
        registry = ToolRegistry()
        for name, namespace in names:
            registry.register(tool(name, namespace))
        return [registry.wire_name(t) for t in registry]

    first = wire_names()
    assert first == wire_names()
    assert len(set(first)) == len(first)
    assert all(WIRE.match(name) for name in first)


def test_resolve_is_by_lookup_not_by_splitting() -> None:
    registry = ToolRegistry()
    dotted = registry.register(tool("c.d", "a.b"))
    wire = registry.wire_name(dotted)
    assert wire == "a_b_c_d"
    assert registry.resolve(wire) is dotted
    assert registry.resolve("a.b.c.d") is dotted
    assert registry.resolve("a_b") is None
    assert registry.resolve("nope") is None


def test_unregister_frees_the_wire_name() -> None:
    registry = ToolRegistry()
    registry.register(tool("b", "a"))
    registry.unregister("a.b")
    assert registry.resolve("a_b") is None
    again = registry.register(tool("a_b"))
    assert registry.wire_name(again) == "a_b"
