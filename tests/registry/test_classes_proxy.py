"""A class's methods as tools through the real proxy, configured with `python_class:`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing.upstream import FakeUpstream, Reply
from tests.e2e.answers import ask, tool_messages, tool_names

pytestmark = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])

CART = '''
class Cart:
    """A shopping cart."""

    def __init__(self, currency: str = "USD") -> None:
        self.currency = currency
        self.lines: list[tuple[str, int]] = []

    def add(self, item: str, quantity: int = 1) -> dict:
        """Add an item to the cart.

        Args:
            item: what to add.
            quantity: how many.
        """
        self.lines.append((item, quantity))
        return {"lines": len(self.lines), "currency": self.currency}

    @staticmethod
    def vat(amount: float) -> float:
        """VAT on an amount."""
        return round(amount * 0.2, 2)
'''


async def test_class_methods_through_the_proxy(
    make_proxy, upstream: FakeUpstream, tmp_path: Path, stream: bool
) -> None:
    (tmp_path / "cart.py").write_text(CART)
    upstream.script(
        Reply.tool_calls(
            [("cart_add", {"item": "tea", "quantity": 2}), ("cart_vat", {"amount": 10})]
        ),
        Reply.text("Added."),
    )
    tools = [{"python_class": f"{tmp_path / 'cart.py'}:Cart", "init": {"currency": "EUR"}}]
    async with make_proxy(tools=tools) as proxy:
        out = await ask(
            proxy.client, stream=stream, messages=[{"role": "user", "content": "Add 2 teas"}]
        )
    assert out.content == "Added."
    assert {"cart_add", "cart_vat"} <= set(tool_names(upstream.requests[0]))
    added, vat = tool_messages(upstream.requests[1])
    assert json.loads(added["content"]) == {"lines": 1, "currency": "EUR"}
    assert vat["content"] == "2.0"
