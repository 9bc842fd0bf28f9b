"""SIGTERM to `toolwire serve` while the thread of a timed-out sync tool still sleeps: the
process exits once drained; nothing waits for that thread."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import openai

from testing.upstream import FakeUpstream, Reply
from tests.e2e.served import toolwire_serve

USER = [{"role": "user", "content": "Rest a while."}]


async def test_sigterm_exits_while_a_timed_out_tool_thread_sleeps(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    upstream.script(Reply.tool_calls([("demo_nap", {"seconds": 600})]), Reply.text("awake"))
    served = toolwire_serve(
        tmp_path, upstream, execution={"mode": "thread", "timeout_s": 0.5}, server={"drain_s": 5}
    )
    async with served as (base, process):
        client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0, timeout=30)
        async with client:
            answer = await client.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
        assert answer.choices[0].message.content == "awake"
        (tool_message,) = [m for m in upstream.requests[1]["messages"] if m["role"] == "tool"]
        assert "did not finish within 0.5 seconds" in tool_message["content"]

        process.send_signal(signal.SIGTERM)
        # A hang check, not a speed check: the thread sleeps for ten minutes.
        assert await asyncio.to_thread(process.wait, 20) == 0
