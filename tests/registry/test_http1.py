"""The upstream HTTP/1.1 client against real loopback servers: bodies in every framing,
compressed answers, the pool's bound and reuse, deadlines, cancellation and TLS."""

from __future__ import annotations

import asyncio
import copy
import datetime
import gzip
import pickle
import socket
import ssl
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from registry import http1
from registry.http1 import ConnectError, Disconnected, Pool, ProtocolError
from registry.http1 import pool as pool_module
from testing.misbehaving_upstream import Act, MisbehavingUpstream, json_reply
from testing.waiting import until


def _chunked(data: bytes, size: int) -> bytes:
    pieces = [data[i : i + size] for i in range(0, len(data), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


GZIPPED = _chunked(gzip.compress(b"hello world", mtime=0), 3)
"""A gzip body in chunks of three bytes: most decode to nothing on their own."""


def pool(limit: int = 10, **kwargs: float) -> Pool:
    return Pool(limit=limit, connect_timeout_s=5.0, keepalive_s=4.0, **kwargs)  # type: ignore[arg-type]


def raw(head: str, body: bytes = b"") -> bytes:
    return head.replace("\n", "\r\n").encode() + b"\r\n" + body


async def fetch(client: Pool, url: str, **kwargs: float) -> tuple[int, dict[str, str], bytes]:
    response = await client.request(b"POST", url, {"content-type": "text/plain"}, b"hi", **kwargs)
    try:
        return response.status, response.headers, await response.read()
    finally:
        response.close()


@pytest.mark.parametrize(
    "reply",
    [
        raw("HTTP/1.1 200 OK\nContent-Length: 11\n", b"hello world"),
        raw(
            "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n",
            b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
        ),
        raw(
            "HTTP/1.1 200 OK\nContent-Encoding: gzip\nContent-Length: 31\n",
            gzip.compress(b"hello world", mtime=0),
        ),
        raw(
            "HTTP/1.1 200 OK\nContent-Encoding: deflate\nContent-Length: 19\n",
            zlib.compress(b"hello world"),
        ),
        raw("HTTP/1.1 103 Early Hints\nLink: </a>; rel=preload\n")
        + raw("HTTP/1.1 200 OK\nContent-Length: 11\n", b"hello world"),
        raw("HTTP/1.1 200 OK\nContent-Encoding: gzip\nTransfer-Encoding: chunked\n", GZIPPED),
    ],
    ids=["length", "chunked", "gzip", "deflate", "early-hints", "gzip-chunked"],
)
async def test_a_body_in_any_framing_reads_the_same(reply: bytes) -> None:
    async with MisbehavingUpstream(Act.answer(reply)) as fake:
        client = pool()
        status, headers, body = await fetch(client, fake.base_url)
        await client.aclose()
    assert (status, body) == (200, b"hello world")
    assert "link" not in headers, "an interim answer's headers are not the answer's"


async def test_a_body_that_runs_to_the_close_is_whole_and_its_connection_not_reused() -> None:
    reply = raw("HTTP/1.1 200 OK\nContent-Type: text/plain\n", b"until the end")
    async with MisbehavingUpstream(
        Act.answer(reply, then="fin"), Act.answer(json_reply({}))
    ) as fake:
        client = pool()
        assert (await fetch(client, fake.base_url))[2] == b"until the end"
        assert (await fetch(client, fake.base_url))[2] == b"{}"
        await client.aclose()
    assert fake.connections == 2


async def test_the_request_goes_out_as_http_1_1_with_its_length_and_host() -> None:
    seen: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head + await reader.readexactly(2))
        writer.write(json_reply({"ok": True}))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = pool()
    status, _, body = await fetch(client, f"http://127.0.0.1:{port}/v1/chat?x=1")
    await client.aclose()
    server.close()
    await server.wait_closed()
    head = seen[0].decode()
    assert head.startswith("POST /v1/chat?x=1 HTTP/1.1\r\n")
    assert f"\r\nHost: 127.0.0.1:{port}\r\n" in head
    assert "\r\nContent-Length: 2\r\n" in head
    assert "\r\ncontent-type: text/plain\r\n" in head
    assert head.endswith("\r\n\r\nhi")
    assert (status, body) == (200, b'{"ok":true}')


async def test_a_callers_host_user_agent_and_encoding_replace_the_clients_own() -> None:
    heads: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(raw("HTTP/1.1 200 OK\nContent-Length: 2\nConnection: close\n", b"{}"))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    client = pool()
    sent = (
        {"Content-Type": "application/json"},
        {"User-Agent": "mine/1", "x-trace": "1"},
        {"user-agent": "mine/2"},
        {"HOST": "api.example", "Accept-Encoding": "identity", "authorization": "Bearer k"},
    )
    for headers in [*sent, *map(http1.Headers, sent)]:
        response = await client.request(b"GET", url, headers)
        await response.read()
        response.close()
    for refused in ({"Content-Length": "3"}, {"transfer-encoding": "chunked"}):
        for given in (refused, http1.Headers(refused)):
            with pytest.raises(ValueError, match="the client's to write"):
                await client.request(b"POST", url, given, b"abc")
    await client.aclose()
    server.close()
    await server.wait_closed()
    assert heads[4:] == heads[:4], "shared headers make the same heads"
    heads = heads[:4]

    def lines(head: bytes, name: bytes) -> list[bytes]:
        return [line for line in head.split(b"\r\n") if line.lower().startswith(name + b":")]

    agents = [lines(head, b"user-agent") for head in heads]
    assert agents == [
        [b"User-Agent: toolwire"],
        [b"User-Agent: mine/1"],
        [b"user-agent: mine/2"],
        [b"User-Agent: toolwire"],
    ]
    # The caller's Host and Accept-Encoding replace the client's, one line each.
    assert [lines(head, b"host") for head in heads] == [
        *[[f"Host: 127.0.0.1:{port}".encode()]] * 3,
        [b"HOST: api.example"],
    ]
    assert [lines(head, b"accept-encoding") for head in heads] == [
        *[[b"Accept-Encoding: gzip, deflate"]] * 3,
        [b"Accept-Encoding: identity"],
    ]
    assert all(len(lines(head, b"content-length")) == 1 for head in heads)


def test_shared_headers_are_never_changed_and_copy_as_plain_dicts() -> None:
    shared = http1.Headers({"Content-Type": "application/json", "Authorization": "Bearer k"})
    changes = [
        lambda h: h.__setitem__("x", "1"),
        lambda h: h.__delitem__("Authorization"),
        lambda h: h.update(x="1"),
        lambda h: h.pop("Authorization"),
        lambda h: h.popitem(),
        lambda h: h.setdefault("x", "1"),
        lambda h: h.clear(),
        lambda h: h.__ior__({"x": "1"}),
    ]
    for change in changes:
        with pytest.raises(TypeError, match="shared"):
            change(shared)
    assert shared == {"Content-Type": "application/json", "Authorization": "Bearer k"}
    for copied in (dict(shared), copy.copy(shared), copy.deepcopy(shared), {**shared}):
        assert copied.__class__ is dict and copied == shared
        copied["x"] = "1"
    assert pickle.loads(pickle.dumps(shared)).__class__ is dict
    with pytest.raises(ValueError, match="line break"):
        http1.Headers({"x-a": "1\r\nx-b: 2"})


async def test_a_header_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    async with MisbehavingUpstream(Act.answer(json_reply({}))) as fake:
        client = pool()
        with pytest.raises(ValueError, match="line break"):
            await client.request(b"POST", fake.base_url, {"x-a": "1\r\nx-b: 2"}, b"")
        await client.aclose()
    assert fake.connections == 0


async def test_connections_are_reused_and_bounded_by_the_limit() -> None:
    async with MisbehavingUpstream(default=Act.answer(json_reply({"n": 1}))) as fake:
        client = pool(limit=1)
        first = await client.request(b"POST", fake.base_url, {}, b"")
        waiting = asyncio.ensure_future(fetch(client, fake.base_url))
        await asyncio.sleep(0)
        assert not waiting.done(), "the second request waits for the only connection"
        assert await first.read() == b'{"n":1}'
        first.close()
        status, _, _ = await asyncio.wait_for(waiting, 10)
        await fetch(client, fake.base_url)
        await client.aclose()
    assert status == 200
    assert fake.connections == 1


async def test_an_answer_left_unread_closes_its_connection() -> None:
    async with MisbehavingUpstream(default=Act.answer(json_reply({"big": "x" * 1000}))) as fake:
        client = pool(limit=1)
        response = await client.request(b"POST", fake.base_url, {}, b"")
        response.close()
        await fetch(client, fake.base_url)
        await client.aclose()
    assert fake.connections == 2


async def test_a_stalled_body_ends_at_the_idle_deadline() -> None:
    reply = raw("HTTP/1.1 200 OK\nContent-Length: 100\n", b"part")
    async with MisbehavingUpstream(Act.answer(reply)) as fake:
        client = pool()
        response = await client.request(b"POST", fake.base_url, {}, b"", idle_s=0.1)
        assert await response.read_any() == b"part"
        with pytest.raises(TimeoutError):
            await response.read_any()
        response.close()
        await client.aclose()


async def test_the_total_deadline_bounds_the_head_and_the_body() -> None:
    async with MisbehavingUpstream(Act.answer(b"", then="keep")) as fake:
        client = pool()
        with pytest.raises(TimeoutError):
            await client.request(b"POST", fake.base_url, {}, b"", total_s=0.1)
        await client.aclose()


async def test_the_first_byte_limit_bounds_the_head_and_not_the_body() -> None:
    silent = Act.answer(b"", then="keep")
    slow_body = Act.answer(raw("HTTP/1.1 200 OK\nContent-Length: 100\n", b"part"))
    async with MisbehavingUpstream(silent, slow_body) as fake:
        client = pool()
        with pytest.raises(TimeoutError):
            await client.request(b"POST", fake.base_url, {}, b"", first_byte_s=0.1)
        response = await client.request(b"POST", fake.base_url, {}, b"", first_byte_s=0.1)
        await asyncio.sleep(0.2)  # past the limit: the head came in time, the body may wait
        assert await response.read_any() == b"part"
        response.close()
        await client.aclose()


async def test_the_first_byte_limit_bounds_the_wait_for_a_connection() -> None:
    async with MisbehavingUpstream(default=Act.answer(json_reply({}))) as fake:
        client = pool(limit=1)
        held = await client.request(b"POST", fake.base_url, {}, b"")
        with pytest.raises(TimeoutError):
            await client.request(b"POST", fake.base_url, {}, b"", first_byte_s=0.1)
        await held.read()
        held.close()
        status, _, _ = await fetch(client, fake.base_url, first_byte_s=5.0)
        await client.aclose()
    assert status == 200
    assert fake.connections == 1, "the request that timed out took no connection"


async def test_body_now_hands_over_a_whole_body_without_a_wait_and_nothing_before() -> None:
    async def whole(response: http1.Response) -> bytes:
        seen: list[bytes | None] = []
        await until(lambda: seen.append(response.body_now()) or seen[-1] is not None)
        data = seen[-1]
        assert data is not None
        return data

    reply = raw("HTTP/1.1 200 OK\nContent-Length: 100\n", b"part")
    async with MisbehavingUpstream(
        Act.answer(json_reply({"n": 1})),
        Act.answer(raw("HTTP/1.1 200 OK\nContent-Length: 0\n", b"")),
        Act.answer(reply, then="fin"),
    ) as fake:
        client = pool()
        answered = await client.request(b"POST", fake.base_url, {}, b"")
        assert await whole(answered) == b'{"n":1}'
        assert await answered.read_any() == b"", "taken: then its end"
        answered.close()
        empty = await client.request(b"POST", fake.base_url, {}, b"")
        assert await whole(empty) == b""
        empty.close()
        assert fake.connections == 1, "read whole, the connection carried the next request"
        cut = await client.request(b"POST", fake.base_url, {}, b"")
        await until(lambda: cut._error is not None)
        assert cut.body_now() is None, "a body that broke off is never whole"
        assert await cut.read_any() == b"part", "nothing was taken"
        with pytest.raises(Disconnected, match="mid-answer"):
            await cut.read_any()
        cut.close()
        await client.aclose()


async def test_a_connection_closed_before_any_answer_is_unanswered() -> None:
    async with MisbehavingUpstream(
        Act.hang_up(), Act.answer(b"HTTP/1.1 200 OK\r\n", then="fin")
    ) as fake:
        client = pool()
        with pytest.raises(Disconnected) as before:
            await client.request(b"POST", fake.base_url, {}, b"")
        with pytest.raises(Disconnected) as during:
            await client.request(b"POST", fake.base_url, {}, b"")
        await client.aclose()
    assert not before.value.answered
    assert during.value.answered


async def test_a_body_cut_mid_way_is_an_error_not_an_end() -> None:
    reply = raw("HTTP/1.1 200 OK\nContent-Length: 100\n", b"part")
    async with MisbehavingUpstream(Act.answer(reply, then="fin")) as fake:
        client = pool()
        response = await client.request(b"POST", fake.base_url, {}, b"")
        with pytest.raises(Disconnected, match="mid-answer"):
            await response.read()
        response.close()
        await client.aclose()


async def test_an_answer_that_is_not_http_is_a_protocol_error() -> None:
    async with MisbehavingUpstream(Act.answer(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")) as fake:
        client = pool()
        with pytest.raises(ProtocolError):
            await client.request(b"POST", fake.base_url, {}, b"")
        await client.aclose()


async def test_nothing_listening_is_a_connect_error() -> None:
    # Bound, not listening, while the test runs: a port closed first could meanwhile be
    # taken (another worker's server, the client's own end of the connection).
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        client = pool()
        with pytest.raises(ConnectError) as caught:
            await client.request(b"GET", f"http://127.0.0.1:{port}/", {})
        await client.aclose()
    assert caught.value.port == port


async def test_a_cancelled_request_closes_its_connection_and_frees_its_place() -> None:
    async with MisbehavingUpstream(Act.answer(b""), default=Act.answer(json_reply({}))) as fake:
        client = pool(limit=1)
        waiting = asyncio.ensure_future(client.request(b"POST", fake.base_url, {}, b""))
        await until(lambda: bool(fake.requests))
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        status, _, _ = await asyncio.wait_for(fetch(client, fake.base_url), 10)
        await client.aclose()
    assert status == 200
    assert fake.connections == 2


async def test_a_large_body_read_slowly_arrives_whole() -> None:
    # Past the high-water mark the connection stops reading until the body is read on.
    body = bytes(range(256)) * 8192  # 2 MiB
    reply = raw(f"HTTP/1.1 200 OK\nContent-Length: {len(body)}\n", body)
    async with MisbehavingUpstream(Act.answer(reply), default=Act.answer(json_reply({}))) as fake:
        client = pool(limit=1)
        response = await client.request(b"POST", fake.base_url, {}, b"")
        parts = []
        while part := await response.read_any():
            parts.append(part)
            await asyncio.sleep(0.001)
        response.close()
        await fetch(client, fake.base_url)
        await client.aclose()
    assert b"".join(parts) == body
    assert fake.connections == 1, "a body read whole leaves its connection for the next"


async def test_idle_connections_age_out(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(pool_module, "_clock", lambda: now[0])
    async with MisbehavingUpstream(default=Act.answer(json_reply({}))) as fake:
        client = pool()
        await fetch(client, fake.base_url)
        now[0] += 3.9
        await fetch(client, fake.base_url)
        now[0] += 4.1
        await fetch(client, fake.base_url)
        await client.aclose()
    assert fake.connections == 2


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
async def tls_server(certificate: tuple[Path, Path]) -> AsyncIterator[int]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(json_reply({"tls": True}))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "localhost", 0, ssl=context)
    yield server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()


async def test_https_checks_the_server_certificate(
    tls_server: int, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = pool()
    with pytest.raises(ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        await client.request(b"GET", f"https://localhost:{tls_server}/", {})
    await client.aclose()
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    trusting = pool()
    response = await trusting.request(b"GET", f"https://localhost:{tls_server}/", {})
    assert await response.read() == b'{"tls":true}'
    response.close()
    await trusting.aclose()


class _SlowEnd:
    """A server whose chunked answers send their last frame only when told (`end`), as a
    stream's `0\\r\\n\\r\\n` often comes a moment after its `[DONE]`; with `tail`, more
    body before that frame."""

    def __init__(self, tail: bytes = b"") -> None:
        self.connections = 0
        self.end = asyncio.Event()
        self.tail = tail
        self.port = 0
        self.closing = False
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> _SlowEnd:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        self.closing = True
        self.end.set()
        for writer in self._writers:
            writer.close()
        await asyncio.wait_for(asyncio.gather(*self._tasks, return_exceptions=True), 10)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.append(task)
        self._writers.append(writer)
        self.connections += 1
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                writer.write(b"e\r\ndata: [DONE]\n\n\r\n")
                await writer.drain()
                await self.end.wait()
                if self.closing:
                    break
                self.end.clear()
                if self.tail:
                    writer.write(b"%x\r\n%s\r\n" % (len(self.tail), self.tail))
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.mark.parametrize(
    ("tail", "connections"),
    [(b"", 1), (b"x" * 20_000, 2)],
    ids=["its-last-frame-comes", "its-body-goes-on"],
)
async def test_a_released_answer_keeps_its_connection_only_if_its_body_ends(
    tail: bytes, connections: int
) -> None:
    async with _SlowEnd(tail) as server:
        client = pool(limit=1)
        url = f"http://127.0.0.1:{server.port}/"
        response = await client.request(b"POST", url, {}, b"")
        assert await response.read_any() == b"data: [DONE]\n\n"
        response.release()
        server.end.set()
        second = await asyncio.wait_for(client.request(b"POST", url, {}, b""), 10)
        second.close()
        await client.aclose()
        assert server.connections == connections


@pytest.mark.parametrize(("ends", "connections"), [(True, 1), (False, 2)], ids=["ends", "goes-on"])
async def test_a_finished_answer_frees_its_connection_before_the_next_request(
    ends: bool, connections: int
) -> None:
    async with _SlowEnd() as server:
        client = pool(limit=2)
        url = f"http://127.0.0.1:{server.port}/"
        response = await client.request(b"POST", url, {}, b"")
        assert await response.read_any() == b"data: [DONE]\n\n"
        loop = asyncio.get_running_loop()
        if ends:
            loop.call_later(0.05, server.end.set)
        started = loop.time()
        await response.finish(0.5 if ends else 0.1)
        waited = loop.time() - started
        second = await asyncio.wait_for(client.request(b"POST", url, {}, b""), 10)
        second.close()
        await client.aclose()
        assert server.connections == connections
        assert (waited < 0.5) if ends else (waited >= 0.1)


async def test_a_resolve_hook_gives_the_addresses_tried_in_turn() -> None:
    asked: list[tuple[str, int]] = []
    closed = await asyncio.start_server(lambda r, w: None, "127.0.0.2", 0)
    refused_port = closed.sockets[0].getsockname()[1]
    closed.close()
    await closed.wait_closed()

    async with MisbehavingUpstream(default=Act.answer(json_reply({"ok": 1}))) as fake:
        port = int(fake.base_url.rsplit(":", 1)[1].split("/")[0])

        async def resolve(host: str, at: int) -> list[str]:
            asked.append((host, at))
            return ["127.0.0.2", "127.0.0.1"] if at == port else ["127.0.0.2"]

        client = Pool(limit=4, connect_timeout_s=5.0, keepalive_s=4.0, resolve=resolve)
        status, _, body = await fetch(client, f"http://service.test:{port}/v1")
        with pytest.raises(ConnectError):
            await client.request(b"GET", f"http://service.test:{refused_port}/", {})
        await client.aclose()
    assert (status, body) == (200, b'{"ok":1}')
    assert asked == [("service.test", port), ("service.test", refused_port)]


async def test_no_connection_within_the_connect_timeout_is_a_connect_timeout() -> None:
    async def never(host: str, port: int) -> list[str]:
        await asyncio.Event().wait()
        return []

    client = Pool(limit=1, connect_timeout_s=0.05, keepalive_s=4.0, resolve=never)
    with pytest.raises(http1.ConnectTimeout, match=r"no connection to service\.test:80 in time"):
        await client.request(b"GET", "http://service.test/", {})
    await client.aclose()
    assert issubclass(http1.ConnectTimeout, TimeoutError)
