"""Each forwarded client credential's upstream headers, made once (`ForwardedHeaders`): given
again for the same key, never another key's, fresh for a request with trace context."""

from __future__ import annotations

from collections.abc import Mapping

from proxy.config import UpstreamConfig
from proxy.upstreams.anthropic import AnthropicDialect
from proxy.upstreams.forwarded import ForwardedHeaders, Made
from proxy.upstreams.gemini import GeminiDialect
from proxy.upstreams.openai_chat import ChatDialect, bearer
from proxy.upstreams.openai_responses import ResponsesDialect
from registry import http1


def _made() -> tuple[ForwardedHeaders, list[Mapping[str, str]]]:
    calls: list[Mapping[str, str]] = []

    def make(incoming: Mapping[str, str]) -> Made:
        calls.append(incoming)
        return bearer("", incoming)

    return ForwardedHeaders(make, ("authorization",)), calls


def test_a_keys_headers_are_made_once_and_another_keys_are_its_own() -> None:
    forwarded, calls = _made()
    team = forwarded({"authorization": "Bearer team-a", "user-agent": "one"})
    again = forwarded({"authorization": "Bearer team-a", "user-agent": "two"})
    other = forwarded({"authorization": "Bearer team-b"})
    assert team is again and len(calls) == 2
    assert isinstance(team[0], http1.Headers)
    assert team == (
        {"Content-Type": "application/json", "Authorization": "Bearer team-a"},
        "Bearer team-a",
    )
    assert other[0]["Authorization"] == other[1] == "Bearer team-b"


def test_a_request_with_trace_context_gets_headers_of_its_own() -> None:
    forwarded, calls = _made()
    for parent in ("00-a-b-01", "00-c-d-01"):
        headers, _ = forwarded({"authorization": "Bearer k", "traceparent": parent})
        assert headers["traceparent"] == parent and not isinstance(headers, http1.Headers)
    assert len(calls) == 2
    assert "traceparent" not in forwarded({"authorization": "Bearer k"})[0]


def test_at_most_the_limit_is_kept_the_oldest_leaving_first() -> None:
    forwarded, calls = _made()
    first = forwarded({"authorization": "Bearer 0"})
    for n in range(1, ForwardedHeaders.LIMIT + 1):
        forwarded({"authorization": f"Bearer {n}"})
    assert len(forwarded._made) == ForwardedHeaders.LIMIT
    assert forwarded({"authorization": "Bearer 0"}) is not first  # made again
    assert len(calls) == ForwardedHeaders.LIMIT + 2


def test_headers_that_cannot_be_sent_are_not_kept() -> None:
    forwarded, calls = _made()
    headers, _ = forwarded({"authorization": "Bearer a\r\nx: y"})
    assert not isinstance(headers, http1.Headers)
    forwarded({"authorization": "Bearer a\r\nx: y"})
    assert len(calls) == 2 and not forwarded._made


def test_every_dialect_forwards_each_clients_own_key() -> None:
    """Each dialect without a key of its own sends each client's, the one it was sent."""
    config = UpstreamConfig(name="up", base_url="http://127.0.0.1:1")
    dialects = [
        (ChatDialect(config), "authorization", "Authorization"),
        (ResponsesDialect(config), "authorization", "Authorization"),
        (AnthropicDialect(config), "x-api-key", "x-api-key"),
        (GeminiDialect(config), "x-goog-api-key", "x-goog-api-key"),
    ]
    for dialect, incoming, sent in dialects:
        for key in ("key-a", "key-b", "key-a"):
            headers, credential = dialect.headers({incoming: key})
            assert headers[sent] == credential == key
