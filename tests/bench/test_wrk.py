"""wrk's checking script (`bench/wrk.py`), run by wrk itself: its plain-search `joined` finds
what the pattern it replaced found, over generated texts, and every answer is still judged
(a wrong one after a right one, of the same length, is counted wrong)."""

from __future__ import annotations

import asyncio
import random
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from bench import wrk
from bench.workload import TEXT, request_body

pytestmark = pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")

# The pattern version the script had, the reference.
_GMATCH = """
local function by_pattern(text, pattern)
  local pieces = {}
  for piece in text:gmatch(pattern) do
    pieces[#pieces + 1] = piece
  end
  return table.concat(pieces)
end
"""

_ATOMS = ['"content":"', '"text":"', '"delta":"', '"', "\\", '\\"', "a", "b c", ":", "{", "}", "\n"]


def _texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_ATOMS) for _ in range(rng.randint(0, 14))) for _ in range(count)]


def _lua(text: str) -> str:
    return "'" + "".join(f"\\{byte}" for byte in text.encode()) + "'"


def test_joined_finds_what_the_pattern_found(tmp_path: Path) -> None:
    script = wrk.lua_script("{}", False, "chat", TEXT)
    start = script.index("local function joined")
    joined = script[start : script.index("\nend\n", start) + 5]
    texts = _texts(3000, 29)
    cases = "\n".join(f"  {_lua(text)}," for text in texts)
    checks = f"""{joined}{_GMATCH}
local texts = {{
{cases}
}}
local differ, found = 0, 0
for _, text in ipairs(texts) do
  for _, key in ipairs({{'"content":"', '"text":"', '"delta":"'}}) do
    local plain = joined(text, key)
    local pattern = by_pattern(text, key .. '([^"]*)"')
    if plain ~= pattern then differ = differ + 1 end
    if pattern ~= "" then found = found + 1 end
  end
end
io.write("DIFFER " .. differ .. " FOUND " .. found .. "\\n")
os.exit(0)
"""
    path = tmp_path / "check.lua"
    path.write_text(checks)
    out = subprocess.run(
        ["wrk", "-t1", "-c1", "-d1s", "-s", str(path), "http://127.0.0.1:1/"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    differ, found = int(out.split()[1]), int(out.split()[3])
    assert differ == 0
    assert found > 500  # the generated texts hold many strings to find


def _chat(text: str, stream: bool, done: bool = True) -> bytes:
    if not stream:
        return orjson.dumps({"id": "x", "choices": [{"message": {"content": text}}]})
    events = [
        {"choices": [{"delta": {"content": text[i : i + 7]}}]} for i in range(0, len(text), 7)
    ]
    body = b"".join(b"data: " + orjson.dumps(event) + b"\n\n" for event in events)
    return body + (b"data: [DONE]\n\n" if done else b"")


class _Answers(asyncio.Protocol):
    """Answers each request with the next body of a cycle, counting the wrong ones sent."""

    def __init__(self, bodies: list[tuple[bytes, bool]], sent: list[int]) -> None:
        self.bodies, self.sent = bodies, sent
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            length = int(self.buffer.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length :]
            body, right = self.bodies[self.sent[0] % len(self.bodies)]
            self.sent[0] += 1
            self.sent[1] += not right
            head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
            self.transport.write(head + body)


@pytest.mark.parametrize("stream", [False, True])
async def test_every_answer_is_judged_a_wrong_one_after_a_right_one_too(
    stream: bool, tmp_path: Path
) -> None:
    right = _chat(TEXT, stream)
    wrong = _chat(TEXT.replace("fox", "cat"), stream)  # the same length
    assert len(wrong) == len(right)
    bodies = [(right, True), (right, True), (wrong, False)]
    if stream:
        bodies.append((_chat(TEXT, stream, done=False), False))
    sent = [0, 0]
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Answers(bodies, sent), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    script = tmp_path / "check.lua"
    script.write_text(
        wrk.lua_script(orjson.dumps(request_body(stream)).decode(), stream, "chat", TEXT)
    )
    try:
        proc = await asyncio.create_subprocess_exec(
            *wrk.command("wrk", 1, 1, script, f"http://127.0.0.1:{port}/v1/chat/completions"),
            stdout=subprocess.PIPE,
        )
        out, _ = await proc.communicate()
    finally:
        server.close()
    raw = wrk.result(out.decode())
    assert raw["requests"] > 2 * len(bodies)
    # An answer still on its way when wrk stops is sent but not counted.
    assert sent[0] - 1 <= raw["requests"] <= sent[0]
    assert sent[1] - 1 <= raw["bad_content"] <= sent[1]
    assert wrk.answered(raw) >= raw["requests"] // 2
