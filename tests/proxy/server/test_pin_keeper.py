"""The pin keeper over a registry and the in-memory store: what each listing of a pinning
source's tools is held back or served as, what an operator's verdict changes, and that the
gate refuses a held tool whatever its enabled state."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator

import pytest

from policies import CallContext, Gate, RulePolicy
from policies.rules import PolicyConfig
from proxy.errors import StateUnavailableError
from proxy.server.pins import PinConflictError, PinKeeper
from proxy.state.pins import MemoryPinStore, PinRecord
from registry import Executor, Tool, ToolCall, ToolMetadata, ToolRegistry


def tool(name: str, description: str, *, mode: str = "block", review_new: bool = False) -> Tool:
    metadata = ToolMetadata(source="mcp:s", pinning=mode, review_new=review_new)  # type: ignore[arg-type]

    async def run(url: str) -> str:
        return f"{name} ran"

    schema = {"type": "object", "properties": {"url": {"type": "string"}}}
    return Tool(name, description, schema, fn=run, is_async=True, namespace="s", metadata=metadata)


def relist(registry: ToolRegistry, listed: Tool) -> None:
    """What a source does when a tool's definition changes: unregister, register again."""
    if listed.qualified_name in registry:
        registry.unregister(listed.qualified_name)
    registry.register(listed)


@contextlib.asynccontextmanager
async def kept() -> AsyncIterator[tuple[ToolRegistry, PinKeeper, MemoryPinStore]]:
    """A registry checked by a keeper on the in-memory store (entered in the test's own
    task, as the app's lifespan does)."""
    registry, store = ToolRegistry(), MemoryPinStore()
    async with PinKeeper(registry, store, refresh_s=60).keeping() as keeper:
        yield registry, keeper, store


async def test_first_sight_pins_and_a_change_is_held_until_accepted() -> None:
    async with kept() as (registry, keeper, store):
        relist(registry, tool("fetch", "Fetch."))
        await keeper.refresh()
        _, records = await store.load()
        assert records["s.fetch"].pinned_by == "first sight"
        assert [t.name for t in registry.list_tools()] == ["fetch"]

        relist(registry, tool("fetch", "Fetch, and leak."))
        assert registry.list_tools() == [] and registry.resolve("s_fetch") is None
        view = keeper.view("s.fetch")
        assert (view.status, view.held) == ("changed", True)
        assert '+  "description": "Fetch, and leak.",' in view.diff
        with pytest.raises(PinConflictError):
            await keeper.accept("s.fetch", digest="sha256:other", by="ops")

        accepted = await keeper.accept("s.fetch", digest=view.digest, by="ops")
        assert (accepted.status, accepted.held) == ("pinned", False)
        assert registry.resolve("s_fetch") is not None
        with pytest.raises(PinConflictError, match="serves its pinned definition"):
            await keeper.reject("s.fetch", digest=None, by="ops")


async def test_warn_serves_a_change_until_rejected_and_a_revert_needs_no_verdict() -> None:
    async with kept() as (registry, keeper, _):
        relist(registry, tool("look", "Look up.", mode="warn"))
        relist(registry, tool("look", "Look up, and mail.", mode="warn"))
        assert (keeper.view("s.look").status, keeper.view("s.look").held) == ("changed", False)
        assert registry.resolve("s_look") is not None

        await keeper.reject("s.look", digest=None, by="ops")
        assert (keeper.view("s.look").status, keeper.view("s.look").held) == ("rejected", True)
        gate = Gate(RulePolicy(PolicyConfig()), Executor(), registry=registry)
        registry.disable("s.look", "maintenance")
        registry.enable("s.look")  # enabling does not release a held tool
        result = await gate.call(
            registry.get_tool("s.look"), ToolCall("c1", "s_look", {"url": "x"}), CallContext(None)
        )
        assert result.is_error and "held back" in result.content

        relist(registry, tool("look", "Look up.", mode="warn"))
        assert (keeper.view("s.look").status, keeper.view("s.look").held) == ("pinned", False)


async def test_a_new_tool_waits_only_on_a_source_already_pinned() -> None:
    async with kept() as (registry, keeper, _):
        relist(registry, tool("first", "First.", review_new=True))
        relist(registry, tool("second", "Second.", review_new=True))
        await keeper.refresh()
        assert {v.name: v.status for v in keeper.views()} == {
            "s.first": "pinned",
            "s.second": "pinned",
        }

        relist(registry, tool("third", "Third.", review_new=True))
        view = keeper.view("s.third")
        assert (view.status, view.held, view.pin, view.diff) == ("new", True, None, "")
        rejected = await keeper.reject("s.third", digest=view.digest, by="ops")
        assert (rejected.status, rejected.held) == ("rejected", True)
        await keeper.accept("s.third", digest=view.digest, by="ops")
        assert keeper.view("s.third").held is False

        # An imported state replaces the pins: a definition it does not pin is drift.
        exported = await keeper.export()
        changed = [
            dataclasses.replace(r, digest="sha256:0") if r.name == "s.first" else r
            for r in exported
        ]
        await keeper.replace(changed)
        assert (keeper.view("s.first").status, keeper.view("s.first").held) == ("changed", True)
        assert isinstance(exported[0], PinRecord)


async def test_sources_that_do_not_pin_are_left_alone() -> None:
    async with kept() as (registry, keeper, store):
        relist(registry, tool("plain", "Plain.", mode="off"))
        relist(registry, tool("plain", "Plain, changed.", mode="off"))
        await keeper.refresh()
        assert keeper.views() == [] and (await store.load())[1] == {}
        assert registry.resolve("s_plain") is not None


async def test_the_follower_stops_when_a_wake_comes_as_the_block_ends() -> None:
    # A wake (a first sight, a verdict) in the same moment as the end of the block: the
    # follower still stops. asyncio.wait_for on Python 3.11 returned the wake and dropped
    # the cancellation, so the app's stop waited for the follower forever.
    registry, store = ToolRegistry(), MemoryPinStore()
    keeper = PinKeeper(registry, store, refresh_s=60)

    async def keep_then_end() -> None:
        async with keeper.keeping():
            await asyncio.sleep(0)  # one turn of the loop: the follower starts its wait
            keeper._wake.set()

    ending = asyncio.create_task(keep_then_end())
    ended, _ = await asyncio.wait({ending}, timeout=60)  # a deadline that must not fire
    ending.cancel()
    assert ending in ended, "the pins follower did not stop"


def _cancel_after(task: asyncio.Task[None], turns: int) -> None:
    if turns == 0:
        task.cancel()
    else:
        asyncio.get_running_loop().call_soon(_cancel_after, task, turns - 1)


@pytest.mark.parametrize("turns", [None, 0, 1, 2, 3, 4])
async def test_a_cancellation_as_the_block_ends_is_kept(turns: int | None) -> None:
    # The task that ends the keeper's block is cancelled while it stops the follower (or
    # just before or after): it ends cancelled. asyncio passes the cancellation of a task
    # awaiting another to the awaited one; the keeper took it back as the follower's own
    # end and the cancelled task went on. No cancellation: the block ends as it would.
    registry, store = ToolRegistry(), MemoryPinStore()
    keeper = PinKeeper(registry, store, refresh_s=60)
    went_on = asyncio.Event()

    async def keep_then_end() -> None:
        async with keeper.keeping():
            await asyncio.sleep(0)  # the follower starts its wait
            if turns is not None:
                _cancel_after(ending, turns)
        for _ in range(6):  # a cancellation that lands after the block lands here
            await asyncio.sleep(0)
        went_on.set()

    ending = asyncio.create_task(keep_then_end())
    await asyncio.wait({ending}, timeout=60)  # a deadline that must not fire
    assert ending.done()
    assert ending.cancelled() is (turns is not None)
    assert went_on.is_set() is (turns is None)
    assert [t for t in asyncio.all_tasks() if t.get_name() == "toolwire-pins"] == []


class DroppingStore(MemoryPinStore):
    """A store whose read of the revision drops a cancellation that comes during it, as
    redis-py's socket writes under Python 3.11's `asyncio.wait_for` can: it then answers,
    or fails as a lost store does."""

    def __init__(self, *, fails: bool) -> None:
        super().__init__()
        self.fails = fails
        self.reading = asyncio.Event()

    async def revision(self) -> int:
        self.reading.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()
        if self.fails:
            raise StateUnavailableError("the shared state (Redis) is unavailable")
        return await super().revision()


@pytest.mark.parametrize("fails", [False, True], ids=["answers", "fails"])
async def test_the_follower_stops_when_the_store_drops_its_cancellation(fails: bool) -> None:
    # The app stops while the follower reads the store, and the store's client drops the
    # cancellation: the follower still ends (it went on following, and the replica's stop
    # waited for it until the test's server gave up).
    registry, store = ToolRegistry(), DroppingStore(fails=fails)
    keeper = PinKeeper(registry, store, refresh_s=60)

    async def keep_then_end() -> None:
        async with keeper.keeping():
            keeper._wake.set()
            await store.reading.wait()

    ending = asyncio.create_task(keep_then_end())
    ended, _ = await asyncio.wait({ending}, timeout=60)  # a deadline that must not fire
    ending.cancel()
    assert ending in ended, "the pins follower did not stop"
    assert ending.exception() is None
    assert [t for t in asyncio.all_tasks() if t.get_name() == "toolwire-pins"] == []
