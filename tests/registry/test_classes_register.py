"""Classes and instances as tools: bound methods, static and class methods, the MRO."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from registry import Executor, SourceLoadError, ToolCall, ToolOverride, ToolRegistry
from registry.classes import (
    PythonClassSource,
    PythonClassSourceConfig,
    register_class,
    snake_case,
)
from registry.errors import RegistryError


class BaseCounter:
    def describe(self) -> str:
        """Say what this counter is."""
        return f"counter at {self.value}"  # type: ignore[attr-defined]

    def reset(self) -> int:
        """Reset the counter (overridden below)."""
        return -1


class ShoppingCart(BaseCounter):
    """A cart: instance state, a static helper and a class-level factory."""

    currency = "EUR"

    def __init__(self, start: int = 0) -> None:
        self.value = start

    def add(self, amount: int) -> int:
        """Add to the total.

        Args:
            amount: how much to add.
        """
        self.value += amount
        return self.value

    async def total(self) -> int:
        """The current total."""
        return self.value

    def reset(self) -> int:
        """Empty the cart."""
        self.value = 0
        return self.value

    @staticmethod
    def tax(amount: float) -> float:
        """VAT on an amount.

        Args:
            amount: net amount.
        """
        return round(amount * 0.2, 2)

    @classmethod
    def unit(cls) -> str:
        """The cart's currency."""
        return cls.currency

    @property
    def size(self) -> int:
        return self.value

    def _private(self) -> None:
        """Never a tool."""


class NeedsArgs:
    def __init__(self, token: str) -> None:
        self.token = token

    def whoami(self) -> str:
        """The token."""
        return self.token

    @staticmethod
    def ping() -> str:
        """Pong."""
        return "pong"


async def run(registry: ToolRegistry, name: str, arguments: dict[str, object]) -> str:
    with Executor() as executor:
        result = await executor.execute(registry.get_tool(name), ToolCall("c", name, arguments))
    assert not result.is_error, result.content
    return result.content


@pytest.mark.parametrize(
    ("name", "expected"),
    [("ShoppingCart", "shopping_cart"), ("HTTPClient", "http_client"), ("Tools2", "tools2")],
)
def test_snake_case(name: str, expected: str) -> None:
    assert snake_case(name) == expected


async def test_an_instance_binds_its_methods() -> None:
    registry = ToolRegistry()
    cart = ShoppingCart(start=10)
    tools = register_class(registry, cart)
    assert [t.qualified_name for t in tools] == [
        "shopping_cart.add",
        "shopping_cart.total",
        "shopping_cart.reset",
        "shopping_cart.tax",
        "shopping_cart.unit",
    ]
    assert registry.get_tool("shopping_cart.add").parameters["properties"] == {
        "amount": {"type": "integer", "description": "how much to add."}
    }
    assert await run(registry, "shopping_cart.add", {"amount": 5}) == "15"
    assert await run(registry, "shopping_cart.total", {}) == "15"
    assert cart.value == 15
    assert registry.get_tool("shopping_cart.total").is_async


async def test_a_class_runs_static_and_class_methods_and_makes_one_instance() -> None:
    registry = ToolRegistry()
    register_class(registry, ShoppingCart, namespace="cart")
    assert await run(registry, "cart.tax", {"amount": 10}) == "2.0"
    assert await run(registry, "cart.unit", {}) == "EUR"
    assert await run(registry, "cart.add", {"amount": 2}) == "2"
    # The same instance serves every instance method.
    assert await run(registry, "cart.add", {"amount": 3}) == "5"


async def test_inherited_methods_follow_the_mro_when_asked() -> None:
    registry = ToolRegistry()
    names = [t.name for t in register_class(registry, ShoppingCart(3), include_inherited=True)]
    assert names == ["add", "total", "reset", "tax", "unit", "describe"]
    # The subclass's reset wins over the base's.
    assert await run(registry, "shopping_cart.reset", {}) == "0"
    assert await run(registry, "shopping_cart.describe", {}) == "counter at 0"


def test_a_class_needing_arguments_is_a_clear_error_unless_given_them() -> None:
    with pytest.raises(RegistryError, match=r"instance methods \(whoami\) need an instance"):
        register_class(ToolRegistry(), NeedsArgs)
    registry = ToolRegistry()
    register_class(registry, NeedsArgs, init_kwargs={"token": "t"})
    assert "needs_args.whoami" in registry and "needs_args.ping" in registry


def test_a_constructor_that_raises_is_reported() -> None:
    class Broken:
        def __init__(self) -> None:
            raise RuntimeError("no database")

        def query(self) -> str:
            """Query."""
            return ""

    with pytest.raises(RegistryError, match="creating an instance failed: RuntimeError"):
        register_class(ToolRegistry(), Broken)


def test_overrides_tags_and_clashes() -> None:
    registry = ToolRegistry()
    register_class(
        registry,
        ShoppingCart,
        tags=["shop"],
        overrides={"reset": ToolOverride(enabled=False, tags=["destructive"])},
    )
    assert registry.get_tool("shopping_cart.reset").metadata.tags == {"shop", "destructive"}
    assert not registry.is_enabled("shopping_cart.reset")
    with pytest.raises(RegistryError, match="already registered"):
        register_class(registry, ShoppingCart)
    with pytest.raises(RegistryError, match="unknown methods: nope"):
        register_class(ToolRegistry(), ShoppingCart, overrides={"nope": ToolOverride()})


CLASS_FILE = '''
class Greeter:
    def __init__(self, greeting: str = "Hello") -> None:
        self.greeting = greeting

    def greet(self, name: str) -> str:
        """Greet someone."""
        return f"{self.greeting}, {name}!"
'''


async def test_python_class_source_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "greeter.py").write_text(textwrap.dedent(CLASS_FILE))
    config = PythonClassSourceConfig(python_class="greeter.py:Greeter", init={"greeting": "Hi"})
    registry = ToolRegistry()
    source = PythonClassSource(config, base_dir=tmp_path)
    await source.start(registry)
    assert source.status().tool_count == 1
    assert registry.get_tool("greeter.greet").metadata.source == "python_class:greeter.py:Greeter"
    assert await run(registry, "greeter.greet", {"name": "Ada"}) == "Hi, Ada!"


async def test_python_class_source_from_a_module_and_its_errors(tmp_path: Path) -> None:
    target = f"{__name__}:ShoppingCart"
    registry = ToolRegistry()
    await PythonClassSource(
        PythonClassSourceConfig(python_class=target, namespace="cart"), base_dir=tmp_path
    ).start(registry)
    assert "cart.add" in registry
    missing = PythonClassSource(
        PythonClassSourceConfig(python_class=f"{__name__}:Nope"), base_dir=tmp_path
    )
    with pytest.raises(SourceLoadError, match="Nope is not a class"):
        await missing.start(ToolRegistry())
    needs = PythonClassSource(
        PythonClassSourceConfig(python_class=f"{__name__}:NeedsArgs"), base_dir=tmp_path
    )
    with pytest.raises(SourceLoadError, match="need an instance"):
        await needs.start(ToolRegistry())
    assert not needs.status().reachable
