"""merge, spinoff and reduce_namespace: names, wire names, disabled state and callbacks."""

from __future__ import annotations

import pytest

from registry import RegistryError, ToolRegistry, merge, reduce_namespace, spinoff


def one() -> int:
    """One."""
    return 1


def two() -> int:
    """Two."""
    return 2


def build(*names: str) -> ToolRegistry:
    """A registry with a tool per qualified name (`ns.name` or `name`)."""
    registry = ToolRegistry()
    for qualified in names:
        namespace, _, name = qualified.rpartition(".")
        registry.register(one, name=name, namespace=namespace or None)
    return registry


def qualified(registry: ToolRegistry) -> list[str]:
    return [tool.qualified_name for tool in registry]


def test_merge_copies_tools_with_their_disabled_state() -> None:
    target, other = build("a.x"), build("b.y", "z")
    other.disable("z", "maintenance")
    versions: list[int] = []
    target.on_change(lambda r: versions.append(r.version))
    merged = merge(target, other)
    assert [t.qualified_name for t in merged] == ["b.y", "z"]
    assert qualified(target) == ["a.x", "b.y", "z"]
    assert target.disabled_reason("z") == "maintenance"
    assert target.wire_name("b.y") == "b_y"
    assert target.resolve("b_y") is not None
    assert qualified(other) == ["b.y", "z"]  # left as it was
    assert versions, "callbacks saw the merge"


def test_merge_refuses_clashes_and_changes_nothing() -> None:
    target, other = build("a.x", "t"), build("a.x", "new", "t")
    before = target.version
    with pytest.raises(RegistryError, match=r"already registered: a\.x, t"):
        merge(target, other)
    assert qualified(target) == ["a.x", "t"] and target.version == before


def test_merge_into_a_namespace_keeps_tools_distinct() -> None:
    target, other = build("x"), build("x", "time.now", "tools.now")
    merge(target, other, namespace="tools")
    assert qualified(target) == ["x", "tools.x", "tools.time_now", "tools.now"]


def test_spinoff_moves_a_namespace_into_its_own_registry() -> None:
    registry = build("shop.get", "shop.put", "other.get", "plain")
    registry.disable("shop.put", "off")
    seen: list[int] = []
    registry.on_change(lambda r: seen.append(len(r)))
    spun = spinoff(registry, "shop")
    assert qualified(spun) == ["get", "put"]
    assert spun.wire_name("get") == "get" and spun.disabled_reason("put") == "off"
    assert qualified(registry) == ["other.get", "plain"]
    assert registry.resolve("shop_get") is None
    assert seen[-1] == 2
    kept = spinoff(build("shop.get"), "shop", keep_namespace=True)
    assert qualified(kept) == ["shop.get"]
    with pytest.raises(RegistryError, match="no tools in namespace 'nope'"):
        spinoff(registry, "nope")


def test_reduce_namespace_drops_it_where_the_name_is_free() -> None:
    registry = build("first", "shop.get", "shop.first", "last", "other.get")
    registry.disable("shop.get", "off")
    renamed = reduce_namespace(registry, "shop")
    assert [t.qualified_name for t in renamed] == ["get"]
    # Order kept; shop.first keeps its namespace because `first` is taken.
    assert qualified(registry) == ["first", "get", "shop.first", "last", "other.get"]
    assert registry.disabled_reason("get") == "off"
    assert registry.wire_name("get") == "get"
    assert registry.resolve("shop_get", include_disabled=True) is None
    assert registry.resolve("get", include_disabled=True) is renamed[0]


def test_reduce_namespace_without_a_name_needs_a_single_namespace() -> None:
    single = build("calc.add", "calc.sub", "free")
    assert [t.name for t in reduce_namespace(single)] == ["add", "sub"]
    assert qualified(single) == ["add", "sub", "free"]
    several = build("a.x", "b.y")
    assert reduce_namespace(several) == []
    assert qualified(several) == ["a.x", "b.y"]


async def test_reduced_tools_still_run() -> None:
    registry = ToolRegistry()
    registry.register(two, namespace="calc")
    reduce_namespace(registry)
    tool = registry.resolve("two")
    assert tool is not None and tool.fn is not None and tool.fn() == 2
