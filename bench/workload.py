"""The request the overhead benches send, and the answer the fake upstream gives it.

A support assistant's system prompt and a customer's question (about 1 KB of JSON), so each
proxy parses, validates and forwards a body of a realistic size; the fake answers a fixed
text, which every load generator checks in every answer.
"""

from __future__ import annotations

import http.client
from typing import Any

import orjson

TEXT = "The quick brown fox jumps over the lazy dog while the proxy keeps up."
"""What the fake upstream answers (in `CHUNKS` content chunks when streamed)."""
CHUNKS = 20
MODES = ("json", "stream")
APIS = ("chat", "responses")
API_PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses"}

SYSTEM_PROMPT = (
    "You are Ada, the support assistant of Northwind Outfitters, an online shop for hiking "
    "and camping gear. Answer in plain English, in at most three short paragraphs, and be "
    "precise about prices, sizes and delivery times. If the customer asks about an order, "
    "ask for the order number when it is missing and never invent tracking details. Prefer "
    "recommending items that are in stock; mention the 30-day return policy when the customer "
    "seems unsure about a size. Do not discuss competitors. If a question is outside the "
    "shop's business, say so politely and offer to help with something related to the shop."
)
USER_PROMPT = (
    "Hi! I'm planning a four-day hike in the Dolomites at the end of September with two "
    "friends. We already have tents, but I'm not sure whether my old three-season sleeping "
    "bag (comfort rating 5 C) is warm enough for nights at around 2,000 m, or whether I "
    "should buy a new one. Also, what would the delivery time be to Munich if I order today, "
    "and can I still return the bag if it turns out to be too warm?"
)


def request_body(stream: bool, api: str = "chat") -> dict[str, Any]:
    """The benchmark request in `api`'s wire format; both ask the upstream the same thing."""
    body: dict[str, Any]
    if api == "responses":
        body = {
            "model": "fake-model",
            "instructions": SYSTEM_PROMPT,
            "input": USER_PROMPT,
            "temperature": 0.3,
            "max_output_tokens": 512,
        }
    else:
        body = {
            "model": "fake-model",
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": USER_PROMPT},
            ],
            "temperature": 0.3,
            "max_tokens": 512,
        }
    if stream:
        body["stream"] = True
    return body


SDK_HEADERS = {
    "accept": "application/json",
    "authorization": "Bearer sk-placeholder",
    "content-type": "application/json",
    "user-agent": "AsyncOpenAI/Python 2.8.1",
    "x-stainless-arch": "x64",
    "x-stainless-async": "async:asyncio",
    "x-stainless-lang": "python",
    "x-stainless-os": "Linux",
    "x-stainless-package-version": "2.8.1",
    "x-stainless-read-timeout": "600",
    "x-stainless-retry-count": "0",
    "x-stainless-runtime": "CPython",
    "x-stainless-runtime-version": "3.11.7",
}
"""The headers the official OpenAI Python SDK sends with each request (beside `host`,
`accept-encoding`, `connection` and `content-length`, which the HTTP client adds): 17 in
all, where the bench's usual request has 4. Its key is a placeholder, as a vLLM server
without keys takes; Toolwire without a key of its own forwards it."""


def post_plain(port: int, count: int, stream: bool, sdk_headers: bool = False) -> None:
    """`count` plain Chat requests to the server on `port`, one after another on one
    connection, each answer read whole (a stream to its end); `sdk_headers`: with the
    headers the OpenAI SDK sends (`SDK_HEADERS`).

    Raises:
        RuntimeError: an answer that is not a 200.
    """
    body = orjson.dumps(request_body(stream))
    headers = (
        {**SDK_HEADERS, "connection": "keep-alive"}  # the client adds the other three
        if sdk_headers
        else {"content-type": "application/json"}
    )
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        for _ in range(count):
            conn.request("POST", "/v1/chat/completions", body, headers)
            response = conn.getresponse()
            answer = response.read()
            if response.status != 200:
                raise RuntimeError(f"bad answer {response.status}: {answer[:300]!r}")
    finally:
        conn.close()
